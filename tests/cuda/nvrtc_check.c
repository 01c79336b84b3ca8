/* nvrtc_check FILE.cu ARCH... — compile generated CUDA C with NVRTC for each architecture
 * (no GPU needed). Exit 0 if all compile, 1 if one fails (the NVRTC log is printed), 77 if
 * NVRTC cannot be loaded here (the reason is printed). */
#include <stdio.h>
#include <stdlib.h>

#include "core/core.h"
#include "runtime/cuda_rt.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: nvrtc_check FILE.cu ARCH...\n");
        return 2;
    }
    tile_strbuf why = {0};
    if (!tile_cuda_nvrtc_available(&why)) {
        printf("SKIP: %s\n", why.data ? why.data : "NVRTC not available");
        tile_sb_free(&why);
        return 77;
    }
    const char *e = NULL;
    tile_source *src = tile_source_load(argv[1], &e);
    if (!src) {
        fprintf(stderr, "nvrtc_check: cannot read %s: %s\n", argv[1], e ? e : "?");
        return 1;
    }
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        void *bin = NULL;
        size_t n = 0;
        tile_strbuf err = {0};
        double t0 = tile_now();
        if (tile_cuda_nvrtc_compile(src->text, argv[1], argv[i], &bin, &n, &err)) {
            fprintf(stderr, "%s: %s\n", argv[1], err.data ? err.data : "failed");
            rc = 1;
        } else {
            printf("%s: %s: %zu bytes of cubin in %.0f ms\n", argv[1], argv[i], n, (tile_now() - t0) * 1e3);
        }
        free(bin);
        tile_sb_free(&err);
    }
    tile_source_free(src);
    return rc;
}
