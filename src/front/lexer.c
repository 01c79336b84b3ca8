/* lexer.c — TileLang source text -> tokens (Python tokenisation rules).
 *
 * Produces NEWLINE / INDENT / DEDENT like Python: physical lines are joined inside
 * (), [] and {} and after a trailing backslash; blank and comment-only lines produce
 * nothing; tabs advance the indentation to the next multiple of 8.
 *
 * Error handling: every problem is a diagnostic at the offending column and the lexer
 * carries on with something sensible (a bad number becomes 0, an unmatched closing
 * bracket is dropped, a mismatched one is taken as the expected closer, an
 * unterminated string ends at the end of its line), so the parser can still report
 * the independent errors of later lines. The lexer always terminates: every loop
 * iteration consumes at least one byte.
 */
#include "front.h"

#include <stdlib.h>
#include <string.h>

#define MAX_INDENT_LEVELS 100  /* like CPython's tokenizer */
#define MAX_TRACKED_BRACKETS 256
#define MAX_INDENT_COL (1 << 24)

static const char *const tok_names[] = {
#define X(e, s) s,
    TILE_TOKENS(X)
#undef X
};

const char *tok_kind_name(tok_kind k) {
    if ((int)k < 0 || k >= TOK_COUNT) return "?";
    return tok_names[k];
}

typedef struct lexer {
    const tile_source *src;
    const char *s;
    size_t n, i;
    int line;
    size_t line_start; /* byte offset of the current line's first byte */
    tile_arena *arena;
    tile_diags *diags;
    token *toks;
    int len, cap;
    int indents[MAX_INDENT_LEVELS + 1];
    int nindent; /* indents[0] == 0 always */
    struct { char close; tile_loc loc; int errors; } br[MAX_TRACKED_BRACKETS];
    int nbr; /* may exceed MAX_TRACKED_BRACKETS (the extra ones are not tracked) */
    tile_loc last_end; /* where the last real token ended */
    bool have_last;
} lexer;

static tile_loc loc_at(lexer *L, size_t i) {
    tile_loc l = {L->src, L->line, (int)(i - L->line_start) + 1};
    return l;
}

static void newline_consumed(lexer *L, size_t next_line_start) {
    L->line++;
    L->line_start = next_line_start;
}

static token *push_tok(lexer *L, tok_kind k, tile_loc loc, size_t start, size_t len) {
    if (L->len == L->cap) {
        L->cap = L->cap ? L->cap * 2 : 256;
        L->toks = tile_xrealloc(L->toks, sizeof(token) * (size_t)L->cap);
    }
    token *t = &L->toks[L->len++];
    memset(t, 0, sizeof *t);
    t->kind = k;
    t->loc = loc;
    t->start = L->s + start;
    t->len = (int)len;
    return t;
}

/* A real token just ended at L->i (the NEWLINE that follows points there). */
static void mark_end(lexer *L) {
    L->last_end = loc_at(L, L->i);
    L->have_last = true;
}

