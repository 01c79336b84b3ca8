/* simt_prelude.h — device-side helpers of the SIMT code generator (src/codegen/simt.c),
 * written once in the common subset of OpenCL C 1.2 and CUDA C++.
 *
 * This file is NOT compiled into libtile: it is embedded as text (simt_prelude.cmake) and
 * placed in every generated OpenCL / CUDA unit, after the dialect header that simt.c writes
 * (TL_OPENCL or TL_CUDA, TL_FP64) and after the text of src/base/convert.h (the bit-exact
 * scalar conversions shared with the interpreter and the CPU backend), adapted to the
 * device: its #include lines dropped, its format tables in __constant memory on OpenCL,
 * and, on an OpenCL device without cl_khr_fp64, its functions that use double left out.
 *
 * What is here:
 *   - f32 <-> fp8 / fp4 through convert.h's tcv_encode_f32 / tcv_decode_f32 (no double needed);
 *   - integer division / modulo / power / shifts with the IR's rules (docs in ir.h);
 *   - float -> integer conversions that saturate (CUDA; OpenCL has convert_T_sat_rtz);
 *   - the error record (first error wins) and bounds-checked index arithmetic;
 *   - 32-/64-bit compare-and-swap for every address space (atomics on any dtype are a CAS
 *     loop on the aligned word that holds the element).
 */

/* ---------- errors: err[0] = 1 once an error happened, err[1] = site, err[2..5] = values */
TL_FN void tl_fail(TL_GLOBAL int64_t *err, int site, int64_t a, int64_t b, int64_t c) {
#ifdef TL_OPENCL
    if (atomic_cmpxchg((volatile __global int *)err, 0, 1) == 0) {
#else
    if (atomicCAS((int *)err, 0, 1) == 0) {
#endif
        err[1] = site;
        err[2] = a;
        err[3] = b;
        err[4] = c;
    }
}

/* Index i of a dimension of extent d, folded into the running row-major offset acc; an
 * index outside [0, d) records the error and uses 0 so that the access stays inside. */
TL_FN int64_t tl_ix(int64_t acc, int64_t i, int64_t d, int dim, TL_GLOBAL int64_t *err, int site) {
    if ((uint64_t)i >= (uint64_t)d) {
        tl_fail(err, site, dim, i, d);
        i = 0;
    }
    return acc * d + i;
}
/* An index the generator proved inside (no check). */
TL_FN int64_t tl_ixs(int64_t acc, int64_t i, int64_t d) { return acc * d + i; }
/* The same check as tl_ix with the failure kept in the thread's registers (*es: site + 1, or 0; the
 * first one is kept) and reported by the caller after the loop (tl_fail): no store in the hot
 * loop, so the loads of an unrolled T.Parallel nest can all be in flight together. */
TL_FN int64_t tl_ixd(int64_t acc, int64_t i, int64_t d, int dim, int site, int *es, int64_t *ea, int64_t *eb, int64_t *ec) {
    const int bad = (uint64_t)i >= (uint64_t)d;
    if (bad && *es == 0) {
        *es = site + 1;
        *ea = dim;
        *eb = i;
        *ec = d;
    }
    return acc * d + (bad ? 0 : i);
}

/* ---------- floats <-> narrow formats, without double ---------- */
TL_FN uint32_t tl_encode_f32(TL_FMT_PTR f, float x) {
#if defined(TL_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    /* sm_89+: cvt.rn.satfinite gives tcv_encode_f32's bits for every float but NaN (checked for
     * all 2^32 inputs, docs/numbers.md), which becomes the hardware's NaN (0x7F; NaN bits are
     * outside the bit-exact contract): one instruction instead of the generic rounding,
     * inlined at every (unrolled) store. The format is told by its fields, not its address
     * (NVVM does not fold comparisons of the tables' addresses). */
    if (f->sign_shift == 7 && (f->M == 3 || f->M == 2)) {
        unsigned short h;
        if (f->M == 3) asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.0f), "f"(x));
        else asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(h) : "f"(0.0f), "f"(x));
        return (uint32_t)(h & 0xFFu);
    }
#endif
    return tcv_encode_f32(f, x);
}
/* Exact decoding of an fp8 / fp4 code to f32 (every value of these formats is an f32). */
TL_FN float tl_decode_f32(TL_FMT_PTR f, uint32_t b) { return tcv_decode_f32(f, b); }

