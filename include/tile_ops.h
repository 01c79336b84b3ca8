/* tile_ops.h — TileKernels: the operator library of libtile, written in TileLang.
 *
 * A worked example: RMSNorm with a fused residual add, then SiLU, on the CPU.
 *
 *     #include <tile_ops.h>
 *
 *     float x[4 * 512], r[4 * 512], w[512];                  // ... fill them ...
 *     tile_tensor X = {x, TILE_DT_F32, 2, {4, 512}};
 *     tile_tensor R = {r, TILE_DT_F32, 2, {4, 512}};
 *     tile_tensor W = {w, TILE_DT_F32, 1, {512}};
 *     tile_tensor Y = {0}, H = {0};                         // data == NULL: allocated for us
 *     char *err = NULL;
 *     // H = X + R (the new residual stream), Y = H / rms(H) * W
 *     if (tile_op_rms_norm("cpu", &X, &W, &R, 1e-6, &Y, &H, &err) != TILE_OK) {
 *         fprintf(stderr, "%s\n", err);     // e.g. "rms_norm: weight: shape [500] does not
 *         tile_free(err);                   //  match the last dimension of x (512)"
 *         return 1;
 *     }
 *     tile_op_unary("cpu", "silu", &Y, &Y, &err);           // in place: out may be the input
 *     tile_tensor_free(&Y);
 *     tile_tensor_free(&H);
 *
 * Conventions (every tile_op_* function):
 *   - target: "interp", "cpu", "opencl", "cuda", or "auto"/NULL (tile_auto_target()).
 *   - Tensors are host tile_tensors (tile.h), or on the device tile_op_set_device chose for
 *     the thread: row-major and contiguous; rank 0 is a scalar tensor (one element). fp4
 *     operands are not accepted here.
 *   - Outputs: a tile_tensor whose data is NULL is allocated (shape and dtype filled in, free
 *     it with tile_tensor_free); one with data must already have the result's shape and
 *     dtype (and may be the same memory as an elementwise operator's input).
 *   - Return TILE_OK, or a status with *error (free with tile_free) that starts with the
 *     operator's name and names the argument: "add: b: shape [3, 4] cannot be broadcast to
 *     [5, 3, 7] (dimension 2: 4 vs 7)". Nothing aborts on bad input.
 *   - Each operator's TileLang kernel is compiled on first use for its (shape class, dtypes,
 *     target) and cached for the life of the process; later calls only run it. A shape class
 *     is what the kernel is specialised on: the rank after collapsing, which dimensions
 *     broadcast, a power-of-two bucket of a row length; never every shape.
 *   - Semantics follow PyTorch (the function named in each operator's registry entry,
 *     tile_op_info.reference), including its type promotion for the elementwise families.
 *   - Calls may come from several threads; the first use of a kernel compiles it once.
 *
 * docs/ops.md lists every operator, its dtypes and targets, and the Core ATen ops it covers.
 */
#ifndef TILE_OPS_H
#define TILE_OPS_H

#include <stdint.h>

#include "tile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------- the registry ---------- */
enum {
    TILE_OP_TARGET_INTERP = 1u << 0,
    TILE_OP_TARGET_CPU = 1u << 1,
    TILE_OP_TARGET_OPENCL = 1u << 2,
    TILE_OP_TARGET_CUDA = 1u << 3,
    /* on cpu the operator runs through the CPU GEMM library, not its TileLang kernel */
    TILE_OP_TARGET_CPU_LIBRARY = 1u << 8
};

typedef struct tile_op_info {
    const char *name;       /* "rms_norm", "add", "sum", ... (the names the generic calls take) */
    const char *family;     /* "unary", "binary", "reduce", "norm", ... */
    const char *reference;  /* the PyTorch function whose semantics it follows */
    const char *aten;       /* the Core ATen ops it implements, space-separated ("add.Tensor add.Scalar") */
    const char *summary;
    const char *source;     /* its TileLang source in the repository ("src/ops/gen/unary.tl") */
    const char *factory;    /* the kernel factory in it */
    uint32_t dtypes;        /* bit d set: tile_dtype d is accepted for its data operands */
    uint32_t targets;       /* TILE_OP_TARGET_* bits */
} tile_op_info;

