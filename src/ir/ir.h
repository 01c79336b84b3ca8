/* ir.h — Tile IR: the typed, structured program every later stage consumes.
 *
 * In:  built by sema (src/sema) from the AST; rewritten by TileOpt passes.
 * Out: consumed by the interpreter (src/interp) and the code generators.
 *
 * Shape of the IR
 *   module -> functions -> one statement tree per function.
 *   Buffers have a dtype, a scope (global, shared, fragment, local) and a row-major shape of
 *   expressions (symbolic dimensions are IR_VAR_SIZE variables bound at run time).
 *   Scalars are variables (loop indices, block indices, sizes, mutable locals, scalar params).
 *   Tile operations (copy, fill, gemm, reduce) act on regions of buffers.
 *
 * Typing rules every producer must respect (the verifier checks them):
 *   - Binary arithmetic/bitwise operands have the same dtype as the result; comparisons
 *     take two operands of one dtype and give bool; logical and/or/not take bool.
 *   - Arithmetic never happens on sub-32-bit floats (f16, bf16, fp8, fp4): sema casts them
 *     to f32 first ("compute in f32, round on store"), so backends only do arithmetic on
 *     bool, integers, f32 and f64.
 *   - STORE/ASSIGN values have exactly the dtype of the destination (sema inserts CASTs),
 *     EXCEPT stores into buffers of sub-32-bit float dtype, which take an f32 (or f64) value
 *     and round it (round to nearest even, fp8/fp4 saturating; see core.h).
 *   - Indices are integers (any width); loop variables are i32.
 *   - IR_E_SELECT and logical and/or evaluate only what they need (guards protect loads).
 *
 * Memory: everything lives in the module's arena, freed as a whole.
 */
#ifndef TILE_IR_H
#define TILE_IR_H

#include "../core/core.h"

typedef enum ir_scope {
    IR_SCOPE_GLOBAL = 0,   /* device/host memory visible to all blocks */
    IR_SCOPE_SHARED = 1,   /* one copy per block, visible to all threads of the block */
    IR_SCOPE_FRAGMENT = 2, /* one copy per block, distributed over the threads' registers */
    IR_SCOPE_LOCAL = 3,    /* per thread (the interpreter keeps one copy per block) */
    IR_SCOPE_COUNT
} ir_scope;
const char *ir_scope_name(ir_scope s);

typedef enum ir_var_kind {
    IR_VAR_SIZE = 0,  /* symbolic dimension / unbound factory parameter (i32, bound at run time) */
    IR_VAR_LOOP = 1,  /* loop index (i32), defined by its FOR */
    IR_VAR_LOCAL = 2, /* mutable scalar, assigned by IR_S_ASSIGN */
    IR_VAR_BLOCK = 3, /* block index of a kernel (i32), defined by its KERNEL */
    IR_VAR_PARAM = 4, /* scalar parameter of the function */
    IR_VAR_KIND_COUNT
} ir_var_kind;

typedef struct ir_var {
    int id;           /* index into ir_func.vars */
    const char *name;
    ir_var_kind kind;
    tile_dtype dtype;
    tile_loc loc;
} ir_var;

typedef enum ir_buffer_role {
    IR_BUF_PARAM = 0,  /* passed in by the caller (ir_func.params) */
    IR_BUF_OUTPUT = 1, /* allocated by the runtime and returned (ir_func.rets) */
    IR_BUF_TEMP = 2    /* allocated by an IR_S_ALLOC statement */
} ir_buffer_role;

typedef struct ir_expr ir_expr;
typedef struct ir_stmt ir_stmt;

