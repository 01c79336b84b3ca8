/* opencl.c — the "opencl" backend: generated OpenCL C (src/codegen/simt.c) built with
 * clBuildProgram and run through the ICD loader, opened by src/base's loader (libOpenCL.so.1) so that
 * the library builds and runs without OpenCL headers or libraries.
 *
 *   TILE_OPENCL_DEVICE   "P:D" (platform and device indices) or a substring of the device
 *                        name; default: the first device of the first platform that has one.
 *   TILE_OPENCL_OPTIONS  extra clBuildProgram options (e.g. -cl-opt-disable)
 *   TILE_OPENCL_NO_FP64  1: generate code as for a device without cl_khr_fp64 (tests)
 * Program binaries are cached on disk (simt_rt.h: $TILE_CACHE_DIR, ...), keyed by the
 * source, the device name, the driver version and the build options. tile_run's device
 * buffers come from a small per-kernel cache (reused while large enough); tile_launch runs on
 * caller-owned cl_mem buffers (opencl:0 in tile_buffer_alloc, from the caching pool).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "simt_rt.h"

/* ---------- the few OpenCL types and constants we need ---------- */
typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef cl_ulong cl_bitfield;
typedef struct _cl_platform_id *cl_platform_id;
typedef struct _cl_device_id *cl_device_id;
typedef struct _cl_context *cl_context;
typedef struct _cl_command_queue *cl_command_queue;
typedef struct _cl_mem *cl_mem;
typedef struct _cl_program *cl_program;
typedef struct _cl_kernel *cl_kernel;
typedef struct _cl_event *cl_event;

#define CL_SUCCESS 0
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_PLATFORM_VERSION 0x0901
#define CL_PLATFORM_NAME 0x0902
#define CL_DEVICE_MAX_WORK_GROUP_SIZE 0x1004
#define CL_DEVICE_SINGLE_FP_CONFIG 0x101B
#define CL_DEVICE_LOCAL_MEM_SIZE 0x1023
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_DEVICE_EXTENSIONS 0x1030
#define CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (1 << 7)
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_KERNEL_WORK_GROUP_SIZE 0x11B0
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_EVENT_COMMAND_EXECUTION_STATUS 0x11D3
#define CL_PROFILING_COMMAND_END 0x1283

