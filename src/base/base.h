/* base.h — the foundation libtile and libtilelink share (src/base), with no dependency on the
 * compiler: both libraries link it, so the same number rounds the same way everywhere and
 * every environment variable is read, checked and documented in one place.
 *
 * In:  nothing (libc, pthreads, dlopen).
 * Out: - the dtype table (names, aliases, sizes) and, in convert.h, the bit-exact conversions;
 *      - levelled logging with host:pid prefixes: channel "tile" (TILE_LOG) and "tlink"
 *        (TLINK_DEBUG);
 *      - the knob registry: every environment variable of knob_list.h, parsed with its
 *        type and range, a bad value warned about, non-default values logged at info, and
 *        unknown TILE_* / TLINK_* variables warned about once with the nearest known name;
 *      - per-kernel compile options (tb_options) whose defaults are knobs;
 *      - the one dynamic loader of libcuda, NVRTC and OpenCL;
 *      - the cache-directory rule.
 *
 * Conventions: everything is prefixed tb_ and hidden (built into both libraries as a static
 * library, never exported). Reads of the environment outside this file's functions are
 * errors (tests/checks/env_reads.py).
 */
#ifndef TILE_BASE_H
#define TILE_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knob_list.h"

#if defined(__GNUC__)
#define TB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TB_PRINTF(a, b)
#endif

/* ---------- dtypes ----------
 * The same list, in the same order, as TILE_DTYPES of <tile.h> (libtile checks that at
 * compile time); libtilelink maps its own enum onto it. */
#define TB_DTYPES(X)                   \
    X(BOOL, "bool", 8, 'B')            \
    X(I8, "int8", 8, 'I')              \
    X(I16, "int16", 16, 'I')           \
    X(I32, "int32", 32, 'I')           \
    X(I64, "int64", 64, 'I')           \
    X(U8, "uint8", 8, 'U')             \
    X(U16, "uint16", 16, 'U')          \
    X(U32, "uint32", 32, 'U')          \
    X(U64, "uint64", 64, 'U')          \
    X(F16, "float16", 16, 'F')         \
    X(BF16, "bfloat16", 16, 'F')       \
    X(F32, "float32", 32, 'F')         \
    X(F64, "float64", 64, 'F')         \
    X(FP8_E4M3, "float8_e4m3", 8, 'F') \
    X(FP8_E5M2, "float8_e5m2", 8, 'F') \
    X(FP4_E2M1, "float4_e2m1", 4, 'F')

typedef enum tb_dtype {
#define X(e, name, bits, kind) TB_DT_##e,
    TB_DTYPES(X)
#undef X
    TB_DT_COUNT,
    TB_DT_INVALID = -1
} tb_dtype;

const char *tb_dtype_name(tb_dtype dt); /* canonical name, "?" if invalid */
int tb_dtype_bits(tb_dtype dt);         /* 0 if invalid */
char tb_dtype_kind(tb_dtype dt);        /* 'B' bool, 'I' signed, 'U' unsigned, 'F' float; 0 if invalid */
/* The canonical names and the aliases people write (docs/numbers.md, "Names"): "float",
 * "f32", "half", "bf16", "e4m3", "float8_e4m3fn", "fp8" (= e4m3), "int", ... ignore_case:
 * match without regard to case. TB_DT_INVALID if unknown. */
tb_dtype tb_dtype_parse(const char *name, bool ignore_case);

/* ---------- logging ---------- */
typedef enum tb_log_level { TB_LOG_ERROR = 0, TB_LOG_WARN = 1, TB_LOG_INFO = 2, TB_LOG_DEBUG = 3 } tb_log_level;
typedef enum tb_log_channel {
    TB_CH_TILE = 0,  /* TILE_LOG=error|warn|info|debug (default warn): "tile[host:pid] LEVEL msg" */
    TB_CH_TLINK = 1, /* TLINK_DEBUG=none|warn|info|debug (default warn): "host:pid tlink LEVEL: msg" */
    TB_CH_COUNT
} tb_log_channel;
bool tb_log_enabled(tb_log_channel ch, int level);
/* One line on stderr (one write), when the channel's level lets it through. */
void tb_log(tb_log_channel ch, int level, const char *fmt, ...) TB_PRINTF(3, 4);
void tb_vlog(tb_log_channel ch, int level, const char *fmt, va_list ap);
const char *tb_hostname(void); /* gethostname, "localhost" if none; cached */

