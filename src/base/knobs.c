/* knobs.c — the knob registry and the per-kernel options (base.h, knob_list.h).
 *
 * Every read goes to the environment (getenv), because tests and benchmarks change variables
 * between calls; the parsed value is kept per knob together with the raw string it came
 * from, so that a bad value is warned about, and a non-default one logged at info, once per
 * value. Messages are written after the registry's lock is released: writing them reads
 * TILE_LOG / TLINK_DEBUG through this same registry.
 */
#define _GNU_SOURCE
#include "base.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static const tb_knob_info k_info[TB_K_COUNT] = {
#define X(name, type, dflt, lo, hi, values, lib, flags, doc) {#name, TB_KT_##type, dflt, lo, hi, values, TB_KL_##lib, flags, doc},
    TB_KNOBS(X)
#undef X
};

const tb_knob_info *tb_knob_get_info(tb_knob k) { return (unsigned)k < TB_K_COUNT ? &k_info[k] : NULL; }

const char *tb_knob_type_name(tb_knob_type t) {
    static const char *const n[] = {"bool", "int", "size", "float", "string", "enum"};
    return (unsigned)t < sizeof n / sizeof n[0] ? n[t] : "?";
}
const char *tb_knob_lib_name(tb_knob_lib l) {
    static const char *const n[] = {"libtile", "libtilelink", "both", "tile launch", "tests", "foreign"};
    return (unsigned)l < sizeof n / sizeof n[0] ? n[l] : "?";
}

int tb_knob_find(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TB_K_COUNT; i++)
        if (!strcmp(k_info[i].name, name)) return i;
    return -1;
}

/* ---------- parsing ---------- */
typedef struct kval {
    bool ok;        /* a valid value */
    long long i;    /* BOOL, INT, SIZE, ENUM index */
    double f;       /* FLOAT (and the integers, as doubles) */
    const char *s;  /* STR: the value; ENUM: the canonical name */
} kval;

/* ENUM: the index of `s` among values ("a,syn|b|c"), or -1; *canon (optional) = the first
 * synonym of that value, copied into canon_buf. */
static int enum_index(const char *values, const char *s, char *canon, size_t canon_n) {
    int idx = 0;
    const char *p = values;
    while (p && *p) {
        const char *end = p + strcspn(p, "|");
        const char *q = p;
        bool first = true;
        while (q < end) {
            size_t n = strcspn(q, ",|");
            if (q + n > end) n = (size_t)(end - q);
            if (first && canon && canon_n) {
                size_t c = n < canon_n - 1 ? n : canon_n - 1;
                memcpy(canon, q, c);
                canon[c] = 0;
            }
            first = false;
            if (s && strlen(s) == n && !strncasecmp(s, q, n)) return idx;
            q += n;
            if (q < end && *q == ',') q++;
        }
        idx++;
        p = *end ? end + 1 : end;
    }
    return -1;
}

/* The canonical name of ENUM value idx (kept for the process). */
static const char *enum_name(tb_knob k, int idx) {
    static char *names[TB_K_COUNT][16];
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    if (idx < 0 || idx >= 16) return "?";
    pthread_mutex_lock(&mu);
    if (!names[k][idx]) {
        const char *p = k_info[k].values;
        for (int i = 0; i < idx && p && *p; i++) {
            p = strchr(p, '|');
            p = p ? p + 1 : NULL;
        }
        size_t n = p ? strcspn(p, ",|") : 1;
        char *c = malloc(n + 1);
        if (c) {
            if (p) memcpy(c, p, n);
            else c[0] = '?';
            c[n] = 0;
        }
        names[k][idx] = c;
    }
    const char *r = names[k][idx] ? names[k][idx] : "?";
    pthread_mutex_unlock(&mu);
    return r;
}

static void range_text(const tb_knob_info *in, char *buf, size_t n) {
    bool integer = in->type != TB_KT_FLOAT;
    if (in->hi >= TB_SIZE_MAX_) snprintf(buf, n, integer ? "at least %.0f" : "at least %g", in->lo);
    else snprintf(buf, n, integer ? "%.0f..%.0f" : "%g..%g", in->lo, in->hi);
}

