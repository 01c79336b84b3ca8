/* cpuid.c — run-time CPU feature detection, cache sizes and CPU count for the CPU kernels.
 *
 * Features come from cpuid; the AVX and AVX-512 ones count only when xgetbv says the OS
 * saves the corresponding register state (XCR0 bits 1-2 for AVX, 5-7 for AVX-512, 17-18
 * for AMX tiles).
 * Cache sizes: /sys/devices/system/cpu/cpu0/cache first, then CPUID leaf 4 (Intel) or
 * 0x8000001D (AMD). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/cpu_gemm.h"
#include "kernels/cpu_gemm_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define TK_X86 1
#else
#define TK_X86 0
#endif

#if TK_X86
static void cpuid2(unsigned leaf, unsigned sub, unsigned r[4]) {
    r[0] = r[1] = r[2] = r[3] = 0;
    if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) r[0] = r[1] = r[2] = r[3] = 0;
}
static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}
#endif

static unsigned detect_features(void) {
    unsigned f = 0;
#if TK_X86
    unsigned r[4];
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 1) return 0;
    cpuid2(1, 0, r);
    unsigned ecx1 = r[2], edx1 = r[3];
    if (edx1 & (1u << 26)) f |= TK_CPU_SSE2;
    int osxsave = (ecx1 >> 27) & 1;
    unsigned long long xcr0 = osxsave ? xgetbv0() : 0;
    int os_avx = (xcr0 & 0x6) == 0x6;
    int os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;
    if (!os_avx) return f;
    if (ecx1 & (1u << 28)) f |= TK_CPU_AVX;
    if (ecx1 & (1u << 12)) f |= TK_CPU_FMA;
    if (ecx1 & (1u << 29)) f |= TK_CPU_F16C;
    if (max_leaf >= 7) {
        cpuid2(7, 0, r);
        unsigned ebx7 = r[1], ecx7 = r[2], edx7 = r[3], max_sub = r[0];
        if (ebx7 & (1u << 5)) f |= TK_CPU_AVX2;
        if (os_avx512) {
            if (ebx7 & (1u << 16)) f |= TK_CPU_AVX512F;
            if (ebx7 & (1u << 17)) f |= TK_CPU_AVX512DQ;
            if (ebx7 & (1u << 30)) f |= TK_CPU_AVX512BW;
            if (ebx7 & (1u << 31)) f |= TK_CPU_AVX512VL;
            if (ecx7 & (1u << 11)) f |= TK_CPU_AVX512VNNI;
            if (edx7 & (1u << 23)) f |= TK_CPU_AVX512FP16;
            if (max_sub >= 1) {
                cpuid2(7, 1, r);
                if (r[0] & (1u << 5)) f |= TK_CPU_AVX512BF16;
            }
        }
        /* AMX: amx_bf16 (EDX bit 22) and amx_tile (bit 24), and XCR0 bits 17-18 (the OS
         * manages the tile config + tile data state); Linux also wants a per-process
         * request (tk_amx_request), made lazily at the first bf16 GEMM (cpu_gemm.c) */
        if ((xcr0 & 0x60000) == 0x60000) {
            if (edx7 & (1u << 24)) f |= TK_CPU_AMX_TILE;
            if ((edx7 & (1u << 22)) && (edx7 & (1u << 24))) f |= TK_CPU_AMX_BF16;
        }
    }
    /* "avx512" features are only usable as a set here; F without F's companions is odd
     * (Xeon Phi) and gets no AVX-512 path, see tk_isa_supported. */
#endif
    return f;
}

static int64_t read_sys_size(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    char buf[64] = {0};
    int64_t v = -1;
    if (fgets(buf, sizeof buf, fp)) {
        char *end = NULL;
        long long n = strtoll(buf, &end, 10);
        if (end != buf && n >= 0) {
            if (*end == 'K') n *= 1024;
            else if (*end == 'M') n *= 1024 * 1024;
            v = n;
        }
    }
    fclose(fp);
    return v;
}

