/* test_ir.c — IR builders, printer (golden text) and verifier (accepts good IR, rejects each
 * kind of bad IR with the expected message, never crashes on malformed IR). */
#include "irb.h"

static bool contains(const char *hay, const char *needle) { return hay && strstr(hay, needle) != NULL; }

static char *print_f(void) {
    tile_strbuf sb = {0};
    ir_print_func(F, &sb);
    return sb.data ? sb.data : tile_xstrdup("");
}

static void expect_text(const char *got, const char *want, const char *what) {
    if (strcmp(got, want) != 0) {
        g_failures++;
        fprintf(stderr, "golden mismatch (%s)\n--- want ---\n%s--- got ---\n%s------------\n", what, want, got);
    }
    g_checks++;
}

static void expect_expr(ir_expr *e, const char *want) {
    tile_strbuf sb = {0};
    ir_print_expr(e, &sb);
    const char *got = sb.data ? sb.data : "";
    if (strcmp(got, want) != 0) {
        g_failures++;
        fprintf(stderr, "expression printed as '%s', expected '%s'\n", got, want);
    }
    g_checks++;
    tile_sb_free(&sb);
}

/* ---------- the two reference functions ---------- */
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

static const char *PLAIN_GOLDEN =
    "func matmul(A: float32[M, K], B: float32[K, N]) -> (C: float32[M, N])  # form=plain\n"
    "  sizes: M, K, N\n"
    "  for i in serial(0, M):\n"
    "    for j in serial(0, N):\n"
    "      acc: float32 = 0.0f\n"
    "      for k in serial(0, K):\n"
    "        acc = acc + A[i, k] * B[k, j]\n"
    "      C[i, j] = acc\n";

static ir_expr *ceildiv(ir_expr *a, int64_t b) {
    return BIN(IR_B_FLOORDIV, ADD(a, I32(b - 1)), I32(b));
}

static void build_tile_gemm(void) {
    begin("gemm", IR_FORM_TILE);
    ir_var *m = size_var("M"), *n = size_var("N"), *k = size_var("K");
    ir_buffer *A = PARAM("A", TILE_DT_F16, V(m), V(k));
    ir_buffer *B = PARAM("B", TILE_DT_F16, V(n), V(k));
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, V(m), V(n));
    ir_var *bx = block_var("bx"), *by = block_var("by"), *ko = loop_var("k"), *i = loop_var("i"), *j = loop_var("j");
    ir_buffer *As = TEMP("A_s", TILE_DT_F16, IR_SCOPE_SHARED, I32(64), I32(32));
    ir_buffer *Bs = TEMP("B_s", TILE_DT_F16, IR_SCOPE_SHARED, I32(64), I32(32));
    ir_buffer *Cl = TEMP("C_l", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64), I32(64));
    ir_stmt *kl = FORK(IR_LOOP_PIPELINED, 6, ko, I32(0), ceildiv(V(k), 32),
                       SEQ(COPY(7, R2(A, MUL(V(by), I32(64)), I32(64), MUL(V(ko), I32(32)), I32(32)), RW(As)),
                           COPY(8, R2(B, MUL(V(bx), I32(64)), I32(64), MUL(V(ko), I32(32)), I32(32)), RW(Bs)),
                           GEMM(9, RW(As), RW(Bs), RW(Cl), false, true, false)));
    kl->num_stages = 3;
    ir_expr *row = ADD(MUL(V(by), I32(64)), V(i)), *col = ADD(MUL(V(bx), I32(64)), V(j));
    ir_stmt *out = PAR2(10, i, I32(64), j, I32(64),
                        IF(BIN(IR_B_AND, LT(row, V(m)), LT(col, V(n))), ST(C, LD(Cl, V(i), V(j)), row, col), NULL));
    F->body = KERNEL2(2, ceildiv(V(n), 64), ceildiv(V(m), 64), bx, by,
                      SEQ(ALLOC(As), ALLOC(Bs), ALLOC(Cl), FILL(5, RW(Cl), F32(0)), kl, out));
}

