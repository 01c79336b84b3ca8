/* launch_c.c — launch overhead from C: host time per call of tile_spec_launch and tile_launch
 * (a tiny element-wise kernel on cuda:0 memory, legacy default stream) against the driver's
 * own cuLaunchKernel of an empty kernel with the same number of parameters (5 pointers).
 * Two figures each: "loop", 20000 calls then a sync (the launch queue fills, so this is
 * bounded by the GPU's rate of back-to-back launches), and "issue", the host time of 500
 * calls with the queue drained first and the sync outside the timing (median of 7 rounds):
 * the launcher's own cost. Prints one line per launcher in microseconds. Build: cc -O2 launch_c.c -Iinclude -Lbuild
 * -ltile -ldl -o launch_c */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile.h"

typedef int (*fn_t)();
static const char *PTX =
    ".version 7.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d, .param .u64 e) { ret; }\n";

static const char *SRC =
    "import tilelang.language as T\n"
    "def add(N, block=256):\n"
    "    @T.prim_func\n"
    "    def main(A: T.Tensor((N,), \"float32\"), B: T.Tensor((N,), \"float32\"), C: T.Tensor((N,), \"float32\")):\n"
    "        with T.Kernel(T.ceildiv(N, block), threads=block) as bx:\n"
    "            for i in T.Parallel(block):\n"
    "                if bx * block + i < N:\n"
    "                    C[bx * block + i] = A[bx * block + i] + B[bx * block + i]\n"
    "    return main\n";

#define ITERS 20000
#define ISSUE 500
#define ROUNDS 7
static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
/* median over ROUNDS of the host time per call of ISSUE calls of STMT, SYNC before each round */
#define ISSUE_TIME(out, STMT, SYNC)                                   \
    do {                                                              \
        double r_[ROUNDS];                                            \
        for (int q_ = 0; q_ < ROUNDS; q_++) {                         \
            SYNC;                                                     \
            double t_ = tile_now();                                   \
            for (int i_ = 0; i_ < ISSUE; i_++) STMT;                  \
            r_[q_] = (tile_now() - t_) / ISSUE;                       \
        }                                                             \
        SYNC;                                                         \
        qsort(r_, ROUNDS, sizeof(double), cmp_d);                     \
        out = r_[ROUNDS / 2];                                         \
    } while (0)
static int die(const char *what, char *e) { fprintf(stderr, "%s: %s\n", what, e ? e : "?"); return 1; }

int main(void) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) return fprintf(stderr, "no libcuda\n"), 77;
    int (*cuInit)(unsigned) = dlsym(h, "cuInit");
    int (*cuDeviceGet)(int *, int) = dlsym(h, "cuDeviceGet");
    int (*cuCtxRetain)(void **, int) = dlsym(h, "cuDevicePrimaryCtxRetain");
    int (*cuCtxSet)(void *) = dlsym(h, "cuCtxSetCurrent");
    int (*cuModLoad)(void **, const void *) = dlsym(h, "cuModuleLoadData");
    int (*cuGetFn)(void **, void *, const char *) = dlsym(h, "cuModuleGetFunction");
    int (*cuLaunch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **) = dlsym(h, "cuLaunchKernel");
    int (*cuSync)(void) = dlsym(h, "cuCtxSynchronize");
    int dev;
    void *ctx, *mod, *fn;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuCtxRetain(&ctx, dev) || cuCtxSet(ctx) || cuModLoad(&mod, PTX) || cuGetFn(&fn, mod, "k"))
        return fprintf(stderr, "driver setup failed\n"), 1;
    unsigned long long p[5] = {0};
    void *args[5] = {&p[0], &p[1], &p[2], &p[3], &p[4]};
    for (int i = 0; i < 1000; i++) cuLaunch(fn, 16, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    cuSync();
    double t0 = tile_now();
    for (int i = 0; i < ITERS; i++) cuLaunch(fn, 16, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    cuSync();
    double drv = (tile_now() - t0) / ITERS, drv_i;
    ISSUE_TIME(drv_i, cuLaunch(fn, 16, 1, 1, 256, 1, 1, 0, NULL, args, NULL), cuSync());

    char *e = NULL;
    const char *defs[] = {"N=4096"};
    tile_module *m;
    if (tile_compile_string("add", SRC, defs, 1, &m, &e)) return die("compile", e);
    tile_kernel *k = tile_module_kernel(m, NULL);
    tile_device cu;
    tile_stream *s;
    if (tile_device_parse("cuda:0", &cu, &e) || tile_stream_wrap(cu, NULL, &s, &e)) return die("device", e);
    void *buf[3];
    int64_t shape[1] = {4096};
    tile_view v[3];
    for (int i = 0; i < 3; i++) {
        if (tile_buffer_alloc(cu, 4096 * 4, &buf[i], &e)) return die("alloc", e);
        v[i] = tile_view_contiguous(buf[i], cu, TILE_DT_F32, 1, shape);
    }
    tile_spec *sp;
    if (tile_kernel_specialize(k, "cuda", v, 3, &sp, &e)) return die("specialize", e);
    for (int i = 0; i < 1000; i++)
        if (tile_spec_launch(sp, s, buf, NULL, &e)) return die("launch", e);
    if (tile_stream_sync(s, &e)) return die("sync", e);
    t0 = tile_now();
    for (int i = 0; i < ITERS; i++) tile_spec_launch(sp, s, buf, NULL, NULL);
    if (tile_stream_sync(s, &e)) return die("sync", e);
    double spl = (tile_now() - t0) / ITERS;
    t0 = tile_now();
    for (int i = 0; i < ITERS; i++) tile_launch(k, s, v, 3, NULL, NULL);
    if (tile_stream_sync(s, &e)) return die("sync", e);
    double lau = (tile_now() - t0) / ITERS, spl_i, lau_i;
    ISSUE_TIME(spl_i, tile_spec_launch(sp, s, buf, NULL, NULL), tile_stream_sync(s, NULL));
    ISSUE_TIME(lau_i, tile_launch(k, s, v, 3, NULL, NULL), tile_stream_sync(s, NULL));
    printf("| launcher (C, host time per call) | issue us (%d calls) | over the driver | loop us (%d calls) | over the driver |\n|---|---|---|---|---|\n",
           ISSUE, ITERS);
    printf("| cuLaunchKernel, empty kernel, 5 pointer parameters | %.3f | - | %.3f | - |\n", drv_i * 1e6, drv * 1e6);
    printf("| tile_spec_launch (specialisation held by the caller) | %.3f | %+.3f | %.3f | %+.3f |\n", spl_i * 1e6, (spl_i - drv_i) * 1e6, spl * 1e6,
           (spl - drv) * 1e6);
    printf("| tile_launch (views, specialisation looked up) | %.3f | %+.3f | %.3f | %+.3f |\n", lau_i * 1e6, (lau_i - drv_i) * 1e6, lau * 1e6,
           (lau - drv) * 1e6);
    for (int i = 0; i < 3; i++) tile_buffer_free(cu, buf[i]);
    tile_stream_free(s);
    tile_module_free(m);
    return 0;
}