/* ---------- fragment layouts (decided by the layout pass, src/opt/layout.c) ----------
 * Where the elements of a fragment live on the GPU targets. A register layout maps the pair
 * (thread t, slot s) to an element:
 *   - t, the thread's index among the layout's `threads` threads, is split into the thread
 *     digits in order (the first is the least significant): t = d0 + n0 * (d1 + n1 * ...);
 *     s, the slot, is split into the slot digits the same way;
 *   - a digit with dim >= 0 adds digit * stride to the coordinate of dimension dim; a thread
 *     digit with dim = -1 is a replication: threads that differ only in it hold the same
 *     elements;
 *   - the digits of one dimension, ordered by stride, form a mixed radix (each stride is the
 *     product of the sizes of the smaller ones, the first 1), so every coordinate below the
 *     product of their sizes is held once (per replica); coordinates at or past the
 *     dimension's extent are holes, which the code skips.
 * Thread digits come first in dig[], then slot digits. A SHARED layout keeps the fragment in
 * shared memory, one copy per block (the portable fallback; `note` says why). */
#define IR_LAYOUT_MAXDIG 20
typedef struct ir_layout_digit {
    int8_t thread;      /* 1: a digit of the thread index; 0: of the slot index */
    int8_t dim;         /* dimension it indexes, or -1 (replication, thread digits only) */
    int32_t size;       /* >= 1 */
    int64_t stride;     /* elements of dimension dim per unit of the digit */
} ir_layout_digit;

typedef enum ir_layout_kind { IR_LAYOUT_REGS = 0, IR_LAYOUT_SHARED = 1 } ir_layout_kind;

typedef struct ir_layout {
    ir_layout_kind kind;
    int rank;           /* the fragment's rank */
    int threads;        /* product of the thread digits' sizes */
    int slots;          /* product of the slot digits' sizes: elements a thread holds */
    int ndig;
    ir_layout_digit dig[IR_LAYOUT_MAXDIG];
    int vec;            /* consecutive slots that hold consecutive elements of the last
                           dimension (vector accesses), 1 if none */
    bool local;         /* over the register budget: the code keeps the slots in a
                           thread-local array the compiler places in local memory */
    const char *origin; /* what made it: "blocked", "wgmma", "simt-gemm", "slice of X", ... */
    const char *note;   /* SHARED: the access that keeps the fragment out of registers;
                           REGS: NULL or a remark (register pressure) */
} ir_layout;

/* The lowering a pass chose for a tile op, loop or kernel (the layout pass), and why a faster
 * one was declined; printed after the statement by `tile ir`. */
typedef struct ir_lowering {
    const char *kind;   /* e.g. "wgmma", "mma.sync", "simt-regs", "tma", "cp.async", "vec16",
                           "regs", "shared", "mbarrier-ws" */
    const char *detail; /* parameters, one line (NULL: none) */
    const char *why;    /* why this one / why a faster one was declined (NULL: none) */
    int iparam[8];      /* numeric parameters, meaning per kind (lowering docs) */
    const ir_layout *layout; /* T.Parallel nests over register fragments: the layout the
                                threads walk (the nest's index space, src/opt/layout.h) */
} ir_lowering;

typedef struct ir_buffer {
    int id;            /* index into ir_func.buffers */
    const char *name;
    tile_dtype dtype;
    ir_scope scope;
    int rank;          /* 0..8 */
    ir_expr **shape;   /* rank integer expressions (constants or size variables) */
    ir_buffer_role role;
    tile_loc loc;
    /* a placement hint for a TEMP buffer (NULL: none): element 0 should sit at the address
     * that element 0 of this (non-TEMP) buffer has, modulo 64 bytes, so that loops walking
     * both at the same index see the same vector alignment (rowfuse: the kept exponentials
     * and the softmax's output; a 16-byte shift between them made one core's softmax 0.67
     * instead of 0.86 of memcpy on Zen 4). Best effort: element 0 only (rows of other
     * elements match where the row lengths keep the phase), and rowfuse sets it only where
     * both have 4-byte elements. Semantics do not depend on it; the cpu target follows it, the
     * interpreter and the SIMT targets ignore it. */
    const struct ir_buffer *align_to;
    /* fragments on the GPU targets: the layout the layout pass chose (NULL: none decided;
     * the code generator then uses its own placement). Semantics do not depend on it. */
    const ir_layout *layout;
} ir_buffer;

