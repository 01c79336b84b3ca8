/* cpu_cache.h — the cpu backend's compiler driver and on-disk cache of shared objects.
 *
 * Cache directory: $TILE_CACHE_DIR, else $XDG_CACHE_HOME/tile, else ~/.cache/tile (created
 * on demand). Key: a 128-bit hash of the generated source, the compiler's identity (the
 * first line of `$CC --version`, remembered per process and, per compiler binary, on disk),
 * the flags, the kernel's compile options (tb_options_key), the host CPU (the code is built
 * for -march=native), the ABI and tile versions.
 * Entries: cpu-<key>.so (exporting `tile_entry` and `tile_stamp` = the key) and cpu-<key>.c.
 */
#ifndef TILE_CPU_CACHE_H
#define TILE_CPU_CACHE_H

#include "../core/core.h"

typedef struct cpu_loaded {
    void *handle;     /* dlopen handle */
    void *entry;      /* int tile_entry(const tile_cpu_args *) */
    char key[40];     /* hex */
    bool cache_hit;
} cpu_loaded;

/* Is the compiler ($CC, default cc) there? On false, why. */
bool cpu_cc_available(tile_strbuf *why);

/* Find or build the shared object for `src` (the generated C, without the stamp), load it.
 * `name` is the kernel's name for messages. Returns 0, or 1 with a message in err (a failed
 * compile names the compiler and shows its output). */
int cpu_cache_load(const char *src, size_t len, const char *name, const tb_options *opts, cpu_loaded *out, tile_strbuf *err);

/* The cache directory in use (created if needed); NULL with a message if none is usable. */
const char *cpu_cache_dir(tile_strbuf *err);

/* The compiler flags (without $CC itself, the output and the input). */
const char *cpu_cc_flags(const tb_options *opts, char *buf, size_t n);

#endif
