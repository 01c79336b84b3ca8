/* dlpack.c — views of DLPack tensors and DLPack tensors over views (include/tile.h,
 * "DLPack"; the structs are in include/tile_dlpack.h). Zero copy both ways. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "tile_dlpack.h"

static tile_status dl_fail(char **error, const char *fmt, long a, long b) {
    if (error) {
        tile_strbuf sb = {0};
        tile_sb_printf(&sb, fmt, a, b);
        *error = sb.data;
    }
    return TILE_ERR_USER;
}

/* DLPack dtype -> tile dtype (lanes must be 1) */
static tile_dtype from_dl(DLDataType t) {
    if (t.lanes != 1) return TILE_DT_INVALID;
    switch (t.code) {
    case kDLInt: return t.bits == 8 ? TILE_DT_I8 : t.bits == 16 ? TILE_DT_I16 : t.bits == 32 ? TILE_DT_I32 : t.bits == 64 ? TILE_DT_I64 : TILE_DT_INVALID;
    case kDLUInt: return t.bits == 8 ? TILE_DT_U8 : t.bits == 16 ? TILE_DT_U16 : t.bits == 32 ? TILE_DT_U32 : t.bits == 64 ? TILE_DT_U64 : TILE_DT_INVALID;
    case kDLFloat: return t.bits == 16 ? TILE_DT_F16 : t.bits == 32 ? TILE_DT_F32 : t.bits == 64 ? TILE_DT_F64 : TILE_DT_INVALID;
    case kDLBfloat: return t.bits == 16 ? TILE_DT_BF16 : TILE_DT_INVALID;
    case kDLBool: return t.bits == 8 ? TILE_DT_BOOL : TILE_DT_INVALID;
    case kDLFloat8_e4m3fn: return t.bits == 8 ? TILE_DT_FP8_E4M3 : TILE_DT_INVALID;
    case kDLFloat8_e5m2: return t.bits == 8 ? TILE_DT_FP8_E5M2 : TILE_DT_INVALID;
    case kDLFloat4_e2m1fn: return t.bits == 4 ? TILE_DT_FP4_E2M1 : TILE_DT_INVALID;
    default: return TILE_DT_INVALID;
    }
}

static DLDataType to_dl(tile_dtype dt) {
    DLDataType t = {kDLFloat, 32, 1};
    t.bits = (uint8_t)tile_dtype_bits(dt);
    switch (dt) {
    case TILE_DT_BOOL: t.code = kDLBool; break;
    case TILE_DT_I8: case TILE_DT_I16: case TILE_DT_I32: case TILE_DT_I64: t.code = kDLInt; break;
    case TILE_DT_U8: case TILE_DT_U16: case TILE_DT_U32: case TILE_DT_U64: t.code = kDLUInt; break;
    case TILE_DT_BF16: t.code = kDLBfloat; break;
    case TILE_DT_FP8_E4M3: t.code = kDLFloat8_e4m3fn; break;
    case TILE_DT_FP8_E5M2: t.code = kDLFloat8_e5m2; break;
    case TILE_DT_FP4_E2M1: t.code = kDLFloat4_e2m1fn; break;
    default: t.code = kDLFloat; break;
    }
    return t;
}

static tile_status from_tensor(const DLTensor *t, tile_view *out, char **error) {
    if (error) *error = NULL;
    memset(out, 0, sizeof *out);
    if (t->ndim < 0 || t->ndim > 8) return dl_fail(error, "DLPack tensor of %ld dimensions: tile takes at most 8", (long)t->ndim, 0);
    tile_dtype dt = from_dl(t->dtype);
    if (dt == TILE_DT_INVALID)
        return dl_fail(error, "DLPack dtype (code %ld, %ld bits) has no tile dtype", (long)t->dtype.code, (long)t->dtype.bits + ((long)t->dtype.lanes - 1) * 1000);
    switch ((int)t->device.device_type) {
    case kDLCPU: case kDLCUDAHost: out->device.type = TILE_DEVICE_CPU; out->device.index = 0; break;
    case kDLCUDA: case kDLCUDAManaged: out->device.type = TILE_DEVICE_CUDA; out->device.index = t->device.device_id; break;
    case kDLOpenCL: out->device.type = TILE_DEVICE_OPENCL; out->device.index = t->device.device_id; break;
    default: return dl_fail(error, "DLPack device type %ld is not one tile runs on (cpu, cuda, opencl)", (long)t->device.device_type, 0);
    }
    out->data = t->data;
    out->byte_offset = (int64_t)t->byte_offset;
    out->dtype = dt;
    out->rank = t->ndim;
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        out->shape[d] = t->shape[d];
        out->strides[d] = t->strides ? t->strides[d] : s;
        s *= t->shape[d];
    }
    return TILE_OK;
}

