/* test_compress.c — gradient compression (compress.c).
 *   test_compress codec      local codec: sizes, error bounds per method, names, bad arguments
 *   test_compress N          N ranks: every method x odd sizes x sum/avg x in place:
 *                            wire bytes as predicted, results bit-identical on all ranks,
 *                            close to the true mean, error feedback tracks the running sum,
 *                            bad arguments give clear errors */
#include "tl_launch.h"

#include <math.h>
#include <stdint.h>

static int fails;
#define CHECKT(cond, ...)                                                  \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            fails++;                                                       \
        }                                                                  \
    } while (0)

static uint64_t rng_state;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}
static float frand(void) { return (float)rnd() / 2147483648.0f - 1.0f; } /* [-1, 1) */

/* payload bytes of k elements, written out independently of compress.c */
static size_t want_bytes(int m, size_t count, size_t chunk) {
    size_t b = 0;
    for (size_t c0 = 0; c0 < count; c0 += chunk) {
        size_t k = count - c0 < chunk ? count - c0 : chunk;
        switch (m) {
        case TLINK_COMPRESS_NONE: b += 4 * k; break;
        case TLINK_COMPRESS_SIGN1: b += 4 + (k + 7) / 8; break;
        case TLINK_COMPRESS_INT4: b += 4 + (k + 1) / 2; break;
        default: b += 4 + k; break;
        }
    }
    return b;
}

static const size_t sizes[] = {0, 1, 7, 100, 1001, 4099};
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---------- sign1 against a scalar reference ----------
 * The library's sign1 codec runs a vectorised path where the CPU has one (AVX2) and a portable
 * one otherwise (or with TLINK_COMPRESS_SCALAR=1); both must give exactly these bytes and
 * floats: per chunk, scale = (sum of |x| in 8 lanes, lane j taking elements 8q + j, a tail
 * of k % 8 into lane 0, reduced ((0+1)+(2+3))+((4+5)+(6+7))) / k; bit j of byte q set when
 * element 8q + j has its sign bit clear; decoded as +-1.0f * scale. */
static size_t ref_sign1_encode(const float *x, size_t n, size_t ch, uint8_t *out) {
    size_t o = 0;
    for (size_t c0 = 0; c0 < n; c0 += ch) {
        size_t k = n - c0 < ch ? n - c0 : ch, full = k / 8 * 8;
        float lane[8] = {0};
        for (size_t i = 0; i < full; i++) lane[i % 8] += fabsf(x[c0 + i]);
        for (size_t i = full; i < k; i++) lane[0] += fabsf(x[c0 + i]);
        float scale = (((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]))) / (float)k;
        memcpy(out + o, &scale, 4);
        o += 4;
        memset(out + o, 0, (k + 7) / 8);
        for (size_t i = 0; i < k; i++)
            if (!signbit(x[c0 + i])) out[o + i / 8] |= (uint8_t)(1u << (i % 8));
        o += (k + 7) / 8;
    }
    return o;
}