/* ---------- expressions ---------- */
#define IR_EXPR_KINDS(X) \
    X(CONST)       /* constant of `dtype`: ival for bool/int dtypes, fval for floats */   \
    X(VAR)         /* var */                                                             \
    X(LOAD)        /* buf[idx...] — an element access (bounds are checked)            */  \
    X(UNARY)       /* uop a                                                           */  \
    X(BINARY)      /* a bop b                                                          */  \
    X(SELECT)      /* a ? b : c (cond a is bool; only the chosen arm is evaluated)     */  \
    X(CAST)        /* value conversion of a to `dtype` (rounding rules of core.h)      */  \
    X(REINTERPRET) /* bit reinterpretation of a as `dtype` (same bit width)            */  \
    X(CALL)        /* math intrinsic fn(args...)                                       */

typedef enum ir_expr_kind {
#define X(e) IR_E_##e,
    IR_EXPR_KINDS(X)
#undef X
    IR_E_COUNT
} ir_expr_kind;

#define IR_UNOPS(X) X(NEG, "-") X(NOT, "not ") X(BITNOT, "~")
typedef enum ir_unop {
#define X(e, s) IR_U_##e,
    IR_UNOPS(X)
#undef X
    IR_U_COUNT
} ir_unop;

/* Integer DIV truncates toward zero (C); FLOORDIV/FLOORMOD are Python's // and % (floor).
 * For floats, DIV is true division, FLOORDIV is floor(a/b), FLOORMOD is a - floor(a/b)*b.
 * SHL/SHR: shift amounts outside [0, bits) give 0 (SHR of a negative signed value: -1).
 * SHR is arithmetic for signed dtypes, logical for unsigned. Integer division or modulo by
 * zero is a run-time error. Integer overflow wraps (two's complement). MIN/MAX on floats
 * return the other operand when one is NaN (fmin/fmax). */
#define IR_BINOPS(X)                                                                   \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//") X(FLOORMOD, "%") \
    X(MIN, "min") X(MAX, "max") X(POW, "**")                                           \
    X(SHL, "<<") X(SHR, ">>") X(BITAND, "&") X(BITOR, "|") X(BITXOR, "^")              \
    X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") X(EQ, "==") X(NE, "!=")              \
    X(AND, "and") X(OR, "or")
typedef enum ir_binop {
#define X(e, s) IR_B_##e,
    IR_BINOPS(X)
#undef X
    IR_B_COUNT
} ir_binop;
bool ir_binop_is_compare(ir_binop op);

/* Math intrinsics on f32/f64 (ABS, MIN-like ones also on integers). X(ENUM, name, arity) */
#define IR_INTRINSICS(X)                                                          \
    X(EXP, "exp", 1) X(EXP2, "exp2", 1) X(LOG, "log", 1) X(LOG2, "log2", 1)         \
    X(SQRT, "sqrt", 1) X(RSQRT, "rsqrt", 1) X(TANH, "tanh", 1) X(ABS, "abs", 1)     \
    X(SIN, "sin", 1) X(COS, "cos", 1) X(FLOOR, "floor", 1) X(CEIL, "ceil", 1)       \
    X(ROUND, "round", 1) /* round half to even */                                  \
    X(TRUNC, "trunc", 1) X(ERF, "erf", 1) X(SIGMOID, "sigmoid", 1)                  \
    X(ISNAN, "isnan", 1) /* -> bool */ X(ISINF, "isinf", 1) /* -> bool */          \
    X(FMA, "fma", 3)
typedef enum ir_intrinsic {
#define X(e, s, n) IR_I_##e,
    IR_INTRINSICS(X)
#undef X
    IR_I_COUNT
} ir_intrinsic;
const char *ir_intrinsic_name(ir_intrinsic fn);
int ir_intrinsic_arity(ir_intrinsic fn);

