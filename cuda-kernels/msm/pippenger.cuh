// Pippenger multi-scalar multiplication, one template for G1 and G2.
//
// The host (c2-msm's gpu.rs) drives these steps on one stream:
//
// 1. split      every scalar (Montgomery or canonical, optional density
//               mask): 0 and masked-out scalars are dropped, scalars equal to
//               1 go to the "ones" list (summed by plain additions), the rest
//               are stored canonical with their base index ("others").
// 2. histogram  per window of c bits, signed digits d in [-2^(c-1), 2^(c-1)]
//               (bucket |d| - 1, the sign negates the base): count per bucket.
// 3. scan       exclusive prefix sum: bucket b's entries start at off[b].
// 4. scatter    each (scalar, window) writes its base index (top bit: sign)
//               at its bucket's cursor: a counting sort by bucket
//               (msm/sort.cuh: with global or with per-block counters).
// 5. accumulate the sorted entries are cut into equal segments, one thread
//               each, so skewed buckets cannot stall a thread; a bucket that
//               lies inside one segment is written directly, one that crosses
//               segment borders leaves partial sums (head/tail) that
// 6. fixup      adds up per bucket (the heads of very long buckets summed
//               in groups first: fixup_heads).
// 7. reduce     per window, sum_j (j + 1) B_j by running sums over chunks of
//               Q buckets: chunk k yields T_k + kQ * S_k.
// 8. sum        chunk results are summed in groups until one point per
//               window remains, converted to affine and combined on the host
//               (sum_w 2^(cw) W_w: a few hundred host doublings).
//
// Bucket order inside a bucket depends on atomics, but point addition is
// exact and commutative, so results are deterministic.
#pragma once
#include "ec/xyzz.cuh"
#include "ff/fr.cuh"
#include "msm/sort.cuh"