TILE_API int tile_op_count(void);
TILE_API const tile_op_info *tile_op_at(int i);               /* NULL if out of range */
TILE_API const tile_op_info *tile_op_lookup(const char *name); /* NULL if unknown */

typedef struct tile_op_cache_stats {
    int64_t kernels;    /* compiled kernels held */
    int64_t hits;       /* calls that found their kernel compiled */
    int64_t misses;     /* calls that compiled it */
    double compile_s;   /* seconds spent compiling (TileLang to IR; the backend's first run is in its call) */
} tile_op_cache_stats;
TILE_API void tile_op_cache_get_stats(tile_op_cache_stats *out);
/* Frees every cached kernel (no call may be running). */
TILE_API void tile_op_cache_clear(void);

/* ---------- where the data lives: the calling thread's operator device ----------
 * By default tile_tensor.data is host memory, and targets other than cpu copy it in and out
 * around each kernel. tile_op_set_device(dev, stream) makes every later tile_op_* call on
 * this thread take and return tensors on dev instead:
 *   - data are device pointers (tile_buffer_alloc's, or another allocator's such as
 *     PyTorch's) on dev; kernels are enqueued on stream, asynchronously, with no copies;
 *   - outputs with data == NULL are allocated with tile_buffer_alloc on dev (free them with
 *     tile_op_tensor_free, or tile_buffer_free, under the same setting), and so are
 *     temporaries (freed in the call; the pool reuses them only in stream order);
 *   - target NULL / "auto" is the device's target; another one is an error naming target;
 *   - entries the operator checks on the host (indices of embedding, index_select, gather,
 *     scatter, targets of cross_entropy, positions of rope) are copied to the host first, so
 *     those checks stay exact; such calls wait for the stream.
 * dev may be cpu (then data are host memory, every target runs, outputs come from the cpu
 * pool; stream may be NULL) or cuda (stream required: tile_stream_wrap(dev, NULL) is the
 * default stream). OpenCL is refused: its buffers are handles, and the operators address
 * parts of a tensor by pointer. tile_op_reset_device() returns the thread to host tensors. */
TILE_API tile_status tile_op_set_device(tile_device dev, tile_stream *stream, char **error);
TILE_API void tile_op_reset_device(void);
/* 1 with *dev and *stream (either may be NULL) set when the thread has an operator device, else 0 */
TILE_API int tile_op_get_device(tile_device *dev, tile_stream **stream);
/* Frees an output a tile_op_* call allocated under the thread's current setting; data = NULL. */
TILE_API void tile_op_tensor_free(tile_tensor *t);

/* A Python-style scalar: its kind (TILE_DT_BOOL, TILE_DT_I64 or TILE_DT_F64) takes part in
 * type promotion as a Python bool / int / float does in PyTorch ("wrapped number"). */
typedef struct tile_op_scalar {
    double f;
    int64_t i;
    tile_dtype kind;
} tile_op_scalar;
TILE_API tile_op_scalar tile_op_float(double v);
TILE_API tile_op_scalar tile_op_int(int64_t v);
TILE_API tile_op_scalar tile_op_bool(int v);

/* ---------- elementwise ---------- */
/* out = op(x): "abs" "neg" "exp" "log" "sqrt" "sin" ... "relu" "silu" "gelu" "gelu_tanh" ...
 * (docs/ops.md, family unary). Integer inputs of float functions give float32 (torch.exp). */
TILE_API tile_status tile_op_unary(const char *target, const char *op, const tile_tensor *x, tile_tensor *out, char **error);
/* The same with scalar arguments: leaky_relu(slope), hardtanh(min, max), elu(alpha, scale,
 * input_scale), softplus(beta, threshold). */
