/* cuda.c — the "cuda" backend: generated CUDA C (src/codegen/simt.c) compiled by NVRTC for
 * the device's architecture (sm_90a on Hopper) and run through the driver API. Both
 * libcuda.so.1 and NVRTC (libnvrtc.so.13, .so.12, .so; also under /usr/local/cuda/lib64)
 * are opened by src/base's loader (tb_dl_open): the library builds without CUDA headers and runs everywhere;
 * without a driver or a GPU, available() says why.
 *
 *   TILE_CUDA_DEVICE   device ordinal (default 0)
 *   TILE_CUDA_ARCH     compile for this architecture instead of the device's (e.g. sm_80)
 *   TILE_CUDA_MMA_SYNC 1: the mma.sync GEMM lowering (src/codegen/sm80.c) before wgmma on
 *                      sm_90a; 0: never (default: sm_80..sm_89, and where wgmma declines)
 *   TILE_BENCH_FLUSH   0: do not flush the L2 cache between timed runs (tile_bench)
 * Cubins are cached on disk (simt_rt.h), keyed by the source, the architecture and the
 * NVRTC version; TILE_LOG=info logs the NVRTC compile time of each kernel and each cache hit.
 * Device memory comes from a caching allocator (plain cuMemAlloc, size classes, emptied when
 * the last compiled kernel is released); every copy and launch goes on one non-blocking
 * stream of the backend; tile_bench (cuda_bench) keeps the tensors on the device and times
 * the launches with CUDA events. Errors name the CUDA call, the kernel and the launch shape
 * (grid, block, shared memory).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "../opt/opt.h"
#include "cuda_rt.h"
#include "cuda_tma.h"
#include "simt_rt.h"

/* ---------- the few driver / NVRTC declarations we need ---------- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef unsigned long long CUdeviceptr;
typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN 97
#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8
#define CU_STREAM_NON_BLOCKING 1
#define CUDA_ERROR_OUT_OF_MEMORY 2

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*CtxSetCurrent)(CUcontext);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*FuncSetAttribute)(CUfunction, int, int);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*StreamCreate)(CUstream *, unsigned);
    CUresult (*StreamSynchronize)(CUstream);
    CUresult (*EventCreate)(CUevent *, unsigned);
    CUresult (*EventRecord)(CUevent, CUstream);
    CUresult (*EventSynchronize)(CUevent);
    CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*EventDestroy)(CUevent);
    CUresult (*MemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*MemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream);
    CUresult (*MemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*StreamDestroy)(CUstream);
    CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
    CUresult (*EventQuery)(CUevent);
} cu;

static struct {
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(nvrtcResult);
} nv;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;    /* opening the driver and device */
static pthread_mutex_t g_nv_lock = PTHREAD_MUTEX_INITIALIZER; /* opening NVRTC: open_device() calls it
                                                                 while holding g_lock */
static bool g_nv_tried, g_nv_ok, g_cu_tried, g_cu_ok;
static char g_nv_why[512], g_why[512];
static int g_nv_major, g_nv_minor;
static CUdevice g_dev;
static int g_ordinal, g_count; /* the device's ordinal (TILE_CUDA_DEVICE) and how many there are */
static CUcontext g_ctx;
static char g_name[256], g_arch[32];
static int g_cc_major, g_cc_minor, g_driver, g_smem_optin, g_l2_bytes, g_sms;
static void *g_tma_encode; /* cuTensorMapEncodeTiled (optional; sm_90a TMA copies, cuda_tma.c) */
static CUstream g_stream; /* every copy and launch of the backend, in order */

static const char *cu_err(CUresult r) {
    const char *s = NULL;
    if (cu.GetErrorName && cu.GetErrorName(r, &s) == 0 && s) return s;
    return "CUDA_ERROR";
}

/* ---------- NVRTC ---------- */
static bool load_nvrtc_locked(void) {
    void *h = tb_dl_open(TB_DL_NVRTC, NULL, g_nv_why, sizeof g_nv_why);
    if (!h) return false;
#define LOADN(field, sym)                                                                     \
    do {                                                                                      \
        tb_dl_sym s_ = {(void **)&nv.field, sym, NULL, false};                                \
        if (tb_dl_syms(h, TB_DL_NVRTC, &s_, 1, g_nv_why, sizeof g_nv_why)) return false;     \
    } while (0)
    LOADN(Version, "nvrtcVersion");
    LOADN(CreateProgram, "nvrtcCreateProgram");
    LOADN(CompileProgram, "nvrtcCompileProgram");
    LOADN(GetProgramLogSize, "nvrtcGetProgramLogSize");
    LOADN(GetProgramLog, "nvrtcGetProgramLog");
    LOADN(GetCUBINSize, "nvrtcGetCUBINSize");
    LOADN(GetCUBIN, "nvrtcGetCUBIN");
    LOADN(DestroyProgram, "nvrtcDestroyProgram");
    LOADN(GetErrorString, "nvrtcGetErrorString");
#undef LOADN
    nv.Version(&g_nv_major, &g_nv_minor);
    return true;
}

bool tile_cuda_nvrtc_available(tile_strbuf *why) {
    pthread_mutex_lock(&g_nv_lock);
    if (!g_nv_tried) {
        g_nv_tried = true;
        g_nv_ok = load_nvrtc_locked();
    }
    pthread_mutex_unlock(&g_nv_lock);
    if (!g_nv_ok && why) tile_sb_puts(why, g_nv_why);
    return g_nv_ok;
}

/* The options of every NVRTC compile besides --gpu-architecture: functions are __device__
 * unless marked, no contraction of a * b + c (the interpreter rounds each operation), the
 * C++ dialect of the generated code, and two warnings it triggers by design (177: a variable
 * declared and not used, 550: set and not used). */
static const char *const k_nvrtc_opts[] = {"-default-device", "--fmad=false", "--std=c++17", "-diag-suppress=177,550"};

char *tile_cuda_nvrtc_options(const char *arch) {
    tile_strbuf o = {0};
    tile_sb_printf(&o, "--gpu-architecture=%s", arch && *arch ? arch : "sm_90a");
    for (size_t i = 0; i < sizeof k_nvrtc_opts / sizeof k_nvrtc_opts[0]; i++) tile_sb_printf(&o, "\n%s", k_nvrtc_opts[i]);
    return o.data;
}

