/* gpu_coll.c — TileLink's device collectives: CUDA IPC transport between the GPUs of one
 * host, flag-synchronised collective kernels (SM path) and a copy-engine path whose
 * reductions are TileLang-generated kernels.
 *
 * In:  a host communicator (its store carries the IPC handles), device pointers, a CUstream.
 * Out: the tlink_gpu_* API of include/tlink.h ("device collectives"). Protocol and kernels:
 *      tilelink/kernels/gpu_coll.cu (hand-written) and tilelink/kernels/reduce.tl (TileLang),
 *      both embedded at build time (tilelink/kernels/kernels.cmake); docs/tilelink-gpu.md.
 * libcuda.so.1 and NVRTC are opened by src/base's loader (tb_dl_open, shared with libtile
 * without depending on it), so the library builds and runs without CUDA. */
#include "tl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include "gpu_kernels_text.h" /* generated: tl_gpu_coll_text, tl_gpu_convert_text, tl_gpu_reduce_text_{f32,f16,bf16} */

/* ---------------------------------------------------------------- the CUDA driver, NVRTC */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
    CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*Memcpy)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*MemHostAlloc)(void **, size_t, unsigned);
    CUresult (*MemFreeHost)(void *);
    CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*IpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*IpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*IpcCloseMemHandle)(CUdeviceptr);
    CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*StreamQuery)(CUstream);
    CUresult (*StreamWaitValue64)(CUstream, CUdeviceptr, unsigned long long, unsigned);
    CUresult (*StreamWriteValue64)(CUstream, CUdeviceptr, unsigned long long, unsigned);
    CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static struct {
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(nvrtcResult);
} nv;

static pthread_mutex_t g_load_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_cu_state, g_nv_state; /* 0 untried, 1 ok, -1 failed */
static char g_cu_why[256], g_nv_why[256];

#define CU_ATTR_CC_MAJOR 75
#define CU_ATTR_CC_MINOR 76
#define CU_ATTR_SM_COUNT 16
#define CU_ATTR_UNIFIED_ADDRESSING 41
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEMORYTYPE_UNIFIED 4
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 1
#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_MEMHOSTALLOC_DEVICEMAP 2
#define CU_STREAM_WAIT_VALUE_GEQ 0
#define CU_STREAM_NON_BLOCKING 1
#define CUDA_ERROR_NOT_READY 600

static const char *cu_errname(CUresult r) {
    const char *s = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &s) == 0 && s) return s;
    return "CUDA error";
}

