/* util.c — logging, errors, names, bit-exact float converters, reductions. */
#include "tl_internal.h"
#include "../../src/base/convert.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

const char *tlink_version(void) { return "0.1"; }

/* ---------- environment (src/base's knob registry) and logging ---------- */
double tl_default_timeout(void) {
    double t = tb_knob_float(TB_K_TLINK_TIMEOUT);
    return t > 0 ? t : 300.0;
}

/* logging: src/base's "tlink" channel (TLINK_DEBUG) */
int tl_log_level(void) {
    return tb_log_enabled(TB_CH_TLINK, TB_LOG_DEBUG) ? TL_LOG_DEBUG
         : tb_log_enabled(TB_CH_TLINK, TB_LOG_INFO)  ? TL_LOG_INFO
         : tb_log_enabled(TB_CH_TLINK, TB_LOG_WARN)  ? TL_LOG_WARN
                                                     : TL_LOG_NONE;
}

const char *tl_hostname(void) { return tb_hostname(); }

void tl_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tb_vlog(TB_CH_TLINK, level, fmt, ap);
    va_end(ap);
}

double tl_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static __thread char tls_err[768];
void tl_set_thread_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err, sizeof tls_err, fmt, ap);
    va_end(ap);
}
const char *tl_thread_error(void) { return tls_err; }

uint64_t tl_hash64(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    if (!h) h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t tl_random64(void) {
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, &v, sizeof v);
        (void)r;
        close(fd);
    }
    v ^= (uint64_t)getpid() << 32;
    v ^= (uint64_t)(tl_now() * 1e9);
    return v ? v : 1;
}

void tlink_free(void *p) { free(p); }

/* ---------- names ---------- */
const char *tlink_error_string(tlink_status st) {
    switch (st) {
#define TLINK_X_(name, val, msg) case name: return msg;
        TLINK_STATUS_LIST(TLINK_X_)
#undef TLINK_X_
    default: return "unknown status";
    }
}

static const struct { const char *name; size_t size; } dtype_tab[TLINK_DTYPE_COUNT] = {
#define TLINK_X_(name, val, str, size) [val] = {str, size},
    TLINK_DTYPE_LIST(TLINK_X_)
#undef TLINK_X_
};

size_t tlink_dtype_size(tlink_dtype dt) {
    return ((unsigned)dt < TLINK_DTYPE_COUNT) ? dtype_tab[dt].size : 0;
}
const char *tlink_dtype_name(tlink_dtype dt) {
    return ((unsigned)dt < TLINK_DTYPE_COUNT) ? dtype_tab[dt].name : "?";
}
/* tlink's names ("f32", "fp8_e4m3"), the names and aliases of src/base's dtype table in any
 * case ("float32", "bfloat16", "half", "float8_e4m3fn", ...), and "fp8" (= e4m3). */
int tlink_dtype_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TLINK_DTYPE_COUNT; i++)
        if (!strcasecmp(name, dtype_tab[i].name)) return i;
    if (!strcasecmp(name, "fp8")) return TLINK_FP8_E4M3;
    switch (tb_dtype_parse(name, true)) {
    case TB_DT_F32: return TLINK_F32;
    case TB_DT_F64: return TLINK_F64;
    case TB_DT_F16: return TLINK_F16;
    case TB_DT_BF16: return TLINK_BF16;
    case TB_DT_I32: return TLINK_I32;
    case TB_DT_I64: return TLINK_I64;
    case TB_DT_U8: return TLINK_U8;
    case TB_DT_FP8_E4M3: return TLINK_FP8_E4M3;
    case TB_DT_FP8_E5M2: return TLINK_FP8_E5M2;
    default: return -1;
    }
}

static const char *op_names[TLINK_OP_COUNT] = {
#define TLINK_X_(name, val, str) [val] = str,
    TLINK_OP_LIST(TLINK_X_)
#undef TLINK_X_
};
const char *tlink_op_name(tlink_op op) { return ((unsigned)op < TLINK_OP_COUNT) ? op_names[op] : "?"; }
int tlink_op_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TLINK_OP_COUNT; i++)
        if (!strcasecmp(name, op_names[i])) return i;
    if (!strcasecmp(name, "mean")) return TLINK_AVG;
    return -1;
}

static const char *coll_names[TLINK_COLL_COUNT] = {
#define TLINK_X_(name, val, str) [val] = str,
    TLINK_COLL_LIST(TLINK_X_)
#undef TLINK_X_
};
const char *tlink_coll_name(tlink_coll c) { return ((unsigned)c < TLINK_COLL_COUNT) ? coll_names[c] : "?"; }