/* What the type accepts, for messages and the table. */
static void accepted_text(const tb_knob_info *in, char *buf, size_t n) {
    char r[96];
    switch (in->type) {
    case TB_KT_BOOL: snprintf(buf, n, "1/0, true/false, on/off, yes/no"); break;
    case TB_KT_INT: range_text(in, r, sizeof r); snprintf(buf, n, "an integer, %s", r); break;
    case TB_KT_SIZE: range_text(in, r, sizeof r); snprintf(buf, n, "a byte count (k/M/G suffixes), %s", r); break;
    case TB_KT_FLOAT: range_text(in, r, sizeof r); snprintf(buf, n, "a number, %s", r); break;
    case TB_KT_ENUM: {
        size_t o = 0;
        buf[0] = 0;
        for (const char *p = in->values; p && *p && o + 4 < n;) {
            size_t len = strcspn(p, "|");
            int w = snprintf(buf + o, n - o, "%s%.*s", o ? ", " : "", (int)len, p);
            if (w < 0) break;
            o += (size_t)w < n - o ? (size_t)w : n - o - 1;
            p += len;
            if (*p == '|') p++;
        }
        break;
    }
    default: snprintf(buf, n, "any text"); break;
    }
}

static bool parse_ll(const char *s, long long *out) {
    errno = 0;
    char *end;
    long long v;
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) v = strtoll(s, &end, 16);
    else v = strtoll(s, &end, 10);
    if (end == s || *end || errno) return false;
    *out = v;
    return true;
}

/* Parse s as knob k's type; false with nothing set when it does not parse or is out of range. */
static bool parse_value(const tb_knob_info *in, tb_knob k, const char *s, kval *v) {
    memset(v, 0, sizeof *v);
    switch (in->type) {
    case TB_KT_BOOL: {
        static const char *const t[] = {"1", "true", "on", "yes"}, *const f[] = {"0", "false", "off", "no"};
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(s, t[i])) { v->i = 1; v->f = 1; v->ok = true; return true; }
            if (!strcasecmp(s, f[i])) { v->ok = true; return true; }
        }
        return false;
    }
    case TB_KT_INT: {
        long long x;
        if (!parse_ll(s, &x) || (double)x < in->lo || (double)x > in->hi) return false;
        v->i = x;
        v->f = (double)x;
        v->ok = true;
        return true;
    }
    case TB_KT_SIZE: {
        long long x;
        if (!parse_ll(s, &x)) {
            errno = 0;
            char *end;
            double d = strtod(s, &end);
            if (end == s || errno || !isfinite(d)) return false;
            double mul = 1;
            if (*end == 'k' || *end == 'K') mul = 1024.0, end++;
            else if (*end == 'm' || *end == 'M') mul = 1024.0 * 1024, end++;
            else if (*end == 'g' || *end == 'G') mul = 1024.0 * 1024 * 1024, end++;
            if (*end) return false;
            d *= mul;
            if (d < in->lo || d > in->hi) return false;
            x = (long long)d;
        } else if ((double)x < in->lo || (double)x > in->hi) {
            return false;
        }
        v->i = x;
        v->f = (double)x;
        v->ok = true;
        return true;
    }
    case TB_KT_FLOAT: {
        errno = 0;
        char *end;
        double d = strtod(s, &end);
        if (end == s || *end || errno || !isfinite(d) || d < in->lo || d > in->hi) return false;
        v->f = d;
        v->i = (long long)d;
        v->ok = true;
        return true;
    }
    case TB_KT_ENUM: {
        int idx = enum_index(in->values, s, NULL, 0);
        if (idx < 0) return false;
        v->i = idx;
        v->f = idx;
        v->s = enum_name(k, idx);
        v->ok = true;
        return true;
    }
    default:
        v->s = s;
        v->ok = true;
        return true;
    }
}

/* ---------- the state ---------- */
typedef struct kstate {
    bool seen;   /* raw / v describe the last read */
    char *raw;   /* the raw value of the last read (NULL: unset); kept for the process */
    kval v;      /* its parse (v.ok false: not set or invalid) */
} kstate;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static kstate g_state[TB_K_COUNT];
static kval g_dflt[TB_K_COUNT];
static pthread_once_t g_dflt_once = PTHREAD_ONCE_INIT;

