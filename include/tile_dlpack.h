/* tile_dlpack.h — the DLPack exchange structs (DLPack 1.x ABI), written from the DLPack
 * specification so that libtile needs no third-party header. Compatible with dlpack.h: do
 * not include both in one translation unit.
 *
 * A DLTensor is a view: data + byte_offset is element 0; shape[ndim]; strides[ndim] in
 * elements, or NULL for row-major contiguous. The managed forms carry a deleter the
 * consumer calls when it is done. The versioned form (DLPack >= 1.0, capsule name
 * "dltensor_versioned") adds a version and flags; the unversioned one (capsule "dltensor")
 * is what producers older than 1.0 give.
 */
#ifndef TILE_DLPACK_H
#define TILE_DLPACK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef DLPACK_MAJOR_VERSION
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct DLPackVersion {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

/* device types (the values Tile uses; others exist) */
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4, kDLCUDAManaged = 13 } DLDeviceType;

typedef struct DLDevice {
    DLDeviceType device_type;   /* an int32 enum */
    int32_t device_id;
} DLDevice;

/* type codes */
typedef enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
    kDLFloat8_e3m4 = 7,
    kDLFloat8_e4m3 = 8,
    kDLFloat8_e4m3b11fnuz = 9,
    kDLFloat8_e4m3fn = 10,
    kDLFloat8_e4m3fnuz = 11,
    kDLFloat8_e5m2 = 12,
    kDLFloat8_e5m2fnuz = 13,
    kDLFloat8_e8m0fnu = 14,
    kDLFloat6_e2m3fn = 15,
    kDLFloat6_e3m2fn = 16,
    kDLFloat4_e2m1fn = 17
} DLDataTypeCode;

typedef struct DLDataType {
    uint8_t code;     /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;   /* 1 for tensors of scalars */
} DLDataType;

typedef struct DLTensor {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;       /* NULL: contiguous row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#endif

#ifdef __cplusplus
}
#endif
#endif