static const char *TILE_GOLDEN =
    "func gemm(A: float16[M, K], B: float16[N, K]) -> (C: float32[M, N])  # form=tile\n"
    "  sizes: M, N, K\n"
    "  kernel grid ((N + 63) // 64, (M + 63) // 64) threads=128 as (bx, by):\n"
    "    alloc A_s: float16[64, 32] shared\n"
    "    alloc B_s: float16[64, 32] shared\n"
    "    alloc C_l: float32[64, 64] fragment\n"
    "    fill C_l = 0.0f\n"
    "    for k in pipelined(0, (K + 31) // 32, stages=3):\n"
    "      copy A[by * 64 : +64, k * 32 : +32] -> A_s\n"
    "      copy B[bx * 64 : +64, k * 32 : +32] -> B_s\n"
    "      gemm A_s, B_s -> C_l (trans_b)\n"
    "    for i, j in parallel(64, 64):\n"
    "      if by * 64 + i < M and bx * 64 + j < N:\n"
    "        C[by * 64 + i, bx * 64 + j] = C_l[i, j]\n";

static void test_printer_functions(void) {
    build_plain_matmul();
    char *t = print_f();
    expect_text(t, PLAIN_GOLDEN, "plain matmul");
    free(t);
    bool ok;
    char *msgs = verify_msgs(&ok);
    CHECK(ok, "plain matmul should verify: %s", msgs);
    free(msgs);
    end();

    build_tile_gemm();
    t = print_f();
    expect_text(t, TILE_GOLDEN, "tile gemm");
    free(t);
    msgs = verify_msgs(&ok);
    CHECK(ok, "tile gemm should verify: %s", msgs);
    free(msgs);
    /* module printing: two functions separated by a blank line */
    ir_func *g = ir_func_new(M, "empty", L0, IR_FORM_PLAIN);
    g->body = ir_seq(M, NULL, 0, L0);
    ir_module_add(M, g);
    tile_strbuf sb = {0};
    ir_print_module(M, &sb);
    CHECK(contains(sb.data, "\n\nfunc empty()  # form=plain\n  pass\n"), "module text: %s", sb.data);
    tile_sb_free(&sb);
    end();
}

