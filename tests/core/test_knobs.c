/* test_knobs.c — the knob registry, the per-kernel options, logging, the cache-directory rule
 * and the dtype names of src/base (ctest core.knobs). Messages go to stderr, which the test
 * redirects into a file and reads back. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

static int failures;
#define CHECK(cond, ...)                                               \
    do {                                                               \
        if (!(cond)) {                                                 \
            failures++;                                                \
            fprintf(stdout, "%s:%d: FAIL: ", __FILE__, __LINE__);      \
            fprintf(stdout, __VA_ARGS__);                              \
            fputc('\n', stdout);                                       \
        }                                                              \
    } while (0)

/* stderr into a file from now on; captured() returns what was written since the last call */
static char g_errpath[256];
static long g_errpos;
static void capture_stderr(void) {
    snprintf(g_errpath, sizeof g_errpath, "/tmp/tile-test-knobs-%d.err", (int)getpid());
    fflush(stderr);
    if (!freopen(g_errpath, "w+", stderr)) abort();
}
static char *captured(void) {
    fflush(stderr);
    FILE *f = fopen(g_errpath, "r");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, g_errpos, SEEK_SET);
    char *buf = calloc(1, (size_t)(end - g_errpos) + 1);
    size_t n = fread(buf, 1, (size_t)(end - g_errpos), f);
    buf[n] = 0;
    fclose(f);
    g_errpos = end;
    return buf;
}
static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