static void dflt_init(void) {
    for (int k = 0; k < TB_K_COUNT; k++) {
        const tb_knob_info *in = &k_info[k];
        if (in->dflt && in->dflt[0]) parse_value(in, (tb_knob)k, in->dflt, &g_dflt[k]);
        if (in->type == TB_KT_STR && in->dflt && in->dflt[0]) g_dflt[k].s = in->dflt;
    }
}

static tb_log_channel channel_of(const tb_knob_info *in) {
    return in->lib == TB_KL_TLINK || !strncmp(in->name, "TLINK_", 6) ? TB_CH_TLINK : TB_CH_TILE;
}

static bool same_value(const tb_knob_info *in, const kval *a, const kval *b) {
    if (!a->ok || !b->ok) return false;
    switch (in->type) {
    case TB_KT_FLOAT: return a->f == b->f;
    case TB_KT_STR: return a->s && b->s && !strcmp(a->s, b->s);
    default: return a->i == b->i;
    }
}

/* The value of knob k now; *out. */
static void knob_read(tb_knob k, kval *out) {
    if ((unsigned)k >= TB_K_COUNT) {
        memset(out, 0, sizeof *out);
        return;
    }
    pthread_once(&g_dflt_once, dflt_init);
    const tb_knob_info *in = &k_info[k];
    if (in->lib != TB_KL_FOREIGN) tb_knobs_check_environment();
    const char *raw = getenv(in->name);
    if (raw && !*raw) raw = NULL;
    char msg[768] = "";
    int level = TB_LOG_INFO;
    pthread_mutex_lock(&g_mu);
    kstate *st = &g_state[k];
    bool same = st->seen && ((!raw && !st->raw) || (raw && st->raw && !strcmp(raw, st->raw)));
    if (!same) {
        char *copy = raw ? strdup(raw) : NULL;
        kval v = {0};
        if (copy && !parse_value(in, k, copy, &v)) {
            char acc[512], d[128];
            accepted_text(in, acc, sizeof acc);
            if (in->dflt && in->dflt[0]) snprintf(d, sizeof d, "the default %s", in->dflt);
            else snprintf(d, sizeof d, "the default (automatic)");
            snprintf(msg, sizeof msg, "%s=%s is not valid (accepted: %s); using %s", in->name, copy, acc, d);
            level = TB_LOG_WARN;
        } else if (copy && in->lib != TB_KL_FOREIGN && !same_value(in, &v, &g_dflt[k])) {
            snprintf(msg, sizeof msg, "%s=%s (default: %s)", in->name, copy, in->dflt && in->dflt[0] ? in->dflt : "automatic");
        }
        st->seen = true;
        st->raw = copy; /* the previous one stays allocated: tb_knob_str returned it */
        st->v = v;
    }
    *out = st->v;
    pthread_mutex_unlock(&g_mu);
    if (msg[0] && in->lib != TB_KL_FOREIGN) tb_log(channel_of(in), level, "%s", msg);
}

bool tb_knob_is_set(tb_knob k) {
    kval v;
    knob_read(k, &v);
    return v.ok;
}

long long tb_knob_int(tb_knob k) {
    kval v;
    knob_read(k, &v);
    if (v.ok) return v.i;
    return (unsigned)k < TB_K_COUNT ? g_dflt[k].i : 0;
}
long long tb_knob_int_or(tb_knob k, long long dflt) {
    kval v;
    knob_read(k, &v);
    return v.ok ? v.i : dflt;
}
bool tb_knob_bool(tb_knob k) { return tb_knob_int(k) != 0; }
double tb_knob_float(tb_knob k) {
    kval v;
    knob_read(k, &v);
    if (v.ok) return v.f;
    return (unsigned)k < TB_K_COUNT ? g_dflt[k].f : 0;
}
double tb_knob_float_or(tb_knob k, double dflt) {
    kval v;
    knob_read(k, &v);
    return v.ok ? v.f : dflt;
}
const char *tb_knob_str(tb_knob k) {
    kval v;
    knob_read(k, &v);
    if ((unsigned)k >= TB_K_COUNT) return NULL;
    if (k_info[k].type == TB_KT_ENUM) {
        if (v.ok) return v.s;
        return g_dflt[k].ok ? g_dflt[k].s : NULL;
    }
    if (v.ok) return v.s;
    return g_dflt[k].s;
}
const char *tb_env_raw(tb_knob k) {
    if ((unsigned)k >= TB_K_COUNT) return NULL;
    const char *v = getenv(k_info[k].name);
    return v && *v ? v : NULL;
}

