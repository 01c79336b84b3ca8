/* dl.c — the one dynamic loader of libcuda, NVRTC and OpenCL (base.h): the libraries build
 * without any GPU toolkit and a missing driver is a message, not a link error. */
#define _GNU_SOURCE
#include "base.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static const char *const k_cuda_names[] = {"libcuda.so.1", NULL};
static const char *const k_nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                            "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
                                            "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda-13.0/lib/libnvrtc.so.13", NULL};
static const char *const k_opencl_names[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};

static const struct {
    const char *const *names;
    const char *libname;
    const char *missing; /* the message when none loads */
} k_libs[TB_DL_COUNT] = {
    {k_cuda_names, "libcuda.so.1", "no CUDA driver (cannot load libcuda.so.1)"},
    {k_nvrtc_names, "NVRTC",
     "cannot load NVRTC (libnvrtc.so.13/.12/.so, also tried /usr/local/cuda/lib64): install the CUDA toolkit's NVRTC"},
    {k_opencl_names, "libOpenCL.so.1",
     "cannot load the OpenCL ICD loader libOpenCL.so.1 (install ocl-icd-libopencl1 and a driver, e.g. pocl-opencl-icd)"},
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_tried[TB_DL_COUNT];
static void *g_handle[TB_DL_COUNT];

const char *tb_dl_libname(tb_dl_lib lib) { return (unsigned)lib < TB_DL_COUNT ? k_libs[lib].libname : "?"; }

void *tb_dl_open(tb_dl_lib lib, const char *path, char *why, size_t whylen) {
    if ((unsigned)lib >= TB_DL_COUNT) {
        if (why && whylen) snprintf(why, whylen, "unknown library %d", (int)lib);
        return NULL;
    }
    if (path) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h && why && whylen) snprintf(why, whylen, "cannot load %s: %s", path, dlerror());
        return h;
    }
    pthread_mutex_lock(&g_mu);
    if (!g_tried[lib]) {
        g_tried[lib] = true;
        for (const char *const *n = k_libs[lib].names; *n && !g_handle[lib]; n++) g_handle[lib] = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    }
    void *h = g_handle[lib];
    pthread_mutex_unlock(&g_mu);
    if (!h && why && whylen) snprintf(why, whylen, "%s", k_libs[lib].missing);
    return h;
}

int tb_dl_syms(void *h, tb_dl_lib lib, const tb_dl_sym *syms, int n, char *why, size_t whylen) {
    for (int i = 0; i < n; i++) {
        void *p = h ? dlsym(h, syms[i].name) : NULL;
        if (!p && h && syms[i].alt) p = dlsym(h, syms[i].alt);
        *syms[i].slot = p;
        if (!p && !syms[i].optional) {
            if (why && whylen) snprintf(why, whylen, "%s has no %s", tb_dl_libname(lib), syms[i].name);
            return -1;
        }
    }
    return 0;
}