static const char *algo_names[TLINK_ALGO_COUNT] = {
#define TLINK_X_(name, val, str) [val] = str,
    TLINK_ALGO_LIST(TLINK_X_)
#undef TLINK_X_
};
const char *tlink_algo_name(tlink_algo a) { return ((unsigned)a < TLINK_ALGO_COUNT) ? algo_names[a] : "?"; }
int tlink_algo_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TLINK_ALGO_COUNT; i++)
        if (!strcasecmp(name, algo_names[i])) return i;
    static const struct { const char *s; int a; } alias[] = {
        {"rd", TLINK_ALGO_RECURSIVE_DOUBLING}, {"rab", TLINK_ALGO_RABENSEIFNER},
        {"rsag", TLINK_ALGO_RABENSEIFNER}, {"tree", TLINK_ALGO_BINOMIAL_TREE},
        {"binomial", TLINK_ALGO_BINOMIAL_TREE}, {"dbt", TLINK_ALGO_DOUBLE_BINARY_TREE},
        {"dbtree", TLINK_ALGO_DOUBLE_BINARY_TREE}, {"hier", TLINK_ALGO_HIERARCHICAL},
        {"recursive_halving", TLINK_ALGO_RECURSIVE_DOUBLING},
    };
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcasecmp(name, alias[i].s)) return alias[i].a;
    return -1;
}

/* ---------- bit-exact converters: src/base/convert.h, the rules of docs/numbers.md ----------
 * (round to nearest even; fp8 saturates finite overflow and inf to +-max, NaN stays NaN) */
float tlink_f16_to_f32(uint16_t h) { return tcv_f16_bits_to_f32(h); }
uint16_t tlink_f32_to_f16(float f) { return tcv_f32_to_f16_bits(f); }
float tlink_bf16_to_f32(uint16_t h) { return tcv_bf16_bits_to_f32(h); }
uint16_t tlink_f32_to_bf16(float f) { return tcv_f32_to_bf16_bits(f); }

/* decoding tables for the reductions' inner loops */
static float e4m3_tab[256], e5m2_tab[256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;
static void fp8_init(void) {
    for (int i = 0; i < 256; i++) {
        e4m3_tab[i] = tcv_e4m3_bits_to_f32((uint8_t)i);
        e5m2_tab[i] = tcv_e5m2_bits_to_f32((uint8_t)i);
    }
}
float tlink_fp8_e4m3_to_f32(uint8_t v) { pthread_once(&fp8_once, fp8_init); return e4m3_tab[v]; }
float tlink_fp8_e5m2_to_f32(uint8_t v) { pthread_once(&fp8_once, fp8_init); return e5m2_tab[v]; }
uint8_t tlink_f32_to_fp8_e4m3(float f) { return tcv_f32_to_e4m3_bits(f); }
uint8_t tlink_f32_to_fp8_e5m2(float f) { return tcv_f32_to_e5m2_bits(f); }

/* ---------- reductions ---------- */
#define R_SUM(a, b) ((a) + (b))
#define R_PROD(a, b) ((a) * (b))
#define R_MIN(a, b) ((b) < (a) ? (b) : (a))
#define R_MAX(a, b) ((b) > (a) ? (b) : (a))

/* native types; integers use unsigned arithmetic for sum/prod (wrap-around, no UB) */
#define DEF_NATIVE(T, name, OPN, EXPR)                                                  \
    static void red_##name##_##OPN(void *io, const void *in, size_t n) {                \
        T *restrict a = io;                                                             \
        const T *restrict b = in;                                                       \
        for (size_t i = 0; i < n; i++) a[i] = EXPR(a[i], b[i]);                         \
    }
#define DEF_INT(T, U, name)                                                             \
    static void red_##name##_sum(void *io, const void *in, size_t n) {                  \
        T *restrict a = io;                                                             \
        const T *restrict b = in;                                                       \
        for (size_t i = 0; i < n; i++) a[i] = (T)((U)a[i] + (U)b[i]);                   \
    }                                                                                   \
    static void red_##name##_prod(void *io, const void *in, size_t n) {                 \
        T *restrict a = io;                                                             \
        const T *restrict b = in;                                                       \
        for (size_t i = 0; i < n; i++) a[i] = (T)((U)a[i] * (U)b[i]);                   \
    }                                                                                   \
    DEF_NATIVE(T, name, min, R_MIN)                                                     \
    DEF_NATIVE(T, name, max, R_MAX)

DEF_NATIVE(float, f32, sum, R_SUM)
DEF_NATIVE(float, f32, prod, R_PROD)
DEF_NATIVE(float, f32, min, R_MIN)
DEF_NATIVE(float, f32, max, R_MAX)
DEF_NATIVE(double, f64, sum, R_SUM)
DEF_NATIVE(double, f64, prod, R_PROD)
DEF_NATIVE(double, f64, min, R_MIN)
DEF_NATIVE(double, f64, max, R_MAX)
DEF_INT(int32_t, uint32_t, i32)
DEF_INT(int64_t, uint64_t, i64)
DEF_INT(uint8_t, uint32_t, u8)