static struct {
    cl_int (*GetPlatformIDs)(cl_uint, cl_platform_id *, cl_uint *);
    cl_int (*GetPlatformInfo)(cl_platform_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetDeviceIDs)(cl_platform_id, cl_bitfield, cl_uint, cl_device_id *, cl_uint *);
    cl_int (*GetDeviceInfo)(cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_context (*CreateContext)(const intptr_t *, cl_uint, const cl_device_id *, void *, void *, cl_int *);
    cl_command_queue (*CreateCommandQueue)(cl_context, cl_device_id, cl_bitfield, cl_int *);
    cl_program (*CreateProgramWithSource)(cl_context, cl_uint, const char **, const size_t *, cl_int *);
    cl_program (*CreateProgramWithBinary)(cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **, cl_int *, cl_int *);
    cl_int (*BuildProgram)(cl_program, cl_uint, const cl_device_id *, const char *, void *, void *);
    cl_int (*GetProgramBuildInfo)(cl_program, cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_int (*GetProgramInfo)(cl_program, cl_uint, size_t, void *, size_t *);
    cl_kernel (*CreateKernel)(cl_program, const char *, cl_int *);
    cl_int (*GetKernelWorkGroupInfo)(cl_kernel, cl_device_id, cl_uint, size_t, void *, size_t *);
    cl_int (*SetKernelArg)(cl_kernel, cl_uint, size_t, const void *);
    cl_int (*EnqueueNDRangeKernel)(cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *, cl_uint, const cl_event *, cl_event *);
    cl_mem (*CreateBuffer)(cl_context, cl_bitfield, size_t, void *, cl_int *);
    cl_int (*EnqueueWriteBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, const void *, cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueReadBuffer)(cl_command_queue, cl_mem, cl_uint, size_t, size_t, void *, cl_uint, const cl_event *, cl_event *);
    cl_int (*Finish)(cl_command_queue);
    cl_int (*ReleaseMemObject)(cl_mem);
    cl_int (*ReleaseKernel)(cl_kernel);
    cl_int (*ReleaseProgram)(cl_program);
    /* device memory, queues and events (tile_device_ops) */
    cl_int (*EnqueueCopyBuffer)(cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *, cl_event *);
    cl_int (*ReleaseCommandQueue)(cl_command_queue);
    cl_int (*EnqueueMarkerWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (*EnqueueBarrierWithWaitList)(cl_command_queue, cl_uint, const cl_event *, cl_event *);
    cl_int (*WaitForEvents)(cl_uint, const cl_event *);
    cl_int (*GetEventInfo)(cl_event, cl_uint, size_t, void *, size_t *);
    cl_int (*GetEventProfilingInfo)(cl_event, cl_uint, size_t, void *, size_t *);
    cl_int (*ReleaseEvent)(cl_event);
} cl;

/* ---------- the device (opened once per process) ---------- */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_tried, g_ok;
static char g_why[512];
static cl_device_id g_dev;
static cl_context g_ctx;
static cl_command_queue g_q;
static char g_name[256], g_driver[128], g_platform[512], g_version[128];
static bool g_fp64, g_atom64, g_crdiv;
static size_t g_maxwg;
static cl_ulong g_localmem;

static const char *cl_errname(cl_int e) {
    switch (e) {
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -33: return "CL_INVALID_DEVICE";
    case -38: return "CL_INVALID_MEM_OBJECT";
    case -42: return "CL_INVALID_BINARY";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -46: return "CL_INVALID_KERNEL_NAME";
    case -48: return "CL_INVALID_KERNEL";
    case -51: return "CL_INVALID_ARG_SIZE";
    case -52: return "CL_INVALID_KERNEL_ARGS";
    case -54: return "CL_INVALID_WORK_GROUP_SIZE";
    case -55: return "CL_INVALID_WORK_ITEM_SIZE";
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "error";
    }
}

static bool load_api(void) {
    void *h = tb_dl_open(TB_DL_OPENCL, NULL, g_why, sizeof g_why);
    if (!h) return false;
#define LOAD(field, sym)                                                                      \
    do {                                                                                      \
        tb_dl_sym s_ = {(void **)&cl.field, sym, NULL, false};                                \
        if (tb_dl_syms(h, TB_DL_OPENCL, &s_, 1, g_why, sizeof g_why)) return false;           \
    } while (0)
    LOAD(GetPlatformIDs, "clGetPlatformIDs");
    LOAD(GetPlatformInfo, "clGetPlatformInfo");
    LOAD(GetDeviceIDs, "clGetDeviceIDs");
    LOAD(GetDeviceInfo, "clGetDeviceInfo");
    LOAD(CreateContext, "clCreateContext");
    LOAD(CreateCommandQueue, "clCreateCommandQueue");
    LOAD(CreateProgramWithSource, "clCreateProgramWithSource");
    LOAD(CreateProgramWithBinary, "clCreateProgramWithBinary");
    LOAD(BuildProgram, "clBuildProgram");
    LOAD(GetProgramBuildInfo, "clGetProgramBuildInfo");
    LOAD(GetProgramInfo, "clGetProgramInfo");
    LOAD(CreateKernel, "clCreateKernel");
    LOAD(GetKernelWorkGroupInfo, "clGetKernelWorkGroupInfo");
    LOAD(SetKernelArg, "clSetKernelArg");
    LOAD(EnqueueNDRangeKernel, "clEnqueueNDRangeKernel");
    LOAD(CreateBuffer, "clCreateBuffer");
    LOAD(EnqueueWriteBuffer, "clEnqueueWriteBuffer");
    LOAD(EnqueueReadBuffer, "clEnqueueReadBuffer");
    LOAD(Finish, "clFinish");
    LOAD(ReleaseMemObject, "clReleaseMemObject");
    LOAD(ReleaseKernel, "clReleaseKernel");
    LOAD(ReleaseProgram, "clReleaseProgram");
    LOAD(EnqueueCopyBuffer, "clEnqueueCopyBuffer");
    LOAD(ReleaseCommandQueue, "clReleaseCommandQueue");
    LOAD(WaitForEvents, "clWaitForEvents");
    LOAD(GetEventInfo, "clGetEventInfo");
    LOAD(GetEventProfilingInfo, "clGetEventProfilingInfo");
    LOAD(ReleaseEvent, "clReleaseEvent");
#undef LOAD
    /* OpenCL 1.2: events on queues (tile_event); without them, events are unavailable */
    tb_dl_sym opt[] = {{(void **)&cl.EnqueueMarkerWithWaitList, "clEnqueueMarkerWithWaitList", NULL, true},
                       {(void **)&cl.EnqueueBarrierWithWaitList, "clEnqueueBarrierWithWaitList", NULL, true}};
    tb_dl_syms(h, TB_DL_OPENCL, opt, 2, g_why, sizeof g_why);
    return true;
}

static void dev_str(cl_device_id d, cl_uint what, char *buf, size_t n) {
    buf[0] = 0;
    if (cl.GetDeviceInfo(d, what, n, buf, NULL) != CL_SUCCESS) buf[0] = 0;
    buf[n - 1] = 0;
}

static bool open_device(void) {
    if (!load_api()) return false;
    cl_uint np = 0;
    cl_int e = cl.GetPlatformIDs(0, NULL, &np);
    if (e != CL_SUCCESS || np == 0) {
        snprintf(g_why, sizeof g_why, "no OpenCL platform (clGetPlatformIDs: %s); install a driver such as pocl-opencl-icd",
                 e != CL_SUCCESS ? cl_errname(e) : "0 platforms");
        return false;
    }
    cl_platform_id plats[16];
    if (np > 16) np = 16;
    cl.GetPlatformIDs(np, plats, NULL);
    const char *sel = tb_knob_str(TB_K_TILE_OPENCL_DEVICE);
    int want_p = -1, want_d = -1;
    if (sel && *sel) {
        char *end;
        long p = strtol(sel, &end, 10);
        if (end != sel && *end == ':') {
            char *end2;
            long d = strtol(end + 1, &end2, 10);
            if (end2 != end + 1 && !*end2) { want_p = (int)p; want_d = (int)d; }
        }
    }
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (cl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id devs[32];
        if (nd > 32) nd = 32;
        cl.GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            char name[256];
            dev_str(devs[d], CL_DEVICE_NAME, name, sizeof name);
            bool take;
            if (want_p >= 0) take = (int)p == want_p && (int)d == want_d;
            else if (sel && *sel) take = strstr(name, sel) != NULL;
            else take = true;
            if (!take) continue;
            g_dev = devs[d];
            snprintf(g_name, sizeof g_name, "%s", name);
            char pn[200] = "", pv[100] = "";
            cl.GetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pn, pn, NULL);
            cl.GetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof pv, pv, NULL);
            pn[sizeof pn - 1] = pv[sizeof pv - 1] = 0;
            snprintf(g_platform, sizeof g_platform, "%s (%s)", pn, pv);
            goto found;
        }
    }
    if (sel && *sel) snprintf(g_why, sizeof g_why, "no OpenCL device matches TILE_OPENCL_DEVICE=%s (give P:D indices or a part of the device name)", sel);
    else snprintf(g_why, sizeof g_why, "the OpenCL platforms have no device");
    return false;
found:
    dev_str(g_dev, CL_DRIVER_VERSION, g_driver, sizeof g_driver);
    dev_str(g_dev, CL_DEVICE_VERSION, g_version, sizeof g_version);
    {
        size_t n = 0;
        cl.GetDeviceInfo(g_dev, CL_DEVICE_EXTENSIONS, 0, NULL, &n);
        char *ext = tile_xcalloc(n + 1, 1);
        cl.GetDeviceInfo(g_dev, CL_DEVICE_EXTENSIONS, n, ext, NULL);
        g_fp64 = strstr(ext, "cl_khr_fp64") != NULL;
        g_atom64 = strstr(ext, "cl_khr_int64_base_atomics") != NULL;
        free(ext);
    }
    cl_ulong fp = 0;
    cl.GetDeviceInfo(g_dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fp, &fp, NULL);
    g_crdiv = (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    cl.GetDeviceInfo(g_dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof g_maxwg, &g_maxwg, NULL);
    cl.GetDeviceInfo(g_dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof g_localmem, &g_localmem, NULL);
    g_ctx = cl.CreateContext(NULL, 1, &g_dev, NULL, NULL, &e);
    if (!g_ctx || e != CL_SUCCESS) {
        snprintf(g_why, sizeof g_why, "clCreateContext failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return false;
    }
    g_q = cl.CreateCommandQueue(g_ctx, g_dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!g_q || e != CL_SUCCESS) {
        snprintf(g_why, sizeof g_why, "clCreateCommandQueue failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return false;
    }
    return true;
}

static bool ensure_device(void) {
    pthread_mutex_lock(&g_lock);
    if (!g_tried) {
        g_tried = true;
        g_ok = open_device();
    }
    pthread_mutex_unlock(&g_lock);
    return g_ok;
}

static bool ocl_available(tile_strbuf *why) {
    if (ensure_device()) return true;
    if (why) tile_sb_puts(why, g_why);
    return false;
}

static void ocl_device_name(tile_strbuf *out) {
    if (!ensure_device()) return;
    tile_sb_printf(out, "%s, %s, driver %s%s", g_name, g_platform, g_driver, g_fp64 ? "" : " (no fp64)");
}

/* ---------- compile ---------- */
typedef struct dbuf {
    cl_mem mem;
    size_t cap;
} dbuf;

typedef struct ocl_exe {
    simt_program P;
    cl_program prog;
    cl_kernel *kernels;
    dbuf *bufs;      /* one per P.bufs */
    dbuf scal, err;
} ocl_exe;

static void ocl_release(void *p) {
    ocl_exe *x = p;
    if (!x) return;
    for (int i = 0; i < x->P.nlaunches; i++)
        if (x->kernels && x->kernels[i]) cl.ReleaseKernel(x->kernels[i]);
    for (int i = 0; i < x->P.nbufs; i++)
        if (x->bufs && x->bufs[i].mem) cl.ReleaseMemObject(x->bufs[i].mem);
    if (x->scal.mem) cl.ReleaseMemObject(x->scal.mem);
    if (x->err.mem) cl.ReleaseMemObject(x->err.mem);
    if (x->prog) cl.ReleaseProgram(x->prog);
    free(x->kernels);
    free(x->bufs);
    simt_program_free(&x->P);
    free(x);
}

static void options_for_device(simt_options *o, const ir_func *f) {
    simt_options_default(o, SIMT_OPENCL, f->opts);
    /* opencl_no_fp64=1 generates code as for a device without cl_khr_fp64 (tests) */
    o->fp64 = g_fp64 && !tb_opt_bool(f->opts, TB_OPT_opencl_no_fp64);
    o->atom64 = g_atom64;
}

static int ocl_emit(const ir_func *f, tile_strbuf *out, tile_strbuf *err) {
    simt_options o;
    simt_options_default(&o, SIMT_OPENCL, f->opts);
    if (ensure_device()) options_for_device(&o, f); /* else: a generic OpenCL device with fp64 */
    simt_program P;
    if (simt_generate(f, &o, &P, err)) return 1;
    tile_sb_puts(out, P.source);
    simt_program_free(&P);
    return 0;
}

static void build_log(cl_program prog, tile_strbuf *err) {
    size_t n = 0;
    cl.GetProgramBuildInfo(prog, g_dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *log = tile_xcalloc(n + 1, 1);
    cl.GetProgramBuildInfo(prog, g_dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    tile_sb_printf(err, "%s", log);
    free(log);
}

static int ocl_compile(const ir_func *f, void **exe, tile_strbuf *err) {
    *exe = NULL;
    if (!ensure_device()) {
        tile_sb_printf(err, "OpenCL is not available: %s", g_why);
        return 1;
    }
    ocl_exe *x = tile_xcalloc(1, sizeof *x);
    simt_options o;
    options_for_device(&o, f);
    if (simt_generate(f, &o, &x->P, err)) {
        free(x);
        return 1;
    }
    for (int i = 0; i < x->P.nlaunches; i++) {
        const simt_launch *L = &x->P.launches[i];
        if ((size_t)L->threads > g_maxwg) {
            tile_diag dg = {TILE_DIAG_ERROR, L->loc, NULL};
            tile_strbuf m = {0};
            tile_sb_printf(&m, "the kernel has %d threads per block, but OpenCL device '%s' allows at most %zu work-items per work-group", L->threads, g_name, g_maxwg);
            dg.msg = m.data;
            tile_diag_format(&dg, err);
            tile_sb_free(&m);
            ocl_release(x);
            return 1;
        }
        if (L->smem > g_localmem) {
            tile_sb_printf(err, "error: the kernel needs %zu bytes of shared memory, but OpenCL device '%s' has %llu bytes of local memory\n", L->smem, g_name,
                           (unsigned long long)g_localmem);
            ocl_release(x);
            return 1;
        }
    }
    tile_strbuf opts = {0};
    tile_sb_puts(&opts, "-cl-std=CL1.2 -w");
    if (g_crdiv) tile_sb_puts(&opts, " -cl-fp32-correctly-rounded-divide-sqrt");
    const char *extra = tb_opt_str(f->opts, TB_OPT_opencl_options);
    if (extra) tile_sb_printf(&opts, " %s", extra);
    /* disk cache */
    tile_strbuf key = {0}, path = {0};
    tile_sb_printf(&key, "opencl\n%s\n%s\n%s\n%s\n%s\n", g_name, g_driver, g_platform, opts.data, x->P.source);
    bool cache = simt_cache_path("opencl", key.data, key.len, ".bin", &path);
    double t0 = tile_now();
    cl_int e = CL_SUCCESS;
    bool built = false;
    if (cache) {
        size_t n = 0;
        unsigned char *bin = simt_read_file(path.data, &n);
        if (bin) {
            const unsigned char *bins[1] = {bin};
            cl_int st = 0;
            x->prog = cl.CreateProgramWithBinary(g_ctx, 1, &g_dev, &n, bins, &st, &e);
            if (x->prog && e == CL_SUCCESS && st == CL_SUCCESS && cl.BuildProgram(x->prog, 1, &g_dev, opts.data, NULL, NULL) == CL_SUCCESS) {
                built = true;
                tile_log(TILE_LOG_DEBUG, "opencl: program binary from the cache %s", path.data);
            } else if (x->prog) {
                cl.ReleaseProgram(x->prog);
                x->prog = NULL;
            }
            free(bin);
        }
    }
    if (!built) {
        const char *src = x->P.source;
        size_t len = strlen(src);
        x->prog = cl.CreateProgramWithSource(g_ctx, 1, &src, &len, &e);
        if (!x->prog || e != CL_SUCCESS) {
            tile_sb_printf(err, "error: clCreateProgramWithSource failed: %s (%d)\n", cl_errname(e), e);
            goto fail;
        }
        e = cl.BuildProgram(x->prog, 1, &g_dev, opts.data, NULL, NULL);
        if (e != CL_SUCCESS) {
            tile_sb_printf(err, "error: internal: the generated OpenCL C of '%s' does not build on '%s' (clBuildProgram: %s); build log:\n", f->name, g_name,
                           cl_errname(e));
            build_log(x->prog, err);
            goto fail;
        }
        tile_log(TILE_LOG_INFO, "opencl: built '%s' on %s in %.1f ms", f->name, g_name, (tile_now() - t0) * 1e3);
        if (cache) {
            size_t n = 0;
            if (cl.GetProgramInfo(x->prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL) == CL_SUCCESS && n > 0) {
                unsigned char *bin = malloc(n);
                unsigned char *bins[1] = {bin};
                if (bin && cl.GetProgramInfo(x->prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) simt_write_file(path.data, bin, n);
                free(bin);
            }
        }
    }
    x->kernels = tile_xcalloc((size_t)x->P.nlaunches + 1, sizeof(cl_kernel));
    for (int i = 0; i < x->P.nlaunches; i++) {
        x->kernels[i] = cl.CreateKernel(x->prog, x->P.launches[i].name, &e);
        if (!x->kernels[i] || e != CL_SUCCESS) {
            tile_sb_printf(err, "error: clCreateKernel(%s) failed: %s (%d)\n", x->P.launches[i].name, cl_errname(e), e);
            goto fail;
        }
        size_t wg = 0;
        if (cl.GetKernelWorkGroupInfo(x->kernels[i], g_dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) == CL_SUCCESS && wg &&
            (size_t)x->P.launches[i].threads > wg) {
            tile_sb_printf(err, "error: kernel %s needs %d work-items per work-group, but '%s' can run at most %zu for it\n", x->P.launches[i].name,
                           x->P.launches[i].threads, g_name, wg);
            goto fail;
        }
    }
    x->bufs = tile_xcalloc((size_t)x->P.nbufs + 1, sizeof(dbuf));
    tile_sb_free(&key);
    tile_sb_free(&path);
    tile_sb_free(&opts);
    *exe = x;
    return 0;
fail:
    tile_sb_free(&key);
    tile_sb_free(&path);
    tile_sb_free(&opts);
    ocl_release(x);
    return 1;
}

/* ---------- run ---------- */
static bool dbuf_reserve(dbuf *b, size_t n, tile_strbuf *err) {
    if (n < 16) n = 16;
    if (b->mem && b->cap >= n) return true;
    if (b->mem) cl.ReleaseMemObject(b->mem);
    b->mem = NULL;
    b->cap = 0;
    cl_int e;
    size_t cap = (n + 255) & ~(size_t)255;
    b->mem = cl.CreateBuffer(g_ctx, CL_MEM_READ_WRITE, cap, NULL, &e);
    if (!b->mem || e != CL_SUCCESS) {
        b->mem = NULL;
        tile_sb_printf(err, "clCreateBuffer of %zu bytes failed on '%s': %s (%d)", cap, g_name, cl_errname(e), e);
        return false;
    }
    b->cap = cap;
    return true;
}

static int ocl_run(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars,
                   const tile_run_options *opt, tile_strbuf *err) {
    ocl_exe *x = exe;
    simt_program *P = &x->P;
    size_t *bytes = tile_xcalloc((size_t)P->nbufs + 1, sizeof(size_t));
    int64_t *tab = tile_xcalloc((size_t)P->nscalars + 1, sizeof(int64_t));
    int64_t errrec[8] = {0};
    int rc = 1;
    cl_int e;
    for (int i = 0; i < P->nbufs; i++) {
        if (!simt_buf_bytes(P, i, f, sizes, params, rets, &bytes[i], err)) goto done;
        /* +8: the CAS of sub-word stores works on whole aligned words */
        if (!dbuf_reserve(&x->bufs[i], bytes[i] + 8, err)) goto done;
        const simt_buf *b = &P->bufs[i];
        void *host = b->param >= 0 ? params[b->param].data : b->ret >= 0 ? rets[b->ret].data : NULL;
        if (host && bytes[i]) {
            e = cl.EnqueueWriteBuffer(g_q, x->bufs[i].mem, 0, 0, bytes[i], host, 0, NULL, NULL);
            if (e != CL_SUCCESS) {
                tile_sb_printf(err, "clEnqueueWriteBuffer of '%s' failed: %s (%d)", b->buf->name, cl_errname(e), e);
                goto done;
            }
        }
    }
    simt_pack_scalars(f, sizes, scalars, tab);
    if (!dbuf_reserve(&x->scal, sizeof(int64_t) * (size_t)(P->nscalars + 1), err) || !dbuf_reserve(&x->err, sizeof errrec, err)) goto done;
    if ((e = cl.EnqueueWriteBuffer(g_q, x->scal.mem, 0, 0, sizeof(int64_t) * (size_t)(P->nscalars + 1), tab, 0, NULL, NULL)) != CL_SUCCESS ||
        (e = cl.EnqueueWriteBuffer(g_q, x->err.mem, 0, 0, sizeof errrec, errrec, 0, NULL, NULL)) != CL_SUCCESS) {
        tile_sb_printf(err, "clEnqueueWriteBuffer failed: %s (%d)", cl_errname(e), e);
        goto done;
    }
    for (int l = 0; l < P->nlaunches; l++) {
        const simt_launch *L = &P->launches[l];
        int64_t blocks;
        if (!simt_blocks(L, f, sizes, &blocks, err)) goto done;
        if (blocks == 0) continue;
        cl_kernel k = x->kernels[l];
        cl_uint a = 0;
        for (int i = 0; i < P->nbufs; i++) cl.SetKernelArg(k, a++, sizeof(cl_mem), &x->bufs[i].mem);
        cl.SetKernelArg(k, a++, sizeof(cl_mem), &x->scal.mem);
        cl.SetKernelArg(k, a++, sizeof(cl_mem), &x->err.mem);
        e = cl.SetKernelArg(k, a++, L->smem, NULL);
        size_t local = (size_t)L->threads, global = (size_t)blocks * local;
        if (e == CL_SUCCESS) e = cl.EnqueueNDRangeKernel(g_q, k, 1, NULL, &global, &local, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            tile_sb_printf(err, "launching %s of '%s' (%lld work-groups of %d work-items, %zu bytes of local memory) failed: %s (%d)", L->name, f->name,
                           (long long)blocks, L->threads, L->smem, cl_errname(e), e);
            goto done;
        }
    }
    e = cl.EnqueueReadBuffer(g_q, x->err.mem, 1, 0, sizeof errrec, errrec, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "running '%s' on '%s' failed (clEnqueueReadBuffer: %s (%d))", f->name, g_name, cl_errname(e), e);
        goto done;
    }
    if (errrec[0]) {
        simt_format_error(P, errrec, err);
        goto done;
    }
    for (int i = 0; i < P->nbufs; i++) {
        const simt_buf *b = &P->bufs[i];
        void *host = b->param >= 0 ? params[b->param].data : b->ret >= 0 ? rets[b->ret].data : NULL;
        if (!host || !bytes[i]) continue;
        e = cl.EnqueueReadBuffer(g_q, x->bufs[i].mem, 1, 0, bytes[i], host, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            tile_sb_printf(err, "clEnqueueReadBuffer of '%s' failed: %s (%d)", b->buf->name, cl_errname(e), e);
            goto done;
        }
    }
    rc = 0;
done:
    if (rc) cl.Finish(g_q);
    free(bytes);
    free(tab);
    return rc;
}

/* ---------- the opencl device: memory, queues, events (backend.h, tile_device_ops) ----------
 * One device per process (the one TILE_OPENCL_DEVICE picks), opencl:0. Buffers are cl_mem
 * handles (tile_launch_arg.data); a stream is a command queue (a wrapped NULL is tile's own
 * queue); an event is a marker enqueued on a queue, timed through the queue's profiling. */
typedef struct ocl_event {
    cl_event ev; /* the last marker recorded, or NULL */
} ocl_event;

static cl_command_queue queue_of(void *stream) { return stream ? (cl_command_queue)stream : g_q; }

static int ocl_dev_count(void) { return ensure_device() ? 1 : 0; }
static void ocl_dev_name(int index, tile_strbuf *out) {
    (void)index;
    ocl_device_name(out);
}

static int ocl_raw_alloc(int index, size_t bytes, void **ptr, tile_strbuf *err) {
    (void)index;
    cl_int e;
    cl_mem m = cl.CreateBuffer(g_ctx, CL_MEM_READ_WRITE, bytes ? bytes : 16, NULL, &e);
    if (!m || e != CL_SUCCESS) {
        tile_sb_printf(err, "clCreateBuffer of %zu bytes failed on '%s': %s (%d)", bytes, g_name, cl_errname(e), e);
        return 1;
    }
    *ptr = m;
    return 0;
}

static void ocl_raw_free(int index, void *ptr) {
    (void)index;
    if (ptr) cl.ReleaseMemObject((cl_mem)ptr);
}

static int ocl_copy(int index, int kind, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, void *stream, tile_strbuf *err) {
    (void)index;
    cl_command_queue q = queue_of(stream);
    cl_int e;
    /* host memory is the caller's again on return: the host sides are blocking */
    if (kind == 0) e = cl.EnqueueWriteBuffer(q, (cl_mem)dst, 1, dst_off, n, (const char *)src + src_off, 0, NULL, NULL);
    else if (kind == 1) e = cl.EnqueueReadBuffer(q, (cl_mem)src, 1, src_off, n, (char *)dst + dst_off, 0, NULL, NULL);
    else e = cl.EnqueueCopyBuffer(q, (cl_mem)src, (cl_mem)dst, src_off, dst_off, n, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "%s of %zu bytes failed on '%s': %s (%d)", kind == 0 ? "clEnqueueWriteBuffer" : kind == 1 ? "clEnqueueReadBuffer" : "clEnqueueCopyBuffer",
                       n, g_name, cl_errname(e), e);
        return 1;
    }
    return 0;
}

static int ocl_stream_create(int index, void **stream, tile_strbuf *err) {
    (void)index;
    cl_int e;
    cl_command_queue q = cl.CreateCommandQueue(g_ctx, g_dev, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!q || e != CL_SUCCESS) {
        tile_sb_printf(err, "clCreateCommandQueue failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return 1;
    }
    *stream = q;
    return 0;
}

static void ocl_stream_destroy(int index, void *stream) {
    (void)index;
    if (stream && stream != g_q) cl.ReleaseCommandQueue((cl_command_queue)stream);
}

static int ocl_stream_sync(int index, void *stream, tile_strbuf *err) {
    (void)index;
    cl_int e = cl.Finish(queue_of(stream));
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "clFinish failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return 1;
    }
    return 0;
}

static int ocl_event_create(int index, void **event, tile_strbuf *err) {
    (void)index;
    if (!cl.EnqueueMarkerWithWaitList || !cl.EnqueueBarrierWithWaitList) {
        tile_sb_printf(err, "events on OpenCL need OpenCL 1.2 (clEnqueueMarkerWithWaitList); the ICD loader has none");
        return 1;
    }
    *event = tile_xcalloc(1, sizeof(ocl_event));
    return 0;
}

static void ocl_event_destroy(int index, void *event) {
    (void)index;
    ocl_event *x = event;
    if (!x) return;
    if (x->ev) cl.ReleaseEvent(x->ev);
    free(x);
}

static int ocl_event_record(int index, void *event, void *stream, tile_strbuf *err) {
    (void)index;
    ocl_event *x = event;
    cl_event ev = NULL;
    cl_int e = cl.EnqueueMarkerWithWaitList(queue_of(stream), 0, NULL, &ev);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "clEnqueueMarkerWithWaitList failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return 1;
    }
    if (x->ev) cl.ReleaseEvent(x->ev);
    x->ev = ev;
    return 0;
}

static int ocl_event_wait(int index, void *stream, void *event, tile_strbuf *err) {
    (void)index;
    ocl_event *x = event;
    if (!x->ev) return 0; /* never recorded: nothing to wait for */
    cl_int e = cl.EnqueueBarrierWithWaitList(queue_of(stream), 1, &x->ev, NULL);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "clEnqueueBarrierWithWaitList failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return 1;
    }
    return 0;
}

static int ocl_event_sync(int index, void *event, tile_strbuf *err) {
    (void)index;
    ocl_event *x = event;
    if (!x->ev) return 0;
    cl_int e = cl.WaitForEvents(1, &x->ev);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "clWaitForEvents failed on '%s': %s (%d)", g_name, cl_errname(e), e);
        return 1;
    }
    return 0;
}

