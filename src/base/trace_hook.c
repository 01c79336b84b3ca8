/* trace_hook.c — spans into libtile's Chrome-trace writer from code that does not link
 * libtile (libtilelink): the writer's entry points (tile_trace_enabled, tile_trace_event,
 * tile_now in include/tile.h) are looked up in the process with dlsym. Where libtile is not
 * loaded, or loaded without tracing, nothing is written. */
#include "base.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

typedef int (*enabled_fn)(void);
typedef void (*event_fn)(const char *, const char *, double, double, const char *);
typedef double (*now_fn)(void);

static _Atomic(enabled_fn) g_enabled;
static _Atomic(event_fn) g_event;
static _Atomic(now_fn) g_now;

/* libtile may be loaded after the first call (Python loads the libraries in either order):
 * look again until it is found, then keep what was found */
static int resolve(void) {
    if (atomic_load_explicit(&g_now, memory_order_acquire)) return 1;
    enabled_fn e = (enabled_fn)dlsym(RTLD_DEFAULT, "tile_trace_enabled");
    event_fn v = (event_fn)dlsym(RTLD_DEFAULT, "tile_trace_event");
    now_fn n = (now_fn)dlsym(RTLD_DEFAULT, "tile_now");
    if (!e || !v || !n) return 0;
    atomic_store_explicit(&g_enabled, e, memory_order_relaxed);
    atomic_store_explicit(&g_event, v, memory_order_relaxed);
    atomic_store_explicit(&g_now, n, memory_order_release);
    return 1;
}

int tb_trace_on(void) { return resolve() && atomic_load_explicit(&g_enabled, memory_order_relaxed)(); }

double tb_trace_now(void) { return resolve() ? atomic_load_explicit(&g_now, memory_order_relaxed)() : 0; }

void tb_trace_span(const char *name, const char *category, double start_s, double dur_s, const char *args_json) {
    if (resolve()) atomic_load_explicit(&g_event, memory_order_relaxed)(name, category, start_s, dur_s, args_json);
}
