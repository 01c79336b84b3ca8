/* paths.c — the cache-directory rule (base.h). */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool tb_cache_dir(char *buf, size_t n) {
    const char *d = tb_knob_str(TB_K_TILE_CACHE_DIR), *x = tb_env_raw(TB_K_XDG_CACHE_HOME), *h = tb_env_raw(TB_K_HOME);
    int w;
    if (d && *d) w = snprintf(buf, n, "%s", d);
    else if (x) w = snprintf(buf, n, "%s/tile", x);
    else if (h) w = snprintf(buf, n, "%s/.cache/tile", h);
    else return false;
    return w > 0 && (size_t)w < n;
}

int tb_mkdir_p(const char *path) {
    char buf[4096];
    if (!path || !*path || strlen(path) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    struct stat st;
    return stat(buf, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}
