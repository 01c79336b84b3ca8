/* test_row_align.c — the cpu target's row kernels (rowfuse) on tensors at every 4-byte
 * offset within a cache line: the softmax keeps its exponentials in scratch placed at the
 * output's address modulo 64 (ir.h's align_to, c.c's tile_place_like), and its vector loops
 * peel to the output's alignment, so each offset of X and Y takes other head and tail paths.
 * Every result is compared with the interpreter's on the same inputs (f32 tolerance: the sums
 * reassociate), and the bytes around Y must stay untouched.
 *   test_row_align [EXAMPLES_DIR] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile.h"

static int g_fail;
#define CHECK(c, ...)                                                  \
    do {                                                               \
        if (!(c)) {                                                    \
            g_fail++;                                                  \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
        }                                                              \
    } while (0)

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static float frand(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) * 0x1p-53 * 8.0 - 4.0);
}

/* one program, M x N, X at byte offset ox and Y at oy of 64-byte aligned blocks */
static void run_case(const char *dir, const char *file, int M, int N, int ox, int oy) {
    char path[4096], dm[32], dn[32], *diag = NULL, *err = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    snprintf(dm, sizeof dm, "M=%d", M);
    snprintf(dn, sizeof dn, "N=%d", N);
    const char *defs[] = {dm, dn};
    tile_module *mod;
    if (tile_compile_file(path, defs, 2, &mod, &diag) != TILE_OK) {
        CHECK(0, "%s: %s", path, diag ? diag : "compile failed");
        tile_free(diag);
        return;
    }
    tile_kernel *k = tile_module_kernel(mod, NULL);
    const int rms = strstr(file, "rmsnorm") != NULL;
    const size_t n = (size_t)M * N, pad = 128;
    const size_t alloc = (n * 4 + 2 * pad + 63) / 64 * 64; /* aligned_alloc wants a multiple of the alignment */
    unsigned char *xb = aligned_alloc(64, alloc), *yb = aligned_alloc(64, alloc);
    float *ref = malloc(n * 4), *w = malloc((size_t)N * 4);
    float *X = (float *)(void *)(xb + pad + ox), *Y = (float *)(void *)(yb + pad + oy);
    for (size_t i = 0; i < n; i++) X[i] = frand();
    for (int i = 0; i < N; i++) w[i] = frand();
    memset(yb, 0xA5, n * 4 + 2 * pad);
    tile_tensor p3[3] = {{X, TILE_DT_F32, 2, {M, N}}, {w, TILE_DT_F32, 1, {N}}, {Y, TILE_DT_F32, 2, {M, N}}};
    tile_tensor p2[2] = {{X, TILE_DT_F32, 2, {M, N}}, {Y, TILE_DT_F32, 2, {M, N}}};
    tile_tensor r3[3] = {p3[0], p3[1], {ref, TILE_DT_F32, 2, {M, N}}}, r2[2] = {p2[0], {ref, TILE_DT_F32, 2, {M, N}}};
    tile_status st = tile_run(k, "interp", rms ? r3 : r2, rms ? 3 : 2, NULL, 0, NULL, &err);
    CHECK(st == TILE_OK, "%s interp: %s", file, err ? err : "?");
    tile_free(err);
    err = NULL;
    st = tile_run(k, "cpu", rms ? p3 : p2, rms ? 3 : 2, NULL, 0, NULL, &err);
    CHECK(st == TILE_OK, "%s cpu: %s", file, err ? err : "?");
    tile_free(err);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)Y[i] - (double)ref[i]) / (fabs((double)ref[i]) + 1e-30);
        if (!(d <= worst)) worst = d; /* NaN too */
    }
    CHECK(worst <= 1e-5, "%s M=%d N=%d X+%d Y+%d: max relative difference %g from the interpreter", file, M, N, ox, oy, worst);
    int outside = 0;
    for (size_t i = 0; i < pad + (size_t)oy; i++) outside += yb[i] != 0xA5;
    for (size_t i = pad + (size_t)oy + n * 4; i < n * 4 + 2 * pad; i++) outside += yb[i] != 0xA5;
    CHECK(outside == 0, "%s M=%d N=%d X+%d Y+%d: %d bytes outside Y changed", file, M, N, ox, oy, outside);
    free(xb);
    free(yb);
    free(ref);
    free(w);
    tile_module_free(mod);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "examples";
    int cases = 0;
    /* softmax: pipelined blocks (M >= 64), rows one after the other (M = 3), one row longer
     * than a chunk and ragged (its kept exponentials on the stack); RMSNorm */
    static const struct { const char *f; int M, N; } progs[] = {
        {"softmax.tl", 64, 2048}, {"softmax.tl", 3, 4101}, {"softmax.tl", 40, 1040}, {"rmsnorm.tl", 64, 2064}};
    for (size_t p = 0; p < sizeof progs / sizeof progs[0]; p++)
        for (int ox = 0; ox < 64; ox += 12)
            for (int oy = 0; oy < 64; oy += 4) {
                if ((ox + oy) % 3 && oy % 16) continue; /* every Y offset, a spread of X offsets */
                run_case(dir, progs[p].f, progs[p].M, progs[p].N, ox, oy);
                cases++;
            }
    /* kept exponentials too large for the stack (2 x 20000 f32): the worker's scratch memory */
    static const int offs[] = {0, 4, 16, 36, 60};
    for (int i = 0; i < 5; i++, cases++) run_case(dir, "softmax.tl", 64, 20000, offs[(i + 2) % 5], offs[i]);
    printf("%d cases, %d failures\n", cases, g_fail);
    return g_fail ? 1 : 0;
}
