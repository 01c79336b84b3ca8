/* test_launch.c — the device-resident API of include/tile.h on the cpu device: streams,
 * events, the caching pool, views with offsets and strides, specialisations and their
 * in-memory cache, DLPack, and compile + launch from 8 threads at once (also run under
 * ThreadSanitizer: scripts/tsan.sh). Exit 0 pass, 1 fail. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile.h"
#include "tile_dlpack.h"

static int failures;
#define CHECK(c, ...)                                          \
    do {                                                       \
        if (!(c)) {                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                      \
            fputc('\n', stderr);                               \
            failures++;                                        \
        }                                                      \
    } while (0)
#define OK(call)                                                                     \
    do {                                                                             \
        char *e_ = NULL;                                                             \
        tile_status s_ = (call);                                                     \
        CHECK(s_ == TILE_OK, "%s -> %d: %s", #call, (int)s_, e_ ? e_ : "");          \
        tile_free(e_);                                                               \
    } while (0)

static const char *SRC =
    "@tile_op\n"
    "def axpb(A: Tensor[(M, N)], B: Tensor[(M, N)]) -> Tensor[(M, N)]:\n"
    "    C = allocate((M, N), dtype=A.dtype)\n"
    "    for i in range(M):\n"
    "        for j in range(N):\n"
    "            C[i, j] = A[i, j] * 2.0 + B[i, j]\n"
    "    return C\n";

static tile_device cpu;

static int run_axpb(tile_kernel *k, tile_stream *s, int M, int N, int ld, int off) {
    float *a = malloc(sizeof(float) * (size_t)(M * ld + off)), *b = malloc(sizeof(float) * (size_t)(M * ld + off));
    for (int i = 0; i < M * ld + off; i++) a[i] = (float)(i % 17) - 3, b[i] = (float)(i % 5);
    float *c = calloc((size_t)(M * N), sizeof(float));
    int64_t shape[2] = {M, N};
    tile_view v[3] = {tile_view_contiguous(a, cpu, TILE_DT_F32, 2, shape), tile_view_contiguous(b, cpu, TILE_DT_F32, 2, shape),
                      tile_view_contiguous(c, cpu, TILE_DT_F32, 2, shape)};
    for (int i = 0; i < 2; i++) v[i].strides[0] = ld, v[i].byte_offset = off * 4;
    char *e = NULL;
    tile_status st = tile_launch(k, s, v, 3, NULL, &e);
    if (st == TILE_OK) st = tile_stream_sync(s, &e);
    int bad = st != TILE_OK;
    if (bad) fprintf(stderr, "launch: %s\n", e ? e : "?");
    tile_free(e);
    for (int i = 0; !bad && i < M; i++)
        for (int j = 0; j < N; j++)
            if (c[i * N + j] != 2.0f * a[off + i * ld + j] + b[off + i * ld + j]) bad = 1;
    free(a);
    free(b);
    free(c);
    return bad;
}

typedef struct job {
    int id;
    tile_kernel *shared;
    int bad;
} job;

static void *worker(void *p) {
    job *j = p;
    tile_stream *s;
    char *e = NULL;
    if (tile_stream_create(cpu, &s, &e) != TILE_OK) {
        j->bad = 1;
        return NULL;
    }
    /* each thread compiles its own module and launches a kernel shared by all */
    tile_module *m;
    if (tile_compile_string("axpb", SRC, NULL, 0, &m, &e) != TILE_OK) j->bad = 1;
    for (int it = 0; it < 6 && !j->bad; it++) {
        j->bad |= run_axpb(j->shared, s, 3 + j->id, 9, 9 + (it & 1) * 4, it & 2);
        j->bad |= run_axpb(tile_module_kernel(m, NULL), s, 5, 4 + j->id, 4 + j->id, 0);
        void *buf;
        if (tile_buffer_alloc(cpu, 1000 + 64 * (size_t)j->id, &buf, &e) != TILE_OK) j->bad = 1;
        else tile_buffer_free(cpu, buf);
    }
    tile_module_free(m);
    tile_stream_free(s);
    tile_free(e);
    return NULL;
}