/* ---------- the knob registry ---------- */
typedef enum tb_knob {
#define X(name, type, dflt, lo, hi, values, lib, flags, doc) TB_K_##name,
    TB_KNOBS(X)
#undef X
    TB_K_COUNT
} tb_knob;

typedef enum tb_knob_type { TB_KT_BOOL, TB_KT_INT, TB_KT_SIZE, TB_KT_FLOAT, TB_KT_STR, TB_KT_ENUM } tb_knob_type;
typedef enum tb_knob_lib { TB_KL_TILE, TB_KL_TLINK, TB_KL_BOTH, TB_KL_LAUNCH, TB_KL_TEST, TB_KL_FOREIGN } tb_knob_lib;
enum { TB_KF_COMPILE = 1 };

typedef struct tb_knob_info {
    const char *name;
    tb_knob_type type;
    const char *dflt;   /* "" when the code decides */
    double lo, hi;      /* INT / SIZE / FLOAT range */
    const char *values; /* ENUM: "a,syn|b|c" */
    tb_knob_lib lib;
    int flags;
    const char *doc;
} tb_knob_info;
const tb_knob_info *tb_knob_get_info(tb_knob k);
const char *tb_knob_type_name(tb_knob_type t);
const char *tb_knob_lib_name(tb_knob_lib l);
/* The knob named `name` (exact), or -1. */
int tb_knob_find(const char *name);

/* The environment is read at every call (tests and benchmarks change it between calls); the
 * parsed value is kept per raw string, so a bad value is warned about, and a non-default one
 * logged at info, once per value. */
bool tb_knob_is_set(tb_knob k);          /* set to a valid value */
bool tb_knob_bool(tb_knob k);            /* BOOL (and INT/SIZE/ENUM: != 0) */
long long tb_knob_int(tb_knob k);        /* INT, SIZE, BOOL (0/1), ENUM (the value's index) */
double tb_knob_float(tb_knob k);         /* FLOAT (and integers) */
/* STR: the value, else the default (NULL when the default is ""); ENUM: the canonical name
 * (first synonym) of the value. The pointer stays valid for the process. */
const char *tb_knob_str(tb_knob k);
/* The value where set, else `dflt` (for the knobs whose default the code computes). */
long long tb_knob_int_or(tb_knob k, long long dflt);
double tb_knob_float_or(tb_knob k, double dflt);
/* A FOREIGN (or any) variable's raw value: NULL when unset or empty. No checks. */
const char *tb_env_raw(tb_knob k);

/* Warn once per process (per copy of the base) about TILE_* / TLINK_* variables of the
 * environment that are not knobs, with the nearest known name. Every knob read calls it. */
void tb_knobs_check_environment(void);
/* Edit distance (insertions, deletions, substitutions), for "did you mean". */
int tb_edit_distance(const char *a, const char *b);

/* The table as text: one knob a line with its current value (`tile env`), or as the
 * markdown page docs/knobs.md (current values left out). Returns malloc'd text. */
char *tb_knobs_describe(bool markdown);

/* ---------- per-kernel compile options ---------- */
typedef enum tb_option {
#define X(name, knob, doc) TB_OPT_##name,
    TB_OPTIONS(X)
#undef X
    TB_OPT_COUNT
} tb_option;

/* The values a module set; every other option takes its knob's value (the environment, else
 * the default) when read. Zero-initialised = nothing set. */
typedef struct tb_options {
    uint64_t set;                 /* bit i: option i was set */
    long long ival[TB_OPT_COUNT]; /* BOOL / INT / SIZE / ENUM index */
    char *sval[TB_OPT_COUNT];     /* STR (malloc'd); ENUM: the canonical name (static) */
} tb_options;