static bool is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(int c) { return is_ident_start(c) || is_digit(c); }
static int hex_val(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int peek(lexer *L, size_t k) { return L->i + k < L->n ? (unsigned char)L->s[L->i + k] : -1; }

/* Decode one UTF-8 sequence at s[i] (for messages); returns the code point or -1. */
static long utf8_decode(const unsigned char *s, size_t n, size_t i, int *used) {
    unsigned c = s[i];
    int len = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (c >= 0xF8) len = 0;
    *used = 1;
    if (!len || i + (size_t)len > n) return -1;
    long cp = c & (0x3F >> (len - 1));
    for (int k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return -1;
    *used = len;
    return cp;
}

static void stray_char(lexer *L) {
    unsigned char c = (unsigned char)L->s[L->i];
    tile_loc loc = loc_at(L, L->i);
    if (c >= 0x80) {
        int used;
        long cp = utf8_decode((const unsigned char *)L->s, L->n, L->i, &used);
        if (cp >= 0) tile_error_at(L->diags, loc, "invalid non-ASCII character U+%04lX in source", cp);
        else tile_error_at(L->diags, loc, "invalid byte 0x%02X in source (not ASCII)", c);
        /* one diagnostic for a whole run of non-ASCII bytes */
        while (L->i < L->n && (unsigned char)L->s[L->i] >= 0x80) L->i++;
        return;
    }
    if (c == 0) tile_error_at(L->diags, loc, "null byte in source");
    else if (c < 32 || c == 127) tile_error_at(L->diags, loc, "invalid control character 0x%02X in source", c);
    else tile_error_at(L->diags, loc, "invalid character '%c' in source", c);
    L->i++;
}

/* ---------- numbers ---------- */

/* Consume the rest of a malformed literal so that it gives one error only. */
static void skip_literal_tail(lexer *L) {
    while (L->i < L->n && (is_ident_char((unsigned char)L->s[L->i]) || L->s[L->i] == '.')) L->i++;
}

/* Scan digits of the given base with '_' allowed between digits (and after a base
 * prefix when `after_prefix`). Returns false on a misplaced '_'. */
static bool scan_digits(lexer *L, int base, bool after_prefix, int *ndigits) {
    bool prev_us = after_prefix ? false : true; /* a leading '_' is only OK after a prefix */
    bool ok = true;
    *ndigits = 0;
    if (after_prefix && peek(L, 0) == '_') { L->i++; prev_us = true; }
    for (;;) {
        int c = peek(L, 0);
        if (c == '_') {
            if (prev_us) ok = false;
            prev_us = true;
            L->i++;
            continue;
        }
        int v = hex_val(c);
        if (v < 0 || v >= base) break;
        prev_us = false;
        (*ndigits)++;
        L->i++;
    }
    if (prev_us && *ndigits) ok = false; /* trailing '_' */
    if (*ndigits == 0 && !after_prefix) ok = false;
    return ok;
}

static void lex_number(lexer *L) {
    size_t start = L->i;
    tile_loc loc = loc_at(L, start);
    int c0 = peek(L, 0), c1 = peek(L, 1);
    if (c0 == '0' && c1 >= 0 && strchr("xXoObB", c1)) {
        int base = (c1 == 'x' || c1 == 'X') ? 16 : (c1 == 'o' || c1 == 'O') ? 8 : 2;
        const char *what = base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary";
        L->i += 2;
        size_t dstart = L->i;
        int nd;
        bool ok = scan_digits(L, base, true, &nd);
        token *t = push_tok(L, TOK_INT, loc, start, 0);
        if (!ok || nd == 0 || (L->i < L->n && is_ident_char((unsigned char)L->s[L->i]))) {
            int bad = peek(L, 0);
            if (ok && nd > 0 && bad >= 0 && is_digit(bad))
                tile_error_at(L->diags, loc_at(L, L->i), "invalid digit '%c' in %s literal", bad, what);
            else
                tile_error_at(L->diags, loc, "invalid %s literal", what);
            skip_literal_tail(L);
        } else {
            uint64_t v = 0;
            bool over = false;
            for (size_t k = dstart; k < L->i; k++) {
                int d = hex_val((unsigned char)L->s[k]);
                if (d < 0) continue; /* '_' */
                if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) over = true;
                v = v * (uint64_t)base + (uint64_t)d;
            }
            if (over || v > (uint64_t)INT64_MAX)
                tile_error_at(L->diags, loc, "integer literal '%.*s' is too large (does not fit in int64)",
                              (int)(L->i - start > 40 ? 40 : L->i - start), L->s + start);
            else t->ival = (int64_t)v;
        }
        t->len = (int)(L->i - start);
        mark_end(L);
        return;
    }
    /* decimal integer or float */
    bool ok = true, is_float = false;
    int nd = 0, nfrac = 0;
    if (c0 != '.') ok = scan_digits(L, 10, false, &nd);
    if (peek(L, 0) == '.' ) {
        is_float = true;
        L->i++;
        int c = peek(L, 0);
        if (c == '_') ok = false;
        if (c >= 0 && is_digit(c)) ok = scan_digits(L, 10, false, &nfrac) && ok;
    }
    int c = peek(L, 0);
    if (c == 'e' || c == 'E') {
        int s1 = peek(L, 1), s2 = peek(L, 2);
        if ((s1 >= 0 && is_digit(s1)) || ((s1 == '+' || s1 == '-') && s2 >= 0 && is_digit(s2))) {
            is_float = true;
            L->i += (s1 == '+' || s1 == '-') ? 2 : 1;
            int ne;
            ok = scan_digits(L, 10, false, &ne) && ok;
        } else {
            ok = false;
        }
    }
    token *t = push_tok(L, is_float ? TOK_FLOAT : TOK_INT, loc, start, 0);
    c = peek(L, 0);
    if (ok && c >= 0 && (c == 'j' || c == 'J')) {
        tile_error_at(L->diags, loc, "unsupported: complex (imaginary) literals");
        skip_literal_tail(L);
    } else if (!ok || (c >= 0 && is_ident_char(c))) {
        tile_error_at(L->diags, loc, "invalid decimal literal");
        skip_literal_tail(L);
    } else {
        /* copy without underscores */
        size_t n = L->i - start;
        char buf[128];
        char *tmp = n < sizeof buf ? buf : tile_xmalloc(n + 1);
        size_t k = 0;
        for (size_t j = start; j < L->i; j++)
            if (L->s[j] != '_') tmp[k++] = L->s[j];
        tmp[k] = 0;
        if (is_float) {
            t->fval = strtod(tmp, NULL);
        } else {
            bool all_zero = true;
            for (size_t j = 0; j < k; j++) if (tmp[j] != '0') all_zero = false;
            if (k > 1 && tmp[0] == '0' && !all_zero) {
                tile_error_at(L->diags, loc, "leading zeros in decimal integer literals are not permitted; "
                                             "use an 0o prefix for octal integers");
            } else {
                uint64_t v = 0;
                bool over = false;
                for (size_t j = 0; j < k; j++) {
                    uint64_t d = (uint64_t)(tmp[j] - '0');
                    if (v > (UINT64_MAX - d) / 10) over = true;
                    v = v * 10 + d;
                }
                if (over || v > (uint64_t)INT64_MAX)
                    tile_error_at(L->diags, loc, "integer literal '%.*s' is too large (does not fit in int64)",
                                  (int)(n > 40 ? 40 : n), L->s + start);
                else t->ival = (int64_t)v;
            }
        }
        if (tmp != buf) free(tmp);
    }
    t->len = (int)(L->i - start);
    mark_end(L);
}

/* ---------- strings ---------- */

static void sb_put_utf8(tile_strbuf *sb, unsigned long cp) {
    if (cp < 0x80) tile_sb_putc(sb, (char)cp);
    else if (cp < 0x800) {
        tile_sb_putc(sb, (char)(0xC0 | (cp >> 6)));
        tile_sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        tile_sb_putc(sb, (char)(0xE0 | (cp >> 12)));
        tile_sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3F)));
        tile_sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    } else {
        tile_sb_putc(sb, (char)(0xF0 | (cp >> 18)));
        tile_sb_putc(sb, (char)(0x80 | ((cp >> 12) & 0x3F)));
        tile_sb_putc(sb, (char)(0x80 | ((cp >> 6) & 0x3F)));
        tile_sb_putc(sb, (char)(0x80 | (cp & 0x3F)));
    }
}

