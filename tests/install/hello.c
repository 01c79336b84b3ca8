/* A C program built against the installed tree: compile a kernel, launch it on cpu memory
 * from the device pool, check the result; and ask libtilelink its version. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <tile.h>
#include <tlink.h>

static const char *SRC =
    "@tile_op\n"
    "def axpb(A: Tensor[(M, N)], B: Tensor[(M, N)]) -> Tensor[(M, N)]:\n"
    "    C = allocate((M, N), dtype=A.dtype)\n"
    "    for i in range(M):\n"
    "        for j in range(N):\n"
    "            C[i, j] = A[i, j] * 2.0 + B[i, j]\n"
    "    return C\n";

int main(void) {
    tile_module *m;
    char *err = NULL;
    if (tile_compile_string("axpb", SRC, NULL, 0, &m, &err) != TILE_OK) return fprintf(stderr, "%s\n", err), 1;
    tile_kernel *k = tile_module_kernel(m, NULL);
    tile_device dev;
    tile_stream *s;
    if (tile_device_parse("cpu", &dev, &err) || tile_stream_create(dev, &s, &err)) return fprintf(stderr, "%s\n", err), 1;
    float a[6 * 5], b[6 * 5];
    for (int i = 0; i < 30; i++) a[i] = (float)i, b[i] = 0.5f * (float)i;
    void *c;
    if (tile_buffer_alloc(dev, sizeof a, &c, &err) != TILE_OK) return fprintf(stderr, "%s\n", err), 1;
    int64_t shape[2] = {6, 5};
    tile_view v[3] = {tile_view_contiguous(a, dev, TILE_DT_F32, 2, shape), tile_view_contiguous(b, dev, TILE_DT_F32, 2, shape),
                      tile_view_contiguous(c, dev, TILE_DT_F32, 2, shape)};
    if (tile_launch(k, s, v, 3, NULL, &err) != TILE_OK || tile_stream_sync(s, &err) != TILE_OK) return fprintf(stderr, "%s\n", err), 1;
    for (int i = 0; i < 30; i++)
        if (fabsf(((float *)c)[i] - (2.0f * a[i] + b[i])) > 1e-6f) return fprintf(stderr, "wrong result at %d\n", i), 1;
    tile_buffer_free(dev, c);
    tile_stream_free(s);
    tile_module_free(m);
    printf("tile %s, tilelink %s: ok\n", tile_version(), tlink_version());
    return 0;
}