TILE_API tile_status tile_op_unary_args(const char *target, const char *op, const tile_tensor *x, const double *args, int nargs,
                                        tile_tensor *out, char **error);
/* out = op(a, b) with broadcasting and type promotion: "add" "sub" "mul" "div" "div_floor"
 * "div_trunc" "remainder" "fmod" "pow" "maximum" "minimum" "atan2" "bitwise_and" ...
 * "logical_and" ... "eq" "ne" "lt" "le" "gt" "ge" (comparisons give bool). */
TILE_API tile_status tile_op_binary(const char *target, const char *op, const tile_tensor *a, const tile_tensor *b, tile_tensor *out,
                                    char **error);
/* out = op(a, s), or op(s, a) with scalar_first (torch.pow(2, x), torch.remainder(3, x)). */
TILE_API tile_status tile_op_binary_scalar(const char *target, const char *op, const tile_tensor *a, tile_op_scalar s, int scalar_first,
                                           tile_tensor *out, char **error);
/* out = a + alpha * b / a - alpha * b (torch.add / torch.sub with alpha) */
TILE_API tile_status tile_op_add(const char *target, const tile_tensor *a, const tile_tensor *b, tile_op_scalar alpha, tile_tensor *out,
                                 char **error);
TILE_API tile_status tile_op_sub(const char *target, const tile_tensor *a, const tile_tensor *b, tile_op_scalar alpha, tile_tensor *out,
                                 char **error);
/* out = cond ? a : b (torch.where; cond is bool), broadcasting all three */
TILE_API tile_status tile_op_where(const char *target, const tile_tensor *cond, const tile_tensor *a, const tile_tensor *b, tile_tensor *out,
                                   char **error);
/* torch.clamp with scalar bounds (NULL: none; at least one) / tensor bounds (NULL: none) */
TILE_API tile_status tile_op_clamp(const char *target, const tile_tensor *x, const tile_op_scalar *min, const tile_op_scalar *max,
                                   tile_tensor *out, char **error);
TILE_API tile_status tile_op_clamp_tensor(const char *target, const tile_tensor *x, const tile_tensor *min, const tile_tensor *max,
                                          tile_tensor *out, char **error);
/* out = x converted to dtype (round to nearest even, fp8 saturating; float to integer
 * truncates; to bool: x != 0). Also fp8 in and out. */
TILE_API tile_status tile_op_cast(const char *target, const tile_tensor *x, tile_dtype dtype, tile_tensor *out, char **error);
/* out = a copy of x (torch.clone) */
TILE_API tile_status tile_op_copy(const char *target, const tile_tensor *x, tile_tensor *out, char **error);
/* out (shape and dtype given by the caller, data may be NULL) filled with value */
TILE_API tile_status tile_op_fill(const char *target, tile_op_scalar value, tile_tensor *out, char **error);
/* out = [start, start + step, ...) below end (torch.arange); dtype TILE_DT_INVALID: int64
 * if all three are integers, else float32 */
TILE_API tile_status tile_op_arange(const char *target, tile_op_scalar start, tile_op_scalar end, tile_op_scalar step, tile_dtype dtype,
                                    tile_tensor *out, char **error);

/* ---------- shapes and data movement ---------- */
/* a copy of x with another shape of the same size; one -1 entry is inferred (torch.reshape;
 * view, squeeze and unsqueeze are this with the obvious shape) */
TILE_API tile_status tile_op_reshape(const char *target, const tile_tensor *x, const int64_t *shape, int rank, tile_tensor *out,
                                     char **error);
TILE_API tile_status tile_op_permute(const char *target, const tile_tensor *x, const int *perm, tile_tensor *out, char **error);
TILE_API tile_status tile_op_transpose(const char *target, const tile_tensor *x, int dim0, int dim1, tile_tensor *out, char **error);
/* broadcast x to shape (-1 keeps a dimension; new leading dimensions allowed) */
TILE_API tile_status tile_op_expand(const char *target, const tile_tensor *x, const int64_t *shape, int rank, tile_tensor *out,
                                    char **error);