/* Decode the escape at L->i (which is just after the backslash) into sb. */
static void lex_escape(lexer *L, tile_strbuf *sb, bool bytes, bool *nul_reported) {
    size_t esc_at = L->i - 1;
    int c = peek(L, 0);
    L->i++;
    unsigned long v;
    switch (c) {
    case '\n': newline_consumed(L, L->i); return; /* line continuation inside the string */
    case '\r':
        if (peek(L, 0) == '\n') { L->i++; newline_consumed(L, L->i); return; }
        tile_sb_putc(sb, '\\'); tile_sb_putc(sb, '\r');
        return;
    case '\\': tile_sb_putc(sb, '\\'); return;
    case '\'': tile_sb_putc(sb, '\''); return;
    case '"': tile_sb_putc(sb, '"'); return;
    case 'a': tile_sb_putc(sb, '\a'); return;
    case 'b': tile_sb_putc(sb, '\b'); return;
    case 'f': tile_sb_putc(sb, '\f'); return;
    case 'n': tile_sb_putc(sb, '\n'); return;
    case 'r': tile_sb_putc(sb, '\r'); return;
    case 't': tile_sb_putc(sb, '\t'); return;
    case 'v': tile_sb_putc(sb, '\v'); return;
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        v = (unsigned long)(c - '0');
        for (int k = 0; k < 2 && peek(L, 0) >= '0' && peek(L, 0) <= '7'; k++) v = v * 8 + (unsigned long)(L->s[L->i++] - '0');
        break;
    case 'x': {
        int h1 = hex_val(peek(L, 0)), h2 = hex_val(peek(L, 1));
        if (h1 < 0 || h2 < 0) {
            tile_error_at(L->diags, loc_at(L, esc_at), "invalid \\x escape: expected two hex digits");
            return;
        }
        L->i += 2;
        v = (unsigned long)(h1 * 16 + h2);
        if (bytes) {
            if (v == 0) goto nul;
            tile_sb_putc(sb, (char)v);
            return;
        }
        break;
    }
    case 'u': case 'U': case 'N':
        if (bytes) { tile_sb_putc(sb, '\\'); tile_sb_putc(sb, (char)c); return; }
        if (c == 'N') {
            tile_error_at(L->diags, loc_at(L, esc_at), "unsupported: \\N{...} escapes");
            return;
        } else {
            int nd = c == 'u' ? 4 : 8;
            v = 0;
            for (int k = 0; k < nd; k++) {
                int h = hex_val(peek(L, 0));
                if (h < 0) {
                    tile_error_at(L->diags, loc_at(L, esc_at), "invalid \\%c escape: expected %d hex digits", c, nd);
                    return;
                }
                v = v * 16 + (unsigned long)h;
                L->i++;
            }
            if (v > 0x10FFFF) {
                tile_error_at(L->diags, loc_at(L, esc_at), "invalid \\U escape: code point out of range");
                return;
            }
        }
        break;
    case -1: /* backslash at end of file: the caller reports the unterminated string */
        L->i--;
        return;
    default:
        /* unknown escapes are kept as written, like Python */
        tile_sb_putc(sb, '\\');
        L->i--;
        return;
    }
    if (v == 0) goto nul;
    if (bytes) tile_sb_putc(sb, (char)(v & 0xFF));
    else sb_put_utf8(sb, v);
    return;
nul:
    if (!*nul_reported)
        tile_error_at(L->diags, loc_at(L, esc_at), "unsupported: NUL character in string literal");
    *nul_reported = true;
}

