/* cuda_tma.h — host side of the sm_90a lowering's TMA copies: the tensor maps a launch
 * takes (simt_launch.tma), encoded with cuTensorMapEncodeTiled from the driver. */
#ifndef TILE_CUDA_TMA_H
#define TILE_CUDA_TMA_H

#include "../codegen/simt.h"

/* CUtensorMap: 128 opaque bytes, 64-byte aligned */
typedef struct tile_cuda_tmap {
    _Alignas(64) unsigned long long v[16];
} tile_cuda_tmap;

/* Encode the tensor maps of launch L (L->ntma of them) into maps, for the device buffers at
 * bufptr[] (one CUdeviceptr per buffer of the plan) and this run's sizes. `encode` is the
 * driver's cuTensorMapEncodeTiled (NULL: an error saying the driver lacks it). Returns 0,
 * or 1 with a message naming the buffer and the constraint in err. */
int tile_cuda_tma_encode(void *encode, const simt_program *P, const simt_launch *L, const ir_func *f, const int64_t *sizes,
                         const unsigned long long *bufptr, tile_cuda_tmap *maps, tile_strbuf *err);

#endif