static int ocl_event_query(int index, void *event) {
    (void)index;
    ocl_event *x = event;
    if (!x->ev) return 1;
    cl_int st = 0;
    if (cl.GetEventInfo(x->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) != CL_SUCCESS) return -1;
    return st < 0 ? -1 : st == 0 /* CL_COMPLETE */ ? 1 : 0;
}

static int ocl_event_elapsed(int index, void *start, void *end, double *seconds, tile_strbuf *err) {
    (void)index;
    ocl_event *a = start, *b = end;
    if (!a->ev || !b->ev) {
        tile_sb_puts(err, "tile_event_elapsed: an event was never recorded");
        return 1;
    }
    cl_ulong t0 = 0, t1 = 0;
    cl_int e = cl.WaitForEvents(1, &b->ev);
    if (e == CL_SUCCESS) e = cl.GetEventProfilingInfo(a->ev, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
    if (e == CL_SUCCESS) e = cl.GetEventProfilingInfo(b->ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "timing OpenCL events failed on '%s' (clGetEventProfilingInfo: %s (%d)); wrapped queues need CL_QUEUE_PROFILING_ENABLE",
                       g_name, cl_errname(e), e);
        return 1;
    }
    *seconds = (double)(t1 - t0) * 1e-9;
    return 0;
}