/* L->i points at the opening quote; `start` at the first prefix character. */
static void lex_string(lexer *L, size_t start, bool raw, bool bytes) {
    tile_loc loc = loc_at(L, start);
    char q = L->s[L->i];
    bool triple = peek(L, 1) == q && peek(L, 2) == q;
    L->i += triple ? 3 : 1;
    tile_strbuf sb = {0};
    bool closed = false, nul_reported = false;
    while (L->i < L->n) {
        char c = L->s[L->i];
        if (c == q && (!triple || (peek(L, 1) == q && peek(L, 2) == q))) {
            L->i += triple ? 3 : 1;
            closed = true;
            break;
        }
        if (c == '\n') {
            if (!triple) break;
            L->i++;
            newline_consumed(L, L->i);
            tile_sb_putc(&sb, '\n');
            continue;
        }
        if (c == '\r' && peek(L, 1) == '\n') { L->i++; continue; }
        if (c == 0) {
            if (!nul_reported) tile_error_at(L->diags, loc_at(L, L->i), "null byte in source");
            nul_reported = true;
            L->i++;
            continue;
        }
        if (c == '\\') {
            L->i++;
            if (raw) {
                tile_sb_putc(&sb, '\\');
                int d = peek(L, 0);
                if (d == '\n') { /* a raw backslash-newline continues the literal */
                    L->i++;
                    newline_consumed(L, L->i);
                    tile_sb_putc(&sb, '\n');
                } else if (d >= 0 && d != '\r') {
                    tile_sb_putc(&sb, (char)d);
                    L->i++;
                }
                continue;
            }
            lex_escape(L, &sb, bytes, &nul_reported);
            continue;
        }
        tile_sb_putc(&sb, c);
        L->i++;
    }
    if (!closed) {
        if (triple) tile_error_at(L->diags, loc, "unterminated triple-quoted string literal");
        else tile_error_at(L->diags, loc, "unterminated string literal");
    }
    token *t = push_tok(L, TOK_STRING, loc, start, L->i - start);
    t->sval = tile_arena_strndup(L->arena, sb.data ? sb.data : "", sb.len);
    tile_sb_free(&sb);
    mark_end(L);
}

