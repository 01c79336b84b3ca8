/* dtype_dump.c — a small helper that lets test_dtype_ref.py drive the C conversions.
 *
 *   dtype_dump decode FMT OUT          every bit pattern of FMT (f16 bf16 e4m3 e5m2 e2m1),
 *                                      decoded to float64, written to OUT (little-endian f64)
 *   dtype_dump encode FMT IN OUT       IN: float64 values; OUT: the bits of FMT for each value
 *                                      (uint16 for f16/bf16, uint8 otherwise)
 *   dtype_dump encode32 FMT IN OUT     IN: float32 values; uses the f32 entry points
 *                                      (f16/bf16 only)
 *   dtype_dump encodei FMT IN OUT      IN: int64 values; uses tile_store_i (one rounding)
 *   dtype_dump npy-write DESCR OUT     writes a 2x3 array (values 0..5 converted) with DESCR
 *   dtype_dump npy-read IN             prints descr, shape and the elements as doubles
 *
 * Files are raw little-endian arrays; the host is assumed little-endian (x86-64, aarch64). */
#include "core/core.h"

#include <stdlib.h>
#include <string.h>

static int fmt_of(const char *s, tile_dtype *dt) {
    static const struct { const char *n; tile_dtype dt; } t[] = {
        {"f16", TILE_DT_F16},        {"bf16", TILE_DT_BF16},      {"f32", TILE_DT_F32},
        {"e4m3", TILE_DT_FP8_E4M3}, {"e5m2", TILE_DT_FP8_E5M2}, {"e2m1", TILE_DT_FP4_E2M1},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(s, t[i].n) == 0) { *dt = t[i].dt; return 0; }
    fprintf(stderr, "dtype_dump: unknown format '%s'\n", s);
    return -1;
}

static void *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = tile_xmalloc((size_t)len);
    if (len && fread(p, 1, (size_t)len, f) != (size_t)len) { perror(path); exit(2); }
    fclose(f);
    *n = (size_t)len;
    return p;
}

static void spit(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) { perror(path); exit(2); }
}

/* bits of dt for one value; fp4 gives the nibble (one per output byte) */
static size_t out_width(tile_dtype dt) { return tile_dtype_bits(dt) == 16 ? 2 : tile_dtype_bits(dt) == 32 ? 4 : 1; }

int main(int argc, char **argv) {
    tile_dtype dt;
    if (argc == 4 && strcmp(argv[1], "decode") == 0) {
        if (fmt_of(argv[2], &dt)) return 2;
        size_t n = (size_t)1 << tile_dtype_bits(dt);
        double *out = tile_xmalloc(n * sizeof(double));
        for (size_t i = 0; i < n; i++) {
            unsigned char st[4] = {0};
            tile_store_bits(dt, st, 0, i);
            out[i] = tile_load_f(dt, st, 0);
        }
        /* the scalar entry points must agree with tile_load_f */
        for (size_t i = 0; i < n; i++) {
            double v = dt == TILE_DT_F16    ? (double)tile_f16_bits_to_f32((uint16_t)i)
                     : dt == TILE_DT_BF16   ? (double)tile_bf16_bits_to_f32((uint16_t)i)
                     : dt == TILE_DT_FP8_E4M3 ? tile_e4m3_bits_to_f64((uint8_t)i)
                     : dt == TILE_DT_FP8_E5M2 ? tile_e5m2_bits_to_f64((uint8_t)i)
                     : dt == TILE_DT_FP4_E2M1 ? tile_e2m1_bits_to_f64((uint8_t)i)
                                              : out[i];
            if (memcmp(&v, &out[i], 8) != 0 && !(v != v && out[i] != out[i])) {
                fprintf(stderr, "dtype_dump: scalar decode of %zx disagrees with tile_load_f\n", i);
                exit(1);
            }
        }
        spit(argv[3], out, n * sizeof(double));
        free(out);
        return 0;
    }
    if (argc == 5 && (strcmp(argv[1], "encode") == 0 || strcmp(argv[1], "encode32") == 0 ||
                      strcmp(argv[1], "encodei") == 0)) {
        if (fmt_of(argv[2], &dt)) return 2;
        size_t len;
        unsigned char *in = slurp(argv[3], &len);
        size_t isz = argv[1][6] == '3' ? 4 : 8;
        size_t n = len / isz, w = out_width(dt);
        unsigned char *out = tile_xcalloc(n ? n : 1, w);
        for (size_t i = 0; i < n; i++) {
            unsigned char st[8] = {0};
            uint64_t bits;
            if (argv[1][6] == '3') {
                float f;
                memcpy(&f, in + i * 4, 4);
                if (dt == TILE_DT_F16) bits = tile_f32_to_f16_bits(f);
                else if (dt == TILE_DT_BF16) bits = tile_f32_to_bf16_bits(f);
                else { fprintf(stderr, "encode32: f16/bf16 only\n"); exit(2); }
            } else if (argv[1][6] == 'i') {
                int64_t v;
                memcpy(&v, in + i * 8, 8);
                tile_store_i(dt, st, 0, v);
                bits = tile_load_bits(dt, st, 0);
            } else {
                double d;
                memcpy(&d, in + i * 8, 8);
                tile_store_f(dt, st, 0, d);
                bits = tile_load_bits(dt, st, 0);
                /* the scalar entry points must agree with tile_store_f */
                uint64_t s2 = dt == TILE_DT_F16    ? tile_f64_to_f16_bits(d)
                            : dt == TILE_DT_BF16   ? tile_f64_to_bf16_bits(d)
                            : dt == TILE_DT_FP8_E4M3 ? tile_f64_to_e4m3_bits(d)
                            : dt == TILE_DT_FP8_E5M2 ? tile_f64_to_e5m2_bits(d)
                            : dt == TILE_DT_FP4_E2M1 ? tile_f64_to_e2m1_bits(d)
                                                     : bits;
                if (s2 != bits) {
                    fprintf(stderr, "dtype_dump: scalar encode of %a disagrees with tile_store_f\n", d);
                    exit(1);
                }
            }
            memcpy(out + i * w, &bits, w);
        }
        spit(argv[4], out, n * w);
        free(out);
        free(in);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "npy-write") == 0) {
        tile_dtype nd = tile_npy_dtype_of_descr(argv[2]);
        if (nd == TILE_DT_INVALID) { fprintf(stderr, "bad descr %s\n", argv[2]); return 2; }
        unsigned char data[6 * 8];
        for (int i = 0; i < 6; i++) tile_store_i(nd, data, (size_t)i, i);
        int64_t shape[2] = {2, 3};
        char err[256];
        if (tile_npy_write(argv[3], argv[2], 2, shape, data, (size_t)tile_dtype_bits(nd) / 8, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "npy-read") == 0) {
        tile_npy n;
        char err[256];
        if (tile_npy_read(argv[2], &n, err, sizeof err)) { printf("error: %s\n", err); return 1; }
        tile_dtype nd = tile_npy_dtype_of_descr(n.descr);
        printf("%s (", n.descr);
        for (int i = 0; i < n.rank; i++) printf(i ? ", %lld" : "%lld", (long long)n.shape[i]);
        printf(")");
        for (size_t i = 0; i < n.count; i++) printf(" %.17g", tile_load_f(nd, n.data, i));
        printf("\n");
        tile_npy_free(&n);
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of dtype_dump.c\n");
    return 2;
}