static void test_printer_misc(void) {
    begin("misc", IR_FORM_TILE);
    ir_var *a = local_var("a", TILE_DT_I32), *b = local_var("b", TILE_DT_I32), *c = local_var("c", TILE_DT_I32);
    ir_var *x = local_var("x", TILE_DT_F32), *y = local_var("y", TILE_DT_F64), *p = local_var("p", TILE_DT_BOOL);
    ir_var *q = local_var("q", TILE_DT_BOOL);
    /* precedence and associativity */
    expect_expr(MUL(ADD(V(a), V(b)), V(c)), "(a + b) * c");
    expect_expr(ADD(V(a), MUL(V(b), V(c))), "a + b * c");
    expect_expr(SUB(SUB(V(a), V(b)), V(c)), "a - b - c");
    expect_expr(SUB(V(a), SUB(V(b), V(c))), "a - (b - c)");
    expect_expr(BIN(IR_B_POW, BIN(IR_B_POW, V(a), V(b)), V(c)), "(a ** b) ** c");
    expect_expr(BIN(IR_B_POW, V(a), BIN(IR_B_POW, V(b), V(c))), "a ** b ** c");
    expect_expr(ir_unary(M, IR_U_NEG, BIN(IR_B_POW, V(a), V(b)), L0), "-a ** b");
    expect_expr(BIN(IR_B_POW, ir_unary(M, IR_U_NEG, V(a), L0), V(b)), "(-a) ** b");
    expect_expr(BIN(IR_B_SHR, ADD(V(a), V(b)), I32(2)), "a + b >> 2");
    expect_expr(BIN(IR_B_BITAND, BIN(IR_B_SHR, V(a), I32(1)), I32(3)), "a >> 1 & 3");
    expect_expr(BIN(IR_B_SHR, V(a), BIN(IR_B_BITAND, V(b), I32(3))), "a >> (b & 3)");
    expect_expr(BIN(IR_B_OR, BIN(IR_B_AND, V(p), V(q)), ir_unary(M, IR_U_NOT, V(p), L0)), "p and q or not p");
    expect_expr(BIN(IR_B_AND, V(p), BIN(IR_B_OR, V(q), V(p))), "p and (q or p)");
    expect_expr(BIN(IR_B_EQ, LT(V(a), V(b)), V(p)), "(a < b) == p");
    expect_expr(ir_unary(M, IR_U_NOT, LT(V(a), V(b)), L0), "not a < b");
    expect_expr(MUL(V(a), I32(-3)), "a * -3");
    expect_expr(BIN(IR_B_FLOORMOD, BIN(IR_B_FLOORDIV, V(a), V(b)), V(c)), "a // b % c");
    expect_expr(BIN(IR_B_FLOORDIV, V(a), BIN(IR_B_FLOORMOD, V(b), V(c))), "a // (b % c)");
    expect_expr(BIN(IR_B_MIN, V(a), ADD(V(b), V(c))), "min(a, b + c)");
    /* constants */
    expect_expr(F32(1), "1.0f");
    expect_expr(F32(0.1), "0.1f");
    expect_expr(F64(0.1), "0.1");
    expect_expr(F64(1e300), "1e+300");
    expect_expr(F64(-2.5), "-2.5");
    expect_expr(F32(1.0 / 0.0), "inff");
    expect_expr(F64(-1.0 / 0.0), "-inf");
    expect_expr(I32(3), "3");
    expect_expr(CI(TILE_DT_I64, 3), "3i64");
    expect_expr(CI(TILE_DT_U8, 255), "255u8");
    expect_expr(CI(TILE_DT_U64, -1), "18446744073709551615u64");
    expect_expr(BOOLC(true), "True");
    expect_expr(CF(TILE_DT_F16, 1.5), "(float16)1.5");
    /* casts, reinterpret, select, calls */
    expect_expr(CAST(TILE_DT_BF16, V(x)), "(bfloat16)x");
    expect_expr(CAST(TILE_DT_F32, ADD(V(a), V(b))), "(float32)(a + b)");
    expect_expr(MUL(CAST(TILE_DT_F32, V(a)), V(x)), "(float32)a * x");
    expect_expr(ir_reinterpret(M, TILE_DT_F16, CI(TILE_DT_U16, 0x3c00), L0), "reinterpret<float16>(15360u16)");
    expect_expr(SEL(V(p), V(x), F32(0)), "select(p, x, 0.0f)");
    expect_expr(CALL1(IR_I_EXP2, V(y)), "exp2(y)");
    ir_expr *fa[3] = {V(x), V(x), F32(2)};
    expect_expr(ir_call(M, IR_I_FMA, TILE_DT_F32, fa, 3, L0), "fma(x, x, 2.0f)");
    expect_expr(NULL, "<null>");
    end();

    /* statements: while/break/continue/if-elif-else/assert/atomic/reduce/regions */
    begin("stmts", IR_FORM_TILE);
    ir_var *n = size_var("N");
    ir_buffer *X = PARAM("X", TILE_DT_F32, V(n), I32(8));
    ir_buffer *Y = OUTPUT("Y", TILE_DT_F32, V(n));
    ir_var *t = local_var("t", TILE_DT_I32), *bx = block_var("bx");
    ir_buffer *S = TEMP("S", TILE_DT_F32, IR_SCOPE_SHARED, I32(4), I32(8));
    ir_buffer *R = TEMP("R", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(4));
    ir_stmt *w = WHILE(LT(V(t), I32(10)),
                       SEQ(IF(BIN(IR_B_EQ, V(t), I32(3)), SIMPLE(IR_S_BREAK),
                              IF(BIN(IR_B_EQ, V(t), I32(4)), SIMPLE(IR_S_CONTINUE), ASSIGN(t, ADD(V(t), I32(1))))),
                           ASSIGN(t, ADD(V(t), I32(2)))));
    ir_stmt *body = SEQ(ASSIGN(t, I32(0)), w, ALLOC(S), ALLOC(R),
                        COPY(3, R2(X, MUL(V(bx), I32(4)), I32(4), I32(0), I32(8)), RW(S)),
                        REDUCE(4, IR_RED_MAX, RW(S), RW(R), 1, true),
                        ATOMIC_ADD(5, Y, LD(R, I32(0)), MUL(V(bx), I32(4))),
                        ASSERT_S(6, LT(V(t), I32(100)), "t \"small\""));
    F->body = KERNEL1(2, I32(2), bx, body);
    char *txt = print_f();
    expect_text(txt,
                "func stmts(X: float32[N, 8]) -> (Y: float32[N])  # form=tile\n"
                "  sizes: N\n"
                "  kernel grid (2) threads=128 as (bx):\n"
                "    t: int32 = 0\n"
                "    while t < 10:\n"
                "      if t == 3:\n"
                "        break\n"
                "      elif t == 4:\n"
                "        continue\n"
                "      else:\n"
                "        t = t + 1\n"
                "      t = t + 2\n"
                "    alloc S: float32[4, 8] shared\n"
                "    alloc R: float32[4] fragment\n"
                "    copy X[bx * 4 : +4, 0 : +8] -> S\n"
                "    reduce_max S -> R (dim=1, clear)\n"
                "    atomic_add(Y[bx * 4], R[0])\n"
                "    assert t < 100, \"t \\\"small\\\"\"\n",
                "statements");
    free(txt);
    bool ok;
    char *msgs = verify_msgs(&ok);
    CHECK(ok, "statements function should verify: %s", msgs);
    free(msgs);
    end();
}