/* x[..., start:end:step, ...] along dim (Python slice rules; end clipped; step >= 1) */
TILE_API tile_status tile_op_slice(const char *target, const tile_tensor *x, int dim, int64_t start, int64_t end, int64_t step,
                                   tile_tensor *out, char **error);
/* x[..., index, ...] along dim (rank - 1 result; negative index counts from the end) */
TILE_API tile_status tile_op_select(const char *target, const tile_tensor *x, int dim, int64_t index, tile_tensor *out, char **error);
TILE_API tile_status tile_op_flip(const char *target, const tile_tensor *x, const int *dims, int ndims, tile_tensor *out, char **error);
TILE_API tile_status tile_op_repeat(const char *target, const tile_tensor *x, const int64_t *repeats, int nrepeats, tile_tensor *out,
                                    char **error);
TILE_API tile_status tile_op_diagonal(const char *target, const tile_tensor *x, int64_t offset, int dim1, int dim2, tile_tensor *out,
                                      char **error);
/* out[j] = x.flat[offset + sum_d j_d * strides[d]] for j in shape (torch.as_strided; every
 * element read must be inside x) */
TILE_API tile_status tile_op_as_strided(const char *target, const tile_tensor *x, const int64_t *shape, const int64_t *strides, int rank,
                                        int64_t offset, tile_tensor *out, char **error);
TILE_API tile_status tile_op_cat(const char *target, const tile_tensor *xs, int n, int dim, tile_tensor *out, char **error);
TILE_API tile_status tile_op_stack(const char *target, const tile_tensor *xs, int n, int dim, tile_tensor *out, char **error);
/* outs[i] = the i-th piece of sizes[i] along dim (sum of sizes = x's size there) */
TILE_API tile_status tile_op_split(const char *target, const tile_tensor *x, const int64_t *sizes, int n, int dim, tile_tensor *outs,
                                   char **error);
/* constant padding, torch.nn.functional.pad order: (last_lo, last_hi, prev_lo, prev_hi, ...);
 * negative amounts crop */
TILE_API tile_status tile_op_pad(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_op_scalar value,
                                 tile_tensor *out, char **error);
/* reflection / replication padding of the last npad/2 dims (same order as tile_op_pad;
 * amounts >= 0, reflection needs each below the size: torch's reflection_pad / replication_pad) */
TILE_API tile_status tile_op_pad_reflect(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_tensor *out, char **error);
TILE_API tile_status tile_op_pad_replicate(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_tensor *out, char **error);
/* out = x with x[..., start:end:step, ...] (select: x[..., index, ...]) replaced by src */
TILE_API tile_status tile_op_slice_scatter(const char *target, const tile_tensor *x, const tile_tensor *src, int dim, int64_t start,
                                           int64_t end, int64_t step, tile_tensor *out, char **error);
TILE_API tile_status tile_op_select_scatter(const char *target, const tile_tensor *x, const tile_tensor *src, int dim, int64_t index,
                                            tile_tensor *out, char **error);
/* index is int32/int64, every entry in [-size, size) of x's dim */
TILE_API tile_status tile_op_index_select(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, tile_tensor *out,
                                          char **error);
TILE_API tile_status tile_op_gather(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, tile_tensor *out,
                                    char **error);
/* out = x with src scattered along dim at index (reduce NULL/"none": assign, the last of
 * duplicates wins; "add": scatter_add) */
TILE_API tile_status tile_op_scatter(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, const tile_tensor *src,
                                     const char *reduce, tile_tensor *out, char **error);
/* out[..., :] = weight[indices[...], :] (torch.nn.functional.embedding) */
TILE_API tile_status tile_op_embedding(const char *target, const tile_tensor *weight, const tile_tensor *indices, tile_tensor *out,
                                       char **error);

/* out [num_weights, D] = the gradient of embedding's weight given grad [..., D] of its output:
 * grad rows added up per index in f32 (f64 for f64), none for padding_idx (-1: no padding) */
