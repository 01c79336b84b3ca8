/* cli_fuzz.c — `tile fuzz`: differential testing of the targets on random programs.
 *
 *   tile fuzz --seconds N [--targets interp,cpu[,opencl][,cuda]] [--seed S] [--out DIR] [--jobs 1]
 *             [--count N] [--form plain|tile|any] [--timeout S] [--shrink-seconds S]
 *             [--print] [--verbose] [--quiet] [--progress S]
 *
 * Program i of a run uses seed S+i, so `tile fuzz --seed S+i --count 1` regenerates it.
 * While it runs, a progress line on stderr (programs, per-target findings, elapsed and
 * remaining time) is redrawn in place after every program when stderr is a terminal, and
 * printed every S seconds (--progress, default 10) otherwise; --quiet turns it off.
 * See docs/fuzz.md. Exit 0 when no target disagreed with the interpreter, 1 otherwise, 2 when
 * a target is not usable here. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fuzz/progfuzz.h"
#include "tile.h"

int tile_cmd_fuzz(int argc, char **argv);

#define MAX_TARGETS 8

static void fuzz_usage(FILE *o) {
    fputs("usage: tile fuzz --seconds N [--targets interp,cpu[,opencl][,cuda]] [--seed S] [--out DIR] [--jobs 1]\n"
          "                 [--count N] [--form plain|tile|any] [--timeout S] [--shrink-seconds S] [--print] [--verbose]\n"
          "                 [--quiet] [--progress S]\n"
          "  Generates random well-typed TileLang programs, runs them on every target with the same\n"
          "  seeded inputs, compares with the interpreter, and shrinks a mismatch to a reproducer\n"
          "  DIR/tile-fuzz-SEED.tl. Program i uses seed S+i. Exit 0: no mismatch; 1: findings;\n"
          "  2: a target is not available here.\n"
          "  Progress goes to stderr: redrawn in place on a terminal, else a line every S seconds\n"
          "  (--progress, default 10; 0: after every program); --quiet turns it off.\n",
          o);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void comment_lines(FILE *f, const char *prefix, const char *text) {
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "# %s%.*s\n", prefix, (int)n, p);
        prefix = "  ";
        p += n;
        if (*p) p++;
    }
}

static int write_repro(const char *dir, const pf_prog *p, uint64_t pseed, const pf_result *r, const char *targets_arg, const char *const *targets,
                       uint64_t run_seed, int tests, char *path, size_t pathlen) {
    snprintf(path, pathlen, "%s/tile-fuzz-%llu.tl", dir, (unsigned long long)pseed);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "tile fuzz: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *text = pf_render(p, NULL);
    const char *tg = r->target >= 0 ? targets[r->target] : "interp";
    fprintf(f, "# tile fuzz reproducer: %s on target %s\n", pf_verdict_name(r->verdict), tg);
    fprintf(f, "# found by:    tile fuzz --seed %llu --targets %s  (program seed %llu; shrunk in %d tests)\n", (unsigned long long)run_seed, targets_arg,
            (unsigned long long)pseed, tests);
    fprintf(f, "# unshrunk:    tile fuzz --seed %llu --count 1 --targets %s --print\n", (unsigned long long)pseed, targets_arg);
    if (strncmp(tg, "interp-bug:", 11))
        fprintf(f, "# reproduce:   tile run %s --target %s --seed %llu --check\n", path, tg, (unsigned long long)pseed);
    fprintf(f, "# targets:     %s\n", targets_arg);
    comment_lines(f, "observed:    ", r->msg);
    fputs(text, f);
    fclose(f);
    free(text);
    return 0;
}

/* The progress line on stderr: redrawn in place (carriage return, erase to the end of the
 * line, cut to the terminal's width so it never wraps) when stderr is a terminal, a new line
 * every `interval` seconds otherwise. Other output first takes a drawn line away (fz_hide). */
typedef struct {
    bool on, tty, drawn;
    double interval, last;
} fz_progress;

static void fz_hide(fz_progress *pg) {
    if (pg->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        pg->drawn = false;
    }
}

