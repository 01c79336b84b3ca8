/* irb.h — terse helpers to build Tile IR by hand in tests (tests/ir, tests/interp).
 *
 * One module / function at a time (globals M, F); every node gets a location in a fake
 * source "prog.tl" whose line n reads "line n", so diagnostics carry a line and a caret. */
#ifndef TILE_TEST_IRB_H
#define TILE_TEST_IRB_H

#include "interp/interp.h"
#include "ir/ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IRB_FN static __attribute__((unused))

static ir_module *M;
static ir_func *F;
static tile_source *SRC;
static int g_failures, g_checks;

#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        g_checks++;                                                         \
        if (!(cond)) {                                                      \
            g_failures++;                                                   \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, "" __VA_ARGS__);                                \
            fputc('\n', stderr);                                            \
        }                                                                   \
    } while (0)

IRB_FN void irb_source(void) {
    if (SRC) return;
    tile_strbuf sb = {0};
    for (int i = 1; i <= 200; i++) tile_sb_printf(&sb, "line %d of the program\n", i);
    SRC = tile_source_from_string("prog.tl", sb.data, sb.len);
    tile_sb_free(&sb);
}

IRB_FN tile_loc L(int line, int col) {
    irb_source();
    tile_loc l = {SRC, line, col};
    return l;
}
#define L0 L(1, 1)

IRB_FN void begin(const char *name, ir_form form) {
    irb_source();
    M = ir_module_new();
    F = ir_func_new(M, name, L(1, 1), form);
    ir_module_add(M, F);
}
IRB_FN void end(void) {
    ir_module_free(M);
    M = NULL;
    F = NULL;
}

/* ---- variables and buffers ---- */
IRB_FN ir_var *size_var(const char *n) {
    ir_var *v = ir_var_new(M, F, n, IR_VAR_SIZE, TILE_DT_I32, L0);
    ir_func_add_size(M, F, v);
    return v;
}
IRB_FN ir_var *loop_var(const char *n) { return ir_var_new(M, F, n, IR_VAR_LOOP, TILE_DT_I32, L0); }
IRB_FN ir_var *block_var(const char *n) { return ir_var_new(M, F, n, IR_VAR_BLOCK, TILE_DT_I32, L0); }
IRB_FN ir_var *local_var(const char *n, tile_dtype dt) { return ir_var_new(M, F, n, IR_VAR_LOCAL, dt, L0); }
IRB_FN ir_var *scalar_param(const char *n, tile_dtype dt) {
    ir_var *v = ir_var_new(M, F, n, IR_VAR_PARAM, dt, L0);
    ir_func_add_param(M, F, n, NULL, v);
    return v;
}

/* shape given as expressions, NULL-terminated */
IRB_FN ir_buffer *buf_v(const char *n, tile_dtype dt, ir_scope sc, ir_buffer_role role, ir_expr **shape, int rank) {
    ir_buffer *b = ir_buffer_new(M, F, n, dt, sc, rank, shape, role, L0);
    if (role == IR_BUF_PARAM) ir_func_add_param(M, F, n, b, NULL);
    if (role == IR_BUF_OUTPUT) ir_func_add_ret(M, F, b);
    return b;
}
#define SHAPE(...) ((ir_expr *[]){__VA_ARGS__}), (int)(sizeof((ir_expr *[]){__VA_ARGS__}) / sizeof(ir_expr *))
#define PARAM(n, dt, ...) buf_v(n, dt, IR_SCOPE_GLOBAL, IR_BUF_PARAM, SHAPE(__VA_ARGS__))
#define OUTPUT(n, dt, ...) buf_v(n, dt, IR_SCOPE_GLOBAL, IR_BUF_OUTPUT, SHAPE(__VA_ARGS__))
#define TEMP(n, dt, sc, ...) buf_v(n, dt, sc, IR_BUF_TEMP, SHAPE(__VA_ARGS__))

