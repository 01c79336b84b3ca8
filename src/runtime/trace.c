/* trace.c — Chrome trace output (include/tile.h, "tracing"): TILE_TRACE=FILE.json or
 * tile_trace_start(). Events are "complete" events (ph "X", microseconds) written as they
 * happen under a lock, one JSON object per line inside {"traceEvents": [...]}; the closing
 * bracket is written by tile_trace_stop or at exit, so the file opens in Perfetto /
 * chrome://tracing. Each thread is its own track (tid: a small number per thread). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_fp;
static int g_on;          /* read without the lock: a stale value costs one event at most */
static int g_first;
static double g_t0;
static int g_next_tid;
static _Thread_local int t_tid;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static void close_locked(void) {
    if (!g_fp) return;
    fputs("\n]}\n", g_fp);
    fclose(g_fp);
    g_fp = NULL;
    __atomic_store_n(&g_on, 0, __ATOMIC_RELEASE);
}
static void at_exit(void) {
    pthread_mutex_lock(&g_lock);
    close_locked();
    pthread_mutex_unlock(&g_lock);
}

static int open_locked(const char *path, tile_strbuf *err) {
    close_locked();
    g_fp = fopen(path, "w");
    if (!g_fp) {
        tile_sb_printf(err, "cannot write the trace file '%s'", path);
        return 1;
    }
    fputs("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [", g_fp);
    g_first = 1;
    g_t0 = tile_now();
    static int registered;
    if (!registered) {
        registered = 1;
        atexit(at_exit);
    }
    fprintf(g_fp, "\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"tile\"}}", (int)getpid());
    g_first = 0;
    __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
    return 0;
}

static void env_start(void) {
    const char *p = tb_knob_str(TB_K_TILE_TRACE);
    if (!p || !*p) return;
    tile_strbuf err = {0};
    pthread_mutex_lock(&g_lock);
    if (open_locked(p, &err)) tile_log(TILE_LOG_WARN, "TILE_TRACE: %s", err.data);
    pthread_mutex_unlock(&g_lock);
    tile_sb_free(&err);
}

bool rt_tracing(void) {
    pthread_once(&g_env_once, env_start);
    return __atomic_load_n(&g_on, __ATOMIC_ACQUIRE) != 0;
}

tile_status tile_trace_start(const char *path, char **error) {
    if (error) *error = NULL;
    pthread_once(&g_env_once, env_start);
    if (!path) return TILE_ERR_USER;
    tile_strbuf err = {0};
    pthread_mutex_lock(&g_lock);
    int rc = open_locked(path, &err);
    pthread_mutex_unlock(&g_lock);
    if (rc) {
        if (error) *error = err.data;
        else tile_sb_free(&err);
        return TILE_ERR_USER;
    }
    return TILE_OK;
}

void tile_trace_stop(void) {
    pthread_once(&g_env_once, env_start);
    pthread_mutex_lock(&g_lock);
    close_locked();
    pthread_mutex_unlock(&g_lock);
}

int tile_trace_enabled(void) { return rt_tracing(); }

static void put_json_string(FILE *fp, const char *s) {
    fputc('"', fp);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(fp, "\\%c", c);
        else if (c < 0x20) fprintf(fp, "\\u%04x", c);
        else fputc(c, fp);
    }
    fputc('"', fp);
}

void rt_trace_span(const char *name, const char *cat, double t0, double dur, const char *args) {
    if (!rt_tracing()) return;
    pthread_mutex_lock(&g_lock);
    if (g_fp) {
        if (!t_tid) t_tid = ++g_next_tid;
        fputs(g_first ? "\n" : ",\n", g_fp);
        g_first = 0;
        fputs("{\"name\": ", g_fp);
        put_json_string(g_fp, name);
        fputs(", \"cat\": ", g_fp);
        put_json_string(g_fp, cat ? cat : "tile");
        fprintf(g_fp, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d", (t0 - g_t0) * 1e6, dur > 0 ? dur * 1e6 : 0.0,
                (int)getpid(), t_tid);
        if (args && *args) fprintf(g_fp, ", \"args\": {%s}", args);
        fputc('}', g_fp);
        fflush(g_fp);
    }
    pthread_mutex_unlock(&g_lock);
}

void tile_trace_event(const char *name, const char *category, double start_s, double dur_s, const char *args_json) {
    rt_trace_span(name ? name : "event", category, start_s, dur_s, args_json);
}
