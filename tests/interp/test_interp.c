/* test_interp.c — the reference interpreter against values computed directly in C, and each
 * run-time check with its message (buffer, indices, iteration values, line + caret).
 *
 *   test_interp           everything, including the speed targets
 *   test_interp --quick   without the big speed runs (used under valgrind) */
#include "../ir/irb.h"

#include <math.h>

static bool g_quick;
static tile_strbuf g_err;

static bool contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

/* ---------- running ---------- */
typedef struct targs {
    int64_t sizes[8];
    double sf[8];
    int64_t si[8];
    interp_tensor p[8];
    interp_tensor r[8];
} targs;

static interp_tensor T1(void *d, int64_t a) { interp_tensor t = {d, {a}}; return t; }
static interp_tensor T2(void *d, int64_t a, int64_t b) { interp_tensor t = {d, {a, b}}; return t; }

/* Runs F; returns the interpreter's status; the error text is in g_err. */
static int run_opts(targs *a, const interp_options *o) {
    tile_sb_free(&g_err);
    interp_args ia = {a->sizes, a->sf, a->si, a->p, a->r};
    return interp_run(F, &ia, o, &g_err);
}
static int run(targs *a) { return run_opts(a, NULL); }

static const char *errtext(void) { return g_err.data ? g_err.data : ""; }

#define EXPECT_OK(call)                                                         \
    do {                                                                        \
        int rc_ = (call);                                                       \
        CHECK(rc_ == 0, "run failed: %s", errtext());                           \
    } while (0)

/* expects failure with all the given substrings in the message */
static void expect_err_v(const char *what, int rc, const char **needles, int n) {
    CHECK(rc == 1, "%s: expected a run-time error, got success", what);
    for (int i = 0; i < n; i++)
        CHECK(contains(errtext(), needles[i]), "%s: message lacks '%s':\n%s", what, needles[i], errtext());
}
#define EXPECT_ERR(what, call, ...)                                                                     \
    do {                                                                                                \
        const char *nd_[] = {__VA_ARGS__};                                                              \
        expect_err_v(what, (call), nd_, (int)(sizeof nd_ / sizeof nd_[0]));                            \
    } while (0)

static uint32_t g_rng = 12345;
static float rnd_small(void) { /* multiples of 1/64 in [-2, 2): exact in f16 */
    g_rng = g_rng * 1103515245u + 12345u;
    return (float)((int)((g_rng >> 16) % 256) - 128) / 64.0f;
}
static float rnd_f(void) {
    g_rng = g_rng * 1103515245u + 12345u;
    return (float)((g_rng >> 8) & 0xFFFF) / 32768.0f - 1.0f + (float)((g_rng >> 3) & 7) * 1e-6f;
}

/* f32 fused-free accumulate: the interpreter's (and every backend's) order of rounding */
static float macc(float acc, float a, float b) {
    float p = (float)((double)a * (double)b);
    return (float)((double)acc + (double)p);
}

/* ---------- plain matmul ---------- */
static void build_plain_matmul(void) {
    begin("matmul", IR_FORM_PLAIN);
    ir_var *m = size_var("M"), *k = size_var("K"), *n = size_var("N");
    ir_buffer *A = PARAM("A", TILE_DT_F32, V(m), V(k));
    ir_buffer *B = PARAM("B", TILE_DT_F32, V(k), V(n));
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, V(m), V(n));
    ir_var *i = loop_var("i"), *j = loop_var("j"), *kk = loop_var("k");
    ir_var *acc = local_var("acc", TILE_DT_F32);
    F->body = SEQ(FOR(i, I32(0), V(m),
                      FOR(j, I32(0), V(n),
                          SEQ(ASSIGN(acc, F32(0)),
                              FOR(kk, I32(0), V(k),
                                  ASSIGN(acc, ADD(V(acc), MUL(LD(A, V(i), V(kk)), LD(B, V(kk), V(j)))))),
                              ST(C, V(acc), V(i), V(j))))));
}

static void test_plain_matmul(void) {
    enum { Mv = 64, Kv = 64, Nv = 64 };
    static float A[Mv * Kv], B[Kv * Nv], C[Mv * Nv];
    for (int i = 0; i < Mv * Kv; i++) A[i] = rnd_f();
    for (int i = 0; i < Kv * Nv; i++) B[i] = rnd_f();
    build_plain_matmul();
    targs a = {.sizes = {Mv, Kv, Nv}};
    a.p[0] = T2(A, Mv, Kv);
    a.p[1] = T2(B, Kv, Nv);
    a.r[0] = T2(C, Mv, Nv);
    double t0 = tile_now();
    EXPECT_OK(run(&a));
    double ms = (tile_now() - t0) * 1e3;
    int bad = 0;
    for (int i = 0; i < Mv; i++)
        for (int j = 0; j < Nv; j++) {
            float acc = 0;
            for (int k = 0; k < Kv; k++) acc = macc(acc, A[i * Kv + k], B[k * Nv + j]);
            if (memcmp(&acc, &C[i * Nv + j], 4) != 0) bad++;
        }
    CHECK(bad == 0, "plain matmul: %d elements differ from the f32 reference", bad);
    printf("plain f32 matmul 64x64x64: %.1f ms (all checks on)\n", ms);
    CHECK(g_quick || ms < 2000, "plain matmul took %.0f ms", ms);

    /* f64 mode: the same program on double buffers gives the f64 reference */
    static double Ad[Mv * Kv], Bd[Kv * Nv], Cd[Mv * Nv];
    for (int i = 0; i < Mv * Kv; i++) Ad[i] = A[i] + 1e-9;
    for (int i = 0; i < Kv * Nv; i++) Bd[i] = B[i];
    a.p[0] = T2(Ad, Mv, Kv);
    a.p[1] = T2(Bd, Kv, Nv);
    a.r[0] = T2(Cd, Mv, Nv);
    interp_options o;
    interp_options_default(&o);
    o.f64_mode = true;
    EXPECT_OK(run_opts(&a, &o));
    bad = 0;
    for (int i = 0; i < Mv; i++)
        for (int j = 0; j < Nv; j++) {
            double acc = 0;
            for (int k = 0; k < Kv; k++) {
                double p = Ad[i * Kv + k] * Bd[k * Nv + j];
                acc = acc + p;
            }
            if (acc != Cd[i * Nv + j]) bad++;
        }
    CHECK(bad == 0, "f64-mode matmul: %d elements differ from the f64 reference", bad);
    end();
}