namespace msm {

/// Counters the split step fills: [0] others, [1] ones.
enum { OTHERS = 0, ONES = 1 };

// The 32-lane warp appends `pred` lanes to a list: one atomic per warp.
// Every lane of the warp must call it (see the warp-uniform loops below).
__device__ __forceinline__ uint32_t warp_append(uint32_t* counter, bool pred) {
    const uint32_t lane = threadIdx.x & 31;
    const uint32_t ballot = __ballot_sync(0xffffffffu, pred);
    uint32_t base = 0;
    if (lane == 0 && ballot) base = atomicAdd(counter, __popc(ballot));
    base = __shfl_sync(0xffffffffu, base, 0);
    return base + __popc(ballot & ((1u << lane) - 1));
}

// Grid-stride loop over warp-aligned indices, so all 32 lanes of a warp run
// the same number of iterations (ballots need the full warp); `i` may be
// >= n in the last one.
#define WARP_UNIFORM_LOOP(i, n)                                                        \
    for (uint64_t _b = (uint64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); _b < (n); \
         _b += (uint64_t)gridDim.x * blockDim.x)                                       \
        for (uint64_t i = _b + (threadIdx.x & 31u), _once = 1; _once; _once = 0)

__device__ __forceinline__ bool fr_is(const fr_t& s, uint32_t v) {
    bool r = s.val[0] == v;
#pragma unroll
    for (int k = 1; k < 8; k++) r &= s.val[k] == 0;
    return r;
}

/// Step 1's two shared parts. Whether scalar i, already known to be taken,
/// stays taken under `mask` (may be null: base i) and within the run's
/// bases [lo, hi), with its base in `base`: the k-th set scalar meets base
/// k (`word_rank[w]`: the set bits before word w).
__device__ __forceinline__ bool split_base(uint64_t i, const uint64_t* mask, const uint32_t* word_rank,
                                           uint64_t lo, uint64_t hi, uint64_t& base) {
    base = i;
    if (mask) {
        const uint64_t w = mask[i >> 6];
        if (!((w >> (i & 63)) & 1)) return false;
        base = word_rank[i >> 6] + __popcll(w & ((1ull << (i & 63)) - 1));
    }
    return base >= lo && base < hi;
}

/// Appends a scalar to the ones' list or the others' (value and base,
/// renumbered from `lo`); every lane of the warp calls it (ballots).
__device__ __forceinline__ void split_append(bool one, bool other, const fr_t& s, uint64_t base, uint64_t lo,
                                             fr_t* others, uint32_t* others_base, uint32_t* ones_base,
                                             uint32_t* counters) {
    const uint32_t oi = warp_append(&counters[OTHERS], other);
    const uint32_t pi = warp_append(&counters[ONES], one);
    if (other) {
        others[oi] = s;
        others_base[oi] = (uint32_t)(base - lo);
    }
    if (one) ones_base[pi] = (uint32_t)(base - lo);
}

/// Step 1. `mask` (may be null) holds one bit per scalar; `word_rank[w]` the
/// set bits before word w. The k-th set scalar meets base k; only bases in
/// [lo, hi) are taken (one chunk of streamed bases), renumbered from 0.
/// Only scalars [first, end) are read: the host's bound on those whose base
/// can fall in [lo, hi) (c2_msm::plan::split_items), so a run over one
/// chunk of 16 reads 1/16 of the scalars instead of all of them.
__device__ __forceinline__ void split(const fr_t* scalars, uint64_t n, uint64_t first, uint64_t end,
                                      const uint64_t* mask, const uint32_t* word_rank, bool montgomery,
                                      uint64_t lo, uint64_t hi, fr_t* others, uint32_t* others_base,
                                      uint32_t* ones_base, uint32_t* counters) {
    const uint64_t span = end > first ? end - first : 0;
    WARP_UNIFORM_LOOP(k, span) {
        const uint64_t i = first + k;
        uint64_t base = 0;
        const bool take = k < span && i < n && split_base(i, mask, word_rank, lo, hi, base);
        fr_t s = fr_zero();
        if (take) s = montgomery ? fr_unmont(scalars[i]) : fr_reduce(scalars[i]);
        const bool one = take && fr_is(s, 1);
        const bool other = take && !one && !fr_is(s, 0);
        split_append(one, other, s, base, lo, others, others_base, ones_base, counters);
    }
}

/// Step 1 from a compact witness (c2_core::CompactWitness): `bits` holds
/// one bit per variable (its value when 0 or 1), and `nfull` other values
/// (Montgomery) at their variable indices. Items 0..span are the bits
/// [first, end) (a set bit is a one; `first`, `end` as in `split`), items
/// span.. the listed values (all of them: 3 % of a witness); `mask`,
/// `word_rank`, `lo`, `hi` and the outputs as in `split`. The lists come out
/// in another order than `split`'s from the expanded scalars; the MSM's sum
/// does not depend on it (point addition is exact and commutative).
__device__ __forceinline__ void split_compact(const uint64_t* bits, uint64_t len, uint64_t first, uint64_t end,
                                              const uint32_t* full_index, const fr_t* full_value,
                                              uint64_t nfull, const uint64_t* mask, const uint32_t* word_rank,
                                              uint64_t lo, uint64_t hi, fr_t* others, uint32_t* others_base,
                                              uint32_t* ones_base, uint32_t* counters) {
    const uint64_t span = end > first ? end - first : 0;
    WARP_UNIFORM_LOOP(item, span + nfull) {
        const bool listed = item >= span && item < span + nfull;
        uint64_t i = first + item;
        bool take = item < span && i < len && ((bits[i >> 6] >> (i & 63)) & 1);
        if (listed) {
            i = full_index[item - span];
            take = i < len;
        }
        uint64_t base = 0;
        take = take && split_base(i, mask, word_rank, lo, hi, base);
        // A bit item is a one; a listed value is classified as `split` does
        // (the compact form lists no 0 or 1, but a value is never trusted).
        fr_t s = fr_zero();
        if (take && listed) s = fr_unmont(full_value[item - span]);
        const bool one = take && (!listed || fr_is(s, 1));
        const bool other = take && listed && !fr_is(s, 1) && !fr_is(s, 0);
        split_append(one, other, s, base, lo, others, others_base, ones_base, counters);
    }
}

// The bucket holding sorted position p: the last b with off[b] <= p
// (off: nbk + 1 bucket offsets, non-decreasing).
__device__ __forceinline__ uint32_t bucket_of(const uint32_t* off, uint32_t nbk, uint64_t p) {
    uint32_t lo = 0, hi = nbk;
    while (hi - lo > 1) {
        const uint32_t mid = (lo + hi) / 2;
        if (off[mid] <= p) lo = mid; else hi = mid;
    }
    return lo;
}

/// Step 5: segment s = entries [s * seg, min((s + 1) * seg, total)).
/// INLINE: the mixed addition inlined into the loop or called. `entries`
/// null: entry q is `bases[q]`.
///
/// One flat loop over the segment's entries, the bucket change a short
/// branch inside it: every thread of a warp runs the same number of
/// additions. A loop per bucket made a warp wait at the end of each bucket
/// for its longest-running lane (ncu, G1 2^24, session 17: 24.5 of 32 lanes
/// active on average; segments span ~4 buckets of different lengths).
template <class O, bool INLINE>
__device__ __forceinline__ void accumulate(const ec::affine<O>* bases, const uint32_t* entries,
                                           const uint32_t* off, uint32_t nbk, uint32_t seg,
                                           ec::xyzz<O>* buckets, ec::xyzz<O>* head,
                                           ec::xyzz<O>* tail) {
    const uint64_t total = off[nbk];
    const uint64_t nseg = (total + seg - 1) / seg;
    for (uint64_t s = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; s < nseg;
         s += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t p0 = s * seg, p1 = min(p0 + seg, total);
        uint32_t b = bucket_of(off, nbk, p0);
        uint64_t end = off[b + 1];  // where bucket b's entries stop
        // Only the segment's first bucket can start before it.
        bool starts_before = off[b] < p0;
        ec::xyzz<O> acc = ec::infinity<O>();
        for (uint64_t q = p0; q < p1; q++) {
            // No entries: the points themselves, in bucket order (what the
            // affine pair passes of msm/batch_affine.cuh leave).
            const uint32_t e = entries ? entries[q] : (uint32_t)q;
            ec::affine<O> pt = bases[e & ~NEG];
            if (e & NEG) pt = ec::neg(pt);
            if constexpr (INLINE) acc = ec::add_mixed_inline(acc, pt);
            else acc = ec::add_mixed(acc, pt);
            if (q + 1 == end || q + 1 == p1) {
                // Bucket b's run in this segment ends: whole buckets are
                // written directly, pieces go to the fix-up.
                if (starts_before) head[s] = acc;
                else if (end > p1) tail[s] = acc;
                else buckets[b] = acc;
                acc = ec::infinity<O>();
                starts_before = false;
                // Next non-empty bucket (empty ones have off[b] == off[b+1]).
                while (b + 1 < nbk && end <= q + 1) end = off[++b + 1];
            }
        }
    }
}

/// Heads per group that `fixup_heads` sums ahead of the fix-up.
constexpr uint32_t FIXUP_GROUP = 16;

// Segments s0..s1 that bucket b's entries [off[b], off[b + 1]) touch.
__device__ __forceinline__ void bucket_segments(const uint32_t* off, uint32_t b, uint32_t seg, uint32_t& s0,
                                                uint32_t& s1) {
    s0 = off[b] / seg;
    s1 = (off[b + 1] - 1) / seg;
}

// Whether segments k..k + FIXUP_GROUP - 1 form a group fixup_heads summed
// into head[k]: k on a group border and the group all heads of a bucket
// whose last segment is s1 (the caller knows k is past the bucket's first).
__device__ __forceinline__ bool head_group(uint64_t k, uint32_t s1) {
    return k % FIXUP_GROUP == 0 && k + FIXUP_GROUP - 1 <= s1;
}

/// Step 6a: thread j sums the heads of segments jG..jG + G - 1 (G =
/// FIXUP_GROUP) into head[jG] where all G are heads of one bucket, so the
/// fix-up's chain for a bucket over L segments is ~L / G + 2G additions
/// instead of L. Long buckets appear where a window holds few buckets:
/// G2 2^20 at c = 14 has a top window of 3 bits, its 2^20 entries in ~8
/// buckets of ~256 segments, and one thread per bucket added them in
/// sequence (fix-up 16.1 of 74.0 ms, H200, ncu: SMs active 3 % of the
/// kernel's cycles). Groups on fixed borders keep a warp's lanes on the same
/// work (groups led by every 16th head of a bucket left 15 of 16 lanes idle:
/// batched affine's fix-up at G1 2^24 went from 12 to 150 ms).
template <class O>
__device__ __forceinline__ void fixup_heads(const uint32_t* off, uint32_t nbk, uint32_t seg, uint64_t nseg,
                                            ec::xyzz<O>* head) {
    const uint64_t total = off[nbk];
    const uint64_t groups = nseg / FIXUP_GROUP;
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < groups;
         j += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t k = j * FIXUP_GROUP, p0 = k * seg;
        if (p0 >= total) continue;
        const uint32_t b = bucket_of(off, nbk, p0);
        if (off[b] >= p0) continue;  // segment k starts its bucket: no head
        uint32_t s0, s1;
        bucket_segments(off, b, seg, s0, s1);
        if (!head_group(k, s1)) continue;
        ec::xyzz<O> acc = head[k];
        for (uint64_t i = k + 1; i < k + FIXUP_GROUP; i++) acc = ec::add(acc, head[i]);
        head[k] = acc;
    }
}