int tile_cuda_nvrtc_compile(const char *src, const char *name, const char *arch, void **cubin, size_t *n, tile_strbuf *err) {
    *cubin = NULL;
    *n = 0;
    if (!tile_cuda_nvrtc_available(err)) return 1;
    nvrtcProgram prog;
    nvrtcResult r = nv.CreateProgram(&prog, src, name ? name : "tile.cu", 0, NULL, NULL);
    if (r != 0) {
        tile_sb_printf(err, "nvrtcCreateProgram failed: %s", nv.GetErrorString(r));
        return 1;
    }
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[1 + sizeof k_nvrtc_opts / sizeof k_nvrtc_opts[0]];
    int nopts = 0;
    opts[nopts++] = archopt;
    for (size_t i = 0; i < sizeof k_nvrtc_opts / sizeof k_nvrtc_opts[0]; i++) opts[nopts++] = k_nvrtc_opts[i];
    r = nv.CompileProgram(prog, nopts, opts);
    if (r != 0) {
        size_t ln = 0;
        nv.GetProgramLogSize(prog, &ln);
        char *log = tile_xcalloc(ln + 1, 1);
        nv.GetProgramLog(prog, log);
        tile_sb_printf(err, "nvrtcCompileProgram (%s) failed: %s; log:\n%s", arch, nv.GetErrorString(r), log);
        free(log);
        nv.DestroyProgram(&prog);
        return 1;
    }
    size_t sz = 0;
    if (nv.GetCUBINSize(prog, &sz) != 0 || sz == 0) {
        tile_sb_printf(err, "nvrtcGetCUBINSize failed for %s", arch);
        nv.DestroyProgram(&prog);
        return 1;
    }
    char *bin = tile_xmalloc(sz);
    nv.GetCUBIN(prog, bin);
    nv.DestroyProgram(&prog);
    *cubin = bin;
    *n = sz;
    return 0;
}

