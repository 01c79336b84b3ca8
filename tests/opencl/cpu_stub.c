/* cpu_stub.c — tile-gpu (the GPU targets' test CLI) leaves the cpu backend out so that the
 * GPU tests do not depend on it; backends.c references it strongly, so this table stands in
 * for it and says it is not part of this binary. */
#include "runtime/backend.h"

static bool cpu_absent(tile_strbuf *why) {
    tile_sb_puts(why, "the cpu backend is not part of tile-gpu (use tile)");
    return false;
}

const tile_backend tile_backend_cpu = {.name = "cpu", .available = cpu_absent, .pipeline = "cpu"};