static int read_sys_str(const char *path, char *out, size_t n) {
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    out[0] = 0;
    if (!fgets(out, (int)n, fp)) out[0] = 0;
    fclose(fp);
    size_t l = strlen(out);
    while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = 0;
    return 0;
}

/* levels[1..3]: data or unified cache sizes */
static void caches_sysfs(int64_t lv[4]) {
    for (int i = 0; i < 16; i++) {
        char p[128], type[32];
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (read_sys_str(p, type, sizeof type) != 0) break;
        if (strcmp(type, "Instruction") == 0) continue;
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        int64_t level = read_sys_size(p);
        snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        int64_t size = read_sys_size(p);
        if (level >= 1 && level <= 3 && size > 0 && lv[level] <= 0) lv[level] = size;
    }
}

static void caches_cpuid(int64_t lv[4]) {
#if TK_X86
    unsigned r[4];
    cpuid2(0, 0, r);
    char vendor[13];
    memcpy(vendor, &r[1], 4);
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    vendor[12] = 0;
    unsigned leaf;
    if (strcmp(vendor, "GenuineIntel") == 0 && r[0] >= 4) leaf = 4;
    else if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x8000001Du) leaf = 0x8000001Du;
    else return;
    for (unsigned sub = 0; sub < 16; sub++) {
        cpuid2(leaf, sub, r);
        unsigned type = r[0] & 0x1F, level = (r[0] >> 5) & 7;
        if (type == 0) break;
        if (type == 2 || level < 1 || level > 3) continue; /* instruction cache */
        int64_t ways = ((r[1] >> 22) & 0x3FF) + 1, parts = ((r[1] >> 12) & 0x3FF) + 1;
        int64_t line = (r[1] & 0xFFF) + 1, sets = (int64_t)r[2] + 1;
        if (lv[level] <= 0) lv[level] = ways * parts * line * sets;
    }
#else
    (void)lv;
#endif
}

static unsigned g_features;
static int64_t g_cache[4];
static int g_ncpu;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void detect_once(void) {
    g_features = detect_features();
    int64_t lv[4] = {0, 0, 0, 0};
    caches_sysfs(lv);
    caches_cpuid(lv);
    g_cache[1] = lv[1];
    g_cache[2] = lv[2];
    g_cache[3] = lv[3];
    int n = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) {
        long s = sysconf(_SC_NPROCESSORS_ONLN);
        n = s > 0 ? (int)s : 1;
    }
    g_ncpu = n;
}

unsigned tk_cpu_features(void) {
    pthread_once(&g_once, detect_once);
    return g_features;
}

void tk_cpu_cache_sizes(int64_t *l1d, int64_t *l2, int64_t *l3) {
    pthread_once(&g_once, detect_once);
    if (l1d) *l1d = g_cache[1];
    if (l2) *l2 = g_cache[2];
    if (l3) *l3 = g_cache[3];
}

int tk_cpu_count(void) {
    pthread_once(&g_once, detect_once);
    return g_ncpu;
}

int tk_isa_supported(const char *name) {
    unsigned f = tk_cpu_features();
    if (strcmp(name, "generic") == 0) return 1;
#if TK_X86
    const unsigned avx2 = TK_CPU_AVX | TK_CPU_AVX2 | TK_CPU_FMA | TK_CPU_F16C;
    const unsigned avx512 = avx2 | TK_CPU_AVX512F | TK_CPU_AVX512BW | TK_CPU_AVX512VL | TK_CPU_AVX512DQ;
    if (strcmp(name, "avx2") == 0) return (f & avx2) == avx2;
    if (strcmp(name, "avx512") == 0) return (f & avx512) == avx512;
    if (strcmp(name, "avx512bf16") == 0) return (f & (avx512 | TK_CPU_AVX512BF16)) == (avx512 | TK_CPU_AVX512BF16);
    if (strcmp(name, "amx") == 0)
        return (f & (avx512 | TK_CPU_AMX_TILE | TK_CPU_AMX_BF16)) == (avx512 | TK_CPU_AMX_TILE | TK_CPU_AMX_BF16);
#endif
    return 0;
}
