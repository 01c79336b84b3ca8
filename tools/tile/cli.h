/* cli.h — helpers of the `tile` CLI, which builds on the public headers alone
 * (include/tile.h; include/tlink.h for the TileLink commands). */
#ifndef TILE_CLI_H
#define TILE_CLI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tile.h"

static inline void *cli_die_oom(void) {
    fputs("tile: out of memory\n", stderr);
    exit(1);
}
static inline void *cli_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    return p ? p : cli_die_oom();
}
static inline void *cli_xcalloc(size_t n, size_t m) {
    void *p = calloc(n ? n : 1, m ? m : 1);
    return p ? p : cli_die_oom();
}
static inline void *cli_xrealloc(void *q, size_t n) {
    void *p = realloc(q, n ? n : 1);
    return p ? p : cli_die_oom();
}
static inline char *cli_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(cli_xmalloc(n), s, n);
}

#endif
