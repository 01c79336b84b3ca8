/* codec_stats.c — what each compression method does to one vector, measured with the public
 * codec (tlink_compress_encode/decode), for docs/tilelink-compression.md:
 *   relative error  ||Q(x) - x||^2 / ||x||^2
 *   slope           <Q(x), x> / <x, x>   (1: no shrinkage; < 1: Q(x) is biased towards 0)
 *   mean error      mean(Q(x) - x) / mean|x|   (systematic offset)
 *   ratio           f32 bytes / encoded bytes
 * over N values drawn from a normal and from a heavy-tailed (Student t, 3 dof) distribution,
 * chunk C (default 1024). Usage: codec_stats [N] [C] */
#include <tlink.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t s = 88172645463325252ull;
static double u01(void) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return ((s >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double normal(void) { return sqrt(-2 * log(u01())) * cos(6.283185307179586 * u01()); }

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 1u << 22, chunk = argc > 2 ? (size_t)atol(argv[2]) : 1024;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    void *buf = malloc(n * 4 + 64);
    printf("| distribution | method | ratio | relative error | slope | mean error |\n|---|---|---:|---:|---:|---:|\n");
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < n; i++) {
            double z = normal();
            if (d) { /* t with 3 degrees of freedom: z / sqrt(chi2_3 / 3) */
                double c = 0;
                for (int k = 0; k < 3; k++) { double w = normal(); c += w * w; }
                z /= sqrt(c / 3);
            }
            x[i] = (float)(z * 1e-3);
        }
        for (int m = 1; m < TLINK_COMPRESS_COUNT; m++) {
            tlink_compress_encode((tlink_compress_method)m, x, n, chunk, buf);
            tlink_compress_decode((tlink_compress_method)m, buf, n, chunk, y);
            double e2 = 0, x2 = 0, xy = 0, me = 0, ma = 0;
            for (size_t i = 0; i < n; i++) {
                double e = (double)y[i] - x[i];
                e2 += e * e;
                x2 += (double)x[i] * x[i];
                xy += (double)x[i] * y[i];
                me += e;
                ma += fabs(x[i]);
            }
            printf("| %s | %s | %.1f | %.4g | %.4f | %+.1e |\n", d ? "Student t (3)" : "normal",
                   tlink_compress_name((tlink_compress_method)m),
                   4.0 * n / tlink_compress_encoded_bytes((tlink_compress_method)m, n, chunk), e2 / x2, xy / x2, me / ma);
        }
    }
    free(x);
    free(y);
    free(buf);
    return 0;
}
