/* rowpipe.c — forms of the row loop of rowfuse's softmax / RMSNorm side by side, one thread,
 * 128 MiB of f32, each run alternating with a memcpy of X into Y (ratio of the medians,
 * process CPU time). Built by rowpipe.sh against the prelude `tile emit` prints (the same row
 * helpers and streaming store as the generated code).
 *   serial  read pass of row r, then its write pass (rowfuse until session 5)
 *   pipe    write chunk c of row r - 1, then read chunk c of row r (rowfuse's pipelined loop)
 *   pipepf  pipe, and the write chunk prefetches (prefetcht0) the chunk of row r read next
 *   fused   one loop per chunk writes row r - 1 and reads row r (softmax: after the chunk
 *           max, the exponentials of row r, kept and summed; RMSNorm: the sum of squares),
 *           with the prefetch of tile_row_expsumf
 * Two reference loops (form and chunk ignored) bound what one core can do here:
 *   copy    y = x, one vector at a time with streaming stores (a hand-written memcpy)
 *           (form pipe: with a prefetch CHUNK elements ahead)
 *   expmap  y = exp(x) likewise (tile_exp_f32x16: the softmax's exp, fused with the traffic)
 *   rowpipe softmax|rmsnorm|copy|expmap N serial|pipe|pipepf|fused CHUNK */
#include "rowpipe_prelude.h"
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }
static int FORM; /* 0 serial 1 pipe 2 pipepf 3 fused */
static int64_t CH;

/* Y[lo..hi) = EXPR (j), aligned vectors with streaming stores; PFX (a pointer or NULL) prefetched alongside */
#define WRITE(Y, lo, hi, PFX, EXPR)                                                                      \
    do {                                                                                                 \
        for (int64_t c_ = (lo), e_ = (hi); c_ < e_; c_ += TILE_NT_W) {                                   \
            float tb[TILE_NT_W] __attribute__((aligned(64)));                                            \
            _Pragma("omp simd") for (int64_t j = c_; j < c_ + TILE_NT_W; j++) tb[j - c_] = EXPR;           \
            if (PFX) _mm_prefetch((const char *)((PFX) + (c_ - (lo))), _MM_HINT_T0);                      \
            tile_stream_f32v(Y + c_, tb);                                                                \
        }                                                                                                \
        tile_sfence();                                                                                   \
    } while (0)

