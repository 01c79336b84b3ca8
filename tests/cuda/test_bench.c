/* test_bench TARGET — tile_bench (tile.h) against tile_run on TARGET.
 *
 * A plain-form matmul (gpumap's tile-form kernel on cuda) and an in-place kernel: tile_bench
 * must give exactly tile_run's outputs (same code, same inputs; the in-place one after
 * iters + 1 applications), times > 0 for every run, device_time = 1 exactly on cuda, and
 * clear errors for bad arguments. Exit 77 when TARGET is not available here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile.h"

static int fails;
#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            fails++;                                                   \
            fprintf(stderr, "%s:%d: FAILED %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
        }                                                              \
    } while (0)

static const char *k_mm =
    "@tile_op\n"
    "def mm(A: Tensor[M, K], B: Tensor[K, N]) -> Tensor[M, N]:\n"
    "    C = allocate((M, N), dtype=A.dtype)\n"
    "    for i in range(M):\n"
    "        for j in range(N):\n"
    "            acc = 0.0\n"
    "            for k in range(K):\n"
    "                acc += A[i, k] * B[k, j]\n"
    "            C[i, j] = acc\n"
    "    return C\n";

static const char *k_inc =
    "@tile_op\n"
    "def inc(X: Tensor[N]):\n"
    "    for i in range(N):\n"
    "        X[i] = X[i] + 1.0\n";

static void fill(float *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

int main(int argc, char **argv) {
    const char *target = argc > 1 ? argv[1] : "cpu";
    char *dev = NULL, *why = NULL, *err = NULL, *diag = NULL;
    if (tile_target_info(target, &dev, &why) != TILE_OK) {
        printf("SKIP: target %s is not available here: %s\n", target, why ? why : "?");
        tile_free(why);
        return 77;
    }
    printf("target %s: %s\n", target, dev);
    tile_free(dev);

    /* matmul: tile_bench's outputs are tile_run's */
    tile_module *m = NULL;
    if (tile_compile_string("mm.tl", k_mm, NULL, 0, &m, &diag) != TILE_OK) {
        fprintf(stderr, "%s\n", diag);
        return 1;
    }
    tile_kernel *k = tile_module_kernel(m, NULL);
    enum { M = 70, N = 45, K = 33, IT = 4 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
    fill(a, M * K, 1);
    fill(b, K * N, 2);
    tile_tensor p[2] = {{a, TILE_DT_F32, 2, {M, K}}, {b, TILE_DT_F32, 2, {K, N}}};
    tile_tensor r1 = {0}, r2 = {0};
    CHECK(tile_run(k, target, p, 2, &r1, 1, NULL, &err) == TILE_OK, "tile_run: %s", err ? err : "");
    tile_free(err);
    err = NULL;
    double times[IT];
    for (int i = 0; i < IT; i++) times[i] = -1;
    int devtime = -1;
    CHECK(tile_bench(k, target, p, 2, &r2, 1, NULL, IT, times, &devtime, &err) == TILE_OK, "tile_bench: %s", err ? err : "");
    tile_free(err);
    err = NULL;
    CHECK(devtime == (strcmp(target, "cuda") == 0), "device_time %d on %s", devtime, target);
    for (int i = 0; i < IT; i++) CHECK(times[i] > 0 && times[i] < 60, "times[%d] = %g", i, times[i]);
    if (r1.data && r2.data) CHECK(memcmp(r1.data, r2.data, sizeof(float) * M * N) == 0, "tile_bench's C differs from tile_run's");
    /* bad arguments */
    CHECK(tile_bench(k, target, p, 2, &r2, 1, NULL, 0, times, NULL, &err) == TILE_ERR_USER && err && strstr(err, "iters"), "iters 0: %s",
          err ? err : "no message");
    tile_free(err);
    err = NULL;
    CHECK(tile_bench(NULL, target, p, 2, &r2, 1, NULL, 1, times, NULL, &err) == TILE_ERR_USER && err && strstr(err, "NULL"), "NULL kernel: %s",
          err ? err : "no message");
    tile_free(err);
    err = NULL;
    CHECK(tile_bench(k, "nosuch", p, 2, &r2, 1, NULL, 1, times, NULL, &err) == TILE_ERR_USER && err && strstr(err, "nosuch"), "bad target: %s",
          err ? err : "no message");
    tile_free(err);
    err = NULL;
    tile_tensor_free(&r1);
    tile_tensor_free(&r2);
    tile_module_free(m);

    /* in place: iters + 1 applications, like tile_run called iters + 1 times */
    if (tile_compile_string("inc.tl", k_inc, NULL, 0, &m, &diag) != TILE_OK) {
        fprintf(stderr, "%s\n", diag);
        return 1;
    }
    k = tile_module_kernel(m, NULL);
    float x[300];
    fill(x, 300, 3);
    float want[300];
    for (int i = 0; i < 300; i++) want[i] = x[i] + (float)(IT + 1);
    tile_tensor px = {x, TILE_DT_F32, 1, {300}};
    CHECK(tile_bench(k, target, &px, 1, NULL, 0, NULL, IT, times, NULL, &err) == TILE_OK, "tile_bench inc: %s", err ? err : "");
    tile_free(err);
    float worst = 0;
    for (int i = 0; i < 300; i++) worst = fmaxf(worst, fabsf(x[i] - want[i]));
    CHECK(worst < 1e-5f, "in-place kernel after %d + 1 runs: off by %g", IT, worst);
    tile_module_free(m);
    free(a);
    free(b);
    if (fails) return 1;
    printf("ok\n");
    return 0;
}
