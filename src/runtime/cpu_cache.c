/* cpu_cache.c — see cpu_cache.h. */
#define _GNU_SOURCE
#include "cpu_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../codegen/cpu_abi.h"

/* -mprefer-vector-width=512: gcc and clang default to 256-bit vectors on AVX-512 CPUs; the
 * generated loops are exp/row-reduction bound and run 30-40% faster on 512-bit vectors
 * (softmax, bench/results/cpu-e2e-2026-11-29-3.md); no effect on CPUs without AVX-512. */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_VECTOR_WIDTH_FLAG " -mprefer-vector-width=512" /* an x86 option: other gccs reject it */
#else
#define CPU_VECTOR_WIDTH_FLAG ""
#endif
#define CPU_FLAGS "-std=gnu11 -O2 -fno-fast-math -ffp-contract=off -fno-math-errno -fopenmp-simd -march=native" \
    CPU_VECTOR_WIDTH_FLAG " -fPIC -shared -fvisibility=hidden -w"

const char *cpu_cc_flags(const tb_options *opts, char *buf, size_t n) {
    const char *extra = tb_opt_str(opts, TB_OPT_cpu_cflags);
    if (!extra) return CPU_FLAGS;
    snprintf(buf, n, "%s %s", CPU_FLAGS, extra);
    return buf;
}

/* ---------- words ---------- */
typedef struct words {
    char **v;
    int n, cap;
} words;
static void words_push(words *w, const char *s) {
    if (w->n + 2 > w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->v = tile_xrealloc(w->v, sizeof(char *) * (size_t)w->cap);
    }
    w->v[w->n++] = tile_xstrdup(s);
    w->v[w->n] = NULL;
}
static void words_split(words *w, const char *s) {
    while (s && *s) {
        while (*s == ' ' || *s == '\t') s++;
        if (!*s) break;
        size_t n = strcspn(s, " \t");
        char *t = tile_xcalloc(1, n + 1);
        memcpy(t, s, n);
        words_push(w, t);
        free(t);
        s += n;
    }
}
static void words_free(words *w) {
    for (int i = 0; i < w->n; i++) free(w->v[i]);
    free(w->v);
    memset(w, 0, sizeof *w);
}

static const char *cc_string(void) {
    const char *cc = tb_knob_str(TB_K_CC);
    return cc && *cc ? cc : "cc";
}

/* The path of the compiler's executable (searching PATH), or NULL. */
static char *find_exe(const char *name) {
    if (strchr(name, '/')) return access(name, X_OK) == 0 ? tile_xstrdup(name) : NULL;
    const char *path = tb_env_raw(TB_K_PATH);
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char buf[4096];
        if (n > 0 && n + strlen(name) + 2 < sizeof buf) {
            memcpy(buf, path, n);
            buf[n] = '/';
            strcpy(buf + n + 1, name);
            if (access(buf, X_OK) == 0) return tile_xstrdup(buf);
        }
        path += n;
        if (*path == ':') path++;
    }
    return NULL;
}

bool cpu_cc_available(tile_strbuf *why) {
    words w = {0};
    words_split(&w, cc_string());
    char *p = w.n ? find_exe(w.v[0]) : NULL;
    bool ok = p != NULL;
    if (!ok && why) tile_sb_printf(why, "no C compiler: '%s' ($CC, default cc) is not in PATH", w.n ? w.v[0] : "");
    free(p);
    words_free(&w);
    return ok;
}

/* Run argv with stdout and stderr appended to `log_fd`; returns the exit status, -1 if it
 * could not be started (errno-style message into err). */
