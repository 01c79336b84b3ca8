/* backends.c — the list of compiled targets. A backend that is not built is simply absent. */
#include <string.h>

#include "backend.h"

/* Each backend defines its table in its own folder. The cpu backend is always built (it
 * needs only a C compiler at run time), so it is referenced strongly: that also pulls its
 * object out of the static libtile.a. The GPU backends are weak until they land. */
extern const tile_backend tile_backend_cpu;
extern const tile_backend tile_backend_cuda __attribute__((weak));
extern const tile_backend tile_backend_opencl __attribute__((weak));

const tile_backend *tile_backend_find(const char *name) {
    const tile_backend *all[] = {&tile_backend_cpu, &tile_backend_cuda, &tile_backend_opencl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] && all[i]->name && !strcmp(all[i]->name, name)) return all[i];
    return NULL;
}