/* ---------- tile-form GEMM with ragged edges ---------- */
/* C[M, N] = A[M, K] (f16) @ B[N, K]^T (f16), blocks 64x64x32, f32 fragment accumulator */
static ir_expr *ceildiv(ir_expr *a, int64_t b) { return BIN(IR_B_FLOORDIV, ADD(a, I32(b - 1)), I32(b)); }

static void build_tile_gemm(tile_dtype in_dt, bool trans_b) {
    begin("gemm", IR_FORM_TILE);
    ir_var *m = size_var("M"), *n = size_var("N"), *k = size_var("K");
    ir_buffer *A = PARAM("A", in_dt, V(m), V(k));
    ir_buffer *B = trans_b ? PARAM("B", in_dt, V(n), V(k)) : PARAM("B", in_dt, V(k), V(n));
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, V(m), V(n));
    ir_var *bx = block_var("bx"), *by = block_var("by"), *ko = loop_var("ko");
    ir_buffer *As = TEMP("A_s", in_dt, IR_SCOPE_SHARED, I32(64), I32(32));
    ir_buffer *Bs = trans_b ? TEMP("B_s", in_dt, IR_SCOPE_SHARED, I32(64), I32(32)) : TEMP("B_s", in_dt, IR_SCOPE_SHARED, I32(32), I32(64));
    ir_buffer *Cl = TEMP("C_l", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64), I32(64));
    ir_region breg = trans_b ? R2(B, MUL(V(bx), I32(64)), I32(64), MUL(V(ko), I32(32)), I32(32))
                             : R2(B, MUL(V(ko), I32(32)), I32(32), MUL(V(bx), I32(64)), I32(64));
    ir_stmt *kl = FORK(IR_LOOP_PIPELINED, 6, ko, I32(0), ceildiv(V(k), 32),
                       SEQ(COPY(7, R2(A, MUL(V(by), I32(64)), I32(64), MUL(V(ko), I32(32)), I32(32)), RW(As)),
                           COPY(8, breg, RW(Bs)),
                           GEMM(9, RW(As), RW(Bs), RW(Cl), false, trans_b, false)));
    F->body = KERNEL2(2, ceildiv(V(n), 64), ceildiv(V(m), 64), bx, by,
                      SEQ(ALLOC(As), ALLOC(Bs), ALLOC(Cl), FILL(5, RW(Cl), F32(0)), kl,
                          COPY(10, RW(Cl), R2(C, MUL(V(by), I32(64)), I32(64), MUL(V(bx), I32(64)), I32(64)))));
}

static void test_tile_gemm_ragged(void) {
    enum { Mv = 100, Nv = 72, Kv = 80 };
    for (int variant = 0; variant < 2; variant++) {
        bool tb = variant == 0;
        static uint16_t A[Mv * Kv], B[Nv * Kv];
        static float Af[Mv * Kv], Bf[Nv * Kv], C[Mv * Nv];
        for (int i = 0; i < Mv * Kv; i++) { Af[i] = rnd_small(); tile_store_f(TILE_DT_F16, A, (size_t)i, Af[i]); }
        for (int i = 0; i < Nv * Kv; i++) { Bf[i] = rnd_small(); tile_store_f(TILE_DT_F16, B, (size_t)i, Bf[i]); }
        for (int i = 0; i < Mv * Nv; i++) C[i] = -999.0f;
        build_tile_gemm(TILE_DT_F16, tb);
        targs a = {.sizes = {Mv, Nv, Kv}};
        a.p[0] = T2(A, Mv, Kv);
        a.p[1] = tb ? T2(B, Nv, Kv) : T2(B, Kv, Nv);
        a.r[0] = T2(C, Mv, Nv);
        EXPECT_OK(run(&a));
        int bad = 0;
        for (int i = 0; i < Mv; i++)
            for (int j = 0; j < Nv; j++) {
                float acc = 0;
                for (int k = 0; k < Kv; k++) acc = macc(acc, Af[i * Kv + k], tb ? Bf[j * Kv + k] : Bf[k * Nv + j]);
                if (memcmp(&acc, &C[i * Nv + j], 4) != 0) bad++;
            }
        CHECK(bad == 0, "ragged tile gemm (trans_b=%d): %d elements differ", tb, bad);
        end();
    }
}

static void test_tile_gemm_speed(void) {
    enum { S = 256 };
    float *A = malloc(sizeof(float) * S * S), *B = malloc(sizeof(float) * S * S), *C = malloc(sizeof(float) * S * S);
    for (int i = 0; i < S * S; i++) { A[i] = rnd_f(); B[i] = rnd_f(); }
    build_tile_gemm(TILE_DT_F32, false);
    targs a = {.sizes = {S, S, S}};
    a.p[0] = T2(A, S, S);
    a.p[1] = T2(B, S, S);
    a.r[0] = T2(C, S, S);
    double t0 = tile_now();
    EXPECT_OK(run(&a));
    double ms = (tile_now() - t0) * 1e3;
    int bad = 0;
    for (int i = 0; i < S; i += 37)
        for (int j = 0; j < S; j++) {
            float acc = 0;
            for (int k = 0; k < S; k++) acc = macc(acc, A[i * S + k], B[k * S + j]);
            if (memcmp(&acc, &C[i * S + j], 4) != 0) bad++;
        }
    CHECK(bad == 0, "256^3 tile gemm: %d sampled elements differ", bad);
    printf("tile-form gemm 256x256x256 (64x64x32 blocks): %.1f ms (all checks on)\n", ms);
    CHECK(ms < 10000, "tile gemm took %.0f ms", ms);
    free(A);
    free(B);
    free(C);
    end();
}

