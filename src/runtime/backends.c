/* backends.c — the registration table of targets (TILE_BACKEND_LIST in backend.h). */
#include <string.h>

#include "backend.h"

/* Each backend defines its table in its own file. Every backend is always built: each opens
 * its toolkit (a C compiler, libcuda/NVRTC, libOpenCL) only at run time and says from
 * available() when it is missing. Strong references also pull the objects out of the static
 * libtile.a. */
#define X(n) extern const tile_backend tile_backend_##n;
TILE_BACKEND_LIST(X)
#undef X

static const tile_backend *const all[TILE_BACKEND_COUNT] = {
#define X(n) &tile_backend_##n,
    TILE_BACKEND_LIST(X)
#undef X
};

const tile_backend *tile_backend_at(int i) { return i >= 0 && i < TILE_BACKEND_COUNT ? all[i] : NULL; }

const tile_backend *tile_backend_find(const char *name) {
    for (int i = 0; name && i < TILE_BACKEND_COUNT; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

const tile_backend *tile_backend_for_device(int type) {
    for (int i = 0; i < TILE_BACKEND_COUNT; i++)
        if (all[i]->device_type == type && all[i]->device) return all[i];
    return NULL;
}
