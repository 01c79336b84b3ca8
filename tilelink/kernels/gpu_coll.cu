/* gpu_coll.cu — libtilelink's device collective kernels (hand-written CUDA C).
 *
 * Embedded as a string at build time (tilelink/kernels/embed.cmake) and compiled at run time
 * with NVRTC by tilelink/src/gpu_coll.c, once per (dtype, op): -DTL_DT=<tlink_dtype>
 * -DTL_OP=<tlink_op>. The one header it includes, "convert.h", is src/base/convert.h (the
 * conversions every part of Tile shares), given to NVRTC by name; nothing else is included.
 *
 * Why hand-written and not TileLang: these kernels synchronise with kernels of other
 * processes on other GPUs through flags in peer memory (system-scope release/acquire,
 * spin-waits with a deadline) and write into peers' buffers; TileLang has neither
 * system-scope atomics nor peer pointers. The copy-engine path (gpu_coll.c, algo "ce")
 * does its reductions with kernels generated from tilelink/kernels/reduce.tl instead.
 *
 * Protocol (see docs/tilelink-gpu.md). Every rank owns one IPC buffer holding flags and
 * two inboxes (0: reduce-scatter phase, 1: gather phase), each double-buffered (slot =
 * step & 1), each with one slot per (block, source rank). Block b of every rank handles the
 * same tiles, so blocks synchronise pairwise with the same block index on the peers:
 *   push:    wait ACK[i][dst] >= previous use of the slot; write data into dst's inbox;
 *            release-store DATA[i] = step into dst's flags.
 *   consume: acquire-wait DATA[i][src] >= step; read; release-store ACK[i] = step to src.
 * Steps increase monotonically over the communicator's life (host keeps the count). Block b
 * remembers, per (inbox, slot parity, destination), the last step it pushed (F_LAST flags).
 */
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define MAXR 8
enum { M_AR2 = 0, M_AR1 = 1, M_RS = 2, M_AG = 3, M_A2A = 4, M_BC = 5, M_BCS = 6,
       M_RAR = 7, M_RRS = 8, M_RAG = 9, M_CBC = 10 }; /* ring allreduce/reduce_scatter/allgather, chain broadcast */
/* flag kinds (4..7 are the copy-engine path's); F_LAST0 + inbox*2 + parity: per block and
 * destination, the last step this block pushed into that slot (local, never read by peers) */
enum { F_DATA0 = 0, F_DATA1 = 1, F_ACK0 = 2, F_ACK1 = 3, F_LAST0 = 8 };

struct Args {
    const char *in;
    char *out;
    i64 L;       /* column length (elements) */
    i64 lim;     /* elements of the message (column p, offset o is element p*L+o < lim) */
    i64 T;       /* elements per slot */
    i64 rounds;  /* tiles per block */
    u64 step0;   /* steps used before this operation */
    i64 slot;    /* bytes per slot */
    int n, me, mode, root, nb, pad; /* nb: blocks of the buffer layout (>= gridDim.x) */
    u64 timeout_ns;
    char *data[MAXR];
    u64 *flags[MAXR];
    int *err;    /* host-mapped error word: 0 ok, 1000+r: timed out waiting for rank r */
    int ring[MAXR]; /* ring and chain modes: the rank at each ring position */
};

#ifndef TL_DT
#define TL_DT 0
#endif
#ifndef TL_OP
#define TL_OP 0
#endif

/* ---------- element types: load into an accumulator, store back ----------
 * f16 / bf16 / fp8 <-> f32: src/base/convert.h, the rules of docs/numbers.md (fp8 saturates) */
#include "convert.h"

