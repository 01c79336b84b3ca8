/* npy.c — reading and writing NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Layout: "\x93NUMPY", major, minor, header length (uint16 LE for 1.0, uint32 LE for 2.0 and
 * 3.0), then the header, a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ending in '\n', then the raw little-endian C-order data.
 * Every malformed file gives a message "<path>: <what is wrong>"; nothing here aborts on
 * bad input. Sizes are checked against the file length before anything is allocated.
 */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAX_RANK 8

static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    if (err && errlen) {
        int n = snprintf(err, errlen, "%s: ", path ? path : "<null>");
        if (n >= 0 && (size_t)n < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* ---------- descrs ---------- */

static const struct { const char *descr; tile_dtype dt; size_t size; } k_descrs[] = {
    {"|b1", TILE_DT_BOOL, 1}, {"<b1", TILE_DT_BOOL, 1},
    {"|i1", TILE_DT_I8, 1},   {"<i1", TILE_DT_I8, 1},
    {"|u1", TILE_DT_U8, 1},   {"<u1", TILE_DT_U8, 1},
    {"<i2", TILE_DT_I16, 2},  {"<i4", TILE_DT_I32, 4},  {"<i8", TILE_DT_I64, 8},
    {"<u2", TILE_DT_U16, 2},  {"<u4", TILE_DT_U32, 4},  {"<u8", TILE_DT_U64, 8},
    {"<f2", TILE_DT_F16, 2},  {"<f4", TILE_DT_F32, 4},  {"<f8", TILE_DT_F64, 8},
};

static int descr_index(const char *descr) {
    if (!descr) return -1;
    for (size_t i = 0; i < sizeof k_descrs / sizeof k_descrs[0]; i++)
        if (strcmp(descr, k_descrs[i].descr) == 0) return (int)i;
    return -1;
}

tile_dtype tile_npy_dtype_of_descr(const char *descr) {
    int i = descr_index(descr);
    return i < 0 ? TILE_DT_INVALID : k_descrs[i].dt;
}

const char *tile_npy_descr_for(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_BOOL: return "|b1";
    case TILE_DT_I8: return "|i1";
    case TILE_DT_I16: return "<i2";
    case TILE_DT_I32: return "<i4";
    case TILE_DT_I64: return "<i8";
    case TILE_DT_U8: return "|u1";
    case TILE_DT_U16: return "<u2";
    case TILE_DT_U32: return "<u4";
    case TILE_DT_U64: return "<u8";
    case TILE_DT_F16: return "<f2";
    case TILE_DT_BF16: return "<u2";      /* raw bits */
    case TILE_DT_F32: return "<f4";
    case TILE_DT_F64: return "<f8";
    case TILE_DT_FP8_E4M3: return "|u1";  /* raw bits */
    case TILE_DT_FP8_E5M2: return "|u1";  /* raw bits */
    case TILE_DT_FP4_E2M1: return "|u1";  /* raw bits, one element per byte, low nibble */
    default: return NULL;
    }
}

/* Explain an unsupported descr as precisely as we can. */
static const char *descr_problem(const char *d) {
    size_t n = strlen(d);
    if (n >= 1 && d[0] == '>') return "big-endian data is not supported (re-save with '<' byte order)";
    if (n == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '=') &&
        strchr("biuf", d[1]) && strchr("1248", d[2]))
        return "this byte-order/size combination is not supported";
    if (n >= 2 && d[1] == 'c') return "complex numbers are not supported";
    if (n >= 2 && (d[1] == 'V' || d[1] == 'S' || d[1] == 'U' || d[1] == 'O'))
        return "void/string/object arrays are not supported";
    return "unsupported dtype";
}

/* ---------- header parser ---------- */

typedef struct hparser {
    const char *s, *end;
    const char *path;
    char *err;
    size_t errlen;
} hparser;

