// cvt_check.cu — compare Tile's conversions (src/core/dtype.c) with NVIDIA hardware.
//
// Not part of ctest (it needs an NVIDIA GPU of sm_89 or newer and nvcc). Run by hand:
//   gcc -O2 -std=gnu11 -Isrc -Iinclude -c src/core/dtype.c src/core/core.c
//   nvcc -O2 -std=c++17 -arch=sm_90 -Isrc -Iinclude tests/core/gpu/cvt_check.cu dtype.o core.o \
//        -o cvt_check && ./cvt_check [STRIDE]
//
// Checks, for every float32 bit pattern (STRIDE 1) or every STRIDE-th one:
//   cvt.rn.f16.f32, cvt.rn.bf16.f32, cvt.rn.satfinite.e4m3x2.f32, cvt.rn.satfinite.e5m2x2.f32
// against tile_f32_to_f16_bits / tile_f32_to_bf16_bits / tile_f64_to_e4m3_bits /
// tile_f64_to_e5m2_bits; for random and near-midpoint doubles cvt.rn.f16.f64 and
// cvt.rn.bf16.f64 (single rounding from double); and decoding of every e4m3 / e5m2 byte
// through cvt.rn.f16x2.e4m3x2 / e5m2x2. Results for NaN inputs are compared only as "is a
// NaN with the same sign", and the NaN encodings the hardware produced are printed, since
// NaN payloads are not part of the contract (docs/numbers.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

extern "C" {
#include "core/core.h"
}

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                       \
        }                                                                                  \
    } while (0)

struct Out32 {
    uint16_t f16, bf16;
    uint8_t e4m3, e5m2;
};

__global__ void k_f32(uint64_t start, uint64_t stride, uint64_t n, Out32 *out) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    uint32_t u = (uint32_t)(start + i * stride);
    float f = __uint_as_float(u);
    Out32 o;
    unsigned short h, b, p4, p5;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(p4) : "f"(0.0f), "f"(f));
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(p5) : "f"(0.0f), "f"(f));
    o.f16 = h;
    o.bf16 = b;
    o.e4m3 = (uint8_t)(p4 & 0xFF);
    o.e5m2 = (uint8_t)(p5 & 0xFF);
    out[i] = o;
}

__global__ void k_f64(const double *in, uint64_t n, uint16_t *f16, uint16_t *bf16) {
    uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double d = in[i];
    unsigned short h, b;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(b) : "d"(d));
    f16[i] = h;
    bf16[i] = b;
}

__global__ void k_dec(uint32_t *e4, uint32_t *e5) {
    uint32_t i = threadIdx.x; // 0..255
    unsigned short in = (unsigned short)(i | (i << 8));
    uint32_t r4, r5;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(r4) : "h"(in));
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(r5) : "h"(in));
    e4[i] = r4 & 0xFFFF;
    e5[i] = r5 & 0xFFFF;
}

static bool f16_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
static bool bf16_is_nan(uint16_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F); }
static bool e4_is_nan(uint8_t b) { return (b & 0x7F) == 0x7F; }
static bool e5_is_nan(uint8_t b) { return (b & 0x7C) == 0x7C && (b & 3); }

struct Stats {
    std::atomic<uint64_t> bad[6];
    std::mutex mu;
    std::map<std::string, std::map<unsigned, uint64_t>> nan_seen; // format -> output -> count
    std::vector<std::string> examples;
    Stats() { for (auto &b : bad) b = 0; }
    void note_nan(const char *fmt, unsigned v) {
        std::lock_guard<std::mutex> g(mu);
        nan_seen[fmt][v]++;
    }
    void example(const char *s) {
        std::lock_guard<std::mutex> g(mu);
        if (examples.size() < 40) examples.push_back(s);
    }
};