/* ---------- constant folding ---------- */
static void test_const_fold(void) {
    begin("fold", IR_FORM_TILE);
    ir_var *by = block_var("by"), *k = loop_var("k");
    int64_t v = 0;
    CHECK(ir_const_int_value(I32(7), &v) && v == 7);
    CHECK(!ir_const_int_value(F32(7), &v));
    CHECK(!ir_const_int_value(V(by), &v));
    /* (by + 1) * 64 - by * 64 == 64 */
    ir_expr *e = SUB(MUL(ADD(V(by), I32(1)), I32(64)), MUL(V(by), I32(64)));
    CHECK(ir_const_int_value(e, &v) && v == 64, "got %lld", (long long)v);
    /* k*32 + 32 - (k*32) with a cast to int64 of a constant */
    e = SUB(ADD(MUL(V(k), I32(32)), I32(32)), MUL(I32(32), V(k)));
    CHECK(ir_const_int_value(e, &v) && v == 32);
    CHECK(ir_const_int_value(CAST(TILE_DT_I64, ADD(I32(2), I32(3))), &v) && v == 5);
    CHECK(ir_const_int_value(BIN(IR_B_FLOORDIV, I32(-7), I32(2)), &v) && v == -4);
    CHECK(ir_const_int_value(BIN(IR_B_FLOORMOD, I32(-7), I32(2)), &v) && v == 1);
    CHECK(!ir_const_int_value(BIN(IR_B_FLOORDIV, I32(7), I32(0)), &v));
    CHECK(ir_const_int_value(ADD(I32(0x7fffffff), I32(1)), &v) && v == INT32_MIN);
    CHECK(!ir_const_int_value(SUB(MUL(V(k), I32(2)), V(k)), &v));
    /* a widened variable is opaque: (int64)k - (int64)k still folds structurally */
    CHECK(ir_const_int_value(SUB(CAST(TILE_DT_I64, V(k)), CAST(TILE_DT_I64, V(k))), &v) && v == 0);
    /* builders */
    CHECK(ir_cast(M, TILE_DT_I32, V(k), L0)->kind == IR_E_VAR, "cast to the same dtype is the operand");
    CHECK(LT(V(k), I32(1))->dtype == TILE_DT_BOOL);
    CHECK(F->vars[by->id] == by && F->vars[k->id] == k && by->id == 0 && k->id == 1);
    for (int i = 0; i < 40; i++) loop_var("many");
    CHECK(F->nvars == 42 && F->vars[41]->id == 41 && F->vars[0] == by);
    CHECK(ir_expr_equal(ADD(V(k), I32(1)), ADD(V(k), I32(1))) && !ir_expr_equal(ADD(V(k), I32(1)), ADD(V(k), I32(2))));
    end();
}