struct ir_expr {
    ir_expr_kind kind;
    tile_dtype dtype;  /* result type */
    tile_loc loc;
    int64_t ival;      /* CONST (bool/int) */
    double fval;       /* CONST (float) */
    ir_var *var;       /* VAR */
    ir_buffer *buf;    /* LOAD */
    ir_expr **args;    /* LOAD: rank indices; UNARY: 1; BINARY: 2; SELECT: 3; CAST/REINTERPRET: 1; CALL: arity */
    int nargs;
    int op;            /* ir_unop, ir_binop or ir_intrinsic */
};

/* ---------- regions (operands of tile operations) ----------
 * A box inside a buffer: for each dimension a start expression and an extent expression.
 * Tile operations clip at the buffer's bounds: reading an element outside gives zero,
 * writing one is dropped. */
typedef struct ir_region {
    ir_buffer *buf;
    ir_expr **start;   /* buf->rank expressions */
    ir_expr **extent;  /* buf->rank expressions (>= 1) */
    tile_loc loc;
} ir_region;

/* ---------- statements ---------- */
#define IR_STMT_KINDS(X)                                                                      \
    X(SEQ)      /* body[0..nbody) in order                                                 */ \
    X(FOR)      /* for var in [lo, lo+extent): body[0]; loop_kind, num_stages               */ \
    X(WHILE)    /* while cond: body[0]                                                      */ \
    X(IF)       /* if cond: body[0] else: body[1] (body[1] may be NULL)                     */ \
    X(ASSIGN)   /* var = value (IR_VAR_LOCAL)                                               */ \
    X(STORE)    /* buf[idx...] = value                                                      */ \
    X(ATOMIC)   /* atomically buf[idx...] = buf[idx...] atomic_op value; var (if set, a      \
                   local of the compute dtype: f32 for sub-32-bit floats) gets the old value */ \
    X(ALLOC)    /* buffer `buf` comes into existence here, contents uninitialised; it lives  \
                   until the end of the enclosing SEQ (or the kernel/function)              */ \
    X(KERNEL)   /* grid of blocks: for each block index (grid[0..ngrid)), run body[0];       \
                   block_vars[d] is the index along grid dimension d; threads per block     */ \
    X(COPY)     /* regions[0] (src) -> regions[1] (dst), converting dtype; element k of the  \
                   src box (row-major over its non-unit extents) goes to element k of dst   */ \
    X(FILL)     /* regions[0] = value (converted to the buffer's dtype)                     */ \
    X(GEMM)     /* regions C += op(A) @ op(B): regions[0]=A, [1]=B, [2]=C; trans_a/trans_b;  \
                   clear_accum zeroes C first; products and sums in the accumulator's dtype  \
                   (f32 for sub-32-bit inputs)                                              */ \
    X(REDUCE)   /* regions[1][i] = reduce over dim `dim` of regions[0]; clear=false folds    \
                   the old value of dst in                                                  */ \
    X(BREAK) X(CONTINUE)                                                                      \
    X(ASSERT)   /* cond must hold at run time, else error with message `msg`                */

typedef enum ir_stmt_kind {
#define X(e) IR_S_##e,
    IR_STMT_KINDS(X)
#undef X
    IR_S_COUNT
} ir_stmt_kind;

typedef enum ir_loop_kind {
    IR_LOOP_SERIAL = 0,
    IR_LOOP_PARALLEL = 1,   /* iterations are independent (T.Parallel); a race otherwise */
    IR_LOOP_PIPELINED = 2,  /* serial semantics; backends overlap copies across num_stages */
    IR_LOOP_UNROLLED = 3,
    IR_LOOP_VECTORIZED = 4,
    IR_LOOP_KIND_COUNT
} ir_loop_kind;
const char *ir_loop_kind_name(ir_loop_kind k);

typedef enum ir_reduce_kind { IR_RED_SUM = 0, IR_RED_MAX = 1, IR_RED_MIN = 2, IR_RED_ABSSUM = 3, IR_RED_ABSMAX = 4, IR_RED_COUNT } ir_reduce_kind;
const char *ir_reduce_kind_name(ir_reduce_kind k);

/* STORE: the new value is `value`; LOAD: the element keeps its value (`value` is unused) and
 * `var` gets it, read atomically */
