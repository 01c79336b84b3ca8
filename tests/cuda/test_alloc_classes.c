/* test_alloc_classes — the size classes of the cuda backend's caching allocator
 * (src/runtime/cuda.c; no GPU needed): a class's size holds the request, wastes at most 25%
 * above 4 KiB (at most 255 bytes below), is its own class (so a freed block goes back to the
 * list it came from), and classes grow with the size. */
#include <stdint.h>
#include <stdio.h>

#include "runtime/cuda_rt.h"

int main(void) {
    int fails = 0, prev = -1;
    size_t prev_cap = 0;
    uint64_t s = 12345;
    for (int it = 0; it < 200000; it++) {
        size_t n;
        if (it < 70000) n = (size_t)it + 1; /* every size up to 70000 */
        else {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int bits = 1 + (int)((s >> 33) % 50);
            n = (size_t)((s >> 7) & ((1ull << bits) - 1)) + 1;
        }
        size_t cap = 0, cap2 = 0;
        int c = tile_cuda_size_class(n, &cap);
        if (c < 0) { printf("n=%zu: no class\n", n); fails++; continue; }
        if (cap < n) { printf("n=%zu: cap %zu < n\n", n, cap); fails++; }
        if (n > 4096 ? (double)cap > 1.25 * (double)n : cap - n > 255) { printf("n=%zu: cap %zu wastes too much\n", n, cap); fails++; }
        if (tile_cuda_size_class(cap, &cap2) != c || cap2 != cap) { printf("n=%zu: cap %zu is in class %d, not %d\n", n, cap, tile_cuda_size_class(cap, &cap2), c); fails++; }
        if (it < 70000) {
            if (c < prev || (c == prev && cap != prev_cap) || (c > prev && cap <= prev_cap)) { printf("n=%zu: class %d (cap %zu) after class %d (cap %zu)\n", n, c, cap, prev, prev_cap); fails++; }
            prev = c;
            prev_cap = cap;
        }
        if (fails > 20) break;
    }
    size_t cap;
    if (tile_cuda_size_class((size_t)1 << 60, &cap) < 0) { printf("2^60 bytes: no class\n"); fails++; }
    if (fails) return 1;
    printf("ok\n");
    return 0;
}