/* ---------- unknown variables ---------- */
int tb_edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 127) n = 127;
    if (m > 127) m = 127;
    int row[128];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[m];
}

static _Atomic int g_env_checked;

void tb_knobs_check_environment(void) {
    if (atomic_exchange(&g_env_checked, 1)) return;
    for (char **e = environ; e && *e; e++) {
        const char *s = *e;
        bool tile = !strncmp(s, "TILE_", 5), tlink = !strncmp(s, "TLINK_", 6);
        if (!tile && !tlink) continue;
        char name[128];
        size_t n = strcspn(s, "=");
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, s, n);
        name[n] = 0;
        if (tb_knob_find(name) >= 0) continue;
        int best = -1, bd = 1 << 30;
        for (int k = 0; k < TB_K_COUNT; k++) {
            if (k_info[k].lib == TB_KL_FOREIGN) continue;
            int d = tb_edit_distance(name, k_info[k].name);
            if (d < bd) bd = d, best = k;
        }
        tb_log(tlink ? TB_CH_TLINK : TB_CH_TILE, TB_LOG_WARN,
               "unknown environment variable %s (the nearest known one is %s; `tile env` lists them all)", name,
               best >= 0 ? k_info[best].name : "?");
    }
}

/* ---------- describing the table ---------- */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;
static void sb_printf(sbuf *b, const char *fmt, ...) TB_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n > 0) {
        if (b->len + (size_t)n + 1 > b->cap) {
            size_t cap = b->cap ? b->cap : 4096;
            while (b->len + (size_t)n + 1 > cap) cap *= 2;
            char *q = realloc(b->p, cap);
            if (!q) {
                va_end(ap);
                return;
            }
            b->p = q;
            b->cap = cap;
        }
        vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        b->len += (size_t)n;
    }
    va_end(ap);
}
static char *sb_take(sbuf *b) {
    if (!b->p) return strdup("");
    return b->p;
}

/* The default as the table shows it. */
static const char *dflt_text(const tb_knob_info *in) {
    if (in->dflt && in->dflt[0]) return in->dflt;
    return in->type == TB_KT_STR ? "(none)" : "(automatic)";
}

/* The option name of knob k, or NULL. */
static const char *option_of(tb_knob k);

/* markdown: a table cell (| escaped) */
static void md_cell(sbuf *b, const char *s) {
    sb_printf(b, " ");
    for (; s && *s; s++) {
        if (*s == '|') sb_printf(b, "\\|");
        else sb_printf(b, "%c", *s);
    }
    sb_printf(b, " |");
}

static const struct {
    tb_knob_lib lib;
    const char *title;
} k_sections[] = {
    {TB_KL_TILE, "libtile and the tile CLI"},
    {TB_KL_BOTH, "both libraries"},
    {TB_KL_TLINK, "libtilelink"},
    {TB_KL_LAUNCH, "set by `tile launch` for the programs it starts"},
    {TB_KL_TEST, "read by the test suite"},
    {TB_KL_FOREIGN, "other software's variables that Tile reads (not checked)"},
};