int main(void) {
    /* an unknown variable, set before the first read: warned about once, nearest name given */
    setenv("TILE_NUM_THREAD", "3", 1);
    setenv("TLINK_TIMEOUTS", "3", 1);
    setenv("TILE_LOG", "info", 1);
    setenv("TLINK_DEBUG", "info", 1);
    capture_stderr();
    CHECK(tb_knob_int(TB_K_TILE_LOG) == 2, "TILE_LOG=info is value 2");
    (void)tb_knob_int(TB_K_TILE_NUM_THREADS);
    char *e = captured();
    CHECK(count(e, "unknown environment variable TILE_NUM_THREAD ") == 1, "unknown TILE_NUM_THREAD warned once:\n%s", e);
    CHECK(strstr(e, "nearest known one is TILE_NUM_THREADS") != NULL, "nearest name of TILE_NUM_THREAD:\n%s", e);
    CHECK(strstr(e, "unknown environment variable TLINK_TIMEOUTS") && strstr(e, "nearest known one is TLINK_TIMEOUT;"),
          "TLINK_TIMEOUTS:\n%s", e);
    CHECK(strstr(e, "tlink WARN: unknown environment variable TLINK_TIMEOUTS"), "the tlink channel warns about TLINK_*:\n%s", e);
    CHECK(strstr(e, "tile[") && strstr(e, "] WARN unknown environment variable TILE_NUM_THREAD"), "the tile channel's prefix:\n%s", e);
    CHECK(strstr(e, "INFO TILE_LOG=info (default: warn)") != NULL, "a non-default value is logged at info:\n%s", e);
    free(e);
    (void)tb_knob_int(TB_K_TILE_GEMM_KC);
    e = captured();
    CHECK(!strstr(e, "unknown environment variable"), "unknown variables are warned about once:\n%s", e);
    free(e);

    /* every default parses; options are never FLOAT knobs */
    for (int k = 0; k < TB_K_COUNT; k++) {
        const tb_knob_info *in = tb_knob_get_info((tb_knob)k);
        CHECK(tb_knob_find(in->name) == k, "tb_knob_find(%s)", in->name);
        CHECK(in->doc && in->doc[0], "%s has a doc line", in->name);
        if (in->type == TB_KT_ENUM) CHECK(in->values && in->values[0], "%s has values", in->name);
        if (in->dflt && in->dflt[0] && in->type != TB_KT_STR && in->lib != TB_KL_FOREIGN) {
            char n2[128];
            snprintf(n2, sizeof n2, "%s", in->name);
            setenv(n2, in->dflt, 1);
            CHECK(tb_knob_is_set((tb_knob)k), "%s's default '%s' is a valid value", in->name, in->dflt);
            unsetenv(n2);
        }
    }
    for (int o = 0; o < TB_OPT_COUNT; o++) {
        const tb_knob_info *in = tb_knob_get_info(tb_option_knob((tb_option)o));
        CHECK(in->type != TB_KT_FLOAT, "option %s: FLOAT knobs are not options", tb_option_name((tb_option)o));
        CHECK(in->flags & TB_KF_COMPILE, "option %s: its knob %s is marked compile", tb_option_name((tb_option)o), in->name);
        CHECK(tb_option_find(tb_option_name((tb_option)o)) == o, "tb_option_find");
    }
    e = captured();
    free(e);

    /* types and ranges */
    setenv("TILE_POOL_MOVE", "off", 1);
    CHECK(!tb_knob_bool(TB_K_TILE_POOL_MOVE) && tb_knob_is_set(TB_K_TILE_POOL_MOVE), "bool off");
    setenv("TILE_POOL_MOVE", "YES", 1);
    CHECK(tb_knob_bool(TB_K_TILE_POOL_MOVE), "bool YES (re-read after a change)");
    setenv("TILE_POOL_MOVE", "maybe", 1);
    CHECK(tb_knob_bool(TB_K_TILE_POOL_MOVE) && !tb_knob_is_set(TB_K_TILE_POOL_MOVE), "bad bool -> default 1");
    e = captured();
    CHECK(strstr(e, "TILE_POOL_MOVE=maybe is not valid (accepted: 1/0, true/false, on/off, yes/no); using the default 1"),
          "bad bool message:\n%s", e);
    free(e);
    (void)tb_knob_bool(TB_K_TILE_POOL_MOVE);
    e = captured();
    CHECK(!e[0], "a bad value is warned about once:\n%s", e);
    free(e);
    unsetenv("TILE_POOL_MOVE");
    setenv("TILE_SIMT_MEMOPT", "5", 1);
    CHECK(tb_knob_int(TB_K_TILE_SIMT_MEMOPT) == 1, "out of range -> default 1");
    e = captured();
    CHECK(strstr(e, "TILE_SIMT_MEMOPT=5 is not valid (accepted: an integer, 0..2); using the default 1"), "range message:\n%s", e);
    free(e);
    setenv("TILE_SIMT_MEMOPT", "0x2", 1);
    CHECK(tb_knob_int(TB_K_TILE_SIMT_MEMOPT) == 2, "hex int");
    setenv("TILE_SIMT_MEMOPT", "2x", 1);
    CHECK(tb_knob_int(TB_K_TILE_SIMT_MEMOPT) == 1, "trailing garbage -> default");
    unsetenv("TILE_SIMT_MEMOPT");
    setenv("TILE_CUDA_MMA_SYNC", "-1", 1);
    CHECK(tb_knob_int(TB_K_TILE_CUDA_MMA_SYNC) == -1 && tb_knob_is_set(TB_K_TILE_CUDA_MMA_SYNC), "negative int");
    unsetenv("TILE_CUDA_MMA_SYNC");
    CHECK(tb_knob_int(TB_K_TILE_CUDA_MMA_SYNC) == -1 && !tb_knob_is_set(TB_K_TILE_CUDA_MMA_SYNC), "unset -> default -1");
    setenv("TLINK_GPU_SLOT", "1.5M", 1);
    CHECK(tb_knob_int(TB_K_TLINK_GPU_SLOT) == 1572864, "size 1.5M");
    setenv("TLINK_GPU_SLOT", "64k", 1);
    CHECK(tb_knob_int(TB_K_TLINK_GPU_SLOT) == 65536, "size 64k");
    setenv("TLINK_GPU_SLOT", "0x100", 1);
    CHECK(tb_knob_int(TB_K_TLINK_GPU_SLOT) == 256, "size hex");
    setenv("TLINK_GPU_SLOT", "12q", 1);
    CHECK(tb_knob_int(TB_K_TLINK_GPU_SLOT) == 262144, "bad size -> 256K");
    unsetenv("TLINK_GPU_SLOT");
    CHECK(tb_knob_int(TB_K_TLINK_SOCKET_CHUNK) == 131072, "default 128K");
    setenv("TLINK_TIMEOUT", "2.5", 1);
    CHECK(tb_knob_float(TB_K_TLINK_TIMEOUT) == 2.5, "float");
    setenv("TLINK_TIMEOUT", "-1", 1);
    CHECK(tb_knob_float(TB_K_TLINK_TIMEOUT) == 300, "float below the range -> default");
    unsetenv("TLINK_TIMEOUT");
    CHECK(tb_knob_float_or(TB_K_TLINK_SPIN_US, 42) == 42, "float_or: unset -> the code's default");
    setenv("TLINK_SPIN_US", "7", 1);
    CHECK(tb_knob_float_or(TB_K_TLINK_SPIN_US, 42) == 7, "float_or: set");
    unsetenv("TLINK_SPIN_US");
    setenv("TLINK_DEBUG", "TRACE", 1);
    CHECK(tb_knob_int(TB_K_TLINK_DEBUG) == 3 && !strcmp(tb_knob_str(TB_K_TLINK_DEBUG), "debug"), "enum synonym, any case");
    setenv("TLINK_DEBUG", "0", 1);
    CHECK(tb_knob_int(TB_K_TLINK_DEBUG) == 0 && !strcmp(tb_knob_str(TB_K_TLINK_DEBUG), "none"), "enum synonym 0 = none");
    setenv("TLINK_DEBUG", "loud", 1);
    CHECK(tb_knob_int(TB_K_TLINK_DEBUG) == 1, "bad enum -> warn");
    e = captured();
    CHECK(strstr(e, "TLINK_DEBUG=loud is not valid (accepted: none,0, warn, info,1, debug,trace,2); using the default warn"),
          "enum message:\n%s", e);
    free(e);
    setenv("TLINK_DEBUG", "info", 1);
    setenv("TILE_CPU_CFLAGS", "", 1);
    CHECK(tb_knob_str(TB_K_TILE_CPU_CFLAGS) == NULL && !tb_knob_is_set(TB_K_TILE_CPU_CFLAGS), "empty = unset");
    setenv("TILE_CPU_CFLAGS", "-O1", 1);
    CHECK(!strcmp(tb_knob_str(TB_K_TILE_CPU_CFLAGS), "-O1"), "string");
    unsetenv("TILE_CPU_CFLAGS");
    CHECK(!strcmp(tb_knob_str(TB_K_TLINK_STORE_PREFIX), "tlink"), "string default");
    CHECK(!strcmp(tb_knob_str(TB_K_CC), "cc") || getenv("CC"), "CC's default");
    setenv("RANK", "2(x3)", 1);
    CHECK(!strcmp(tb_env_raw(TB_K_RANK), "2(x3)"), "foreign variables are raw");
    unsetenv("RANK");
    e = captured();
    CHECK(!strstr(e, "RANK"), "foreign variables are not checked or logged:\n%s", e);
    free(e);

    /* options */
    tb_options o = {0};
    char err[1024];
    CHECK(tb_opt_int(&o, TB_OPT_cuda_mma_sync) == -1, "an unset option takes its knob's default");
    setenv("TILE_CUDA_MMA_SYNC", "0", 1);
    CHECK(tb_opt_int(&o, TB_OPT_cuda_mma_sync) == 0 && tb_opt_int(NULL, TB_OPT_cuda_mma_sync) == 0, "... and its environment value");
    CHECK(tb_options_set(&o, "cuda_mma_sync", "1", err, sizeof err) == 0, "set cuda_mma_sync=1: %s", err);
    CHECK(tb_opt_int(&o, TB_OPT_cuda_mma_sync) == 1, "a set option overrides the environment");
    unsetenv("TILE_CUDA_MMA_SYNC");
    CHECK(tb_options_set(&o, "fast_math", "off", err, sizeof err) == 0 && !tb_opt_bool(&o, TB_OPT_fast_math), "fast_math=off");
    CHECK(tb_options_set(&o, "rowfuse_pipe", "1", err, sizeof err) == 0 && tb_opt_int(&o, TB_OPT_rowfuse_pipe) == 2 &&
              !strcmp(tb_opt_str(&o, TB_OPT_rowfuse_pipe), "1"),
          "enum option");
    CHECK(tb_options_set(&o, "cpu_cflags", "-O3 -g", err, sizeof err) == 0 && !strcmp(tb_opt_str(&o, TB_OPT_cpu_cflags), "-O3 -g"),
          "string option");
    CHECK(tb_options_set(&o, "fast_maths", "1", err, sizeof err) != 0 && strstr(err, "unknown option 'fast_maths'") &&
              strstr(err, "fast_math"),
          "unknown option: %s", err);
    CHECK(tb_options_set(&o, "simt_memopt", "7", err, sizeof err) != 0 &&
              strstr(err, "option simt_memopt: '7' is not valid (accepted: an integer, 0..2)"),
          "bad option value: %s", err);
    char *key = tb_options_key(&o);
    CHECK(strstr(key, "cuda_mma_sync=1;") && strstr(key, "fast_math=0;") && strstr(key, "cpu_cflags=-O3 -g;") &&
              strstr(key, "gpu_checks=1;"),
          "options key: %s", key);
    free(key);
    tb_options o2 = {0};
    char *k1 = tb_options_key(&o2);
    setenv("TILE_GPU_CHECKS", "0", 1);
    char *k2 = tb_options_key(&o2);
    CHECK(strcmp(k1, k2) != 0, "the environment's values enter the key");
    unsetenv("TILE_GPU_CHECKS");
    free(k1);
    free(k2);
    tb_options_free(&o);

    /* the cache directory */
    char d[512];
    setenv("TILE_CACHE_DIR", "/x/y", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    CHECK(tb_cache_dir(d, sizeof d) && !strcmp(d, "/x/y"), "TILE_CACHE_DIR first");
    unsetenv("TILE_CACHE_DIR");
    CHECK(tb_cache_dir(d, sizeof d) && !strcmp(d, "/xdg/tile"), "then XDG_CACHE_HOME/tile");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", "/home/u", 1);
    CHECK(tb_cache_dir(d, sizeof d) && !strcmp(d, "/home/u/.cache/tile"), "then ~/.cache/tile");
    unsetenv("HOME");
    CHECK(!tb_cache_dir(d, sizeof d), "none without HOME");

    /* dtype names, the loader's messages, the edit distance, the table */
    CHECK(tb_dtype_parse("bfloat16", false) == TB_DT_BF16 && tb_dtype_parse("e4m3", false) == TB_DT_FP8_E4M3 &&
              tb_dtype_parse("Float32", false) == TB_DT_INVALID && tb_dtype_parse("Float32", true) == TB_DT_F32 &&
              tb_dtype_parse("fp8", false) == TB_DT_INVALID,
          "dtype names");
    CHECK(tb_dtype_bits(TB_DT_FP4_E2M1) == 4 && tb_dtype_kind(TB_DT_U16) == 'U', "dtype table");
    char why[512];
    CHECK(tb_dl_open(TB_DL_CUDA, "libtile-no-such-library.so.1", why, sizeof why) == NULL &&
              strstr(why, "cannot load libtile-no-such-library.so.1"),
          "loader: %s", why);
    CHECK(tb_edit_distance("kitten", "sitting") == 3 && tb_edit_distance("", "abc") == 3 && tb_edit_distance("ab", "ab") == 0,
          "edit distance");
    char *md = tb_knobs_describe(true);
    for (int k = 0; k < TB_K_COUNT; k++) {
        char n2[160];
        snprintf(n2, sizeof n2, "| `%s` |", tb_knob_get_info((tb_knob)k)->name);
        CHECK(strstr(md, n2) != NULL, "markdown lists %s", n2);
    }
    for (int o3 = 0; o3 < TB_OPT_COUNT; o3++) {
        char n2[160];
        snprintf(n2, sizeof n2, "| `%s` |", tb_option_name((tb_option)o3));
        CHECK(strstr(md, n2) != NULL, "markdown lists option %s", n2);
    }
    free(md);

    /* logging: channel formats */
    tb_log(TB_CH_TLINK, TB_LOG_INFO, "hello %d", 7);
    tb_log(TB_CH_TILE, TB_LOG_DEBUG, "not shown");
    e = captured();
    CHECK(strstr(e, " tlink INFO: hello 7\n") != NULL && !strstr(e, "not shown"), "tlink format and levels:\n%s", e);
    free(e);

    fclose(stderr);
    unlink(g_errpath);
    if (failures) printf("%d failures\n", failures);
    else printf("ok\n");
    return failures ? 1 : 0;
}