static const tile_device_ops ocl_device_ops = {
    .count = ocl_dev_count,
    .name = ocl_dev_name,
    .raw_alloc = ocl_raw_alloc,
    .raw_free = ocl_raw_free,
    .copy = ocl_copy,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .stream_sync = ocl_stream_sync,
    .event_create = ocl_event_create,
    .event_destroy = ocl_event_destroy,
    .event_record = ocl_event_record,
    .event_wait = ocl_event_wait,
    .event_sync = ocl_event_sync,
    .event_query = ocl_event_query,
    .event_elapsed = ocl_event_elapsed,
};

/* ---------- launch on caller-owned buffers (tile_launch) ----------
 * Per specialisation: its scalar table, error record and temporaries; the last marker of
 * its launches, for a launch on another queue to wait on (the buffers are shared). */
typedef struct ocl_state {
    dbuf scal, errrec, *temps;
    int64_t *tab;
    int ntab;
    bool launched;
    cl_command_queue last_q;
    cl_event last;
} ocl_state;

static int ocl_launch(void *exe, const ir_func *f, const int64_t *sizes, const tile_launch_arg *args, const double *scalars, int device_index,
                      void *stream, void **statep, tile_strbuf *err) {
    ocl_exe *x = exe;
    simt_program *P = &x->P;
    if (device_index != 0) {
        tile_sb_printf(err, "device opencl:%d is not available here: the opencl backend drives one device per process, opencl:0", device_index);
        return 1;
    }
    cl_command_queue q = queue_of(stream);
    ocl_state *s = *statep;
    int ntab = P->nscalars + 1;
    int64_t tabstack[64], *tab = ntab <= 64 ? tabstack : tile_xcalloc((size_t)ntab, sizeof(int64_t));
    memset(tab, 0, sizeof(int64_t) * (size_t)ntab);
    simt_pack_scalars(f, sizes, scalars, tab);
    int rc = 1;
    cl_int e;
    if (!s) {
        s = tile_xcalloc(1, sizeof *s);
        *statep = s;
        s->ntab = ntab;
        s->tab = tile_xcalloc((size_t)ntab, sizeof(int64_t));
        s->temps = tile_xcalloc((size_t)P->nbufs + 1, sizeof(dbuf));
        int64_t zero[8] = {0};
        if (!dbuf_reserve(&s->scal, sizeof(int64_t) * (size_t)ntab, err) || !dbuf_reserve(&s->errrec, sizeof zero, err)) goto done;
        if ((e = cl.EnqueueWriteBuffer(q, s->errrec.mem, 1, 0, sizeof zero, zero, 0, NULL, NULL)) != CL_SUCCESS) {
            tile_sb_printf(err, "clEnqueueWriteBuffer (error record) failed: %s (%d)", cl_errname(e), e);
            goto done;
        }
        for (int i = 0; i < P->nbufs; i++) {
            const simt_buf *b = &P->bufs[i];
            if (b->param >= 0 || b->ret >= 0) continue;
            size_t bytes;
            if (!simt_buf_bytes(P, i, f, sizes, NULL, NULL, &bytes, err) || !dbuf_reserve(&s->temps[i], bytes + 8, err)) goto done;
        }
    }
    /* another queue's launch of this specialisation may still use its buffers */
    if (s->launched && s->last && s->last_q != q && cl.EnqueueBarrierWithWaitList &&
        (e = cl.EnqueueBarrierWithWaitList(q, 1, &s->last, NULL)) != CL_SUCCESS) {
        tile_sb_printf(err, "clEnqueueBarrierWithWaitList failed: %s (%d)", cl_errname(e), e);
        goto done;
    }
    if (!s->launched || memcmp(tab, s->tab, sizeof(int64_t) * (size_t)ntab)) {
        /* blocking: the table is host memory that the next launch may change */
        if ((e = cl.EnqueueWriteBuffer(q, s->scal.mem, 1, 0, sizeof(int64_t) * (size_t)ntab, tab, 0, NULL, NULL)) != CL_SUCCESS) {
            tile_sb_printf(err, "clEnqueueWriteBuffer (scalar table) failed: %s (%d)", cl_errname(e), e);
            goto done;
        }
        memcpy(s->tab, tab, sizeof(int64_t) * (size_t)ntab);
    }
    for (int l = 0; l < P->nlaunches; l++) {
        const simt_launch *L = &P->launches[l];
        int64_t blocks;
        if (!simt_blocks(L, f, sizes, &blocks, err)) goto done;
        if (blocks == 0) continue;
        cl_kernel k = x->kernels[l];
        cl_uint a = 0;
        for (int i = 0; i < P->nbufs; i++) {
            const simt_buf *b = &P->bufs[i];
            int ai = b->param >= 0 ? b->param : b->ret >= 0 ? f->nparams + b->ret : -1;
            cl_mem m = ai >= 0 ? (cl_mem)args[ai].data : s->temps[i].mem;
            cl.SetKernelArg(k, a++, sizeof(cl_mem), &m);
        }
        cl.SetKernelArg(k, a++, sizeof(cl_mem), &s->scal.mem);
        cl.SetKernelArg(k, a++, sizeof(cl_mem), &s->errrec.mem);
        e = cl.SetKernelArg(k, a++, L->smem, NULL);
        size_t local = (size_t)L->threads, global = (size_t)blocks * local;
        if (e == CL_SUCCESS) e = cl.EnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            tile_sb_printf(err, "launching %s of '%s' (%lld work-groups of %d work-items, %zu bytes of local memory) failed: %s (%d)", L->name, f->name,
                           (long long)blocks, L->threads, L->smem, cl_errname(e), e);
            goto done;
        }
    }
    if (cl.EnqueueMarkerWithWaitList) {
        cl_event ev = NULL;
        if (cl.EnqueueMarkerWithWaitList(q, 0, NULL, &ev) == CL_SUCCESS) {
            if (s->last) cl.ReleaseEvent(s->last);
            s->last = ev;
        }
    } else {
        cl.Finish(q); /* no markers: the next launch on any queue finds the buffers free */
    }
    s->last_q = q;
    s->launched = true;
    rc = 0;