TL_FN float tl_round_f32(TL_FMT_PTR f, float x) { return tl_decode_f32(f, tl_encode_f32(f, x)); }
TL_FN float tl_round_f16(float x) { return tcv_f16_bits_to_f32(tcv_f32_to_f16_bits(x)); }
TL_FN float tl_round_bf16(float x) { return tcv_bf16_bits_to_f32(tcv_f32_to_bf16_bits(x)); }
TL_FN float tl_i64_to_small(TL_FMT_PTR f, int64_t v) {
    uint32_t b = (uint32_t)tcv_encode_i64(f, v);
    if (f->M == 10) return tcv_f16_bits_to_f32((uint16_t)b);
    if (f->M == 7) return tcv_bf16_bits_to_f32((uint16_t)b);
    return tl_decode_f32(f, b);
}
/* uint64 -> narrow format, one rounding (values >= 2^63 included) */
TL_FN uint32_t tl_encode_u64(TL_FMT_PTR f, uint64_t v) { return v ? (uint32_t)tcv_encode_exact(f, false, v, 0) : 0u; }
TL_FN float tl_u64_to_small(TL_FMT_PTR f, uint64_t v) {
    uint32_t b = tl_encode_u64(f, v);
    if (f->M == 10) return tcv_f16_bits_to_f32((uint16_t)b);
    if (f->M == 7) return tcv_bf16_bits_to_f32((uint16_t)b);
    return tl_decode_f32(f, b);
}
#ifdef TL_FP64
TL_FN float tl_f64_to_small(TL_FMT_PTR f, double d) {
    uint32_t b = (uint32_t)tcv_encode_f64(f, d);
    if (f->M == 10) return tcv_f16_bits_to_f32((uint16_t)b);
    if (f->M == 7) return tcv_bf16_bits_to_f32((uint16_t)b);
    return tl_decode_f32(f, b);
}
#endif

/* ---------- integers ---------- */
TL_FN int32_t tl_div_i32(int32_t a, int32_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    if (b == -1) return (int32_t)(0u - (uint32_t)a);
    return a / b;
}
TL_FN int64_t tl_div_i64(int64_t a, int64_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    if (b == -1) return (int64_t)((uint64_t)0 - (uint64_t)a);
    return a / b;
}
TL_FN int32_t tl_floordiv_i32(int32_t a, int32_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    if (b == -1) return (int32_t)(0u - (uint32_t)a);
    int32_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
TL_FN int64_t tl_floordiv_i64(int64_t a, int64_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    if (b == -1) return (int64_t)((uint64_t)0 - (uint64_t)a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
TL_FN int32_t tl_floormod_i32(int32_t a, int32_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 1, 0, 0); return 0; }
    if (b == -1) return 0;
    int32_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
TL_FN int64_t tl_floormod_i64(int64_t a, int64_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 1, 0, 0); return 0; }
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}
TL_FN uint32_t tl_div_u32(uint32_t a, uint32_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    return a / b;
}
TL_FN uint64_t tl_div_u64(uint64_t a, uint64_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 0, 0, 0); return 0; }
    return a / b;
}
TL_FN uint32_t tl_mod_u32(uint32_t a, uint32_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 1, 0, 0); return 0; }
    return a % b;
}
TL_FN uint64_t tl_mod_u64(uint64_t a, uint64_t b, TL_GLOBAL int64_t *err, int site) {
    if (b == 0) { tl_fail(err, site, 1, 0, 0); return 0; }
    return a % b;
}
/* a ** b on integers (result wrapped by the caller's cast); a negative exponent gives
 * 1 / a^n truncated: 0 except for a = +-1; 0 ** negative is an error. */
