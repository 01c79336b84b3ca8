/* knob_list.h — every environment variable Tile reads, and the per-kernel compile options.
 *
 * One row per variable (the registry of src/base/knobs.c parses, checks, logs and lists
 * them; `tile env` prints this table, docs/knobs.md is generated from it):
 *
 *   X(NAME, TYPE, DEFAULT, MIN, MAX, VALUES, LIB, FLAGS, DOC)
 *     TYPE     BOOL (1/0/true/false/on/off/yes/no), INT (decimal or 0x hex), SIZE (an INT or
 *              a decimal with a k/M/G suffix: bytes), FLOAT, STR, ENUM
 *     DEFAULT  the value as a user would write it; "" when the code decides (DOC says how)
 *     MIN, MAX the accepted range of INT / SIZE / FLOAT (inclusive)
 *     VALUES   ENUM: the values, '|' between them, ',' between synonyms of one value
 *              ("none,0|warn|info,1"); NULL otherwise
 *     LIB      TILE (libtile, the tile CLI), TLINK (libtilelink), BOTH, LAUNCH (set by
 *              `tile launch` for the programs it starts), TEST (read by the test suite),
 *              FOREIGN (other software's variables that Tile reads: not checked, not warned)
 *     FLAGS    TB_KF_COMPILE: the value changes generated code or how it is compiled
 *     DOC      one line: what it does
 *
 * An empty value (NAME=) counts as unset. A value that does not parse, or lies outside the
 * range, is a warning naming the variable and the accepted values, then the default.
 *
 * Per-kernel options (TB_OPTIONS below) are the TB_KF_COMPILE knobs that a module may set
 * for itself (tile_module_set_option, `tile run/ir/emit/check --option NAME=VALUE`): the
 * environment gives their defaults; the effective values enter the compile cache keys.
 */
#ifndef TILE_BASE_KNOB_LIST_H
#define TILE_BASE_KNOB_LIST_H