typedef struct rowst { float m, s; } rowst;
static void sm_read_chunk(const float *x, float *E, float *F, int64_t c, rowst *st) {
    float cm = tile_row_maxf(x + c * CH, CH, st->m);
    st->s = cm == st->m ? st->s : st->s * tile_expf(st->m - cm);
    st->m = cm;
    F[c] = cm;
    st->s = tile_row_expsumf(x + c * CH, E + c * CH, CH, cm == -__builtin_inff() ? 0.0f : cm, 0.0f) + st->s;
}
static void softmax_rows(const float *X, float *Y, float *E2, int64_t M, int64_t N) {
    float F2[2][64];
    int64_t nc = N / CH;
    if (FORM == 0) {
        for (int64_t r = 0; r < M; r++) {
            rowst st = {-__builtin_inff(), 0};
            for (int64_t c = 0; c < nc; c++) sm_read_chunk(X + r * N, E2, F2[0], c, &st);
            float ri = 1.0f / st.s, *y = Y + r * N;
            for (int64_t c = 0; c < nc; c++) {
                float g = tile_expf(F2[0][c] - st.m) * ri;
                WRITE(y, c * CH, (c + 1) * CH, (const float *)NULL, E2[j] * g);
            }
        }
        return;
    }
    rowst prev = {0, 1};
    for (int64_t r = 0; r <= M; r++) {
        rowst st = {-__builtin_inff(), 0};
        float *Ew = E2 + ((r + 1) & 1) * N, *Er = E2 + (r & 1) * N, *Fw = F2[(r + 1) & 1], *Fr = F2[r & 1];
        float ri = 1.0f / prev.s, *y = Y + (r - 1) * N;
        const float *x = X + r * N;
        for (int64_t c = 0; c < nc; c++) {
            if (r > 0) {
                float g = tile_expf(Fw[c] - prev.m) * ri;
                if (FORM == 3 && r < M) {
                    /* fused: row r's chunk max, then one loop computing row r's exponentials
                     * (kept in Er, summed) and writing row r - 1 (Ew * g, streaming) */
                    float cm = tile_row_maxf(x + c * CH, CH, st.m);
                    st.s = cm == st.m ? st.s : st.s * tile_expf(st.m - cm);
                    st.m = cm;
                    Fr[c] = cm;
                    const __m512 vs = _mm512_set1_ps(cm == -__builtin_inff() ? 0.0f : cm), vg = _mm512_set1_ps(g);
                    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
                    const float *xc = x + c * CH;
                    float *ec = Er + c * CH, *yc = y + c * CH;
                    const float *wc = Ew + c * CH;
                    for (int64_t j = 0; j < CH; j += 32) {
                        _mm_prefetch((const char *)(xc + j + TILE_ROW_AHEAD), _MM_HINT_T0);
                        _mm_prefetch((const char *)(xc + j + TILE_ROW_AHEAD + 16), _MM_HINT_T0);
                        __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(xc + j), vs));
                        __m512 e1 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(xc + j + 16), vs));
                        _mm512_storeu_ps(ec + j, e0);
                        _mm512_storeu_ps(ec + j + 16, e1);
                        s0 = _mm512_add_ps(s0, e0);
                        s1 = _mm512_add_ps(s1, e1);
                        _mm512_stream_ps(yc + j, _mm512_mul_ps(_mm512_loadu_ps(wc + j), vg));
                        _mm512_stream_ps(yc + j + 16, _mm512_mul_ps(_mm512_loadu_ps(wc + j + 16), vg));
                    }
                    tile_sfence();
                    st.s = st.s + _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
                    continue;
                }
                WRITE(y, c * CH, (c + 1) * CH, (FORM == 2 && r < M ? x + c * CH : (const float *)NULL), Ew[j] * g);
            }
            if (r < M) sm_read_chunk(x, Er, Fr, c, &st);
        }
        prev = st;
    }
}
static void rms_rows(const float *X, const float *W, float *Y, int64_t M, int64_t N) {
    if (FORM == 0) { /* as c.c emits it: the write loop prefetches the next row (prefetcht1) */
        for (int64_t r = 0; r < M; r++) {
            const float *x = X + r * N;
            float a = 0, *y = Y + r * N;
            _Pragma("omp simd reduction(+:a)") for (int64_t j = 0; j < N; j++) a = a + x[j] * x[j];
            float sc = (float)(1.0 / sqrt((double)(a / (float)N + 1e-6f)));
            for (int64_t c_ = 0; c_ < N; c_ += TILE_NT_W) {
                float tb[TILE_NT_W] __attribute__((aligned(64)));
                _Pragma("omp simd") for (int64_t j = c_; j < c_ + TILE_NT_W; j++) tb[j - c_] = x[j] * sc * W[j];
                if (r + 1 < M) __builtin_prefetch(X + (r + 1) * N + c_, 0, 2);
                tile_stream_f32v(y + c_, tb);
            }
            tile_sfence();
        }
        return;
    }
    float psc = 0;
    for (int64_t r = 0; r <= M; r++) {
        const float *x = X + r * N, *xp = X + (r - 1) * N;
        float a = 0, *y = Y + (r - 1) * N;
        for (int64_t c = 0; c < N / CH; c++) {
            if (FORM == 3 && r > 0 && r < M) {
                /* fused: one loop sums row r's squares and writes row r - 1 */
                __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), vc = _mm512_set1_ps(psc);
                for (int64_t j = c * CH; j < (c + 1) * CH; j += 32) {
                    _mm_prefetch((const char *)(x + j + TILE_ROW_AHEAD), _MM_HINT_T0);
                    _mm_prefetch((const char *)(x + j + TILE_ROW_AHEAD + 16), _MM_HINT_T0);
                    __m512 a0 = _mm512_loadu_ps(x + j), a1 = _mm512_loadu_ps(x + j + 16);
                    s0 = _mm512_fmadd_ps(a0, a0, s0);
                    s1 = _mm512_fmadd_ps(a1, a1, s1);
                    _mm512_stream_ps(y + j, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xp + j), vc), _mm512_loadu_ps(W + j)));
                    _mm512_stream_ps(y + j + 16, _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(xp + j + 16), vc), _mm512_loadu_ps(W + j + 16)));
                }
                tile_sfence();
                a += _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
                continue;
            }
            if (r > 0) WRITE(y, c * CH, (c + 1) * CH, (FORM == 2 && r < M ? x + c * CH : (const float *)NULL), xp[j] * psc * W[j]);
            if (r < M) {
                float ca = 0;
                _Pragma("omp simd reduction(+:ca)") for (int64_t j = c * CH; j < (c + 1) * CH; j++) ca = ca + x[j] * x[j];
                a += ca;
            }
        }
        if (r < M) psc = (float)(1.0 / sqrt((double)(a / (float)N + 1e-6f)));
    }
}
static void map_rows(const float *X, float *Y, size_t n, int ex) {
    for (size_t i = 0; i < n; i += 32) {
        if (FORM == 1) { /* a software prefetch CH elements ahead (as tile_row_expsumf's) */
            _mm_prefetch((const char *)(X + i + CH), _MM_HINT_T0);
            _mm_prefetch((const char *)(X + i + CH + 16), _MM_HINT_T0);
        }
        __m512 a = _mm512_load_ps(X + i), b = _mm512_load_ps(X + i + 16);
        if (ex) { a = tile_exp_f32x16(a); b = tile_exp_f32x16(b); }
        _mm512_stream_ps(Y + i, a);
        _mm512_stream_ps(Y + i + 16, b);
    }
    tile_sfence();
}
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: rowpipe softmax|rmsnorm N serial|pipe|pipepf|fused CHUNK\n"); return 2; }
    size_t el = (size_t)1 << 25;
    int64_t N = atoi(argv[2]);
    int sm = !strcmp(argv[1], "softmax");
    static const char *const forms[4] = {"serial", "pipe", "pipepf", "fused"};
    FORM = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(argv[3], forms[i])) FORM = i;
    CH = atoi(argv[4]);
    if (FORM < 0 || CH < 64 || CH % 64 || N < CH || N > 65536 || N % CH || N / CH > 64) { fprintf(stderr, "rowpipe: bad form, N or CHUNK\n"); return 2; }
    float *X = aligned_alloc(64, el * 4 + (size_t)N * 4), *Y = aligned_alloc(64, el * 4), *E = aligned_alloc(64, 2 * 65536 * 4), *W = aligned_alloc(64, 65536 * 4);
    for (size_t i = 0; i < el + (size_t)N; i++) X[i] = (float)((i * 2654435761u) % 10000) / 2500.0f;
    for (int i = 0; i < 65536; i++) W[i] = 0.5f;
    memset(Y, 0, el * 4);
    double t[9], tm[9];
    for (int rep = 0; rep < 9; rep++) {
        double a = now();
        memcpy(Y, X, el * 4);
        tm[rep] = now() - a;
        a = now();
        if (!strcmp(argv[1], "copy") || !strcmp(argv[1], "expmap")) map_rows(X, Y, el, argv[1][0] == 'e');
        else if (sm) softmax_rows(X, Y, E, (int64_t)(el / (size_t)N), N);
        else rms_rows(X, W, Y, (int64_t)(el / (size_t)N), N);
        t[rep] = now() - a;
    }
    qsort(t, 9, sizeof t[0], cmpd);
    qsort(tm, 9, sizeof tm[0], cmpd);
    printf("| %s | %lld | %s | %lld | %.2f | %.2f | **%.2f** |   (check %g)\n", argv[1], (long long)N, argv[3], (long long)CH, 8.0 * (double)el / t[4] * 1e-9,
           8.0 * (double)el / tm[4] * 1e-9, tm[4] / t[4], (double)Y[12345]);
    return 0;
}
