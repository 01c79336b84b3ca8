/* test_npy.c — .npy round trips for every dtype and malformed-file errors (src/core/npy.c).
 *
 *   test_npy TMPDIR        (TMPDIR is created if missing) */
#include "core/core.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int g_fail, g_checks;
static char g_dir[512];

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        g_checks++;                                                          \
        if (!(cond)) {                                                       \
            g_fail++;                                                        \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

static const char *tmp_path(const char *name) {
    static char buf[4][700];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static void write_raw(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

/* A .npy file with the given header text (version 1.0 unless v2), padded like NumPy,
 * followed by `ndata` bytes of data. */
static void write_npy_text(const char *path, const char *header, size_t ndata, bool v2) {
    size_t pre = v2 ? 12 : 10, hl = strlen(header);
    size_t total = (pre + hl + 1 + 63) / 64 * 64;
    size_t hlen = total - pre;
    unsigned char *buf = calloc(1, total + ndata + 1);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = v2 ? 2 : 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(hlen & 0xFF);
    buf[9] = (unsigned char)(hlen >> 8);
    if (v2) buf[10] = buf[11] = 0;
    memcpy(buf + pre, header, hl);
    memset(buf + pre + hl, ' ', hlen - hl - 1);
    buf[total - 1] = '\n';
    for (size_t i = 0; i < ndata; i++) buf[total + i] = (unsigned char)i;
    write_raw(path, buf, total + ndata);
    free(buf);
}

/* expect tile_npy_read to fail with a message naming the file and containing `needle` */
static void expect_error(const char *path, const char *needle, int line) {
    tile_npy n;
    char err[512];
    int rc = tile_npy_read(path, &n, err, sizeof err);
    g_checks++;
    if (rc == 0 || !strstr(err, path) || !strstr(err, needle)) {
        g_fail++;
        fprintf(stderr, "test_npy.c:%d: FAIL: reading %s: rc=%d, err='%s', expected it to mention '%s'\n", line,
                path, rc, err, needle);
        if (rc == 0) tile_npy_free(&n);
    }
}
#define EXPECT_ERROR(path, needle) expect_error(path, needle, __LINE__)

static void expect_ok(const char *path, const char *descr, int rank, const int64_t *shape, int line) {
    tile_npy n;
    char err[512];
    int rc = tile_npy_read(path, &n, err, sizeof err);
    g_checks++;
    bool ok = rc == 0 && strcmp(n.descr, descr) == 0 && n.rank == rank && !n.fortran_order;
    for (int i = 0; ok && i < rank; i++) ok = n.shape[i] == shape[i];
    if (!ok) {
        g_fail++;
        fprintf(stderr, "test_npy.c:%d: FAIL: reading %s: rc=%d err='%s' descr=%s rank=%d\n", line, path, rc,
                rc ? err : "", rc ? "" : n.descr, rc ? -1 : n.rank);
    }
    if (rc == 0) tile_npy_free(&n);
}
#define EXPECT_OK(path, descr, rank, ...) \
    do { const int64_t s_[] = {0, __VA_ARGS__}; expect_ok(path, descr, rank, s_ + 1, __LINE__); } while (0)

/* ---------- round trips ---------- */
static void test_roundtrip(void) {
    static const double vals[] = {0.0, 1.0, -2.5, 0.5, 6.0, -0.0, 3.0, 100.0, -7.0, 0.25, 448.0, 1e-3};
    for (int dt = 0; dt < TILE_DT_COUNT; dt++) {
        const char *descr = tile_npy_descr_for((tile_dtype)dt);
        CHECK(descr != NULL, "descr for %s", tile_dtype_name((tile_dtype)dt));
        if (!descr) continue;
        tile_dtype nd = tile_npy_dtype_of_descr(descr);
        CHECK(nd != TILE_DT_INVALID, "descr %s reads back", descr);
        size_t es = (size_t)(descr[2] - '0');
        /* storage as the .npy holds it: the dtype's own bits, fp4 one element per byte */
        unsigned char data[12 * 8];
        memset(data, 0, sizeof data);
        for (int i = 0; i < 12; i++) {
            if (dt == TILE_DT_FP4_E2M1) data[i] = tile_f64_to_e2m1_bits(vals[i]);
            else tile_store_f((tile_dtype)dt, data, (size_t)i, vals[i]);
        }
        const int64_t shapes[4][3] = {{12, 0, 0}, {3, 4, 0}, {2, 3, 2}, {0, 0, 0}};
        const int ranks[4] = {1, 2, 3, 0};
        for (int s = 0; s < 4; s++) {
            const char *p = tmp_path("rt.npy");
            char err[256];
            size_t count = ranks[s] == 0 ? 1 : 12;
            int rc = tile_npy_write(p, descr, ranks[s], shapes[s], data, es, err, sizeof err);
            CHECK(rc == 0, "write %s: %s", descr, err);
            tile_npy n;
            rc = tile_npy_read(p, &n, err, sizeof err);
            CHECK(rc == 0, "read %s: %s", descr, err);
            if (rc) continue;
            CHECK(strcmp(n.descr, descr) == 0, "descr %s vs %s", n.descr, descr);
            CHECK(n.rank == ranks[s] && n.count == count && n.elem_size == es && !n.fortran_order, "meta %s", descr);
            for (int i = 0; i < n.rank; i++) CHECK(n.shape[i] == shapes[s][i], "shape");
            CHECK(memcmp(n.data, data, count * es) == 0, "data %s", descr);
            /* the values come back through the dtype */
            if (dt != TILE_DT_FP4_E2M1)
                for (size_t i = 0; i < count; i++)
                    CHECK(tile_load_bits((tile_dtype)dt, n.data, i) == tile_load_bits((tile_dtype)dt, data, i), "elem");
            tile_npy_free(&n);
            CHECK(n.data == NULL, "free clears");
        }
        /* an empty array */
        const int64_t zshape[2] = {0, 5};
        char err[256];
        CHECK(tile_npy_write(tmp_path("empty.npy"), descr, 2, zshape, NULL, es, err, sizeof err) == 0, "empty: %s", err);
        tile_npy n;
        CHECK(tile_npy_read(tmp_path("empty.npy"), &n, err, sizeof err) == 0 && n.count == 0 && n.rank == 2, "empty read: %s", err);
        tile_npy_free(&n);
    }
    CHECK(strcmp(tile_npy_descr_for(TILE_DT_BF16), "<u2") == 0, "bf16 -> <u2");
    CHECK(strcmp(tile_npy_descr_for(TILE_DT_F16), "<f2") == 0, "f16 -> <f2");
    CHECK(strcmp(tile_npy_descr_for(TILE_DT_FP8_E4M3), "|u1") == 0, "e4m3 -> |u1");
    CHECK(strcmp(tile_npy_descr_for(TILE_DT_FP4_E2M1), "|u1") == 0, "e2m1 -> |u1");
    CHECK(strcmp(tile_npy_descr_for(TILE_DT_BOOL), "|b1") == 0, "bool -> |b1");
    CHECK(tile_npy_descr_for(TILE_DT_INVALID) == NULL, "invalid");
    CHECK(tile_npy_dtype_of_descr(NULL) == TILE_DT_INVALID, "null descr");
    CHECK(tile_npy_dtype_of_descr("<i1") == TILE_DT_I8 && tile_npy_dtype_of_descr("|i1") == TILE_DT_I8, "i1");
    CHECK(tile_npy_dtype_of_descr("<u2") == TILE_DT_U16, "u2 reads natively as uint16");
    CHECK(tile_npy_dtype_of_descr(">f4") == TILE_DT_INVALID, "big endian");
    CHECK(tile_npy_dtype_of_descr("<c8") == TILE_DT_INVALID, "complex");

    /* the file is what NumPy would write */
    const int64_t sh[1] = {5};
    float f[5] = {1, 2, 3, 4, 5};
    char err[256];
    CHECK(tile_npy_write(tmp_path("np.npy"), "<f4", 1, sh, f, 4, err, sizeof err) == 0, "%s", err);
    FILE *fp = fopen(tmp_path("np.npy"), "rb");
    char head[129] = {0};
    size_t got = fp ? fread(head, 1, 128, fp) : 0;
    if (fp) fclose(fp);
    CHECK(got == 128 && memcmp(head, "\x93NUMPY\x01\x00\x76\x00", 10) == 0, "preamble");
    const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
    CHECK(strncmp(head + 10, want, strlen(want)) == 0 && head[10 + strlen(want)] == ' ', "header: %s", head + 10);
    CHECK(head[127] == '\n', "header ends in newline");
}

/* ---------- malformed files ---------- */
static void test_malformed(void) {
    const char *p;
    char err[256];
    tile_npy n;

    p = tmp_path("empty.bin");
    write_raw(p, "", 0);
    EXPECT_ERROR(p, "too short");

    p = tmp_path("magic.bin");
    write_raw(p, "NOTANUMPYFILE-----", 18);
    EXPECT_ERROR(p, "bad magic");

    p = tmp_path("version.npy");
    write_raw(p, "\x93NUMPY\x04\x00\x10\x00{}", 12);
    EXPECT_ERROR(p, "version 4.0");
    write_raw(p, "\x93NUMPY\x01\x01\x10\x00{}", 12);
    EXPECT_ERROR(p, "version 1.1");

    p = tmp_path("hlen.npy");
    write_raw(p, "\x93NUMPY\x01\x00\xff\x7f{'descr'", 17);
    EXPECT_ERROR(p, "header length");
    write_raw(p, "\x93NUMPY\x02\x00\xff\xff\xff\x7f{", 13);
    EXPECT_ERROR(p, "header length");
    write_raw(p, "\x93NUMPY\x02\x00\x01\x00", 10);
    EXPECT_ERROR(p, "truncated .npy preamble");

    p = tmp_path("h.npy");
    write_npy_text(p, "hello", 0, false);
    EXPECT_ERROR(p, "expected '{'");
    write_npy_text(p, "{'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "missing key 'descr'");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, }", 12, false);
    EXPECT_ERROR(p, "missing key 'shape'");
    write_npy_text(p, "{'descr': '<f4', 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "missing key 'fortran_order'");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1, }", 12, false);
    EXPECT_ERROR(p, "unexpected key 'extra'");
    write_npy_text(p, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "duplicate key");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "fortran_order");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': yes, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "True or False");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "True or False");
    write_npy_text(p, "{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "big-endian");
    write_npy_text(p, "{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24, false);
    EXPECT_ERROR(p, "'<c8'");
    write_npy_text(p, "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 24, false);
    EXPECT_ERROR(p, "object");
    write_npy_text(p, "{'descr': '<f16', 'fortran_order': False, 'shape': (3,), }", 48, false);
    EXPECT_ERROR(p, "unsupported dtype");
    write_npy_text(p, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "structured");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 12, false);
    EXPECT_ERROR(p, "negative dimension");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,), }", 12, false);
    EXPECT_ERROR(p, "expected ',' or ')'");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", 12, false);
    EXPECT_ERROR(p, "shape must be a tuple");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, }", 12, false);
    EXPECT_ERROR(p, "malformed");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12, false);
    EXPECT_ERROR(p, "expected ',' or '}'");
    write_npy_text(p, "{'descr': '<f4, 'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "malformed");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } junk", 12, false);
    EXPECT_ERROR(p, "after the header");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4, false);
    EXPECT_ERROR(p, "rank");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }", 4, false);
    EXPECT_ERROR(p, "too large");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 4, false);
    EXPECT_ERROR(p, "too large");
    write_npy_text(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", 4, false);
    EXPECT_ERROR(p, "truncated");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }", 12, false);
    EXPECT_ERROR(p, "truncated");
    write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 13, false);
    EXPECT_ERROR(p, "unexpected bytes");
    write_npy_text(p, "{'descr': 12, 'fortran_order': False, 'shape': (3,), }", 12, false);
    EXPECT_ERROR(p, "quoted string");
    write_npy_text(p, "{descr: '<f4'}", 12, false);
    EXPECT_ERROR(p, "quoted string");
    {   /* a NUL inside the header */
        write_npy_text(p, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, false);
        FILE *f = fopen(p, "r+b");
        fseek(f, 20, SEEK_SET);
        fputc(0, f);
        fclose(f);
        EXPECT_ERROR(p, "NUL");
    }

    EXPECT_ERROR(tmp_path("does-not-exist.npy"), "cannot open");
    EXPECT_ERROR(g_dir, "not a regular file");

    /* accepted variations: key order, double quotes, spacing, trailing commas, v2/v3 */
    p = tmp_path("ok.npy");
    write_npy_text(p, "{\"shape\":(3,),\"fortran_order\":False,\"descr\":\"<f4\"}", 12, false);
    EXPECT_OK(p, "<f4", 1, 3);
    write_npy_text(p, "{ 'fortran_order' : False ,  'shape' : ( 2 , 3 ) , 'descr' : '<i2' , }", 12, false);
    EXPECT_OK(p, "<i2", 2, 2, 3);
    write_npy_text(p, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8, false);
    EXPECT_OK(p, "<f8", 0, 0);
    write_npy_text(p, "{'descr': '|b1', 'fortran_order': False, 'shape': (0,), }", 0, true);
    EXPECT_OK(p, "|b1", 1, 0);
    write_npy_text(p, "{'descr': '<u8', 'fortran_order': False, 'shape': (1, 2,), }", 16, true);
    EXPECT_OK(p, "<u8", 2, 1, 2);
    write_npy_text(p, "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 1L), }", 8, false);
    EXPECT_OK(p, "<i4", 2, 2, 1);

    /* the error buffer may be small or absent */
    p = tmp_path("magic.bin");
    CHECK(tile_npy_read(p, &n, err, 5) != 0 && strlen(err) < 5, "short err buffer");
    CHECK(tile_npy_read(p, &n, NULL, 0) != 0, "no err buffer");
    CHECK(tile_npy_read(NULL, &n, err, sizeof err) != 0, "null path");
    CHECK(tile_npy_read(p, NULL, err, sizeof err) != 0, "null out");
    tile_npy_free(NULL);

    /* write errors */
    const int64_t sh[2] = {2, 2};
    float d[4] = {0};
    CHECK(tile_npy_write(tmp_path("w.npy"), ">f4", 2, sh, d, 4, err, sizeof err) != 0 && strstr(err, "'>f4'"), "%s", err);
    CHECK(tile_npy_write(tmp_path("w.npy"), "<f4", 2, sh, d, 8, err, sizeof err) != 0 && strstr(err, "element size"), "%s", err);
    CHECK(tile_npy_write(tmp_path("w.npy"), "<f4", 9, sh, d, 4, err, sizeof err) != 0 && strstr(err, "rank"), "%s", err);
    const int64_t neg[1] = {-1};
    CHECK(tile_npy_write(tmp_path("w.npy"), "<f4", 1, neg, d, 4, err, sizeof err) != 0 && strstr(err, "negative"), "%s", err);
    CHECK(tile_npy_write(tmp_path("w.npy"), "<f4", 2, sh, NULL, 4, err, sizeof err) != 0 && strstr(err, "no data"), "%s", err);
    CHECK(tile_npy_write(tmp_path("no/such/dir/w.npy"), "<f4", 2, sh, d, 4, err, sizeof err) != 0 &&
          strstr(err, "cannot create"), "%s", err);
    CHECK(tile_npy_write(NULL, "<f4", 2, sh, d, 4, err, sizeof err) != 0, "null path");
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s TMPDIR\n", argv[0]); return 2; }
    snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
    mkdir(g_dir, 0777);
    test_roundtrip();
    test_malformed();
    printf("%d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