TL_FN uint64_t tl_ipow(int64_t a, int64_t b, int is_unsigned, TL_GLOBAL int64_t *err, int site) {
    if (!is_unsigned && b < 0) {
        if (a == 0) { tl_fail(err, site, 2, 0, 0); return 0; }
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? (uint64_t)0 - 1 : 1;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)a, n = (uint64_t)b;
    while (n) {
        if (n & 1) r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}
/* Shifts: an amount outside [0, bits) gives 0 (>> of a negative signed value: -1). `a` is
 * the value sign- (signed) or zero- (unsigned) extended to 64 bits. */
TL_FN uint64_t tl_shl(int64_t a, int64_t b, int bits, int is_unsigned) {
    if (is_unsigned ? (uint64_t)b >= (uint64_t)bits : (b < 0 || b >= bits)) return 0;
    return (uint64_t)a << b;
}
TL_FN int64_t tl_shr(int64_t a, int64_t b, int bits, int is_unsigned) {
    if (is_unsigned ? (uint64_t)b >= (uint64_t)bits : (b < 0 || b >= bits)) return (!is_unsigned && a < 0) ? -1 : 0;
    if (is_unsigned) return (int64_t)((uint64_t)a >> b);
    return a >> b;
}
TL_FN int64_t tl_iabs(int64_t a) { return a < 0 ? (int64_t)((uint64_t)0 - (uint64_t)a) : a; }
TL_FN int64_t tl_imin(int64_t a, int64_t b) { return a < b ? a : b; }
TL_FN int64_t tl_imax(int64_t a, int64_t b) { return a > b ? a : b; }
TL_FN uint64_t tl_umin(uint64_t a, uint64_t b) { return a < b ? a : b; }
TL_FN uint64_t tl_umax(uint64_t a, uint64_t b) { return a > b ? a : b; }

#ifdef TL_CUDA
/* float -> integer: truncate toward zero, saturate at the type's range, NaN -> 0 */
TL_FN int64_t tl_f2s(double x, int64_t lo, int64_t hi) {
    if (x != x) return 0;
    if (x <= (double)lo) return lo;
    if (x >= (double)hi) return hi;
    return (int64_t)x;
}
TL_FN uint64_t tl_f2u(double x, uint64_t hi) {
    if (x != x || x <= 0.0) return 0;
    if (x >= (double)hi) return hi;
    return (uint64_t)x;
}
#endif

/* ---------- math ---------- */
TL_FN float tl_sigmoid_f32(float x) { return 1.0f / (1.0f + TL_EXPF(-x)); }
#ifdef TL_FP64
TL_FN double tl_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
TL_FN double tl_floordiv_f64(double a, double b) { return floor(a / b); }
TL_FN double tl_floormod_f64(double a, double b) { return a - floor(a / b) * b; }
#endif
TL_FN float tl_floordiv_f32(float a, float b) { return TL_FLOORF(a / b); }
TL_FN float tl_floormod_f32(float a, float b) { return a - TL_FLOORF(a / b) * b; }

/* ---------- compare-and-swap per address space ---------- */
#ifdef TL_OPENCL
TL_FN uint32_t tl_cas32_g(__global uint32_t *p, uint32_t c, uint32_t v) { return atomic_cmpxchg((volatile __global uint *)p, c, v); }
TL_FN uint32_t tl_cas32_l(__local uint32_t *p, uint32_t c, uint32_t v) { return atomic_cmpxchg((volatile __local uint *)p, c, v); }
TL_FN uint32_t tl_cas32_p(uint32_t *p, uint32_t c, uint32_t v) { uint32_t o = *p; if (o == c) *p = v; return o; }
#ifdef TL_ATOM64
TL_FN uint64_t tl_cas64_g(__global uint64_t *p, uint64_t c, uint64_t v) { return atom_cmpxchg((volatile __global ulong *)p, c, v); }
TL_FN uint64_t tl_cas64_l(__local uint64_t *p, uint64_t c, uint64_t v) { return atom_cmpxchg((volatile __local ulong *)p, c, v); }
#endif
TL_FN uint64_t tl_cas64_p(uint64_t *p, uint64_t c, uint64_t v) { uint64_t o = *p; if (o == c) *p = v; return o; }
#else
TL_FN uint32_t tl_cas32_g(uint32_t *p, uint32_t c, uint32_t v) { return atomicCAS((unsigned int *)p, c, v); }
TL_FN uint64_t tl_cas64_g(uint64_t *p, uint64_t c, uint64_t v) {
    return atomicCAS((unsigned long long *)p, (unsigned long long)c, (unsigned long long)v);
}
#define tl_cas32_l tl_cas32_g
#define tl_cas64_l tl_cas64_g
#define tl_cas32_p tl_cas32_g
#define tl_cas64_p tl_cas64_g
#endif

/* ---------- fp4 storage: two codes per byte, element i in nibble i & 1 ---------- */
#define TL_DEF_FP4(SFX, AS)                                                                   \
    TL_FN uint32_t tl_ld4_##SFX(AS uint8_t *p, int64_t i) { return (p[i >> 1] >> ((i & 1) * 4)) & 15u; } \
    TL_FN void tl_st4_##SFX(AS uint8_t *p, int64_t i, uint32_t code) {                        \
        int64_t byte = i >> 1;                                                                \
        AS uint32_t *w = (AS uint32_t *)(p + (byte & ~(int64_t)3));                           \
        uint32_t sh = (uint32_t)((byte & 3) * 8 + (i & 1) * 4);                               \
        uint32_t old = *w;                                                                    \
        for (;;) {                                                                            \
            uint32_t nw = (old & ~(15u << sh)) | ((code & 15u) << sh);                        \
            uint32_t prev = tl_cas32_##SFX(w, old, nw);                                       \
            if (prev == old) break;                                                           \
            old = prev;                                                                       \
        }                                                                                     \
    }
TL_DEF_FP4(g, TL_GLOBAL)
#ifdef TL_OPENCL
TL_DEF_FP4(l, __local)
TL_DEF_FP4(p, )
#else
#define tl_ld4_l tl_ld4_g
#define tl_st4_l tl_st4_g
#define tl_ld4_p tl_ld4_g
#define tl_st4_p tl_st4_g
#endif
