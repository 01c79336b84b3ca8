/* backends.c — the list of compiled targets. A backend that is not built is simply absent. */
#include <string.h>

#include "backend.h"

/* Each backend defines its table in its own folder. Every backend is always built: each
 * opens its toolkit (a C compiler, libcuda/NVRTC, libOpenCL) only at run time and says from
 * available() when it is missing. Strong references also pull the objects out of the static
 * libtile.a. */
extern const tile_backend tile_backend_cpu;
extern const tile_backend tile_backend_cuda;
extern const tile_backend tile_backend_opencl;

const tile_backend *tile_backend_find(const char *name) {
    const tile_backend *all[] = {&tile_backend_cpu, &tile_backend_cuda, &tile_backend_opencl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] && all[i]->name && !strcmp(all[i]->name, name)) return all[i];
    return NULL;
}