static int run_cmd(char **argv, int log_fd, tile_strbuf *err) {
    pid_t pid = fork();
    if (pid < 0) {
        tile_sb_printf(err, "error: cannot start '%s': %s\n", argv[0], strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(log_fd, 1);
        dup2(log_fd, 2);
        execvp(argv[0], argv);
        dprintf(log_fd, "cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static char *read_all(const char *path, size_t max) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = tile_xcalloc(1, max + 1);
    size_t n = fread(buf, 1, max, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* Write data to path atomically (temp file + rename). */
static int write_atomic(const char *dir, const char *path, const char *data, size_t n) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/tmp-%d-%lx.part", dir, (int)getpid(), (unsigned long)random());
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* ---------- the cache directory ---------- */
static int mkdir_p(const char *path) {
    return tb_mkdir_p(path) == 0 && access(path, W_OK | X_OK) == 0 ? 0 : -1;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_dir[4096];
static char g_dir_src[4096]; /* the setting g_dir was made from (TILE_CACHE_DIR may change in tests) */

const char *cpu_cache_dir(tile_strbuf *err) {
    char want[4096];
    if (!tb_cache_dir(want, sizeof want)) snprintf(want, sizeof want, "/tmp/tile-cache-%d", (int)getuid());
    pthread_mutex_lock(&g_mu);
    if (g_dir[0] && !strcmp(g_dir_src, want)) {
        pthread_mutex_unlock(&g_mu);
        return g_dir;
    }
    const char *res = NULL;
    if (mkdir_p(want) == 0) {
        snprintf(g_dir, sizeof g_dir, "%s", want);
        snprintf(g_dir_src, sizeof g_dir_src, "%s", want);
        res = g_dir;
    } else {
        /* unusable: a private directory for this process, so runs still work */
        char tmpl[] = "/tmp/tile-cache-XXXXXX";
        if (mkdtemp(tmpl)) {
            tile_log(TILE_LOG_WARN, "cpu: cache directory '%s' is not usable (%s); using %s", want, strerror(errno), tmpl);
            snprintf(g_dir, sizeof g_dir, "%s", tmpl);
            snprintf(g_dir_src, sizeof g_dir_src, "%s", want);
            res = g_dir;
        } else if (err) {
            tile_sb_printf(err, "error: no usable cache directory for compiled kernels ('%s'); set TILE_CACHE_DIR\n", want);
        }
    }
    pthread_mutex_unlock(&g_mu);
    return res;
}

/* ---------- identities ---------- */
static char g_ccid[512];
static char g_ccid_for[1024];

/* The first line of `$CC --version`; remembered per process, and on disk per compiler binary
 * (path, inode, size, mtime) so a cache hit spawns nothing. */
static int cc_identity(const char *dir, char *out, size_t outlen, tile_strbuf *err) {
    const char *cc = cc_string();
    pthread_mutex_lock(&g_mu);
    if (g_ccid[0] && !strcmp(g_ccid_for, cc)) {
        snprintf(out, outlen, "%s", g_ccid);
        pthread_mutex_unlock(&g_mu);
        return 0;
    }
    pthread_mutex_unlock(&g_mu);
    words w = {0};
    words_split(&w, cc);
    char *exe = w.n ? find_exe(w.v[0]) : NULL;
    if (!exe) {
        tile_sb_printf(err, "error: no C compiler: '%s' ($CC, default cc) is not in PATH\n", w.n ? w.v[0] : cc);
        words_free(&w);
        return 1;
    }
    struct stat st;
    char idpath[4096] = "";
    if (stat(exe, &st) == 0) {
        char desc[4096 + 200];
        snprintf(desc, sizeof desc, "%s|%s|%llu|%llu|%lld|%lld.%09ld", cc, exe, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
        snprintf(idpath, sizeof idpath, "%s/cc-%016llx.id", dir, (unsigned long long)tile_hash64(desc, strlen(desc), 7));
    }
    char line[512] = "";
    char *cached = idpath[0] ? read_all(idpath, sizeof line - 1) : NULL;
    if (cached && cached[0]) {
        snprintf(line, sizeof line, "%s", cached);
    } else {
        char logp[4096];
        snprintf(logp, sizeof logp, "%s/tmp-%d-%lx.ver", dir, (int)getpid(), (unsigned long)random());
        int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            tile_sb_printf(err, "error: cannot write in the cache directory %s: %s\n", dir, strerror(errno));
            free(cached);
            free(exe);
            words_free(&w);
            return 1;
        }
        words_push(&w, "--version");
        int rc = run_cmd(w.v, fd, err);
        close(fd);
        char *txt = read_all(logp, 4096);
        unlink(logp);
        if (rc != 0 || !txt || !txt[0]) {
            tile_sb_printf(err, "error: the C compiler '%s' does not answer --version (exit %d)%s%s\n", cc, rc, txt ? ":\n" : "", txt ? txt : "");
            free(txt);
            free(cached);
            free(exe);
            words_free(&w);
            return 1;
        }
        size_t n = strcspn(txt, "\n");
        if (n >= sizeof line) n = sizeof line - 1;
        memcpy(line, txt, n);
        line[n] = 0;
        free(txt);
        if (idpath[0]) write_atomic(dir, idpath, line, strlen(line));
    }
    free(cached);
    free(exe);
    words_free(&w);
    pthread_mutex_lock(&g_mu);
    snprintf(g_ccid, sizeof g_ccid, "%s", line);
    snprintf(g_ccid_for, sizeof g_ccid_for, "%s", cc);
    pthread_mutex_unlock(&g_mu);
    snprintf(out, outlen, "%s", line);
    return 0;
}

/* model name + flags of the host CPU (the code is compiled with -march=native) */
static char g_hostid[16384];
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;
static void host_init(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char ln[8192];
    size_t used = 0;
    int got = 0;
    while (got < 2 && fgets(ln, sizeof ln, f)) {
        if (!strncmp(ln, "model name", 10) || !strncmp(ln, "flags", 5)) {
            size_t n = strlen(ln);
            if (used + n < sizeof g_hostid) {
                memcpy(g_hostid + used, ln, n);
                used += n;
            }
            got++;
        }
    }
    g_hostid[used] = 0;
    fclose(f);
}

/* ---------- load / build ---------- */
static int try_load(const char *so, const char *key, cpu_loaded *out, char *why, size_t whylen) {
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, whylen, "dlopen: %s", e ? e : "?");
        return 1;
    }
    void *entry = dlsym(h, "tile_entry");
    const char *stamp = (const char *)dlsym(h, "tile_stamp");
    if (!entry || !stamp) {
        snprintf(why, whylen, "missing symbol %s", entry ? "tile_stamp" : "tile_entry");
        dlclose(h);
        return 1;
    }
    if (strcmp(stamp, key) != 0) {
        snprintf(why, whylen, "stamp mismatch (built for %.40s)", stamp);
        dlclose(h);
        return 1;
    }
    out->handle = h;
    out->entry = entry;
    return 0;
}

int cpu_cache_load(const char *src, size_t len, const char *name, const tb_options *opts, cpu_loaded *out, tile_strbuf *err) {
    memset(out, 0, sizeof *out);
    const char *dir = cpu_cache_dir(err);
    if (!dir) return 1;
    char ccid[512];
    if (cc_identity(dir, ccid, sizeof ccid, err)) return 1;
    pthread_once(&g_host_once, host_init);
    char fbuf[2048];
    const char *flags = cpu_cc_flags(opts, fbuf, sizeof fbuf);
    char *okey = tb_options_key(opts); /* every option, also those that leave the source as it is */
    char ver[64];
    snprintf(ver, sizeof ver, "tile %s abi %d", tile_version(), TILE_CPU_ABI_VERSION);
    uint64_t h1 = 0x9E3779B97F4A7C15ull, h2 = 0xC2B2AE3D27D4EB4Full;
    const char *parts[6] = {ccid, flags, g_hostid, ver, cc_string(), okey};
    h1 = tile_hash64(src, len, h1);
    h2 = tile_hash64(src, len, h2);
    for (int i = 0; i < 6; i++) {
        h1 = tile_hash64(parts[i], strlen(parts[i]) + 1, h1);
        h2 = tile_hash64(parts[i], strlen(parts[i]) + 1, h2 ^ (uint64_t)i);
    }
    free(okey);
    snprintf(out->key, sizeof out->key, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
    char so[4096], csrc[4096];
    snprintf(so, sizeof so, "%s/cpu-%s.so", dir, out->key);
    snprintf(csrc, sizeof csrc, "%s/cpu-%s.c", dir, out->key);
    char why[512] = "";
    if (access(so, F_OK) == 0) {
        if (try_load(so, out->key, out, why, sizeof why) == 0) {
            out->cache_hit = true;
            tile_log(TILE_LOG_INFO, "cpu: cache hit %s", so);
            return 0;
        }
        tile_log(TILE_LOG_WARN, "cpu: cache entry %s is corrupt or stale (%s); rebuilding", so, why);
        unlink(so);
    }
    /* build */
    double t0 = tile_now();
    char tmpc[4096], tmpso[4096], logp[4096];
    unsigned long r = (unsigned long)random() ^ (unsigned long)(tile_now() * 1e9);
    snprintf(tmpc, sizeof tmpc, "%s/tmp-%s-%d-%lx.c", dir, out->key, (int)getpid(), r);
    snprintf(tmpso, sizeof tmpso, "%s/tmp-%s-%d-%lx.so", dir, out->key, (int)getpid(), r);
    snprintf(logp, sizeof logp, "%s/tmp-%s-%d-%lx.log", dir, out->key, (int)getpid(), r);
    FILE *f = fopen(tmpc, "wb");
    if (!f) {
        tile_sb_printf(err, "error: cannot write %s: %s\n", tmpc, strerror(errno));
        return 1;
    }
    fwrite(src, 1, len, f);
    fprintf(f, "\nTILE_EXPORT const char tile_stamp[] = \"%s\";\n", out->key);
    if (fclose(f) != 0) {
        unlink(tmpc);
        tile_sb_printf(err, "error: cannot write %s\n", tmpc);
        return 1;
    }
    words w = {0};
    words_split(&w, cc_string());
    words_split(&w, flags);
    words_push(&w, "-o");
    words_push(&w, tmpso);
    words_push(&w, tmpc);
    words_push(&w, "-lm");
    int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = fd < 0 ? -1 : run_cmd(w.v, fd, err);
    if (fd >= 0) close(fd);
    if (rc != 0) {
        char *log = read_all(logp, 16000);
        tile_strbuf cmd = {0};
        for (int i = 0; i < w.n; i++) tile_sb_printf(&cmd, "%s%s", i ? " " : "", w.v[i]);
        tile_sb_printf(err, "error: the C compiler failed on kernel '%s' (exit %d): %s\n%s", name, rc, cmd.data ? cmd.data : "", log ? log : "");
        tile_sb_printf(err, "(the generated source is kept in %s; `tile emit --target cpu` prints it)\n", tmpc);
        tile_sb_free(&cmd);
        free(log);
        unlink(logp);
        unlink(tmpso);
        words_free(&w);
        return 1;
    }
    words_free(&w);
    unlink(logp);
    /* publish: source first, then the object (readers only look at the object) */
    rename(tmpc, csrc);
    if (rename(tmpso, so) != 0) {
        tile_sb_printf(err, "error: cannot move the compiled kernel into the cache (%s): %s\n", so, strerror(errno));
        unlink(tmpso);
        return 1;
    }
    tile_log(TILE_LOG_INFO, "cpu: compiled %s with %s in %.1f ms -> %s", name, cc_string(), (tile_now() - t0) * 1e3, so);
    if (try_load(so, out->key, out, why, sizeof why)) {
        tile_sb_printf(err, "error: the compiled kernel '%s' does not load (%s): %s\n", name, so, why);
        return 1;
    }
    return 0;
}