const char *tb_option_name(tb_option o);
tb_knob tb_option_knob(tb_option o);
const char *tb_option_doc(tb_option o);
int tb_option_find(const char *name); /* -1 if unknown */
/* Set option `name` to `value` (parsed as its knob's type and range). 0, or -1 with a message
 * naming the option or the value (and the accepted ones) in err. */
int tb_options_set(tb_options *o, const char *name, const char *value, char *err, size_t errlen);
void tb_options_free(tb_options *o);
/* Effective values; o may be NULL (nothing set). */
bool tb_opt_bool(const tb_options *o, tb_option id);
long long tb_opt_int(const tb_options *o, tb_option id);
const char *tb_opt_str(const tb_options *o, tb_option id); /* NULL when empty */
/* "name=value;..." of every option's effective value, for the compile cache keys (malloc'd). */
char *tb_options_key(const tb_options *o);
/* dst takes every value src set (src wins). */
void tb_options_merge(tb_options *dst, const tb_options *src);
/* TileLang's pass_configs: whether `key` (tl.disable_tma_lower or TL_DISABLE_TMA_LOWER, ...)
 * maps onto options, and setting them from a truth value (True/False, 1/0). 1 set, 0 the key
 * is unknown (nothing set: the caller warns), -1 a bad value (message in err). */
bool tb_pass_config_known(const char *key);
int tb_options_set_pass_config(tb_options *o, const char *key, const char *value, char *err, size_t errlen);
/* The option table (`tile env --options`), malloc'd text. */
char *tb_options_describe(const tb_options *o);

/* ---------- the dynamic loader ---------- */
typedef enum tb_dl_lib { TB_DL_CUDA = 0, TB_DL_NVRTC = 1, TB_DL_OPENCL = 2, TB_DL_COUNT } tb_dl_lib;
/* The library's handle: libcuda.so.1; NVRTC (libnvrtc.so.13, .12, .so, also under
 * /usr/local/cuda/lib64); libOpenCL.so.1 / .so. Opened once per process (RTLD_NOW |
 * RTLD_LOCAL) and never closed; `path` non-NULL opens that file instead (not cached). NULL
 * with why (what was tried and what to install) when it cannot be loaded. */
void *tb_dl_open(tb_dl_lib lib, const char *path, char *why, size_t whylen);
typedef struct tb_dl_sym {
    void **slot;
    const char *name;
    const char *alt;   /* tried when `name` is missing, or NULL */
    bool optional;     /* a missing optional symbol leaves *slot NULL */
} tb_dl_sym;
/* Resolve every symbol; 0, or -1 with why = "<library> has no <name>" for the first missing. */
int tb_dl_syms(void *h, tb_dl_lib lib, const tb_dl_sym *syms, int n, char *why, size_t whylen);
const char *tb_dl_libname(tb_dl_lib lib); /* "libcuda.so.1", "NVRTC", "libOpenCL.so.1" */

/* ---------- the cache directory ----------
 * $TILE_CACHE_DIR, else $XDG_CACHE_HOME/tile, else $HOME/.cache/tile. Writes the path into
 * buf (not created); false when none applies (no HOME) or it does not fit. */
bool tb_cache_dir(char *buf, size_t n);
/* mkdir -p; 0 when path is a directory afterwards. */
int tb_mkdir_p(const char *path);

/* Chrome-trace spans into libtile's trace writer (TILE_TRACE, tile_trace_start) from either
 * library: libtile's entry points are found in the process at run time, so libtilelink
 * traces its collectives without linking libtile (trace_hook.c). tb_trace_on() is 0 where
 * libtile is not loaded or not tracing; times are tb_trace_now()'s (tile_now) seconds. */
int tb_trace_on(void);
double tb_trace_now(void);
void tb_trace_span(const char *name, const char *category, double start_s, double dur_s, const char *args_json);

#endif