static void fz_show(fz_progress *pg, double now, double t0, double seconds, long count, long generated, long run, long rejects,
                    const char *const *targets, int nt, const long *mism, const long *fails) {
    if (!pg->on || (!pg->tty && now - pg->last < pg->interval)) return;
    pg->last = now;
    char line[1024];
    size_t n = 0;
#define ADD(...)                                                                              \
    do {                                                                                      \
        int k_ = snprintf(line + n, sizeof line - n, __VA_ARGS__);                            \
        if (k_ > 0) n = n + (size_t)k_ < sizeof line ? n + (size_t)k_ : sizeof line - 1;      \
    } while (0)
    double el = now - t0;
    if (count >= 0) ADD("tile fuzz: %ld/%ld programs, %ld run, %ld rejects", generated, count, run, rejects);
    else ADD("tile fuzz: %ld programs, %ld run, %ld rejects", generated, run, rejects);
    for (int t = 0; t < nt; t++) ADD("; %s: %ld mismatches, %ld failures", targets[t], mism[t], fails[t]);
    double left = count >= 0 ? (generated ? el / (double)generated * (double)(count - generated) : 0) : seconds - el;
    ADD("; %.0f s, %s%.0f s left", el, count >= 0 ? "~" : "", left > 0 ? left : 0);
#undef ADD
    if (pg->tty) {
        struct winsize ws;
        if (!ioctl(fileno(stderr), TIOCGWINSZ, &ws) && ws.ws_col > 1 && n >= ws.ws_col) line[n = ws.ws_col - 1] = 0;
        fprintf(stderr, "\r%s\033[K", line);
        pg->drawn = true;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    fflush(stderr);
}

int tile_cmd_fuzz(int argc, char **argv) {
    double seconds = 10, progress_every = 10, timeout = 120, shrink_seconds = 60;
    const char *targets_arg = "interp,cpu", *out_dir = "fuzz-out", *form_s = "any";
    uint64_t seed = 0;
    bool have_seed = false, print = false, verbose = false, quiet = false;
    long count = -1;
    int jobs = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                                        \
    do {                                                                              \
        if (!v) { fprintf(stderr, "tile fuzz: %s needs a value\n", a); return 1; }    \
        i++;                                                                          \
    } while (0)
        char *end = NULL;
        if (!strcmp(a, "--seconds")) { NEED(); seconds = strtod(v, &end); if (*end || seconds < 0) goto bad; }
        else if (!strcmp(a, "--targets")) { NEED(); targets_arg = v; }
        else if (!strcmp(a, "--seed")) { NEED(); seed = strtoull(v, &end, 0); if (*end || !*v) goto bad; have_seed = true; }
        else if (!strcmp(a, "--out")) { NEED(); out_dir = v; }
        else if (!strcmp(a, "--jobs")) { NEED(); jobs = atoi(v); if (jobs < 1) goto bad; }
        else if (!strcmp(a, "--count")) { NEED(); count = strtol(v, &end, 0); if (*end || count < 0) goto bad; }
        else if (!strcmp(a, "--form")) { NEED(); form_s = v; }
        else if (!strcmp(a, "--timeout")) { NEED(); timeout = strtod(v, &end); if (*end || timeout <= 0) goto bad; }
        else if (!strcmp(a, "--shrink-seconds")) { NEED(); shrink_seconds = strtod(v, &end); if (*end || shrink_seconds < 0) goto bad; }
        else if (!strcmp(a, "--print")) print = true;
        else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) verbose = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = true;
        else if (!strcmp(a, "--progress")) { NEED(); progress_every = strtod(v, &end); if (*end || !*v || progress_every < 0) goto bad; }
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { fuzz_usage(stdout); return 0; }
        else { fprintf(stderr, "tile fuzz: unknown argument '%s'\n", a); fuzz_usage(stderr); return 1; }
        continue;
    bad:
        fprintf(stderr, "tile fuzz: bad value '%s' for %s\n", v, a);
        return 1;
#undef NEED
    }
    int form = !strcmp(form_s, "plain") ? PF_FORM_PLAIN : !strcmp(form_s, "tile") ? PF_FORM_TILE : !strcmp(form_s, "any") ? PF_FORM_ANY : -2;
    if (form == -2) { fprintf(stderr, "tile fuzz: --form expects plain, tile or any, got '%s'\n", form_s); return 1; }
    if (!have_seed) seed = (uint64_t)time(NULL);
    if (jobs > 1) fprintf(stderr, "tile fuzz: note: --jobs %d: this version runs one program at a time\n", jobs);

    /* targets */
    char *tcopy = cli_xstrdup(targets_arg);
    const char *targets[MAX_TARGETS];
    int nt = 0;
    for (char *sv = NULL, *t = strtok_r(tcopy, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        if (nt == MAX_TARGETS) { fprintf(stderr, "tile fuzz: at most %d targets\n", MAX_TARGETS); free(tcopy); return 1; }
        bool known = !strncmp(t, "interp-bug:", 11);
        for (int i = 0; i < tile_num_targets(); i++) known = known || !strcmp(t, tile_target_name(i));
        if (!known) {
            fprintf(stderr, "tile fuzz: unknown target '%s' (", t);
            for (int i = 0; i < tile_num_targets(); i++) fprintf(stderr, "%s%s", i ? ", " : "", tile_target_name(i));
            fputs(")\n", stderr);
            free(tcopy);
            return 1;
        }
        targets[nt++] = t;
    }
    if (!nt) { fprintf(stderr, "tile fuzz: --targets is empty\n"); free(tcopy); return 1; }
    if (!print) {
        /* a target that cannot run here would make every program a failure: refuse up front */
        for (int t = 0; t < nt; t++) {
            char why[1024];
            if (!pf_target_available(targets[t], why, sizeof why)) {
                fprintf(stderr, "tile fuzz: target '%s' is not available here: %s\n", targets[t], why);
                free(tcopy);
                return 2;
            }
        }
    }

    if (print) {
        long n = count < 0 ? 1 : count;
        for (long i = 0; i < n; i++) {
            pf_prog *p = pf_generate(seed + (uint64_t)i, form);
            char *text = pf_render(p, NULL);
            printf("# program seed %llu\n%s\n", (unsigned long long)(seed + (uint64_t)i), text);
            free(text);
            pf_prog_free(p);
        }
        free(tcopy);
        return 0;
    }

    /* compiled targets cache their objects: keep them out of the user's cache */
    char cache_dir[] = "/tmp/tile-fuzz-cache-XXXXXX";
    bool own_cache = false;
    if (tile_env_is_set("TILE_CACHE_DIR") != 1 && mkdtemp(cache_dir)) {
        setenv("TILE_CACHE_DIR", cache_dir, 1);
        own_cache = true;
    }
    mkdir(out_dir, 0777);

    long generated = 0, run = 0, rejects = 0, nplain = 0, ntile = 0;
    long fails[MAX_TARGETS] = {0}, mism[MAX_TARGETS] = {0};
    int rejects_written = 0;
    double t0 = tile_now();
    if (count >= 0) printf("tile fuzz: seed %llu, targets %s, %ld programs\n", (unsigned long long)seed, targets_arg, count);
    else printf("tile fuzz: seed %llu, targets %s, %.0f s\n", (unsigned long long)seed, targets_arg, seconds);
    fflush(stdout);
    pf_config cfg = {targets, nt, timeout, verbose};
    fz_progress pg = {!quiet, isatty(fileno(stderr)) == 1, false, progress_every, t0};
    for (long i = 0; (count < 0 || i < count) && (count >= 0 || tile_now() - t0 < seconds); i++) {
        uint64_t ps = seed + (uint64_t)i;
        pf_prog *p = pf_generate(ps, form);
        generated++;
        if (pf_prog_form(p) == PF_FORM_PLAIN) nplain++;
        else ntile++;
        if (verbose) fz_hide(&pg); /* pf_check's own lines */
        pf_result r = pf_check(p, &cfg);
        if (verbose || r.verdict != PF_OK) fz_hide(&pg); /* a line of its own follows */
        if (verbose) fprintf(stderr, "fuzz: program %llu (%s form): %s%s%s\n", (unsigned long long)ps, pf_prog_form(p) ? "tile" : "plain",
                             pf_verdict_name(r.verdict), r.verdict ? ": " : "", r.verdict ? r.msg : "");
        if (r.verdict == PF_REJECT || (r.target < 0 && r.verdict != PF_OK)) {
            rejects++;
            fprintf(stderr, "tile fuzz: generator reject (program seed %llu): %.300s\n", (unsigned long long)ps, r.msg);
            if (rejects_written < 5) {
                char path[4096];
                snprintf(path, sizeof path, "%s/tile-fuzz-reject-%llu.tl", out_dir, (unsigned long long)ps);
                FILE *f = fopen(path, "w");
                if (f) {
                    char *text = pf_render(p, NULL);
                    comment_lines(f, "generator reject: ", r.msg);
                    fputs(text, f);
                    free(text);
                    fclose(f);
                    rejects_written++;
                }
            }
            pf_prog_free(p);
            fz_show(&pg, tile_now(), t0, seconds, count, generated, run, rejects, targets, nt, mism, fails);
            continue;
        }
        run++;
        if (r.verdict != PF_OK) {
            if (r.verdict == PF_MISMATCH) mism[r.target]++;
            else fails[r.target]++;
            printf("tile fuzz: %s on %s (program seed %llu): %s\n", pf_verdict_name(r.verdict), targets[r.target], (unsigned long long)ps, r.msg);
            fflush(stdout);
            int tests = 0;
            pf_prog *s = pf_shrink(p, &cfg, &r, 400, shrink_seconds, &tests);
            pf_result rs = pf_check(s, &cfg);
            if (rs.verdict != r.verdict || rs.target != r.target) rs = r; /* flaky: keep the first message */
            char path[4096];
            if (!write_repro(out_dir, s, ps, &rs, targets_arg, targets, seed, tests, path, sizeof path))
                printf("tile fuzz: reproducer (%d shrink tests) written to %s\n", tests, path);
            fflush(stdout);
            pf_prog_free(s);
        }
        pf_prog_free(p);
        fz_show(&pg, tile_now(), t0, seconds, count, generated, run, rejects, targets, nt, mism, fails);
    }
    fz_hide(&pg);
    double el = tile_now() - t0;
    long total_findings = 0;
    printf("tile fuzz: %ld programs generated (%ld plain, %ld tile), %ld run, %ld generator rejects, %.1f s;", generated, nplain, ntile, run, rejects, el);
    for (int t = 0; t < nt; t++) {
        printf(" %s: %ld mismatches, %ld failures%s", targets[t], mism[t], fails[t], t + 1 < nt ? ";" : "");
        total_findings += mism[t] + fails[t];
    }
    printf("\n");
    if (own_cache) nftw(cache_dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(tcopy);
    return total_findings ? 1 : 0;
}