static void check_chunk(Stats &st, const Out32 *o, uint64_t start, uint64_t stride, uint64_t lo, uint64_t hi) {
    char buf[200];
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t u = (uint32_t)(start + i * stride);
        float f;
        memcpy(&f, &u, 4);
        bool nan = std::isnan(f);
        uint16_t h = tile_f32_to_f16_bits(f), b = tile_f32_to_bf16_bits(f);
        uint8_t e4 = tile_f64_to_e4m3_bits((double)f), e5 = tile_f64_to_e5m2_bits((double)f);
        if (nan) { /* only NaN-ness is compared; the encodings are recorded for the report */
            if (!f16_is_nan(o[i].f16)) st.bad[0]++;
            if (!bf16_is_nan(o[i].bf16)) st.bad[1]++;
            if (!e4_is_nan(o[i].e4m3)) st.bad[2]++;
            if (!e5_is_nan(o[i].e5m2)) st.bad[3]++;
            if ((u & 0xFFFFF) == 0 || u == 0x7FC00000u || u == 0xFFC00000u || u == 0x7F800001u) {
                st.note_nan("f16", o[i].f16);
                st.note_nan("bf16", o[i].bf16);
                st.note_nan("e4m3", o[i].e4m3);
                st.note_nan("e5m2", o[i].e5m2);
            }
            continue;
        }
        if (h != o[i].f16) { if (st.bad[0]++ < 5) { snprintf(buf, sizeof buf, "f16 %08x: tile %04x hw %04x", u, h, o[i].f16); st.example(buf); } }
        if (b != o[i].bf16) { if (st.bad[1]++ < 5) { snprintf(buf, sizeof buf, "bf16 %08x: tile %04x hw %04x", u, b, o[i].bf16); st.example(buf); } }
        if (e4 != o[i].e4m3) { if (st.bad[2]++ < 5) { snprintf(buf, sizeof buf, "e4m3 %08x (%g): tile %02x hw %02x", u, f, e4, o[i].e4m3); st.example(buf); } }
        if (e5 != o[i].e5m2) { if (st.bad[3]++ < 5) { snprintf(buf, sizeof buf, "e5m2 %08x (%g): tile %02x hw %02x", u, f, e5, o[i].e5m2); st.example(buf); } }
    }
}