static void skip_ws(hparser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static bool peek(hparser *p, char c) {
    skip_ws(p);
    return p->s < p->end && *p->s == c;
}

static bool accept(hparser *p, char c) {
    if (peek(p, c)) { p->s++; return true; }
    return false;
}

/* A short, printable view of where parsing stopped, for messages. */
static const char *near(hparser *p, char *buf, size_t n) {
    size_t k = 0;
    if (p->s >= p->end) return "end of header";
    for (const char *q = p->s; q < p->end && k + 1 < n && k < 20; q++)
        buf[k++] = (*q >= 32 && *q < 127) ? *q : '?';
    buf[k] = 0;
    return buf;
}

static int perr(hparser *p, const char *what) {
    char b[32];
    skip_ws(p);
    return fail(p->err, p->errlen, p->path, "malformed .npy header: %s near '%s'", what, near(p, b, sizeof b));
}

/* A Python string literal, '...' or "...", without escapes (NumPy never writes them). */
static int parse_str(hparser *p, char *out, size_t outlen) {
    skip_ws(p);
    if (p->s >= p->end || (*p->s != '\'' && *p->s != '"')) return perr(p, "expected a quoted string");
    char q = *p->s++;
    size_t k = 0;
    while (p->s < p->end && *p->s != q) {
        if (*p->s == '\\' || *p->s == '\n') return perr(p, "unsupported character in string");
        if (k + 1 >= outlen) return perr(p, "string too long");
        out[k++] = *p->s++;
    }
    if (p->s >= p->end) return perr(p, "unterminated string");
    p->s++;
    out[k] = 0;
    return 0;
}

static bool match_word(hparser *p, const char *w) {
    skip_ws(p);
    size_t n = strlen(w);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, w, n) != 0) return false;
    const char *after = p->s + n;
    if (after < p->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
        return false;
    p->s = after;
    return true;
}

static int parse_shape(hparser *p, int *rank, int64_t *shape) {
    if (!accept(p, '(')) {
        if (peek(p, '[')) return perr(p, "shape must be a tuple");
        return perr(p, "expected '(' to start the shape");
    }
    int r = 0;
    while (!accept(p, ')')) {
        skip_ws(p);
        if (p->s >= p->end) return perr(p, "unterminated shape");
        if (*p->s == '-') return perr(p, "negative dimension in shape");
        if (*p->s < '0' || *p->s > '9') return perr(p, "expected a dimension (non-negative integer)");
        int64_t v = 0;
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
            if (v > (INT64_MAX - 9) / 10) return perr(p, "dimension too large");
            v = v * 10 + (*p->s++ - '0');
        }
        if (p->s < p->end && (*p->s == 'L' || *p->s == 'l')) p->s++; /* Python 2 long suffix */
        if (r >= NPY_MAX_RANK)
            return fail(p->err, p->errlen, p->path, "array rank exceeds the supported maximum of %d",
                        NPY_MAX_RANK);
        shape[r++] = v;
        if (accept(p, ',')) continue;
        if (!peek(p, ')')) return perr(p, "expected ',' or ')' in shape");
    }
    *rank = r;
    return 0;
}

typedef struct npy_header {
    char descr[16];
    bool fortran_order;
    int rank;
    int64_t shape[NPY_MAX_RANK];
} npy_header;

static int parse_header(hparser *p, npy_header *h) {
    bool have_descr = false, have_fo = false, have_shape = false;
    if (!accept(p, '{')) return perr(p, "expected '{'");
    while (!accept(p, '}')) {
        char key[32];
        if (parse_str(p, key, sizeof key)) return -1;
        if (!accept(p, ':')) return perr(p, "expected ':' after key");
        if (strcmp(key, "descr") == 0) {
            if (have_descr) return perr(p, "duplicate key 'descr'");
            skip_ws(p);
            if (peek(p, '[')) return fail(p->err, p->errlen, p->path, "structured (record) dtypes are not supported");
            char d[64];
            if (parse_str(p, d, sizeof d)) return -1;
            if (strlen(d) >= sizeof h->descr)
                return fail(p->err, p->errlen, p->path, "unsupported dtype '%s'", d);
            strcpy(h->descr, d);
            have_descr = true;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fo) return perr(p, "duplicate key 'fortran_order'");
            if (match_word(p, "True")) h->fortran_order = true;
            else if (match_word(p, "False")) h->fortran_order = false;
            else return perr(p, "fortran_order must be True or False");
            have_fo = true;
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape) return perr(p, "duplicate key 'shape'");
            if (parse_shape(p, &h->rank, h->shape)) return -1;
            have_shape = true;
        } else {
            return fail(p->err, p->errlen, p->path, "malformed .npy header: unexpected key '%s'", key);
        }
        if (accept(p, ',')) continue;
        if (!peek(p, '}')) return perr(p, "expected ',' or '}'");
    }
    skip_ws(p);
    if (p->s != p->end) return perr(p, "unexpected text after the header dict");
    if (!have_descr) return fail(p->err, p->errlen, p->path, "malformed .npy header: missing key 'descr'");
    if (!have_fo) return fail(p->err, p->errlen, p->path, "malformed .npy header: missing key 'fortran_order'");
    if (!have_shape) return fail(p->err, p->errlen, p->path, "malformed .npy header: missing key 'shape'");
    return 0;
}