static int sign1_reference_tests(void) {
    const size_t ns[] = {1, 7, 8, 9, 15, 16, 17, 100, 1001, 4099, 10007};
    const size_t chs[] = {1, 3, 8, 13, 64, 100, 1024, 4096};
    int bad_enc = 0, bad_dec = 0, cases = 0;
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof chs / sizeof chs[0]; b++) {
            size_t n = ns[a], ch = chs[b];
            float *x = malloc(n * 4), *y = malloc(n * 4);
            size_t eb = tlink_compress_encoded_bytes(TLINK_COMPRESS_SIGN1, n, ch);
            uint8_t *got = malloc(eb + 1), *want = malloc(eb + 1);
            rng_state = 777 + n * 31 + ch;
            for (size_t i = 0; i < n; i++) x[i] = frand() * (i % 5 == 0 ? 3.0f : 0.01f);
            if (n > 2) x[2] = -0.0f; /* sign bit set: a 0 bit */
            if (n > 4) x[4] = 0.0f;
            if (tlink_compress_encode(TLINK_COMPRESS_SIGN1, x, n, ch, got) != TLINK_OK) bad_enc++;
            if (ref_sign1_encode(x, n, ch, want) != eb || memcmp(got, want, eb)) bad_enc++;
            if (tlink_compress_decode(TLINK_COMPRESS_SIGN1, want, n, ch, y) != TLINK_OK) bad_dec++;
            size_t o = 0;
            for (size_t c0 = 0; c0 < n; c0 += ch) {
                size_t k = n - c0 < ch ? n - c0 : ch;
                float scale;
                memcpy(&scale, want + o, 4);
                for (size_t i = 0; i < k; i++) {
                    float v = ((want[o + 4 + i / 8] >> (i % 8)) & 1 ? 1.0f : -1.0f) * scale;
                    if (memcmp(&v, &y[c0 + i], 4)) bad_dec++;
                }
                o += 4 + (k + 7) / 8;
            }
            cases++;
            free(x);
            free(y);
            free(got);
            free(want);
        }
    CHECKT(!bad_enc, "sign1 encodings differ from the scalar reference in %d of %d cases", bad_enc, cases);
    CHECKT(!bad_dec, "sign1 decoding differs from the scalar reference (%d values)", bad_dec);
    return 0;
}