TILE_API tile_status tile_op_embedding_backward(const char *target, const tile_tensor *grad, const tile_tensor *indices, int64_t num_weights,
                                                int64_t padding_idx, tile_tensor *out, char **error);

/* ---------- reductions and scans ---------- */
/* op: "sum" "prod" "mean" "amax" "amin" "any" "all" over dims (ndims = 0: every dim);
 * sum/prod of integers and bool give int64, any/all bool, mean needs floats */
TILE_API tile_status tile_op_reduce(const char *target, const char *op, const tile_tensor *x, const int *dims, int ndims, int keepdim,
                                    tile_tensor *out, char **error);
/* op "var" / "std" with Bessel's correction `correction` (torch.var(correction=...)) */
TILE_API tile_status tile_op_var(const char *target, const char *op, const tile_tensor *x, const int *dims, int ndims, double correction,
                                 int keepdim, tile_tensor *out, char **error);
#define TILE_OP_ALL_DIMS (-1000)
/* op "argmax" / "argmin" along dim (TILE_OP_ALL_DIMS: of the flattened tensor): int64 */
TILE_API tile_status tile_op_argmax(const char *target, const char *op, const tile_tensor *x, int dim, int keepdim, tile_tensor *out,
                                    char **error);
/* op "max" / "min" along dim: values and (int64) indices, torch.max(x, dim) */
TILE_API tile_status tile_op_max_dim(const char *target, const char *op, const tile_tensor *x, int dim, int keepdim, tile_tensor *values,
                                     tile_tensor *indices, char **error);
/* op "cumsum" / "cumprod" along dim (integers and bool give int64) */
TILE_API tile_status tile_op_cumsum(const char *target, const char *op, const tile_tensor *x, int dim, tile_tensor *out, char **error);

/* ---------- neural-network operators ---------- */
/* y = h / sqrt(mean(h^2, last axis) + eps) * weight with h = x (+ residual); residual_out
 * (may be NULL; needs residual) receives h. weight: [N] for x [..., N]. */
TILE_API tile_status tile_op_rms_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *residual,
                                      double eps, tile_tensor *y, tile_tensor *residual_out, char **error);
/* y = (h - mean) * rstd * weight + bias over the last axis, h = x (+ residual); weight and
 * bias may be NULL; mean and rstd (float32 [...], may be NULL) receive the statistics
 * (torch.ops.aten.native_layer_norm's second and third outputs). */
TILE_API tile_status tile_op_layer_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *bias,
                                        const tile_tensor *residual, double eps, tile_tensor *y, tile_tensor *residual_out,
                                        tile_tensor *mean, tile_tensor *rstd, char **error);
/* BatchNorm of x [N, C, ...] over every dim but 1: training: the batch's mean and biased
 * variance (save_mean / save_rstd, float32 [C], may be NULL, receive them and rstd); else
 * running_mean / running_var. weight, bias (and the running stats when training) may be NULL.
 * The running statistics are not updated (torch's functional _native_batch_norm_legit_functional
 * returns them; here the caller updates them from save_mean / the variance). */
TILE_API tile_status tile_op_batch_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *bias,
                                        const tile_tensor *running_mean, const tile_tensor *running_var, int training, double eps, tile_tensor *out,
                                        tile_tensor *save_mean, tile_tensor *save_rstd, char **error);
/* softmax / log_softmax along dim (any dim; the last is the fast one) */
TILE_API tile_status tile_op_softmax(const char *target, const tile_tensor *x, int dim, tile_tensor *out, char **error);
TILE_API tile_status tile_op_log_softmax(const char *target, const tile_tensor *x, int dim, tile_tensor *out, char **error);
/* Gated activations: op "swiglu" (silu(gate) * up), "geglu" (gelu(gate) * up) or
 * "geglu_tanh". up == NULL: gate holds [gate | up] along its last axis (size 2N). */
TILE_API tile_status tile_op_glu(const char *target, const char *op, const tile_tensor *gate, const tile_tensor *up, tile_tensor *out,
                                 char **error);