typedef enum ir_atomic_kind { IR_ATOMIC_ADD = 0, IR_ATOMIC_MAX = 1, IR_ATOMIC_MIN = 2, IR_ATOMIC_STORE = 3, IR_ATOMIC_LOAD = 4, IR_ATOMIC_OR = 5, IR_ATOMIC_AND = 6, IR_ATOMIC_XOR = 7, IR_ATOMIC_COUNT } ir_atomic_kind;

struct ir_stmt {
    ir_stmt_kind kind;
    tile_loc loc;
    ir_stmt **body;      /* SEQ: nbody statements; FOR/WHILE/KERNEL: body[0]; IF: then, else */
    int nbody;
    ir_var *var;         /* FOR (loop var), ASSIGN (target), ATOMIC (old value, or NULL) */
    ir_expr *lo, *extent;/* FOR */
    ir_loop_kind loop_kind;
    int num_stages;      /* FOR pipelined */
    /* A T.Parallel(a, b, ...) nest is several FORs; the outermost has par_group_depth = n
     * (the number of loops in the nest) and the inner ones 0. Iterations of the whole nest
     * are independent of each other. */
    int par_group_depth;
    ir_expr *cond;       /* WHILE, IF, ASSERT */
    ir_expr *value;      /* ASSIGN, STORE, ATOMIC, FILL */
    ir_buffer *buf;      /* STORE, ATOMIC, ALLOC */
    ir_expr **idx;       /* STORE, ATOMIC: buf->rank indices */
    int atomic_op;       /* ir_atomic_kind */
    /* KERNEL */
    ir_expr *grid[3];
    int ngrid;           /* 1..3 */
    ir_var *block_vars[3];
    int threads;         /* threads per block (the `threads=` of T.Kernel, default 128) */
    /* tile ops */
    ir_region *regions;  /* COPY: 2, FILL: 1, GEMM: 3, REDUCE: 2 */
    int nregions;
    bool trans_a, trans_b, clear;  /* GEMM (clear = clear_accum), REDUCE (clear) */
    int reduce_op;       /* ir_reduce_kind */
    int dim;             /* REDUCE: reduced dimension of the source (0-based, non-negative) */
    const char *msg;     /* ASSERT */
    /* A target lowering pass's decision for this statement, in words (NULL: none), e.g. the
     * cpu pipeline's `cpugemm` on a GEMM: which library path it takes, what it packs, whether
     * a K loop was fused into it. `tile ir` prints it as a `# note` line before the
     * statement; semantics never depend on it. */
    const char *note;
    /* the lowering a pass chose (tile ops, T.Parallel nests, pipelined loops, kernels; NULL:
     * none decided). Semantics do not depend on it. */
    const ir_lowering *lower;
};

/* ---------- functions and modules ---------- */
typedef enum ir_form { IR_FORM_PLAIN = 0, IR_FORM_TILE = 1 } ir_form;

typedef struct ir_param {
    const char *name;
    ir_buffer *buf;      /* tensor parameter, or NULL */
    ir_var *var;         /* scalar parameter (IR_VAR_PARAM), or NULL */
} ir_param;

/* ---------- lowering decisions (`tile ir --explain`, src/ir/explain.c) ----------
 * What the passes and code generators of a target decided for each tile op (T.gemm, T.copy,
 * T.fill, reductions, T.Parallel nests, T.Pipelined loops, kernels), kept by op source
 * position so that they survive rewrites that replace the op: the lowering it got and, one
 * record each, every faster lowering that was declined and why. Semantics never depend on
 * them. */
