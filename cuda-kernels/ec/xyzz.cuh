// Short Weierstrass points (y^2 = x^3 + b, a = 0) over Fp (G1) or Fp2 (G2),
// one template over a field-ops struct (fp_ops / fp2_ops from ff/field.cuh).
//
// affine: blst's layout (x, y); the point at infinity is all zeros, as in
//         blst/blstrs, so parameter vectors upload as raw bytes.
// xyzz:   extended Jacobian (X, Y, ZZ, ZZZ) with x = X/ZZ, y = Y/ZZZ and
//         ZZ^3 = ZZZ^2; infinity has ZZ = 0. Bucket accumulators use it:
//         a mixed addition costs 8M + 2S and needs no inversion.
// Formulas: hyperelliptic.org EFD, g1p/auto-shortw-xyzz (madd-2008-s,
// add-2008-s, dbl-2008-s-1, mdbl-2008-s-1), with the exceptional cases
// (infinity, P + P, P + (-P)) handled explicitly.
//
// Every formula is a real call (__noinline__): one copy per curve instead of
// one per call site. Inlining the additions into the MSM kernels made the
// sm_90 build take 13.5 min instead of ~1.5 (ptxas on ~10^5-instruction G2
// kernels); a call costs ~100 instructions against ~7,000 (G1) or ~24,000
// (G2) for the addition itself.
#pragma once

namespace ec {

template <class O> struct affine {
    typename O::F x, y;
};

template <class O> struct xyzz {
    typename O::F x, y, zz, zzz;
};

template <class O> __device__ __forceinline__ bool is_zero(typename O::F a) {
    return O::eq(a, O::zero());
}

template <class O> __device__ __forceinline__ bool is_inf(const affine<O>& p) {
    return is_zero<O>(p.x) && is_zero<O>(p.y);
}

template <class O> __device__ __forceinline__ bool is_inf(const xyzz<O>& p) {
    return is_zero<O>(p.zz);
}

template <class O> __device__ __forceinline__ xyzz<O> infinity() {
    return {O::zero(), O::one(), O::zero(), O::zero()};
}

// -P (infinity, (0, 0), stays (0, 0)).
template <class O> __device__ __forceinline__ affine<O> neg(const affine<O>& p) {
    return {p.x, O::sub(O::zero(), p.y)};
}

template <class O> __device__ __forceinline__ xyzz<O> from_affine(const affine<O>& p) {
    if (is_inf(p)) return infinity<O>();
    return {p.x, p.y, O::one(), O::one()};
}

// 2P for P in xyzz (dbl-2008-s-1, a = 0).
template <class O> __device__ __noinline__ xyzz<O> dbl(const xyzz<O>& p) {
    typedef typename O::F F;
    if (is_inf(p)) return p;
    F u = O::dbl(p.y);
    F v = O::sqr(u);
    F w = O::mul(u, v);
    F s = O::mul(p.x, v);
    F x2 = O::sqr(p.x);
    F m = O::add(O::dbl(x2), x2);
    F x3 = O::sub(O::sqr(m), O::dbl(s));
    F y3 = O::sub(O::mul(m, O::sub(s, x3)), O::mul(w, p.y));
    return {x3, y3, O::mul(v, p.zz), O::mul(w, p.zzz)};
}

// 2P for P affine: the xyzz doubling with ZZ = ZZZ = 1 (mdbl-2008-s-1 is
// that formula with the two products by 1 dropped; only the P == Q branch of
// a mixed addition uses it).
template <class O> __device__ __noinline__ xyzz<O> dbl_affine(const affine<O>& p) {
    return dbl(from_affine(p));
}

// P + Q with Q affine (madd-2008-s), inlined into the caller: only for the
// MSM's bucket loop (one call site per curve), see add_mixed.
template <class O> __device__ __forceinline__ xyzz<O> add_mixed_inline(const xyzz<O>& p, const affine<O>& q) {
    typedef typename O::F F;
    if (is_inf(q)) return p;
    if (is_inf(p)) return from_affine(q);
    F u2 = O::mul(q.x, p.zz);
    F s2 = O::mul(q.y, p.zzz);
    F pp_ = O::sub(u2, p.x);
    F r = O::sub(s2, p.y);
    if (is_zero<O>(pp_)) {
        if (is_zero<O>(r)) return dbl_affine(q);  // P == Q
        return infinity<O>();                      // P == -Q
    }
    F pp = O::sqr(pp_);
    F ppp = O::mul(pp_, pp);
    F q_ = O::mul(p.x, pp);
    F x3 = O::sub(O::sub(O::sqr(r), ppp), O::dbl(q_));
    F y3 = O::sub(O::mul(r, O::sub(q_, x3)), O::mul(p.y, ppp));
    return {x3, y3, O::mul(p.zz, pp), O::mul(p.zzz, ppp)};
}

// P + Q with Q affine, as a real call.
template <class O> __device__ __noinline__ xyzz<O> add_mixed(const xyzz<O>& p, const affine<O>& q) {
    return add_mixed_inline(p, q);
}

// P + Q, both xyzz (add-2008-s).
template <class O> __device__ __noinline__ xyzz<O> add(const xyzz<O>& p, const xyzz<O>& q) {
    typedef typename O::F F;
    if (is_inf(q)) return p;
    if (is_inf(p)) return q;
    F u1 = O::mul(p.x, q.zz);
    F u2 = O::mul(q.x, p.zz);
    F s1 = O::mul(p.y, q.zzz);
    F s2 = O::mul(q.y, p.zzz);
    F pp_ = O::sub(u2, u1);
    F r = O::sub(s2, s1);
    if (is_zero<O>(pp_)) {
        if (is_zero<O>(r)) return dbl(p);
        return infinity<O>();
    }
    F pp = O::sqr(pp_);
    F ppp = O::mul(pp_, pp);
    F q_ = O::mul(u1, pp);
    F x3 = O::sub(O::sub(O::sqr(r), ppp), O::dbl(q_));
    F y3 = O::sub(O::mul(r, O::sub(q_, x3)), O::mul(s1, ppp));
    return {x3, y3, O::mul(O::mul(p.zz, q.zz), pp), O::mul(O::mul(p.zzz, q.zzz), ppp)};
}

// xyzz -> affine with one inversion: 1/ZZZ, then 1/ZZ = ZZ^2 / ZZZ^2
// (ZZ^3 = ZZZ^2). Infinity maps to (0, 0), blst's encoding.
template <class O> __device__ __noinline__ affine<O> to_affine(const xyzz<O>& p) {
    typedef typename O::F F;
    if (is_inf(p)) return {O::zero(), O::zero()};
    F zzz_inv = O::inv(p.zzz);
    F zz_inv = O::mul(O::sqr(p.zz), O::sqr(zzz_inv));
    return {O::mul(p.x, zz_inv), O::mul(p.y, zzz_inv)};
}

}  // namespace ec