/* ---------- read ---------- */

static int read_exact(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n ? 0 : -1; }

int tile_npy_read(const char *path, tile_npy *out, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!out) return fail(err, errlen, path, "no output given");
    memset(out, 0, sizeof *out);
    if (!path) return fail(err, errlen, path, "no file name given");

    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, errlen, path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        int e = errno;
        fclose(f);
        return fail(err, errlen, path, "cannot stat: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) { fclose(f); return fail(err, errlen, path, "not a regular file"); }
    uint64_t fsize = (uint64_t)st.st_size;

    unsigned char pre[12];
    if (fsize < 10 || read_exact(f, pre, 10)) {
        fclose(f);
        return fail(err, errlen, path, "not a .npy file (too short: %llu bytes)", (unsigned long long)fsize);
    }
    if (memcmp(pre, "\x93NUMPY", 6) != 0) {
        fclose(f);
        return fail(err, errlen, path, "not a .npy file (bad magic; expected \\x93NUMPY)");
    }
    int major = pre[6], minor = pre[7];
    uint64_t hlen, hstart;
    if (major == 1) {
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (fsize < 12 || read_exact(f, pre + 10, 2)) {
            fclose(f);
            return fail(err, errlen, path, "truncated .npy preamble");
        }
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
        hstart = 12;
    } else {
        fclose(f);
        return fail(err, errlen, path, "unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)",
                    major, minor);
    }
    if (minor != 0) {
        fclose(f);
        return fail(err, errlen, path, "unsupported .npy format version %d.%d (supported: 1.0, 2.0, 3.0)",
                    major, minor);
    }
    if (hlen > fsize - hstart) {
        fclose(f);
        return fail(err, errlen, path, "truncated: header length %llu exceeds the file size %llu",
                    (unsigned long long)hlen, (unsigned long long)fsize);
    }
    if (hlen > (1u << 24)) {
        fclose(f);
        return fail(err, errlen, path, "header length %llu is implausibly large", (unsigned long long)hlen);
    }
    char *htext = tile_xmalloc((size_t)hlen + 1);
    if (read_exact(f, htext, (size_t)hlen)) {
        int e = errno;
        bool ioerr = ferror(f) != 0;
        free(htext);
        fclose(f);
        return fail(err, errlen, path, "cannot read header: %s", ioerr ? strerror(e) : "unexpected end of file");
    }
    htext[hlen] = 0;
    if (memchr(htext, 0, (size_t)hlen)) {
        free(htext);
        fclose(f);
        return fail(err, errlen, path, "malformed .npy header: contains a NUL byte");
    }

    npy_header h;
    memset(&h, 0, sizeof h);
    hparser p = {htext, htext + hlen, path, err, errlen};
    int rc = parse_header(&p, &h);
    free(htext);
    if (rc) { fclose(f); return -1; }

    int di = descr_index(h.descr);
    if (di < 0) {
        fclose(f);
        return fail(err, errlen, path, "dtype '%s': %s", h.descr, descr_problem(h.descr));
    }
    if (h.fortran_order) {
        fclose(f);
        return fail(err, errlen, path, "fortran_order is True (column-major data) and only C order is "
                                       "supported; save it with np.ascontiguousarray(a)");
    }

    size_t elem = k_descrs[di].size;
    uint64_t count = 1;
    for (int i = 0; i < h.rank; i++) {
        uint64_t d = (uint64_t)h.shape[i];
        if (d != 0 && count > UINT64_MAX / d) {
            fclose(f);
            return fail(err, errlen, path, "shape is too large (element count overflows)");
        }
        count *= d;
    }
    uint64_t avail = fsize - hstart - hlen;
    if (count > avail / elem) {
        fclose(f);
        return fail(err, errlen, path, "truncated: the shape needs %llu elements of %zu bytes but the file "
                    "holds %llu data bytes", (unsigned long long)count, elem, (unsigned long long)avail);
    }
    uint64_t nbytes = count * elem;
    if (nbytes != avail) {
        fclose(f);
        return fail(err, errlen, path, "%llu unexpected bytes after the data (shape needs %llu bytes)",
                    (unsigned long long)(avail - nbytes), (unsigned long long)nbytes);
    }
    if (nbytes > SIZE_MAX) { fclose(f); return fail(err, errlen, path, "array too large for this machine"); }

    void *data = tile_xmalloc((size_t)nbytes);
    if (nbytes && read_exact(f, data, (size_t)nbytes)) {
        int e = errno;
        bool ioerr = ferror(f) != 0;
        free(data);
        fclose(f);
        return fail(err, errlen, path, "cannot read data: %s", ioerr ? strerror(e) : "unexpected end of file");
    }
    fclose(f);

    strcpy(out->descr, k_descrs[di].descr);
    out->rank = h.rank;
    for (int i = 0; i < h.rank; i++) out->shape[i] = h.shape[i];
    out->fortran_order = false;
    out->elem_size = elem;
    out->count = (size_t)count;
    out->data = data;
    return 0;
}

