/* test_lexer — unit tests of the TileLang lexer (token kinds, values, locations,
 * indentation, diagnostics). */
#include "front/front.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

/* Summary of a token list: names/keywords/operators as written, i<int>, f<float>,
 * "string" (escaped), NL, > (INDENT), < (DEDENT), $ (EOF). */
static void summarize(const token_list *tl, tile_strbuf *sb) {
    for (int i = 0; i < tl->len; i++) {
        const token *t = &tl->toks[i];
        if (i) tile_sb_putc(sb, ' ');
        switch (t->kind) {
        case TOK_INT: tile_sb_printf(sb, "i%lld", (long long)t->ival); break;
        case TOK_FLOAT: tile_sb_printf(sb, "f%g", t->fval); break;
        case TOK_STRING:
            tile_sb_putc(sb, '"');
            for (const unsigned char *q = (const unsigned char *)t->sval; *q; q++) {
                if (*q == '\n') tile_sb_puts(sb, "\\n");
                else if (*q == '\\') tile_sb_puts(sb, "\\\\");
                else if (*q < 32 || *q >= 127) tile_sb_printf(sb, "\\x%02x", *q);
                else tile_sb_putc(sb, (char)*q);
            }
            tile_sb_putc(sb, '"');
            break;
        case TOK_NEWLINE: tile_sb_puts(sb, "NL"); break;
        case TOK_INDENT: tile_sb_puts(sb, ">"); break;
        case TOK_DEDENT: tile_sb_puts(sb, "<"); break;
        case TOK_EOF: tile_sb_puts(sb, "$"); break;
        case TOK_RPAREN: case TOK_RBRACKET: case TOK_RBRACE: /* by kind: a mismatched closer is re-kinded */
            tile_sb_putc(sb, t->kind == TOK_RPAREN ? ')' : t->kind == TOK_RBRACKET ? ']' : '}');
            break;
        default: tile_sb_printf(sb, "%.*s", t->len, t->start); break;
        }
    }
}

/* Lex `text`; tokens summary into *toks, diagnostics "line:col: msg; ..." into *diag. */
static void lex(const char *text, size_t len, tile_strbuf *toks, tile_strbuf *diag) {
    tile_source *src = tile_source_from_string("t.tl", text, len);
    tile_arena arena;
    tile_arena_init(&arena);
    tile_diags diags;
    tile_diags_init(&diags);
    token_list tl = tile_lex(src, &arena, &diags);
    summarize(&tl, toks);
    for (int i = 0; i < diags.len; i++)
        tile_sb_printf(diag, "%s%d:%d: %s", i ? "; " : "", diags.items[i].loc.line, diags.items[i].loc.col,
                       diags.items[i].msg);
    if (!tl.len || tl.toks[tl.len - 1].kind != TOK_EOF) {
        printf("FAIL: token list does not end with EOF for %s\n", text);
        failures++;
    }
    tile_diags_free(&diags);
    tile_arena_free(&arena);
    tile_source_free(src);
}

static void expect_str(const char *what, const char *input, const char *got, const char *want) {
    checks++;
    if (strcmp(got, want)) {
        failures++;
        printf("FAIL %s\n  input: %s\n  want:  %s\n  got:   %s\n", what, input, want, got);
    }
}

/* Expect the given tokens and no diagnostics. */
static void T_OK(const char *input, const char *want) {
    tile_strbuf t = {0}, d = {0};
    lex(input, strlen(input), &t, &d);
    expect_str("tokens", input, t.data ? t.data : "", want);
    expect_str("no diagnostics", input, d.data ? d.data : "", "");
    tile_sb_free(&t);
    tile_sb_free(&d);
}

/* Expect diagnostics (exact text, "line:col: msg; ..."); tokens checked if want_toks. */
static void T_ERR(const char *input, const char *want_diag, const char *want_toks) {
    tile_strbuf t = {0}, d = {0};
    lex(input, strlen(input), &t, &d);
    expect_str("diagnostics", input, d.data ? d.data : "", want_diag);
    if (want_toks) expect_str("tokens", input, t.data ? t.data : "", want_toks);
    tile_sb_free(&t);
    tile_sb_free(&d);
}

