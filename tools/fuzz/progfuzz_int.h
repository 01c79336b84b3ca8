/* progfuzz_int.h — the program representation shared by gen.c, render.c, run.c, shrink.c. */
#ifndef TILE_PROGFUZZ_INT_H
#define TILE_PROGFUZZ_INT_H

#include "progfuzz.h"

#define PF_MAX_OPS 6
#define PF_MAX_IN 4
#define PF_MAX_NODES 64

typedef struct pf_rng { uint64_t s; } pf_rng;
uint64_t pf_splitmix(uint64_t *s);

enum { PF_W_F, PF_W_I, PF_W_B }; /* wanted category of an expression */

enum { PF_N_LOAD, PF_N_CONST, PF_N_IDX, PF_N_UN, PF_N_BIN, PF_N_CALL1, PF_N_POW, PF_N_FMA, PF_N_CAST, PF_N_SEL, PF_N_CMP, PF_N_LOGIC };
enum { PF_B_ADD, PF_B_SUB, PF_B_MUL, PF_B_DIV, PF_B_MAX, PF_B_MIN, PF_B_AND, PF_B_OR, PF_B_XOR, PF_B_SHL, PF_B_SHR, PF_B_FLOORDIV, PF_B_MOD };
enum { PF_U_NEG, PF_U_BNOT };

#define PF_FN1(X) X(EXP, "exp") X(EXP2, "exp2") X(LOG, "log") X(LOG2, "log2") X(SQRT, "sqrt") X(RSQRT, "rsqrt") \
    X(TANH, "tanh") X(SIN, "sin") X(COS, "cos") X(ERF, "erf") X(SIGMOID, "sigmoid") X(FLOOR, "floor")           \
    X(CEIL, "ceil") X(ROUND, "round") X(TRUNC, "trunc") X(ABS, "abs") X(NEG, "neg")
enum {
#define X(e, s) PF_F1_##e,
    PF_FN1(X)
#undef X
    PF_F1_COUNT
};
const char *pf_fn1_name(int f);

typedef struct pf_node {
    uint8_t kind, op;
    int8_t a, b, c;      /* children (-1: none) */
    uint8_t exact;       /* the same bits on every correct target */
    uint8_t flt;         /* float category */
    uint8_t weak;        /* an integer literal (weakly typed) */
    int16_t arg;         /* LOAD: operand; IDX: index variable */
    tile_dtype dt;       /* result type (float: f32 or f64) */
    tile_dtype cast_to;  /* CAST */
    float mag;           /* bound on |value| */
    double cv;           /* CONST value; POW exponent */
} pf_node;

typedef struct pf_input {
    tile_dtype gdt;      /* global tensor dtype (INVALID: not a tensor, e.g. the GEMM accumulator) */
    tile_dtype ldt;      /* dtype of the loaded value (tile form: the buffer's dtype) */
    int rank;
    int shape[3];
    uint8_t mode;        /* 0 full, 1 last dim broadcast, 2 first dim broadcast, 3 gathered, 4 index arithmetic */
    uint8_t scope;       /* tile form: 0 shared, 1 fragment, 2 local */
    uint8_t slice;       /* tile form: copy with a slice instead of a head element */
    uint8_t exact;
    uint8_t gather_a, gather_b;
    float mag;
} pf_input;

enum { PF_OP_MAP, PF_OP_ROWRED, PF_OP_GENSUM, PF_OP_MATMUL, PF_OP_GATHER, PF_OP_TMAP, PF_OP_TGEMM, PF_OP_TRED, PF_OP_TELEM, PF_OP_KGEMM };

typedef struct pf_op {
    int kind, id;
    int rank, dims[3], K, batch;
    int blk[3];
    int nin;
    pf_input in[PF_MAX_IN];
    tile_dtype out_dt, acc_dt, buf_dt, tol_dt;
    uint8_t symbolic; /* plain form: sizes are symbolic dimensions bound from the tensors */
    uint8_t transA, transB, reverse, pipelined, stages, variant, redop, rdim, clear, acc_int;
    struct { uint8_t a, b, c, shift; } gather[3];
    /* tile form: threads of the T.Kernel (0: 128). KGEMM (a GPU-shaped GEMM kernel): afrag: A
     * goes shared -> fragment (an RS gemm); bias: operand 3 is a (N,) vector staged in shared;
     * red: 1 + the reduce op (sum max min absmax) of a masked row reduction of the epilogue's
     * C into R<id>[M, ceil(N/bn)]; cstage: C leaves through 0 a direct copy, 1 a shared tile of
     * out_dt, 2 a fragment of out_dt; swizzle: T.use_swizzle panel size (0: none) */
    uint16_t threads;
    uint8_t afrag, bias, red, cstage, swizzle;
    int nidx, idx_max[3];
    int max_depth;
    unsigned leaf_mask; /* operands usable as leaves (0: all) */
    int8_t root, guard, alt;
    int nnodes;
    pf_node nodes[PF_MAX_NODES];
} pf_op;

struct pf_prog {
    uint64_t seed;
    int form;
    int nops;
    pf_op ops[PF_MAX_OPS];
};

/* Does a GEMM kernel op keep the tensor-core rules gen.c generates it by (tiles, dtypes,
 * layouts, registers, shared memory)? true for every other op. The shrinker keeps to it. */
bool pf_kgemm_legal(const pf_op *op);

/* the concrete shape of the program's tensor parameter `name` */
bool pf_param_shape(const pf_prog *p, const char *name, tile_tensor *t);

#endif
