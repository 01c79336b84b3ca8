/* core.h — the foundation every stage of libtile uses.
 *
 * In:  src/base (the dtype table, conversions, knobs, logging shared with libtilelink).
 * Out: arenas (bump allocation freed as a whole), growable arrays, source files and
 *      diagnostics (file:line:col: error: message, the line, a caret), the dtype table
 *      with bit-exact conversions (over src/base), NumPy .npy files and levelled logging.
 *
 * Conventions: recoverable errors are reported through tile_diags / status codes;
 * broken invariants use TILE_ASSERT, which prints file:line and aborts.
 */
#ifndef TILE_CORE_H
#define TILE_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tile.h"
#include "../base/base.h"

/* ---------- invariants ---------- */
void tile_assert_fail(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
#define TILE_ASSERT(cond, ...) \
    do { if (!(cond)) tile_assert_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); } while (0)
#define TILE_UNREACHABLE() tile_assert_fail(__FILE__, __LINE__, "unreachable", "")

/* ---------- memory ---------- */
void *tile_xmalloc(size_t n);              /* aborts on out-of-memory */
void *tile_xcalloc(size_t n, size_t size);
void *tile_xrealloc(void *p, size_t n);
char *tile_xstrdup(const char *s);

/* An arena: many small allocations, freed together. Memory is zeroed. */
typedef struct tile_arena_chunk tile_arena_chunk;
typedef struct tile_arena {
    tile_arena_chunk *head;
    size_t used_total;
} tile_arena;
void  tile_arena_init(tile_arena *a);
void *tile_arena_alloc(tile_arena *a, size_t n);          /* zeroed, 16-byte aligned */
char *tile_arena_strdup(tile_arena *a, const char *s);
char *tile_arena_strndup(tile_arena *a, const char *s, size_t n);
char *tile_arena_printf(tile_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void  tile_arena_free(tile_arena *a);
#define TILE_NEW(arena, T) ((T *)tile_arena_alloc((arena), sizeof(T)))
#define TILE_NEW_ARRAY(arena, T, n) ((T *)tile_arena_alloc((arena), sizeof(T) * (size_t)(n)))

/* A growable array of pointers (heap-backed; free with tile_vec_free, or copy into an
 * arena with tile_vec_to_arena). */
typedef struct tile_vec {
    void **items;
    int len, cap;
} tile_vec;
void  tile_vec_push(tile_vec *v, void *item);
void  tile_vec_free(tile_vec *v);
void **tile_vec_to_arena(tile_vec *v, tile_arena *a); /* copies items, frees v */

/* A growable string buffer. */
typedef struct tile_strbuf {
    char *data;
    size_t len, cap;
} tile_strbuf;
void tile_sb_putc(tile_strbuf *sb, char c);
void tile_sb_puts(tile_strbuf *sb, const char *s);
void tile_sb_printf(tile_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tile_sb_vprintf(tile_strbuf *sb, const char *fmt, va_list ap);
void tile_sb_free(tile_strbuf *sb);

/* ---------- sources and diagnostics ---------- */
typedef struct tile_source {
    char *name;   /* file name as given by the user, "<string>" for in-memory text */
    char *text;   /* NUL-terminated contents */
    size_t len;
} tile_source;

/* Read a file; returns NULL and sets *err (static string or strerror) on failure. */
tile_source *tile_source_load(const char *path, const char **err);
tile_source *tile_source_from_string(const char *name, const char *text, size_t len);
void tile_source_free(tile_source *s);

/* A position in a source: 1-based line and column (column counts bytes). */
typedef struct tile_loc {
    const tile_source *src; /* NULL for positions with no source (built in code) */
    int line, col;
} tile_loc;

typedef enum tile_diag_level { TILE_DIAG_ERROR = 0, TILE_DIAG_WARNING = 1, TILE_DIAG_NOTE = 2 } tile_diag_level;

typedef struct tile_diag {
    tile_diag_level level;
    tile_loc loc;
    char *msg;
} tile_diag;

/* A collector of diagnostics. Stages add to it and continue where they can, so one run
 * reports several errors; `max_errors` (default 20) stops the flood. */
typedef struct tile_diags {
    tile_diag *items;
    int len, cap;
    int errors;
    int max_errors;
} tile_diags;
void tile_diags_init(tile_diags *d);
void tile_diags_free(tile_diags *d);
void tile_error_at(tile_diags *d, tile_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tile_warning_at(tile_diags *d, tile_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tile_note_at(tile_diags *d, tile_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tile_diag_add(tile_diags *d, tile_diag_level lvl, tile_loc loc, const char *fmt, va_list ap);
bool tile_diags_full(const tile_diags *d); /* true once max_errors reached */
/* Print every diagnostic as
 *   file:line:col: error: message
 *       <source line>
 *       ^
 * (no source line / caret when the location has no source). */
void tile_diags_print(const tile_diags *d, FILE *out);
/* Format one diagnostic the same way into sb. */
void tile_diag_format(const tile_diag *dg, tile_strbuf *sb);

/* ---------- dtypes ----------
 * The dtype list (TILE_DTYPES) and enum tile_dtype are in the public header <tile.h>. */

const char *tile_dtype_name(tile_dtype dt);     /* canonical name, "?" if invalid */
int  tile_dtype_bits(tile_dtype dt);
bool tile_dtype_is_float(tile_dtype dt);
bool tile_dtype_is_int(tile_dtype dt);          /* signed or unsigned integer (not bool) */
bool tile_dtype_is_signed(tile_dtype dt);       /* signed integers and floats */
bool tile_dtype_is_bool(tile_dtype dt);
/* Accepts canonical names and the aliases people write: "float"/"float32"/"f32",
 * "half"/"float16"/"f16", "bf16", "double", "float8_e4m3fn", "e4m3", "float8_e5m2",
 * "float4_e2m1fn", "int"(=int32), "uint8", "bool", ... Returns TILE_DT_INVALID if unknown. */
tile_dtype tile_dtype_parse(const char *name);
/* The norm-wise relative error `tile run --check` and `tile fuzz` accept in a result of this
 * dtype against the interpreter (docs/cli.md, "Tolerances"); 0 for integers and bool (exact). */
double tile_dtype_check_tolerance(tile_dtype dt);
/* Bytes needed for n elements (fp4: (n+1)/2). */
size_t tile_dtype_storage_bytes(tile_dtype dt, size_t n);

/* Element access on raw storage, bit-exact with every backend.
 * Loads widen exactly; float -> double is exact for every float dtype.
 * Stores of a double into a float dtype round to nearest even. fp8 and fp4 conversions
 * saturate finite overflow to the largest finite value (the `.satfinite` rule of the
 * hardware conversion instructions); NaN stays NaN where the format has one; e4m3 and e2m1
 * have no infinity, so +-inf saturates too. See docs/numbers.md. */
double   tile_load_f(tile_dtype dt, const void *base, size_t index);   /* any dtype, as double */
int64_t  tile_load_i(tile_dtype dt, const void *base, size_t index);   /* integer/bool dtypes */
uint64_t tile_load_bits(tile_dtype dt, const void *base, size_t index);/* raw bits, zero-extended */
void tile_store_f(tile_dtype dt, void *base, size_t index, double v);  /* float -> any dtype */
void tile_store_i(tile_dtype dt, void *base, size_t index, int64_t v); /* int -> any dtype */
void tile_store_bits(tile_dtype dt, void *base, size_t index, uint64_t bits);

/* Scalar conversions (the primitives the above use; also used by code generators). */
uint16_t tile_f32_to_f16_bits(float f);
float    tile_f16_bits_to_f32(uint16_t h);
uint16_t tile_f64_to_f16_bits(double d);   /* single rounding from double */
uint16_t tile_f32_to_bf16_bits(float f);
float    tile_bf16_bits_to_f32(uint16_t h);
uint16_t tile_f64_to_bf16_bits(double d);  /* single rounding from double */
uint8_t  tile_f64_to_e4m3_bits(double d);
double   tile_e4m3_bits_to_f64(uint8_t b);
uint8_t  tile_f64_to_e5m2_bits(double d);
double   tile_e5m2_bits_to_f64(uint8_t b);
uint8_t  tile_f64_to_e2m1_bits(double d);  /* 4-bit result in the low nibble */
double   tile_e2m1_bits_to_f64(uint8_t b);
/* Round a double to the value set of dtype `dt` (float dtypes), as a double. */
double   tile_round_to(tile_dtype dt, double v);
/* Convert a double to an integer dtype: truncate toward zero, saturate at the type's range,
 * NaN -> 0. Returns the value sign- or zero-extended to 64 bits. */
int64_t  tile_f64_to_int(tile_dtype dt, double v);
/* Wrap an integer into the range of an integer dtype (two's complement truncation). */
int64_t  tile_wrap_int(tile_dtype dt, int64_t v);

/* ---------- NumPy .npy files: tile_npy_read/write and tile_npy are in <tile.h> ---------- */

/* ---------- logging ----------
 * Environment variables are knobs of the registry in src/base (base.h, knob_list.h): read
 * them with tb_knob_int / tb_knob_str / ..., never with getenv. */

typedef enum tile_log_level { TILE_LOG_ERROR = 0, TILE_LOG_WARN = 1, TILE_LOG_INFO = 2, TILE_LOG_DEBUG = 3 } tile_log_level;
/* Level from TILE_LOG=error|warn|info|debug (default warn). Lines are prefixed "tile[host:pid] LEVEL". */
bool tile_log_enabled(tile_log_level lvl);
void tile_log(tile_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Monotonic time in seconds. */
double tile_now(void);

/* 64-bit FNV-1a, for cache keys. */
uint64_t tile_hash64(const void *data, size_t n, uint64_t seed);

#endif