/* ---------- reduce ---------- */
static void test_reduce(void) {
    enum { R = 3, Cc = 5 };
    float X[R * Cc];
    for (int i = 0; i < R * Cc; i++) X[i] = (float)((i * 7) % 11) - 5.5f;
    begin("reduce", IR_FORM_TILE);
    ir_buffer *Xb = PARAM("X", TILE_DT_F32, I32(R), I32(Cc));
    ir_buffer *rs = OUTPUT("rowsum", TILE_DT_F32, I32(R));
    ir_buffer *cm = OUTPUT("colmax", TILE_DT_F32, I32(Cc));
    ir_buffer *ak = OUTPUT("abssum_keep", TILE_DT_F32, I32(R), I32(1));
    ir_buffer *am = OUTPUT("absmax", TILE_DT_F32, I32(Cc));
    ir_buffer *mn = OUTPUT("min_fold", TILE_DT_F32, I32(R));
    ir_buffer *cl = OUTPUT("clipped", TILE_DT_F32, I32(R));
    ir_buffer *is = OUTPUT("isum", TILE_DT_I8, I32(R));
    ir_buffer *Xi = PARAM("Xi", TILE_DT_I32, I32(R), I32(Cc));
    F->body = SEQ(REDUCE(3, IR_RED_SUM, RW(Xb), RW(rs), 1, true),
                  REDUCE(4, IR_RED_MAX, RW(Xb), RW(cm), 0, true),
                  REDUCE(5, IR_RED_ABSSUM, RW(Xb), RW(ak), 1, true),
                  REDUCE(6, IR_RED_ABSMAX, RW(Xb), RW(am), 0, true),
                  FILL(7, RW(mn), F32(-1.0)),
                  REDUCE(8, IR_RED_MIN, RW(Xb), RW(mn), 1, false),
                  /* source box columns 3..7 of a 5-column buffer: columns 5..7 are clipped out */
                  REDUCE(9, IR_RED_MAX, R2(Xb, I32(0), I32(R), I32(3), I32(5)), RW(cl), 1, true),
                  REDUCE(10, IR_RED_SUM, RW(Xi), RW(is), 1, true));
    float o_rs[R], o_cm[Cc], o_ak[R], o_am[Cc], o_mn[R], o_cl[R];
    int8_t o_is[R];
    int32_t XI[R * Cc];
    for (int i = 0; i < R * Cc; i++) XI[i] = 50 * i;
    targs a = {0};
    a.p[0] = T2(X, R, Cc);
    a.p[1] = T2(XI, R, Cc);
    a.r[0] = T1(o_rs, R);
    a.r[1] = T1(o_cm, Cc);
    a.r[2] = T2(o_ak, R, 1);
    a.r[3] = T1(o_am, Cc);
    a.r[4] = T1(o_mn, R);
    a.r[5] = T1(o_cl, R);
    a.r[6] = T1(o_is, R);
    EXPECT_OK(run(&a));
    for (int i = 0; i < R; i++) {
        float s = 0, as = 0, m = -1.0f, c = -INFINITY;
        int64_t isum = 0;
        for (int j = 0; j < Cc; j++) {
            float x = X[i * Cc + j];
            s = (float)((double)s + x);
            as = (float)((double)as + fabsf(x));
            m = fminf(m, x);
            if (j >= 3) c = fmaxf(c, x);
            isum += XI[i * Cc + j];
        }
        CHECK(o_rs[i] == s, "rowsum[%d] %g vs %g", i, o_rs[i], s);
        CHECK(o_ak[i] == as, "abssum[%d] %g vs %g", i, o_ak[i], as);
        CHECK(o_mn[i] == m, "min_fold[%d] %g vs %g", i, o_mn[i], m);
        CHECK(o_cl[i] == c, "clipped[%d] %g vs %g", i, o_cl[i], c);
        CHECK(o_is[i] == (int8_t)(uint8_t)isum, "isum[%d] %d vs %d (wraps in int8)", i, o_is[i], (int8_t)(uint8_t)isum);
    }
    for (int j = 0; j < Cc; j++) {
        float mx = -INFINITY, amx = 0;
        for (int i = 0; i < R; i++) {
            mx = fmaxf(mx, X[i * Cc + j]);
            amx = fmaxf(amx, fabsf(X[i * Cc + j]));
        }
        CHECK(o_cm[j] == mx, "colmax[%d]", j);
        CHECK(o_am[j] == amx, "absmax[%d]", j);
    }
    end();
}

/* ---------- scalar expressions ---------- */
/* Stores e into a one-element output of e's dtype, runs, and returns the value. F must
 * have been begun; ends it. */
static int64_t eval_i(ir_expr *e) {
    ir_buffer *o = OUTPUT("o", e->dtype, I32(1));
    F->body = ST(o, e, I32(0));
    uint64_t buf = 0;
    targs a = {0};
    a.r[0] = T1(&buf, 1);
    EXPECT_OK(run(&a));
    int64_t v = tile_load_i(e->dtype, &buf, 0);
    end();
    return v;
}
static double eval_f(ir_expr *e, bool f64) { /* e: any float dtype; read back as stored */
    ir_buffer *o = OUTPUT("o", e->dtype, I32(1));
    if (tile_dtype_bits(e->dtype) < 32) e = CAST(TILE_DT_F32, e);
    F->body = ST(o, e, I32(0));
    uint64_t buf = 0;
    targs a = {0};
    a.r[0] = T1(&buf, 1);
    interp_options opt;
    interp_options_default(&opt);
    opt.f64_mode = f64;
    EXPECT_OK(run_opts(&a, &opt));
    double v = f64 ? tile_load_f(TILE_DT_F64, &buf, 0) : tile_load_f(o->dtype, &buf, 0);
    end();
    return v;
}
#define BEGIN() begin("e", IR_FORM_PLAIN)
#define IOP(op, dt, x, y) (BEGIN(), eval_i(BIN(op, CI(dt, x), CI(dt, y))))