static void test_basic(void) {
    T_OK("", "$");
    T_OK("\n\n   \n# only a comment\n", "$");
    T_OK("x = 1\n", "x = i1 NL $");
    T_OK("x = 1", "x = i1 NL $"); /* no trailing newline */
    T_OK("a.b(c, d=2)[e:f]\n", "a . b ( c , d = i2 ) [ e : f ] NL $");
    T_OK("if not a and b or c is None: pass\n", "if not a and b or c is None : pass NL $");
    T_OK("True False None lambda class del yield try raise global assert",
         "True False None lambda class del yield try raise global assert NL $");
    T_OK("async await nonlocal _x x1 __init__", "async await nonlocal _x x1 __init__ NL $");
    T_OK("x=1;y=2 # trailing comment\n", "x = i1 ; y = i2 NL $");
    T_OK("a\r\nb\r\n", "a NL b NL $");
}

static void test_operators(void) {
    T_OK("a**=b//=c<<=d>>=e", "a **= b //= c <<= d >>= e NL $");
    T_OK("a+=b-=c*=d/=e%=f&=g|=h^=i@=j", "a += b -= c *= d /= e %= f &= g |= h ^= i @= j NL $");
    T_OK("a**b//c<<d>>e<=f>=g==h!=i->j", "a ** b // c << d >> e <= f >= g == h != i -> j NL $");
    T_OK("a+b-c*d/e%f&g|h^i~j<k>l@m", "a + b - c * d / e % f & g | h ^ i ~ j < k > l @ m NL $");
    T_OK("{a}", "{ a } NL $");
    T_OK("...", ". . . NL $");
}

static void test_indentation(void) {
    T_OK("if a:\n    b\n    c\nd\n", "if a : NL > b NL c NL < d NL $");
    T_OK("if a:\n  if b:\n    c\n", "if a : NL > if b : NL > c NL < < $");
    T_OK("if a:\n  if b:\n    c\n  d\ne\n", "if a : NL > if b : NL > c NL < d NL < e NL $");
    /* blank lines and comment lines at any indentation are ignored */
    T_OK("if a:\n\n      # c\n  b\n\n# x\n  c\n", "if a : NL > b NL c NL < $");
    /* a tab advances to the next multiple of 8: "\t" == 8 spaces */
    T_OK("if a:\n\tb\n        c\n", "if a : NL > b NL c NL < $");
    T_OK("if a:\n  \tb\n        c\n", "if a : NL > b NL c NL < $");
    /* implicit joining: no NEWLINE/INDENT inside brackets */
    T_OK("f(a,\n      b,\n  c)\nd\n", "f ( a , b , c ) NL d NL $");
    T_OK("x = [\n1,\n# comment\n2]\n", "x = [ i1 , i2 ] NL $");
    /* backslash continuation */
    T_OK("x = 1 + \\\n    2\ny\n", "x = i1 + i2 NL y NL $");
    T_OK("if a:\n    x = \\\n1\n    y\n", "if a : NL > x = i1 NL y NL < $");
    /* end of file closes all blocks */
    T_OK("def f():\n    if x:\n        return 1", "def f ( ) : NL > if x : NL > return i1 NL < < $");
    T_ERR("if a:\n        b\n    c\n", "3:5: unindent does not match any outer indentation level",
          "if a : NL > b NL < c NL $");
}

static void test_numbers(void) {
    T_OK("0 7 42 1_000_000 0x1F 0XfF 0o17 0O7 0b101 0B1 0x_ff 00 0_0",
         "i0 i7 i42 i1000000 i31 i255 i15 i7 i5 i1 i255 i0 i0 NL $");
    T_OK("9223372036854775807 0x7fffffffffffffff", "i9223372036854775807 i9223372036854775807 NL $");
    T_OK("1. .5 1e-3 1_000.0 1E+5 2.5e2 0.0 1.e2 00.5 09.5",
         "f1 f0.5 f0.001 f1000 f100000 f250 f0 f100 f0.5 f9.5 NL $");
    T_ERR("9223372036854775808", "1:1: integer literal '9223372036854775808' is too large (does not fit in int64)",
          "i0 NL $");
    T_ERR("x = 0x8000000000000000\n",
          "1:5: integer literal '0x8000000000000000' is too large (does not fit in int64)", NULL);
    T_ERR("x = 99999999999999999999999\n",
          "1:5: integer literal '99999999999999999999999' is too large (does not fit in int64)", NULL);
    T_ERR("1__0", "1:1: invalid decimal literal", "i0 NL $");
    T_ERR("1_", "1:1: invalid decimal literal", NULL);
    T_ERR("12abc + 1", "1:1: invalid decimal literal", "i0 + i1 NL $");
    T_ERR("1e", "1:1: invalid decimal literal", NULL);
    T_ERR("0x", "1:1: invalid hexadecimal literal", NULL);
    T_ERR("0xg1", "1:1: invalid hexadecimal literal", NULL);
    T_ERR("0b102", "1:5: invalid digit '2' in binary literal", NULL);
    T_ERR("0o78", "1:4: invalid digit '8' in octal literal", NULL);
    T_ERR("007", "1:1: leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers",
          NULL);
    T_ERR("3j", "1:1: unsupported: complex (imaginary) literals", NULL);
}

