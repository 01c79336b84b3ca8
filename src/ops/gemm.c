/* gemm.c — tile_op_gemm: gemm.tl on every target; on cpu, where the registry marks it
 * (TOPT_CPULIB), the CPU GEMM library (src/kernels) computes the f32 product and
 * gemm.tl's gemm_epilogue applies alpha, bias, activation and the output dtype: the
 * tile-form kernel's per-block path is far slower there than the packed library.
 * TILE_OPS_CPU_LIBRARY=0 runs the TileLang kernel on cpu too (to test one against the other). */
#include <stdlib.h>
#include <string.h>

#include "../kernels/cpu_gemm.h"
#include "../runtime/threadpool.h"
#include "ops_int.h"

static int act_code(const char *a) {
    if (!a || !strcmp(a, "none")) return 0;
    if (!strcmp(a, "relu")) return 1;
    if (!strcmp(a, "gelu")) return 2;
    if (!strcmp(a, "gelu_tanh")) return 3;
    if (!strcmp(a, "silu")) return 4;
    return -1;
}

tile_status tile_op_gemm(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *bias, const tile_op_gemm_opts *opts,
                         tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("gemm");
    if (!top_begin(&c, "gemm", op, target)) return top_end(&c, error);
    tile_op_gemm_opts o = {0};
    if (opts) o = *opts;
    if (!top_check_tensor(&c, "a", a) || !top_check_dtype(&c, "a", a, op->dtypes) || !top_check_rank(&c, "a", a, 2, 3) ||
        !top_check_tensor(&c, "b", b) || !top_check_rank(&c, "b", b, 2, 3))
        return top_end(&c, error);
    if (b->dtype != a->dtype) {
        top_fail(&c, TILE_ERR_USER, "b: dtype %s differs from a's %s", tile_dtype_name(b->dtype), tile_dtype_name(a->dtype));
        return top_end(&c, error);
    }
    int act = act_code(o.activation);
    if (act < 0) {
        top_fail(&c, TILE_ERR_USER, "opts.activation: '%s' is not one of none, relu, gelu, gelu_tanh, silu", o.activation);
        return top_end(&c, error);
    }
    int ar = a->rank, br = b->rank;
    int64_t B = ar == 3 ? a->shape[0] : 1;
    if (ar == 2 && br == 3) {
        top_fail(&c, TILE_ERR_USER, "b: is batched (rank 3) but a is not");
        return top_end(&c, error);
    }
    if (ar == 3 && br == 3 && b->shape[0] != B) {
        top_fail(&c, TILE_ERR_USER, "b: batch %lld differs from a's %lld", (long long)b->shape[0], (long long)B);
        return top_end(&c, error);
    }
    int64_t M = o.trans_a ? a->shape[ar - 1] : a->shape[ar - 2], K = o.trans_a ? a->shape[ar - 2] : a->shape[ar - 1];
    int64_t Kb = o.trans_b ? b->shape[br - 1] : b->shape[br - 2], N = o.trans_b ? b->shape[br - 2] : b->shape[br - 1];
    if (Kb != K) {
        top_fail(&c, TILE_ERR_USER, "b: its K (%lld) does not match a's K (%lld)%s", (long long)Kb, (long long)K,
                 o.trans_a || o.trans_b ? " (with the transposes in opts)" : "");
        return top_end(&c, error);
    }
    tile_dtype odt = o.out_dtype == TILE_DT_INVALID || o.out_dtype == TILE_DT_BOOL ? a->dtype : o.out_dtype;
    if (!(TOPD_MM & (1u << odt))) {
        top_fail(&c, TILE_ERR_USER, "opts.out_dtype: %s is not one of float32, float16, bfloat16", tile_dtype_name(odt));
        return top_end(&c, error);
    }
    int has_bias = 0;
    if (bias) {
        if (!top_check_tensor(&c, "bias", bias)) return top_end(&c, error);
        if (bias->dtype != odt) {
            top_fail(&c, TILE_ERR_USER, "bias: dtype %s differs from the output's %s", tile_dtype_name(bias->dtype), tile_dtype_name(odt));
            return top_end(&c, error);
        }
        if (bias->rank == 1 && bias->shape[0] == N) has_bias = 1;
        else if (bias->rank == 2 && bias->shape[0] == M && bias->shape[1] == N) has_bias = 2;
        else {
            char s[128];
            top_shape_str(s, sizeof s, bias->rank, bias->shape);
            top_fail(&c, TILE_ERR_USER, "bias: shape %s is neither [N] = [%lld] nor [M, N] = [%lld, %lld]", s, (long long)N, (long long)M, (long long)N);
            return top_end(&c, error);
        }
    }
    int64_t os[3] = {B, M, N};
    if (!top_prepare_out(&c, "out", out, odt, ar == 3 ? 3 : 2, ar == 3 ? os : os + 1) || B * M * N == 0) return top_end(&c, error);
    double alpha = o.alpha == 0 ? 1 : o.alpha, beta = o.beta == 0 ? 1 : o.beta;
    bool lib = !strcmp(c.target, "cpu") && (op->targets & TOPT_CPULIB) && tb_knob_bool(TB_K_TILE_OPS_CPU_LIBRARY);
    size_t esz = (size_t)tile_dtype_bits(a->dtype) / 8, osz = (size_t)tile_dtype_bits(odt) / 8;
    int64_t astep = M * K, bstep = br == 3 ? K * N : 0, ostep = M * N;
    uint64_t dummy = 0;
    tile_tensor ph = {&dummy, odt, 1, {1}};
    top_defs d;
    top_defs_init(&d);
    top_kernel *k;
    if (lib) {
        bool direct = !has_bias && !act && alpha == 1 && odt == TILE_DT_F32;
        tile_tensor prod = {0};
        int64_t ms[2] = {M, N};
        if (!direct && !top_temp(&c, &prod, TILE_DT_F32, 2, ms)) return top_end(&c, error);
        if (!direct) {
            top_def_int(&d, "block", N <= 64 ? 64 : N <= 256 ? 256 : 1024);
            top_def_dt(&d, "out_dtype", odt);
            top_def_int(&d, "has_bias", has_bias);
            top_def_int(&d, "act", act);
        }
        for (int64_t bi = 0; bi < B && c.st == TILE_OK; bi++) {
            float *C = direct ? (float *)((char *)out->data + (size_t)(bi * ostep) * osz) : prod.data;
            tk_gemm g = {.M = M, .N = N, .K = K, .a_dtype = a->dtype, .b_dtype = b->dtype, .c_dtype = TILE_DT_F32,
                         .A = (char *)a->data + (size_t)(bi * astep) * esz, .a_rs = o.trans_a ? 1 : K, .a_cs = o.trans_a ? M : 1,
                         .B = (char *)b->data + (size_t)(bi * bstep) * esz, .b_rs = o.trans_b ? 1 : N, .b_cs = o.trans_b ? K : 1,
                         .C = C, .c_rs = N, .c_cs = 1, .accumulate = 0, .nthreads = tile_pool_size()};
            if (tk_cpu_gemm(&g, tile_pool_for_each, NULL) != TK_GEMM_OK) {
                top_fail(&c, TILE_ERR_USER, "the CPU GEMM library failed: %s", tk_cpu_gemm_error());
                break;
            }
            if (!direct && top_kernel_get(&c, op->src, "gemm_epilogue", &d, &k)) {
                tile_tensor p[5] = {prod, has_bias ? *bias : ph, top_view(out, 2, ms)};
                p[2].data = (char *)out->data + (size_t)(bi * ostep) * osz;
                double sc[5] = {0, 0, 0, alpha, beta};
                top_kernel_run(&c, k, p, 5, sc);
            }
        }
        top_free(&prod);
        return top_end(&c, error);
    }
    top_def_dt(&d, "dtype", a->dtype);
    top_def_dt(&d, "out_dtype", odt);
    top_def_int(&d, "trans_a", o.trans_a != 0);
    top_def_int(&d, "trans_b", o.trans_b != 0);
    top_def_int(&d, "has_bias", has_bias);
    top_def_int(&d, "act", act);
    if (!top_kernel_get(&c, op->src, op->factory, &d, &k)) return top_end(&c, error);
    int64_t as[2] = {o.trans_a ? K : M, o.trans_a ? M : K}, bs[2] = {o.trans_b ? N : K, o.trans_b ? K : N}, ms[2] = {M, N};
    for (int64_t bi = 0; bi < B && c.st == TILE_OK; bi++) {
        tile_tensor p[6] = {top_view(a, 2, as), top_view(b, 2, bs), has_bias ? *bias : ph, top_view(out, 2, ms)};
        p[0].data = (char *)a->data + (size_t)(bi * astep) * esz;
        p[1].data = (char *)b->data + (size_t)(bi * bstep) * esz;
        p[3].data = (char *)out->data + (size_t)(bi * ostep) * osz;
        double sc[6] = {0, 0, 0, 0, alpha, beta};
        top_kernel_run(&c, k, p, 6, sc);
    }
    return top_end(&c, error);
}