tile_status tile_view_from_dlpack(const DLManagedTensor *t, tile_view *out, char **error) {
    if (!t || !out) return dl_fail(error, "tile_view_from_dlpack: NULL argument", 0, 0);
    return from_tensor(&t->dl_tensor, out, error);
}

tile_status tile_view_from_dlpack_versioned(const DLManagedTensorVersioned *t, tile_view *out, char **error) {
    if (!t || !out) return dl_fail(error, "tile_view_from_dlpack_versioned: NULL argument", 0, 0);
    if (t->version.major != DLPACK_MAJOR_VERSION)
        return dl_fail(error, "DLPack major version %ld: tile reads version %ld", (long)t->version.major, (long)DLPACK_MAJOR_VERSION);
    return from_tensor(&t->dl_tensor, out, error);
}

/* The managed tensors tile makes: the struct, the shape and strides in one allocation. */
typedef struct dl_owner {
    void (*release)(void *);
    void *ctx;
    int64_t shape[8], strides[8];
    union {
        DLManagedTensor plain;
        DLManagedTensorVersioned versioned;
    } u;
} dl_owner;

static dl_owner *owner_of_plain(DLManagedTensor *t) { return (dl_owner *)t->manager_ctx; }
static void del_plain(DLManagedTensor *t) {
    dl_owner *o = owner_of_plain(t);
    if (o->release) o->release(o->ctx);
    free(o);
}
static void del_versioned(DLManagedTensorVersioned *t) {
    dl_owner *o = (dl_owner *)t->manager_ctx;
    if (o->release) o->release(o->ctx);
    free(o);
}

static void fill(DLTensor *t, dl_owner *o, const tile_view *v) {
    t->data = v->data;
    t->byte_offset = (uint64_t)v->byte_offset;
    t->ndim = v->rank;
    t->dtype = to_dl(v->dtype);
    t->device.device_type = v->device.type == TILE_DEVICE_CUDA ? kDLCUDA : v->device.type == TILE_DEVICE_OPENCL ? kDLOpenCL : kDLCPU;
    t->device.device_id = v->device.index;
    memcpy(o->shape, v->shape, sizeof o->shape);
    memcpy(o->strides, v->strides, sizeof o->strides);
    t->shape = o->shape;
    t->strides = o->strides;
}

DLManagedTensorVersioned *tile_view_to_dlpack_versioned(const tile_view *v, void (*release)(void *ctx), void *ctx) {
    if (!v || v->rank < 0 || v->rank > 8) return NULL;
    dl_owner *o = tile_xcalloc(1, sizeof *o);
    o->release = release;
    o->ctx = ctx;
    DLManagedTensorVersioned *t = &o->u.versioned;
    t->version.major = DLPACK_MAJOR_VERSION;
    t->version.minor = DLPACK_MINOR_VERSION;
    t->manager_ctx = o;
    t->deleter = del_versioned;
    t->flags = 0;
    fill(&t->dl_tensor, o, v);
    return t;
}

DLManagedTensor *tile_view_to_dlpack(const tile_view *v, void (*release)(void *ctx), void *ctx) {
    if (!v || v->rank < 0 || v->rank > 8) return NULL;
    dl_owner *o = tile_xcalloc(1, sizeof *o);
    o->release = release;
    o->ctx = ctx;
    DLManagedTensor *t = &o->u.plain;
    t->manager_ctx = o;
    t->deleter = del_plain;
    fill(&t->dl_tensor, o, v);
    return t;
}
