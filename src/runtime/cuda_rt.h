/* cuda_rt.h — NVRTC entry points of the cuda backend (src/runtime/cuda.c) for tools and
 * tests that compile generated CUDA C without a GPU (NVRTC needs none). */
#ifndef TILE_CUDA_RT_H
#define TILE_CUDA_RT_H

#include "../core/core.h"

/* Is NVRTC loadable (libnvrtc.so.13/.12/.so, or under /usr/local/cuda/lib64)? */
bool tile_cuda_nvrtc_available(tile_strbuf *why);
/* Compile CUDA C `src` for `arch` ("sm_90a", "sm_80") with the backend's options. Returns 0
 * and a heap cubin (free it), or 1 with the NVRTC log in err. */
int tile_cuda_nvrtc_compile(const char *src, const char *name, const char *arch, void **cubin, size_t *n, tile_strbuf *err);

/* The caching device allocator's size class of an n-byte request and the bytes it allocates
 * (*cap >= n); -1 when n is too large to cache. Exposed for tests. */
int tile_cuda_size_class(size_t n, size_t *cap);

#endif