typedef enum ir_decision_kind { IR_DEC_GOT = 0, IR_DEC_DECLINED = 1 } ir_decision_kind;
typedef struct ir_decision {
    tile_loc loc;          /* the op in the source */
    const char *op;        /* "T.gemm", "T.copy", "T.Parallel", "T.Kernel", ... (ir_stmt_op_name) */
    const char *by;        /* the pass or code generator that decided ("cpugemm", "rowfuse", "c", "layout") */
    ir_decision_kind kind;
    const char *what;      /* GOT: the lowering; DECLINED: the faster lowering declined */
    const char *why;       /* DECLINED: the reason; GOT: NULL or a detail */
} ir_decision;
typedef struct ir_explain {
    tile_arena *arena;     /* the module's */
    ir_decision *items;
    int len, cap;
    /* the tile ops of the function as sema made them (opt_run records them before the first
     * pass), so that an op every pass left alone is still listed */
    ir_decision *ops;
    int nops, capops;
} ir_explain;

typedef struct ir_func {
    const char *name;
    tile_loc loc;
    ir_form form;
    /* the decisions of the target's passes and code generator (never NULL after
     * ir_func_new; the pointee is written through a const ir_func by code generators) */
    ir_explain *explain;
    ir_param *params;    /* in call order */
    int nparams;
    ir_buffer **rets;    /* buffers the runtime allocates and returns (role OUTPUT), in order */
    int nrets;
    ir_var **sizes;      /* the symbolic dimensions (IR_VAR_SIZE), bound before a run */
    int nsizes;
    ir_buffer **buffers; /* every buffer, indexed by id */
    int nbuffers;
    ir_var **vars;       /* every variable, indexed by id */
    int nvars;
    ir_stmt *body;
    /* Per-kernel options the source asked for (`@tilelang.jit(pass_configs={...})`), as
     * (Tile option name, value) pairs (src/base/knob_list.h, TB_OPTIONS); values "1"/"0".
     * Sema records them; the runtime applies them before any set by tile_module_set_option. */
    const char **option_names;
    const char **option_values;
    int noptions;
    /* The kernel's effective compile options (src/base: tb_opt_*), which passes and code
     * generators read; NULL: every option takes its environment default. Set by the runtime
     * (not owned). */
    const struct tb_options *opts;
} ir_func;

typedef struct ir_module {
    tile_arena arena;
    ir_func **funcs;
    int nfuncs;
} ir_module;

/* ---------- building (src/ir/build.c) ---------- */
ir_module *ir_module_new(void);
void       ir_module_free(ir_module *m);
ir_func   *ir_func_new(ir_module *m, const char *name, tile_loc loc, ir_form form);
void       ir_module_add(ir_module *m, ir_func *f);
ir_var    *ir_var_new(ir_module *m, ir_func *f, const char *name, ir_var_kind kind, tile_dtype dt, tile_loc loc);
ir_buffer *ir_buffer_new(ir_module *m, ir_func *f, const char *name, tile_dtype dt, ir_scope scope,
                         int rank, ir_expr **shape, ir_buffer_role role, tile_loc loc);
void       ir_func_add_param(ir_module *m, ir_func *f, const char *name, ir_buffer *buf, ir_var *var);
void       ir_func_add_ret(ir_module *m, ir_func *f, ir_buffer *buf);
void       ir_func_add_size(ir_module *m, ir_func *f, ir_var *v);

ir_expr *ir_const_int(ir_module *m, tile_dtype dt, int64_t v, tile_loc loc);
ir_expr *ir_const_float(ir_module *m, tile_dtype dt, double v, tile_loc loc);
ir_expr *ir_var_ref(ir_module *m, ir_var *v, tile_loc loc);
ir_expr *ir_load(ir_module *m, ir_buffer *b, ir_expr **idx, tile_loc loc); /* idx copied */
ir_expr *ir_unary(ir_module *m, ir_unop op, ir_expr *a, tile_loc loc);     /* dtype of a (NOT: bool) */
ir_expr *ir_binary(ir_module *m, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc); /* compare -> bool */
ir_expr *ir_select(ir_module *m, ir_expr *c, ir_expr *a, ir_expr *b, tile_loc loc);
ir_expr *ir_cast(ir_module *m, tile_dtype dt, ir_expr *a, tile_loc loc);   /* returns a if same dtype */
ir_expr *ir_reinterpret(ir_module *m, tile_dtype dt, ir_expr *a, tile_loc loc);
ir_expr *ir_call(ir_module *m, ir_intrinsic fn, tile_dtype dt, ir_expr **args, int nargs, tile_loc loc);