int main(void) {
    OK(tile_device_parse("cpu", &cpu, &e_));
    tile_device bad;
    char *e = NULL;
    CHECK(tile_device_parse("gpu:0", &bad, &e) == TILE_ERR_USER && e && strstr(e, "unknown device"), "bad device name: %s", e ? e : "");
    tile_free(e);
    e = NULL;
    CHECK(tile_device_count(TILE_DEVICE_CPU) == 1, "one cpu device");

    tile_module *m;
    OK(tile_compile_string("axpb", SRC, NULL, 0, &m, &e_));
    tile_kernel *k = tile_module_kernel(m, NULL);
    tile_stream *s;
    OK(tile_stream_create(cpu, &s, &e_));

    /* contiguous, then with an offset and strided rows (the cpu target takes them) */
    CHECK(!run_axpb(k, s, 7, 5, 5, 0), "contiguous launch");
    CHECK(!run_axpb(k, s, 7, 5, 8, 3), "strided rows with an offset");

    /* the in-memory cache: the same signature again compiles nothing and makes no spec */
    tile_cache_stats c0, c1;
    tile_cache_stats_get(&c0);
    for (int i = 0; i < 10; i++) CHECK(!run_axpb(k, s, 7, 5, 8, 3), "repeat");
    tile_cache_stats_get(&c1);
    CHECK(c1.compiles == c0.compiles && c1.specializations == c0.specializations && c1.spec_hits == c0.spec_hits + 10 &&
              c1.launches == c0.launches + 10,
          "repeated launches: %lld compiles, %lld specs, %lld hits, %lld launches more", (long long)(c1.compiles - c0.compiles),
          (long long)(c1.specializations - c0.specializations), (long long)(c1.spec_hits - c0.spec_hits), (long long)(c1.launches - c0.launches));

    /* errors name the parameter */
    float x[64];
    int64_t shp[2] = {4, 4};
    tile_view v[3] = {tile_view_contiguous(x, cpu, TILE_DT_F32, 2, shp), tile_view_contiguous(x, cpu, TILE_DT_F16, 2, shp),
                      tile_view_contiguous(x, cpu, TILE_DT_F32, 2, shp)};
    CHECK(tile_launch(k, s, v, 3, NULL, &e) == TILE_ERR_USER && e && strstr(e, "parameter 'B' is float32") && strstr(e, "axpb:2:"),
          "dtype error: %s", e ? e : "");
    tile_free(e);
    e = NULL;
    v[1].dtype = TILE_DT_F32;
    v[0].strides[1] = 2;
    CHECK(tile_launch(k, s, v, 3, NULL, &e) == TILE_ERR_USER && e && strstr(e, "parameter 'A' is not contiguous"), "stride error: %s", e ? e : "");
    tile_free(e);
    e = NULL;

    /* the pool: reuse, high-water mark, trim */
    tile_memory_trim(cpu, 1);
    tile_memory_stats p0, p1;
    OK(tile_memory_stats_get(cpu, &p0, &e_));
    void *b1, *b2;
    OK(tile_buffer_alloc(cpu, 100000, &b1, &e_));
    tile_buffer_free(cpu, b1);
    OK(tile_buffer_alloc(cpu, 99000, &b2, &e_));
    CHECK(b1 == b2, "a block of the same size class is reused");
    OK(tile_memory_stats_get(cpu, &p1, &e_));
    CHECK(p1.reused == p0.reused + 1 && p1.driver_allocs == p0.driver_allocs + 1 && p1.in_use >= 100000 && p1.high_water >= p1.in_use,
          "pool stats: reused %lld, driver %lld, in use %zu, high water %zu", (long long)(p1.reused - p0.reused),
          (long long)(p1.driver_allocs - p0.driver_allocs), p1.in_use, p1.high_water);
    tile_buffer_free(cpu, b2);
    tile_memory_trim(cpu, 0);
    OK(tile_memory_stats_get(cpu, &p1, &e_));
    CHECK(p1.cached == 0, "trim empties the free lists");

    /* events on the cpu stream */
    tile_event *e0, *e1;
    OK(tile_event_create(cpu, &e0, &e_));
    OK(tile_event_create(cpu, &e1, &e_));
    OK(tile_event_record(e0, s, &e_));
    CHECK(!run_axpb(k, s, 64, 64, 64, 0), "timed launch");
    OK(tile_event_record(e1, s, &e_));
    OK(tile_event_sync(e1, &e_));
    double sec = -1;
    OK(tile_event_elapsed(e0, e1, &sec, &e_));
    CHECK(sec >= 0, "elapsed %g", sec);
    tile_event_free(e0);
    tile_event_free(e1);

    /* DLPack: out and back, both forms, with an offset and strides */
    float y[12];
    for (int i = 0; i < 12; i++) y[i] = (float)i;
    tile_view w = tile_view_contiguous(y, cpu, TILE_DT_F32, 2, (int64_t[]){3, 3});
    w.strides[0] = 4;
    w.byte_offset = 4;
    DLManagedTensorVersioned *dv = tile_view_to_dlpack_versioned(&w, NULL, NULL);
    DLManagedTensor *du = tile_view_to_dlpack(&w, NULL, NULL);
    tile_view r1, r2;
    OK(tile_view_from_dlpack_versioned(dv, &r1, &e_));
    OK(tile_view_from_dlpack(du, &r2, &e_));
    CHECK(dv->version.major == 1 && dv->dl_tensor.dtype.code == kDLFloat && dv->dl_tensor.dtype.bits == 32 && dv->dl_tensor.strides[0] == 4,
          "DLPack out");
    CHECK(!memcmp(&r1, &w, sizeof w) && !memcmp(&r2, &w, sizeof w), "DLPack round trip keeps the view");
    dv->deleter(dv);
    du->deleter(du);

    /* 8 threads: compile and launch at once */
    pthread_t th[8];
    job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (job){i, k, 0};
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        CHECK(!jobs[i].bad, "thread %d", i);
    }
    tile_stream_free(s);
    tile_module_free(m);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("test_launch: ok\n");
    return failures ? 1 : 0;
}