static void test_integer_ops(void) {
    CHECK(IOP(IR_B_FLOORDIV, TILE_DT_I32, -7, 2) == -4);
    CHECK(IOP(IR_B_FLOORMOD, TILE_DT_I32, -7, 2) == 1);
    CHECK(IOP(IR_B_FLOORDIV, TILE_DT_I32, 7, -2) == -4);
    CHECK(IOP(IR_B_FLOORMOD, TILE_DT_I32, 7, -2) == -1);
    CHECK(IOP(IR_B_FLOORMOD, TILE_DT_I32, -8, 2) == 0);
    CHECK(IOP(IR_B_DIV, TILE_DT_I32, -7, 2) == -3);
    CHECK(IOP(IR_B_DIV, TILE_DT_I32, INT32_MIN, -1) == INT32_MIN, "INT32_MIN / -1 wraps");
    CHECK(IOP(IR_B_DIV, TILE_DT_I64, INT64_MIN, -1) == INT64_MIN);
    CHECK(IOP(IR_B_FLOORMOD, TILE_DT_I64, INT64_MIN, -1) == 0);
    CHECK(IOP(IR_B_ADD, TILE_DT_I32, 0x7fffffff, 1) == INT32_MIN);
    CHECK(IOP(IR_B_ADD, TILE_DT_I8, 100, 100) == -56);
    CHECK(IOP(IR_B_SUB, TILE_DT_U8, 3, 5) == 254);
    CHECK(IOP(IR_B_MUL, TILE_DT_U16, 300, 300) == (300 * 300) % 65536);
    CHECK(IOP(IR_B_SHL, TILE_DT_I32, 1, 31) == INT32_MIN);
    CHECK(IOP(IR_B_SHL, TILE_DT_I32, 1, 32) == 0);
    CHECK(IOP(IR_B_SHL, TILE_DT_I32, 1, -1) == 0);
    CHECK(IOP(IR_B_SHR, TILE_DT_I32, -8, 1) == -4);
    CHECK(IOP(IR_B_SHR, TILE_DT_I32, -8, 40) == -1);
    CHECK(IOP(IR_B_SHR, TILE_DT_I32, 8, 40) == 0);
    CHECK(IOP(IR_B_SHR, TILE_DT_U32, 0x80000000LL, 31) == 1);
    CHECK(IOP(IR_B_SHR, TILE_DT_U8, 200, 1) == 100);
    CHECK(IOP(IR_B_SHR, TILE_DT_I8, -128, 7) == -1);
    CHECK(IOP(IR_B_SHL, TILE_DT_U8, 0xff, 4) == 0xf0);
    CHECK(IOP(IR_B_SHR, TILE_DT_U64, -1, 63) == 1);
    CHECK(IOP(IR_B_MAX, TILE_DT_U64, 1, -1) == -1, "unsigned max");
    CHECK(IOP(IR_B_MIN, TILE_DT_U32, 0xffffffffLL, 3) == 3);
    CHECK(IOP(IR_B_MIN, TILE_DT_I32, -5, 3) == -5);
    CHECK(IOP(IR_B_LT, TILE_DT_U64, 1, -1) == 1, "unsigned compare");
    CHECK(IOP(IR_B_LT, TILE_DT_I64, 1, -1) == 0);
    CHECK(IOP(IR_B_POW, TILE_DT_I32, 3, 4) == 81);
    CHECK(IOP(IR_B_POW, TILE_DT_I32, 2, -1) == 0);
    CHECK(IOP(IR_B_POW, TILE_DT_I32, -1, -3) == -1);
    CHECK(IOP(IR_B_POW, TILE_DT_I8, 2, 7) == -128);
    CHECK(IOP(IR_B_BITXOR, TILE_DT_I32, 6, 3) == 5);
    CHECK(IOP(IR_B_BITAND, TILE_DT_U16, 0xF0F0, 0xFF00) == 0xF000);
    BEGIN();
    CHECK(eval_i(ir_unary(M, IR_U_BITNOT, CI(TILE_DT_U8, 0), L0)) == 255);
    BEGIN();
    CHECK(eval_i(ir_unary(M, IR_U_BITNOT, I32(5), L0)) == -6);
    BEGIN();
    CHECK(eval_i(ir_unary(M, IR_U_NEG, CI(TILE_DT_I8, -128), L0)) == -128);
    BEGIN();
    CHECK(eval_i(CALL1(IR_I_ABS, I32(-9))) == 9);
    BEGIN();
    CHECK(eval_i(ir_unary(M, IR_U_NOT, BOOLC(false), L0)) == 1);
}