#if TL_DT == 0
typedef float T;
typedef float A;
__device__ __forceinline__ A ld(T v) { return v; }
__device__ __forceinline__ T st(A v) { return v; }
#define TL_FLOAT 1
#elif TL_DT == 1
typedef double T;
typedef double A;
__device__ __forceinline__ A ld(T v) { return v; }
__device__ __forceinline__ T st(A v) { return v; }
#define TL_FLOAT 1
#elif TL_DT == 2
typedef u16 T;
typedef float A;
__device__ __forceinline__ A ld(T v) { return tcv_f16_bits_to_f32(v); }
__device__ __forceinline__ T st(A v) { return tcv_f32_to_f16_bits(v); }
#define TL_FLOAT 1
#elif TL_DT == 3
typedef u16 T;
typedef float A;
__device__ __forceinline__ A ld(T v) { return tcv_bf16_bits_to_f32(v); }
__device__ __forceinline__ T st(A v) { return tcv_f32_to_bf16_bits(v); }
#define TL_FLOAT 1
#elif TL_DT == 4
typedef int T;
typedef int A;
__device__ __forceinline__ A ld(T v) { return v; }
__device__ __forceinline__ T st(A v) { return v; }
#define TL_FLOAT 0
#elif TL_DT == 5
typedef long long T;
typedef long long A;
__device__ __forceinline__ A ld(T v) { return v; }
__device__ __forceinline__ T st(A v) { return v; }
#define TL_FLOAT 0
#elif TL_DT == 6
typedef u8 T;
typedef u8 A;
__device__ __forceinline__ A ld(T v) { return v; }
__device__ __forceinline__ T st(A v) { return v; }
#define TL_FLOAT 0
#elif TL_DT == 7
typedef u8 T;
typedef float A;
__device__ __forceinline__ A ld(T v) { return tcv_e4m3_bits_to_f32(v); }
__device__ __forceinline__ T st(A v) { return tcv_f32_to_e4m3_bits(v); }
#define TL_FLOAT 1
#else
typedef u8 T;
typedef float A;
__device__ __forceinline__ A ld(T v) { return tcv_e5m2_bits_to_f32(v); }
__device__ __forceinline__ T st(A v) { return tcv_f32_to_e5m2_bits(v); }
#define TL_FLOAT 1
#endif

/* sum/prod wrap around for integers (unsigned arithmetic, no undefined behaviour) */
__device__ __forceinline__ A red(A a, A b) {
#if TL_OP == 0 || TL_OP == 4
#if TL_FLOAT
    return a + b;
#else
    return (A)((unsigned long long)a + (unsigned long long)b);
#endif
#elif TL_OP == 1
#if TL_FLOAT
    return a * b;
#else
    return (A)((unsigned long long)a * (unsigned long long)b);
#endif
#elif TL_OP == 2
    return b < a ? b : a;
#else
    return b > a ? b : a;
#endif
}
__device__ __forceinline__ A finish(A a, int n) {
#if TL_OP == 4
    return a / (A)n;
#else
    (void)n;
    return a;
#endif
}