/* ---------- verifier: rejections ---------- */
typedef void (*mutate_fn)(void);

static void expect_reject(const char *what, const char *needle) {
    bool ok;
    char *msgs = verify_msgs(&ok);
    CHECK(!ok, "%s: verifier accepted bad IR", what);
    CHECK(contains(msgs, needle), "%s: expected a message with '%s', got:\n%s", what, needle, msgs);
    CHECK(contains(msgs, "IR verifier: ") || !*msgs, "%s: messages are prefixed", what);
    free(msgs);
}

static void expect_accept(const char *what) {
    bool ok;
    char *msgs = verify_msgs(&ok);
    CHECK(ok, "%s: verifier rejected good IR:\n%s", what, msgs);
    free(msgs);
}

/* a small plain function with one loop: out[i] = x[i] for i < N */
static ir_var *vN, *vI;
static ir_buffer *bX, *bO;
static void small_plain(void) {
    begin("small", IR_FORM_PLAIN);
    vN = size_var("N");
    bX = PARAM("x", TILE_DT_F32, V(vN));
    bO = OUTPUT("out", TILE_DT_F32, V(vN));
    vI = loop_var("i");
}

static ir_expr *raw_binary(ir_binop op, tile_dtype dt, ir_expr *a, ir_expr *b) {
    ir_expr *e = TILE_NEW(&M->arena, ir_expr);
    e->kind = IR_E_BINARY;
    e->dtype = dt;
    e->op = op;
    e->nargs = 2;
    e->args = TILE_NEW_ARRAY(&M->arena, ir_expr *, 2);
    e->args[0] = a;
    e->args[1] = b;
    e->loc = L(3, 7);
    return e;
}