static void test_casts_and_floats(void) {
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_BF16, F32(1.0 / 3.0)), false) == 0.333984375, "bf16(1/3)");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_F16, F32(1.0 / 3.0)), false) == 0.333251953125, "f16(1/3)");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP8_E4M3, F32(1000)), false) == 448.0, "e4m3 saturates");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP8_E4M3, F32(0.3)), false) == 0.3125, "e4m3(0.3)");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP8_E5M2, F32(1000)), false) == 1024.0, "e5m2(1000)");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP4_E2M1, F32(2.6)), false) == 3.0, "e2m1(2.6)");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP4_E2M1, F32(2.5)), false) == 2.0, "e2m1(2.5) ties to even");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP4_E2M1, F32(100)), false) == 6.0, "e2m1 saturates");
    /* storing an f32 value into a bf16 buffer rounds (no cast in the IR) */
    BEGIN();
    {
        ir_buffer *o = OUTPUT("o", TILE_DT_BF16, I32(2));
        F->body = SEQ(ST(o, F32(1.0 / 3.0), I32(0)), ST(o, F32(-2.0), I32(1)));
        uint16_t h[2];
        targs a = {0};
        a.r[0] = T1(h, 2);
        EXPECT_OK(run(&a));
        CHECK(tile_load_f(TILE_DT_BF16, h, 0) == 0.333984375 && tile_load_f(TILE_DT_BF16, h, 1) == -2.0);
        end();
    }
    /* fp4 buffers are packed two per byte */
    BEGIN();
    {
        ir_buffer *o = OUTPUT("o", TILE_DT_FP4_E2M1, I32(3));
        ir_var *i = loop_var("i");
        F->body = FOR(i, I32(0), I32(3), ST(o, MUL(CAST(TILE_DT_F32, V(i)), F32(1.5)), V(i)));
        uint8_t p[2] = {0xff, 0xff};
        targs a = {0};
        a.r[0] = T1(p, 3);
        EXPECT_OK(run(&a));
        CHECK(tile_load_f(TILE_DT_FP4_E2M1, p, 0) == 0.0 && tile_load_f(TILE_DT_FP4_E2M1, p, 1) == 1.5 &&
              tile_load_f(TILE_DT_FP4_E2M1, p, 2) == 3.0, "fp4 packed %02x %02x", p[0], p[1]);
        end();
    }
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_I8, F32(300.7))) == 127, "saturating float->int8");
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_I32, F32(-2.9))) == -2, "truncation toward zero");
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_I32, F32(NAN))) == 0, "NaN -> 0");
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_U8, F64(-5))) == 0);
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_I8, I32(200))) == -56, "int narrowing wraps");
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_BOOL, I32(7))) == 1);
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_F32, I32(16777217)), false) == 16777216.0);
    /* int64 -> float32 rounds once: 2^60 + 2^36 + 1 is just above the halfway point
     * between two floats, but rounding to double first lands exactly on it (ties to even) */
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_F32, CI(TILE_DT_I64, (1LL << 60) + (1LL << 36) + 1)), false) == (double)(float)((1LL << 60) + (1LL << 36) + 1),
          "int64 -> float32 single rounding");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_BF16, CI(TILE_DT_I64, (1LL << 40) + (1LL << 32) + 1)), false) == (double)((1LL << 40) + (1LL << 33)),
          "int64 -> bfloat16 single rounding");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_F32, CI(TILE_DT_U64, -1)), false) == 18446744073709551616.0, "uint64 max -> float32");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_FP8_E4M3, CI(TILE_DT_U64, -1)), false) == 448.0, "uint64 max -> e4m3 saturates");
    BEGIN();
    CHECK(eval_i(ir_reinterpret(M, TILE_DT_I32, F32(1.0), L0)) == 0x3f800000);
    BEGIN();
    CHECK(eval_f(ir_reinterpret(M, TILE_DT_F16, CI(TILE_DT_U16, 0x3c00), L0), false) == 1.0);
    BEGIN();
    CHECK(eval_i(ir_reinterpret(M, TILE_DT_U8, CAST(TILE_DT_FP8_E4M3, F32(448)), L0)) == 0x7e, "e4m3 448 bits");
    BEGIN();
    CHECK(eval_i(ir_reinterpret(M, TILE_DT_I16, ir_reinterpret(M, TILE_DT_BF16, CI(TILE_DT_I16, -16512), L0), L0)) == -16512,
          "bit round trip through bf16");
    /* f32 arithmetic rounds after every operation; f64 does not */
    BEGIN();
    CHECK(eval_f(ADD(F32(0.1), F32(0.2)), false) == (double)(0.1f + 0.2f));
    BEGIN();
    CHECK(eval_f(SUB(ADD(F32(1e8), F32(1)), F32(1e8)), false) == 0.0, "f32 absorbs the 1");
    BEGIN();
    CHECK(eval_f(SUB(ADD(F64(1e8), F64(1)), F64(1e8)), false) == 1.0);
    BEGIN();
    CHECK(eval_f(BIN(IR_B_FLOORDIV, F32(-7), F32(2)), false) == -4.0);
    BEGIN();
    CHECK(eval_f(BIN(IR_B_FLOORMOD, F32(-7), F32(2)), false) == 1.0);
    BEGIN();
    CHECK(eval_f(BIN(IR_B_MAX, F32(NAN), F32(1)), false) == 1.0, "max ignores NaN");
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_SQRT, F32(2)), false) == (double)sqrtf(2.0f));
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_ROUND, F32(2.5)), false) == 2.0 && (BEGIN(), eval_f(CALL1(IR_I_ROUND, F32(3.5)), false)) == 4.0);
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_SIGMOID, F32(0)), false) == 0.5);
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_RSQRT, F32(4)), false) == 0.5);
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_EXP2, F64(3)), false) == 8.0);
    BEGIN();
    CHECK(eval_f(CALL1(IR_I_EXP, F32(1)), false) == (double)(float)exp(1.0));
    BEGIN();
    {
        ir_expr *args[3] = {F32(1.0 + 0x1p-23), F32(1.0 - 0x1p-24), F32(-1)};
        double want = (double)fmaf(1.0f + 0x1p-23f, 1.0f - 0x1p-24f, -1.0f);
        CHECK(eval_f(ir_call(M, IR_I_FMA, TILE_DT_F32, args, 3, L0), false) == want, "fma is fused");
    }
    BEGIN();
    {
        ir_expr *x = F32(NAN);
        CHECK(eval_i(ir_call(M, IR_I_ISNAN, TILE_DT_BOOL, &x, 1, L0)) == 1);
    }
    /* f64 mode: no rounding of float operations or stores to float dtypes */
    BEGIN();
    CHECK(eval_f(SUB(ADD(F32(1e8), F32(1)), F32(1e8)), true) == 1.0, "f64 mode keeps the 1");
    BEGIN();
    CHECK(eval_f(CAST(TILE_DT_BF16, F64(1.0 / 3.0)), true) == 1.0 / 3.0, "f64 mode: no rounding to bf16");
    BEGIN();
    CHECK(eval_i(CAST(TILE_DT_I32, ADD(F32(2.5), F32(0.75)))) == 3);
    BEGIN();
    {
        /* f64 mode: reinterpret rounds to the nominal dtype first, so bit tricks still work */
        ir_var *x = scalar_param("x", TILE_DT_F32);
        ir_buffer *o = OUTPUT("o", TILE_DT_I32, I32(1));
        F->body = ST(o, ir_reinterpret(M, TILE_DT_I32, V(x), L0), I32(0));
        int32_t r = 0;
        targs a = {.sf = {0.1}};
        a.r[0] = T1(&r, 1);
        interp_options opt;
        interp_options_default(&opt);
        opt.f64_mode = true;
        EXPECT_OK(run_opts(&a, &opt));
        float f = 0.1f;
        int32_t want;
        memcpy(&want, &f, 4);
        CHECK(r == want, "reinterpret in f64 mode: %08x vs %08x", (unsigned)r, (unsigned)want);
        end();
    }
}

/* ---------- control flow, guards, lazy evaluation ---------- */
static void test_control_flow(void) {
    enum { N = 6 };
    float x[N] = {1, -2, 3, -4, 5, -6};
    begin("guards", IR_FORM_PLAIN);
    ir_var *n = size_var("N");
    ir_buffer *X = PARAM("x", TILE_DT_F32, V(n));
    ir_buffer *O = OUTPUT("o", TILE_DT_F32, ADD(V(n), I32(4)));
    ir_buffer *P = OUTPUT("pos", TILE_DT_I32, I32(1));
    ir_buffer *W = OUTPUT("w", TILE_DT_I32, I32(1));
    ir_var *i = loop_var("i"), *cnt = local_var("cnt", TILE_DT_I32), *t = local_var("t", TILE_DT_I32);
    ir_var *s = local_var("s", TILE_DT_I32);
    ir_expr *inb = LT(V(i), V(n));
    F->body = SEQ(
        /* select guards the load: only the chosen arm is evaluated */
        FOR(i, I32(0), ADD(V(n), I32(4)), ST(O, SEL(inb, LD(X, V(i)), F32(-1)), V(i))),
        /* `and` short-circuits: x[i] is not read when i >= N */
        ASSIGN(cnt, I32(0)),
        FOR(i, I32(0), ADD(V(n), I32(4)),
            IF(BIN(IR_B_AND, inb, BIN(IR_B_GT, LD(X, V(i)), F32(0))), ASSIGN(cnt, ADD(V(cnt), I32(1))), NULL)),
        ST(P, V(cnt), I32(0)),
        /* while with continue and break: s = sum of even t below 10 */
        ASSIGN(t, I32(0)), ASSIGN(s, I32(0)),
        WHILE(BOOLC(true),
              SEQ(ASSIGN(t, ADD(V(t), I32(1))),
                  IF(BIN(IR_B_GE, V(t), I32(10)), SIMPLE(IR_S_BREAK), NULL),
                  IF(BIN(IR_B_EQ, BIN(IR_B_FLOORMOD, V(t), I32(2)), I32(1)), SIMPLE(IR_S_CONTINUE), NULL),
                  ASSIGN(s, ADD(V(s), V(t))))),
        /* break only leaves the innermost loop */
        FOR(i, I32(0), I32(3), FOR(loop_var("j"), I32(0), I32(100), SEQ(ASSIGN(s, ADD(V(s), I32(1000))), SIMPLE(IR_S_BREAK)))),
        ST(W, V(s), I32(0)));
    float o[N + 4];
    int32_t pos = -1, w = -1;
    targs a = {.sizes = {N}};
    a.p[0] = T1(x, N);
    a.r[0] = T1(o, N + 4);
    a.r[1] = T1(&pos, 1);
    a.r[2] = T1(&w, 1);
    EXPECT_OK(run(&a));
    for (int k = 0; k < N + 4; k++) CHECK(o[k] == (k < N ? x[k] : -1.0f), "o[%d] = %g", k, o[k]);
    CHECK(pos == 3, "positive count %d", pos);
    CHECK(w == 2 + 4 + 6 + 8 + 3000, "while/break/continue gave %d", w);
    end();
}