/* ---------- names and keywords ---------- */
static const struct { const char *kw; tok_kind kind; } keywords[] = { /* all 2..8 chars */
    {"def", TOK_KW_DEF}, {"return", TOK_KW_RETURN}, {"if", TOK_KW_IF}, {"elif", TOK_KW_ELIF},
    {"else", TOK_KW_ELSE}, {"for", TOK_KW_FOR}, {"while", TOK_KW_WHILE}, {"in", TOK_KW_IN},
    {"not", TOK_KW_NOT}, {"and", TOK_KW_AND}, {"or", TOK_KW_OR}, {"is", TOK_KW_IS},
    {"with", TOK_KW_WITH}, {"as", TOK_KW_AS}, {"pass", TOK_KW_PASS}, {"break", TOK_KW_BREAK},
    {"continue", TOK_KW_CONTINUE}, {"import", TOK_KW_IMPORT}, {"from", TOK_KW_FROM},
    {"True", TOK_KW_TRUE}, {"False", TOK_KW_FALSE}, {"None", TOK_KW_NONE},
    {"assert", TOK_KW_ASSERT}, {"lambda", TOK_KW_LAMBDA}, {"global", TOK_KW_GLOBAL},
    {"class", TOK_KW_CLASS}, {"del", TOK_KW_DEL}, {"yield", TOK_KW_YIELD}, {"try", TOK_KW_TRY},
    {"raise", TOK_KW_RAISE},
};

/* Is s[0..n) a string prefix (r, b, f, u, rb, br, fr, rf in any case)? */
static bool string_prefix(const char *s, size_t n, bool *raw, bool *bytes) {
    *raw = *bytes = false;
    if (n < 1 || n > 2) return false;
    bool r = false, b = false, f = false, u = false;
    for (size_t k = 0; k < n; k++) {
        char c = s[k] | 0x20;
        if (c == 'r' && !r) r = true;
        else if (c == 'b' && !b) b = true;
        else if (c == 'f' && !f) f = true;
        else if (c == 'u' && !u) u = true;
        else return false;
    }
    if ((b && f) || (u && n > 1)) return false;
    *raw = r;
    *bytes = b;
    return true;
}

static void lex_name(lexer *L) {
    size_t start = L->i;
    while (L->i < L->n && is_ident_char((unsigned char)L->s[L->i])) L->i++;
    size_t n = L->i - start;
    bool raw, bytes;
    if (L->i < L->n && (L->s[L->i] == '\'' || L->s[L->i] == '"') && string_prefix(L->s + start, n, &raw, &bytes)) {
        lex_string(L, start, raw, bytes);
        return;
    }
    tok_kind k = TOK_NAME;
    if (n >= 2 && n <= 8)
        for (size_t j = 0; j < sizeof keywords / sizeof keywords[0]; j++)
            if (keywords[j].kw[0] == L->s[start] && !strncmp(keywords[j].kw, L->s + start, n) &&
                keywords[j].kw[n] == 0) {
                k = keywords[j].kind;
                break;
            }
    token *t = push_tok(L, k, loc_at(L, start), start, n);
    t->sval = tile_arena_strndup(L->arena, L->s + start, n);
    mark_end(L);
}

/* ---------- operators ---------- */
static const struct { const char *text; tok_kind kind; } operators[] = {
    /* longest first */
    {"**=", TOK_DSTAR_ASSIGN}, {"//=", TOK_DSLASH_ASSIGN}, {"<<=", TOK_SHL_ASSIGN}, {">>=", TOK_SHR_ASSIGN},
    {"**", TOK_DSTAR}, {"//", TOK_DSLASH}, {"<<", TOK_SHL}, {">>", TOK_SHR}, {"<=", TOK_LE},
    {">=", TOK_GE}, {"==", TOK_EQ}, {"!=", TOK_NE}, {"->", TOK_ARROW}, {"+=", TOK_PLUS_ASSIGN},
    {"-=", TOK_MINUS_ASSIGN}, {"*=", TOK_STAR_ASSIGN}, {"/=", TOK_SLASH_ASSIGN},
    {"%=", TOK_PERCENT_ASSIGN}, {"&=", TOK_AMP_ASSIGN}, {"|=", TOK_PIPE_ASSIGN},
    {"^=", TOK_CARET_ASSIGN}, {"@=", TOK_AT_ASSIGN},
    {"(", TOK_LPAREN}, {")", TOK_RPAREN}, {"[", TOK_LBRACKET}, {"]", TOK_RBRACKET},
    {"{", TOK_LBRACE}, {"}", TOK_RBRACE}, {",", TOK_COMMA}, {":", TOK_COLON}, {".", TOK_DOT},
    {";", TOK_SEMI}, {"@", TOK_AT}, {"=", TOK_ASSIGN}, {"+", TOK_PLUS}, {"-", TOK_MINUS},
    {"*", TOK_STAR}, {"/", TOK_SLASH}, {"%", TOK_PERCENT}, {"&", TOK_AMP}, {"|", TOK_PIPE},
    {"^", TOK_CARET}, {"~", TOK_TILDE}, {"<", TOK_LT}, {">", TOK_GT},
};

