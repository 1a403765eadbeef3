// C ABI over sppark's BLS12-381 G1 Pippenger (msm/pippenger.cuh), for the
// benchmark only: SupraSeal C2's MSM, so our GPU MSM can be timed against it
// in the same process on the same data. Scalars in Montgomery form
// (blstrs::Scalar's memory), points in blst's affine layout.
#include <cuda.h>
#include <ff/bls12-381.hpp>
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>

typedef msm_t<bucket_t, point_t, affine_t, scalar_t> g1_msm_t;

// Everything uploaded per call (sppark's mult_pippenger).
extern "C" RustError c2_sppark_g1_msm(point_t* out, const affine_t* points, size_t n,
                                      const scalar_t* scalars) {
    return mult_pippenger<bucket_t>(out, points, n, scalars, true);
}

// Points uploaded once and kept on the device; null on failure.
extern "C" void* c2_sppark_g1_prepare(const affine_t* points, size_t n) {
    try {
        return new g1_msm_t(points, n);
    } catch (...) {
        return nullptr;
    }
}

// An MSM over the prepared points (scalars uploaded by sppark).
extern "C" RustError c2_sppark_g1_invoke(void* ctx, point_t* out, const scalar_t* scalars, size_t n) {
    try {
        // Null points: use the ones the constructor uploaded.
        return static_cast<g1_msm_t*>(ctx)->invoke(*out, static_cast<const affine_t*>(nullptr), n,
                                                   scalars, true);
    } catch (const cuda_error& e) {
        return RustError{e.code(), e.what()};
    }
}

extern "C" void c2_sppark_g1_free(void* ctx) { delete static_cast<g1_msm_t*>(ctx); }