/* ---------- run-time checks ---------- */
static void test_oob(void) {
    /* plain: for i in [60, 65): for k in [3, 5): o[0] = A[i, k] -> A[64, 3] */
    begin("oob", IR_FORM_PLAIN);
    ir_buffer *A = PARAM("A", TILE_DT_F32, I32(64), I32(32));
    ir_buffer *O = OUTPUT("o", TILE_DT_F32, I32(1));
    ir_var *i = loop_var("i"), *k = loop_var("k");
    F->body = FOR(i, I32(60), I32(5), FOR(k, I32(3), I32(2), ST(O, LDL(12, 17, A, V(i), V(k)), I32(0))));
    static float Av[64 * 32];
    float o;
    targs a = {0};
    a.p[0] = T2(Av, 64, 32);
    a.r[0] = T1(&o, 1);
    EXPECT_ERR("oob read", run(&a), "prog.tl:12:17: error: out-of-bounds read of A[64, 3]: A has shape 64x32 (i=64, k=3)",
               "\n    line 12 of the program\n                    ^\n");
    /* bounds check off: the read gives 0 and nothing crashes */
    interp_options opt;
    interp_options_default(&opt);
    opt.check_bounds = false;
    o = 5;
    EXPECT_OK(run_opts(&a, &opt));
    CHECK(o == 0.0f, "unchecked out-of-bounds read gives 0");
    end();

    /* in a kernel: block indices are named; a write */
    begin("oobw", IR_FORM_TILE);
    A = PARAM("A", TILE_DT_F32, I32(64), I32(32));
    ir_var *bx = block_var("bx"), *by = block_var("by");
    i = loop_var("i");
    ir_var *j = loop_var("j");
    F->body = KERNEL2(2, I32(1), I32(2), bx, by,
                      PAR2(3, i, I32(32), j, I32(32), STL(4, 9, A, F32(1), ADD(MUL(V(by), I32(40)), V(i)), V(j))));
    targs b = {0};
    b.p[0] = T2(Av, 64, 32);
    EXPECT_ERR("oob write", run(&b), "prog.tl:4:9: error: out-of-bounds write of A[64, 0]: A has shape 64x32 (block (0, 1), i=24, j=0)");
    end();
}

static void test_uninit(void) {
    /* shared: copy out of a shared tile nobody wrote */
    begin("u1", IR_FORM_TILE);
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, I32(8));
    ir_var *bx = block_var("bx");
    ir_buffer *S = TEMP("A_shared", TILE_DT_F32, IR_SCOPE_SHARED, I32(4));
    F->body = KERNEL1(2, I32(2), bx, SEQ(ALLOC(S), STL(3, 5, S, F32(1), I32(0)),
                                          COPY(9, RW(S), R1(C, MUL(V(bx), I32(4)), I32(4)))));
    float c[8];
    targs a = {0};
    a.r[0] = T1(c, 8);
    EXPECT_ERR("uninit shared", run(&a), "prog.tl:9:5: error: read of uninitialised shared memory A_shared[1] by copy (block (0))");
    interp_options opt;
    interp_options_default(&opt);
    opt.check_uninit = false;
    EXPECT_OK(run_opts(&a, &opt));
    end();

    /* fragment: element read; rows 0..2 filled, row 3 only at column 0 */
    begin("u2", IR_FORM_TILE);
    C = OUTPUT("C", TILE_DT_F32, I32(4), I32(4));
    bx = block_var("bx");
    ir_buffer *acc = TEMP("acc", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(4), I32(4));
    ir_var *i = loop_var("i"), *j = loop_var("j");
    F->body = KERNEL1(2, I32(1), bx,
                      SEQ(ALLOC(acc), FILL(3, R2(acc, I32(0), I32(3), I32(0), I32(4)), F32(0)), ST(acc, F32(1), I32(3), I32(0)),
                          FOR(i, I32(0), I32(4), FOR(j, I32(0), I32(4), ST(C, LDL(7, 20, acc, V(i), V(j)), V(i), V(j))))));
    float c2[16];
    targs b = {0};
    b.r[0] = T2(c2, 4, 4);
    EXPECT_ERR("uninit fragment", run(&b), "prog.tl:7:20: error: read of uninitialised fragment memory acc[3, 1] (block (0), i=3, j=1)");
    end();

    /* local in plain form, and an output read before it is written */
    begin("u3", IR_FORM_PLAIN);
    ir_buffer *O = OUTPUT("o", TILE_DT_I32, I32(2));
    ir_buffer *lv = TEMP("tmp", TILE_DT_I32, IR_SCOPE_LOCAL, I32(1));
    F->body = SEQ(ALLOC(lv), ST(O, LDL(4, 3, lv, I32(0)), I32(0)));
    int32_t ov[2];
    targs d = {0};
    d.r[0] = T1(ov, 2);
    EXPECT_ERR("uninit local", run(&d), "prog.tl:4:3: error: read of uninitialised local memory tmp[0]");
    F->body = SEQ(ST(O, I32(1), I32(0)), ST(O, ADD(LD(O, I32(0)), LDL(5, 9, O, I32(1))), I32(1)));
    EXPECT_ERR("uninit output", run(&d), "prog.tl:5:9: error: read of uninitialised output memory o[1]");
    end();

    /* every block gets fresh shared memory: block 1 does not see block 0's writes */
    begin("u4", IR_FORM_TILE);
    C = OUTPUT("C", TILE_DT_F32, I32(2));
    bx = block_var("bx");
    S = TEMP("S", TILE_DT_F32, IR_SCOPE_SHARED, I32(1));
    F->body = KERNEL1(2, I32(2), bx, SEQ(ALLOC(S), IF(BIN(IR_B_EQ, V(bx), I32(0)), ST(S, F32(1), I32(0)), NULL),
                                          STL(6, 1, C, LD(S, I32(0)), V(bx))));
    targs e = {0};
    e.r[0] = T1(c, 2);
    EXPECT_ERR("fresh shared per block", run(&e), "read of uninitialised shared memory S[0] (block (1))");
    end();
}