/* Rotary embedding of x [T, H, D] (or [T, D]) with float32 tables cos, sin [P, D/2]: row
 * positions[t] of the tables (int32/int64 [T]; NULL: row t). interleaved: pairs (2i, 2i+1)
 * (GPT-J); else (i, i + D/2) (GPT-NeoX / Llama "rotate_half"). */
TILE_API tile_status tile_op_rope(const char *target, const tile_tensor *x, const tile_tensor *cos, const tile_tensor *sin,
                                  const tile_tensor *positions, int interleaved, tile_tensor *out, char **error);
/* Cross-entropy of logits [N, V] against class indices targets [N] (int32/int64), computed
 * in chunks of the vocabulary (no [N, V] buffer). reduction "none" (out: float32 [N]),
 * "mean" (over the targets != ignore_index) or "sum" (out: float32 scalar). lse (may be
 * NULL): float32 [N], log-sum-exp of each row, for the backward. */
TILE_API tile_status tile_op_cross_entropy(const char *target, const tile_tensor *logits, const tile_tensor *targets, int64_t ignore_index,
                                           const char *reduction, tile_tensor *out, tile_tensor *lse, char **error);
/* dlogits = d loss / d logits for the loss above given d out (grad: float32 [N] for
 * "none", a scalar otherwise) and the lse it returned; dlogits has logits' dtype. */
TILE_API tile_status tile_op_cross_entropy_backward(const char *target, const tile_tensor *logits, const tile_tensor *targets,
                                                    const tile_tensor *lse, const tile_tensor *grad, int64_t ignore_index,
                                                    const char *reduction, tile_tensor *dlogits, char **error);
/* fp8 quantisation of x [M, N] (f32/f16/bf16) to dtype (float8_e4m3 / float8_e5m2):
 * block 0: one scale per row (per token), block 128: one per 1x128 block; scale (float32
 * [M] or [M, ceil(N/128)]) = amax / fp8 max (1 where amax is 0), q = x / scale saturated. */
TILE_API tile_status tile_op_quantize_fp8(const char *target, const tile_tensor *x, tile_dtype dtype, int block, tile_tensor *q,
                                          tile_tensor *scale, char **error);
/* out (dtype f32/f16/bf16) = q * scale, the inverse of the above */
TILE_API tile_status tile_op_dequantize_fp8(const char *target, const tile_tensor *q, const tile_tensor *scale, int block, tile_dtype dtype,
                                            tile_tensor *out, char **error);

/* Random numbers, counter-based: element k depends on (seed, k) alone, so every target gives
 * the same bits. out's shape and dtype (a float) are given by the caller (data may be NULL).
 * rand: uniform in [0, 1) on a 2^-24 grid; randn: standard normal (Box-Muller). */
TILE_API tile_status tile_op_rand(const char *target, int64_t seed, tile_tensor *out, char **error);
TILE_API tile_status tile_op_randn(const char *target, int64_t seed, tile_tensor *out, char **error);
/* out = x * mask / (1 - p), mask[k] = (rand(seed)[k] >= p) (bool, may be NULL):
 * torch.ops.aten.native_dropout in training mode */
TILE_API tile_status tile_op_dropout(const char *target, const tile_tensor *x, double p, int64_t seed, tile_tensor *out, tile_tensor *mask,
                                     char **error);