int main(int argc, char **argv) {
    uint64_t stride = argc > 1 ? strtoull(argv[1], nullptr, 0) : 1;
    if (stride == 0) stride = 1;
    unsigned nth = std::thread::hardware_concurrency();
    if (nth == 0) nth = 4;
    Stats st;
    const uint64_t total = (0x100000000ull + stride - 1) / stride;
    const uint64_t chunk = 1ull << 27;
    Out32 *d_out, *h_out;
    CK(cudaMalloc(&d_out, chunk * sizeof(Out32)));
    CK(cudaMallocHost(&h_out, chunk * sizeof(Out32)));
    for (uint64_t c0 = 0; c0 < total; c0 += chunk) {
        uint64_t n = std::min(chunk, total - c0);
        uint64_t start = c0 * stride;
        k_f32<<<(unsigned)((n + 255) / 256), 256>>>(start, stride, n, d_out);
        CK(cudaGetLastError());
        CK(cudaMemcpy(h_out, d_out, n * sizeof(Out32), cudaMemcpyDeviceToHost));
        std::vector<std::thread> th;
        for (unsigned t = 0; t < nth; t++)
            th.emplace_back(check_chunk, std::ref(st), h_out, start, stride, n * t / nth, n * (t + 1) / nth);
        for (auto &t : th) t.join();
    }
    printf("f32 inputs checked: %llu (stride %llu)\n", (unsigned long long)total, (unsigned long long)stride);
    const char *names[4] = {"cvt.rn.f16.f32", "cvt.rn.bf16.f32", "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32"};
    for (int k = 0; k < 4; k++) printf("  %-30s mismatches: %llu\n", names[k], (unsigned long long)st.bad[k].load());

    // f64 -> f16 / bf16: random doubles in the interesting range and doubles next to the
    // midpoints of f16 and bf16 (where rounding via f32 would go wrong)
    std::vector<double> in;
    std::mt19937_64 rng(12345);
    for (int i = 0; i < (1 << 22); i++) {
        uint64_t r = rng();
        int e = (int)(r % 300) - 150;
        double m = 1.0 + (double)(rng() >> 11) * 0x1p-53;
        in.push_back(((r >> 40) & 1 ? -1 : 1) * std::ldexp(m, e));
        uint64_t bits = rng();
        double d;
        memcpy(&d, &bits, 8);
        in.push_back(d);
    }
    for (uint32_t h = 0; h < 0x10000; h++) {
        for (int k = 0; k < 2; k++) {
            double a = k ? (double)tile_bf16_bits_to_f32((uint16_t)h) : (double)tile_f16_bits_to_f32((uint16_t)h);
            double b = k ? (double)tile_bf16_bits_to_f32((uint16_t)(h + 1)) : (double)tile_f16_bits_to_f32((uint16_t)(h + 1));
            if (!std::isfinite(a) || !std::isfinite(b) || (h & 0x7FFF) == 0x7FFF) continue;
            double mid = (a + b) / 2;
            in.push_back(mid);
            in.push_back(std::nextafter(mid, INFINITY));
            in.push_back(std::nextafter(mid, -INFINITY));
        }
    }
    uint64_t n = in.size();
    double *d_in;
    uint16_t *d_h, *d_b;
    CK(cudaMalloc(&d_in, n * 8));
    CK(cudaMalloc(&d_h, n * 2));
    CK(cudaMalloc(&d_b, n * 2));
    CK(cudaMemcpy(d_in, in.data(), n * 8, cudaMemcpyHostToDevice));
    k_f64<<<(unsigned)((n + 255) / 256), 256>>>(d_in, n, d_h, d_b);
    CK(cudaGetLastError());
    std::vector<uint16_t> hh(n), hb(n);
    CK(cudaMemcpy(hh.data(), d_h, n * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), d_b, n * 2, cudaMemcpyDeviceToHost));
    uint64_t bad_h = 0, bad_b = 0;
    for (uint64_t i = 0; i < n; i++) {
        double d = in[i];
        if (std::isnan(d)) continue;
        uint16_t h = tile_f64_to_f16_bits(d), b = tile_f64_to_bf16_bits(d);
        if (h != hh[i] && bad_h++ < 5) printf("  f16<-f64 %a: tile %04x hw %04x\n", d, h, hh[i]);
        if (b != hb[i] && bad_b++ < 5) printf("  bf16<-f64 %a: tile %04x hw %04x\n", d, b, hb[i]);
    }
    printf("f64 inputs checked: %llu\n  cvt.rn.f16.f64 mismatches: %llu\n  cvt.rn.bf16.f64 mismatches: %llu\n",
           (unsigned long long)n, (unsigned long long)bad_h, (unsigned long long)bad_b);
    {   // NaN from f64
        double qn = NAN, nqn = -NAN;
        CK(cudaMemcpy(d_in, &qn, 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_in + 1, &nqn, 8, cudaMemcpyHostToDevice));
        k_f64<<<1, 2>>>(d_in, 2, d_h, d_b);
        uint16_t r[4];
        CK(cudaMemcpy(r, d_h, 4, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(r + 2, d_b, 4, cudaMemcpyDeviceToHost));
        printf("  NaN from f64: f16 %04x / -NaN %04x, bf16 %04x / -NaN %04x\n", r[0], r[1], r[2], r[3]);
    }

    // decode every e4m3 / e5m2 byte
    uint32_t *d4, *d5, h4[256], h5[256];
    CK(cudaMalloc(&d4, 1024));
    CK(cudaMalloc(&d5, 1024));
    k_dec<<<1, 256>>>(d4, d5);
    CK(cudaMemcpy(h4, d4, 1024, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h5, d5, 1024, cudaMemcpyDeviceToHost));
    uint64_t bad4 = 0, bad5 = 0;
    for (int i = 0; i < 256; i++) {
        double t4 = tile_e4m3_bits_to_f64((uint8_t)i), t5 = tile_e5m2_bits_to_f64((uint8_t)i);
        double g4 = (double)tile_f16_bits_to_f32((uint16_t)h4[i]), g5 = (double)tile_f16_bits_to_f32((uint16_t)h5[i]);
        bool ok4 = (std::isnan(t4) && std::isnan(g4)) || (!std::isnan(t4) && memcmp(&t4, &g4, 8) == 0);
        bool ok5 = (std::isnan(t5) && std::isnan(g5)) || (!std::isnan(t5) && memcmp(&t5, &g5, 8) == 0);
        if (!ok4 && bad4++ < 5) printf("  e4m3 %02x: tile %a hw %a\n", i, t4, g4);
        if (!ok5 && bad5++ < 5) printf("  e5m2 %02x: tile %a hw %a\n", i, t5, g5);
    }
    printf("decode: e4m3 mismatches %llu, e5m2 mismatches %llu\n", (unsigned long long)bad4, (unsigned long long)bad5);

    printf("NaN encodings produced by the hardware (output: count over sampled NaN inputs):\n");
    for (auto &kv : st.nan_seen) {
        printf("  %s:", kv.first.c_str());
        for (auto &o : kv.second) printf(" %#x x%llu", o.first, (unsigned long long)o.second);
        printf("\n");
    }
    for (auto &e : st.examples) printf("  example: %s\n", e.c_str());
    uint64_t all = st.bad[0] + st.bad[1] + st.bad[2] + st.bad[3] + bad_h + bad_b + bad4 + bad5;
    printf("%s\n", all ? "MISMATCHES FOUND" : "all conversions match the hardware (NaN payloads aside)");
    return all ? 1 : 0;
}