/// Step 6: buckets that cross segment borders (and empty ones). With
/// `totals` (may be null), every bucket of this run is also added into
/// `totals[b]`: an MSM made of several runs over parts of its bases (streamed
/// chunks, bounded runs) keeps one set of bucket sums and reduces it once,
/// instead of reducing every window in every run (measured on the H200 at a
/// 16 GiB cap: +1.2 s of kernel time per 32 GiB partition in per-run costs).
template <class O>
__device__ __forceinline__ void fixup(const uint32_t* off, uint32_t nbk, uint32_t seg,
                                      ec::xyzz<O>* buckets, const ec::xyzz<O>* head,
                                      const ec::xyzz<O>* tail, ec::xyzz<O>* totals) {
    for (uint64_t b = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; b < nbk;
         b += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t s = off[b], e = off[b + 1];
        if (s == e) {
            // Nothing in this run: totals[b] keeps what earlier runs added.
            if (!totals) buckets[b] = ec::infinity<O>();
            continue;
        }
        uint32_t s0, s1;
        bucket_segments(off, (uint32_t)b, seg, s0, s1);
        ec::xyzz<O> acc;
        if (s0 == s1) {
            if (!totals) continue;  // accumulate wrote the whole bucket
            acc = buckets[b];
        } else {
            // Long buckets: fixup_heads summed whole groups of their heads.
            acc = tail[s0];
            for (uint32_t k = s0 + 1; k <= s1;) {
                acc = ec::add(acc, head[k]);
                k += head_group(k, s1) ? FIXUP_GROUP : 1;
            }
        }
        if (totals) totals[b] = ec::add(totals[b], acc);
        else buckets[b] = acc;
    }
}