static char open_of(char close) { return close == ')' ? '(' : close == ']' ? '[' : '{'; }
static tok_kind close_kind(char close) {
    return close == ')' ? TOK_RPAREN : close == ']' ? TOK_RBRACKET : TOK_RBRACE;
}

static bool lex_operator(lexer *L) {
    for (size_t j = 0; j < sizeof operators / sizeof operators[0]; j++) {
        if (operators[j].text[0] != L->s[L->i]) continue;
        size_t n = strlen(operators[j].text);
        if (L->i + n <= L->n && !memcmp(L->s + L->i, operators[j].text, n)) {
            tok_kind k = operators[j].kind;
            tile_loc loc = loc_at(L, L->i);
            if (k == TOK_LPAREN || k == TOK_LBRACKET || k == TOK_LBRACE) {
                if (L->nbr < MAX_TRACKED_BRACKETS) {
                    L->br[L->nbr].close = k == TOK_LPAREN ? ')' : k == TOK_LBRACKET ? ']' : '}';
                    L->br[L->nbr].loc = loc;
                    L->br[L->nbr].errors = L->diags->errors;
                }
                L->nbr++;
            } else if (k == TOK_RPAREN || k == TOK_RBRACKET || k == TOK_RBRACE) {
                char c = L->s[L->i];
                if (L->nbr == 0) {
                    tile_error_at(L->diags, loc, "unmatched '%c'", c);
                    L->i += n; /* dropped */
                    return true;
                }
                int top = L->nbr - 1;
                if (top < MAX_TRACKED_BRACKETS && L->br[top].close != c) {
                    char want = L->br[top].close;
                    tile_error_at(L->diags, loc, "closing '%c' does not match opening '%c' on line %d", c,
                                  open_of(want), L->br[top].loc.line);
                    /* If an outer bracket matches, close the inner ones (synthetic closers) so
                     * that `f(a, [1, 2)` reads as `f(a, [1, 2])`; else take it as `want`. */
                    int outer = top - 1;
                    while (outer >= 0 && L->br[outer].close != c) outer--;
                    if (outer >= 0) {
                        for (; top > outer; top--) push_tok(L, close_kind(L->br[top].close), loc, L->i, 0);
                        L->nbr = outer + 1;
                    } else {
                        k = close_kind(want);
                    }
                }
                L->nbr--;
            }
            push_tok(L, k, loc, L->i, n);
            L->i += n;
            mark_end(L);
            return true;
        }
    }
    return false;
}

/* ---------- indentation ---------- */

static void emit_newline(lexer *L) {
    if (L->len == 0) return;
    tok_kind last = L->toks[L->len - 1].kind;
    if (last == TOK_NEWLINE || last == TOK_INDENT || last == TOK_DEDENT) return;
    push_tok(L, TOK_NEWLINE, L->last_end, L->i, 0);
}

/* At the start of a logical line: measure the indentation, skip blank and comment-only
 * lines. Returns false at end of input. */