static void test_races(void) {
    float bv[16];
    /* write/write inside one T.Parallel */
    begin("r1", IR_FORM_TILE);
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, I32(2), I32(8));
    ir_var *bx = block_var("bx"), *i = loop_var("i"), *j = loop_var("j");
    ir_buffer *Bs = TEMP("B_shared", TILE_DT_F32, IR_SCOPE_SHARED, I32(2), I32(8));
    F->body = KERNEL1(2, I32(1), bx,
                      SEQ(ALLOC(Bs), PAR2(14, i, I32(2), j, I32(8), STL(15, 9, Bs, F32(1), I32(0), V(j))), COPY(16, RW(Bs), RW(C))));
    targs a = {0};
    a.r[0] = T2(bv, 2, 8);
    EXPECT_ERR("race w/w", run(&a),
               "prog.tl:15:9: error: data race on B_shared[0, 0]: written by iteration (i=0, j=0) and written by iteration (i=1, j=0) of the T.Parallel at prog.tl:14:5");
    interp_options opt;
    interp_options_default(&opt);
    opt.check_races = false;
    opt.check_uninit = false;
    EXPECT_OK(run_opts(&a, &opt));
    end();

    /* read/write: iteration (1, j) reads B_shared[0, j] that iteration (0, j) wrote */
    begin("r2", IR_FORM_TILE);
    C = OUTPUT("C", TILE_DT_F32, I32(2), I32(8));
    bx = block_var("bx");
    i = loop_var("i");
    j = loop_var("j");
    Bs = TEMP("B_shared", TILE_DT_F32, IR_SCOPE_SHARED, I32(2), I32(8));
    ir_stmt *body = STL(15, 9, Bs, ADD(LDL(15, 25, Bs, I32(0), V(j)), F32(1)), V(i), V(j));
    F->body = KERNEL1(2, I32(1), bx, SEQ(ALLOC(Bs), FILL(3, RW(Bs), F32(0)), PAR2(14, i, I32(2), j, I32(8), body), COPY(16, RW(Bs), RW(C))));
    EXPECT_ERR("race r/w", run(&a),
               "prog.tl:15:25: error: data race on B_shared[0, 0]: written by iteration (i=0, j=0) and read by iteration (i=1, j=0) of the T.Parallel at prog.tl:14:5 (block (0), i=1, j=0)");
    /* reading your own row only is fine */
    body->value->args[0]->args[0] = V(i);
    EXPECT_OK(run(&a));
    /* an earlier reader and a later writer: B_shared[0, 3] read by i=0, written by i=3 */
    end();

    begin("r3", IR_FORM_TILE);
    C = OUTPUT("C", TILE_DT_F32, I32(4));
    bx = block_var("bx");
    i = loop_var("i");
    ir_buffer *V4 = TEMP("v", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(4));
    F->body = KERNEL1(2, I32(1), bx,
                      SEQ(ALLOC(V4), FILL(3, RW(V4), F32(2)),
                          PAR1(20, i, I32(4),
                               IF(BIN(IR_B_EQ, V(i), I32(0)), ST(C, LD(V4, I32(3)), V(i)), STL(22, 7, V4, F32(5), V(i)))),
                          COPY(23, RW(V4), RW(C))));
    targs b = {0};
    b.r[0] = T1(bv, 4);
    EXPECT_ERR("race read then write", run(&b),
               "prog.tl:22:7: error: data race on v[3]: read by iteration (i=0) and written by iteration (i=3) of the T.Parallel at prog.tl:20:5");
    end();

    /* across blocks on a global buffer: Out[0] = Out[0] + 1 in every block */
    begin("r4", IR_FORM_TILE);
    ir_buffer *Out = PARAM("Out", TILE_DT_F32, I32(4));
    bx = block_var("bx");
    F->body = KERNEL1(2, I32(3), bx, STL(3, 5, Out, ADD(LDL(3, 14, Out, I32(0)), F32(1)), I32(0)));
    float ov[4] = {0, 0, 0, 0};
    targs c = {0};
    c.p[0] = T1(ov, 4);
    EXPECT_ERR("cross-block race", run(&c),
               "prog.tl:3:14: error: data race on Out[0]: written by block (0) and read by block (1) of the kernel at prog.tl:2:5");
    /* distinct elements per block: no race */
    F->body = KERNEL1(2, I32(3), bx, STL(3, 5, Out, ADD(LD(Out, V(bx)), F32(1)), V(bx)));
    EXPECT_OK(run(&c));
    /* every block reading the same element is fine too */
    F->body = KERNEL1(2, I32(3), bx, ST(Out, LD(Out, I32(3)), V(bx)));
    EXPECT_OK(run(&c));
    /* write/write by a tile op across blocks */
    F->body = KERNEL1(2, I32(3), bx, FILL(7, R1(Out, V(bx), I32(2)), F32(0)));
    EXPECT_ERR("cross-block fill race", run(&c), "data race on Out[1]: written by block (0) and written by block (1) of the kernel at prog.tl:2:5");
    end();

    /* atomics do not conflict with each other: in a T.Parallel and across blocks */
    begin("r5", IR_FORM_TILE);
    Out = PARAM("Out", TILE_DT_F32, I32(1));
    ir_buffer *Cnt = PARAM("Cnt", TILE_DT_I32, I32(1));
    bx = block_var("bx");
    i = loop_var("i");
    F->body = KERNEL1(2, I32(4), bx, PAR1(5, i, I32(8), SEQ(ATOMIC_ADD(6, Out, F32(0.5), I32(0)), ATOMIC_ADD(7, Cnt, I32(1), I32(0)))));
    float o1 = 1.0f;
    int32_t cnt = 0;
    targs d = {0};
    d.p[0] = T1(&o1, 1);
    d.p[1] = T1(&cnt, 1);
    EXPECT_OK(run(&d));
    CHECK(o1 == 17.0f && cnt == 32, "atomic sums: %g %d", o1, cnt);
    /* but an atomic update and a plain read by another iteration do */
    F->body = KERNEL1(2, I32(1), bx, PAR1(5, i, I32(8), SEQ(ATOMIC_ADD(6, Cnt, I32(1), I32(0)),
                                                          IF(BIN(IR_B_EQ, V(i), I32(7)), ST(Out, CAST(TILE_DT_F32, LDL(9, 3, Cnt, I32(0))), I32(0)), NULL))));
    EXPECT_ERR("atomic vs read", run(&d), "data race on Cnt[0]: atomically updated by iteration (i=0) and read by iteration (i=7)");
    end();
}

