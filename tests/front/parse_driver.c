/* parse_driver — runs the TileLang lexer + parser on files, for the golden tests.
 *
 *   parse_driver FILE                   print the AST dump (stdout) or the diagnostics
 *                                       (stderr); exit 1 if there were errors
 *   parse_driver --expect GOLDEN FILE   GOLDEN ending in .ast: FILE must parse without
 *                                       errors and dump exactly as GOLDEN; otherwise
 *                                       (.expected): FILE must give errors whose text
 *                                       is exactly GOLDEN. The source is named by its
 *                                       base name in messages so goldens are portable.
 *   parse_driver --update GOLDEN FILE   write GOLDEN from the current output
 *   parse_driver --smoke DIR            parse every file in DIR, every prefix of it and
 *                                       a set of deterministic mutations: must not crash
 *                                       or hang, and must be deterministic
 *   --max-errors N                      (before the mode) diagnostics cap, default 20
 */
#define _GNU_SOURCE
#include "front/front.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

static int max_errors = 20;

/* Parse text; put the dump into *dump and the diagnostics into *diag. Returns #errors. */
static int run(const char *name, const char *text, size_t len, tile_strbuf *dump, tile_strbuf *diag) {
    tile_source *src = tile_source_from_string(name, text, len);
    tile_arena arena;
    tile_arena_init(&arena);
    tile_diags diags;
    tile_diags_init(&diags);
    diags.max_errors = max_errors;
    ast_module *m = tile_parse(src, &arena, &diags);
    ast_dump(m, dump);
    for (int i = 0; i < diags.len; i++) tile_diag_format(&diags.items[i], diag);
    int errors = diags.errors;
    tile_diags_free(&diags);
    tile_arena_free(&arena);
    tile_source_free(src);
    return errors;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

static tile_source *load(const char *path) {
    const char *err = NULL;
    tile_source *s = tile_source_load(path, &err);
    if (!s) fprintf(stderr, "parse_driver: cannot read %s: %s\n", path, err ? err : "?");
    return s;
}

static void show_diff(const char *want, const char *got) {
    int line = 1;
    const char *a = want, *b = got;
    while (*a && *a == *b) {
        if (*a == '\n') line++;
        a++, b++;
    }
    fprintf(stderr, "first difference at line %d\n--- expected\n%s--- actual\n%s---\n", line, want, got);
}

static int mode_expect(const char *golden, const char *file, bool update) {
    tile_source *src = load(file);
    if (!src) return 2;
    tile_strbuf dump = {0}, diag = {0};
    int errors = run(base_name(file), src->text, src->len, &dump, &diag);
    tile_source_free(src);
    bool want_ast = ends_with(golden, ".ast");
    const char *got = want_ast ? (dump.data ? dump.data : "") : (diag.data ? diag.data : "");
    int rc = 0;
    if (update) {
        FILE *f = fopen(golden, "wb");
        if (!f) { fprintf(stderr, "parse_driver: cannot write %s\n", golden); rc = 2; }
        else { fputs(got, f); fclose(f); }
        if (want_ast && errors) { fprintf(stderr, "%s: warning: has errors:\n%s", file, diag.data); rc = 1; }
        if (!want_ast && !errors) { fprintf(stderr, "%s: warning: no errors\n", file); rc = 1; }
    } else {
        tile_source *g = load(golden);
        if (!g) { rc = 2; goto out; }
        if (want_ast && errors) {
            fprintf(stderr, "%s: unexpected errors:\n%s", file, diag.data);
            rc = 1;
        } else if (!want_ast && !errors) {
            fprintf(stderr, "%s: expected errors, got none\n", file);
            rc = 1;
        } else if (strlen(g->text) != g->len || strcmp(g->text, got)) {
            fprintf(stderr, "%s: output differs from %s\n", file, golden);
            show_diff(g->text, got);
            rc = 1;
        }
        tile_source_free(g);
    }
out:
    tile_sb_free(&dump);
    tile_sb_free(&diag);
    return rc;
}

/* One smoke input: parse (twice if `twice`: the outputs must agree). */
static int smoke_one(const char *name, const char *text, size_t len, bool twice) {
    tile_strbuf d1 = {0}, e1 = {0}, d2 = {0}, e2 = {0};
    run(name, text, len, &d1, &e1);
    if (!twice) {
        tile_sb_free(&d1);
        tile_sb_free(&e1);
        return 0;
    }
    run(name, text, len, &d2, &e2);
    int bad = d1.len != d2.len || e1.len != e2.len || (d1.len && memcmp(d1.data, d2.data, d1.len)) ||
              (e1.len && memcmp(e1.data, e2.data, e1.len));
    if (bad) fprintf(stderr, "%s: nondeterministic output\n", name);
    tile_sb_free(&d1); tile_sb_free(&e1); tile_sb_free(&d2); tile_sb_free(&e2);
    return bad;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int mode_smoke(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "parse_driver: cannot open %s\n", dir); return 2; }
    char **names = NULL;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        names = tile_xrealloc(names, sizeof(char *) * (size_t)(n + 1));
        names[n++] = tile_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    int failures = 0, inputs = 0;
    static const char inserts[] = "()[]:,\n \t\\\"'#=.*@";
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        tile_source *src = load(path);
        if (!src) { failures++; continue; }
        size_t len = src->len;
        /* the file itself and every prefix of it */
        for (size_t k = 0; k <= len; k++, inputs++) failures += smoke_one(names[i], src->text, k, k == len);
        /* deterministic mutations: each byte deleted, replaced, or preceded by a byte */
        char *buf = tile_xmalloc(len + 2);
        for (size_t k = 0; k < len; k++) {
            memcpy(buf, src->text, k);
            memcpy(buf + k, src->text + k + 1, len - k - 1);
            failures += smoke_one(names[i], buf, len - 1, false), inputs++;
            char ins = inserts[k % (sizeof inserts - 1)];
            memcpy(buf, src->text, len);
            buf[k] = ins;
            failures += smoke_one(names[i], buf, len, false), inputs++;
            memcpy(buf, src->text, k);
            buf[k] = ins;
            memcpy(buf + k + 1, src->text + k, len - k);
            failures += smoke_one(names[i], buf, len + 1, false), inputs++;
        }
        free(buf);
        tile_source_free(src);
        free(names[i]);
    }
    free(names);
    printf("smoke: %d files, %d inputs, %d failures\n", n, inputs, failures);
    if (n == 0) { fprintf(stderr, "parse_driver: no files in %s\n", dir); return 1; }
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    int a = 1;
    if (a + 1 < argc && !strcmp(argv[a], "--max-errors")) {
        max_errors = atoi(argv[a + 1]);
        a += 2;
    }
    if (a + 2 < argc && !strcmp(argv[a], "--expect")) return mode_expect(argv[a + 1], argv[a + 2], false);
    if (a + 2 < argc && !strcmp(argv[a], "--update")) return mode_expect(argv[a + 1], argv[a + 2], true);
    if (a + 1 < argc && !strcmp(argv[a], "--smoke")) return mode_smoke(argv[a + 1]);
    if (a + 1 == argc && argv[a][0] != '-') {
        tile_source *src = load(argv[a]);
        if (!src) return 2;
        tile_strbuf dump = {0}, diag = {0};
        int errors = run(src->name, src->text, src->len, &dump, &diag);
        if (errors) fputs(diag.data, stderr);
        else fputs(dump.data, stdout);
        tile_sb_free(&dump);
        tile_sb_free(&diag);
        tile_source_free(src);
        return errors ? 1 : 0;
    }
    fprintf(stderr,
            "usage: parse_driver [--max-errors N] FILE\n"
            "       parse_driver [--max-errors N] --expect|--update GOLDEN FILE\n"
            "       parse_driver [--max-errors N] --smoke DIR\n");
    return 2;
}