/* ---------- attention ---------- */
/* The options of the attention operators; NULL or all zero: torch's defaults. */
typedef struct tile_op_attn_opts {
    int is_causal;              /* causal mask (dense: torch's top-left alignment, key j visible to
                                 * query i when j <= i; varlen: flash_attn's bottom-right, j <= i +
                                 * Skv - Sq); decode: the query is the last position already */
    double scale;               /* the logits' scale; 0: 1 / sqrt(head_dim) */
    int64_t window;             /* sliding window: a query sees its `window` most recent keys, itself
                                 * included (flash_attn's window_size[0] = window - 1); 0: none */
    double softcap;             /* logits -> softcap * tanh(logits / softcap) (Gemma 2); 0: none */
    const tile_tensor *sinks;   /* [heads] float32 or q's dtype: a learned logit per query head that
                                 * joins the softmax's denominator only (gpt-oss); NULL: none */
} tile_op_attn_opts;
/* out [B, Hq, Sq, D] = softmax(mask(scale * q @ k^T)) @ v (torch.nn.functional.
 * scaled_dot_product_attention), q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D] with Hkv dividing
 * Hq (MHA, GQA, MQA: query head h reads KV head h / (Hq / Hkv)); f16/bf16/f32, the softmax
 * online over key blocks in f32 (flash attention: O(S * D) memory). lse (may be NULL) [B, Hq,
 * Sq] float32: the natural logsumexp of each row's logits (sink included), what a backward
 * pass needs. A row with no visible key gives 0 and lse -inf (with a sink: lse = the sink).
 * D is at most 256. */
TILE_API tile_status tile_op_scaled_dot_product_attention(const char *target, const tile_tensor *q, const tile_tensor *k,
                                                          const tile_tensor *v, const tile_op_attn_opts *opts, tile_tensor *out,
                                                          tile_tensor *lse, char **error);
/* The gradients of scaled_dot_product_attention (its autograd in torch): dq [B, Hq, Sq, D],
 * dk and dv [B, Hkv, Skv, D] (summed over each KV head's query heads) from q, k, v, the
 * forward's out and lse, and dout; opts as given to the forward. dsinks (may be NULL; needs
 * opts->sinks) [Hq] float32: the sinks' gradient. The softmax is recomputed from lse block by
 * block (FlashAttention-2's backward: memory O(S * D)). */
TILE_API tile_status tile_op_scaled_dot_product_attention_backward(const char *target, const tile_tensor *q, const tile_tensor *k,
                                                                   const tile_tensor *v, const tile_tensor *out, const tile_tensor *dout,
                                                                   const tile_tensor *lse, const tile_op_attn_opts *opts, tile_tensor *dq,
                                                                   tile_tensor *dk, tile_tensor *dv, tile_tensor *dsinks, char **error);
/* Packed sequences (flash_attn_varlen_func): q [Tq, Hq, D], k and v [Tk, Hkv, D]; sequence
 * b is rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of q and [cu_seqlens_k[b], cu_seqlens_k[b
 * + 1]) of k and v (both int32 [batch + 1], starting at 0, ending at Tq / Tk). out [Tq, Hq,
 * D]; lse (may be NULL) [Hq, Tq] float32. */
TILE_API tile_status tile_op_attention_varlen(const char *target, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v,
                                              const tile_tensor *cu_seqlens_q, const tile_tensor *cu_seqlens_k,
                                              const tile_op_attn_opts *opts, tile_tensor *out, tile_tensor *lse, char **error);
/* Decode against a paged KV cache: q [B, Hq, D] (one new token per sequence, its key and value
 * already in the cache), k_cache and v_cache [num_blocks, block_size, Hkv, D], block_table
 * [B, max_blocks] int32 (the cache blocks of each sequence, in order), seq_lens [B] int32
 * (keys per sequence; the query is at position seq_lens[b] - 1). The KV length is split in
 * num_splits parts (0: chosen from the shapes) computed in parallel and combined
 * (flash-decoding). out [B, Hq, D]; lse (may be NULL) [B, Hq] float32. */
TILE_API tile_status tile_op_attention_decode(const char *target, const tile_tensor *q, const tile_tensor *k_cache,
                                              const tile_tensor *v_cache, const tile_tensor *block_table, const tile_tensor *seq_lens,
                                              const tile_op_attn_opts *opts, int num_splits, tile_tensor *out, tile_tensor *lse,
                                              char **error);