static void test_strings(void) {
    T_OK("'a' \"b\" '''c''' \"\"\"d\"\"\"", "\"a\" \"b\" \"c\" \"d\" NL $");
    T_OK("'it''s'", "\"it\" \"s\" NL $");
    T_OK("'\\n\\t\\\\\\'\\\"\\x41\\101\\u00e9\\q'", "\"\\n\\x09\\\\'\"AA\\xc3\\xa9\\\\q\" NL $");
    T_OK("r'\\n\\'' R\"\\d\"", "\"\\\\n\\\\'\" \"\\\\d\" NL $");
    T_OK("b'\\x41\\xff' f'{x}\\n' rb'\\n' Br'a' u'x' F\"y\"",
         "\"A\\xff\" \"{x}\\n\" \"\\\\n\" \"a\" \"x\" \"y\" NL $");
    T_OK("'''a\nb\n'''\nx\n", "\"a\\nb\\n\" NL x NL $");
    T_OK("'a\\\nb'", "\"ab\" NL $");
    T_OK("'caf\xc3\xa9' # \xe2\x82\xac comment", "\"caf\\xc3\\xa9\" NL $");
    T_OK("rb  br", "rb br NL $"); /* prefixes alone are names */
    T_ERR("x = 'abc\ny = 2\n", "1:5: unterminated string literal", "x = \"abc\" NL y = i2 NL $");
    T_ERR("x = '''abc\ny = 2\n", "1:5: unterminated triple-quoted string literal", NULL);
    T_ERR("'\\x4'", "1:2: invalid \\x escape: expected two hex digits", NULL);
    T_ERR("'\\u12'", "1:2: invalid \\u escape: expected 4 hex digits", NULL);
    T_ERR("'\\U00110000'", "1:2: invalid \\U escape: code point out of range", NULL);
    T_ERR("'a\\0b'", "1:3: unsupported: NUL character in string literal", NULL);
    T_ERR("'\\N{DASH}'", "1:2: unsupported: \\N{...} escapes", NULL);
    T_ERR("'abc\\", "1:1: unterminated string literal", NULL);
}

static void test_errors(void) {
    T_ERR("x = 1 $ 2\n", "1:7: invalid character '$' in source", "x = i1 i2 NL $");
    T_ERR("a ? b ! c `", "1:3: invalid character '?' in source; 1:7: invalid character '!' in source; "
                         "1:11: invalid character '`' in source",
          NULL);
    T_ERR("x = caf\xc3\xa9 + 1\n", "1:8: invalid non-ASCII character U+00E9 in source", "x = caf + i1 NL $");
    T_ERR("x = \xff\xfe\n", "1:5: invalid byte 0xFF in source (not ASCII)", NULL);
    T_ERR("a\x01 b", "1:2: invalid control character 0x01 in source", NULL);
    {
        tile_strbuf t = {0}, d = {0};
        lex("a\0b", 3, &t, &d);
        expect_str("NUL diagnostic", "a\\0b", d.data, "1:2: null byte in source");
        expect_str("NUL tokens", "a\\0b", t.data, "a b NL $");
        tile_sb_free(&t);
        tile_sb_free(&d);
    }
    /* a closer matching an outer bracket closes the inner ones too */
    T_ERR("f(a, [1, 2)\n", "1:11: closing ')' does not match opening '[' on line 1", "f ( a , [ i1 , i2 ] ) NL $");
    T_ERR("f(a, [b, (c)}\n", "1:13: closing '}' does not match opening '[' on line 1", "f ( a , [ b , ( c ) ] NL $");
    T_ERR("f(a, [b, (c)]\n", "1:2: '(' was never closed", NULL);
    T_ERR("x = (\n'abc\n", "2:1: unterminated string literal", NULL); /* no "never closed" on top */
    T_ERR("x = (1 + 2))\ny = 3\n", "1:12: unmatched ')'", "x = ( i1 + i2 ) NL y = i3 NL $");
    T_ERR("x = foo(1,\n  2\ny = 3\n", "1:8: '(' was never closed", "x = foo ( i1 , i2 y = i3 NL $");
    T_ERR("x = 1 \\ 2", "1:7: unexpected character after line continuation character", NULL);
    T_ERR("x = 1 \\", "1:7: unexpected end of file after line continuation character", NULL);
    T_ERR("x\n]\n", "2:1: unmatched ']'", "x NL $");
}