static int load_cuda_locked(void) {
    void *h = tb_dl_open(TB_DL_CUDA, NULL, g_cu_why, sizeof g_cu_why);
    if (!h) return -1;
    const tb_dl_sym syms[] = {
        {(void **)&cu.Init, "cuInit", NULL},
        {(void **)&cu.DeviceGetCount, "cuDeviceGetCount", NULL},
        {(void **)&cu.DeviceGet, "cuDeviceGet", NULL},
        {(void **)&cu.DeviceGetAttribute, "cuDeviceGetAttribute", NULL},
        {(void **)&cu.DeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL},
        {(void **)&cu.DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL},
        {(void **)&cu.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL},
        {(void **)&cu.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
        {(void **)&cu.CtxSetCurrent, "cuCtxSetCurrent", NULL},
        {(void **)&cu.CtxSynchronize, "cuCtxSynchronize", NULL},
        {(void **)&cu.MemAlloc, "cuMemAlloc_v2", NULL},
        {(void **)&cu.MemFree, "cuMemFree_v2", NULL},
        {(void **)&cu.MemsetD8, "cuMemsetD8_v2", NULL},
        {(void **)&cu.Memcpy, "cuMemcpy", NULL},
        {(void **)&cu.MemcpyAsync, "cuMemcpyAsync", NULL},
        {(void **)&cu.MemHostAlloc, "cuMemHostAlloc", NULL},
        {(void **)&cu.MemFreeHost, "cuMemFreeHost", NULL},
        {(void **)&cu.MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", NULL},
        {(void **)&cu.IpcGetMemHandle, "cuIpcGetMemHandle", NULL},
        {(void **)&cu.IpcOpenMemHandle, "cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle"},
        {(void **)&cu.IpcCloseMemHandle, "cuIpcCloseMemHandle", NULL},
        {(void **)&cu.PointerGetAttribute, "cuPointerGetAttribute", NULL},
        {(void **)&cu.ModuleLoadData, "cuModuleLoadData", NULL},
        {(void **)&cu.ModuleUnload, "cuModuleUnload", NULL},
        {(void **)&cu.ModuleGetFunction, "cuModuleGetFunction", NULL},
        {(void **)&cu.LaunchKernel, "cuLaunchKernel", NULL},
        {(void **)&cu.StreamCreate, "cuStreamCreate", NULL},
        {(void **)&cu.StreamDestroy, "cuStreamDestroy_v2", NULL},
        {(void **)&cu.StreamSynchronize, "cuStreamSynchronize", NULL},
        {(void **)&cu.StreamQuery, "cuStreamQuery", NULL},
        {(void **)&cu.StreamWaitValue64, "cuStreamWaitValue64_v2", "cuStreamWaitValue64"},
        {(void **)&cu.StreamWriteValue64, "cuStreamWriteValue64_v2", "cuStreamWriteValue64"},
        {(void **)&cu.GetErrorName, "cuGetErrorName", NULL},
    };
    if (tb_dl_syms(h, TB_DL_CUDA, syms, (int)(sizeof syms / sizeof syms[0]), g_cu_why, sizeof g_cu_why)) return -1;
    CUresult r = cu.Init(0);
    if (r) {
        snprintf(g_cu_why, sizeof g_cu_why, "cuInit failed: %s", cu_errname(r));
        return -1;
    }
    int n = 0;
    if (cu.DeviceGetCount(&n) || n <= 0) {
        snprintf(g_cu_why, sizeof g_cu_why, "the CUDA driver shows no GPU");
        return -1;
    }
    return 1;
}

static int load_nvrtc_locked(void) {
    void *h = tb_dl_open(TB_DL_NVRTC, NULL, g_nv_why, sizeof g_nv_why);
    if (!h) return -1;
    const tb_dl_sym syms[] = {
        {(void **)&nv.CreateProgram, "nvrtcCreateProgram"}, {(void **)&nv.CompileProgram, "nvrtcCompileProgram"},
        {(void **)&nv.GetProgramLogSize, "nvrtcGetProgramLogSize"}, {(void **)&nv.GetProgramLog, "nvrtcGetProgramLog"},
        {(void **)&nv.GetCUBINSize, "nvrtcGetCUBINSize"}, {(void **)&nv.GetCUBIN, "nvrtcGetCUBIN"},
        {(void **)&nv.DestroyProgram, "nvrtcDestroyProgram"}, {(void **)&nv.GetErrorString, "nvrtcGetErrorString"},
    };
    if (tb_dl_syms(h, TB_DL_NVRTC, syms, (int)(sizeof syms / sizeof syms[0]), g_nv_why, sizeof g_nv_why)) return -1;
    return 1;
}

static int cuda_ok(void) {
    pthread_mutex_lock(&g_load_mu);
    if (!g_cu_state) g_cu_state = load_cuda_locked();
    pthread_mutex_unlock(&g_load_mu);
    return g_cu_state > 0;
}
static int nvrtc_ok(void) {
    pthread_mutex_lock(&g_load_mu);
    if (!g_nv_state) g_nv_state = load_nvrtc_locked();
    pthread_mutex_unlock(&g_load_mu);
    return g_nv_state > 0;
}

int tlink_gpu_available(char *why, size_t len) {
    int ok = cuda_ok();
    if (!ok && why && len) snprintf(why, len, "%s", g_cu_why);
    return ok;
}
int tlink_gpu_nvrtc_available(char *why, size_t len) {
    int ok = nvrtc_ok();
    if (!ok && why && len) snprintf(why, len, "%s", g_nv_why);
    return ok;
}

/* Compiles src for arch; *cubin malloc'd. 0 on success, else the log in err. */
static int nvrtc_compile(const char *src, const char *name, const char *arch, const char *const *defs, int ndefs,
                         char **cubin, size_t *n, char *err, size_t errlen) {
    *cubin = NULL;
    if (!nvrtc_ok()) { snprintf(err, errlen, "%s", g_nv_why); return -1; }
    nvrtcProgram prog;
    /* the one header gpu_coll.cu includes: src/base/convert.h */
    const char *hdr_text[1] = {tl_gpu_convert_text}, *hdr_name[1] = {"convert.h"};
    nvrtcResult r = nv.CreateProgram(&prog, src, name, 1, hdr_text, hdr_name);
    if (r) { snprintf(err, errlen, "nvrtcCreateProgram: %s", nv.GetErrorString(r)); return -1; }
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[16];
    int no = 0;
    opts[no++] = archopt;
    opts[no++] = "--std=c++17";
    opts[no++] = "-default-device";
    opts[no++] = "--fmad=false";
    opts[no++] = "-diag-suppress=177,550";
    for (int i = 0; i < ndefs && no < 16; i++) opts[no++] = defs[i];
    r = nv.CompileProgram(prog, no, opts);
    if (r) {
        size_t ln = 0;
        nv.GetProgramLogSize(prog, &ln);
        char *log = calloc(ln + 1, 1);
        if (log) nv.GetProgramLog(prog, log);
        snprintf(err, errlen, "NVRTC (%s, %s) failed: %s\n%s", name, arch, nv.GetErrorString(r), log ? log : "");
        free(log);
        nv.DestroyProgram(&prog);
        return -1;
    }
    size_t sz = 0;
    nv.GetCUBINSize(prog, &sz);
    *cubin = malloc(sz ? sz : 1);
    if (!*cubin) { nv.DestroyProgram(&prog); snprintf(err, errlen, "out of memory"); return -1; }
    nv.GetCUBIN(prog, *cubin);
    *n = sz;
    nv.DestroyProgram(&prog);
    return 0;
}

static const char *reduce_text(tlink_dtype dt) {
    switch (dt) {
    case TLINK_F32: return tl_gpu_reduce_text_f32;
    case TLINK_F16: return tl_gpu_reduce_text_f16;
    case TLINK_BF16: return tl_gpu_reduce_text_bf16;
    default: return NULL;
    }
}

int tlink_gpu_compile_check(const char *arch, int all, char *err, size_t errlen) {
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    if (!arch || !arch[0]) { snprintf(err, errlen, "arch: expected e.g. \"sm_90a\""); return -1; }
    int n = 0;
    for (int dt = 0; dt < TLINK_DTYPE_COUNT; dt++)
        for (int op = 0; op < TLINK_OP_COUNT; op++) {
            /* the quick set: every dtype once (sum), and every op once (on f32/i32) */
            if (!all && !((op == TLINK_SUM && dt == TLINK_F32) || (op == TLINK_AVG && dt == TLINK_BF16) ||
                          (op == TLINK_MAX && dt == TLINK_FP8_E4M3)))
                continue;
            char d1[32], d2[32];
            snprintf(d1, sizeof d1, "-DTL_DT=%d", dt);
            snprintf(d2, sizeof d2, "-DTL_OP=%d", op);
            const char *defs[] = {d1, d2};
            char *bin;
            size_t sz;
            if (nvrtc_compile(tl_gpu_coll_text, "gpu_coll.cu", arch, defs, 2, &bin, &sz, err, errlen)) return -1;
            free(bin);
            n++;
        }
    tlink_dtype rd[] = {TLINK_F32, TLINK_F16, TLINK_BF16};
    for (int i = 0; i < 3; i++) {
        char *bin;
        size_t sz;
        if (nvrtc_compile(reduce_text(rd[i]), "reduce.tl.cu", arch, NULL, 0, &bin, &sz, err, errlen)) return -1;
        free(bin);
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- the device communicator */
#define GPU_MAXR 8
enum { M_AR2 = 0, M_AR1 = 1, M_RS = 2, M_AG = 3, M_A2A = 4, M_BC = 5, M_BCS = 6,
       M_RAR = 7, M_RRS = 8, M_RAG = 9, M_CBC = 10 }; /* ring allreduce/reduce_scatter/allgather, chain broadcast */
/* 8..11: F_LAST (kernel-private: per block, inbox, slot parity and destination, the last step pushed) */
enum { F_DATA0 = 0, F_DATA1 = 1, F_ACK0 = 2, F_ACK1 = 3, F_CE_DATA0 = 4, F_CE_DATA1 = 5, F_CE_ACK0 = 6, F_CE_ACK1 = 7,
       F_KINDS = 12 };
/* allreduce: oneshot, twoshot, ce, ring; reduce_scatter, allgather: direct, ring; broadcast:
 * direct, scatter (scatter + allgather), chain (a pipelined ring; "ring" also names it) */
enum { A_AUTO = TL_GA_AUTO, A_ONESHOT = TL_GA_ONESHOT, A_TWOSHOT = TL_GA_TWOSHOT, A_CE = TL_GA_CE, A_DIRECT = TL_GA_DIRECT,
       A_SCATTER = TL_GA_SCATTER, A_RING = TL_GA_RING, A_CHAIN = TL_GA_CHAIN, A_COUNT = TL_GA_COUNT };
static const char *const algo_names[] = {"auto", "oneshot", "twoshot", "ce", "direct", "scatter", "ring", "chain"};
const char *tl_gpu_algo_name(int algo) { return algo >= 0 && algo < A_COUNT ? algo_names[algo] : "?"; }

/* Mirror of `struct Args` in gpu_coll.cu (same layout on LP64). */
typedef struct kargs {
    uint64_t in, out;
    int64_t L, lim, T, rounds;
    uint64_t step0;
    int64_t slot;
    int32_t n, me, mode, root, nb, pad;
    uint64_t timeout_ns;
    uint64_t data[GPU_MAXR];
    uint64_t flags[GPU_MAXR];
    uint64_t err;
    int32_t ring[GPU_MAXR];
} kargs;

typedef struct ipc_info {
    CUipcMemHandle h;
    char host[128];
    char pci[32];
    int32_t device, pid;
    uint64_t bytes;
    uint64_t big_bytes;         /* launch settings: every rank must launch the same blocks */
    int32_t nb_small, pad2;
    int32_t ok, pad;
    char why[256];              /* when !ok: why this rank could not set up */
} ipc_info;

struct tlink_gpu_comm {
    tlink_comm *comm;
    int rank, size, device;
    CUdevice dev;
    CUcontext ctx;
    char arch[16];
    int nb, threads;           /* nb: blocks of the buffer layout, the most one operation launches */
    int nb_small;              /* blocks launched for messages below big_bytes */
    size_t big_bytes;
    int full_tiles;            /* TLINK_GPU_FULL_TILES=1: tiles are always whole slots (the old behaviour) */
    size_t slot, ce_chunk;     /* SM slot bytes; CE region bytes per (inbox, source) */
    size_t flag_bytes, sm_bytes, total;
    CUdeviceptr buf;           /* my IPC buffer: flags | SM inboxes | CE regions */
    CUdeviceptr peer[GPU_MAXR];/* everyone's buffer as mapped here (mine at [rank]) */
    char link[GPU_MAXR][16];
    int *err_host;             /* host-mapped error word written by kernels */
    CUdeviceptr err_dev;
    CUdeviceptr scal;          /* TileLang kernels' scalar table (N) and error record */
    CUmodule mod[TLINK_DTYPE_COUNT][TLINK_OP_COUNT];
    CUfunction fn[TLINK_DTYPE_COUNT][TLINK_OP_COUNT];
    CUmodule rmod[TLINK_DTYPE_COUNT];
    CUfunction rfn[TLINK_DTYPE_COUNT];
    uint64_t step;             /* SM path: steps used so far */
    uint64_t ce_step;          /* CE path */
    int forced;
    int ce_ok;                 /* stream memory operations usable */
    tl_gpu_model m;            /* cost model: the same on every rank (link matrix exchanged at init) */
    int logged[TLINK_COLL_COUNT]; /* last choice logged per collective (TLINK_DEBUG=info), +1 */
    const char *last_algo;
    double last_pred;
    char errmsg[1024];
};

static tlink_status gerr(tlink_gpu_comm *g, tlink_status st, const char *fmt, ...) TL_PRINTF(3, 4);
static tlink_status gerr(tlink_gpu_comm *g, tlink_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (g) {
        int k = snprintf(g->errmsg, sizeof g->errmsg, "rank %d: ", g->rank);
        vsnprintf(g->errmsg + k, sizeof g->errmsg - (size_t)k, fmt, ap);
        tl_set_thread_error("%s", g->errmsg);
    } else {
        char m[1024];
        vsnprintf(m, sizeof m, fmt, ap);
        tl_set_thread_error("%s", m);
    }
    va_end(ap);
    return st;
}
#define CUCHK(g, call, what)                                                                          \
    do {                                                                                              \
        CUresult r_ = (call);                                                                         \
        if (r_) return gerr(g, TLINK_ERR_SYSTEM, "%s failed: %s (CUDA error %d)", what, cu_errname(r_), r_); \
    } while (0)

const char *tlink_gpu_last_error(const tlink_gpu_comm *g) { return g ? g->errmsg : tl_thread_error(); }
int tlink_gpu_comm_device(const tlink_gpu_comm *g) { return g ? g->device : -1; }
const char *tlink_gpu_comm_link(const tlink_gpu_comm *g, int peer) {
    if (!g || peer < 0 || peer >= g->size) return "?";
    return g->link[peer];
}
const char *tlink_gpu_last_algo(const tlink_gpu_comm *g) { return g && g->last_algo ? g->last_algo : ""; }
double tlink_gpu_last_predicted_us(const tlink_gpu_comm *g) { return g ? g->last_pred : 0; }

static int algo_from(const char *s) {
    if (!s) return -1;
    for (int i = 0; i < A_COUNT; i++)
        if (!strcmp(s, algo_names[i])) return i;
    return -1;
}

tlink_status tlink_gpu_set_algo(tlink_gpu_comm *g, const char *algo) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_set_algo: g is NULL");
    int a = algo_from(algo);
    if (a < 0)
        return gerr(g, TLINK_ERR_INVALID_ARG,
                    "tlink_gpu_set_algo: algo '%s' unknown (auto, oneshot, twoshot, ce, direct, scatter, ring, chain)",
                    algo ? algo : "(null)");
    g->forced = a;
    return TLINK_OK;
}

static tlink_status load_module(tlink_gpu_comm *g, tlink_dtype dt, tlink_op op) {
    if (g->fn[dt][op]) return TLINK_OK;
    char d1[32], d2[32], err[4096];
    snprintf(d1, sizeof d1, "-DTL_DT=%d", (int)dt);
    snprintf(d2, sizeof d2, "-DTL_OP=%d", (int)op);
    const char *defs[] = {d1, d2};
    char *bin;
    size_t sz;
    if (nvrtc_compile(tl_gpu_coll_text, "gpu_coll.cu", g->arch, defs, 2, &bin, &sz, err, sizeof err))
        return gerr(g, TLINK_ERR_SYSTEM, "compiling the collective kernel: %s", err);
    CUresult r = cu.ModuleLoadData(&g->mod[dt][op], bin);
    free(bin);
    if (r) return gerr(g, TLINK_ERR_SYSTEM, "cuModuleLoadData: %s", cu_errname(r));
    CUCHK(g, cu.ModuleGetFunction(&g->fn[dt][op], g->mod[dt][op], "tl_coll"), "cuModuleGetFunction(tl_coll)");
    return TLINK_OK;
}

static tlink_status load_reduce(tlink_gpu_comm *g, tlink_dtype dt) {
    if (g->rfn[dt]) return TLINK_OK;
    char err[4096], *bin;
    size_t sz;
    if (nvrtc_compile(reduce_text(dt), "reduce.tl.cu", g->arch, NULL, 0, &bin, &sz, err, sizeof err))
        return gerr(g, TLINK_ERR_SYSTEM, "compiling the TileLang reduction: %s", err);
    CUresult r = cu.ModuleLoadData(&g->rmod[dt], bin);
    free(bin);
    if (r) return gerr(g, TLINK_ERR_SYSTEM, "cuModuleLoadData: %s", cu_errname(r));
    CUCHK(g, cu.ModuleGetFunction(&g->rfn[dt], g->rmod[dt], "tile_k0"), "cuModuleGetFunction(tile_k0)");
    return TLINK_OK;
}

static tlink_status check_err(tlink_gpu_comm *g) {
    int e = *(volatile int *)g->err_host;
    if (e >= 1000)
        return gerr(g, TLINK_ERR_PEER_FAILED,
                    "device collective gave up after %.1f s waiting for rank %d (it never arrived, or failed)",
                    g->comm->timeout, e - 1000);
    if (e) return gerr(g, TLINK_ERR_INTERNAL, "device collective failed (code %d)", e);
    return TLINK_OK;
}

static void gpu_free_all(tlink_gpu_comm *g) {
    if (!g) return;
    if (g->ctx) {
        cu.CtxSetCurrent(g->ctx);
        cu.CtxSynchronize();
        for (int r = 0; r < g->size && r < GPU_MAXR; r++)
            if (r != g->rank && g->peer[r]) cu.IpcCloseMemHandle(g->peer[r]);
        for (int d = 0; d < TLINK_DTYPE_COUNT; d++) {
            for (int o = 0; o < TLINK_OP_COUNT; o++)
                if (g->mod[d][o]) cu.ModuleUnload(g->mod[d][o]);
            if (g->rmod[d]) cu.ModuleUnload(g->rmod[d]);
        }
        if (g->buf) cu.MemFree(g->buf);
        if (g->scal) cu.MemFree(g->scal);
        if (g->err_host) cu.MemFreeHost(g->err_host);
        cu.DevicePrimaryCtxRelease(g->dev);
    }
    free(g);
}

tlink_status tlink_gpu_comm_init(tlink_comm *comm, const tlink_gpu_config *cfg, tlink_gpu_comm **out) {
    if (!out) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_comm_init: out is NULL");
    *out = NULL;
    if (!comm) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_comm_init: comm is NULL");
    if (comm->size > GPU_MAXR)
        return gerr(NULL, TLINK_ERR_UNSUPPORTED, "tlink_gpu_comm_init: %d ranks; device collectives support at most %d",
                    comm->size, GPU_MAXR);
    if (comm->nhosts != 1)
        return gerr(NULL, TLINK_ERR_UNSUPPORTED,
                    "tlink_gpu_comm_init: the communicator spans %d hosts; device collectives need all ranks on one host",
                    comm->nhosts);
    if (cfg && (cfg->blocks < 0 || cfg->blocks > 1024))
        return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_comm_init: cfg->blocks %d out of range [0,1024]", cfg->blocks);
    if (cfg && (cfg->threads < 0 || cfg->threads > 512 || cfg->threads % 32))
        return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_comm_init: cfg->threads %d: expected a multiple of 32 up to 512",
                    cfg->threads);
    /* Local setup first; a rank that fails here still takes part in the exchange below and
     * publishes why, so that its peers fail at once naming it instead of timing out. */
    tlink_gpu_comm *g = calloc(1, sizeof *g);
    if (!g) return gerr(NULL, TLINK_ERR_NO_MEMORY, "tlink_gpu_comm_init: out of memory");
    g->comm = comm;
    g->rank = comm->rank;
    g->size = comm->size;
    tlink_status st = TLINK_OK;
    CUresult r;
    ipc_info mine;
    memset(&mine, 0, sizeof mine);
#define FAIL(code, ...) do { st = gerr(g, code, __VA_ARGS__); goto exchange; } while (0)
#define CK(call, what) do { if ((r = (call)) != 0) FAIL(TLINK_ERR_SYSTEM, "%s failed: %s (CUDA error %d)", what, cu_errname(r), r); } while (0)
    char why[256];
    if (!tlink_gpu_available(why, sizeof why)) FAIL(TLINK_ERR_UNSUPPORTED, "tlink_gpu_comm_init: %s", why);
    int ndev = 0;
    cu.DeviceGetCount(&ndev);
    int want = cfg && cfg->device >= 0 ? cfg->device : (int)tb_knob_int(TB_K_TLINK_GPU_DEVICE);
    if (want >= ndev) FAIL(TLINK_ERR_INVALID_ARG, "tlink_gpu_comm_init: device %d does not exist (%d GPUs)", want, ndev);
    g->device = want >= 0 ? want : comm->local_rank % ndev;
    g->nb = cfg && cfg->blocks ? cfg->blocks : (int)tb_knob_int(TB_K_TLINK_GPU_BLOCKS);
    g->threads = cfg && cfg->threads ? cfg->threads : (int)tb_knob_int(TB_K_TLINK_GPU_THREADS);
    if (g->nb < 1 || g->nb > 1024) g->nb = 128;
    /* messages below TLINK_GPU_BIG (64 MiB) launch TLINK_GPU_BLOCKS_SMALL (64) blocks, leaving
     * the other SMs to compute that overlaps; larger ones launch all nb (more SMs issuing
     * NVLink stores: 128 blocks reached 1.18x NCCL at 256 MiB on 2 H200s, 64 about 1.0x) */
    g->nb_small = (int)tb_knob_int(TB_K_TLINK_GPU_BLOCKS_SMALL);
    g->big_bytes = (size_t)tb_knob_int(TB_K_TLINK_GPU_BIG);
    g->full_tiles = tb_knob_bool(TB_K_TLINK_GPU_FULL_TILES);
    if (g->threads < 32 || g->threads > 512 || g->threads % 32) g->threads = 512;
    size_t want_slot = cfg && cfg->slot_bytes ? cfg->slot_bytes : (size_t)tb_knob_int(TB_K_TLINK_GPU_SLOT);
    size_t want_ce = cfg && cfg->ce_chunk_bytes ? cfg->ce_chunk_bytes : (size_t)tb_knob_int(TB_K_TLINK_GPU_CE_CHUNK);
    CK(cu.DeviceGet(&g->dev, g->device), "cuDeviceGet");
    CK(cu.DevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain");
    CK(cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    int maj = 0, mnr = 0, sms = 0;
    cu.DeviceGetAttribute(&maj, CU_ATTR_CC_MAJOR, g->dev);
    cu.DeviceGetAttribute(&mnr, CU_ATTR_CC_MINOR, g->dev);
    cu.DeviceGetAttribute(&sms, CU_ATTR_SM_COUNT, g->dev);
    if (maj < 7) FAIL(TLINK_ERR_UNSUPPORTED, "tlink_gpu_comm_init: compute capability %d.%d; device collectives need 7.0+", maj, mnr);
    snprintf(g->arch, sizeof g->arch, "sm_%d%d", maj, mnr);
    if (sms > 0 && g->nb > sms) g->nb = sms; /* every block must be resident at once */
    if (g->nb_small < 1 || g->nb_small > g->nb) g->nb_small = g->nb;
    /* layout: flags | SM inboxes [2][2][nb][n] slots | CE regions [2][n] */
    g->flag_bytes = (size_t)F_KINDS * (size_t)g->nb * GPU_MAXR * 8;
    g->flag_bytes = (g->flag_bytes + 4095) & ~(size_t)4095;
    /* SM slots (double-buffered, two inboxes, per block and source) and CE chunks */
    g->slot = want_slot & ~(size_t)255;
    if (g->slot < 4096) g->slot = 4096;
    g->ce_chunk = want_ce & ~(size_t)4095;
    if (g->ce_chunk < 65536) g->ce_chunk = 65536;
    g->sm_bytes = 4 * (size_t)g->nb * (size_t)g->size * g->slot;
    g->total = g->flag_bytes + g->sm_bytes + (2 * (size_t)g->size + 1) * g->ce_chunk;
    CK(cu.MemAlloc(&g->buf, g->total), "cuMemAlloc (IPC buffer)");
    CK(cu.MemsetD8(g->buf, 0, g->flag_bytes), "cuMemsetD8");
    CK(cu.MemAlloc(&g->scal, 64), "cuMemAlloc (scalars)");
    CK(cu.MemsetD8(g->scal, 0, 64), "cuMemsetD8");
    CK(cu.MemHostAlloc((void **)&g->err_host, 64, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), "cuMemHostAlloc");
    memset(g->err_host, 0, 64);
    CK(cu.MemHostGetDevicePointer(&g->err_dev, g->err_host, 0), "cuMemHostGetDevicePointer");
    CK(cu.CtxSynchronize(), "cuCtxSynchronize");

    CK(cu.IpcGetMemHandle(&mine.h, g->buf), "cuIpcGetMemHandle");
    tlink_host_identity(mine.host, sizeof mine.host);
    cu.DeviceGetPCIBusId(mine.pci, sizeof mine.pci, g->dev);
    mine.device = g->device;
    mine.pid = (int32_t)getpid();
    mine.bytes = g->total;
    mine.big_bytes = g->big_bytes;
    mine.nb_small = g->nb_small;
exchange:
#undef FAIL
#define FAIL(code, ...) do { st = gerr(g, code, __VA_ARGS__); goto fail; } while (0)
    mine.ok = st == TLINK_OK;
    if (!mine.ok) {
        size_t k = strlen(g->errmsg);
        if (k >= sizeof mine.why) k = sizeof mine.why - 1;
        memcpy(mine.why, g->errmsg, k);
        mine.why[k] = 0;
    }
    {
    tlink_status st_local = st;
    int peer_dev[GPU_MAXR]; /* each peer's GPU as an ordinal of this process (-1: not found) */
    for (int p = 0; p < GPU_MAXR; p++) peer_dev[p] = p == g->rank ? g->device : -1;
    /* generation: several device communicators may be built on one host communicator */
    int64_t gen = 0;
    if (g->rank == 0) {
        char key[256];
        snprintf(key, sizeof key, "%s/gpu/gen", comm->prefix);
        if (tlink_store_add(comm->store, key, 1, &gen)) FAIL(TLINK_ERR_BOOTSTRAP, "store: %s", tlink_store_last_error(comm->store));
    }
    if ((st = tlink_broadcast(comm, &gen, 1, TLINK_I64, 0)) != TLINK_OK) FAIL(st, "broadcast: %s", tlink_last_error(comm));
    {
        char key[256];
        snprintf(key, sizeof key, "%s/gpu/%lld/%d", comm->prefix, (long long)gen, g->rank);
        if (tlink_store_set(comm->store, key, &mine, sizeof mine)) FAIL(TLINK_ERR_BOOTSTRAP, "store: %s", tlink_store_last_error(comm->store));
    }
    if (st_local) {             /* my own failure: g->errmsg and the thread's error say why */
        st = st_local;
        goto fail;
    }
    for (int p = 0; p < g->size; p++) {
        if (p == g->rank) { g->peer[p] = g->buf; snprintf(g->link[p], sizeof g->link[p], "self"); continue; }
        char key[256];
        snprintf(key, sizeof key, "%s/gpu/%lld/%d", comm->prefix, (long long)gen, p);
        void *v = NULL;
        size_t len = 0;
        if (tlink_store_get(comm->store, key, &v, &len, comm->timeout) || len != sizeof(ipc_info)) {
            tlink_free(v);
            FAIL(TLINK_ERR_BOOTSTRAP, "rank %d never published its GPU buffer (%s)", p, tlink_store_last_error(comm->store));
        }
        ipc_info pi;
        memcpy(&pi, v, sizeof pi);
        tlink_free(v);
        if (!pi.ok) FAIL(TLINK_ERR_PEER_FAILED, "tlink_gpu_comm_init: rank %d could not set up its GPU: %s", p, pi.why);
        if (strcmp(pi.host, mine.host))
            FAIL(TLINK_ERR_UNSUPPORTED, "rank %d is on another host (%s); device collectives need one host", p, pi.host);
        if (pi.bytes != g->total)
            FAIL(TLINK_ERR_INVALID_ARG, "rank %d's GPU buffer is %llu bytes, mine %zu: configure every rank alike (blocks, buffer)",
                 p, (unsigned long long)pi.bytes, g->total);
        if (pi.big_bytes != g->big_bytes || pi.nb_small != g->nb_small)
            FAIL(TLINK_ERR_INVALID_ARG, "rank %d launches %d blocks below %llu bytes, I %d below %zu: set TLINK_GPU_BLOCKS_SMALL and TLINK_GPU_BIG alike on every rank",
                 p, pi.nb_small, (unsigned long long)pi.big_bytes, g->nb_small, g->big_bytes);
        int same = !strcmp(pi.pci, mine.pci);
        if (!same) {
            CUdevice pd = -1;
            for (int d = 0; d < ndev; d++) {
                CUdevice dd;
                char bus[32] = "";
                if (cu.DeviceGet(&dd, d) == 0 && cu.DeviceGetPCIBusId(bus, sizeof bus, dd) == 0 && !strcmp(bus, pi.pci)) pd = dd;
            }
            int can = 0;
            if (pd >= 0) cu.DeviceCanAccessPeer(&can, g->dev, pd);
            for (int d = 0; d < ndev && pd >= 0; d++) {
                CUdevice dd;
                if (cu.DeviceGet(&dd, d) == 0 && dd == pd) peer_dev[p] = d;
            }
            if (!can)
                FAIL(TLINK_ERR_UNSUPPORTED, "GPU %s (rank %d) cannot access GPU %s (rank %d) as a peer; device collectives need peer access",
                     mine.pci, g->rank, pi.pci, p);
        }
        if (same) peer_dev[p] = g->device;
        CK(cu.IpcOpenMemHandle(&g->peer[p], pi.h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), "cuIpcOpenMemHandle");
        snprintf(g->link[p], sizeof g->link[p], "%s", same ? "ipc-same-gpu" : "ipc-peer");
    }
    /* GPU link parameters for the cost model, from the topology (links of this host): my row of
     * the link matrix (GB/s to every peer), exchanged so that every rank holds the same matrix
     * and the same ring order, hence makes the same choices */
    {
        tlink_topo *t = NULL;
        const tlink_topo_host *h = NULL;
        if (tlink_topo_detect(&t) == TLINK_OK && t->nhosts == 1) h = &t->hosts[0];
        double row[GPU_MAXR], all[GPU_MAXR * GPU_MAXR];
        const double override = tb_knob_float(TB_K_TLINK_GPU_LINK_GBPS);
        for (int p = 0; p < GPU_MAXR; p++) {
            row[p] = 0;
            if (p >= g->size || p == g->rank) continue;
            if (!strcmp(g->link[p], "ipc-same-gpu")) row[p] = 1500.0;
            else {
                int nv = 0; /* native atomics over the link: NVLink */
                for (int k = 0; h && k < h->ngpulinks; k++)
                    if (h->gpulinks[k].a == g->device && h->gpulinks[k].b == peer_dev[p] && h->gpulinks[k].access)
                        nv = h->gpulinks[k].atomics;
                row[p] = nv ? 360.0 : 25.0;
                snprintf(g->link[p], sizeof g->link[p], "%s", nv ? "ipc-nvlink" : "ipc-pcie");
            }
            if (override > 0) row[p] = override;
        }
        tlink_topo_free(t);
        if ((st = tlink_allgather(comm, row, all, GPU_MAXR, TLINK_F64)) != TLINK_OK)
            FAIL(st, "exchanging the GPU link matrix: %s", tlink_last_error(comm));
        tl_gpu_model *m = &g->m;
        m->n = g->size;
        for (int i = 0; i < g->size; i++)
            for (int j = 0; j < g->size; j++) m->bw[i][j] = all[i * GPU_MAXR + j];
        m->alpha_s = tb_knob_float(TB_K_TLINK_GPU_ALPHA_US) * 1e-6;
        m->mem_gbps = tb_knob_float(TB_K_TLINK_GPU_MEM_GBPS);
        m->slot = g->slot;
        m->big_bytes = g->big_bytes;
        m->ce_chunk = g->ce_chunk;
        m->nb = g->nb;
        m->nb_small = g->nb_small;
        tl_gpu_model_ring(m);
    }
    g->ce_ok = tb_knob_bool(TB_K_TLINK_GPU_CE);
    g->m.ce_ok = g->ce_ok;
    g->forced = algo_from(tb_knob_str(TB_K_TLINK_GPU_ALGO));
    if (g->forced < 0) g->forced = A_AUTO;
    }
    /* everyone has zeroed its flags and mapped everyone else's buffer */
    if ((st = tlink_barrier(comm)) != TLINK_OK) FAIL(st, "barrier: %s", tlink_last_error(comm));
    tl_log(TL_LOG_INFO, "gpu: rank %d on device %d (%s), %d blocks x %d threads, slot %zu B, buffer %zu B", g->rank,
           g->device, g->arch, g->nb, g->threads, g->slot, g->total);
    if (g->rank == 0 && tl_log_level() >= TL_LOG_INFO) {
        char rs[64] = "";
        for (int q = 0, k = 0; q < g->size; q++) k += snprintf(rs + k, sizeof rs - (size_t)k, "%s%d", q ? " " : "", g->m.ring[q]);
        double lo = 1e300;
        for (int q = 0; q < g->size; q++) {
            double b = g->m.bw[g->m.ring[q]][g->m.ring[(q + 1) % g->size]];
            if (b < lo) lo = b;
        }
        tl_log(TL_LOG_INFO, "gpu: ring %s (slowest hop %.0f GB/s), alpha %.1f us", rs, lo, g->m.alpha_s * 1e6);
    }
    *out = g;
    return TLINK_OK;
fail:
    gpu_free_all(g);
    return st;
#undef CK
#undef FAIL
}

tlink_status tlink_gpu_comm_destroy(tlink_gpu_comm *g) {
    if (!g) return TLINK_OK;
    cu.CtxSetCurrent(g->ctx);
    cu.CtxSynchronize();
    /* nobody may still be writing into my buffer when it is freed */
    tlink_status st = g->comm->broken ? TLINK_OK : tlink_barrier(g->comm);
    gpu_free_all(g);
    return st;
}

/* ---------------------------------------------------------------- argument checks */
static tlink_status check_ptr(tlink_gpu_comm *g, const char *fn, const char *name, const void *p, size_t bytes) {
    if (bytes == 0) return TLINK_OK;
    if (!p) return gerr(g, TLINK_ERR_INVALID_ARG, "%s: %s is NULL", fn, name);
    unsigned int mt = 0;
    CUresult r = cu.PointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p);
    if (r || (mt != CU_MEMORYTYPE_DEVICE && mt != CU_MEMORYTYPE_UNIFIED))
        return gerr(g, TLINK_ERR_INVALID_ARG, "%s: %s (%p) is not device memory (a cuMemAlloc/cudaMalloc pointer)", fn, name, p);
    return TLINK_OK;
}

static tlink_status precheck(tlink_gpu_comm *g, const char *fn, tlink_dtype dt, tlink_op op, int has_op) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "%s: g is NULL", fn);
    if ((unsigned)dt >= TLINK_DTYPE_COUNT) return gerr(g, TLINK_ERR_INVALID_ARG, "%s: dt %d is not a tlink_dtype", fn, (int)dt);
    if (has_op && (unsigned)op >= TLINK_OP_COUNT) return gerr(g, TLINK_ERR_INVALID_ARG, "%s: op %d is not a tlink_op", fn, (int)op);
    if (g->comm->broken) return gerr(g, TLINK_ERR_PEER_FAILED, "%s: the communicator is broken: %s", fn, g->comm->broken_msg);
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    return check_err(g);
}

/* ---------------------------------------------------------------- the SM path */
/* blocks launched for a message of `bytes` (same on every rank: a function of the size and of
 * settings checked equal at init) */
static int64_t model_blocks(const tl_gpu_model *m, double bytes) { return bytes >= (double)m->big_bytes ? m->nb : m->nb_small; }

/* Chain broadcast: rounds for a message of B bytes. A tile crosses n-1 hops one after the other,
 * so the last rank finishes (n-2) tiles after the root: more, smaller rounds shorten that tail
 * but cost a synchronisation each. R* = sqrt((n-2) B beta / (2 alpha)) minimises
 * 2 alpha (R+n-2) + (R+n-2)/R B beta; never tiles under 4 KiB per block, never fewer rounds
 * than whole slots give. */
static double t_ring(const tl_gpu_model *m, double X);
static int64_t chain_rounds(const tl_gpu_model *m, double B, int64_t natural) {
    if (m->n <= 2 || B <= 0) return natural;
    double nbl = (double)model_blocks(m, B);
    double bb = t_ring(m, B); /* B beta over the slowest hop */
    double r = sqrt((m->n - 2) * bb / (2 * m->alpha_s));
    double most = floor(B / (nbl * 4096.0));
    if (r > most) r = most;
    int64_t R = (int64_t)(r + 0.5);
    return R > natural ? R : natural;
}

/* tiles for a launch: T elements per block and round, and the rounds (mirrored by the CPU
 * emulation, tests/link-gpu/emu.cpp) */
static void tile_plan(const tlink_gpu_comm *g, int mode, size_t L, size_t lim, size_t es, int64_t *T, int64_t *rounds_out) {
    int64_t nbl = model_blocks(&g->m, (double)(lim * es));
    int64_t Tmax = (int64_t)(g->slot / es), gran = (int64_t)(256 / es);
    int64_t rounds = ((int64_t)L + Tmax * nbl - 1) / (Tmax * nbl);
    if (rounds < 1) rounds = 1;
    if (mode == M_CBC && !g->full_tiles) rounds = chain_rounds(&g->m, (double)(lim * es), rounds);
    int64_t per = ((int64_t)L + rounds * nbl - 1) / (rounds * nbl);
    per = (per + gran - 1) / gran * gran;
    if (per < gran) per = gran;
    if (per > Tmax || g->full_tiles) per = Tmax;
    int64_t tiles = ((int64_t)L + per - 1) / per;
    *T = per;
    *rounds_out = (tiles + nbl - 1) / nbl;
    if (*rounds_out < 1) *rounds_out = 1;
}

static tlink_status launch(tlink_gpu_comm *g, int mode, const void *in, void *out, size_t L, size_t lim, tlink_dtype dt,
                           tlink_op op, int root, int tiles_cols, CUstream s) {
    size_t es = tlink_dtype_size(dt);
    const int reduces = mode == M_AR2 || mode == M_AR1 || mode == M_RS || mode == M_RAR || mode == M_RRS;
    tlink_status st = load_module(g, dt, reduces ? op : TLINK_SUM);
    if (st) return st;
    kargs a;
    memset(&a, 0, sizeof a);
    a.in = (uint64_t)(uintptr_t)in;
    a.out = (uint64_t)(uintptr_t)out;
    a.L = (int64_t)L;
    a.lim = (int64_t)lim;
    /* Tile size: at most a slot; when fewer than blocks x slot elements per column remain, the
     * tiles shrink (in steps of 256 bytes) so that every block gets an equal share instead of
     * a few blocks moving whole slots while the others idle (4-16 MiB allreduce on 4 ranks
     * used 4-16 of 64 blocks). Same number of rounds, hence the same handshakes. */
    (void)tiles_cols;
    int64_t nbl = model_blocks(&g->m, (double)(lim * es));
    tile_plan(g, mode, L, lim, es, &a.T, &a.rounds);
    a.step0 = g->step;
    a.slot = (int64_t)g->slot;
    a.n = g->size;
    a.me = g->rank;
    a.mode = mode;
    a.root = root;
    a.nb = g->nb;
    a.timeout_ns = (uint64_t)(g->comm->timeout * 1e9);
    for (int p = 0; p < g->size; p++) {
        a.data[p] = g->peer[p] + g->flag_bytes;
        a.flags[p] = g->peer[p];
    }
    a.err = g->err_dev;
    for (int q = 0; q < g->size; q++) a.ring[q] = g->m.ring[q];
    void *params[] = {&a};
    CUfunction f = g->fn[dt][reduces ? op : TLINK_SUM];
    CUCHK(g, cu.LaunchKernel(f, (unsigned)nbl, 1, 1, (unsigned)g->threads, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
    /* (the kernel's blocks remember the last step they pushed into each slot: F_LAST flags) */
    /* pushes per round: one step each (the ring modes push 2(n-1) or n-1 times a round) */
    int64_t S = mode == M_RAR ? 2 * (g->size - 1) : (mode == M_RRS || mode == M_RAG) ? g->size - 1 : 1;
    g->step += (uint64_t)(a.rounds * S);
    return TLINK_OK;
}

/* ---------------------------------------------------------------- the copy-engine path */
static CUdeviceptr flag_addr(const tlink_gpu_comm *g, int owner, int kind, int src) {
    return g->peer[owner] + (CUdeviceptr)(((size_t)kind * (size_t)g->nb) * GPU_MAXR + (size_t)src) * 8;
}

static tlink_status reduce_launch(tlink_gpu_comm *g, tlink_dtype dt, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, size_t n,
                                  CUstream s) {
    CUCHK(g, cu.StreamWriteValue64(s, g->scal, (unsigned long long)n, 0), "cuStreamWriteValue64");
    CUdeviceptr errp = g->scal + 8;
    void *params[] = {&a, &b, &c, &g->scal, &errp};
    unsigned grid = (unsigned)((n + 2047) / 2048);
    CUCHK(g, cu.LaunchKernel(g->rfn[dt], grid, 1, 1, 512, 1, 1, 0, s, params, NULL), "cuLaunchKernel(reduce.tl)");
    return TLINK_OK;
}

/* two-shot allreduce (sum) with copy engines and stream memory operations. Every byte crosses
 * the link as a *pull*: a rank writes only into its own memory (staging its columns, its
 * reduced column), then signals with cuStreamWriteValue64 into the peer's flags; the peer waits
 * (cuStreamWaitValue64) and copies from the owner's memory with its own copy engine. (Pushing
 * with cuMemcpyAsync and then writing the flag let a receiver see the flag before all the
 * data: seen with 3 ranks on 2 H200s.) CE regions of rank r: stage[n] | recv[n] | result. */
static CUdeviceptr ce_stage(const tlink_gpu_comm *g, int owner, int col) {
    return g->peer[owner] + g->flag_bytes + g->sm_bytes + (size_t)col * g->ce_chunk;
}
static CUdeviceptr ce_recv(const tlink_gpu_comm *g, int src) {
    return g->peer[g->rank] + g->flag_bytes + g->sm_bytes + ((size_t)g->size + (size_t)src) * g->ce_chunk;
}
static CUdeviceptr ce_result(const tlink_gpu_comm *g, int owner) {
    return g->peer[owner] + g->flag_bytes + g->sm_bytes + 2 * (size_t)g->size * g->ce_chunk;
}

static tlink_status ce_allreduce(tlink_gpu_comm *g, const void *in, void *out, size_t count, tlink_dtype dt, CUstream s) {
    tlink_status st = load_reduce(g, dt);
    if (st) return st;
    size_t es = tlink_dtype_size(dt), n = (size_t)g->size, me = (size_t)g->rank;
    size_t L = (count + n - 1) / n, C = g->ce_chunk / es;
    CUdeviceptr ib = (CUdeviceptr)(uintptr_t)in, ob = (CUdeviceptr)(uintptr_t)out;
    const unsigned GEQ = CU_STREAM_WAIT_VALUE_GEQ;
    for (size_t off = 0; off < L; off += C) {
        uint64_t step = ++g->ce_step, prev = step - 1;
        size_t cnt[GPU_MAXR];
        for (size_t p = 0; p < n; p++) {
            size_t start = p * L + off, c = L - off < C ? L - off : C;
            cnt[p] = start >= count ? 0 : (count - start < c ? count - start : c);
        }
        /* 1. stage my piece of every other column, once every peer has pulled the last one */
        for (size_t k = 1; k < n; k++) {
            int p = (int)((me + k) % n);
            CUCHK(g, cu.StreamWaitValue64(s, flag_addr(g, g->rank, F_CE_ACK0, p), prev, GEQ), "cuStreamWaitValue64");
        }
        for (size_t k = 1; k < n; k++) {
            int p = (int)((me + k) % n);
            if (cnt[p]) CUCHK(g, cu.MemcpyAsync(ce_stage(g, g->rank, p), ib + (p * L + off) * es, cnt[p] * es, s), "cuMemcpyAsync");
        }
        for (size_t k = 1; k < n; k++)
            CUCHK(g, cu.StreamWriteValue64(s, flag_addr(g, (int)((me + k) % n), F_CE_DATA0, g->rank), step, 0), "cuStreamWriteValue64");
        /* 2. pull my column from every peer, then reduce (TileLang kernel), rank order of arrival */
        CUdeviceptr mycol = ob + (me * L + off) * es, mysrc = ib + (me * L + off) * es;
        for (size_t k = 1; k < n; k++) {
            int p = (int)((me + k) % n);
            CUCHK(g, cu.StreamWaitValue64(s, flag_addr(g, g->rank, F_CE_DATA0, p), step, GEQ), "cuStreamWaitValue64");
            if (cnt[me]) CUCHK(g, cu.MemcpyAsync(ce_recv(g, p), ce_stage(g, p, g->rank), cnt[me] * es, s), "cuMemcpyAsync");
            CUCHK(g, cu.StreamWriteValue64(s, flag_addr(g, p, F_CE_ACK0, g->rank), step, 0), "cuStreamWriteValue64");
        }
        for (size_t k = 1; k < n && cnt[me]; k++)
            if ((st = reduce_launch(g, dt, k == 1 ? mysrc : mycol, ce_recv(g, (int)((me + k) % n)), mycol, cnt[me], s))) return st;
        /* 3. publish my reduced column, once every peer has pulled the last one */
        for (size_t k = 1; k < n; k++)
            CUCHK(g, cu.StreamWaitValue64(s, flag_addr(g, g->rank, F_CE_ACK1, (int)((me + k) % n)), prev, GEQ), "cuStreamWaitValue64");
        if (cnt[me]) CUCHK(g, cu.MemcpyAsync(ce_result(g, g->rank), mycol, cnt[me] * es, s), "cuMemcpyAsync");
        for (size_t k = 1; k < n; k++)
            CUCHK(g, cu.StreamWriteValue64(s, flag_addr(g, (int)((me + k) % n), F_CE_DATA1, g->rank), step, 0), "cuStreamWriteValue64");
        /* 4. pull every other reduced column */
        for (size_t k = 1; k < n; k++) {
            int p = (int)((me + n - k) % n);
            CUCHK(g, cu.StreamWaitValue64(s, flag_addr(g, g->rank, F_CE_DATA1, p), step, GEQ), "cuStreamWaitValue64");
            if (cnt[p]) CUCHK(g, cu.MemcpyAsync(ob + ((size_t)p * L + off) * es, ce_result(g, p), cnt[p] * es, s), "cuMemcpyAsync");
            CUCHK(g, cu.StreamWriteValue64(s, flag_addr(g, p, F_CE_ACK1, g->rank), step, 0), "cuStreamWriteValue64");
        }
    }
    return TLINK_OK;
}

/* ---------------------------------------------------------------- the cost model */
/* seconds for every rank sending X bytes to each of its peers at once: a rank's sends share
 * its fastest link (NVSwitch: one port for all peers), and no pair goes faster than its link */
static double t_all(const tl_gpu_model *m, double X) {
    double worst = 0;
    for (int i = 0; i < m->n; i++) {
        double cap = 0, lo = 1e300;
        for (int j = 0; j < m->n; j++) {
            if (j == i) continue;
            if (m->bw[i][j] > cap) cap = m->bw[i][j];
            if (m->bw[i][j] < lo) lo = m->bw[i][j];
        }
        if (cap <= 0 || lo <= 0) return 1e300;
        double t = fmax((m->n - 1) * X / (cap * 1e9), X / (lo * 1e9));
        if (t > worst) worst = t;
    }
    return worst;
}
/* seconds for every rank sending X bytes to its ring successor at once */
static double t_ring(const tl_gpu_model *m, double X) {
    double worst = 0;
    for (int q = 0; q < m->n; q++) {
        double b = m->bw[m->ring[q]][m->ring[(q + 1) % m->n]];
        if (b <= 0) return 1e300;
        if (X / (b * 1e9) > worst) worst = X / (b * 1e9);
    }
    return worst;
}

/* the ring order whose slowest hop is fastest (ties: the first in lexicographic order, which
 * starts with the rank order); n <= 8, so at most 7! orders with rank 0 first */
static double ring_min(const tl_gpu_model *m, const int *o) {
    double lo = 1e300;
    for (int q = 0; q < m->n; q++) lo = fmin(lo, m->bw[o[q]][o[(q + 1) % m->n]]);
    return lo;
}
static void ring_search(tl_gpu_model *m, int *o, int k, int used, double *best) {
    if (k == m->n) {
        double v = ring_min(m, o);
        if (v > *best) { *best = v; memcpy(m->ring, o, sizeof(int) * (size_t)m->n); }
        return;
    }
    for (int r = 1; r < m->n; r++)
        if (!(used & (1 << r))) { o[k] = r; ring_search(m, o, k + 1, used | (1 << r), best); }
}
void tl_gpu_model_ring(tl_gpu_model *m) {
    int o[8] = {0};
    for (int q = 0; q < m->n; q++) m->ring[q] = q;
    if (m->n <= 2) return;
    double best = ring_min(m, m->ring);
    ring_search(m, o, 1, 1, &best);
}

/* Predicted microseconds of one collective of `bytes` (allreduce, broadcast: the message;
 * reduce_scatter, allgather, alltoall: the whole buffer of n columns). Synchronisations cost
 * alpha each, per round of the blocks launched (blocks x slot bytes per column and round). */
double tl_gpu_predict(const tl_gpu_model *m, tlink_coll coll, int algo, size_t bytes) {
    const double n = m->n, B = (double)bytes, a = m->alpha_s, bm = 1.0 / (m->mem_gbps * 1e9);
    const double tile = (double)m->slot * (double)model_blocks(m, B);
    const double rc = ceil(B / (n * tile)), r1 = ceil(B / tile); /* rounds: per column, whole message */
    double t = 1e300;
    switch (coll) {
    case TLINK_COLL_ALLREDUCE:
        if (algo == A_ONESHOT) t = a * r1 + t_all(m, B) + (n + 1) * B * bm;
        else if (algo == A_TWOSHOT) t = 3 * a * rc + 2 * t_all(m, B / n); /* reduction fused with the send */
        else if (algo == A_RING) t = (2 * (n - 1) + 1) * a * rc + 2 * (n - 1) * t_ring(m, B / n); /* 2(n-1) hops in a row */
        else if (algo == A_CE && m->ce_ok) t = (1 + floor(B / (n * (double)m->ce_chunk))) * 8 * a + 2 * t_all(m, B / n) + 3 * B * bm;
        break;
    case TLINK_COLL_REDUCE_SCATTER:
    case TLINK_COLL_ALLGATHER:
        if (algo == A_DIRECT) t = 2 * a * rc + t_all(m, B / n);
        else if (algo == A_RING) t = n * a * rc + (n - 1) * t_ring(m, B / n);
        break;
    case TLINK_COLL_BROADCAST:
        if (algo == A_DIRECT) t = 2 * a * r1 + t_all(m, B); /* the root sends B to every peer */
        else if (algo == A_SCATTER) { /* root -> owner of a column -> the other non-roots */
            double r = ceil(B / ((n - 1) * tile));
            t = 3 * a * r + t_all(m, B / (n - 1)) * (1 + (n - 2) / (n - 1) / r);
        } else if (algo == A_CHAIN) { /* R rounds in a pipeline n-1 hops long */
            double R = (double)chain_rounds(m, B, (int64_t)r1);
            t = (R + n - 2) * (2 * a + t_ring(m, B / R));
        }
        break;
    case TLINK_COLL_ALLTOALL:
        if (algo == A_DIRECT) t = 2 * a * rc + t_all(m, B / n);
        break;
    default: break;
    }
    return t >= 1e300 ? 1e300 : t * 1e6;
}

/* the candidates per collective, in order of preference on equal predictions */
static const int *candidates(tlink_coll coll) {
    static const int ar[] = {A_ONESHOT, A_TWOSHOT, A_RING, -1}, rsag[] = {A_DIRECT, A_RING, -1},
                     bc[] = {A_DIRECT, A_SCATTER, A_CHAIN, -1}, a2a[] = {A_DIRECT, -1};
    switch (coll) {
    case TLINK_COLL_ALLREDUCE: return ar;
    case TLINK_COLL_REDUCE_SCATTER:
    case TLINK_COLL_ALLGATHER: return rsag;
    case TLINK_COLL_BROADCAST: return bc;
    default: return a2a;
    }
}
int tl_gpu_choose(const tl_gpu_model *m, tlink_coll coll, size_t bytes) {
    const int *c = candidates(coll);
    int best = c[0];
    double bt = tl_gpu_predict(m, coll, c[0], bytes);
    for (int k = 1; c[k] >= 0; k++) {
        double t = tl_gpu_predict(m, coll, c[k], bytes);
        if (t < bt) { bt = t; best = c[k]; }
    }
    return best;
}

/* The algorithm for this call: forced (tlink_gpu_set_algo, TLINK_GPU_ALGO; else the host
 * communicator's TLINK_ALGO "ring"/"direct" for this collective) when it applies, else the
 * model's choice. Logged at TLINK_DEBUG=info whenever a collective's choice changes. */
static int pick(tlink_gpu_comm *g, tlink_coll coll, size_t bytes, tlink_dtype dt, tlink_op op) {
    int f = g->forced;
    if (f == A_AUTO) {
        tlink_algo h = g->comm->forced[coll];
        f = h == TLINK_ALGO_RING ? A_RING : h == TLINK_ALGO_DIRECT ? A_DIRECT : A_AUTO;
    }
    if (coll == TLINK_COLL_BROADCAST && f == A_RING) f = A_CHAIN; /* NCCL's "ring" broadcast */
    if (coll != TLINK_COLL_BROADCAST && f == A_CHAIN) f = A_RING;
    if (f == A_CE && !(coll == TLINK_COLL_ALLREDUCE && g->ce_ok && op == TLINK_SUM && reduce_text(dt) != NULL)) f = A_AUTO;
    int ok = f == A_CE;
    for (const int *c = candidates(coll); *c >= 0; c++) ok |= *c == f;
    int algo = ok && f != A_AUTO ? f : tl_gpu_choose(&g->m, coll, bytes);
    g->last_algo = algo_names[algo];
    g->last_pred = tl_gpu_predict(&g->m, coll, algo, bytes);
    if (g->logged[coll] != algo + 1 && tl_log_level() >= TL_LOG_INFO) {
        g->logged[coll] = algo + 1;
        char alt[256] = "";
        size_t k = 0;
        for (const int *c = candidates(coll); *c >= 0 && k < sizeof alt; c++)
            k += (size_t)snprintf(alt + k, sizeof alt - k, " %s %.1f", algo_names[*c], tl_gpu_predict(&g->m, coll, *c, bytes));
        tl_log(TL_LOG_INFO, "gpu rank %d: %s of %zu B: %s (%s; predicted us:%s)", g->rank, tlink_coll_name(coll), bytes,
               algo_names[algo], algo == f ? "forced" : "cost model", alt);
    }
    return algo;
}

/* ---------------------------------------------------------------- the collectives */
tlink_status tlink_gpu_allreduce(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count, tlink_dtype dt,
                                 tlink_op op, tlink_cuda_stream stream) {
    const char *fn = "tlink_gpu_allreduce";
    tlink_status st = precheck(g, fn, dt, op, 1);
    if (st) return st;
    size_t bytes = count * tlink_dtype_size(dt);
    if ((st = check_ptr(g, fn, "sendbuf", sendbuf, bytes)) || (st = check_ptr(g, fn, "recvbuf", recvbuf, bytes))) return st;
    if (count == 0) return TLINK_OK;
    if (g->size == 1) {
        g->last_algo = "self";
        if (sendbuf != recvbuf)
            CUCHK(g, cu.MemcpyAsync((CUdeviceptr)(uintptr_t)recvbuf, (CUdeviceptr)(uintptr_t)sendbuf, bytes, stream), "cuMemcpyAsync");
        return TLINK_OK;
    }
    int algo = pick(g, TLINK_COLL_ALLREDUCE, bytes, dt, op);
    if (algo == A_CE) return ce_allreduce(g, sendbuf, recvbuf, count, dt, stream);
    if (algo == A_ONESHOT) return launch(g, M_AR1, sendbuf, recvbuf, count, count, dt, op, 0, 1, stream);
    size_t L = (count + (size_t)g->size - 1) / (size_t)g->size;
    return launch(g, algo == A_RING ? M_RAR : M_AR2, sendbuf, recvbuf, L, count, dt, op, 0, g->size, stream);
}

tlink_status tlink_gpu_reduce_scatter(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t recvcount,
                                      tlink_dtype dt, tlink_op op, tlink_cuda_stream stream) {
    const char *fn = "tlink_gpu_reduce_scatter";
    tlink_status st = precheck(g, fn, dt, op, 1);
    if (st) return st;
    size_t es = tlink_dtype_size(dt);
    if ((st = check_ptr(g, fn, "sendbuf", sendbuf, recvcount * es * (size_t)g->size)) ||
        (st = check_ptr(g, fn, "recvbuf", recvbuf, recvcount * es)))
        return st;
    if (recvcount == 0) return TLINK_OK;
    g->last_algo = "direct";
    if (g->size == 1) {
        if (sendbuf != recvbuf)
            CUCHK(g, cu.MemcpyAsync((CUdeviceptr)(uintptr_t)recvbuf, (CUdeviceptr)(uintptr_t)sendbuf, recvcount * es, stream), "cuMemcpyAsync");
        return TLINK_OK;
    }
    if (sendbuf == recvbuf)
        return gerr(g, TLINK_ERR_UNSUPPORTED, "%s: in place is not supported on device buffers (use separate buffers)", fn);
    int algo = pick(g, TLINK_COLL_REDUCE_SCATTER, recvcount * es * (size_t)g->size, dt, op);
    return launch(g, algo == A_RING ? M_RRS : M_RS, sendbuf, recvbuf, recvcount, recvcount * (size_t)g->size, dt, op, 0,
                  g->size, stream);
}

tlink_status tlink_gpu_allgather(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count, tlink_dtype dt,
                                 tlink_cuda_stream stream) {
    const char *fn = "tlink_gpu_allgather";
    tlink_status st = precheck(g, fn, dt, TLINK_SUM, 0);
    if (st) return st;
    size_t es = tlink_dtype_size(dt);
    if ((st = check_ptr(g, fn, "sendbuf", sendbuf, count * es)) ||
        (st = check_ptr(g, fn, "recvbuf", recvbuf, count * es * (size_t)g->size)))
        return st;
    if (count == 0) return TLINK_OK;
    g->last_algo = "direct";
    if (g->size == 1) {
        if (sendbuf != recvbuf)
            CUCHK(g, cu.MemcpyAsync((CUdeviceptr)(uintptr_t)recvbuf, (CUdeviceptr)(uintptr_t)sendbuf, count * es, stream), "cuMemcpyAsync");
        return TLINK_OK;
    }
    int algo = pick(g, TLINK_COLL_ALLGATHER, count * es * (size_t)g->size, dt, TLINK_SUM);
    return launch(g, algo == A_RING ? M_RAG : M_AG, sendbuf, recvbuf, count, count * (size_t)g->size, dt, TLINK_SUM, 0, 1,
                  stream);
}

tlink_status tlink_gpu_broadcast(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count, tlink_dtype dt,
                                 int root, tlink_cuda_stream stream) {
    const char *fn = "tlink_gpu_broadcast";
    tlink_status st = precheck(g, fn, dt, TLINK_SUM, 0);
    if (st) return st;
    if (root < 0 || root >= g->size)
        return gerr(g, TLINK_ERR_INVALID_ARG, "%s: root %d is not a rank (size %d)", fn, root, g->size);
    size_t es = tlink_dtype_size(dt);
    if ((g->rank == root && (st = check_ptr(g, fn, "sendbuf", sendbuf, count * es))) ||
        (st = check_ptr(g, fn, "recvbuf", recvbuf, count * es)))
        return st;
    if (count == 0) return TLINK_OK;
    g->last_algo = "direct";
    if (g->size == 1) {
        if (sendbuf != recvbuf)
            CUCHK(g, cu.MemcpyAsync((CUdeviceptr)(uintptr_t)recvbuf, (CUdeviceptr)(uintptr_t)sendbuf, count * es, stream), "cuMemcpyAsync");
        return TLINK_OK;
    }
    /* the model picks direct (small), scatter or chain (large, from 3 ranks); the same on every rank */
    int algo = pick(g, TLINK_COLL_BROADCAST, count * es, dt, TLINK_SUM);
    if (algo == A_CHAIN)
        return launch(g, M_CBC, g->rank == root ? sendbuf : recvbuf, recvbuf, count, count, dt, TLINK_SUM, root, 1, stream);
    if (algo == A_SCATTER) {
        size_t L = (count + (size_t)g->size - 2) / ((size_t)g->size - 1);
        return launch(g, M_BCS, g->rank == root ? sendbuf : recvbuf, recvbuf, L, count, dt, TLINK_SUM, root, 1, stream);
    }
    return launch(g, M_BC, g->rank == root ? sendbuf : recvbuf, recvbuf, count, count, dt, TLINK_SUM, root, 1, stream);
}

tlink_status tlink_gpu_alltoall(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count, tlink_dtype dt,
                                tlink_cuda_stream stream) {
    const char *fn = "tlink_gpu_alltoall";
    tlink_status st = precheck(g, fn, dt, TLINK_SUM, 0);
    if (st) return st;
    size_t es = tlink_dtype_size(dt), tot = count * es * (size_t)g->size;
    if ((st = check_ptr(g, fn, "sendbuf", sendbuf, tot)) || (st = check_ptr(g, fn, "recvbuf", recvbuf, tot))) return st;
    if (count && sendbuf == recvbuf) return gerr(g, TLINK_ERR_INVALID_ARG, "%s: in place is not supported (sendbuf == recvbuf)", fn);
    if (count == 0) return TLINK_OK;
    g->last_algo = "direct";
    if (g->size == 1) {
        CUCHK(g, cu.MemcpyAsync((CUdeviceptr)(uintptr_t)recvbuf, (CUdeviceptr)(uintptr_t)sendbuf, tot, stream), "cuMemcpyAsync");
        return TLINK_OK;
    }
    pick(g, TLINK_COLL_ALLTOALL, tot, dt, TLINK_SUM);
    return launch(g, M_A2A, sendbuf, recvbuf, count, count * (size_t)g->size, dt, TLINK_SUM, 0, g->size, stream);
}

tlink_status tlink_gpu_sync(tlink_gpu_comm *g, tlink_cuda_stream stream) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_sync: g is NULL");
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    /* poll, so that a copy-engine wait that never ends (a dead peer) still ends in an error */
    double deadline = tl_now() + g->comm->timeout + 5;
    for (;;) {
        CUresult r = cu.StreamQuery(stream);
        if (r == 0) break;
        if (r != CUDA_ERROR_NOT_READY) return gerr(g, TLINK_ERR_SYSTEM, "stream: %s (CUDA error %d)", cu_errname(r), r);
        tlink_status st = check_err(g);
        if (st) return st;
        if (tl_now() > deadline)
            return gerr(g, TLINK_ERR_TIMEOUT, "tlink_gpu_sync: the stream did not finish within %.1f s", g->comm->timeout + 5);
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return check_err(g);
}

/* ---------------------------------------------------------------- helpers */
tlink_status tlink_gpu_malloc(tlink_gpu_comm *g, size_t bytes, void **ptr) {
    if (!g || !ptr) return gerr(g, TLINK_ERR_INVALID_ARG, "tlink_gpu_malloc: %s is NULL", g ? "ptr" : "g");
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CUdeviceptr p = 0;
    CUresult r = cu.MemAlloc(&p, bytes ? bytes : 1);
    if (r) return gerr(g, TLINK_ERR_NO_MEMORY, "tlink_gpu_malloc(%zu bytes): %s", bytes, cu_errname(r));
    *ptr = (void *)(uintptr_t)p;
    return TLINK_OK;
}
tlink_status tlink_gpu_free(tlink_gpu_comm *g, void *ptr) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_free: g is NULL");
    if (!ptr) return TLINK_OK;
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CUCHK(g, cu.MemFree((CUdeviceptr)(uintptr_t)ptr), "cuMemFree");
    return TLINK_OK;
}
tlink_status tlink_gpu_memcpy(tlink_gpu_comm *g, void *dst, const void *src, size_t bytes) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_memcpy: g is NULL");
    if (!bytes) return TLINK_OK;
    if (!dst || !src) return gerr(g, TLINK_ERR_INVALID_ARG, "tlink_gpu_memcpy: %s is NULL", dst ? "src" : "dst");
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CUCHK(g, cu.CtxSynchronize(), "cuCtxSynchronize");
    CUCHK(g, cu.Memcpy((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes), "cuMemcpy");
    /* from pageable host memory cuMemcpy may return before the DMA to the device is done,
     * and work on a non-blocking stream does not wait for it: wait here (seen as zeros
     * landing after a broadcast had written its output) */
    CUCHK(g, cu.CtxSynchronize(), "cuCtxSynchronize");
    return TLINK_OK;
}
tlink_status tlink_gpu_stream_create(tlink_gpu_comm *g, tlink_cuda_stream *out) {
    if (!g || !out) return gerr(g, TLINK_ERR_INVALID_ARG, "tlink_gpu_stream_create: %s is NULL", g ? "out" : "g");
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CUCHK(g, cu.StreamCreate(out, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    return TLINK_OK;
}
tlink_status tlink_gpu_stream_destroy(tlink_gpu_comm *g, tlink_cuda_stream s) {
    if (!g) return gerr(NULL, TLINK_ERR_INVALID_ARG, "tlink_gpu_stream_destroy: g is NULL");
    if (!s) return TLINK_OK;
    CUCHK(g, cu.CtxSetCurrent(g->ctx), "cuCtxSetCurrent");
    CUCHK(g, cu.StreamDestroy(s), "cuStreamDestroy");
    return TLINK_OK;
}