/* ---------- local codec ---------- */
static int codec_tests(void) {
    sign1_reference_tests();
    /* sizes */
    CHECKT(tlink_compress_encoded_bytes(TLINK_COMPRESS_SIGN1, 1000, 64) == 15 * (4 + 8) + 4 + 5, "sign1 bytes");
    CHECKT(tlink_compress_encoded_bytes(TLINK_COMPRESS_INT4, 3, 2) == (4 + 1) + (4 + 1), "int4 bytes");
    CHECKT(tlink_compress_encoded_bytes(TLINK_COMPRESS_NONE, 10, 0) == 40, "none bytes");
    CHECKT(tlink_compress_encoded_bytes(TLINK_COMPRESS_COUNT, 10, 0) == 0, "invalid method gives 0");
    CHECKT(tlink_compress_encoded_bytes(TLINK_COMPRESS_INT8, 10, TLINK_COMPRESS_MAX_CHUNK + 1) == 0, "chunk too big gives 0");
    size_t big = (size_t)1 << 20;
    double ratio = 4.0 * (double)big / (double)tlink_compress_encoded_bytes(TLINK_COMPRESS_SIGN1, big, 0);
    CHECKT(ratio > 31.0 && ratio <= 32.0, "sign1 ratio %.2f at the default chunk", ratio);
    ratio = 4.0 * (double)big / (double)tlink_compress_encoded_bytes(TLINK_COMPRESS_SIGN1, big, 8192);
    CHECKT(ratio > 31.8, "sign1 ratio %.2f at chunk 8192", ratio);
    /* names */
    for (int m = 0; m < TLINK_COMPRESS_COUNT; m++)
        CHECKT(tlink_compress_from_name(tlink_compress_name((tlink_compress_method)m)) == m, "name round trip %d", m);
    CHECKT(tlink_compress_from_name("1bit") == TLINK_COMPRESS_SIGN1, "1bit");
    CHECKT(tlink_compress_from_name("int3") == -1 && tlink_compress_from_name(NULL) == -1, "unknown name");
    CHECKT(!strcmp(tlink_compress_name((tlink_compress_method)99), "?"), "bad method name");

    /* error bounds, every method, odd sizes and chunks */
    const size_t chunks[] = {1, 5, 64, 0};
    for (int m = 0; m < TLINK_COMPRESS_COUNT; m++)
        for (size_t si = 0; si < NSIZES; si++)
            for (size_t ci = 0; ci < 4; ci++) {
                size_t n = sizes[si], ch = chunks[ci] ? chunks[ci] : TLINK_COMPRESS_DEFAULT_CHUNK;
                float *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4);
                size_t eb = tlink_compress_encoded_bytes((tlink_compress_method)m, n, chunks[ci]);
                CHECKT(eb == want_bytes(m, n, ch), "%s n=%zu chunk=%zu: %zu bytes, want %zu",
                       tlink_compress_name((tlink_compress_method)m), n, ch, eb, want_bytes(m, n, ch));
                uint8_t *buf = malloc(eb + 1);
                rng_state = 1234 + n * 7 + ch;
                for (size_t i = 0; i < n; i++) x[i] = frand() * (i % 3 == 0 ? 10.0f : 0.5f);
                if (n > 3) x[3] = 0.0f;
                CHECKT(tlink_compress_encode((tlink_compress_method)m, x, n, chunks[ci], buf) == TLINK_OK, "encode");
                CHECKT(tlink_compress_decode((tlink_compress_method)m, buf, n, chunks[ci], y) == TLINK_OK, "decode");
                int bad = 0;
                for (size_t c0 = 0; c0 < n; c0 += ch) {
                    size_t k = n - c0 < ch ? n - c0 : ch;
                    float mx = 0, mean = 0;
                    for (size_t i = 0; i < k; i++) {
                        mx = fmaxf(mx, fabsf(x[c0 + i]));
                        mean += fabsf(x[c0 + i]);
                    }
                    mean /= (float)k;
                    for (size_t i = c0; i < c0 + k; i++) {
                        float err = fabsf(x[i] - y[i]);
                        switch (m) {
                        case TLINK_COMPRESS_NONE: bad += x[i] != y[i]; break;
                        case TLINK_COMPRESS_SIGN1:
                            bad += fabsf(fabsf(y[i]) - mean) > 1e-5f * mean || (x[i] >= 0) != (y[i] > 0 || (y[i] == 0 && mean == 0));
                            break;
                        case TLINK_COMPRESS_INT4: bad += err > mx / 14.0f * 1.0001f + 1e-30f; break;
                        case TLINK_COMPRESS_INT8: bad += err > mx / 254.0f * 1.0001f + 1e-30f; break;
                        default: /* fp8 e4m3 after scaling to 448: 3 mantissa bits; below 2^-6 subnormal steps of 2^-9 */
                            bad += err > fabsf(x[i]) / 16.0f * 1.0001f + mx / 448.0f * 0x1p-10f * 1.0001f;
                            break;
                        }
                    }
                }
                CHECKT(!bad, "%s n=%zu chunk=%zu: %d values out of bounds", tlink_compress_name((tlink_compress_method)m),
                       n, ch, bad);
                free(x);
                free(y);
                free(buf);
            }
    /* values exactly on the grid come back exactly (int8: q * s with s = max / 127) */
    {
        float x[254], y[254];
        for (int i = 0; i < 254; i++) x[i] = (float)(i - 127) * 0.25f;
        uint8_t buf[300];
        tlink_compress_encode(TLINK_COMPRESS_INT8, x, 254, 254, buf);
        tlink_compress_decode(TLINK_COMPRESS_INT8, buf, 254, 254, y);
        int bad = 0;
        for (int i = 0; i < 254; i++) bad += x[i] != y[i];
        CHECKT(!bad, "int8 grid values not exact (%d)", bad);
    }
    /* fp8: with the chunk's max at 448 the scale is 1 and every byte must be exactly the
     * library's converter's (round to nearest even, subnormals, ties) */
    {
        enum { K = 20001 };
        static float x[K];
        static uint8_t buf[K + 8];
        rng_state = 99;
        x[0] = 448.0f;
        for (int i = 1; i < K; i++) {
            float mag = i < 2000 ? (float)i * 0x1p-11f : i < 4000 ? (float)(i - 2000) * 0x1p-12f * 0.5f
                      : ldexpf(1.0f + (float)(rnd() & 0xFFFF) / 65536.0f, (int)(rnd() % 18) - 9);
            if (mag > 448.0f) mag = 448.0f;
            x[i] = (i & 1) ? -mag : mag;
        }
        for (int i = 4000; i < 4100; i++) x[i] = (i & 1 ? -1.0f : 1.0f) * (1.0f + (float)(2 * (i - 4000) + 1) / 16.0f); /* ties */
        tlink_compress_encode(TLINK_COMPRESS_FP8, x, K, K, buf);
        float sc;
        memcpy(&sc, buf, 4);
        int bad = sc != 1.0f;
        for (int i = 0; i < K; i++)
            if (buf[4 + i] != tlink_f32_to_fp8_e4m3(x[i])) {
                if (bad++ < 5) fprintf(stderr, "fp8 of %a: %02x, converter %02x\n", x[i], buf[4 + i], tlink_f32_to_fp8_e4m3(x[i]));
            }
        CHECKT(!bad, "fp8 encoder differs from tlink_f32_to_fp8_e4m3 (%d values)", bad);
    }
    /* all-zero chunk: zero scale, zero output */
    {
        float x[9] = {0}, y[9];
        uint8_t buf[64];
        for (int m = 1; m < TLINK_COMPRESS_COUNT; m++) {
            tlink_compress_encode((tlink_compress_method)m, x, 9, 4, buf);
            for (int i = 0; i < 9; i++) y[i] = 1;
            tlink_compress_decode((tlink_compress_method)m, buf, 9, 4, y);
            int bad = 0;
            for (int i = 0; i < 9; i++) bad += fabsf(y[i]) != 0;
            CHECKT(!bad, "%s: zeros decode to non-zero", tlink_compress_name((tlink_compress_method)m));
        }
    }
    /* bad arguments */
    float x[4] = {1, 2, 3, 4};
    uint8_t b[64];
    CHECKT(tlink_compress_encode((tlink_compress_method)7, x, 4, 0, b) == TLINK_ERR_INVALID_ARG &&
               strstr(tlink_last_error(NULL), "method"),
           "invalid method: %s", tlink_last_error(NULL));
    CHECKT(tlink_compress_encode(TLINK_COMPRESS_INT8, NULL, 4, 0, b) == TLINK_ERR_INVALID_ARG, "NULL x");
    CHECKT(tlink_compress_decode(TLINK_COMPRESS_INT8, b, 4, 0, NULL) == TLINK_ERR_INVALID_ARG, "NULL out");
    CHECKT(tlink_compress_encode(TLINK_COMPRESS_INT8, x, 4, TLINK_COMPRESS_MAX_CHUNK + 1, b) == TLINK_ERR_INVALID_ARG &&
               strstr(tlink_last_error(NULL), "chunk"),
           "chunk too big: %s", tlink_last_error(NULL));
    CHECKT(tlink_compress_encode(TLINK_COMPRESS_INT8, NULL, 0, 0, NULL) == TLINK_OK, "count 0 with NULL is fine");
    tlink_compress *cs = (tlink_compress *)1;
    CHECKT(tlink_compress_create(NULL, TLINK_COMPRESS_INT8, 4, 0, 1, &cs) == TLINK_ERR_INVALID_ARG && cs == NULL,
           "NULL comm");
    CHECKT(tlink_compressed_allreduce(NULL, x, x, 4, TLINK_SUM) == TLINK_ERR_INVALID_ARG, "NULL state");
    tlink_compress_stats stt;
    CHECKT(tlink_compress_get_stats(NULL, &stt) == TLINK_ERR_INVALID_ARG, "stats of NULL");
    tlink_compress_destroy(NULL);
    tlink_compress_reset(NULL);
    printf("codec: %s\n", fails ? "FAILED" : "ok");
    return fails ? 1 : 0;
}