#define TB_SIZE_MAX_ 4.0e18
#define TB_KNOBS(X)                                                                                                   \
    /* ---------- libtile: logging, caches, the CPU runtime ---------- */                                           \
    X(TILE_LOG, ENUM, "warn", 0, 0, "error|warn|info|debug", TILE, 0,                                                 \
      "log level of libtile and the tile CLI; lines start with tile[host:pid] LEVEL")                                 \
    X(TILE_TRACE, STR, "", 0, 0, NULL, TILE, 0, "write a Chrome trace (compiles, cache hits, copies, launches) of the process to this file") \
    X(TILE_LIBRARY, STR, "", 0, 0, NULL, TILE, 0, "Python package: the libtile.so to load (default: the one installed with the package)") \
    X(TILE_PY_FAST, BOOL, "1", 0, 0, NULL, TILE, 0,                                                                  \
      "Python package: 0: Kernel calls take the pure-Python path instead of the tile._fast C extension")            \
    X(TLINK_LIBRARY, STR, "", 0, 0, NULL, TLINK, 0, "Python package: the libtilelink.so to load (default: the one installed with the package)") \
    X(TILE_WHEEL_BUILD_DIR, STR, "build-python", 0, 0, NULL, TEST, 0,                                                \
      "setup.py: the CMake build folder the wheel is built in (one already configured is reused as it is unless "    \
      "CMAKE_ARGS is set)")                                                                                           \
    X(TILE_TEST_EXAMPLES, STR, "", 0, 0, NULL, TEST, 0, "Python tests: where the example kernels are (default: examples/)") \
    X(TILE_CACHE_DIR, STR, "", 0, 0, NULL, BOTH, 0,                                                                   \
      "directory of compiled kernels (CPU shared objects, CUDA cubins, OpenCL binaries) and of TileLink's cost "     \
      "cache; unset: $XDG_CACHE_HOME/tile, else ~/.cache/tile")                                                       \
    X(TILE_NUM_THREADS, INT, "", 0, 1024, NULL, TILE, 0,                                                              \
      "threads of the CPU backend's pool; unset or 0: the CPUs of the process's affinity mask")                      \
    X(TILE_POOL_SPIN_US, INT, "", 0, 100000, NULL, TILE, 0,                                                           \
      "microseconds idle pool threads poll for the next job before sleeping; unset: 1000 on an otherwise idle "      \
      "machine (re-read while running), else 0")                                                                      \
    X(TILE_POOL_MOVE, BOOL, "1", 0, 0, NULL, TILE, 0,                                                                 \
      "0: a pool worker sharing a CPU with the caller or a lower worker stays there (no co-location moves)")         \
    X(TILE_POOL_LOADAVG, STR, "", 0, 0, NULL, TILE, 0,                                                                \
      "testing: a file in /proc/loadavg's format that the default spin reads instead of /proc/loadavg")              \
    X(TILE_CPU_CHECKS, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                    \
      "1: the CPU backend's generated C checks every element access")                                                 \
    X(TILE_CPU_CFLAGS, STR, "", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                      \
      "extra flags for the C compiler of the CPU backend (appended to its own)")                                      \
    X(TILE_FUSE_REDUCE, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                   \
      "1: fuse a loop nest with the reduction that follows it in the generated C (opt-in: no gain shown)")           \
    X(TILE_CPU_GEMM_FALLBACK, BOOL, "0", 0, 0, NULL, TILE, 0,                                                         \
      "1: generated code calls the portable GEMM loop of the CPU runtime instead of tk_cpu_gemm (debugging)")        \
    X(TILE_CPU_ISA, STR, "auto", 0, 0, NULL, TILE, 0,                                                                 \
      "the CPU GEMM kernels' instruction set: auto, or one of tk_cpu_isa's names (amx, avx512bf16, avx512, avx2, "   \
      "generic); an unsupported one makes GEMMs fail with a message")                                                 \
    X(TILE_GEMM_KC, INT, "", 0, 1073741824, NULL, TILE, 0, "CPU GEMM K block length (unset or 0: from the caches)")   \
    X(TILE_GEMM_NC, INT, "", 0, 1073741824, NULL, TILE, 0, "CPU GEMM N block length (unset or 0: from the caches)")   \
    X(TILE_GEMM_MC, INT, "", 0, 1073741824, NULL, TILE, 0, "CPU GEMM M block length (unset or 0: from the caches)")   \
    X(TILE_GEMM_MIN_WAVES, INT, "", 0, 1073741824, NULL, TILE, 0,                                                     \
      "bf16 CPU GEMM: the fewest waves of compute tasks per thread (unset or 0: the cost model's choice)")           \
    X(TILE_GEMM_AFFINE, BOOL, "1", 0, 0, NULL, TILE, 0,                                                               \
      "0: no home regions in the bf16 CPU GEMM's parallel step (for comparisons)")                                   \
    X(TILE_GEMM_PROF, BOOL, "0", 0, 0, NULL, TILE, 0,                                                                 \
      "1: print the CPU GEMM's per-call time split at exit (for measurements)")                                      \
    X(TILE_GEMM_BSHARED, BOOL, "1", 0, 0, NULL, TILE, 0,                                                              \
      "0: the bf16 CPU GEMM packs B per task instead of once into a shared buffer (tests)")                         \
    X(TILE_GEMM_BF16, ENUM, "auto", 0, 0, "auto|off|emulate|emulate_amx", TILE, 0,                                    \
      "the bf16 x bf16 CPU GEMM kernel: auto (the CPU's), off (dequantise to f32), emulate / emulate_amx (the "       \
      "portable models of the AVX512-BF16 / AMX kernels, for tests)")                                                 \
    X(TILE_GEMM_AMX_PF, BOOL, "1", 0, 0, NULL, TILE, 0,                                                               \
      "0: the AMX kernel does not prefetch the next B chunk into L1 (for measurements)")                             \
    X(TILE_BENCH_FLUSH, BOOL, "1", 0, 0, NULL, TILE, 0,                                                               \
      "0: tile_bench on CUDA does not flush the L2 cache between timed runs")                                         \
    X(TILE_VERIFY, BOOL, "0", 0, 0, NULL, TILE, 0,                                                                    \
      "1: run the IR verifier after every TileOpt pass (always on in debug builds)")                                  \
    X(TILE_OPS_CPU_LIBRARY, BOOL, "1", 0, 0, NULL, TILE, 0,                                                           \
      "0: the operator library's gemm runs its TileLang kernel on cpu too, not the CPU GEMM library (tests)")        \
    /* ---------- libtile: TileOpt and the code generators (per-kernel options) ---------- */                      \
    X(TILE_NO_ROWFUSE, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                    \
      "1: keep row softmax / RMSNorm kernels as written (turns off the rowfuse pass; for comparisons)")              \
    X(TILE_ROWFUSE_PIPE, ENUM, "auto", 0, 0, "auto|0|1", TILE, TB_KF_COMPILE,                                         \
      "rowfuse's pipelined row loop: auto (softmax pipelined, RMSNorm not: what measured faster), 0 (none), 1 "     \
      "(every kernel)")                                                                                               \
    X(TILE_ROWFUSE_PLAIN, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                 \
      "0: leave the plain-form row softmax as written (rowfuse rewrites it by default)")                             \
    X(TILE_CPUGEMM, ENUM, "on", 0, 0, "on,1|off,0|block", TILE, TB_KF_COMPILE,                                        \
      "the cpu pipeline's cpugemm pass: on, off (every gemm per block), block (no hoisting of the packed operands)") \
    X(TILE_LAYOUT_ARCH, STR, "", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                     \
      "the opencl pipeline's layout pass plans as for this CUDA architecture (e.g. sm_90a; tests)")                   \
    X(TILE_NO_TILEGEMM, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                   \
      "1: keep tile-form blocked GEMM kernels per block (turns off the tilegemm pass; for comparisons)")             \
    X(TILE_GPU_CHECKS, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                    \
      "0: the CUDA / OpenCL code does not bounds-check element accesses (to measure without)")                       \
    X(TILE_SIMT_MEMOPT, INT, "1", 0, 2, NULL, TILE, TB_KF_COMPILE,                                                    \
      "memory-bound lowerings of the SIMT generator (warp reductions, vector copies): 0 off, 1 on, 2 also for "      \
      "running (clear=False) reductions")                                                                             \
    X(TILE_SIMT_REGFRAG, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                  \
      "0: fragments in shared memory instead of registers (needs TILE_SIMT_MEMOPT >= 1)")                            \
    X(TILE_CUDA_GEMM_TILE, STR, "", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                  \
      "gpumap's GEMM tile for plain-form contractions, BMxBNxBKxSTAGESxTHREADS (unset: per dtype)")                  \
    X(TILE_CUDA_GEMM_PRETRANSPOSE, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                        \
      "0: gpumap never transposes an 8-bit K x N B into an N x K temporary for the tensor-core lowering")           \
    X(TILE_CUDA_MMA_SYNC, INT, "-1", -1, 1, NULL, TILE, TB_KF_COMPILE,                                                \
      "the mma.sync GEMM lowering (sm80.c): -1 on sm_80..sm_89 and where wgmma declines, 1 also before wgmma on "   \
      "sm_90a, 0 never")                                                                                              \
    X(TILE_CUDA_SM90, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                     \
      "0: no sm_90a TMA + wgmma lowerings (GEMM and attention; for comparisons)")                                    \
    X(TILE_CUDA_SM90_ATTN, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE, "0: no sm_90a attention lowering")             \
    X(TILE_SM90_FP8_F32, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                 \
      "1: fp8 GEMMs with an f32 result take wgmma (per-stage f32 promotion; within ~2e-4 of exact f32 sums)")      \
    X(TILE_CUDA_PROLOGUE, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                 \
      "0: GEMM operands computed in the K loop from read-only tensors stay there (no prologue kernel)")              \
    X(TILE_SM90_TMA_STORE, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                \
      "0: the sm_90a GEMM epilogue stores directly instead of through shared memory and TMA")                        \
    X(TILE_SM90_GROUP, INT, "8", 1, 65536, NULL, TILE, TB_KF_COMPILE,                                                 \
      "the sm_90a GEMM's block rasterisation: groups of this many grid rows (1: plain order)")                       \
    X(TILE_SM90_KMERGE, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                   \
      "0: each stage of an sm_90a GEMM pipeline holds one K-loop iteration, also when block_K holds under 128 bytes") \
    X(TILE_SM90_ATTN_WS, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                  \
      "0: the sm_90a attention lowering without warp specialisation (no producer warpgroup)")                        \
    X(TILE_SM90_ATTN_FAST, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                \
      "0: no fast math in the sm_90a attention lowering (ex2.approx and fused multiply-adds in its T.Parallel)")    \
    X(TILE_SM90_ATTN_MASKSKIP, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                            \
      "0: no uniform-mask-tile versions of affine if_then_else masks in the sm_90a attention lowering")              \
    X(TILE_SM90_ATTN_OVERLAP, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                             \
      "0: the sm_90a attention lowering runs in program order (no overlapped schedule)")                             \
    X(TILE_SM90_ATTN_PINGPONG, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                            \
      "1: warpgroup ping-pong in the overlapped attention schedule (measured within noise of the default)")         \
    X(TILE_SM90_ATTN_TMA, BOOL, "1", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                 \
      "0: the sm_90a attention producer loads with cp.async instead of TMA")                                         \
    X(TILE_OPENCL_NO_FP64, BOOL, "0", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                \
      "1: generate OpenCL C as for a device without cl_khr_fp64 (tests)")                                            \
    X(TILE_OPENCL_OPTIONS, STR, "", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                  \
      "extra clBuildProgram options (e.g. -cl-opt-disable)")                                                         \
    /* ---------- libtile: devices ---------- */                                                                    \
    X(TILE_CUDA_DEVICE, INT, "0", 0, 1024, NULL, TILE, 0, "the CUDA device ordinal of the cuda target")               \
    X(TILE_CUDA_ARCH, STR, "", 0, 0, NULL, TILE, TB_KF_COMPILE,                                                       \
      "compile for this architecture (e.g. sm_80) instead of the device's; tile emit: the architecture to emit for "  \
      "(unset: the portable lowering)")                                                                               \
    X(TILE_OPENCL_DEVICE, STR, "", 0, 0, NULL, TILE, 0,                                                               \
      "the OpenCL device: PLATFORM:DEVICE indices, or a part of the device's name (unset: the first)")              \
    /* ---------- libtilelink ---------- */                                                                         \
    X(TLINK_DEBUG, ENUM, "warn", 0, 0, "none,0|warn|info,1|debug,trace,2", TLINK, 0,                                  \
      "log level of libtilelink (info: choices, bootstrap, cost model); lines start with host:pid tlink LEVEL:")     \
    X(TLINK_TIMEOUT, FLOAT, "300", 0, 1e9, NULL, TLINK, 0,                                                            \
      "seconds without progress before a blocking call fails (0: the default)")                                      \
    X(TLINK_RANK, INT, "", 0, 16777216, NULL, TLINK, 0, "explicit launch information: this process's rank")           \
    X(TLINK_SIZE, INT, "", 0, 16777216, NULL, TLINK, 0, "explicit launch information: the number of ranks")           \
    X(TLINK_LOCAL_RANK, INT, "", 0, 16777216, NULL, TLINK, 0, "explicit launch information: the rank on this host")   \
    X(TLINK_LOCAL_SIZE, INT, "", 0, 16777216, NULL, TLINK, 0, "explicit launch information: the ranks on this host")  \
    X(TILE_RANK, INT, "", 0, 16777216, NULL, TLINK, 0, "synonym of TLINK_RANK")                                       \
    X(TILE_SIZE, INT, "", 0, 16777216, NULL, TLINK, 0, "synonym of TLINK_SIZE")                                       \
    X(TILE_WORLD_SIZE, INT, "", 0, 16777216, NULL, TLINK, 0, "synonym of TLINK_SIZE")                                 \
    X(TILE_LOCAL_RANK, INT, "", 0, 16777216, NULL, TLINK, 0, "synonym of TLINK_LOCAL_RANK")                           \
    X(TILE_LOCAL_SIZE, INT, "", 0, 16777216, NULL, TLINK, 0, "synonym of TLINK_LOCAL_SIZE")                           \
    X(TLINK_STORE, STR, "", 0, 0, NULL, TLINK, 0,                                                                     \
      "the key-value store's HOST:PORT (unset: MASTER_ADDR:MASTER_PORT, else derived from the launcher)")            \
    X(TILE_STORE, STR, "", 0, 0, NULL, TLINK, 0, "synonym of TLINK_STORE")                                            \
    X(TLINK_STORE_PREFIX, STR, "tlink", 0, 0, NULL, TLINK, 0, "the store key namespace")                              \
    X(TLINK_JOB_ID, STR, "", 0, 0, NULL, TLINK, 0, "job id from which the default store port is derived")             \
    X(TLINK_HOST_ID, STR, "", 0, 0, NULL, TLINK, 0, "this process's host identity (unset: hostname + boot id)")       \
    X(TLINK_HOST_PER_NETNS, BOOL, "0", 0, 0, NULL, TLINK, 0,                                                          \
      "1: each network namespace counts as a host of its own (tile launch --netns sets it)")                        \
    X(TLINK_ALGO, STR, "", 0, 0, NULL, TLINK, 0,                                                                      \
      "force algorithms: COLL:ALGO,... or ALGO (e.g. allreduce:ring,broadcast:dbt); docs/tilelink.md")             \
    X(TLINK_TRANSPORT, ENUM, "auto", 0, 0, "auto|tcp", TLINK, 0, "tcp: TCP between all pairs, also on one host")      \
    X(TLINK_SOCKET_IFNAME, STR, "", 0, 0, NULL, TLINK, 0,                                                             \
      "the network interface (a name prefix) of the TCP listeners (unset: the store connection's)")                 \
    X(TLINK_SOCKET_NSTREAMS, INT, "2", 1, 8, NULL, TLINK, 0, "TCP connections per pair of ranks")                     \
    X(TLINK_SOCKET_CHUNK, SIZE, "128K", 4096, TB_SIZE_MAX_, NULL, TLINK, 0, "bytes per TCP send of a large message")  \
    X(TLINK_SOCKET_BUF, SIZE, "0", 0, 2147483647, NULL, TLINK, 0, "SO_SNDBUF / SO_RCVBUF of the data sockets (0: the system's)") \
    X(TLINK_SOCKET_CC, STR, "", 0, 0, NULL, TLINK, 0,                                                                 \
      "TCP congestion control of the data connections (unset: reno between processes of one machine, else the "     \
      "system's; default: the system's)")                                                                             \
    X(TLINK_SHM_CHANNEL_BYTES, SIZE, "", 4096, TB_SIZE_MAX_, NULL, TLINK, 0,                                          \
      "shared-memory ring size per pair (unset: 1M / 512K / 256K for 2 / 4 / more local ranks; same on all ranks)") \
    X(TLINK_SHM_DIRECT_SEGMENT, SIZE, "", 4096, TB_SIZE_MAX_, NULL, TLINK, 0,                                         \
      "segment of the direct all-reduce (unset: 1M up to 4 local ranks, else 512K; same on all ranks)")             \
    X(TLINK_SHM_PREFAULT, BOOL, "1", 0, 0, NULL, TLINK, 0, "0: do not populate the shm pages a rank writes first at setup") \
    X(TLINK_SHM_CMA, INT, "2", 0, 2, NULL, TLINK, 0,                                                                  \
      "single copy (process_vm_readv) for messages larger than the channel: 0 off, 1 wherever permitted, 2 where "  \
      "permitted and fast enough (40% of memcpy's rate)")                                                             \
    X(TLINK_SPIN_US, FLOAT, "", 0, 1e9, NULL, TLINK, 0,                                                               \
      "microseconds a waiting rank polls before yielding (unset: 2000, 0 when oversubscribed)")                      \
    X(TLINK_YIELD_US, FLOAT, "", 0, 1e9, NULL, TLINK, 0,                                                              \
      "microseconds a waiting rank yields before sleeping (unset: 2000, 50 when oversubscribed)")                    \
    X(TLINK_POLLS_PER_YIELD, INT, "", 1, 1073741824, NULL, TLINK, 0,                                                  \
      "polls between yields (unset: 16, 1 when oversubscribed)")                                                     \
    X(TLINK_COLOC_MOVE, BOOL, "1", 0, 0, NULL, TLINK, 0,                                                              \
      "0: never move a rank off a CPU it keeps sharing with a peer it waits for")                                   \
    X(TLINK_CORES, INT, "0", 0, 1048576, NULL, TLINK, 0,                                                              \
      "usable cores per host (rank 0's) instead of the ranks' affinity masks (0: from the masks)")                   \
    X(TLINK_COST_FILE, STR, "", 0, 0, NULL, TLINK, 0, "cost model parameters from this file instead of measuring")    \
    X(TLINK_COST_MEASURE, BOOL, "1", 0, 0, NULL, TLINK, 0,                                                            \
      "0: no start-up measurement (cost model defaults or cache; also no oversubscription measurement)")            \
    X(TLINK_COST_CACHE_MAX_AGE, FLOAT, "86400", 0, 1e12, NULL, TLINK, 0, "seconds a cached cost measurement is used") \
    X(TLINK_HEARTBEAT_INTERVAL, FLOAT, "0.1", 0, 3600, NULL, TLINK, 0, "heartbeat period in seconds (at least 0.005)") \
    X(TLINK_HEARTBEAT_TIMEOUT, FLOAT, "1.5", 0, 1e9, NULL, TLINK, 0,                                                  \
      "seconds of silence after which a peer is declared failed (0: off; at least 3 periods)")                       \
    X(TLINK_SECRET, STR, "", 0, 0, NULL, TLINK, 0, "the job secret: every store and transport connection is authenticated with it") \
    X(TLINK_SECRET_FILE, STR, "", 0, 0, NULL, TLINK, 0, "a file (mode 600) holding the job secret") \
    X(TLINK_STATUS, BOOL, "1", 0, 0, NULL, TLINK, 0, "0: ranks do not answer tile link-status / tlink_comm_status") \
    X(TLINK_SOFT_TIMEOUT, FLOAT, "", 0, 1e9, NULL, TLINK, 0, "seconds after which a waiting collective logs the job's status report (default: a fifth of TLINK_TIMEOUT)") \
    X(TLINK_MOE_CACHE_MB, INT, "", 0, 1048576, NULL, TLINK, 0,                                                        \
      "MiB of MoE dispatch/combine buffers kept between calls (default: the most one process had allocated at once)") \
    X(TLINK_MOE_TRIALS, INT, "2", 0, 1000, NULL, TLINK, 0,                                                            \
      "MoE algo auto across hosts: timed trial calls of each exchange before the faster is kept (0: hierarchical)")  \
    X(TLINK_FAULT_HB_DROP, FLOAT, "0", 0, 1, NULL, TLINK, 0, "testing: probability of not sending a heartbeat")       \
    X(TLINK_FAULT_SYNC_OOM, INT, "-1", -1, 16777216, NULL, TLINK, 0,                                                  \
      "testing: this rank's start-up synchronisation measurement fails to allocate (-1: none)")                      \
    X(TLINK_CUDA_LIBRARY, STR, "", 0, 0, NULL, TLINK, 0,                                                              \
      "testing: the CUDA driver library topology detection opens (unset: libcuda.so.1)")                             \
    X(TLINK_COMPRESS_SCALAR, BOOL, "0", 0, 0, NULL, TLINK, 0, "1: the compression codecs' portable path (tests, comparisons)") \
    X(TLINK_COMPRESS_PIPELINE_MIN, SIZE, "1M", 0, TB_SIZE_MAX_, NULL, TLINK, 0,                                       \
      "bytes from which the compressed all-reduce stages its buffer (tests set 0)")                                  \
    X(TLINK_GPU_DEVICE, INT, "-1", -1, 1024, NULL, TLINK, 0, "the CUDA ordinal of the device collectives (-1: local rank % GPUs)") \
    X(TLINK_GPU_BLOCKS, INT, "128", 1, 1024, NULL, TLINK, 0, "most blocks of a device collective (the buffer layout)") \
    X(TLINK_GPU_THREADS, INT, "512", 32, 512, NULL, TLINK, 0, "threads per block (a multiple of 32)")                 \
    X(TLINK_GPU_BLOCKS_SMALL, INT, "64", 1, 1024, NULL, TLINK, 0, "blocks launched below TLINK_GPU_BIG bytes")        \
    X(TLINK_GPU_BIG, SIZE, "64M", 1, TB_SIZE_MAX_, NULL, TLINK, 0, "bytes from which all blocks are launched (same on all ranks)") \
    X(TLINK_GPU_FULL_TILES, BOOL, "0", 0, 0, NULL, TLINK, 0, "1: tiles are whole slots even when that leaves blocks idle") \
    X(TLINK_GPU_SLOT, SIZE, "256K", 1, TB_SIZE_MAX_, NULL, TLINK, 0, "SM path slot bytes (same on all ranks)")        \
    X(TLINK_GPU_CE_CHUNK, SIZE, "16M", 1, TB_SIZE_MAX_, NULL, TLINK, 0, "copy-engine path chunk bytes (same on all ranks)") \
    X(TLINK_GPU_ALGO, STR, "auto", 0, 0, NULL, TLINK, 0,                                                              \
      "force a device algorithm: oneshot, twoshot, ce, ring (allreduce); direct, ring; direct, scatter, chain "      \
      "(broadcast)")                                                                                                  \
    X(TLINK_GPU_ALPHA_US, FLOAT, "8", 0, 1e9, NULL, TLINK, 0, "device cost model: launch latency in microseconds")     \
    X(TLINK_GPU_LINK_GBPS, FLOAT, "0", 0, 1e9, NULL, TLINK, 0, "device cost model: GB/s of every link (0: from the topology)") \
    X(TLINK_GPU_MEM_GBPS, FLOAT, "3000", 0, 1e9, NULL, TLINK, 0, "device cost model: memory GB/s")                     \
    X(TLINK_GPU_CE, BOOL, "1", 0, 0, NULL, TLINK, 0, "0: no copy-engine path")                                        \
    /* ---------- set by tile launch for the programs it starts ---------- */                                        \
    X(TLINK_LAUNCH_HOST, STR, "", 0, 0, NULL, LAUNCH, 0, "the host's name from --hosts")                               \
    X(TLINK_RESTART_COUNT, INT, "0", 0, 1073741824, NULL, LAUNCH, 0, "restarts of the job so far (elastic launch)")   \
    X(TLINK_MAX_RESTARTS, INT, "0", 0, 1073741824, NULL, LAUNCH, 0, "restarts the launcher allows")                   \
    /* ---------- read by the test suite ---------- */                                                              \
    X(TILE_CPU_TEST_CACHE, STR, "", 0, 0, NULL, TEST, 0, "tests/cpu: the cache directory of the cache tests")         \
    X(TILE_TEST_INORDER, BOOL, "0", 0, 0, NULL, TEST, 0, "tests/cuda: the attention kernel must be in program order") \
    X(TILE_MUTATE_SHOW, STR, "", 0, 0, NULL, TEST, 0, "tests/interp: print the mutants of the mutation test")         \
    /* ---------- other software's variables that Tile reads ---------- */                                          \
    X(CC, STR, "cc", 0, 0, NULL, FOREIGN, TB_KF_COMPILE, "the C compiler of the CPU backend (with its arguments)")    \
    X(PATH, STR, "", 0, 0, NULL, FOREIGN, 0, "where the CPU backend looks for $CC")                                   \
    X(HOME, STR, "", 0, 0, NULL, FOREIGN, 0, "the cache directory's last fallback: ~/.cache/tile")                    \
    X(XDG_CACHE_HOME, STR, "", 0, 0, NULL, FOREIGN, 0, "the cache directory: $XDG_CACHE_HOME/tile")                   \
    X(RANK, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the rank")                                                    \
    X(WORLD_SIZE, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the number of ranks")                                   \
    X(LOCAL_RANK, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the rank on this host")                                 \
    X(LOCAL_WORLD_SIZE, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the ranks on this host")                          \
    X(MASTER_ADDR, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the store's host")                                     \
    X(MASTER_PORT, STR, "", 0, 0, NULL, FOREIGN, 0, "torchrun: the store's port")                                     \
    X(OMPI_COMM_WORLD_RANK, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the rank")                                    \
    X(OMPI_COMM_WORLD_SIZE, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the number of ranks")                         \
    X(OMPI_COMM_WORLD_LOCAL_RANK, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the rank on this host")                 \
    X(OMPI_COMM_WORLD_LOCAL_SIZE, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the ranks on this host")                \
    X(OMPI_MCA_orte_hnp_uri, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the launcher's address (the store's host)")  \
    X(OMPI_MCA_ess_base_jobid, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the job id (the default store port)")      \
    X(OMPI_MCA_orte_ess_jobid, STR, "", 0, 0, NULL, FOREIGN, 0, "Open MPI: the job id (older versions)")              \
    X(PMI_RANK, STR, "", 0, 0, NULL, FOREIGN, 0, "MPICH / Hydra: the rank")                                           \
    X(PMI_SIZE, STR, "", 0, 0, NULL, FOREIGN, 0, "MPICH / Hydra: the number of ranks")                                \
    X(PMI_KVSNAME, STR, "", 0, 0, NULL, FOREIGN, 0, "MPICH / Hydra: the job id")                                      \
    X(PMIX_NAMESPACE, STR, "", 0, 0, NULL, FOREIGN, 0, "PMIx: the job id")                                            \
    X(MPI_LOCALRANKID, STR, "", 0, 0, NULL, FOREIGN, 0, "MPICH / Hydra: the rank on this host")                       \
    X(MPI_LOCALNRANKS, STR, "", 0, 0, NULL, FOREIGN, 0, "MPICH / Hydra: the ranks on this host")                      \
    X(SLURM_PROCID, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the rank")                                               \
    X(SLURM_NTASKS, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the number of ranks")                                    \
    X(SLURM_NPROCS, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the number of ranks (older versions)")                   \
    X(SLURM_LOCALID, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the rank on this host")                                 \
    X(SLURM_NTASKS_PER_NODE, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the ranks on this host")                        \
    X(SLURM_JOB_ID, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the job id")                                             \
    X(SLURM_STEP_ID, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the job step")                                          \
    X(SLURM_LAUNCH_NODE_IPADDR, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the launching node (the store's host)")      \
    X(SLURM_JOB_NODELIST, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the job's nodes (the first hosts the store)")      \
    X(SLURM_NODELIST, STR, "", 0, 0, NULL, FOREIGN, 0, "Slurm: the job's nodes (older versions)")

/* The per-kernel compile options: X(NAME, KNOB, DOC). NAME is what tile_module_set_option
 * and --option take; KNOB gives the type, the range and the default (from the environment);
 * DOC says where TileLang's pass_configs keys map, if they do. */
#define TB_OPTIONS(X)                                                                          \
    X(cpu_checks, TILE_CPU_CHECKS, "")                                                         \
    X(cpu_cflags, TILE_CPU_CFLAGS, "")                                                         \
    X(fuse_reduce, TILE_FUSE_REDUCE, "")                                                       \
    X(no_rowfuse, TILE_NO_ROWFUSE, "")                                                         \
    X(rowfuse_pipe, TILE_ROWFUSE_PIPE, "")                                                     \
    X(rowfuse_plain, TILE_ROWFUSE_PLAIN, "")                                                   \
    X(cpugemm, TILE_CPUGEMM, "")                                                               \
    X(layout_arch, TILE_LAYOUT_ARCH, "")                                                       \
    X(no_tilegemm, TILE_NO_TILEGEMM, "")                                                       \
    X(gpu_checks, TILE_GPU_CHECKS, "")                                                         \
    X(simt_memopt, TILE_SIMT_MEMOPT, "")                                                       \
    X(simt_regfrag, TILE_SIMT_REGFRAG, "")                                                     \
    X(cuda_gemm_tile, TILE_CUDA_GEMM_TILE, "")                                                 \
    X(cuda_gemm_pretranspose, TILE_CUDA_GEMM_PRETRANSPOSE, "")                                 \
    X(cuda_mma_sync, TILE_CUDA_MMA_SYNC, "")                                                   \
    X(cuda_sm90, TILE_CUDA_SM90, "tl.disable_wgmma=True sets it to 0")                                                           \
    X(cuda_sm90_attn, TILE_CUDA_SM90_ATTN, "")                                                 \
    X(cuda_prologue, TILE_CUDA_PROLOGUE, "")                                                   \
    X(sm90_fp8_f32, TILE_SM90_FP8_F32, "")                                                     \
    X(sm90_tma_store, TILE_SM90_TMA_STORE, "tl.disable_tma_lower=True sets it to 0")              \
    X(sm90_group, TILE_SM90_GROUP, "")                                                         \
    X(sm90_kmerge, TILE_SM90_KMERGE, "")                                                       \
    X(sm90_attn_ws, TILE_SM90_ATTN_WS, "tl.disable_warp_specialized=True sets it to 0")           \
    X(fast_math, TILE_SM90_ATTN_FAST, "tl.enable_fast_math sets it; tl.disable_fast_math=True sets 0")                         \
    X(sm90_attn_maskskip, TILE_SM90_ATTN_MASKSKIP, "")                                         \
    X(sm90_attn_overlap, TILE_SM90_ATTN_OVERLAP, "")                                           \
    X(sm90_attn_pingpong, TILE_SM90_ATTN_PINGPONG, "")                                         \
    X(sm90_attn_tma, TILE_SM90_ATTN_TMA, "tl.disable_tma_lower=True sets it to 0")                \
    X(opencl_no_fp64, TILE_OPENCL_NO_FP64, "")                                                 \
    X(opencl_options, TILE_OPENCL_OPTIONS, "")

#endif