/* ---- expressions ---- */
IRB_FN ir_expr *I32(int64_t v) { return ir_const_int(M, TILE_DT_I32, v, L0); }
IRB_FN ir_expr *CI(tile_dtype dt, int64_t v) { return ir_const_int(M, dt, v, L0); }
IRB_FN ir_expr *F32(double v) { return ir_const_float(M, TILE_DT_F32, v, L0); }
IRB_FN ir_expr *F64(double v) { return ir_const_float(M, TILE_DT_F64, v, L0); }
IRB_FN ir_expr *CF(tile_dtype dt, double v) { return ir_const_float(M, dt, v, L0); }
IRB_FN ir_expr *BOOLC(bool v) { return ir_const_int(M, TILE_DT_BOOL, v, L0); }
IRB_FN ir_expr *V(ir_var *v) { return ir_var_ref(M, v, L0); }
IRB_FN ir_expr *BIN(ir_binop op, ir_expr *a, ir_expr *b) { return ir_binary(M, op, a, b, L0); }
#define ADD(a, b) BIN(IR_B_ADD, a, b)
#define SUB(a, b) BIN(IR_B_SUB, a, b)
#define MUL(a, b) BIN(IR_B_MUL, a, b)
#define LT(a, b) BIN(IR_B_LT, a, b)
IRB_FN ir_expr *CAST(tile_dtype dt, ir_expr *a) { return ir_cast(M, dt, a, L0); }
IRB_FN ir_expr *CALL1(ir_intrinsic fn, ir_expr *a) { return ir_call(M, fn, a->dtype, &a, 1, L0); }
IRB_FN ir_expr *SEL(ir_expr *c, ir_expr *a, ir_expr *b) { return ir_select(M, c, a, b, L0); }
#define LD(b, ...) ir_load(M, b, (ir_expr *[]){__VA_ARGS__}, L0)
#define LDL(line, col, b, ...) ir_load(M, b, (ir_expr *[]){__VA_ARGS__}, L(line, col))
IRB_FN ir_expr *LD0(ir_buffer *b) { return ir_load(M, b, NULL, L0); }

/* ---- statements ---- */
IRB_FN ir_stmt *seq_v(int n, ir_stmt **s) { return ir_seq(M, s, n, L0); }
#define SEQ(...) seq_v((int)(sizeof((ir_stmt *[]){__VA_ARGS__}) / sizeof(ir_stmt *)), (ir_stmt *[]){__VA_ARGS__})

IRB_FN ir_stmt *FORK(ir_loop_kind k, int line, ir_var *v, ir_expr *lo, ir_expr *ext, ir_stmt *body) {
    ir_stmt *s = ir_stmt_new(M, IR_S_FOR, L(line, 5));
    s->var = v;
    s->lo = lo;
    s->extent = ext;
    s->loop_kind = k;
    s->body[0] = body;
    if (k == IR_LOOP_PIPELINED) s->num_stages = 2;
    return s;
}
#define FOR(v, lo, ext, body) FORK(IR_LOOP_SERIAL, 1, v, lo, ext, body)
/* T.Parallel(e0) / T.Parallel(e0, e1): a group at `line` */
IRB_FN ir_stmt *PAR1(int line, ir_var *i, ir_expr *ei, ir_stmt *body) {
    ir_stmt *s = FORK(IR_LOOP_PARALLEL, line, i, I32(0), ei, body);
    s->par_group_depth = 1;
    return s;
}
IRB_FN ir_stmt *PAR2(int line, ir_var *i, ir_expr *ei, ir_var *j, ir_expr *ej, ir_stmt *body) {
    ir_stmt *in = FORK(IR_LOOP_PARALLEL, line, j, I32(0), ej, body);
    ir_stmt *s = FORK(IR_LOOP_PARALLEL, line, i, I32(0), ei, in);
    s->par_group_depth = 2;
    return s;
}
IRB_FN ir_stmt *IF(ir_expr *c, ir_stmt *then, ir_stmt *els) {
    ir_stmt *s = ir_stmt_new(M, IR_S_IF, L0);
    s->cond = c;
    s->body[0] = then;
    s->body[1] = els;
    return s;
}
IRB_FN ir_stmt *WHILE(ir_expr *c, ir_stmt *body) {
    ir_stmt *s = ir_stmt_new(M, IR_S_WHILE, L0);
    s->cond = c;
    s->body[0] = body;
    return s;
}
IRB_FN ir_stmt *ASSIGN(ir_var *v, ir_expr *x) {
    ir_stmt *s = ir_stmt_new(M, IR_S_ASSIGN, L0);
    s->var = v;
    s->value = x;
    return s;
}
IRB_FN ir_stmt *store_v(int line, int col, ir_buffer *b, ir_expr **idx, ir_expr *x) {
    ir_stmt *s = ir_stmt_new(M, IR_S_STORE, L(line, col));
    s->buf = b;
    s->idx = TILE_NEW_ARRAY(&M->arena, ir_expr *, b->rank + 1);
    for (int i = 0; i < b->rank; i++) s->idx[i] = idx[i];
    s->value = x;
    return s;
}
#define ST(b, x, ...) store_v(1, 1, b, (ir_expr *[]){__VA_ARGS__}, x)
#define STL(line, col, b, x, ...) store_v(line, col, b, (ir_expr *[]){__VA_ARGS__}, x)
IRB_FN ir_stmt *atomic_v(int line, ir_buffer *b, ir_expr **idx, ir_expr *x) {
    ir_stmt *s = store_v(line, 1, b, idx, x);
    s->kind = IR_S_ATOMIC;
    s->atomic_op = IR_ATOMIC_ADD;
    return s;
}
#define ATOMIC_ADD(line, b, x, ...) atomic_v(line, b, (ir_expr *[]){__VA_ARGS__}, x)
IRB_FN ir_stmt *ALLOC(ir_buffer *b) {
    ir_stmt *s = ir_stmt_new(M, IR_S_ALLOC, L0);
    s->buf = b;
    return s;
}
IRB_FN ir_stmt *KERNEL2(int line, ir_expr *gx, ir_expr *gy, ir_var *bx, ir_var *by, ir_stmt *body) {
    ir_stmt *s = ir_stmt_new(M, IR_S_KERNEL, L(line, 5));
    s->ngrid = 2;
    s->grid[0] = gx;
    s->grid[1] = gy;
    s->block_vars[0] = bx;
    s->block_vars[1] = by;
    s->body[0] = body;
    return s;
}
IRB_FN ir_stmt *KERNEL1(int line, ir_expr *gx, ir_var *bx, ir_stmt *body) {
    ir_stmt *s = ir_stmt_new(M, IR_S_KERNEL, L(line, 5));
    s->ngrid = 1;
    s->grid[0] = gx;
    s->block_vars[0] = bx;
    s->body[0] = body;
    return s;
}