done:
    if (tab != tabstack) free(tab);
    return rc;
}

static int ocl_check_state(void *exe, const ir_func *f, void *state, tile_strbuf *err) {
    (void)f;
    ocl_exe *x = exe;
    ocl_state *s = state;
    if (!s || !s->launched) return 0;
    int64_t rec[8] = {0};
    cl_int e = cl.EnqueueReadBuffer(g_q, s->errrec.mem, 1, 0, sizeof rec, rec, s->last ? 1 : 0, s->last ? &s->last : NULL, NULL);
    if (e != CL_SUCCESS) {
        tile_sb_printf(err, "reading the error record failed: %s (%d)", cl_errname(e), e);
        return 1;
    }
    if (!rec[0]) return 0;
    simt_format_error(&x->P, rec, err);
    int64_t zero[8] = {0};
    cl.EnqueueWriteBuffer(g_q, s->errrec.mem, 1, 0, sizeof zero, zero, 0, NULL, NULL);
    return 1;
}

static void ocl_release_state(void *exe, void *state) {
    ocl_exe *x = exe;
    ocl_state *s = state;
    if (!s) return;
    if (s->last) {
        cl.WaitForEvents(1, &s->last);
        cl.ReleaseEvent(s->last);
    }
    for (int i = 0; i < x->P.nbufs; i++)
        if (s->temps[i].mem) cl.ReleaseMemObject(s->temps[i].mem);
    if (s->scal.mem) cl.ReleaseMemObject(s->scal.mem);
    if (s->errrec.mem) cl.ReleaseMemObject(s->errrec.mem);
    free(s->temps);
    free(s->tab);
    free(s);
}

const tile_backend tile_backend_opencl = {
    .name = "opencl",
    .auto_rank = 0, /* PoCL on a CPU is slower than the cpu target: never picked by auto */
    .device_type = TILE_DEVICE_OPENCL,
    .device = &ocl_device_ops,
    .available = ocl_available,
    .device_name = ocl_device_name,
    .pipeline = "opencl",
    .emit = ocl_emit,
    .compile = ocl_compile,
    .run = ocl_run,
    .launch = ocl_launch,
    .check_state = ocl_check_state,
    .release_state = ocl_release_state,
    .release = ocl_release,
};