/* ---------- N ranks ---------- */
/* rank r's input at step t, element i: a deterministic mix of a per-element trend (the same
 * on every rank: what error feedback must not lose) and rank noise */
static float input(int r, int t, size_t i) {
    uint64_t h = (uint64_t)r * 0x9E3779B97F4A7C15ull ^ (uint64_t)t * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)i * 0x165667B19E3779F9ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    float noise = (float)(h & 0xFFFF) / 32768.0f - 1.0f;
    float trend = (float)((i * 37) % 101) / 100.0f - 0.3f;
    return trend + 0.5f * noise;
}

static size_t pad_bytes(int m, size_t count, size_t chunk, int n) {
    size_t nch = (count + chunk - 1) / chunk, mx = 0;
    for (int j = 0; j < n; j++) {
        size_t c0 = (size_t)j * (nch / n) + ((size_t)j < nch % n ? (size_t)j : nch % n);
        size_t c1 = (size_t)(j + 1) * (nch / n) + ((size_t)(j + 1) < nch % n ? (size_t)(j + 1) : nch % n);
        size_t e0 = c0 * chunk < count ? c0 * chunk : count, e1 = c1 * chunk < count ? c1 * chunk : count;
        size_t b = want_bytes(m, e1 - e0, chunk);
        if (b > mx) mx = b;
    }
    return mx;
}

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr) != TLINK_OK) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 1;
    }
    const size_t chunks[] = {64, 0};
    for (int m = 0; m < TLINK_COMPRESS_COUNT; m++)
        for (size_t si = 0; si < NSIZES; si++)
            for (int ci = 0; ci < 2; ci++) {
                size_t n = sizes[si], ch = chunks[ci] ? chunks[ci] : TLINK_COMPRESS_DEFAULT_CHUNK;
                const char *mn = tlink_compress_name((tlink_compress_method)m);
                tlink_compress *cs = NULL;
                if (tlink_compress_create(c, (tlink_compress_method)m, n, chunks[ci], 1, &cs) != TLINK_OK) {
                    fprintf(stderr, "rank %d: create: %s\n", rank, tlink_last_error(c));
                    return 1;
                }
                float *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4), *all = malloc((n + 1) * 4 * (size_t)size);
                for (int op = 0; op < 2; op++) {
                    tlink_op o = op ? TLINK_AVG : TLINK_SUM;
                    for (size_t i = 0; i < n; i++) x[i] = input(rank, op, i);
                    int inplace = (si + (size_t)op) % 2;
                    if (inplace) memcpy(y, x, n * 4);
                    tlink_status st = tlink_compressed_allreduce(cs, inplace ? y : x, y, n, o);
                    CHECKT(st == TLINK_OK, "rank %d %s n=%zu: %s", rank, mn, n, tlink_last_error(c));
                    /* bit-identical on every rank */
                    if (n) {
                        st = tlink_allgather(c, y, all, n, TLINK_F32);
                        CHECKT(st == TLINK_OK, "allgather");
                        for (int r = 1; r < size; r++)
                            CHECKT(!memcmp(all, all + (size_t)r * n, n * 4), "%s n=%zu: rank %d's result differs from rank 0's",
                                   mn, n, r);
                    }
                    /* close to the true result (first call of each op has only part of the residual) */
                    double maxerr = 0, maxv = 0;
                    for (size_t i = 0; i < n; i++) {
                        double s = 0;
                        for (int r = 0; r < size; r++) s += input(r, op, i);
                        if (o == TLINK_AVG) s /= size;
                        maxerr = fmax(maxerr, fabs(s - y[i]));
                        maxv = fmax(maxv, fabs(s));
                    }
                    double tol = m == TLINK_COMPRESS_NONE ? 1e-5 * (maxv + 1) : m == TLINK_COMPRESS_INT8 ? 0.03 * size * (1 + maxv)
                               : m == TLINK_COMPRESS_FP8 ? 0.15 * size * (1 + maxv) : 10.0 * size * (1 + maxv);
                    CHECKT(maxerr <= tol, "%s n=%zu %s: max error %g > %g", mn, n, tlink_op_name(o), maxerr, tol);
                    tlink_compress_stats s;
                    tlink_compress_get_stats(cs, &s);
                    uint64_t want = size > 1 ? 2ull * (uint64_t)(size - 1) * pad_bytes(m, n, ch, size) : 0;
                    CHECKT(s.last_wire_bytes == want && s.calls == (uint64_t)op + 1, "%s n=%zu: wire bytes %llu, want %llu", mn,
                           n, (unsigned long long)s.last_wire_bytes, (unsigned long long)want);
                }
                free(x);
                free(y);
                free(all);
                tlink_compress_destroy(cs);
            }

    /* error feedback: over T steps the running sum of the outputs tracks the running sum of
     * the true means (the gap is the residuals left, -mean(e1) - e2); without it the lossy
     * methods drift linearly in T. Checked at T = 20 and T = 80. */
    {
        const size_t n = 1001;
        const int T1 = 20, T2 = 80;
        for (int m = 1; m < TLINK_COMPRESS_COUNT; m++) {
            double err[2][2];
            for (int ef = 0; ef < 2; ef++) {
                tlink_compress *cs;
                tlink_compress_create(c, (tlink_compress_method)m, n, 100, ef, &cs);
                double *so = calloc(n, 8), *sm = calloc(n, 8);
                float *x = malloc(n * 4);
                for (int t = 0; t < T2; t++) {
                    for (size_t i = 0; i < n; i++) x[i] = input(rank, t + 10, i);
                    if (tlink_compressed_allreduce(cs, x, x, n, TLINK_AVG)) { fails++; break; }
                    double e = 0;
                    for (size_t i = 0; i < n; i++) {
                        double s = 0;
                        for (int r = 0; r < size; r++) s += input(r, t + 10, i);
                        sm[i] += s / size;
                        so[i] += x[i];
                        e = fmax(e, fabs(so[i] - sm[i]));
                    }
                    if (t + 1 == T1) err[ef][0] = e;
                    if (t + 1 == T2) err[ef][1] = e;
                }
                tlink_compress_stats s;
                tlink_compress_get_stats(cs, &s);
                CHECKT(ef ? s.residual_norm > 0 : s.residual_norm == 0, "residual norm %g with ef=%d", s.residual_norm, ef);
                free(so);
                free(sm);
                free(x);
                tlink_compress_destroy(cs);
            }
            const char *mn = tlink_compress_name((tlink_compress_method)m);
            /* with error feedback: sublinear (4x the steps, well under 4x the gap); quantisers
             * stay within a few steps of their grid */
            CHECKT(err[1][1] <= 2.5 * err[1][0] + 1e-6, "%s: with error feedback the gap grows from %g to %g", mn,
                   err[1][0], err[1][1]);
            double bound = m == TLINK_COMPRESS_SIGN1 ? 1e9 : m == TLINK_COMPRESS_INT4 ? 0.5 : 0.1;
            CHECKT(err[1][1] <= bound, "%s: with error feedback the running sum is off by %g (> %g)", mn, err[1][1], bound);
            CHECKT(err[1][1] < 0.5 * err[0][1], "%s: error feedback (%g) not clearly better than none (%g)", mn, err[1][1],
                   err[0][1]);
            if (rank == 0)
                printf("np%d %s: running-sum gap after %d / %d steps: %.4g / %.4g with error feedback, %.4g / %.4g without\n",
                       size, mn, T1, T2, err[1][0], err[1][1], err[0][0], err[0][1]);
        }
    }

    /* phase 2 in another method (tlink_compress_set_gather): the same method again is
     * bit-identical to the default; "none" gives exactly the average of the decoded phase-1
     * blocks (each owner's own block exact), computed here from the local codec; int8 is within
     * half a grid step of that; wire bytes are (N-1) x (phase-1 pad + phase-2 pad) */
    for (size_t si = 0; si < NSIZES; si++)
        for (int ci = 0; ci < 2; ci++) {
            size_t n = sizes[si], ch = chunks[ci] ? chunks[ci] : TLINK_COMPRESS_DEFAULT_CHUNK;
            const int m2s[] = {TLINK_COMPRESS_SIGN1, TLINK_COMPRESS_NONE, TLINK_COMPRESS_INT8, TLINK_COMPRESS_INT4};
            float *x = malloc((n + 1) * 4), *y = malloc((n + 1) * 4), *y0 = malloc((n + 1) * 4);
            float *ref = calloc(n + 1, 4), *dec = malloc((n + 1) * 4);
            uint8_t *enc = malloc(tlink_compress_encoded_bytes(TLINK_COMPRESS_SIGN1, n, ch) + 1);
            /* the reference: block j of rank r decoded after sign1 (exact for r == j), summed in rank order */
            size_t nch = (n + ch - 1) / ch;
            for (int r = 0; r < size; r++) {
                for (size_t i = 0; i < n; i++) x[i] = input(r, 7, i);
                for (int j = 0; j < size; j++) {
                    size_t c0 = (size_t)j * (nch / size) + ((size_t)j < nch % size ? (size_t)j : nch % size);
                    size_t c1 = (size_t)(j + 1) * (nch / size) + ((size_t)(j + 1) < nch % size ? (size_t)(j + 1) : nch % size);
                    size_t e0 = c0 * ch < n ? c0 * ch : n, e1 = c1 * ch < n ? c1 * ch : n;
                    if (e1 == e0) continue;
                    if (r == j) memcpy(dec + e0, x + e0, (e1 - e0) * 4);
                    else {
                        tlink_compress_encode(TLINK_COMPRESS_SIGN1, x + e0, e1 - e0, ch, enc);
                        tlink_compress_decode(TLINK_COMPRESS_SIGN1, enc, e1 - e0, ch, dec + e0);
                    }
                }
                for (size_t i = 0; i < n; i++) ref[i] = r ? ref[i] + dec[i] : dec[i];
            }
            double rmax = 0;
            for (size_t i = 0; i < n; i++) rmax = fmax(rmax, fabs(ref[i] /= (float)size));
            for (size_t i = 0; i < n; i++) x[i] = input(rank, 7, i);
            for (int k = 0; k < 4; k++) {
                tlink_compress *cs = NULL;
                CHECKT(tlink_compress_create(c, TLINK_COMPRESS_SIGN1, n, chunks[ci], 1, &cs) == TLINK_OK, "create");
                CHECKT(tlink_compress_set_gather(cs, (tlink_compress_method)m2s[k]) == TLINK_OK, "set_gather: %s",
                       tlink_last_error(c));
                const char *mn = tlink_compress_name((tlink_compress_method)m2s[k]);
                CHECKT(tlink_compressed_allreduce(cs, x, y, n, TLINK_AVG) == TLINK_OK, "sign1:%s n=%zu: %s", mn, n,
                       tlink_last_error(c));
                double err = 0;
                for (size_t i = 0; i < n; i++) err = fmax(err, fabs((double)y[i] - ref[i]));
                if (k == 0) {
                    tlink_compress *c0s = NULL;
                    tlink_compress_create(c, TLINK_COMPRESS_SIGN1, n, chunks[ci], 1, &c0s);
                    tlink_compressed_allreduce(c0s, x, y0, n, TLINK_AVG);
                    CHECKT(!memcmp(y, y0, n * 4), "sign1:sign1 n=%zu chunk %zu differs from the default", n, ch);
                    tlink_compress_destroy(c0s);
                } else if (k == 1) {
                    CHECKT(err <= 1e-6 * (1 + rmax), "sign1:none n=%zu chunk %zu: off the decoded average by %g", n, ch, err);
                } else {
                    double step = rmax / (k == 2 ? 127.0 : 7.0);
                    CHECKT(err <= 0.5 * step * 1.001 + 1e-6, "sign1:%s n=%zu chunk %zu: error %g > half a step %g", mn, n, ch,
                           err, 0.5 * step);
                }
                tlink_compress_stats s;
                tlink_compress_get_stats(cs, &s);
                uint64_t want = size > 1 ? (uint64_t)(size - 1) * (pad_bytes(TLINK_COMPRESS_SIGN1, n, ch, size) +
                                                                   pad_bytes(m2s[k], n, ch, size)) : 0;
                CHECKT(s.last_wire_bytes == want, "sign1:%s n=%zu: wire bytes %llu, want %llu", mn, n,
                       (unsigned long long)s.last_wire_bytes, (unsigned long long)want);
                if (n && size > 1) {
                    float *all = malloc(n * 4 * (size_t)size);
                    tlink_allgather(c, y, all, n, TLINK_F32);
                    for (int r = 1; r < size; r++)
                        CHECKT(!memcmp(all, all + (size_t)r * n, n * 4), "sign1:%s n=%zu: rank %d differs", mn, n, r);
                    free(all);
                }
                tlink_compress_destroy(cs);
            }
            free(x), free(y), free(y0), free(ref), free(dec), free(enc);
        }

    /* bad arguments: clear errors, nothing sent (every rank fails the same way) */
    {
        tlink_compress *cs = NULL;
        float x[10] = {0};
        CHECKT(tlink_compress_create(c, (tlink_compress_method)9, 10, 0, 1, &cs) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "method"), "bad method: %s", tlink_last_error(c));
        CHECKT(tlink_compress_create(c, TLINK_COMPRESS_INT8, 10, TLINK_COMPRESS_MAX_CHUNK + 1, 1, &cs) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "chunk"), "bad chunk: %s", tlink_last_error(c));
        CHECKT(tlink_compress_create(c, TLINK_COMPRESS_INT8, 10, 0, 2, &cs) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "error_feedback"), "bad ef: %s", tlink_last_error(c));
        CHECKT(tlink_compress_create(c, TLINK_COMPRESS_INT8, 10, 0, 1, NULL) == TLINK_ERR_INVALID_ARG, "NULL out");
        CHECKT(tlink_compress_create(c, TLINK_COMPRESS_INT8, 10, 0, 1, &cs) == TLINK_OK, "create");
        CHECKT(tlink_compress_set_gather(cs, (tlink_compress_method)7) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "method"), "bad gather method: %s", tlink_last_error(c));
        CHECKT(tlink_compress_set_gather(NULL, TLINK_COMPRESS_INT8) == TLINK_ERR_INVALID_ARG, "set_gather NULL");
        CHECKT(tlink_compressed_allreduce(cs, x, x, 11, TLINK_SUM) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "count 11"), "count mismatch: %s", tlink_last_error(c));
        CHECKT(tlink_compressed_allreduce(cs, x, x, 10, TLINK_MAX) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "op must be sum or avg"), "op max: %s", tlink_last_error(c));
        CHECKT(tlink_compressed_allreduce(cs, NULL, x, 10, TLINK_SUM) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "sendbuf"), "NULL sendbuf: %s", tlink_last_error(c));
        CHECKT(tlink_compressed_allreduce(cs, x, NULL, 10, TLINK_SUM) == TLINK_ERR_INVALID_ARG &&
                   strstr(tlink_last_error(c), "recvbuf"), "NULL recvbuf: %s", tlink_last_error(c));
        CHECKT(tlink_compressed_allreduce(cs, x, x, 10, TLINK_SUM) == TLINK_OK, "still usable after bad calls");
        tlink_compress_reset(cs);
        tlink_compress_stats s;
        tlink_compress_get_stats(cs, &s);
        CHECKT(s.residual_norm == 0, "reset clears the residuals");
        tlink_compress_destroy(cs);
    }
    tlink_comm_destroy(c);
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_compress codec|NRANKS\n");
        return 2;
    }
    if (!strcmp(argv[1], "codec")) return codec_tests();
    int n = atoi(argv[1]);
    if (n < 1 || n > 16) {
        fprintf(stderr, "test_compress: NRANKS must be 1..16\n");
        return 2;
    }
    int bad = tlt_launch(n, rank_main, NULL, 100.0, NULL);
    printf("compress np%d: %s\n", n, bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}