ir_stmt *ir_stmt_new(ir_module *m, ir_stmt_kind kind, tile_loc loc);
ir_stmt *ir_seq(ir_module *m, ir_stmt **stmts, int n, tile_loc loc);      /* stmts copied */

/* Constant folding helpers: true and *out set when e is a constant integer. Sees through
 * casts and linear arithmetic: (by + 1) * 64 - by * 64 is the constant 64. */
bool ir_const_int_value(const ir_expr *e, int64_t *out);
/* Region r is the whole of its buffer: every start the constant 0 and every extent the
 * buffer's (constant) size in that dimension. */
bool ir_region_is_whole(const ir_region *r);
/* Does expression e mention variable v / load from buffer b (anywhere in its tree)? */
bool ir_expr_uses_var(const ir_expr *e, const ir_var *v);
bool ir_expr_loads(const ir_expr *e, const ir_buffer *b);
/* Structural equality of two expressions (same kinds, dtypes, operators, vars, buffers,
 * constants and operands). */
bool ir_expr_equal(const ir_expr *a, const ir_expr *b);

/* ---------- simplification (src/ir/simplify.c) ---------- */
/* Canonical form of an integer expression of + - and constant multiples (c0 + k1*a1 + ...);
 * returns e itself when it is not an integer expression. Same value for every input. */
ir_expr *ir_simplify_int(ir_module *m, ir_expr *e);

/* ---------- printing and checking (src/ir/print.c, src/ir/verify.c) ---------- */
/* Human-readable text of a function / module (what `tile ir` prints). */
void ir_print_func(const ir_func *f, tile_strbuf *out);

/* ---------- lowering decisions (src/ir/explain.c) ---------- */
/* The name a tile op goes by in the source ("T.gemm", "T.copy", "T.fill", "T.reduce_max",
 * "T.Parallel", "T.Pipelined", "T.serial", "T.Kernel"), or NULL for other statements. */
const char *ir_stmt_op_name(const ir_stmt *s);
/* Record a decision about the op at loc (duplicates are dropped); why is a printf format
 * (NULL: none). Callable from code generators, which hold a const ir_func. */
void ir_explain_add(const ir_func *f, tile_loc loc, const char *op, const char *by, ir_decision_kind kind, const char *what,
                    const char *why_fmt, ...) __attribute__((format(printf, 7, 8)));
/* the same for a statement (its op name and position) */
void ir_explain_stmt(const ir_func *f, const ir_stmt *s, const char *by, ir_decision_kind kind, const char *what, const char *why_fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Record every tile op of s (nested statements too) as an op of f (opt_run, before the
 * passes); with `by` and `what` non-NULL also record that decision for each of them (a pass
 * that replaces a whole kernel says what became of the ops in it). */
void ir_explain_ops(const ir_func *f, const ir_stmt *s, const char *by, const char *what);
/* The decisions as text for `tile ir --explain` and TILE_LOG=info, one line each, in source
 * order, every op listed (one with no decision says so):
 *   FILE:LINE:COL: OP: LOWERING [by]
 *   FILE:LINE:COL: OP: declined: FASTER: WHY [by] */
void ir_explain_print(const ir_func *f, const char *target, tile_strbuf *out);
void ir_print_module(const ir_module *m, tile_strbuf *out);
void ir_print_expr(const ir_expr *e, tile_strbuf *out);
/* One line describing a layout (what `tile ir` prints after a fragment's alloc). */
void ir_print_layout(const ir_layout *l, tile_strbuf *out);
/* Structural and typing invariants. Returns true if f is well formed; otherwise adds one
 * diagnostic per problem (with the IR node's location) to diags. Runs after every pass
 * in debug builds (TILE_VERIFY=1 forces it in release builds). */
bool ir_verify_func(const ir_func *f, tile_diags *diags);

#endif