/// Step 7: thread t = w * (buckets / q) + k sums chunk k of window w:
/// sum_{j in chunk} (j + 1) B_j = T_k + kq * S_k with S_k = sum B_j and
/// T_k = sum (j - kq + 1) B_j (running sums from the top of the chunk).
template <class O>
__device__ __forceinline__ void reduce(const ec::xyzz<O>* buckets, uint32_t wn, uint32_t nb,
                                       uint32_t q, ec::xyzz<O>* out) {
    const uint32_t chunks = nb / q;
    for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < (uint64_t)wn * chunks;
         t += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t w = (uint32_t)(t / chunks), k = (uint32_t)(t % chunks);
        const ec::xyzz<O>* bk = buckets + (uint64_t)w * nb + (uint64_t)k * q;
        ec::xyzz<O> sum = ec::infinity<O>(), running = ec::infinity<O>();
        for (uint32_t j = q; j-- > 0;) {
            sum = ec::add(sum, bk[j]);
            running = ec::add(running, sum);
        }
        // kq * S by double-and-add (kq < nb <= 2^23).
        const uint32_t mult = k * q;
        ec::xyzz<O> scaled = ec::infinity<O>();
        for (int bit = 31 - __clz(mult | 1); mult && bit >= 0; bit--) {
            scaled = ec::dbl(scaled);
            if ((mult >> bit) & 1) scaled = ec::add(scaled, sum);
        }
        out[t] = ec::add(running, scaled);
    }
}

/// out[j] = sum of in[j * group .. min((j + 1) * group, n)).
template <class O>
__device__ __forceinline__ void sum_groups(const ec::xyzz<O>* in, uint64_t n, uint32_t group,
                                           ec::xyzz<O>* out) {
    const uint64_t groups = (n + group - 1) / group;
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < groups;
         j += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t end = min((j + 1) * group, n);
        ec::xyzz<O> acc = in[j * group];
        for (uint64_t i = j * group + 1; i < end; i++) acc = ec::add(acc, in[i]);
        out[j] = acc;
    }
}

/// out[j] = sum of bases[idx[i]] for i in [j * group, min((j + 1) * group, n)):
/// the scalars equal to one.
template <class O>
__device__ __forceinline__ void sum_gathered(const ec::affine<O>* bases, const uint32_t* idx,
                                             uint64_t n, uint32_t group, ec::xyzz<O>* out) {
    const uint64_t groups = (n + group - 1) / group;
    for (uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; j < groups;
         j += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t end = min((j + 1) * group, n);
        ec::xyzz<O> acc = ec::infinity<O>();
        for (uint64_t i = j * group; i < end; i++) acc = ec::add_mixed(acc, bases[idx[i]]);
        out[j] = acc;
    }
}

}  // namespace msm