static void test_locations(void) {
    const char *text = "def f(a):\n\tx = 'a\\\nb' + 12\n    # c\n\treturn x\n";
    tile_source *src = tile_source_from_string("t.tl", text, strlen(text));
    tile_arena arena;
    tile_arena_init(&arena);
    tile_diags diags;
    tile_diags_init(&diags);
    token_list tl = tile_lex(src, &arena, &diags);
    /* def f ( a ) : NL > x = STR + 12 NL return x NL < $ */
    struct { tok_kind k; int line, col; } want[] = {
        {TOK_KW_DEF, 1, 1}, {TOK_NAME, 1, 5}, {TOK_LPAREN, 1, 6}, {TOK_NAME, 1, 7}, {TOK_RPAREN, 1, 8},
        {TOK_COLON, 1, 9}, {TOK_NEWLINE, 1, 10}, {TOK_INDENT, 2, 2}, {TOK_NAME, 2, 2}, {TOK_ASSIGN, 2, 4},
        {TOK_STRING, 2, 6}, {TOK_PLUS, 3, 4}, {TOK_INT, 3, 6}, {TOK_NEWLINE, 3, 8}, {TOK_KW_RETURN, 5, 2},
        {TOK_NAME, 5, 9}, {TOK_NEWLINE, 5, 10}, {TOK_DEDENT, 5, 10}, {TOK_EOF, 5, 10},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    checks++;
    if (tl.len != n || diags.len) {
        printf("FAIL locations: %d tokens (want %d), %d diagnostics\n", tl.len, n, diags.len);
        failures++;
    } else {
        for (int i = 0; i < n; i++) {
            const token *t = &tl.toks[i];
            if (t->kind != want[i].k || t->loc.line != want[i].line || t->loc.col != want[i].col) {
                printf("FAIL locations: token %d is %s at %d:%d, want %s at %d:%d\n", i, tok_kind_name(t->kind),
                       t->loc.line, t->loc.col, tok_kind_name(want[i].k), want[i].line, want[i].col);
                failures++;
            }
        }
        expect_str("string value", text, tl.toks[10].sval, "ab");
        expect_str("name value", text, tl.toks[1].sval, "f");
        checks++;
        if (tl.toks[12].ival != 12 || tl.toks[12].len != 2 || strncmp(tl.toks[12].start, "12", 2)) {
            printf("FAIL locations: int token value/text\n");
            failures++;
        }
        checks++;
        if (tl.toks[10].loc.src != src) {
            printf("FAIL locations: loc.src\n");
            failures++;
        }
    }
    tile_diags_free(&diags);
    tile_arena_free(&arena);
    tile_source_free(src);
}

static void test_names(void) {
    checks++;
    if (strcmp(tok_kind_name(TOK_LPAREN), "'('") || strcmp(tok_kind_name(TOK_NAME), "name") ||
        strcmp(tok_kind_name(TOK_AT_ASSIGN), "'@='") || strcmp(tok_kind_name(TOK_COUNT), "?")) {
        printf("FAIL tok_kind_name\n");
        failures++;
    }
}

static void test_deep_indent(void) {
    /* 150 nested ifs: the indentation limit (100) is a diagnostic, not a crash */
    tile_strbuf sb = {0};
    for (int i = 0; i < 150; i++) {
        for (int k = 0; k < i; k++) tile_sb_putc(&sb, ' ');
        tile_sb_puts(&sb, "if x:\n");
    }
    for (int k = 0; k < 150; k++) tile_sb_putc(&sb, ' ');
    tile_sb_puts(&sb, "pass\n");
    tile_strbuf t = {0}, d = {0};
    lex(sb.data, sb.len, &t, &d);
    checks++;
    if (!d.data || strcmp(d.data, "102:102: too many levels of indentation (limit 100)")) {
        printf("FAIL deep indentation: %s\n", d.data ? d.data : "(no diagnostics)");
        failures++;
    }
    tile_sb_free(&t);
    tile_sb_free(&d);
    tile_sb_free(&sb);
}

int main(void) {
    test_basic();
    test_operators();
    test_indentation();
    test_numbers();
    test_strings();
    test_errors();
    test_locations();
    test_names();
    test_deep_indent();
    printf("test_lexer: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