static void test_misc_errors(void) {
    /* integer division and modulo by zero */
    begin("div", IR_FORM_PLAIN);
    ir_var *n = scalar_param("n", TILE_DT_I32);
    ir_buffer *O = OUTPUT("o", TILE_DT_I32, I32(1));
    ir_expr *d = BIN(IR_B_FLOORDIV, I32(7), V(n));
    d->loc = L(5, 11);
    F->body = ST(O, d, I32(0));
    int32_t o = 0;
    targs a = {.si = {0}};
    a.r[0] = T1(&o, 1);
    EXPECT_ERR("division by zero", run(&a), "prog.tl:5:11: error: integer division by zero");
    a.si[0] = 2;
    EXPECT_OK(run(&a));
    CHECK(o == 3);
    d = BIN(IR_B_FLOORMOD, I32(7), V(n));
    F->body = ST(O, d, I32(0));
    a.si[0] = 0;
    EXPECT_ERR("modulo by zero", run(&a), "integer modulo by zero");
    end();

    /* step limit */
    begin("loop", IR_FORM_PLAIN);
    ir_var *t = local_var("t", TILE_DT_I32);
    F->body = SEQ(ASSIGN(t, I32(0)), WHILE(BOOLC(true), ASSIGN(t, ADD(V(t), I32(1)))));
    interp_options opt;
    interp_options_default(&opt);
    opt.max_steps = 1000;
    targs b = {0};
    EXPECT_ERR("step limit", run_opts(&b, &opt), "step limit exceeded");
    end();

    /* assert */
    begin("assert", IR_FORM_PLAIN);
    n = scalar_param("n", TILE_DT_I32);
    F->body = ASSERT_S(8, LT(V(n), I32(10)), "n must be below 10");
    targs c = {.si = {12}};
    EXPECT_ERR("assert", run(&c), "prog.tl:8:5: error: assertion failed: n must be below 10");
    c.si[0] = 3;
    EXPECT_OK(run(&c));
    end();

    /* a copy whose boxes differ in size at run time */
    begin("copyn", IR_FORM_TILE);
    n = scalar_param("n", TILE_DT_I32);
    ir_buffer *A = PARAM("A", TILE_DT_F32, I32(8));
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, I32(8));
    F->body = COPY(4, R1(A, I32(0), V(n)), R1(C, I32(2), I32(4)));
    float av[8] = {1, 2, 3, 4, 5, 6, 7, 8}, cv[8];
    targs e = {.si = {5}};
    e.p[1] = T1(av, 8);
    e.r[0] = T1(cv, 8);
    EXPECT_ERR("copy count", run(&e), "copy: the source A[0 : +5] has 5 elements but the destination C[2 : +4] has 4");
    /* clipping: a box past the end of both buffers */
    e.si[0] = 4;
    F->body = SEQ(FILL(3, RW(C), F32(-1)), COPY(4, R1(A, I32(6), V(n)), R1(C, I32(5), I32(4))));
    EXPECT_OK(run(&e));
    float want[8] = {-1, -1, -1, -1, -1, 7, 8, 0};
    CHECK(!memcmp(cv, want, sizeof want), "clipped copy: %g %g %g", cv[5], cv[6], cv[7]);
    end();

    /* argument checking */
    begin("args", IR_FORM_PLAIN);
    ir_var *m = size_var("M");
    A = PARAM("A", TILE_DT_F32, V(m), I32(4));
    F->body = SEQ();
    targs g = {.sizes = {3}};
    g.p[0] = T2(av, 2, 4);
    EXPECT_ERR("shape", run(&g), "tensor parameter 'A' has shape 2x4 but 'args' expects 3x4");
    g.p[0].data = NULL;
    g.p[0].shape[0] = 3;
    EXPECT_ERR("no data", run(&g), "no data given for tensor parameter 'A'");
    interp_args none = {0};
    tile_sb_free(&g_err);
    CHECK(interp_run(F, &none, NULL, &g_err) == 1 && contains(errtext(), "no values given for the sizes"));
    /* helpers */
    int64_t shape[8];
    interp_args ia = {g.sizes, NULL, NULL, NULL, NULL};
    CHECK(interp_buffer_shape(F, A, &ia, shape, NULL) == 0 && shape[0] == 3 && shape[1] == 4 && shape[2] == 0);
    interp_tensor tt;
    CHECK(interp_tensor_alloc(F, A, &ia, true, &tt, NULL) == 0 && tt.shape[0] == 3 && ((double *)tt.data)[11] == 0.0);
    interp_tensor_free(&tt);
    /* bad IR is refused with the verifier's messages, not run */
    F->body = ST(A, F64(1), I32(0), I32(0));
    tile_sb_free(&g_err);
    g.p[0] = T2(av, 3, 4);
    EXPECT_ERR("verifier", run(&g), "IR verifier: store of a float64 value into 'A' of dtype float32");
    end();
}

int main(int argc, char **argv) {
    g_quick = argc > 1 && !strcmp(argv[1], "--quick");
    test_plain_matmul();
    test_tile_gemm_ragged();
    if (!g_quick) test_tile_gemm_speed();
    test_reduce();
    test_integer_ops();
    test_casts_and_floats();
    test_control_flow();
    test_oob();
    test_uninit();
    test_races();
    test_misc_errors();
    tile_sb_free(&g_err);
    tile_source_free(SRC);
    if (g_failures) {
        fprintf(stderr, "test_interp: %d of %d checks FAILED\n", g_failures, g_checks);
        return 1;
    }
    printf("test_interp: all %d checks passed\n", g_checks);
    return 0;
}