static void test_verifier_scalars(void) {
    small_plain();
    F->body = SEQ(FOR(vI, I32(0), V(vN), ST(bO, LD(bX, V(vI)), V(vI))));
    expect_accept("good small");
    end();

    small_plain();
    F->body = SEQ(FOR(vI, I32(0), V(vN), ST(bO, LD(bX, V(vI)), V(vI))), ST(bO, F32(0), V(vI)));
    expect_reject("loop var outside", "loop variable 'i' used outside its loop");
    end();

    small_plain();
    ir_var *acc = local_var("acc", TILE_DT_F32);
    F->body = SEQ(FOR(vI, I32(0), V(vN), SEQ(ASSIGN(acc, ADD(V(acc), F32(1))), ST(bO, V(acc), V(vI)))));
    expect_reject("local before assignment", "local 'acc' used before it is assigned");
    end();

    small_plain();
    ir_var *m = ir_var_new(M, F, "Q", IR_VAR_SIZE, TILE_DT_I32, L0); /* not listed */
    F->body = FOR(vI, I32(0), V(m), ST(bO, F32(0), V(vI)));
    expect_reject("unlisted size", "size variable 'Q' is not listed");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), ST(bO, raw_binary(IR_B_ADD, TILE_DT_F32, F32(1), F64(2)), V(vI)));
    expect_reject("operand dtypes", "operands of '+' have different dtypes (float32 and float64)");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN),
                  ST(bO, CAST(TILE_DT_F32, raw_binary(IR_B_MUL, TILE_DT_F16, CF(TILE_DT_F16, 1), CF(TILE_DT_F16, 2))), V(vI)));
    expect_reject("f16 arithmetic", "arithmetic on float16");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), IF(raw_binary(IR_B_LT, TILE_DT_I32, V(vI), I32(3)), ST(bO, F32(0), V(vI)), NULL));
    expect_reject("compare not bool", "comparison '<' must give bool, not int32");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), IF(V(vI), ST(bO, F32(0), V(vI)), NULL));
    expect_reject("int condition", "if condition must be bool, not int32");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), ST(bO, LD(bX, CAST(TILE_DT_F32, V(vI))), V(vI)));
    expect_reject("float index", "an index must be an integer, not float32");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), ST(bO, ir_load(M, bX, (ir_expr *[]){V(vI)}, L0), V(vI)));
    F->body->body[0]->value->nargs = 2; /* malformed: two indices on a rank-1 buffer */
    expect_reject("index count", "load of 'x' has 2 indices but the buffer has rank 1");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), ST(bO, F64(1), V(vI)));
    expect_reject("store dtype", "store of a float64 value into 'out' of dtype float32");
    end();

    /* f32 into a bf16 buffer is fine (rounded on store); int into it is not */
    small_plain();
    ir_buffer *h = OUTPUT("h", TILE_DT_BF16, V(vN));
    F->body = FOR(vI, I32(0), V(vN), SEQ(ST(h, F32(1), V(vI)), ST(bO, F32(0), V(vI))));
    expect_accept("f32 into bf16");
    F->body = FOR(vI, I32(0), V(vN), ST(h, I32(1), V(vI)));
    expect_reject("int into bf16", "store of a int32 value into 'h' of dtype bfloat16");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), ST(bO, CAST(TILE_DT_F32, ir_reinterpret(M, TILE_DT_F16, V(vI), L0)), V(vI)));
    expect_reject("reinterpret width", "reinterpret of int32 (32 bits) as float16 (16 bits)");
    end();

    small_plain();
    F->body = SEQ(SIMPLE(IR_S_BREAK));
    expect_reject("break outside", "break outside a loop");
    end();

    small_plain();
    ir_var *t = local_var("t", TILE_DT_I32);
    F->body = SEQ(ASSIGN(t, F32(1)));
    expect_reject("assign dtype", "assignment of a float32 value to 't' of dtype int32");
    end();

    small_plain();
    F->body = FOR(vI, I32(0), V(vN), FOR(vI, I32(0), V(vN), ST(bO, F32(0), V(vI))));
    expect_reject("loop var reused", "loop variable 'i' is already defined by an enclosing loop");
    end();

    /* malformed trees: NULL pieces are diagnosed, not crashes */
    small_plain();
    F->body = SEQ(FOR(vI, I32(0), NULL, NULL), ST(bO, NULL, I32(0)), NULL);
    expect_reject("nulls", "missing");
    end();
    small_plain();
    F->body = NULL;
    expect_reject("no body", "has no body");
    end();
    {
        tile_diags d;
        tile_diags_init(&d);
        CHECK(!ir_verify_func(NULL, &d));
        tile_diags_free(&d);
    }
    small_plain();
    ir_expr *bad = I32(0);
    bad->kind = (ir_expr_kind)99;
    F->body = FOR(vI, I32(0), V(vN), ST(bO, F32(0), bad));
    expect_reject("bad kind", "bad expression kind 99");
    end();
}