char *tb_knobs_describe(bool markdown) {
    sbuf b = {0};
    pthread_once(&g_dflt_once, dflt_init);
    if (markdown) {
        sb_printf(&b,
                  "# Environment variables and per-kernel options\n\n"
                  "Generated from `src/base/knob_list.h` by `tile env --markdown`; do not edit. Regenerate with\n"
                  "`./build/bin/tile env --markdown > docs/knobs.md` (the ctest `checks.knobs_doc` fails when this\n"
                  "page is stale). `tile env` prints the same table with the values in effect.\n\n"
                  "Rules (src/base/knobs.c): an empty value counts as unset; a value that does not parse or lies\n"
                  "outside its range is a warning naming the variable and the accepted values, and the default\n"
                  "is used; a value different from the default is logged at `TILE_LOG=info` (libtile) or\n"
                  "`TLINK_DEBUG=info` (libtilelink); an unknown `TILE_*` or `TLINK_*` variable is warned about\n"
                  "once per process, with the nearest known name. Variables are read when used, so a program\n"
                  "may change them between calls.\n\n"
                  "Types: bool (`1/0`, `true/false`, `on/off`, `yes/no`), int (decimal or `0x` hex), size (an\n"
                  "int, or a decimal with a `k`/`M`/`G` suffix: bytes), float, string, enum (one of the values\n"
                  "listed; synonyms after commas). \"compile\": the value changes the generated code or its\n"
                  "compilation; those marked with an option name are also per-kernel options (below).\n");
        for (size_t s = 0; s < sizeof k_sections / sizeof k_sections[0]; s++) {
            sb_printf(&b, "\n## %s\n\n| variable | type | default | accepted | what it does |\n|---|---|---|---|---|\n",
                      k_sections[s].title);
            for (int k = 0; k < TB_K_COUNT; k++) {
                const tb_knob_info *in = &k_info[k];
                if (in->lib != k_sections[s].lib) continue;
                char acc[512], name[160], doc[1024];
                accepted_text(in, acc, sizeof acc);
                snprintf(name, sizeof name, "`%s`", in->name);
                const char *opt = option_of((tb_knob)k);
                if (opt) snprintf(doc, sizeof doc, "%s (compile; option `%s`)", in->doc, opt);
                else if (in->flags & TB_KF_COMPILE) snprintf(doc, sizeof doc, "%s (compile)", in->doc);
                else snprintf(doc, sizeof doc, "%s", in->doc);
                sb_printf(&b, "|");
                md_cell(&b, name);
                md_cell(&b, tb_knob_type_name(in->type));
                md_cell(&b, dflt_text(in));
                md_cell(&b, acc);
                md_cell(&b, doc);
                sb_printf(&b, "\n");
            }
        }
        sb_printf(&b,
                  "\n## Per-kernel options\n\n"
                  "Set for a module with `tile_module_set_option(m, NAME, VALUE, &error)` (include/tile.h) or\n"
                  "`--option NAME=VALUE` of `tile run / ir / emit / check`; unset, an option takes the value of its\n"
                  "environment variable. The effective values of all options enter the compile cache keys (CPU\n"
                  "shared objects, CUDA cubins, OpenCL binaries). TileLang's `pass_configs` keys map onto them as\n"
                  "the last column says.\n\n"
                  "| option | variable | type | default | TileLang |\n|---|---|---|---|---|\n");
        for (int o = 0; o < TB_OPT_COUNT; o++) {
            const tb_knob_info *in = &k_info[tb_option_knob((tb_option)o)];
            char name[96], var[96];
            snprintf(name, sizeof name, "`%s`", tb_option_name((tb_option)o));
            snprintf(var, sizeof var, "`%s`", in->name);
            sb_printf(&b, "|");
            md_cell(&b, name);
            md_cell(&b, var);
            md_cell(&b, tb_knob_type_name(in->type));
            md_cell(&b, dflt_text(in));
            md_cell(&b, tb_option_doc((tb_option)o));
            sb_printf(&b, "\n");
        }
        return sb_take(&b);
    }
    size_t w = 0;
    for (int k = 0; k < TB_K_COUNT; k++)
        if (strlen(k_info[k].name) > w) w = strlen(k_info[k].name);
    for (size_t s = 0; s < sizeof k_sections / sizeof k_sections[0]; s++) {
        sb_printf(&b, "%s# %s\n", s ? "\n" : "", k_sections[s].title);
        for (int k = 0; k < TB_K_COUNT; k++) {
            const tb_knob_info *in = &k_info[k];
            if (in->lib != k_sections[s].lib) continue;
            const char *raw = getenv(in->name);
            if (raw && !*raw) raw = NULL;
            char acc[512];
            accepted_text(in, acc, sizeof acc);
            const char *opt = option_of((tb_knob)k);
            sb_printf(&b, "%-*s = %s\n    %s; default %s; %s%s%s%s\n    %s\n", (int)w, in->name, raw ? raw : "(unset)",
                      tb_knob_type_name(in->type), dflt_text(in), acc,
                      (in->flags & TB_KF_COMPILE) ? "; compile" : "", opt ? "; option " : "", opt ? opt : "", in->doc);
        }
    }
    return sb_take(&b);
}

