// The curve self-test module (c2-cuda feature `selftest`): the XYZZ formulas
// of ec/xyzz.cuh run on given points, for differential tests against blstrs.
// Test tooling only: a production binary does not carry these kernels.
#include "ff/fr.cuh"

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

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