/* tile-form skeleton: kernel over 2 blocks with shared/fragment tiles */
static ir_var *tBx;
static ir_buffer *tA, *tC, *tS, *tFr;
static void small_tile(void) {
    begin("tile", IR_FORM_TILE);
    tA = PARAM("A", TILE_DT_F32, I32(128), I32(64));
    tC = OUTPUT("C", TILE_DT_F32, I32(128), I32(64));
    tBx = block_var("bx");
    tS = TEMP("S", TILE_DT_F32, IR_SCOPE_SHARED, I32(64), I32(64));
    tFr = TEMP("Fr", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64), I32(64));
}
static ir_stmt *kern(ir_stmt *body) { return KERNEL1(2, I32(2), tBx, SEQ(ALLOC(tS), ALLOC(tFr), body)); }

static void test_verifier_tile(void) {
    small_tile();
    F->body = kern(SEQ(COPY(3, R2(tA, MUL(V(tBx), I32(64)), I32(64), I32(0), I32(64)), RW(tS)),
                       GEMM(4, RW(tS), RW(tS), RW(tFr), false, false, true),
                       COPY(5, RW(tFr), R2(tC, MUL(V(tBx), I32(64)), I32(64), I32(0), I32(64)))));
    expect_accept("good tile");
    end();

    small_tile();
    F->body = kern(COPY(3, R2(tA, I32(0), I32(64), I32(0), I32(32)), RW(tS)));
    expect_reject("copy count", "copy: source region of 'A' has 2048 elements but destination region of 'S' has 4096");
    end();

    small_tile();
    ir_buffer *Bn = TEMP("Bn", TILE_DT_F32, IR_SCOPE_SHARED, I32(32), I32(64));
    F->body = KERNEL1(2, I32(2), tBx, SEQ(ALLOC(tS), ALLOC(tFr), ALLOC(Bn), GEMM(4, RW(tS), RW(Bn), RW(tFr), false, false, false)));
    expect_reject("gemm shape", "gemm: columns of op(A) and rows of op(B) do not match (64 vs 32)");
    end();

    small_tile();
    ir_buffer *v1 = TEMP("v1", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64));
    F->body = KERNEL1(2, I32(2), tBx, SEQ(ALLOC(tS), ALLOC(tFr), ALLOC(v1), GEMM(4, RW(tS), RW(v1), RW(tFr), false, false, false)));
    expect_reject("gemm 1-D", "gemm: operand B ('v1') must be a 2-D region, it has rank 1");
    end();

    small_tile();
    ir_buffer *r1 = TEMP("r1", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64));
    ir_buffer *r3 = TEMP("r3", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(2), I32(2), I32(2));
    ir_buffer *rk = TEMP("rk", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(64), I32(2));
    F->body = KERNEL1(2, I32(2), tBx, SEQ(ALLOC(tS), ALLOC(tFr), ALLOC(r1), ALLOC(r3), ALLOC(rk), REDUCE(4, IR_RED_SUM, RW(tS), RW(r1), 1, true)));
    expect_accept("reduce to rank-1");
    F->body->body[0]->body[5] = REDUCE(4, IR_RED_SUM, RW(tS), RW(r3), 1, true);
    expect_reject("reduce rank", "reduce: destination 'r3' has rank 3; expected 1 (or 2 with extent 1 at dim 1)");
    F->body->body[0]->body[5] = REDUCE(4, IR_RED_SUM, RW(tS), RW(rk), 1, true);
    expect_reject("reduce keepdim", "reduce: destination 'rk' keeps dim 1 but its extent there is 2 (must be 1)");
    F->body->body[0]->body[5] = REDUCE(4, IR_RED_SUM, RW(tS), RW(r1), 2, true);
    expect_reject("reduce dim", "reduce: dim 2 out of range for the rank-2 source 'S'");
    end();

    small_tile();
    F->body = kern(KERNEL1(3, I32(1), block_var("b2"), SEQ()));
    expect_reject("nested kernel", "kernels cannot be nested");
    end();

    small_tile();
    ir_var *i = loop_var("i");
    F->body = kern(PAR1(6, i, I32(64), FILL(7, RW(tS), F32(0))));
    expect_reject("tile op in parallel", "fill inside a T.Parallel loop");
    end();

    small_tile();
    i = loop_var("i");
    ir_buffer *sh2 = TEMP("sh2", TILE_DT_F32, IR_SCOPE_SHARED, I32(4));
    ir_buffer *lo2 = TEMP("lo2", TILE_DT_F32, IR_SCOPE_LOCAL, I32(4));
    F->body = kern(PAR1(6, i, I32(64), SEQ(ALLOC(lo2), ALLOC(sh2))));
    expect_reject("shared alloc in parallel", "shared buffer 'sh2' allocated inside a T.Parallel loop");
    end();

    small_tile();
    F->body = SEQ(ALLOC(tS), FILL(3, RW(tS), F32(0)));
    expect_reject("shared outside kernel", "shared buffer 'S' allocated outside a kernel");
    end();

    /* plain form: local/fragment allowed outside kernels, shared is not */
    small_plain();
    ir_buffer *lf = TEMP("lf", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(4));
    F->body = SEQ(ALLOC(lf), FILL(3, RW(lf), F32(0)));
    expect_accept("plain fragment");
    end();

    small_tile();
    F->body = kern(SEQ());
    F->body->body[0] = SEQ(SEQ(ALLOC(tS)), FILL(3, RW(tS), F32(0)));
    expect_reject("outside allocation", "buffer 'S' used outside its allocation");
    end();

    /* T.Parallel groups */
    small_tile();
    i = loop_var("i");
    ir_var *j = loop_var("j");
    ir_stmt *g = PAR2(6, i, I32(64), j, I32(64), ST(tC, F32(0), V(i), V(j)));
    F->body = kern(g);
    expect_accept("par group");
    g->body[0] = SEQ(g->body[0]); /* the inner loop wrapped in a one-element SEQ is still fine */
    expect_accept("par group via seq");
    g->body[0] = SEQ(g->body[0], ST(tC, F32(0), I32(0), I32(0)));
    expect_reject("par group body", "T.Parallel group of depth 2 over 'i'");
    end();

    small_tile();
    i = loop_var("i");
    ir_stmt *lone = FORK(IR_LOOP_PARALLEL, 6, i, I32(0), I32(64), ST(tC, F32(0), V(i), I32(0)));
    F->body = kern(lone);
    expect_reject("parallel depth 0", "parallel loop over 'i' has par_group_depth 0 but is not the inner loop of a T.Parallel group");
    lone->loop_kind = IR_LOOP_SERIAL;
    lone->par_group_depth = 2;
    expect_reject("serial with depth", "serial loop over 'i' has par_group_depth 2");
    end();

    small_tile();
    i = loop_var("i");
    F->body = kern(PAR1(6, i, I32(64), FOR(loop_var("k"), I32(0), I32(3), SIMPLE(IR_S_BREAK))));
    expect_accept("break in serial loop inside parallel");
    F->body = kern(PAR1(6, i, I32(64), SIMPLE(IR_S_CONTINUE)));
    expect_reject("continue in parallel", "continue inside a T.Parallel loop");
    end();

    small_tile();
    F->body = kern(COPY(3, RW(tA), RW(tS)));
    F->body->body[0]->body[2]->regions[0].start = NULL;
    expect_reject("region starts", "copy: source region of 'A' lacks starts/extents for its 2 dimensions");
    end();

    small_tile();
    F->body = kern(COPY(3, R2(tA, I32(0), I32(0), I32(0), I32(64)), RW(tS)));
    expect_reject("zero extent", "has extent 0 in dimension 0 (must be >= 1)");
    end();
}

int main(void) {
    test_printer_functions();
    test_printer_misc();
    test_const_fold();
    test_verifier_scalars();
    test_verifier_tile();
    tile_source_free(SRC);
    if (g_failures) {
        fprintf(stderr, "test_ir: %d of %d checks FAILED\n", g_failures, g_checks);
        return 1;
    }
    printf("test_ir: all %d checks passed\n", g_checks);
    return 0;
}