static bool line_start(lexer *L) {
    for (;;) {
        int col = 0;
        while (L->i < L->n) {
            char c = L->s[L->i];
            if (c == ' ') col++;
            else if (c == '\t') col = (col / 8 + 1) * 8;
            else if (c == '\f') col = 0;
            else if (c == '\r' || c == '\v') { /* ignored */ }
            else break;
            if (col > MAX_INDENT_COL) col = MAX_INDENT_COL;
            L->i++;
        }
        if (L->i >= L->n) return false;
        char c = L->s[L->i];
        if (c == '#') {
            while (L->i < L->n && L->s[L->i] != '\n') L->i++;
            continue; /* the '\n' (or EOF) is handled on the next turn */
        }
        if (c == '\n') {
            L->i++;
            newline_consumed(L, L->i);
            continue;
        }
        if (c == '\\' && (peek(L, 1) == '\n' || (peek(L, 1) == '\r' && peek(L, 2) == '\n'))) {
            /* a continuation on an otherwise empty line: joins with the next one */
            L->i += peek(L, 1) == '\n' ? 2 : 3;
            newline_consumed(L, L->i);
            continue;
        }
        tile_loc loc = loc_at(L, L->i);
        int top = L->indents[L->nindent];
        if (col > top) {
            if (L->nindent >= MAX_INDENT_LEVELS) {
                /* fatal, as in CPython: stop here (the end-of-file tokens get this location,
                 * so the parser's complaints about the truncated block are not reported) */
                tile_error_at(L->diags, loc, "too many levels of indentation (limit %d)", MAX_INDENT_LEVELS);
                L->last_end = loc;
                L->i = L->n;
                return false;
            } else {
                L->indents[++L->nindent] = col;
                push_tok(L, TOK_INDENT, loc, L->i, 0);
            }
        } else if (col < top) {
            while (L->nindent > 0 && L->indents[L->nindent] > col) {
                L->nindent--;
                push_tok(L, TOK_DEDENT, loc, L->i, 0);
            }
            if (L->indents[L->nindent] != col)
                tile_error_at(L->diags, loc, "unindent does not match any outer indentation level");
        }
        return true;
    }
}

token_list tile_lex(const tile_source *src, tile_arena *arena, tile_diags *diags) {
    lexer L;
    memset(&L, 0, sizeof L);
    L.src = src;
    L.s = src->text;
    L.n = src->len;
    L.line = 1;
    L.arena = arena;
    L.diags = diags;
    L.last_end = loc_at(&L, 0);

    bool at_line_start = true;
    for (;;) {
        if (at_line_start && L.nbr == 0) {
            if (!line_start(&L)) break;
            at_line_start = false;
        }
        if (L.i >= L.n) break;
        unsigned char c = (unsigned char)L.s[L.i];
        if (c == ' ' || c == '\t' || c == '\f' || c == '\v' || c == '\r') {
            L.i++;
        } else if (c == '\n') {
            if (L.nbr == 0) {
                emit_newline(&L);
                at_line_start = true;
            }
            L.i++;
            newline_consumed(&L, L.i);
        } else if (c == '#') {
            while (L.i < L.n && L.s[L.i] != '\n') L.i++;
        } else if (c == '\\') {
            int d = peek(&L, 1);
            if (d == '\n' || (d == '\r' && peek(&L, 2) == '\n')) {
                L.i += d == '\n' ? 2 : 3;
                newline_consumed(&L, L.i);
            } else if (d < 0) {
                tile_error_at(L.diags, loc_at(&L, L.i), "unexpected end of file after line continuation character");
                L.i++;
            } else {
                tile_error_at(L.diags, loc_at(&L, L.i), "unexpected character after line continuation character");
                L.i++;
            }
        } else if (is_ident_start(c)) {
            lex_name(&L);
        } else if (is_digit(c) || (c == '.' && peek(&L, 1) >= 0 && is_digit(peek(&L, 1)))) {
            lex_number(&L);
        } else if (c == '\'' || c == '"') {
            lex_string(&L, L.i, false, false);
        } else if (!lex_operator(&L)) {
            stray_char(&L);
        }
    }
    if (L.nbr > 0) {
        /* Reported at the innermost tracked bracket, unless an error was already reported
         * inside it (an unterminated string, say), which is then the likely cause. */
        int k = L.nbr <= MAX_TRACKED_BRACKETS ? L.nbr - 1 : MAX_TRACKED_BRACKETS - 1;
        if (L.diags->errors == L.br[k].errors)
            tile_error_at(L.diags, L.br[k].loc, "'%c' was never closed", open_of(L.br[k].close));
    }
    emit_newline(&L);
    while (L.nindent > 0) {
        L.nindent--;
        push_tok(&L, TOK_DEDENT, L.last_end, L.i, 0);
    }
    push_tok(&L, TOK_EOF, L.last_end, L.i, 0);

    token_list out;
    out.len = L.len;
    out.toks = TILE_NEW_ARRAY(arena, token, L.len);
    memcpy(out.toks, L.toks, sizeof(token) * (size_t)L.len);
    free(L.toks);
    return out;
}
