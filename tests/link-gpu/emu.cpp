/* tests/link-gpu/emu.cpp — the device collective kernel (tilelink/kernels/gpu_coll.cu, the
 * very source NVRTC compiles) run on CPU threads: one thread per (rank, block), blockDim 1,
 * flags with C11-style acquire/release atomics, every rank issuing its own sequence of
 * operations (so ranks drift apart as on independent streams). Checks the flag protocol
 * without a GPU: slot reuse across operations of different modes and grid sizes (F_LAST),
 * oneshot/twoshot allreduce, direct and scatter broadcast (roots, in place), allgather, and the
 * ring modes (ring allreduce, reduce_scatter, allgather, chain broadcast) over a ring order that
 * is not the rank order.
 * The tile/round arithmetic mirrors launch() in tilelink/src/gpu_coll.c.
 *   emu [N [BLOCKS [SMALL_BLOCKS [SLOT]]]]   (default 4 4 2 8192); exit 0 when all match */
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#define TL_HOST_EMU 1
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(x)
#define __shared__ static thread_local
struct d3 { unsigned x; };
thread_local d3 threadIdx{0}, blockIdx{0};
thread_local d3 gridDim{1};
const d3 blockDim{1};
#define __syncthreads() ((void)0)
#define __threadfence_system() std::atomic_thread_fence(std::memory_order_seq_cst)
struct uint4 { unsigned x, y, z, w; };
static inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline int atomicCAS(int *p, int c, int v) { __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return c; }
typedef unsigned long long u64;
typedef unsigned short u16;
static inline u64 ld_acquire(const u64 *p) {
    u64 v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    std::this_thread::yield(); /* many spinning threads on few cores */
    return v;
}
static inline void st_release(u64 *p, u64 v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static inline u64 now_ns(void) {
    return (u64)std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
#define TL_DT 0
#define TL_OP 0
#include "gpu_coll.cu"

enum { F_KINDS = 12 };
static int N, NB = 4, NB_SMALL = 2;
static size_t SLOT = 8192, BIG = 100000;
struct Rank { std::vector<char> buf; u64 step = 0; int err = 0; };
static Rank R[8];
static size_t flag_bytes, sm_bytes;
static int RING[8];

static void launch(int me, int mode, const void *in, void *out, size_t L, size_t lim, int root) {
    size_t es = 4;
    Args a; memset(&a, 0, sizeof a);
    a.in = (const char *)in; a.out = (char *)out; a.L = L; a.lim = lim;
    int64_t nbl = (int64_t)(lim * es) >= (int64_t)BIG ? NB : NB_SMALL;
    int64_t Tmax = SLOT / es, gran = 256 / es;
    int64_t rounds = ((int64_t)L + Tmax * nbl - 1) / (Tmax * nbl); if (rounds < 1) rounds = 1;
    /* the chain takes more, smaller rounds from 3 ranks (chain_rounds in gpu_coll.c; here a
     * fixed 4 x (n-2) more, never tiles under the 256-byte granule) */
    if (mode == M_CBC && N > 2) { int64_t most = (int64_t)L / (nbl * gran); int64_t r2 = rounds * 4 * (N - 2); rounds = r2 < most ? r2 : (most > rounds ? most : rounds); }
    int64_t per = ((int64_t)L + rounds * nbl - 1) / (rounds * nbl);
    per = (per + gran - 1) / gran * gran; if (per < gran) per = gran; if (per > Tmax) per = Tmax;
    a.T = per;
    int64_t tiles = ((int64_t)L + a.T - 1) / a.T;
    a.rounds = (tiles + nbl - 1) / nbl; if (a.rounds < 1) a.rounds = 1;
    a.step0 = R[me].step; a.slot = SLOT; a.n = N; a.me = me; a.mode = mode; a.root = root; a.nb = NB;
    a.timeout_ns = 5000000000ull;
    for (int p = 0; p < N; p++) { a.data[p] = R[p].buf.data() + flag_bytes; a.flags[p] = (u64 *)R[p].buf.data(); }
    a.err = &R[me].err;
    for (int p = 0; p < N; p++) a.ring[p] = RING[p];
    std::vector<std::thread> th;
    for (int b = 0; b < nbl; b++) th.emplace_back([a, b, nbl]() { blockIdx.x = b; gridDim.x = nbl; tl_coll(a); });
    for (auto &t : th) t.join();
    /* pushes per round (mirrors launch() in gpu_coll.c) */
    int S = mode == M_RAR ? 2 * (N - 1) : (mode == M_RRS || mode == M_RAG) ? N - 1 : 1;
    R[me].step += a.rounds * S;
}
static float val(int r, size_t i, int op) { return (float)((r + 1) * 3 + (i % 97) + op); }
/* kind 0 oneshot 1 twoshot 2 bc direct 3 bc scatter 4 allgather 5 ring allreduce 6 ring
 * reduce_scatter 7 ring allgather 8 chain broadcast */
enum { KINDS = 9 };
struct Op { int kind; size_t count; int root; int inplace; };
int main(int argc, char **argv) {
    N = argc > 1 ? atoi(argv[1]) : 4; if (argc > 2) NB = atoi(argv[2]); if (argc > 3) NB_SMALL = atoi(argv[3]); if (argc > 4) SLOT = atoi(argv[4]);
    flag_bytes = ((size_t)F_KINDS * NB * 8 * 8 + 4095) & ~(size_t)4095;
    sm_bytes = 4 * (size_t)NB * N * SLOT;
    for (int r = 0; r < N; r++) R[r].buf.assign(flag_bytes + sm_bytes, 0);
    std::vector<Op> ops;
    size_t sizes[] = {1, 1023, 70001, 20000, 5, 33333, 100, 50000};
    srand(7);
    for (int k = 0; k < 225; k++) ops.push_back({k % KINDS, sizes[rand() % 8], rand() % N, rand() % 2});
    /* a ring order other than the rank order (a fixed shuffle) */
    for (int p = 0; p < N; p++) RING[p] = p;
    for (int p = N - 1; p > 0; p--) { int j = rand() % (p + 1), t = RING[p]; RING[p] = RING[j]; RING[j] = t; }
    std::atomic<int> bad{0};
    std::vector<std::thread> ranks;
    for (int me = 0; me < N; me++) ranks.emplace_back([&, me]() {
        for (size_t oi = 0; oi < ops.size(); oi++) {
            Op o = ops[oi];
            size_t c = o.count, rc = (o.kind == 4 || o.kind == 7) ? c * N : c, sc = o.kind == 6 ? c * N : c;
            std::vector<float> in(sc + 1), out(rc + 1, 99.f);
            for (size_t i = 0; i < sc; i++) in[i] = val(me, i, (int)oi);
            int ip = o.inplace && (o.kind <= 3 || o.kind == 5 || o.kind == 7 || o.kind == 8);
            /* in place: allreduce/broadcast in == out; allgather in == out + me*c */
            size_t ipoff = o.kind == 7 ? (size_t)me * c : 0;
            if (ip) for (size_t i = 0; i < c; i++) out[ipoff + i] = in[i];
            const void *src = ip ? out.data() + ipoff : in.data();
            switch (o.kind) {
            case 0: launch(me, M_AR1, src, out.data(), c, c, 0); break;
            case 1: launch(me, M_AR2, src, out.data(), (c + N - 1) / N, c, 0); break;
            case 2: launch(me, M_BC, me == o.root ? src : out.data(), out.data(), c, c, o.root); break;
            case 3: launch(me, M_BCS, me == o.root ? src : out.data(), out.data(), (c + N - 2) / (N - 1), c, o.root); break;
            case 4: launch(me, M_AG, in.data(), out.data(), c, c * N, 0); break;
            case 5: launch(me, M_RAR, src, out.data(), (c + N - 1) / N, c, 0); break;
            case 6: launch(me, M_RRS, in.data(), out.data(), c, c * N, 0); break;
            case 7: launch(me, M_RAG, src, out.data(), c, c * N, 0); break;
            case 8: launch(me, M_CBC, me == o.root ? src : out.data(), out.data(), c, c, o.root); break;
            }
            if (R[me].err) { printf("rank %d op %zu: err %d\n", me, oi, R[me].err); bad++; return; }
            long nbad = 0;
            for (size_t i = 0; i < rc; i++) {
                float want;
                if (o.kind <= 1 || o.kind == 5) { want = 0; for (int r = 0; r < N; r++) want += val(r, i, (int)oi); }
                else if (o.kind == 6) { want = 0; for (int r = 0; r < N; r++) want += val(r, (size_t)me * c + i, (int)oi); }
                else if (o.kind <= 3 || o.kind == 8) want = val(o.root, i, (int)oi);
                else want = val((int)(i / c), i % c, (int)oi);
                if (out[i] != want) { if (!nbad) printf("rank %d op %zu kind %d count %zu root %d ip %d: [%zu] got %g want %g\n", me, oi, o.kind, c, o.root, ip, i, out[i], want); nbad++; }
            }
            if (out[rc] != 99.f) { printf("rank %d op %zu: wrote past the end\n", me, oi); nbad++; }
            if (nbad) bad++;
        }
    });
    for (auto &t : ranks) t.join();
    printf("N=%d ring", N);
    for (int p = 0; p < N; p++) printf(" %d", RING[p]);
    printf(": %s (%zu ops)\n", bad ? "FAIL" : "ok", ops.size());
    return bad != 0;
}