/* ---------- flags ---------- */
#ifndef TL_HOST_EMU
__device__ __forceinline__ u64 ld_acquire(const u64 *p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(u64 *p, u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 now_ns(void) {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

__device__ __forceinline__ u64 *flag(const Args &a, int owner, int kind, int b, int src) {
    return a.flags[owner] + ((i64)(kind * a.nb + b) * MAXR + src);
}
__device__ __forceinline__ char *slotp(const Args &a, int owner, int inbox, u64 step, int b, int src) {
    i64 idx = ((i64)((inbox * 2 + (int)(step & 1)) * a.nb + b) * a.n + src);
    return a.data[owner] + idx * a.slot;
}

/* thread 0 waits for *p >= v (bounded by the deadline), then the block proceeds. Returns 0
 * when the block must stop (a timeout, here or reported by another block). */
__device__ int wait_ge(const Args &a, const u64 *p, u64 v, int peer) {
    __shared__ int ok;
    if (threadIdx.x == 0) {
        ok = 1;
        if (ld_acquire(p) < v) {
            u64 t0 = now_ns();
            int spins = 0;
            while (ld_acquire(p) < v) {
                if (++spins == 1024) {
                    spins = 0;
                    if (*(volatile int *)a.err != 0 || now_ns() - t0 > a.timeout_ns) {
                        atomicCAS(a.err, 0, 1000 + peer);
                        ok = 0;
                        break;
                    }
                }
            }
        }
    }
    __syncthreads();
    return ok;
}
__device__ __forceinline__ void signal(u64 *p, u64 v) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        st_release(p, v);
    }
}

/* ---------- copy and reduce over one tile ---------- */
__device__ __forceinline__ int al16(const void *p) { return (((unsigned long long)p) & 15) == 0; }

/* dst[k] (k < nd) = src, bytes */
/* (loops over the pointer arrays are unrolled to MAXR so that the arrays live in registers) */
__device__ __forceinline__ void copy_bytes(char *const *dst, int nd, const char *src, i64 bytes) {
    int aligned = al16(src) && (bytes & 15) == 0;
#pragma unroll
    for (int k = 0; k < MAXR; k++)
        if (k < nd) aligned &= al16(dst[k]);
    if (aligned) {
        i64 nv = bytes >> 4;
        const uint4 *s = (const uint4 *)src;
        i64 i = threadIdx.x;
        for (; i + 3 * (i64)blockDim.x < nv; i += 4 * (i64)blockDim.x) { /* 4 loads in flight */
            uint4 v0 = s[i], v1 = s[i + blockDim.x], v2 = s[i + 2 * blockDim.x], v3 = s[i + 3 * blockDim.x];
#pragma unroll
            for (int k = 0; k < MAXR; k++)
                if (k < nd) {
                    uint4 *d = (uint4 *)dst[k];
                    d[i] = v0;
                    d[i + blockDim.x] = v1;
                    d[i + 2 * blockDim.x] = v2;
                    d[i + 3 * blockDim.x] = v3;
                }
        }
        for (; i < nv; i += blockDim.x) {
            uint4 v = s[i];
#pragma unroll
            for (int k = 0; k < MAXR; k++)
                if (k < nd) ((uint4 *)dst[k])[i] = v;
        }
    } else {
        for (i64 i = threadIdx.x; i < bytes; i += blockDim.x) {
            char v = src[i];
#pragma unroll
            for (int k = 0; k < MAXR; k++)
                if (k < nd) dst[k][i] = v;
        }
    }
}

/* dst[k] (k < nd) = finish(src[0] op src[1] op ... src[ns-1]), cnt elements */
__device__ __forceinline__ void reduce_elems(char *const *dst, int nd, const char *const *src, int ns, i64 cnt, int n, int avg) {
    const int E = 16 / (int)sizeof(T);
    int aligned = ((cnt * (i64)sizeof(T)) & 15) == 0;
#pragma unroll
    for (int k = 0; k < MAXR; k++) {
        if (k < nd) aligned &= al16(dst[k]);
        if (k < ns) aligned &= al16(src[k]);
    }
    if (aligned) {
        i64 nv = cnt / E;
        for (i64 i = threadIdx.x; i < nv; i += blockDim.x) {
            union { uint4 v; T e[16 / sizeof(T)]; } u, w;
            A acc[16 / sizeof(T)];
            u.v = ((const uint4 *)src[0])[i];
#pragma unroll
            for (int j = 0; j < E; j++) acc[j] = ld(u.e[j]);
#pragma unroll
            for (int k = 1; k < MAXR; k++)
                if (k < ns) {
                    u.v = ((const uint4 *)src[k])[i];
#pragma unroll
                    for (int j = 0; j < E; j++) acc[j] = red(acc[j], ld(u.e[j]));
                }
#pragma unroll
            for (int j = 0; j < E; j++) w.e[j] = st(avg ? finish(acc[j], n) : acc[j]);
#pragma unroll
            for (int k = 0; k < MAXR; k++)
                if (k < nd) ((uint4 *)dst[k])[i] = w.v;
        }
    } else {
        for (i64 i = threadIdx.x; i < cnt; i += blockDim.x) {
            A acc = ld(((const T *)src[0])[i]);
#pragma unroll
            for (int k = 1; k < MAXR; k++)
                if (k < ns) acc = red(acc, ld(((const T *)src[k])[i]));
            T w = st(avg ? finish(acc, n) : acc);
#pragma unroll
            for (int k = 0; k < MAXR; k++)
                if (k < nd) ((T *)dst[k])[i] = w;
        }
    }
}

__device__ __forceinline__ i64 col_count(const Args &a, int p, i64 off) {
    i64 c = a.L - off;
    if (c > a.T) c = a.T;
    i64 room = a.lim - ((i64)p * a.L + off);
    if (c > room) c = room;
    return c > 0 ? c : 0;
}

/* wait until dst has released the slot I am about to fill: ACK >= the last step this block
 * pushed into it (kept in my own flags, so operations may launch different numbers of blocks;
 * a block that sat an operation out still knows its slots' last use), then record this push */
__device__ __forceinline__ int push_ready(const Args &a, int inbox, u64 step, i64 r, int dst) {
    (void)r;
    u64 *last = flag(a, a.me, F_LAST0 + inbox * 2 + (int)(step & 1), blockIdx.x, dst);
    u64 need = 0;
    if (threadIdx.x == 0) need = *(volatile u64 *)last;
    int ok = wait_ge(a, flag(a, a.me, F_ACK0 + inbox, blockIdx.x, dst), need, dst);
    if (ok && threadIdx.x == 0) *(volatile u64 *)last = step;
    return ok;
}

/* ---------- ring and chain (pipelined through the ring neighbours only) ----------
 * Every push goes to the next rank on the ring (a.ring), every receive comes from the previous
 * one; the k-th push of round r has step step0 + r*S + k + 1 on every rank (S pushes per
 * round), and goes through slot (inbox, parity) = ((step >> 1) & 1, step & 1): four slots per
 * (block, neighbour), so a rank may run three pushes ahead of its successor. */
__device__ __forceinline__ int rbox(u64 step) { return (int)((step >> 1) & 1); }
__device__ __forceinline__ int ring_push_ready(const Args &a, u64 st, int nx) { return push_ready(a, rbox(st), st, 0, nx); }
__device__ __forceinline__ char *ring_slot_to(const Args &a, u64 st, int nx) { return slotp(a, nx, rbox(st), st, blockIdx.x, a.me); }
__device__ __forceinline__ int ring_wait(const Args &a, u64 st, int pv) {
    return wait_ge(a, flag(a, a.me, F_DATA0 + rbox(st), blockIdx.x, pv), st, pv);
}
__device__ __forceinline__ const char *ring_slot_from(const Args &a, u64 st, int pv) { return slotp(a, a.me, rbox(st), st, blockIdx.x, pv); }
__device__ __forceinline__ void ring_sent(const Args &a, u64 st, int nx) { signal(flag(a, nx, F_DATA0 + rbox(st), blockIdx.x, a.me), st); }
__device__ __forceinline__ void ring_ack(const Args &a, u64 st, int pv) { signal(flag(a, pv, F_ACK0 + rbox(st), blockIdx.x, a.me), st); }

__device__ int ring_round(const Args &a, i64 r, i64 off) {
    const int me = a.me, n = a.n;
    const int es = (int)sizeof(T);
    int q = 0;
#pragma unroll
    for (int k = 0; k < MAXR; k++)
        if (k < n && a.ring[k] == me) q = k;
    const int nx = a.ring[(q + 1) % n], pv = a.ring[(q + n - 1) % n];
    char *dst[MAXR]; /* (MAXR: the copy/reduce loops are unrolled over MAXR entries) */
    const char *src[MAXR];
    if (a.mode == M_CBC) {
        /* chain broadcast: root = ring position 0 of the chain; each rank copies the tile out
         * and forwards it to its successor in the same pass (one read, two writes) */
        int qr = 0;
#pragma unroll
        for (int k = 0; k < MAXR; k++)
            if (k < n && a.ring[k] == a.root) qr = k;
        const int d = (q - qr + n) % n;
        const u64 st = a.step0 + (u64)r + 1;
        const i64 c = col_count(a, 0, off);
        char *o = a.out + off * es;
        if (d == 0) {
            if (!ring_push_ready(a, st, nx)) return 0;
            dst[0] = ring_slot_to(a, st, nx);
            dst[1] = o;
            copy_bytes(dst, o != a.in + off * es ? 2 : 1, a.in + off * es, c * es);
            ring_sent(a, st, nx);
            return 1;
        }
        if (!ring_wait(a, st, pv)) return 0;
        dst[0] = o;
        dst[1] = 0;
        if (d < n - 1) {
            if (!ring_push_ready(a, st, nx)) return 0;
            dst[1] = ring_slot_to(a, st, nx);
        }
        copy_bytes(dst, d < n - 1 ? 2 : 1, ring_slot_from(a, st, pv), c * es);
        ring_ack(a, st, pv);
        if (d < n - 1) ring_sent(a, st, nx);
        return 1;
    }
    const int S = a.mode == M_RAR ? 2 * (n - 1) : n - 1;
    const u64 base = a.step0 + (u64)r * (u64)S; /* push k: step base + k + 1 */
    int k = 0;
    if (a.mode != M_RAG) {
        /* reduce-scatter: chunk j (of ring position j) starts at position j+1 and travels the
         * ring, each rank adding its piece; position q sends chunk q-s-1 at step s */
        for (int s = 0; s < n - 1; s++, k++) {
            const int col = a.ring[(q - s - 1 + 2 * n) % n];
            const u64 st = base + (u64)k + 1;
            const i64 c = col_count(a, col, off);
            const char *mine = a.in + ((i64)col * a.L + off) * es;
            char *d = 0;
            if (s == 0) {
                if (!ring_push_ready(a, st, nx)) return 0;
                d = ring_slot_to(a, st, nx);
                copy_bytes(&d, 1, mine, c * es);
            } else {
                if (!ring_wait(a, st - 1, pv)) return 0;
                if (!ring_push_ready(a, st, nx)) return 0;
                d = ring_slot_to(a, st, nx);
                src[0] = ring_slot_from(a, st - 1, pv);
                src[1] = mine;
                reduce_elems(&d, 1, src, 2, c, n, 0);
                ring_ack(a, st - 1, pv);
            }
            ring_sent(a, st, nx);
        }
        /* the last piece of my own chunk (column = my rank): finish the reduction */
        const u64 rs = base + (u64)k; /* predecessor's last push */
        const i64 c = col_count(a, me, off);
        if (!ring_wait(a, rs, pv)) return 0;
        src[0] = ring_slot_from(a, rs, pv);
        src[1] = a.in + ((i64)me * a.L + off) * es;
        dst[0] = a.out + (a.mode == M_RRS ? off : (i64)me * a.L + off) * es;
        int nd = 1;
        const u64 st = base + (u64)k + 1;
        if (a.mode == M_RAR) {
            if (!ring_push_ready(a, st, nx)) return 0;
            dst[1] = ring_slot_to(a, st, nx);
            nd = 2;
        }
        reduce_elems(dst, nd, src, 2, c, n, TL_OP == 4);
        ring_ack(a, rs, pv);
        if (a.mode == M_RRS) return 1;
        ring_sent(a, st, nx);
        k++;
    } else {
        /* allgather: my chunk goes out first (and into my own output unless in place) */
        const u64 st = base + 1;
        const i64 c = col_count(a, me, off);
        if (!ring_push_ready(a, st, nx)) return 0;
        dst[0] = ring_slot_to(a, st, nx);
        dst[1] = a.out + ((i64)me * a.L + off) * es;
        copy_bytes(dst, dst[1] != a.in + off * es ? 2 : 1, a.in + off * es, c * es);
        ring_sent(a, st, nx);
        k = 1;
    }
    /* all-gather: receive chunk q-t from the predecessor, copy it out, forward it (t < n-1) */
    for (int t = 1; t < n; t++, k++) {
        const u64 rs = base + (u64)k, st = rs + 1;
        const int col = a.ring[(q - t + n) % n];
        const i64 c = col_count(a, col, off);
        if (!ring_wait(a, rs, pv)) return 0;
        dst[0] = a.out + ((i64)col * a.L + off) * es;
        dst[1] = 0;
        if (t < n - 1) {
            if (!ring_push_ready(a, st, nx)) return 0;
            dst[1] = ring_slot_to(a, st, nx);
        }
        copy_bytes(dst, t < n - 1 ? 2 : 1, ring_slot_from(a, rs, pv), c * es);
        ring_ack(a, rs, pv);
        if (t < n - 1) ring_sent(a, st, nx);
    }
    return 1;
}

extern "C" __global__ void __launch_bounds__(512) tl_coll(Args a) {
    const int me = a.me, n = a.n, b = blockIdx.x;
    const int es = (int)sizeof(T);
    const int avg = TL_OP == 4;
    for (i64 r = 0; r < a.rounds; r++) {
        const u64 step = a.step0 + (u64)r + 1;
        const i64 off = (r * (i64)gridDim.x + b) * a.T;
        char *dst[MAXR];
        const char *src[MAXR];
        if (a.mode == M_AR2 || a.mode == M_RS) {
            /* phase 1: my piece of every column to its owner */
            for (int k = 1; k < n; k++) {
                int p = (me + k) % n;
                if (!push_ready(a, 0, step, r, p)) return;
                i64 c = col_count(a, p, off);
                char *d = slotp(a, p, 0, step, b, me);
                copy_bytes(&d, 1, a.in + ((i64)p * a.L + off) * es, c * es);
                signal(flag(a, p, F_DATA0, b, me), step);
            }
            /* phase 2: reduce my column in rank order */
            i64 c = col_count(a, me, off);
#pragma unroll
            for (int k = 0; k < MAXR; k++) {
                if (k >= n) break;
                if (k == me) { src[k] = a.in + ((i64)me * a.L + off) * es; continue; }
                if (!wait_ge(a, flag(a, me, F_DATA0, b, k), step, k)) return;
                src[k] = slotp(a, me, 0, step, b, k);
            }
            dst[0] = a.out + (a.mode == M_RS ? off : (i64)me * a.L + off) * es;
            if (a.mode == M_AR2) {
#pragma unroll
                for (int k = 1; k < MAXR; k++) {
                    if (k >= n) break;
                    int p = (me + k) % n;
                    if (!push_ready(a, 1, step, r, p)) return;
                    dst[k] = slotp(a, p, 1, step, b, me);
                }
            }
            reduce_elems(dst, a.mode == M_AR2 ? n : 1, src, n, c, n, avg);
            __syncthreads();
            for (int k = 1; k < n; k++) {
                int p = (me + k) % n;
                signal(flag(a, p, F_ACK0, b, me), step);
                if (a.mode == M_AR2) signal(flag(a, p, F_DATA1, b, me), step);
            }
            if (a.mode == M_RS) continue;
            /* phase 3: gather the other columns */
            for (int k = 1; k < n; k++) {
                int p = (me + n - k) % n;
                if (!wait_ge(a, flag(a, me, F_DATA1, b, p), step, p)) return;
                i64 cp = col_count(a, p, off);
                char *d = a.out + ((i64)p * a.L + off) * es;
                copy_bytes(&d, 1, slotp(a, me, 1, step, b, p), cp * es);
                signal(flag(a, p, F_ACK1, b, me), step);
            }
        } else if (a.mode == M_AR1) {
            /* one shot: everything to everyone, everyone reduces in rank order */
            i64 c = col_count(a, 0, off);
#pragma unroll
            for (int k = 1; k < MAXR; k++) {
                if (k >= n) break;
                int p = (me + k) % n;
                if (!push_ready(a, 0, step, r, p)) return;
                dst[k - 1] = slotp(a, p, 0, step, b, me);
            }
            copy_bytes(dst, n - 1, a.in + off * es, c * es);
            for (int k = 1; k < n; k++) signal(flag(a, (me + k) % n, F_DATA0, b, me), step);
#pragma unroll
            for (int k = 0; k < MAXR; k++) {
                if (k >= n) break;
                if (k == me) { src[k] = a.in + off * es; continue; }
                if (!wait_ge(a, flag(a, me, F_DATA0, b, k), step, k)) return;
                src[k] = slotp(a, me, 0, step, b, k);
            }
            char *o = a.out + off * es;
            reduce_elems(&o, 1, src, n, c, n, avg);
            for (int k = 1; k < n; k++) signal(flag(a, (me + k) % n, F_ACK0, b, me), step);
        } else if (a.mode == M_BCS) {
            /* broadcast by scatter + allgather: the message is cut into n-1 columns of L
             * elements; column c belongs to the non-root rank (root+1+c)%n. The root pushes
             * column c's tile into its owner's inbox 0 (and copies it to its own out unless in
             * place); the owner copies it to its out and forwards it into the inbox 1 of every
             * other non-root rank, which copies it out. Every link carries about B: the root's
             * outbound bandwidth is no longer shared by n-1 readers of the whole message. */
            const int root = a.root;
            if (me == root) {
                for (int k = 1; k < n; k++) {
                    /* blocks start at different owners: all of the root's links busy at once */
                    const int c = (k - 1 + b) % (n - 1), p = (me + 1 + c) % n;
                    if (!push_ready(a, 0, step, r, p)) return;
                    const char *s = a.in + ((i64)c * a.L + off) * es;
                    dst[0] = slotp(a, p, 0, step, b, me);
                    dst[1] = a.out + ((i64)c * a.L + off) * es;
                    copy_bytes(dst, a.out != a.in ? 2 : 1, s, col_count(a, c, off) * es);
                    signal(flag(a, p, F_DATA0, b, me), step);
                }
            } else {
                const int c = (me - root - 1 + n) % n;
                if (!wait_ge(a, flag(a, me, F_DATA0, b, root), step, root)) return;
                char *fw[MAXR];
                int nd = 1;
                fw[0] = a.out + ((i64)c * a.L + off) * es;
                for (int k = 1; k < n; k++) {
                    int p = (me + k) % n;
                    if (p == root) continue;
                    if (!push_ready(a, 1, step, r, p)) return;
                    fw[nd++] = slotp(a, p, 1, step, b, me);
                }
#pragma unroll
                for (int k = 0; k < MAXR; k++) dst[k] = k < nd ? fw[k] : 0; /* constant indices: registers */
                copy_bytes(dst, nd, slotp(a, me, 0, step, b, root), col_count(a, c, off) * es);
                signal(flag(a, root, F_ACK0, b, me), step);
                for (int k = 1; k < n; k++) {
                    int p = (me + k) % n;
                    if (p != root) signal(flag(a, p, F_DATA1, b, me), step);
                }
                for (int k = 1; k < n; k++) {
                    int p = (me + n - k) % n;
                    if (p == root) continue;
                    const int cp = (p - root - 1 + n) % n;
                    if (!wait_ge(a, flag(a, me, F_DATA1, b, p), step, p)) return;
                    char *d = a.out + ((i64)cp * a.L + off) * es;
                    copy_bytes(&d, 1, slotp(a, me, 1, step, b, p), col_count(a, cp, off) * es);
                    signal(flag(a, p, F_ACK1, b, me), step);
                }
            }
        } else if (a.mode >= M_RAR && a.mode <= M_CBC) {
            if (!ring_round(a, r, off)) return;
        } else {
            /* data movement through inbox 1: allgather, alltoall, broadcast */
            int sends = a.mode != M_BC || me == a.root;
            if (sends) {
                if (a.mode == M_A2A) {
                    for (int k = 1; k < n; k++) {
                        int p = (me + k) % n;
                        if (!push_ready(a, 1, step, r, p)) return;
                        char *d = slotp(a, p, 1, step, b, me);
                        copy_bytes(&d, 1, a.in + ((i64)p * a.L + off) * es, col_count(a, p, off) * es);
                        signal(flag(a, p, F_DATA1, b, me), step);
                    }
                } else {
#pragma unroll
                    for (int k = 1; k < MAXR; k++) {
                        if (k >= n) break;
                        int p = (me + k) % n;
                        if (!push_ready(a, 1, step, r, p)) return;
                        dst[k - 1] = slotp(a, p, 1, step, b, me);
                    }
                    /* my own block too (allgather; broadcast's root unless in place) */
                    i64 oo = a.mode == M_AG ? (i64)me * a.L + off : off;
                    char *mine = a.out + oo * es;
                    dst[n - 1] = mine;
                    copy_bytes(dst, mine != a.in + off * es ? n : n - 1, a.in + off * es, col_count(a, 0, off) * es);
                    for (int k = 1; k < n; k++) signal(flag(a, (me + k) % n, F_DATA1, b, me), step);
                }
                if (a.mode == M_A2A) {
                    char *d = a.out + ((i64)me * a.L + off) * es;
                    const char *s = a.in + ((i64)me * a.L + off) * es;
                    if (d != s) copy_bytes(&d, 1, s, col_count(a, me, off) * es);
                }
            }
            for (int k = 1; k < n; k++) {
                int p = (me + n - k) % n;
                if (a.mode == M_BC && p != a.root) continue;
                if (!wait_ge(a, flag(a, me, F_DATA1, b, p), step, p)) return;
                i64 oo = a.mode == M_BC ? off : (i64)p * a.L + off;
                i64 cp = a.mode == M_BC ? col_count(a, 0, off) : col_count(a, p, off);
                char *d = a.out + oo * es;
                copy_bytes(&d, 1, slotp(a, me, 1, step, b, p), cp * es);
                signal(flag(a, p, F_ACK1, b, me), step);
            }
        }
    }
}
