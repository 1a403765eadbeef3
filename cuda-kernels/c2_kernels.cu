// Entry points of the porep-c2 kernel module (one fatbin, loaded lazily per
// device by c2-cuda). Keep this file thin: the math lives in the headers.
#include "ff/fr.cuh"
#include "ntt/ntt.cuh"

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

extern "C" __global__ void c2_ntt_bit_reverse(fr_t* out, const fr_t* in, uint32_t log_n,
                                              uint32_t inverse) {
    ntt::bit_reverse_permute(out, in, log_n, inverse != 0);
}

extern "C" __global__ void c2_ntt_pass(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0,
                                       uint32_t k, uint32_t c_bits) {
    ntt::stages_pass(data, tw, log_n, s0, k, c_bits);
}

// out[i] = hi[i >> lo_bits] * lo[i & mask], i < n (twiddle tables).
extern "C" __global__ void c2_powers(fr_t* out, const fr_t* hi, const fr_t* lo, uint64_t n,
                                     uint32_t lo_bits) {
    GRID_STRIDE(i, n) { out[i] = ntt::power_from_tables(hi, lo, i, lo_bits); }
}

// data[i] *= hi[i >> lo_bits] * lo[i & mask]: coset shifts (with any constant
// factor, e.g. 1/n, folded into the tables).
extern "C" __global__ void c2_scale_by_powers(fr_t* data, const fr_t* hi, const fr_t* lo,
                                              uint64_t n, uint32_t lo_bits) {
    GRID_STRIDE(i, n) { data[i] = fr_mul(data[i], ntt::power_from_tables(hi, lo, i, lo_bits)); }
}

// a[i] = (a[i] * b[i] - c[i]) * zinv: the H quotient on the coset.
extern "C" __global__ void c2_h_pointwise(fr_t* a, const fr_t* b, const fr_t* c, const fr_t* zinv,
                                          uint64_t n) {
    const fr_t z = *zinv;
    GRID_STRIDE(i, n) { a[i] = fr_mul(fr_sub(fr_mul(a[i], b[i]), c[i]), z); }
}

// ---- curve arithmetic self-test (differential tests against blstrs) ----
#include "ec/xyzz.cuh"

// For each i, in affine form: out[4i] = a + b (mixed addition), out[4i+1] =
// a + b (xyzz + xyzz), out[4i+2] = 2a (xyzz doubling), out[4i+3] = 2a + b
// (a chain through all three formulas).
template <class O>
__device__ __forceinline__ void ec_selftest(const ec::affine<O>* a, const ec::affine<O>* b,
                                            ec::affine<O>* out, uint64_t n) {
    GRID_STRIDE(i, n) {
        ec::xyzz<O> p = ec::from_affine(a[i]);
        out[4 * i] = ec::to_affine(ec::add_mixed(p, b[i]));
        out[4 * i + 1] = ec::to_affine(ec::add(p, ec::from_affine(b[i])));
        ec::xyzz<O> d = ec::dbl(p);
        out[4 * i + 2] = ec::to_affine(d);
        out[4 * i + 3] = ec::to_affine(ec::add_mixed(d, b[i]));
    }
}

extern "C" __global__ void c2_g1_selftest(const ec::affine<fp_ops>* a, const ec::affine<fp_ops>* b,
                                          ec::affine<fp_ops>* out, uint64_t n) {
    ec_selftest(a, b, out, n);
}

extern "C" __global__ void c2_g2_selftest(const ec::affine<fp2_ops>* a, const ec::affine<fp2_ops>* b,
                                          ec::affine<fp2_ops>* out, uint64_t n) {
    ec_selftest(a, b, out, n);
}
