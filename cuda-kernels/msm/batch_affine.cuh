// Bucket accumulation (step 5 of pippenger.cuh) with affine additions that
// share one field inversion per batch (Montgomery's trick).
//
// An affine addition P + Q costs 1/(x_Q - x_P) plus 3 products; with the
// inversion shared by k independent additions (3 more products each, k - 1
// of them in the combined product and its unwinding) it costs ~6 products +
// inv/k, against 10 (8M + 2S) for the mixed XYZZ addition. Our inversion is
// Fermat's (~570 products; ~574 for Fp2 over ~3 per Fp2 product), so the
// batch must be large: break-even is k ~ 140 for G1 and ~48 for G2 (Fp2
// products cost ~3 Fp ones, the inversion barely more than in Fp).
//
// Independent additions: each thread walks `batch` segments ("chains") in
// lockstep, one entry per chain per step. Chain state lives in global memory
// (layout [chain]; chain i of thread t is segment i * T + t, T threads), so
// a step costs ~580 bytes of traffic per addition beside the products.
// Outputs are those of the XYZZ kernel (bucket, or head / tail partials per
// segment), so the fix-up and everything after it are shared. Measured on
// the H200 (session 21, G1 2^27): 1182.6 ms of accumulation at batch 512
// against XYZZ's 929.5: the chain state's traffic, not the products, bounds
// it.
//
// Pair passes (pair_counts, pair_sums): chains cut at bucket boundaries.
// Each pass adds neighbouring points of every bucket's list (2j + 2j + 1),
// so no addition depends on another of its pass and none crosses a bucket:
// a thread takes `batch` consecutive outputs under one inversion and keeps
// no state between passes beyond its outputs. Every pass halves the lists;
// the XYZZ accumulation sums what the last one leaves.
#pragma once
#include "msm/pippenger.cuh"