/* small floats: widen to f32, operate, round back */
#define DEF_SMALL(T, name, DEC, ENC, OPN, EXPR)                                         \
    static void red_##name##_##OPN(void *io, const void *in, size_t n) {                \
        T *restrict a = io;                                                             \
        const T *restrict b = in;                                                       \
        for (size_t i = 0; i < n; i++) {                                                \
            float x = DEC(a[i]), y = DEC(b[i]);                                         \
            a[i] = ENC(EXPR(x, y));                                                     \
        }                                                                               \
    }
#define DEF_SMALL_ALL(T, name, DEC, ENC)                                                \
    DEF_SMALL(T, name, DEC, ENC, sum, R_SUM)                                            \
    DEF_SMALL(T, name, DEC, ENC, prod, R_PROD)                                          \
    DEF_SMALL(T, name, DEC, ENC, min, R_MIN)                                            \
    DEF_SMALL(T, name, DEC, ENC, max, R_MAX)

static inline float dec_e4m3(uint8_t v) { return e4m3_tab[v]; }
static inline float dec_e5m2(uint8_t v) { return e5m2_tab[v]; }
DEF_SMALL_ALL(uint16_t, f16, tlink_f16_to_f32, tlink_f32_to_f16)
DEF_SMALL_ALL(uint16_t, bf16, tlink_bf16_to_f32, tlink_f32_to_bf16)
DEF_SMALL_ALL(uint8_t, e4m3, dec_e4m3, tlink_f32_to_fp8_e4m3)
DEF_SMALL_ALL(uint8_t, e5m2, dec_e5m2, tlink_f32_to_fp8_e5m2)

#define ROW(name) {red_##name##_sum, red_##name##_prod, red_##name##_min, red_##name##_max}
static const tl_reduce_fn reduce_tab[TLINK_DTYPE_COUNT][4] = {
    [TLINK_F32] = ROW(f32), [TLINK_F64] = ROW(f64), [TLINK_F16] = ROW(f16),
    [TLINK_BF16] = ROW(bf16), [TLINK_I32] = ROW(i32), [TLINK_I64] = ROW(i64),
    [TLINK_U8] = ROW(u8), [TLINK_FP8_E4M3] = ROW(e4m3), [TLINK_FP8_E5M2] = ROW(e5m2),
};

tl_reduce_fn tl_reduce_get(tlink_dtype dt, tlink_op op) {
    if ((unsigned)dt >= TLINK_DTYPE_COUNT || (unsigned)op >= TLINK_OP_COUNT) return NULL;
    pthread_once(&fp8_once, fp8_init);
    return reduce_tab[dt][op == TLINK_AVG ? 0 : (int)op];
}

tlink_status tlink_reduce_local(void *inout, const void *in, size_t count, tlink_dtype dt, tlink_op op) {
    tl_reduce_fn f = tl_reduce_get(dt, op);
    if (!f) return TLINK_ERR_INVALID_ARG;
    if (count && (!inout || !in)) return TLINK_ERR_INVALID_ARG;
    f(inout, in, count);
    return TLINK_OK;
}

void tl_avg_finish(void *buf, size_t n, tlink_dtype dt, int size) {
    pthread_once(&fp8_once, fp8_init);
    float fs = (float)size;
    switch (dt) {
    case TLINK_F32: { float *p = buf; for (size_t i = 0; i < n; i++) p[i] /= fs; break; }
    case TLINK_F64: { double *p = buf; for (size_t i = 0; i < n; i++) p[i] /= (double)size; break; }
    case TLINK_I32: { int32_t *p = buf; for (size_t i = 0; i < n; i++) p[i] /= size; break; }
    case TLINK_I64: { int64_t *p = buf; for (size_t i = 0; i < n; i++) p[i] /= size; break; }
    case TLINK_U8: { uint8_t *p = buf; for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(p[i] / size); break; }
    case TLINK_F16: { uint16_t *p = buf; for (size_t i = 0; i < n; i++) p[i] = tlink_f32_to_f16(tlink_f16_to_f32(p[i]) / fs); break; }
    case TLINK_BF16: { uint16_t *p = buf; for (size_t i = 0; i < n; i++) p[i] = tlink_f32_to_bf16(tlink_bf16_to_f32(p[i]) / fs); break; }
    case TLINK_FP8_E4M3: { uint8_t *p = buf; for (size_t i = 0; i < n; i++) p[i] = tlink_f32_to_fp8_e4m3(e4m3_tab[p[i]] / fs); break; }
    case TLINK_FP8_E5M2: { uint8_t *p = buf; for (size_t i = 0; i < n; i++) p[i] = tlink_f32_to_fp8_e5m2(e5m2_tab[p[i]] / fs); break; }
    default: break;
    }
}