/* regions: starts and extents as arrays of rank expressions */
IRB_FN ir_region region_v(ir_buffer *b, ir_expr **st, ir_expr **ex) {
    ir_region r = {0};
    r.buf = b;
    r.start = TILE_NEW_ARRAY(&M->arena, ir_expr *, b->rank + 1);
    r.extent = TILE_NEW_ARRAY(&M->arena, ir_expr *, b->rank + 1);
    for (int i = 0; i < b->rank; i++) {
        r.start[i] = st[i];
        r.extent[i] = ex[i];
    }
    r.loc = L0;
    return r;
}
#define R1(b, s0, e0) region_v(b, (ir_expr *[]){s0}, (ir_expr *[]){e0})
#define R2(b, s0, e0, s1, e1) region_v(b, (ir_expr *[]){s0, s1}, (ir_expr *[]){e0, e1})
/* whole buffer */
IRB_FN ir_region RW(ir_buffer *b) {
    ir_expr *st[8], *ex[8];
    for (int i = 0; i < b->rank; i++) {
        st[i] = I32(0);
        ex[i] = b->shape[i];
    }
    return region_v(b, st, ex);
}

IRB_FN ir_stmt *COPY(int line, ir_region src, ir_region dst) {
    ir_stmt *s = ir_stmt_new(M, IR_S_COPY, L(line, 5));
    s->regions[0] = src;
    s->regions[1] = dst;
    return s;
}
IRB_FN ir_stmt *FILL(int line, ir_region r, ir_expr *v) {
    ir_stmt *s = ir_stmt_new(M, IR_S_FILL, L(line, 5));
    s->regions[0] = r;
    s->value = v;
    return s;
}
IRB_FN ir_stmt *GEMM(int line, ir_region a, ir_region b, ir_region c, bool ta, bool tb, bool clear) {
    ir_stmt *s = ir_stmt_new(M, IR_S_GEMM, L(line, 5));
    s->regions[0] = a;
    s->regions[1] = b;
    s->regions[2] = c;
    s->trans_a = ta;
    s->trans_b = tb;
    s->clear = clear;
    return s;
}
IRB_FN ir_stmt *REDUCE(int line, ir_reduce_kind k, ir_region src, ir_region dst, int dim, bool clear) {
    ir_stmt *s = ir_stmt_new(M, IR_S_REDUCE, L(line, 5));
    s->regions[0] = src;
    s->regions[1] = dst;
    s->reduce_op = k;
    s->dim = dim;
    s->clear = clear;
    return s;
}
IRB_FN ir_stmt *SIMPLE(ir_stmt_kind k) { return ir_stmt_new(M, k, L0); }
IRB_FN ir_stmt *ASSERT_S(int line, ir_expr *c, const char *msg) {
    ir_stmt *s = ir_stmt_new(M, IR_S_ASSERT, L(line, 5));
    s->cond = c;
    s->msg = msg;
    return s;
}

/* ---- verification helpers ---- */
/* All verifier messages of F joined with newlines (caller frees). */
IRB_FN char *verify_msgs(bool *ok) {
    tile_diags d;
    tile_diags_init(&d);
    *ok = ir_verify_func(F, &d);
    tile_strbuf sb = {0};
    for (int i = 0; i < d.len; i++) tile_sb_printf(&sb, "%s\n", d.items[i].msg);
    tile_diags_free(&d);
    return sb.data ? sb.data : tile_xstrdup("");
}

#endif
