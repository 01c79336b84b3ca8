/* log.c — levelled logging with host:pid prefixes, one channel per library (base.h). */
#define _GNU_SOURCE
#include "base.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_host[64];
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;
static void host_init(void) {
    if (gethostname(g_host, sizeof g_host - 1) != 0 || !g_host[0]) strcpy(g_host, "localhost");
    g_host[sizeof g_host - 1] = 0;
}
const char *tb_hostname(void) {
    pthread_once(&g_host_once, host_init);
    return g_host;
}

/* The threshold of each channel, read once (-2: not read yet): a message of level L is
 * written when L <= threshold. */
static _Atomic int g_threshold[TB_CH_COUNT] = {-2, -2};

static int threshold(tb_log_channel ch) {
    int t = atomic_load_explicit(&g_threshold[ch], memory_order_relaxed);
    if (t != -2) return t;
    if (ch == TB_CH_TILE) t = (int)tb_knob_int(TB_K_TILE_LOG); /* error warn info debug: 0..3 */
    else {
        t = (int)tb_knob_int(TB_K_TLINK_DEBUG); /* none warn info debug: 0..3 */
        if (t == 0) t = -1;                      /* none: not even errors */
    }
    atomic_store_explicit(&g_threshold[ch], t, memory_order_relaxed);
    return t;
}

bool tb_log_enabled(tb_log_channel ch, int level) {
    if ((unsigned)ch >= TB_CH_COUNT) return false;
    return level <= threshold(ch);
}

static const char *const k_level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void tb_vlog(tb_log_channel ch, int level, const char *fmt, va_list ap) {
    if (!tb_log_enabled(ch, level)) return;
    const char *lv = level >= 0 && level <= 3 ? k_level_names[level] : "LOG";
    char buf[2048], *line = buf;
    int n = ch == TB_CH_TILE ? snprintf(buf, sizeof buf, "tile[%s:%d] %s ", tb_hostname(), (int)getpid(), lv)
                             : snprintf(buf, sizeof buf, "%s:%d tlink %s: ", tb_hostname(), (int)getpid(), lv);
    if (n < 0) return;
    va_list ap2;
    va_copy(ap2, ap);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap2);
    va_end(ap2);
    if (m < 0) return;
    size_t len = (size_t)n + (size_t)m;
    if (len + 2 > sizeof buf && (line = malloc(len + 2)) != NULL) {
        memcpy(line, buf, (size_t)n);
        vsnprintf(line + n, (size_t)m + 1, fmt, ap);
    } else if (!line) {
        line = buf;
        len = sizeof buf - 2;
    }
    line[len++] = '\n';
    ssize_t w = write(2, line, len);
    (void)w;
    if (line != buf) free(line);
}

void tb_log(tb_log_channel ch, int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tb_vlog(ch, level, fmt, ap);
    va_end(ap);
}