namespace msm {

/// Bit 31 of a chain's bucket word: its accumulator holds a point.
constexpr uint32_t HAS_POINT = 1u << 31;

/// What one step does to one chain.
enum class Step : uint8_t {
    Idle,    // past the chain's end, or the base is the point at infinity
    Set,     // empty accumulator: take the base
    Add,     // acc + P, d = x_P - x_acc
    Double,  // P == acc: 2 acc, d = 2 y_acc
    Cancel,  // P == -acc (or a point of order 2): the accumulator empties
};

// Classifies the step and gives the denominator d (never zero for Add and
// Double, so one zero cannot spoil a whole batch's product).
template <class O>
__device__ __forceinline__ Step classify(const ec::affine<O>& p, const ec::affine<O>& acc, bool has,
                                         typename O::F& d) {
    if (ec::is_inf(p)) return Step::Idle;
    if (!has) return Step::Set;
    d = O::sub(p.x, acc.x);
    if (!ec::is_zero<O>(d)) return Step::Add;
    if (O::eq(p.y, acc.y) && !ec::is_zero<O>(acc.y)) {
        d = O::dbl(acc.y);
        return Step::Double;
    }
    return Step::Cancel;
}

/// acc + p for an Add or Double step (Double: p == acc) whose denominator's
/// inverse is `inv_d`: lambda = (y_p - y_acc) / d, or 3 x_acc^2 / (2 y_acc).
template <class O>
__device__ __forceinline__ ec::affine<O> add_divided(const ec::affine<O>& acc, const ec::affine<O>& p, Step k,
                                                     const typename O::F& inv_d) {
    typedef typename O::F F;
    F num = O::sub(p.y, acc.y);
    if (k == Step::Double) {
        const F x2 = O::sqr(acc.x);
        num = O::add(O::dbl(x2), x2);
    }
    const F lambda = O::mul(num, inv_d);
    const F x3 = O::sub(O::sub(O::sqr(lambda), acc.x), p.x);
    return {x3, O::sub(O::mul(lambda, O::sub(acc.x, x3)), acc.y)};
}

/// Step 5, batched affine. Launch at least ceil(nseg / batch) threads;
/// `acc`, `prefix` and `cur` hold one slot per segment.
template <class O>
__device__ __forceinline__ void accumulate_affine(const ec::affine<O>* bases, const uint32_t* entries,
                                                  const uint32_t* off, uint32_t nbk, uint32_t seg,
                                                  uint32_t batch, ec::affine<O>* acc,
                                                  typename O::F* prefix, uint32_t* cur,
                                                  ec::xyzz<O>* buckets, ec::xyzz<O>* head,
                                                  ec::xyzz<O>* tail) {
    typedef typename O::F F;
    const uint64_t total = off[nbk];
    const uint64_t nseg = (total + seg - 1) / seg;
    const uint64_t T = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (uint32_t i = 0; i < batch && i * T + t < nseg; i++) {
        const uint64_t s = i * T + t;
        cur[s] = bucket_of(off, nbk, s * seg);
    }
    // The base entry q meets, signed.
    auto base_at = [&](uint64_t q) {
        const uint32_t e = entries[q];
        ec::affine<O> p = bases[e & ~NEG];
        if (e & NEG) p = ec::neg(p);
        return p;
    };
    for (uint32_t step = 0; step < seg; step++) {
        // Forward: prefix[s] = product of the denominators of earlier chains.
        F run = O::one();
        for (uint32_t i = 0; i < batch && i * T + t < nseg; i++) {
            const uint64_t s = i * T + t, p = s * seg + step;
            if (p >= min(s * seg + seg, total)) break;  // only the last segment is short
            const ec::affine<O> pt = base_at(p);
            const bool has = cur[s] & HAS_POINT;
            const ec::affine<O> a = has ? acc[s] : pt;
            F d;
            const Step k = classify(pt, a, has, d);
            if (k == Step::Add || k == Step::Double) {
                prefix[s] = run;
                run = O::mul(run, d);
            }
        }
        // A batch without additions has run == 1, and 1/1 = 1.
        F inv = O::eq(run, O::one()) ? run : O::inv(run);
        // Backward: unwind the product, add, and flush finished buckets.
        for (uint32_t i = batch; i-- > 0;) {
            const uint64_t s = i * T + t;
            if (s >= nseg) continue;
            const uint64_t p0 = s * seg, p1 = min(p0 + seg, total), p = p0 + step;
            if (p >= p1) continue;
            const ec::affine<O> pt = base_at(p);
            const uint32_t word = cur[s];
            bool has = word & HAS_POINT;
            ec::affine<O> a = has ? acc[s] : pt;
            F d;
            const Step k = classify(pt, a, has, d);
            if (k == Step::Set) {
                a = pt;
                has = true;
            } else if (k == Step::Cancel) {
                has = false;
            } else if (k != Step::Idle) {
                const F inv_d = O::mul(inv, prefix[s]);
                inv = O::mul(inv, d);
                a = add_divided(a, pt, k, inv_d);
            }
            const uint32_t b = word & ~HAS_POINT;
            if (p + 1 == off[b + 1] || p + 1 == p1) {
                // The bucket's run in this chain ends: write it like the
                // XYZZ kernel does, then move to the next non-empty bucket.
                const ec::xyzz<O> out = has ? ec::from_affine(a) : ec::infinity<O>();
                const bool starts_before = off[b] < p0, ends_after = off[b + 1] > p1;
                if (starts_before) head[s] = out;
                else if (ends_after) tail[s] = out;
                else buckets[b] = out;
                uint32_t nb = b;
                while (nb + 1 < nbk && off[nb + 1] <= p + 1) nb++;
                cur[s] = nb;
            } else {
                if (has) acc[s] = a;
                cur[s] = b | (has ? HAS_POINT : 0u);
            }
        }
    }
}

/// Counts of a pair pass: bucket b keeps ceil(n_b / 2) points; slot nbk
/// gets 0, so the exclusive scan that follows leaves the total there.
__device__ __forceinline__ void pair_counts(const uint32_t* off, uint32_t nbk, uint32_t* cnt) {
    for (uint64_t b = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; b <= nbk;
         b += (uint64_t)gridDim.x * blockDim.x)
        cnt[b] = b < nbk ? (off[b + 1] - off[b] + 1) / 2 : 0;
}

/// One pair pass over every bucket's list (bucket b: points
/// [off_in[b], off_in[b + 1]) in bucket order): output j of bucket b is
/// point 2j + point 2j + 1 of its list, or point 2j alone where the list has
/// no partner for it. Pairs never cross a bucket's border, so no partial
/// sum is left for a fix-up, and every addition of a pass is independent of
/// the others: thread t takes the `batch` consecutive outputs from t *
/// batch, and one inversion (Montgomery's trick) serves all of them. The
/// prefix products wait in the outputs' x slots between the forward and
/// the backward walk (no other scratch).
///
/// `entries` non-null: list position i holds the base `pts[entries[i]]`
/// (bit 31: negated), the sorted entries of a window pass; null: the point
/// `pts[i]` (the previous pass's outputs).
template <class O>
__device__ __forceinline__ void pair_sums(const ec::affine<O>* pts, const uint32_t* entries, const uint32_t* off_in,
                                          const uint32_t* off_out, uint32_t nbk, uint32_t batch,
                                          ec::affine<O>* out) {
    typedef typename O::F F;
    const uint64_t total = off_out[nbk];
    const uint64_t o0 = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) * batch;
    if (o0 >= total) return;
    const uint64_t o1 = min(o0 + batch, total);
    auto load = [&](uint64_t i) {
        if (!entries) return pts[i];
        const uint32_t e = entries[i];
        ec::affine<O> p = pts[e & ~NEG];
        if (e & NEG) p = ec::neg(p);
        return p;
    };
    // The forward walk needs only the x coordinates (y where they match).
    auto load_x = [&](uint64_t i) { return entries ? pts[entries[i] & ~NEG].x : pts[i].x; };
    // List position of output o's first point, and whether it has a partner.
    uint32_t b = bucket_of(off_out, nbk, o0);
    auto first = [&](uint64_t o, bool& pair) {
        const uint64_t i = off_in[b] + 2 * (o - off_out[b]);
        pair = i + 1 < off_in[b + 1];
        return i;
    };
    F run = O::one();
    for (uint64_t o = o0; o < o1; o++) {
        while (off_out[b + 1] <= o) b++;  // empty buckets have no outputs
        bool pair;
        const uint64_t i = first(o, pair);
        if (!pair) continue;
        const F px = load_x(i), qx = load_x(i + 1);
        F d = O::sub(qx, px);
        if (ec::is_zero<O>(d) || ec::is_zero<O>(px) || ec::is_zero<O>(qx)) {
            // Equal x or a possible infinity ((0, 0)): classify the full
            // points exactly as the backward walk does.
            const ec::affine<O> p = load(i), q = load(i + 1);
            const Step k = classify(q, p, !ec::is_inf(p), d);
            if (k != Step::Add && k != Step::Double) continue;
        }
        out[o].x = run;
        run = O::mul(run, d);
    }
    // No division in the batch: run == 1, and 1/1 = 1.
    F inv = O::eq(run, O::one()) ? run : O::inv(run);
    for (uint64_t o = o1; o-- > o0;) {
        while (off_out[b] > o) b--;
        bool pair;
        const uint64_t i = first(o, pair);
        const ec::affine<O> p = load(i);
        if (!pair) {
            out[o] = p;
            continue;
        }
        const ec::affine<O> q = load(i + 1);
        F d;
        // p is the accumulator here: Idle = q at infinity (keep p), Set = p
        // at infinity (take q).
        const Step k = classify(q, p, !ec::is_inf(p), d);
        if (k == Step::Idle) {
            out[o] = p;
        } else if (k == Step::Set) {
            out[o] = q;
        } else if (k == Step::Cancel) {
            out[o] = {O::zero(), O::zero()};
        } else {
            const F inv_d = O::mul(inv, out[o].x);
            inv = O::mul(inv, d);
            out[o] = add_divided(p, q, k, inv_d);
        }
    }
}

}  // namespace msm