/* ---------- GEMM ---------- */
typedef struct tile_op_gemm_opts {
    int trans_a, trans_b;     /* a is [K, M] / b is [N, K] */
    const char *activation;   /* NULL/"none", "relu", "gelu", "gelu_tanh", "silu" */
    double alpha, beta;       /* out = act(alpha * a @ b + beta * bias); 0 means 1 for both */
    tile_dtype out_dtype;     /* TILE_DT_INVALID (or 0 with out.data NULL): a's dtype */
} tile_op_gemm_opts;
/* out [M, N] = act(alpha * op(a) @ op(b) + beta * bias), f32 accumulation; a, b f32/f16/bf16
 * (the same dtype); bias (may be NULL) [N] or [M, N]. Batched: a [B, M, K] (or [B, K, M])
 * and b [B, K, N] (or [B, N, K], or 2-D shared by the batch) give out [B, M, N].
 * opts may be NULL. */
TILE_API tile_status tile_op_gemm(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *bias,
                                  const tile_op_gemm_opts *opts, tile_tensor *out, char **error);

/* ---------- quantised and grouped GEMM (B stored N x K: out = a @ b^T) ----------
 * Scales are float32; their kind is read from their shape (NULL: none):
 *   a_scale: [1] per tensor, [M] per row, [M, ceil(K/128)] 1x128 blocks (fp8 only)
 *   b_scale: [1] per tensor, [N] per row of b (column of out), [ceil(N/128), ceil(K/128)]
 *            128x128 blocks (fp8 only): DeepSeek-V3's recipe in DeepGEMM's layout.
 * out[m, n] = sum_k a[m, k] sa(m, k) b[n, k] sb(n, k). */
/* a, b float8_e4m3 / float8_e5m2 (either, mixed allowed) [M, K] / [N, K]; f32 accumulation;
 * out_dtype f32/f16/bf16 (TILE_DT_INVALID: bfloat16). */
TILE_API tile_status tile_op_gemm_fp8(const char *target, const tile_tensor *a, const tile_tensor *a_scale, const tile_tensor *b,
                                      const tile_tensor *b_scale, tile_dtype out_dtype, tile_tensor *out, char **error);
/* a, b int8 [M, K] / [N, K]; int32 accumulation; out_dtype int32 (no scales; the default
 * without scales) or f32/f16/bf16 (the default with scales: float32); per-tensor or
 * per-row/column scales only. */
TILE_API tile_status tile_op_gemm_int8(const char *target, const tile_tensor *a, const tile_tensor *a_scale, const tile_tensor *b,
                                       const tile_tensor *b_scale, tile_dtype out_dtype, tile_tensor *out, char **error);
/* W4A16: a f32/f16/bf16 [M, K]; b e2m1 packed two per byte as uint8 [N, K/2] (element 2i of a
 * row in the low nibble of byte i; K even); b_scale either MX: uint8 e8m0 [N, ceil(K/32)]
 * (2^(s-127)) or NV: float8_e4m3 [N, ceil(K/16)]; out = global_scale * a @ dequant(b)^T
 * (NV's per-tensor f32 scale; pass 1 for MX); out_dtype (TILE_DT_INVALID: a's). */
TILE_API tile_status tile_op_gemm_fp4(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *b_scale,
                                      double global_scale, tile_dtype out_dtype, tile_tensor *out, char **error);
/* Grouped GEMM for MoE, b [G, N, K] (f32/f16/bf16, a's dtype), f32 accumulation; exactly one
 * of the three int32 layout arguments:
 *   contiguous: a [M, K], each group's rows contiguous, given by m_indices [M] (the group of
 *     each row, -1 for a padding row: its out row is 0) or offsets [G] (each group's end row,
 *     non-decreasing, as torch._grouped_mm's offs; rows past the last are 0); out [M, N];
 *   masked: a [G, M_max, K] with masked_m [G] valid rows per group; out [G, M_max, N], rows
 *     past a group's count 0. */
TILE_API tile_status tile_op_grouped_gemm(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *m_indices,
                                          const tile_tensor *offsets, const tile_tensor *masked_m, tile_tensor *out, char **error);

#ifdef __cplusplus
}
#endif
#endif