/* ---------- the driver ---------- */
static bool open_device(void) {
    void *h = tb_dl_open(TB_DL_CUDA, NULL, g_why, sizeof g_why);
    if (!h) return false;
#define LOADC(field, sym)                                                                     \
    do {                                                                                      \
        tb_dl_sym s_ = {(void **)&cu.field, sym, NULL, false};                                \
        if (tb_dl_syms(h, TB_DL_CUDA, &s_, 1, g_why, sizeof g_why)) return false;             \
    } while (0)
    LOADC(Init, "cuInit");
    LOADC(DriverGetVersion, "cuDriverGetVersion");
    LOADC(DeviceGetCount, "cuDeviceGetCount");
    LOADC(DeviceGet, "cuDeviceGet");
    LOADC(DeviceGetName, "cuDeviceGetName");
    LOADC(DeviceGetAttribute, "cuDeviceGetAttribute");
    LOADC(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOADC(CtxSetCurrent, "cuCtxSetCurrent");
    LOADC(CtxSynchronize, "cuCtxSynchronize");
    LOADC(ModuleLoadData, "cuModuleLoadData");
    LOADC(ModuleUnload, "cuModuleUnload");
    LOADC(ModuleGetFunction, "cuModuleGetFunction");
    LOADC(FuncSetAttribute, "cuFuncSetAttribute");
    LOADC(LaunchKernel, "cuLaunchKernel");
    LOADC(MemAlloc, "cuMemAlloc_v2");
    LOADC(MemFree, "cuMemFree_v2");
    LOADC(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOADC(MemcpyDtoH, "cuMemcpyDtoH_v2");
    LOADC(GetErrorName, "cuGetErrorName");
    LOADC(GetErrorString, "cuGetErrorString");
    LOADC(StreamCreate, "cuStreamCreate");
    LOADC(StreamSynchronize, "cuStreamSynchronize");
    LOADC(EventCreate, "cuEventCreate");
    LOADC(EventRecord, "cuEventRecord");
    LOADC(EventSynchronize, "cuEventSynchronize");
    LOADC(EventElapsedTime, "cuEventElapsedTime");
    LOADC(EventDestroy, "cuEventDestroy_v2");
    LOADC(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOADC(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    LOADC(MemsetD32Async, "cuMemsetD32Async");
    LOADC(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    LOADC(StreamDestroy, "cuStreamDestroy_v2");
    LOADC(StreamWaitEvent, "cuStreamWaitEvent");
    LOADC(EventQuery, "cuEventQuery");
    tb_dl_sym tma = {&g_tma_encode, "cuTensorMapEncodeTiled", NULL, true};
    tb_dl_syms(h, TB_DL_CUDA, &tma, 1, NULL, 0);
#undef LOADC
    CUresult r = cu.Init(0);
    if (r != 0) {
        snprintf(g_why, sizeof g_why, "cuInit failed: %s (no usable GPU?)", cu_err(r));
        return false;
    }
    int count = 0;
    if ((r = cu.DeviceGetCount(&count)) != 0 || count == 0) {
        snprintf(g_why, sizeof g_why, "no CUDA device (cuDeviceGetCount: %s, %d devices)", r ? cu_err(r) : "ok", count);
        return false;
    }
    long ord = (long)tb_knob_int(TB_K_TILE_CUDA_DEVICE);
    if (ord < 0 || ord >= count) {
        snprintf(g_why, sizeof g_why, "TILE_CUDA_DEVICE=%ld, but there are %d CUDA devices", ord, count);
        return false;
    }
    g_ordinal = (int)ord;
    g_count = count;
    if ((r = cu.DeviceGet(&g_dev, (int)ord)) != 0) {
        snprintf(g_why, sizeof g_why, "cuDeviceGet(%ld) failed: %s", ord, cu_err(r));
        return false;
    }
    cu.DeviceGetName(g_name, sizeof g_name, g_dev);
    cu.DeviceGetAttribute(&g_cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g_dev);
    cu.DeviceGetAttribute(&g_cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g_dev);
    cu.DeviceGetAttribute(&g_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, g_dev);
    cu.DeviceGetAttribute(&g_l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g_dev);
    cu.DeviceGetAttribute(&g_sms, 16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */, g_dev);
    cu.DriverGetVersion(&g_driver);
    const char *force = tb_knob_str(TB_K_TILE_CUDA_ARCH);
    if (force && *force) snprintf(g_arch, sizeof g_arch, "%s", force);
    else snprintf(g_arch, sizeof g_arch, "sm_%d%d%s", g_cc_major, g_cc_minor, g_cc_major == 9 && g_cc_minor == 0 ? "a" : "");
    if ((r = cu.DevicePrimaryCtxRetain(&g_ctx, g_dev)) != 0) {
        snprintf(g_why, sizeof g_why, "cuDevicePrimaryCtxRetain failed on '%s': %s", g_name, cu_err(r));
        return false;
    }
    if ((r = cu.CtxSetCurrent(g_ctx)) != 0 || (r = cu.StreamCreate(&g_stream, CU_STREAM_NON_BLOCKING)) != 0) {
        snprintf(g_why, sizeof g_why, "cuStreamCreate failed on '%s': %s", g_name, cu_err(r));
        return false;
    }
    if (!tile_cuda_nvrtc_available(NULL)) {
        snprintf(g_why, sizeof g_why, "%s", g_nv_why);
        return false;
    }
    return true;
}

static bool ensure_device(void) {
    pthread_mutex_lock(&g_lock);
    if (!g_cu_tried) {
        g_cu_tried = true;
        g_cu_ok = open_device();
    }
    pthread_mutex_unlock(&g_lock);
    if (g_cu_ok) cu.CtxSetCurrent(g_ctx);
    if (g_cu_ok) opt_set_cuda_arch(opt_arch_sm(g_arch)); /* the cuda pipeline's layout decisions */
    return g_cu_ok;
}

static bool cuda_available(tile_strbuf *why) {
    if (ensure_device()) return true;
    if (why) tile_sb_puts(why, g_why);
    return false;
}

static int arch_sm(const char *arch);

static void cuda_device_name(tile_strbuf *out) {
    if (!ensure_device()) return;
    tile_sb_printf(out, "%s (%s, driver %d.%d, NVRTC %d.%d", g_name, g_arch, g_driver / 1000, (g_driver % 1000) / 10, g_nv_major, g_nv_minor);
    /* the tensor-core GEMM lowerings this architecture gets (TILE_LOG=info names each kernel's) */
    int sm = arch_sm(g_arch);
    long ms = (long)tb_opt_int(NULL, TB_OPT_cuda_mma_sync);
    bool wg = sm >= 90 && tb_opt_bool(NULL, TB_OPT_cuda_sm90), mma = sm >= 80 && ms != 0;
    if (!wg && !mma) tile_sb_puts(out, ", GEMM: simt)");
    else if (wg && mma) tile_sb_printf(out, ", GEMM: %s)", ms == 1 ? "sm80-mma first, then sm90-wgmma" : "sm90-wgmma, else sm80-mma");
    else tile_sb_printf(out, ", GEMM: %s)", wg ? "sm90-wgmma" : "sm80-mma");
}

/* ---------- the caching device allocator ----------
 * Plain cuMemAlloc behind free lists of size classes: a size is rounded up to a class (256 B
 * granules below 4 KiB, then four classes per power of two, so at most 25% is wasted), and a
 * freed block goes back to its class's list instead of to the driver. A run that needs the
 * same sizes again (every run of a kernel after the first, --bench, tile_bench) therefore
 * allocates nothing. When cuMemAlloc runs out of memory, every cached block is released and
 * the allocation tried once more. The cache is emptied when the last compiled kernel of the
 * process is released (module teardown). TILE_LOG=debug logs the driver allocations. */
typedef struct dblock {
    CUdeviceptr ptr;
    size_t cap;
    struct dblock *next;
} dblock;

enum { POOL_CLASSES = 256 };
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static dblock *g_pool[POOL_CLASSES];
static size_t g_pool_cached;  /* bytes in the free lists */
static int g_live_exes;       /* compiled kernels alive (the pool is emptied at 0) */

/* The class of n bytes and its size. */
static int size_class(size_t n, size_t *cap) {
    if (n <= 4096) {
        size_t c = (n + 255) / 256;
        if (c == 0) c = 1;
        *cap = c * 256;
        return (int)c - 1; /* 0..15 */
    }
    int p = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^p < n <= 2^(p+1) */
    size_t q = (size_t)1 << (p - 2);                            /* an eighth of 2^(p+1) */
    size_t k = (n + q - 1) / q;                                 /* 5..8 eighths */
    *cap = k * q;
    int cls = 16 + (p - 12) * 4 + (int)(k - 5);
    return cls < POOL_CLASSES ? cls : -1;
}

int tile_cuda_size_class(size_t n, size_t *cap) { return size_class(n, cap); }

static void pool_trim_locked(void) {
    for (int c = 0; c < POOL_CLASSES; c++) {
        while (g_pool[c]) {
            dblock *b = g_pool[c];
            g_pool[c] = b->next;
            cu.MemFree(b->ptr);
            free(b);
        }
    }
    g_pool_cached = 0;
}

static bool dev_alloc(size_t n, CUdeviceptr *ptr, size_t *cap, tile_strbuf *err, const char *what) {
    size_t c;
    int cls = size_class(n, &c);
    pthread_mutex_lock(&g_pool_lock);
    if (cls >= 0 && g_pool[cls]) {
        dblock *b = g_pool[cls];
        g_pool[cls] = b->next;
        g_pool_cached -= b->cap;
        pthread_mutex_unlock(&g_pool_lock);
        *ptr = b->ptr;
        *cap = b->cap;
        free(b);
        return true;
    }
    CUresult r = cu.MemAlloc(ptr, c);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && g_pool_cached) {
        tile_log(TILE_LOG_INFO, "cuda: out of device memory; releasing %zu cached bytes and trying again", g_pool_cached);
        pool_trim_locked();
        r = cu.MemAlloc(ptr, c);
    }
    pthread_mutex_unlock(&g_pool_lock);
    if (r != 0) {
        *ptr = 0;
        tile_sb_printf(err, "cuMemAlloc of %zu bytes for '%s' failed on '%s': %s", c, what, g_name, cu_err(r));
        return false;
    }
    tile_log(TILE_LOG_DEBUG, "cuda: cuMemAlloc %zu bytes for '%s'", c, what);
    *cap = c;
    return true;
}

static void dev_free(CUdeviceptr ptr, size_t cap) {
    if (!ptr) return;
    size_t c;
    int cls = size_class(cap, &c);
    pthread_mutex_lock(&g_pool_lock);
    if (cls >= 0 && c == cap) {
        dblock *b = tile_xcalloc(1, sizeof *b);
        b->ptr = ptr;
        b->cap = cap;
        b->next = g_pool[cls];
        g_pool[cls] = b;
        g_pool_cached += cap;
    } else cu.MemFree(ptr);
    pthread_mutex_unlock(&g_pool_lock);
}

/* ---------- compile ---------- */
typedef struct dbuf {
    CUdeviceptr ptr;
    size_t cap;
} dbuf;

typedef struct cuda_exe {
    pthread_mutex_t lock; /* tile_run / tile_bench: the staging buffers below */
    simt_program P;
    CUmodule mod;
    CUfunction *fns;
    dbuf *bufs;
    dbuf scal, err;
} cuda_exe;

static void dbuf_free(dbuf *b) {
    dev_free(b->ptr, b->cap);
    b->ptr = 0;
    b->cap = 0;
}

static void cuda_release(void *p) {
    cuda_exe *x = p;
    if (!x) return;
    if (g_cu_ok) {
        cu.CtxSetCurrent(g_ctx);
        cu.StreamSynchronize(g_stream);
        for (int i = 0; x->bufs && i < x->P.nbufs; i++) dbuf_free(&x->bufs[i]);
        dbuf_free(&x->scal);
        dbuf_free(&x->err);
        if (x->mod) cu.ModuleUnload(x->mod);
        pthread_mutex_lock(&g_pool_lock);
        if (--g_live_exes == 0) pool_trim_locked();
        pthread_mutex_unlock(&g_pool_lock);
    }
    free(x->fns);
    free(x->bufs);
    simt_program_free(&x->P);
    pthread_mutex_destroy(&x->lock);
    free(x);
}

/* The architecture-specific lowerings for arch (simt_options.sm): 90 for sm_90a (wgmma,
 * src/codegen/sm90.c); sm_80 .. sm_89 their number, and later architectures without the
 * sm_90a features 89 (mma.sync, src/codegen/sm80.c); 0 below sm_80 (the portable lowering). */
static int arch_sm(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
    if (!strcmp(arch, "sm_90a")) return 90;
    int n = atoi(arch + 3);
    return n < 80 ? 0 : n > 89 ? 89 : n;
}

static int cuda_emit(const ir_func *f, tile_strbuf *out, tile_strbuf *err) {
    simt_options o;
    simt_options_default(&o, SIMT_CUDA, f->opts);
    o.sm = arch_sm(tb_knob_str(TB_K_TILE_CUDA_ARCH)); /* emit has no device: the arch comes from the environment */
    simt_program P;
    if (simt_generate(f, &o, &P, err)) return 1;
    tile_sb_puts(out, P.source);
    simt_program_free(&P);
    return 0;
}

static int cuda_compile(const ir_func *f, void **exe, tile_strbuf *err) {
    *exe = NULL;
    if (!ensure_device()) {
        tile_sb_printf(err, "CUDA is not available: %s", g_why);
        return 1;
    }
    cuda_exe *x = tile_xcalloc(1, sizeof *x);
    pthread_mutex_init(&x->lock, NULL);
    pthread_mutex_lock(&g_pool_lock);
    g_live_exes++;
    pthread_mutex_unlock(&g_pool_lock);
    simt_options o;
    simt_options_default(&o, SIMT_CUDA, f->opts);
    o.sm = arch_sm(g_arch);
    double tg = tile_now();
    if (simt_generate(f, &o, &x->P, err)) {
        pthread_mutex_lock(&g_pool_lock);
        g_live_exes--;
        pthread_mutex_unlock(&g_pool_lock);
        free(x);
        return 1;
    }
    char targs[160];
    snprintf(targs, sizeof targs, "\"kernel\": \"%s\", \"arch\": \"%s\"", f->name, g_arch);
    rt_trace_span("codegen CUDA", "compile", tg, tile_now() - tg, targs);
    for (int i = 0; i < x->P.nlaunches; i++) {
        const simt_launch *L = &x->P.launches[i];
        tile_log(TILE_LOG_INFO, "cuda: '%s' kernel %s for %s: lowering %s (%d threads, %zu B shared)", f->name, L->name, g_arch, L->lowering, L->threads, L->smem);
        if (L->threads > 1024) {
            tile_diag dg = {TILE_DIAG_ERROR, L->loc, NULL};
            tile_strbuf m = {0};
            tile_sb_printf(&m, "the kernel has %d threads per block; CUDA allows at most 1024", L->threads);
            dg.msg = m.data;
            tile_diag_format(&dg, err);
            tile_sb_free(&m);
            cuda_release(x);
            return 1;
        }
        if (g_smem_optin > 0 && L->smem > (size_t)g_smem_optin) {
            tile_sb_printf(err, "error: kernel %s needs %zu bytes of shared memory, but '%s' allows %d per block\n", L->name, L->smem, g_name, g_smem_optin);
            cuda_release(x);
            return 1;
        }
    }
    tile_strbuf key = {0}, path = {0};
    tile_sb_printf(&key, "cuda\n%s\nnvrtc %d.%d\n%s", g_arch, g_nv_major, g_nv_minor, x->P.source);
    bool cache = simt_cache_path("cuda", key.data, key.len, ".cubin", &path);
    void *bin = NULL;
    size_t n = 0;
    CUresult r;
    if (cache && (bin = simt_read_file(path.data, &n)) != NULL) {
        if (cu.ModuleLoadData(&x->mod, bin) == 0) {
            tile_log(TILE_LOG_INFO, "cuda: '%s' for %s from the cubin cache (%s)", f->name, g_arch, path.data);
            rt_trace_span("disk cache hit", "compile", tile_now(), 0, NULL);
            free(bin);
            goto loaded;
        }
        free(bin); /* a damaged cache entry: compile again */
        bin = NULL;
        x->mod = NULL;
        remove(path.data);
    }
    {
        double t0 = tile_now();
        if (tile_cuda_nvrtc_compile(x->P.source, f->name, g_arch, &bin, &n, err)) {
            tile_sb_printf(err, "\n(internal error: the generated CUDA C of '%s' does not compile)\n", f->name);
            goto fail;
        }
        tile_log(TILE_LOG_INFO, "cuda: NVRTC compiled '%s' for %s in %.1f ms (%zu bytes of cubin)", f->name, g_arch, (tile_now() - t0) * 1e3, n);
        rt_trace_span("nvrtc", "compile", t0, tile_now() - t0, targs);
        if (cache) simt_write_file(path.data, bin, n);
    }
    {
        double t0 = tile_now();
        r = cu.ModuleLoadData(&x->mod, bin);
        rt_trace_span("cuModuleLoadData", "compile", t0, tile_now() - t0, targs);
    }
    free(bin);
    if (r != 0) {
        tile_sb_printf(err, "cuModuleLoadData for '%s' (%s) failed: %s", f->name, g_arch, cu_err(r));
        goto fail;
    }
loaded:
    x->fns = tile_xcalloc((size_t)x->P.nlaunches + 1, sizeof(CUfunction));
    for (int i = 0; i < x->P.nlaunches; i++) {
        const simt_launch *L = &x->P.launches[i];
        if ((r = cu.ModuleGetFunction(&x->fns[i], x->mod, L->name)) != 0) {
            tile_sb_printf(err, "cuModuleGetFunction(%s) failed: %s", L->name, cu_err(r));
            goto fail;
        }
        if (L->smem > 48 * 1024 && (r = cu.FuncSetAttribute(x->fns[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)L->smem)) != 0) {
            tile_sb_printf(err, "cuFuncSetAttribute(%s, max dynamic shared memory = %zu) failed: %s", L->name, L->smem, cu_err(r));
            goto fail;
        }
    }
    x->bufs = tile_xcalloc((size_t)x->P.nbufs + 1, sizeof(dbuf));
    tile_sb_free(&key);
    tile_sb_free(&path);
    *exe = x;
    return 0;
fail:
    tile_sb_free(&key);
    tile_sb_free(&path);
    cuda_release(x);
    return 1;
}

/* ---------- run ---------- */
static bool dbuf_reserve(dbuf *b, size_t n, tile_strbuf *err, const char *what) {
    if (n < 16) n = 16;
    if (b->ptr && b->cap >= n) return true;
    dbuf_free(b);
    return dev_alloc(n, &b->ptr, &b->cap, err, what);
}

/* One line per launch of the program: "tile_k0 (4096 blocks x 128 threads, 49152 B shared)". */
static void launch_shapes(const cuda_exe *x, const ir_func *f, const int64_t *sizes, tile_strbuf *out) {
    for (int l = 0; l < x->P.nlaunches; l++) {
        const simt_launch *L = &x->P.launches[l];
        int64_t blocks = -1;
        tile_strbuf ig = {0};
        simt_blocks(L, f, sizes, &blocks, &ig);
        tile_sb_free(&ig);
        tile_sb_printf(out, "%s%s (%lld blocks x %d threads, %zu B shared)", l ? ", " : "", L->name, (long long)blocks, L->threads, L->smem);
    }
}

static void sync_error(const cuda_exe *x, const ir_func *f, const int64_t *sizes, const char *call, CUresult r, tile_strbuf *err) {
    const char *s = NULL;
    cu.GetErrorString(r, &s);
    tile_sb_printf(err, "running '%s' on '%s' failed (%s: %s: %s); its launches: ", f->name, g_name, call, cu_err(r), s ? s : "");
    launch_shapes(x, f, sizes, err);
}

static void *host_of(const simt_buf *b, tile_tensor *params, tile_tensor *rets) {
    return b->param >= 0 ? params[b->param].data : b->ret >= 0 ? rets[b->ret].data : NULL;
}

/* Device buffers for this run's sizes, inputs copied in, the scalar table and a clear error
 * record; args[] set for cuLaunchKernel. */
static bool stage_in(cuda_exe *x, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars,
                     size_t *bytes, void **args, tile_strbuf *err) {
    simt_program *P = &x->P;
    CUresult r;
    for (int i = 0; i < P->nbufs; i++) {
        if (!simt_buf_bytes(P, i, f, sizes, params, rets, &bytes[i], err)) return false;
        const simt_buf *b = &P->bufs[i];
        if (!dbuf_reserve(&x->bufs[i], bytes[i] + 8, err, b->buf->name)) return false;
        void *host = host_of(b, params, rets);
        if (host && bytes[i] && (r = cu.MemcpyHtoDAsync(x->bufs[i].ptr, host, bytes[i], g_stream)) != 0) {
            tile_sb_printf(err, "cuMemcpyHtoDAsync of '%s' (%zu bytes) for '%s' failed: %s", b->buf->name, bytes[i], f->name, cu_err(r));
            return false;
        }
        args[i] = &x->bufs[i].ptr;
    }
    int64_t *tab = tile_xcalloc((size_t)P->nscalars + 1, sizeof(int64_t));
    int64_t errrec[8] = {0};
    simt_pack_scalars(f, sizes, scalars, tab);
    size_t tb = sizeof(int64_t) * (size_t)(P->nscalars + 1);
    bool ok = dbuf_reserve(&x->scal, tb, err, "scalar table") && dbuf_reserve(&x->err, sizeof errrec, err, "error record");
    /* synchronous copies: tab and errrec are on this stack frame */
    if (ok && ((r = cu.MemcpyHtoDAsync(x->scal.ptr, tab, tb, g_stream)) != 0 || (r = cu.MemcpyHtoDAsync(x->err.ptr, errrec, sizeof errrec, g_stream)) != 0 ||
               (r = cu.StreamSynchronize(g_stream)) != 0)) {
        tile_sb_printf(err, "copying the scalar table of '%s' to the device failed: %s", f->name, cu_err(r));
        ok = false;
    }
    free(tab);
    args[P->nbufs] = &x->scal.ptr;
    args[P->nbufs + 1] = &x->err.ptr;
    return ok;
}

/* Every launch of the program, in order, on the backend's stream. */
/* bufptrs: the buffers' device addresses (NULL: x->bufs); st: the stream to launch on. */
static bool launch_all(cuda_exe *x, const ir_func *f, const int64_t *sizes, void **args, const CUdeviceptr *bufptrs, CUstream st, tile_strbuf *err) {
    for (int l = 0; l < x->P.nlaunches; l++) {
        const simt_launch *L = &x->P.launches[l];
        int64_t blocks;
        if (!simt_blocks(L, f, sizes, &blocks, err)) return false;
        if (blocks == 0) continue;
        if (L->persistent && g_sms > 0) { /* it loops over its blocks */
            int64_t cap = (int64_t)g_sms * (L->blocks_per_sm > 1 ? L->blocks_per_sm : 1);
            if (blocks > cap) blocks = cap;
        }
        if (blocks > 0x7fffffffLL) {
            tile_sb_printf(err, "kernel %s of '%s' needs %lld blocks; CUDA allows at most 2^31-1 in a grid", L->name, f->name, (long long)blocks);
            return false;
        }
        /* sm_90a TMA: tensor maps after the standard arguments (cuda_tma.c) */
        tile_cuda_tmap maps[SIMT_MAX_TMA];
        void *largs[64 + SIMT_MAX_TMA], **la = args;
        if (L->ntma) {
            CUdeviceptr ptrs[64];
            if (x->P.nbufs > 64) {
                tile_sb_printf(err, "kernel %s of '%s': too many buffers for TMA", L->name, f->name);
                return false;
            }
            for (int i = 0; i < x->P.nbufs; i++) ptrs[i] = bufptrs ? bufptrs[i] : x->bufs[i].ptr;
            if (tile_cuda_tma_encode(g_tma_encode, &x->P, L, f, sizes, ptrs, maps, err)) return false;
            for (int i = 0; i < x->P.nbufs + 2; i++) largs[i] = args[i];
            for (int i = 0; i < L->ntma; i++) largs[x->P.nbufs + 2 + i] = &maps[i];
            la = largs;
        }
        double t0 = rt_tracing() ? tile_now() : 0;
        CUresult r = cu.LaunchKernel(x->fns[l], (unsigned)blocks, 1, 1, (unsigned)L->threads, 1, 1, (unsigned)L->smem, st, la, NULL);
        if (t0) {
            char a[192];
            snprintf(a, sizeof a, "\"grid\": [%lld, 1, 1], \"block\": [%d, 1, 1], \"shared_bytes\": %zu, \"lowering\": \"%s\"", (long long)blocks, L->threads,
                     L->smem, L->lowering);
            rt_trace_span(L->name, "cuLaunchKernel", t0, tile_now() - t0, a);
        }
        if (r != 0) {
            tile_sb_printf(err, "cuLaunchKernel(%s of '%s', grid %lld x 1 x 1, block %d x 1 x 1, %zu bytes of shared memory) failed: %s", L->name, f->name,
                           (long long)blocks, L->threads, L->smem, cu_err(r));
            return false;
        }
    }
    return true;
}

/* Wait for the stream, check the error record, copy the outputs back. */
static bool stage_out(cuda_exe *x, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const size_t *bytes,
                      tile_strbuf *err) {
    simt_program *P = &x->P;
    int64_t errrec[8] = {0};
    CUresult r;
    if ((r = cu.StreamSynchronize(g_stream)) != 0) {
        sync_error(x, f, sizes, "cuStreamSynchronize", r, err);
        return false;
    }
    if ((r = cu.MemcpyDtoHAsync(errrec, x->err.ptr, sizeof errrec, g_stream)) != 0 || (r = cu.StreamSynchronize(g_stream)) != 0) {
        tile_sb_printf(err, "cuMemcpyDtoHAsync of the error record of '%s' failed: %s", f->name, cu_err(r));
        return false;
    }
    if (errrec[0]) {
        simt_format_error(P, errrec, err);
        return false;
    }
    for (int i = 0; i < P->nbufs; i++) {
        const simt_buf *b = &P->bufs[i];
        void *host = host_of(b, params, rets);
        if (!host || !bytes[i]) continue;
        if ((r = cu.MemcpyDtoHAsync(host, x->bufs[i].ptr, bytes[i], g_stream)) != 0) {
            tile_sb_printf(err, "cuMemcpyDtoHAsync of '%s' of '%s' failed: %s", b->buf->name, f->name, cu_err(r));
            return false;
        }
    }
    if ((r = cu.StreamSynchronize(g_stream)) != 0) {
        sync_error(x, f, sizes, "cuStreamSynchronize after the copies out", r, err);
        return false;
    }
    return true;
}

static int cuda_run(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars,
                    const tile_run_options *opt, tile_strbuf *err) {
    cuda_exe *x = exe;
    pthread_mutex_lock(&x->lock); /* the exe's staging buffers */
    cu.CtxSetCurrent(g_ctx);
    size_t *bytes = tile_xcalloc((size_t)x->P.nbufs + 1, sizeof(size_t));
    void **args = tile_xcalloc((size_t)x->P.nbufs + 3, sizeof(void *));
    bool ok = stage_in(x, f, sizes, params, rets, scalars, bytes, args, err) && launch_all(x, f, sizes, args, NULL, g_stream, err) &&
              stage_out(x, f, sizes, params, rets, bytes, err);
    if (!ok) cu.StreamSynchronize(g_stream);
    pthread_mutex_unlock(&x->lock);
    free(bytes);
    free(args);
    return ok ? 0 : 1;
}

/* --bench / tile_bench: the inputs are copied to the device once; one untimed run, then
 * `iters` runs each timed with CUDA events around its launches alone (no copies); before
 * each, unless TILE_BENCH_FLUSH=0, the L2 cache is flushed by writing a buffer of twice its
 * size (outside the events). The outputs of the last run are copied back. */
static int cuda_bench(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars, int iters,
                      double *times_s, tile_strbuf *err) {
    cuda_exe *x = exe;
    pthread_mutex_lock(&x->lock);
    cu.CtxSetCurrent(g_ctx);
    size_t *bytes = tile_xcalloc((size_t)x->P.nbufs + 1, sizeof(size_t));
    void **args = tile_xcalloc((size_t)x->P.nbufs + 3, sizeof(void *));
    CUevent ev[2] = {NULL, NULL};
    dbuf flush = {0, 0};
    size_t flush_bytes = tb_knob_bool(TB_K_TILE_BENCH_FLUSH) && g_l2_bytes > 0 ? (size_t)g_l2_bytes * 2 : 0;
    CUresult r;
    bool ok = stage_in(x, f, sizes, params, rets, scalars, bytes, args, err);
    if (ok && flush_bytes) ok = dbuf_reserve(&flush, flush_bytes, err, "L2 flush buffer");
    if (ok && ((r = cu.EventCreate(&ev[0], 0)) != 0 || (r = cu.EventCreate(&ev[1], 0)) != 0)) {
        tile_sb_printf(err, "cuEventCreate failed: %s", cu_err(r));
        ok = false;
    }
    ok = ok && launch_all(x, f, sizes, args, NULL, g_stream, err); /* warm-up */
    if (ok && (r = cu.StreamSynchronize(g_stream)) != 0) {
        sync_error(x, f, sizes, "cuStreamSynchronize after the warm-up run", r, err);
        ok = false;
    }
    for (int it = 0; ok && it < iters; it++) {
        if (flush_bytes && (r = cu.MemsetD32Async(flush.ptr, (unsigned)it, flush_bytes / 4, g_stream)) != 0) {
            tile_sb_printf(err, "cuMemsetD32Async (L2 flush, %zu bytes) failed: %s", flush_bytes, cu_err(r));
            ok = false;
            break;
        }
        if ((r = cu.EventRecord(ev[0], g_stream)) != 0) {
            tile_sb_printf(err, "cuEventRecord failed: %s", cu_err(r));
            ok = false;
            break;
        }
        if (!(ok = launch_all(x, f, sizes, args, NULL, g_stream, err))) break;
        if ((r = cu.EventRecord(ev[1], g_stream)) != 0) {
            tile_sb_printf(err, "cuEventRecord failed: %s", cu_err(r));
            ok = false;
            break;
        }
        float ms = 0;
        if ((r = cu.EventSynchronize(ev[1])) != 0) {
            sync_error(x, f, sizes, "cuEventSynchronize", r, err);
            ok = false;
            break;
        }
        if ((r = cu.EventElapsedTime(&ms, ev[0], ev[1])) != 0) {
            tile_sb_printf(err, "cuEventElapsedTime failed: %s", cu_err(r));
            ok = false;
            break;
        }
        times_s[it] = ms * 1e-3;
    }
    ok = ok && stage_out(x, f, sizes, params, rets, bytes, err);
    if (!ok) cu.StreamSynchronize(g_stream);
    for (int i = 0; i < 2; i++)
        if (ev[i]) cu.EventDestroy(ev[i]);
    dbuf_free(&flush);
    pthread_mutex_unlock(&x->lock);
    free(bytes);
    free(args);
    return ok ? 0 : 1;
}

/* ---------- the cuda device: memory, streams, events (backend.h, tile_device_ops) ----------
 * Index i of the device type is CUDA ordinal i; the backend drives the one TILE_CUDA_DEVICE
 * picks, and refuses the others with a message. */
static _Thread_local CUcontext t_ctx; /* the context made current on this thread */
static bool cuda_index_ok(int index, tile_strbuf *err) {
    if (!ensure_device()) {
        if (err) tile_sb_printf(err, "CUDA is not available: %s", g_why);
        return false;
    }
    if (index != g_ordinal) {
        if (err) tile_sb_printf(err, "cuda:%d: this process drives cuda:%d (the cuda backend drives one GPU per process; TILE_CUDA_DEVICE=%d picks it)", index, g_ordinal, index);
        return false;
    }
    if (t_ctx != g_ctx) {
        cu.CtxSetCurrent(g_ctx);
        t_ctx = g_ctx;
    }
    return true;
}
static int cu_fail(tile_strbuf *err, const char *call, CUresult r) {
    const char *s = NULL;
    cu.GetErrorString(r, &s);
    tile_sb_printf(err, "%s failed on '%s': %s (%s)", call, g_name, cu_err(r), s ? s : "");
    return 1;
}
static int cuda_dev_count(void) { return ensure_device() ? g_count : 0; }
static void cuda_dev_name(int index, tile_strbuf *out) {
    if (cuda_index_ok(index, NULL)) cuda_device_name(out);
}
static int cuda_raw_alloc(int index, size_t n, void **p, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUdeviceptr d = 0;
    CUresult r = cu.MemAlloc(&d, n ? n : 1);
    if (r) {
        tile_sb_printf(err, "cuMemAlloc of %zu bytes failed on '%s': %s", n, g_name, cu_err(r));
        return 1;
    }
    *p = (void *)(uintptr_t)d;
    return 0;
}
static void cuda_raw_free(int index, void *p) {
    if (cuda_index_ok(index, NULL)) cu.MemFree((CUdeviceptr)(uintptr_t)p);
}
static int cuda_copy(int index, int kind, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, void *stream, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUstream st = (CUstream)stream;
    CUresult r;
    if (kind == 0) r = cu.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst + dst_off, (const char *)src + src_off, n, st);
    else if (kind == 1) r = cu.MemcpyDtoHAsync((char *)dst + dst_off, (CUdeviceptr)(uintptr_t)src + src_off, n, st);
    else r = cu.MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst + dst_off, (CUdeviceptr)(uintptr_t)src + src_off, n, st);
    return r ? cu_fail(err, kind == 0 ? "cuMemcpyHtoDAsync" : kind == 1 ? "cuMemcpyDtoHAsync" : "cuMemcpyDtoDAsync", r) : 0;
}
static int cuda_stream_create(int index, void **s, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.StreamCreate((CUstream *)s, CU_STREAM_NON_BLOCKING);
    return r ? cu_fail(err, "cuStreamCreate", r) : 0;
}
static void cuda_stream_destroy(int index, void *s) {
    if (cuda_index_ok(index, NULL) && s) cu.StreamDestroy((CUstream)s);
}
static int cuda_stream_sync(int index, void *s, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.StreamSynchronize((CUstream)s);
    return r ? cu_fail(err, "cuStreamSynchronize", r) : 0;
}
static int cuda_event_create(int index, void **e, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.EventCreate((CUevent *)e, 0);
    return r ? cu_fail(err, "cuEventCreate", r) : 0;
}
static void cuda_event_destroy(int index, void *e) {
    if (cuda_index_ok(index, NULL) && e) cu.EventDestroy((CUevent)e);
}
static int cuda_event_record(int index, void *e, void *s, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.EventRecord((CUevent)e, (CUstream)s);
    return r ? cu_fail(err, "cuEventRecord", r) : 0;
}
static int cuda_event_wait(int index, void *s, void *e, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.StreamWaitEvent((CUstream)s, (CUevent)e, 0);
    return r ? cu_fail(err, "cuStreamWaitEvent", r) : 0;
}
static int cuda_event_sync(int index, void *e, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    CUresult r = cu.EventSynchronize((CUevent)e);
    return r ? cu_fail(err, "cuEventSynchronize", r) : 0;
}
static int cuda_event_query(int index, void *e) {
    if (!cuda_index_ok(index, NULL)) return -1;
    CUresult r = cu.EventQuery((CUevent)e);
    return r == 0 ? 1 : r == 600 /* CUDA_ERROR_NOT_READY */ ? 0 : -1;
}
static int cuda_event_elapsed(int index, void *a, void *b, double *sec, tile_strbuf *err) {
    if (!cuda_index_ok(index, err)) return 1;
    float ms = 0;
    CUresult r = cu.EventElapsedTime(&ms, (CUevent)a, (CUevent)b);
    if (r) return cu_fail(err, "cuEventElapsedTime", r);
    *sec = ms * 1e-3;
    return 0;
}

static const tile_device_ops cuda_device_ops = {
    .count = cuda_dev_count,
    .name = cuda_dev_name,
    .raw_alloc = cuda_raw_alloc,
    .raw_free = cuda_raw_free,
    .copy = cuda_copy,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_sync = cuda_stream_sync,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_sync = cuda_event_sync,
    .event_query = cuda_event_query,
    .event_elapsed = cuda_event_elapsed,
};

/* ---------- launches on device memory (tile_launch) ----------
 * Per specialisation: the scalar table on the device (uploaded again, stream-ordered, only
 * when the scalars change), the error record (read at the next tile_stream_sync), the global
 * temporaries, and the event of the last launch: a launch on another stream first waits for
 * it, so launches of one specialisation never share its device state concurrently. */
typedef struct cuda_state {
    dbuf scal, errrec;
    int64_t *tab;      /* the table last uploaded */
    dbuf *temps;       /* per P.bufs entry that is a temporary */
    CUevent last;
    CUstream last_stream;
    bool launched;
} cuda_state;

static void cuda_release_state(void *exe, void *p) {
    cuda_state *s = p;
    cuda_exe *x = exe;
    if (!s) return;
    if (g_cu_ok) {
        cu.CtxSetCurrent(g_ctx);
        if (s->last) {
            cu.EventSynchronize(s->last);
            cu.EventDestroy(s->last);
        }
        dbuf_free(&s->scal);
        dbuf_free(&s->errrec);
        for (int i = 0; s->temps && i < x->P.nbufs; i++) dbuf_free(&s->temps[i]);
    }
    free(s->temps);
    free(s->tab);
    free(s);
}

static int cuda_launch(void *exe, const ir_func *f, const int64_t *sizes, const tile_launch_arg *args, const double *scalars, int device_index,
                       void *stream, void **statep, tile_strbuf *err) {
    cuda_exe *x = exe;
    simt_program *P = &x->P;
    if (!cuda_index_ok(device_index, err)) return 1;
    CUstream st = (CUstream)stream;
    CUresult r;
    cuda_state *s = *statep;
    int ntab = P->nscalars + 1;
    int64_t tabstack[64], *tab = ntab <= 64 ? tabstack : tile_xcalloc((size_t)ntab, sizeof(int64_t));
    memset(tab, 0, sizeof(int64_t) * (size_t)ntab);
    simt_pack_scalars(f, sizes, scalars, tab);
    int rc = 1;
    if (!s) {
        s = tile_xcalloc(1, sizeof *s);
        *statep = s;
        s->tab = tile_xcalloc((size_t)ntab, sizeof(int64_t));
        s->temps = tile_xcalloc((size_t)P->nbufs + 1, sizeof(dbuf));
        int64_t zero[8] = {0};
        if (!dbuf_reserve(&s->scal, sizeof(int64_t) * (size_t)ntab, err, "scalar table") || !dbuf_reserve(&s->errrec, sizeof zero, err, "error record"))
            goto done;
        if ((r = cu.MemcpyHtoD(s->errrec.ptr, zero, sizeof zero)) != 0) {
            cu_fail(err, "cuMemcpyHtoD (error record)", r);
            goto done;
        }
        for (int i = 0; i < P->nbufs; i++) {
            const simt_buf *b = &P->bufs[i];
            if (b->param >= 0 || b->ret >= 0) continue;
            size_t bytes;
            if (!simt_buf_bytes(P, i, f, sizes, NULL, NULL, &bytes, err) || !dbuf_reserve(&s->temps[i], bytes + 8, err, b->buf->name)) goto done;
        }
        if ((r = cu.EventCreate(&s->last, 2 /* CU_EVENT_DISABLE_TIMING */)) != 0) {
            cu_fail(err, "cuEventCreate", r);
            goto done;
        }
    }
    /* another stream's launch of this specialisation may still use its state */
    if (s->launched && s->last_stream != st && (r = cu.StreamWaitEvent(st, s->last, 0)) != 0) {
        cu_fail(err, "cuStreamWaitEvent", r);
        goto done;
    }
    if (!s->launched || memcmp(tab, s->tab, sizeof(int64_t) * (size_t)ntab)) {
        /* pageable source: staged by the driver before the call returns */
        if ((r = cu.MemcpyHtoDAsync(s->scal.ptr, tab, sizeof(int64_t) * (size_t)ntab, st)) != 0) {
            cu_fail(err, "cuMemcpyHtoDAsync (scalar table)", r);
            goto done;
        }
        memcpy(s->tab, tab, sizeof(int64_t) * (size_t)ntab);
    }
    {
        CUdeviceptr pstack[32], *ptrs = P->nbufs <= 32 ? pstack : tile_xcalloc((size_t)P->nbufs, sizeof(CUdeviceptr));
        void *astack[34], **la = P->nbufs + 2 <= 34 ? astack : tile_xcalloc((size_t)P->nbufs + 2, sizeof(void *));
        for (int i = 0; i < P->nbufs; i++) {
            const simt_buf *b = &P->bufs[i];
            int a = b->param >= 0 ? b->param : b->ret >= 0 ? f->nparams + b->ret : -1;
            ptrs[i] = a >= 0 ? (CUdeviceptr)(uintptr_t)args[a].data + (CUdeviceptr)args[a].byte_offset : s->temps[i].ptr;
            la[i] = &ptrs[i];
        }
        la[P->nbufs] = &s->scal.ptr;
        la[P->nbufs + 1] = &s->errrec.ptr;
        bool ok = launch_all(x, f, sizes, la, ptrs, st, err);
        if (ptrs != pstack) free(ptrs);
        if (la != astack) free(la);
        if (!ok) goto done;
    }
    if ((r = cu.EventRecord(s->last, st)) != 0) {
        cu_fail(err, "cuEventRecord", r);
        goto done;
    }
    s->last_stream = st;
    s->launched = true;
    rc = 0;
done:
    if (tab != tabstack) free(tab);
    return rc;
}

/* After the stream was synchronised: the kernel's error record. */
static int cuda_check_state(void *exe, const ir_func *f, void *p, tile_strbuf *err) {
    cuda_exe *x = exe;
    cuda_state *s = p;
    if (!s || !s->errrec.ptr || !cuda_index_ok(g_ordinal, err)) return 0;
    int64_t rec[8] = {0};
    CUresult r = cu.MemcpyDtoH(rec, s->errrec.ptr, sizeof rec);
    if (r) return cu_fail(err, "cuMemcpyDtoH (error record)", r);
    if (!rec[0]) return 0;
    simt_format_error(&x->P, rec, err);
    int64_t zero[8] = {0};
    cu.MemcpyHtoD(s->errrec.ptr, zero, sizeof zero);
    return 1;
}

const tile_backend tile_backend_cuda = {
    .name = "cuda",
    .auto_rank = 3,
    .device_type = TILE_DEVICE_CUDA,
    .device = &cuda_device_ops,
    .available = cuda_available,
    .device_name = cuda_device_name,
    .pipeline = "cuda",
    .emit = cuda_emit,
    .compile = cuda_compile,
    .run = cuda_run,
    .bench = cuda_bench,
    .launch = cuda_launch,
    .check_state = cuda_check_state,
    .release_state = cuda_release_state,
    .release = cuda_release,
};