void tile_npy_free(tile_npy *n) {
    if (!n) return;
    free(n->data);
    n->data = NULL;
    n->count = 0;
}

/* ---------- write ---------- */

int tile_npy_write(const char *path, const char *descr, int rank, const int64_t *shape,
                   const void *data, size_t elem_size, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!path) return fail(err, errlen, path, "no file name given");
    int di = descr_index(descr);
    if (di < 0) return fail(err, errlen, path, "cannot write dtype '%s': not a supported .npy descr",
                            descr ? descr : "(null)");
    if (elem_size != k_descrs[di].size)
        return fail(err, errlen, path, "element size %zu does not match descr '%s' (%zu bytes)",
                    elem_size, descr, k_descrs[di].size);
    if (rank < 0 || rank > NPY_MAX_RANK)
        return fail(err, errlen, path, "rank %d is out of range 0..%d", rank, NPY_MAX_RANK);
    if (rank > 0 && !shape) return fail(err, errlen, path, "no shape given for rank %d", rank);

    uint64_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return fail(err, errlen, path, "negative dimension %lld", (long long)shape[i]);
        uint64_t d = (uint64_t)shape[i];
        if (d != 0 && count > UINT64_MAX / d) return fail(err, errlen, path, "shape too large");
        count *= d;
    }
    if (count > SIZE_MAX / elem_size) return fail(err, errlen, path, "shape too large");
    size_t nbytes = (size_t)count * elem_size;
    if (nbytes && !data) return fail(err, errlen, path, "no data given");

    /* the header dict, the way NumPy writes it */
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", k_descrs[di].descr);
    for (int i = 0; i < rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, i ? ", %lld" : "%lld", (long long)shape[i]);
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%s), }", rank == 1 ? "," : "");
    /* pad with spaces so that preamble + header is a multiple of 64, ending in '\n' */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    if (hlen > 65535) return fail(err, errlen, path, "header too long");

    unsigned char *buf = tile_xmalloc(padded);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen & 0xFF);
    buf[9] = (unsigned char)(hlen >> 8);
    memcpy(buf + 10, hdr, (size_t)n);
    memset(buf + 10 + n, ' ', hlen - (size_t)n - 1);
    buf[padded - 1] = '\n';

    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return fail(err, errlen, path, "cannot create: %s", strerror(errno));
    }
    bool ok = fwrite(buf, 1, padded, f) == padded;
    free(buf);
    if (ok && nbytes) ok = fwrite(data, 1, nbytes, f) == nbytes;
    int e = errno;
    if (fclose(f) != 0 && ok) { ok = false; e = errno; }
    if (!ok) {
        remove(path);
        return fail(err, errlen, path, "write failed: %s", strerror(e));
    }
    return 0;
}