/* ---------- per-kernel options ---------- */
static const struct {
    const char *name;
    tb_knob knob;
    const char *doc;
} k_opts[TB_OPT_COUNT] = {
#define X(name, knob, doc) {#name, TB_K_##knob, doc},
    TB_OPTIONS(X)
#undef X
};
_Static_assert(TB_OPT_COUNT <= 64, "tb_options.set is a 64-bit mask");

static const char *option_of(tb_knob k) {
    for (int o = 0; o < TB_OPT_COUNT; o++)
        if (k_opts[o].knob == k) return k_opts[o].name;
    return NULL;
}

const char *tb_option_name(tb_option o) { return (unsigned)o < TB_OPT_COUNT ? k_opts[o].name : "?"; }
tb_knob tb_option_knob(tb_option o) { return (unsigned)o < TB_OPT_COUNT ? k_opts[o].knob : TB_K_COUNT; }
const char *tb_option_doc(tb_option o) { return (unsigned)o < TB_OPT_COUNT ? k_opts[o].doc : ""; }
int tb_option_find(const char *name) {
    if (!name) return -1;
    for (int o = 0; o < TB_OPT_COUNT; o++)
        if (!strcmp(k_opts[o].name, name)) return o;
    return -1;
}

int tb_options_set(tb_options *o, const char *name, const char *value, char *err, size_t errlen) {
    int id = tb_option_find(name);
    if (id < 0) {
        size_t off = (size_t)snprintf(err, errlen, "unknown option '%s' (options: ", name ? name : "(null)");
        for (int i = 0; i < TB_OPT_COUNT && off < errlen; i++)
            off += (size_t)snprintf(err + off, errlen - off, "%s%s", i ? ", " : "", k_opts[i].name);
        if (off < errlen) snprintf(err + off, errlen - off, ")");
        return -1;
    }
    const tb_knob_info *in = &k_info[k_opts[id].knob];
    kval v;
    if (!value || !parse_value(in, k_opts[id].knob, value, &v)) {
        char acc[512];
        accepted_text(in, acc, sizeof acc);
        snprintf(err, errlen, "option %s: '%s' is not valid (accepted: %s)", name, value ? value : "(null)", acc);
        return -1;
    }
    free(o->sval[id]);
    o->sval[id] = NULL;
    o->ival[id] = v.i;
    if (in->type == TB_KT_STR) o->sval[id] = strdup(value);
    o->set |= (uint64_t)1 << id;
    return 0;
}

void tb_options_free(tb_options *o) {
    if (!o) return;
    for (int i = 0; i < TB_OPT_COUNT; i++) free(o->sval[i]);
    memset(o, 0, sizeof *o);
}

static bool opt_is_set(const tb_options *o, tb_option id) {
    return o && (unsigned)id < TB_OPT_COUNT && (o->set >> id) & 1;
}
long long tb_opt_int(const tb_options *o, tb_option id) {
    if (opt_is_set(o, id)) return o->ival[id];
    return tb_knob_int(tb_option_knob(id));
}
bool tb_opt_bool(const tb_options *o, tb_option id) { return tb_opt_int(o, id) != 0; }
const char *tb_opt_str(const tb_options *o, tb_option id) {
    const char *s;
    if (opt_is_set(o, id)) {
        const tb_knob_info *in = &k_info[k_opts[id].knob];
        s = in->type == TB_KT_ENUM ? enum_name(k_opts[id].knob, (int)o->ival[id]) : o->sval[id];
    } else {
        s = tb_knob_str(tb_option_knob(id));
    }
    return s && *s ? s : NULL;
}

static void opt_value_text(const tb_options *o, int i, char *buf, size_t n) {
    const tb_knob_info *in = &k_info[k_opts[i].knob];
    if (in->type == TB_KT_STR || in->type == TB_KT_ENUM) {
        const char *s = tb_opt_str(o, (tb_option)i);
        snprintf(buf, n, "%s", s ? s : "");
    } else {
        snprintf(buf, n, "%lld", tb_opt_int(o, (tb_option)i));
    }
}

char *tb_options_key(const tb_options *o) {
    sbuf b = {0};
    for (int i = 0; i < TB_OPT_COUNT; i++) {
        char v[1024];
        opt_value_text(o, i, v, sizeof v);
        sb_printf(&b, "%s=%s;", k_opts[i].name, v);
    }
    return sb_take(&b);
}

char *tb_options_describe(const tb_options *o) {
    sbuf b = {0};
    pthread_once(&g_dflt_once, dflt_init);
    size_t w = 0;
    for (int i = 0; i < TB_OPT_COUNT; i++)
        if (strlen(k_opts[i].name) > w) w = strlen(k_opts[i].name);
    for (int i = 0; i < TB_OPT_COUNT; i++) {
        const tb_knob_info *in = &k_info[k_opts[i].knob];
        char v[1024], acc[512];
        opt_value_text(o, i, v, sizeof v);
        accepted_text(in, acc, sizeof acc);
        sb_printf(&b, "%-*s = %s%s\n    %s (%s); default %s, from %s%s%s\n    %s\n", (int)w, k_opts[i].name, v,
                  opt_is_set(o, (tb_option)i) ? " (set)" : tb_knob_is_set(k_opts[i].knob) ? " (environment)" : "",
                  tb_knob_type_name(in->type), acc, dflt_text(in), in->name,
                  k_opts[i].doc[0] ? "; " : "", k_opts[i].doc, in->doc);
    }
    return sb_take(&b);
}

void tb_options_merge(tb_options *dst, const tb_options *src) {
    if (!src) return;
    for (int i = 0; i < TB_OPT_COUNT; i++) {
        if (!((src->set >> i) & 1)) continue;
        free(dst->sval[i]);
        dst->sval[i] = src->sval[i] ? strdup(src->sval[i]) : NULL;
        dst->ival[i] = src->ival[i];
        dst->set |= (uint64_t)1 << i;
    }
}

/* TileLang's pass_configs keys (PassConfigKey's name or its string) and the options they set;
 * `invert`: the key disables what the option enables. A key may set several options. */
static const struct {
    const char *key, *str;
    tb_option opt;
    bool invert;
} k_pass_configs[] = {
    {"TL_ENABLE_FAST_MATH", "tl.enable_fast_math", TB_OPT_fast_math, false},
    {"TL_DISABLE_FAST_MATH", "tl.disable_fast_math", TB_OPT_fast_math, true},
    {"TL_DISABLE_TMA_LOWER", "tl.disable_tma_lower", TB_OPT_sm90_tma_store, true},
    {"TL_DISABLE_TMA_LOWER", "tl.disable_tma_lower", TB_OPT_sm90_attn_tma, true},
    {"TL_DISABLE_WARP_SPECIALIZED", "tl.disable_warp_specialized", TB_OPT_sm90_attn_ws, true},
    {"TL_DISABLE_WGMMA", "tl.disable_wgmma", TB_OPT_cuda_sm90, true},
};

static bool pc_match(int i, const char *key) {
    return !strcmp(key, k_pass_configs[i].key) || !strcmp(key, k_pass_configs[i].str);
}

bool tb_pass_config_known(const char *key) {
    for (size_t i = 0; key && i < sizeof k_pass_configs / sizeof k_pass_configs[0]; i++)
        if (pc_match((int)i, key)) return true;
    return false;
}

int tb_options_set_pass_config(tb_options *o, const char *key, const char *value, char *err, size_t errlen) {
    if (!tb_pass_config_known(key)) return 0;
    const char *v = value ? value : "";
    int truth = -1;
    static const char *const yes[] = {"1", "true", "True", "TRUE", "on", "yes"}, *const no[] = {"0", "false", "False", "FALSE", "off", "no", ""};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!strcmp(v, yes[i])) truth = 1;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (!strcmp(v, no[i])) truth = 0;
    if (truth < 0) {
        snprintf(err, errlen, "pass_configs key '%s': '%s' is not a truth value (True/False, 1/0)", key, v);
        return -1;
    }
    for (size_t i = 0; i < sizeof k_pass_configs / sizeof k_pass_configs[0]; i++) {
        if (!pc_match((int)i, key)) continue;
        if (tb_options_set(o, tb_option_name(k_pass_configs[i].opt), (truth != 0) != k_pass_configs[i].invert ? "1" : "0", err, errlen)) return -1;
    }
    return 1;
}
