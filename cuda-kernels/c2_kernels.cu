// Entry points of the porep-c2 kernel module (one fatbin, loaded lazily per
// device by c2-cuda). Keep this file thin: the math lives in the headers.
#include "ff/fr.cuh"
#include "ntt/ntt.cuh"

#define GRID_STRIDE(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

// log_n >= 8: one block of 256 threads per 16 x 16 tile (2^(log_n - 8)
// blocks); smaller sizes: any grid.
extern "C" __global__ void c2_ntt_bit_reverse(fr_t* data, uint32_t log_n) {
    if (log_n >= 8) {
        ntt::bit_reverse_tiles(data, log_n);
    } else {
        ntt::bit_reverse_in_place(data, log_n);
    }
}

// The passes run 256 threads per block (c2-ntt's PASS_THREADS); 4 blocks of
// 32 KB shared memory per SM need <= 64 registers per thread, which the
// bounds hold them to (68 without, since the shared planes; no spills).
extern "C" __global__ void __launch_bounds__(256, 4) c2_ntt_pass_inverse(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0,
                                               uint32_t k, uint32_t c_bits, const fr_t* scale_hi,
                                               const fr_t* scale_lo, uint32_t lo_bits) {
    ntt::stages_pass_inverse(data, tw, log_n, s0, k, c_bits, scale_hi, scale_lo, lo_bits);
}

extern "C" __global__ void __launch_bounds__(256, 4) c2_ntt_pass(fr_t* data, const fr_t* tw, uint32_t log_n, uint32_t s0,
                                       uint32_t k, uint32_t c_bits) {
    ntt::stages_pass(data, tw, log_n, s0, k, c_bits);
}

// A transform's last pass folded into acc (ntt::stages_pass): acc *= result
// (zinv null) or acc = (acc - result) * zinv; `data` is not written back.
extern "C" __global__ void __launch_bounds__(256, 4) c2_ntt_pass_combine(fr_t* data, const fr_t* tw, uint32_t log_n,
                                               uint32_t s0, uint32_t k, uint32_t c_bits, fr_t* acc,
                                               const fr_t* zinv) {
    ntt::stages_pass(data, tw, log_n, s0, k, c_bits, acc, zinv);
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

// a[i] *= b[i]: the first half of the H quotient (a·b on the coset), so
// that c can take b's buffer afterwards; only where a transform has no pass
// to fold it into (size 1).
extern "C" __global__ void c2_mul_pointwise(fr_t* a, const fr_t* b, uint64_t n) {
    GRID_STRIDE(i, n) { a[i] = fr_mul(a[i], b[i]); }
}

// a[i] = (a[i] - c[i]) * zinv: the second half, (a·b - c) / Z on the coset
// (size 1 only, as above).
extern "C" __global__ void c2_sub_scale(fr_t* a, const fr_t* c, const fr_t* zinv, uint64_t n) {
    const fr_t z = *zinv;
    GRID_STRIDE(i, n) { a[i] = fr_mul(fr_sub(a[i], c[i]), z); }
}

// ---- a, b, c from the constraint matrices (abc/sparse.cuh) ----
#include "abc/sparse.cuh"

extern "C" __global__ void c2_abc_rows(fr_t* out, const uint32_t* row_starts, const uint32_t* cols,
                                       const uint32_t* coeff_index, const fr_t* coeffs, const fr_t* z,
                                       uint64_t rows, uint32_t one_index, uint64_t out_len, uint64_t input_rule,
                                       uint64_t aux_rule, uint64_t inputs_block) {
    abc::rows_product(out, row_starts, cols, coeff_index, coeffs, z, rows, one_index, out_len,
                      abc::make_shift(input_rule, aux_rule, inputs_block));
}

extern "C" __global__ void c2_abc_long_rows(fr_t* out, const uint32_t* row_starts, const uint32_t* cols,
                                            const uint32_t* coeff_index, const fr_t* coeffs, const fr_t* z,
                                            const uint32_t* long_rows, uint64_t n_long, uint32_t one_index,
                                            uint64_t input_rule, uint64_t aux_rule, uint64_t inputs_block) {
    abc::long_rows_product(out, row_starts, cols, coeff_index, coeffs, z, long_rows, n_long, one_index,
                           abc::make_shift(input_rule, aux_rule, inputs_block));
}

extern "C" __global__ void c2_abc_unsatisfied(const fr_t* a, const fr_t* b, const fr_t* c, uint64_t n,
                                              unsigned long long* first) {
    abc::first_unsatisfied(a, b, c, n, first);
}

extern "C" __global__ void c2_witness_bits(fr_t* z, const uint64_t* bits, uint64_t n) {
    abc::witness_bits(z, bits, n);
}

extern "C" __global__ void c2_witness_scatter(fr_t* z, const uint32_t* index, const fr_t* value, uint64_t m) {
    abc::witness_scatter(z, index, value, m);
}

// ---- prefix sums ----
#include "util/scan.cuh"

extern "C" __global__ void __launch_bounds__(scan::THREADS) c2_scan_blocks(uint32_t* data, uint64_t n,
                                                                          uint32_t* block_sums) {
    scan::scan_blocks(data, n, block_sums);
}

extern "C" __global__ void c2_scan_add(uint32_t* data, uint64_t n, const uint32_t* block_offsets) {
    scan::scan_add(data, n, block_offsets);
}

// ---- Pippenger MSM (msm/pippenger.cuh has the steps) ----
#include "msm/pippenger.cuh"
#include "msm/batch_affine.cuh"

extern "C" __global__ void c2_msm_split(const fr_t* scalars, uint64_t n, uint64_t first, uint64_t end,
                                        const uint64_t* mask, const uint32_t* word_rank,
                                        uint64_t montgomery, uint64_t lo, uint64_t hi, fr_t* others,
                                        uint32_t* others_base, uint32_t* ones_base, uint32_t* counters) {
    msm::split(scalars, n, first, end, mask, word_rank, montgomery != 0, lo, hi, others, others_base,
               ones_base, counters);
}

extern "C" __global__ void c2_msm_split_compact(const uint64_t* bits, uint64_t len, uint64_t first,
                                                uint64_t end, const uint32_t* full_index,
                                                const fr_t* full_value, uint64_t nfull,
                                                const uint64_t* mask, const uint32_t* word_rank,
                                                uint64_t lo, uint64_t hi, fr_t* others,
                                                uint32_t* others_base, uint32_t* ones_base,
                                                uint32_t* counters) {
    msm::split_compact(bits, len, first, end, full_index, full_value, nfull, mask, word_rank, lo, hi,
                       others, others_base, ones_base, counters);
}

// The sort kernels take a pass's windows as (c, w0, wn, k, stride): see
// msm::PassWindows (k = windows per copy of precomputed bases, stride = bases
// per copy; k = floor(255 / c) + 1 and stride = 0 without copies).
#define C2_PASS_WINDOWS uint64_t c, uint64_t w0, uint64_t wn, uint64_t k, uint64_t stride
#define C2_PASS msm::PassWindows{(uint32_t)c, (uint32_t)w0, (uint32_t)wn, (uint32_t)k, (uint32_t)stride}

extern "C" __global__ void c2_msm_histogram(const fr_t* others, uint64_t m, C2_PASS_WINDOWS, uint32_t* counts) {
    msm::histogram(others, m, C2_PASS, counts);
}

extern "C" __global__ void c2_msm_scatter(const fr_t* others, const uint32_t* others_base, uint64_t m,
                                          C2_PASS_WINDOWS, uint32_t* cursor, uint32_t* entries) {
    msm::scatter(others, others_base, m, C2_PASS, cursor, entries);
}

// The two-level sort (msm/sort.cuh): 1024 threads per block.
extern "C" __global__ void __launch_bounds__(1024) c2_msm_coarse_count(const fr_t* others, uint64_t m,
                                                                     C2_PASS_WINDOWS, uint64_t fine_bits,
                                                                     uint64_t jobs, uint32_t* table) {
    msm::coarse_count(others, m, C2_PASS, (uint32_t)fine_bits, (uint32_t)jobs, table);
}

extern "C" __global__ void __launch_bounds__(1024) c2_msm_coarse_place(
    const fr_t* others, const uint32_t* others_base, uint64_t m, C2_PASS_WINDOWS, uint64_t fine_bits, uint64_t jobs,
    const uint32_t* table, uint32_t* tmp_entry, uint8_t* tmp_fine, uint64_t tile) {
    msm::coarse_place(others, others_base, m, C2_PASS, (uint32_t)fine_bits, (uint32_t)jobs, table, tmp_entry,
                      tmp_fine, (uint32_t)tile);
}

extern "C" __global__ void __launch_bounds__(1024) c2_msm_fine_sort(const uint32_t* tmp_entry,
                                                                  const uint8_t* tmp_fine, const uint32_t* table,
                                                                  uint64_t jobs, uint64_t bins, uint64_t fine_bits,
                                                                  uint32_t* entries, uint32_t* off) {
    msm::fine_sort(tmp_entry, tmp_fine, table, (uint32_t)jobs, (uint32_t)bins, (uint32_t)fine_bits, entries, off);
}

// Counts of an affine pair pass (msm/batch_affine.cuh).
extern "C" __global__ void c2_msm_pair_counts(const uint32_t* off, uint64_t nbk, uint32_t* cnt) {
    msm::pair_counts(off, (uint32_t)nbk, cnt);
}

// The curve-dependent steps, once per group (every parameter 64 bits wide,
// so the host passes one u64 array).
#define C2_MSM_CURVE(G, O)                                                                           \
    extern "C" __global__ void c2_##G##_msm_accumulate(const ec::affine<O>* bases,                   \
                                                       const uint32_t* entries, const uint32_t* off, \
                                                       uint64_t nbk, uint64_t seg,                   \
                                                       ec::xyzz<O>* buckets, ec::xyzz<O>* head,      \
                                                       ec::xyzz<O>* tail) {                          \
        msm::accumulate<O, false>(bases, entries, off, (uint32_t)nbk, (uint32_t)seg, buckets, head, \
                                  tail);                                                             \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_accumulate_inl(                                          \
        const ec::affine<O>* bases, const uint32_t* entries, const uint32_t* off, uint64_t nbk,      \
        uint64_t seg, ec::xyzz<O>* buckets, ec::xyzz<O>* head, ec::xyzz<O>* tail) {                  \
        msm::accumulate<O, true>(bases, entries, off, (uint32_t)nbk, (uint32_t)seg, buckets, head,  \
                                 tail);                                                              \
    }                                                                                                \
    /* The same loop held to 3 or 4 blocks of 128 threads per SM (CURVE_THREADS    \
       in c2-msm): ncu at G1 2^24 saw the unbounded kernel at 180 registers, two     \
       blocks per SM, 1.9 warps per scheduler, an instruction issued every 3.5       \
       cycles (27 % of issue slots): the products' carry chains wait on each other   \
       with too few warps to hide their latency. Fewer registers, more warps, some   \
       spills: measured side by side (GpuMsmConfig::accumulate_blocks). */         \
    extern "C" __global__ void __launch_bounds__(128, 3) c2_##G##_msm_accumulate_inl3(               \
        const ec::affine<O>* bases, const uint32_t* entries, const uint32_t* off, uint64_t nbk,      \
        uint64_t seg, ec::xyzz<O>* buckets, ec::xyzz<O>* head, ec::xyzz<O>* tail) {                  \
        msm::accumulate<O, true>(bases, entries, off, (uint32_t)nbk, (uint32_t)seg, buckets, head,  \
                                 tail);                                                              \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128, 4) c2_##G##_msm_accumulate_inl4(               \
        const ec::affine<O>* bases, const uint32_t* entries, const uint32_t* off, uint64_t nbk,      \
        uint64_t seg, ec::xyzz<O>* buckets, ec::xyzz<O>* head, ec::xyzz<O>* tail) {                  \
        msm::accumulate<O, true>(bases, entries, off, (uint32_t)nbk, (uint32_t)seg, buckets, head,  \
                                 tail);                                                              \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_accumulate_affine(                                       \
        const ec::affine<O>* bases, const uint32_t* entries, const uint32_t* off, uint64_t nbk,      \
        uint64_t seg, uint64_t batch, ec::affine<O>* acc, O::F* prefix, uint32_t* cur,               \
        ec::xyzz<O>* buckets, ec::xyzz<O>* head, ec::xyzz<O>* tail) {                                \
        msm::accumulate_affine<O>(bases, entries, off, (uint32_t)nbk, (uint32_t)seg, (uint32_t)batch, \
                                  acc, prefix, cur, buckets, head, tail);                            \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_pair_sums(                                               \
        const ec::affine<O>* pts, const uint32_t* entries, const uint32_t* off_in,                   \
        const uint32_t* off_out, uint64_t nbk, uint64_t batch, ec::affine<O>* out) {                 \
        msm::pair_sums<O>(pts, entries, off_in, off_out, (uint32_t)nbk, (uint32_t)batch, out);       \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_fixup_heads(const uint32_t* off, uint64_t nbk,           \
                                                        uint64_t seg, uint64_t nseg,                 \
                                                        ec::xyzz<O>* head) {                         \
        msm::fixup_heads<O>(off, (uint32_t)nbk, (uint32_t)seg, nseg, head);                          \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_fixup(const uint32_t* off, uint64_t nbk, uint64_t seg,   \
                                                  ec::xyzz<O>* buckets, const ec::xyzz<O>* head,     \
                                                  const ec::xyzz<O>* tail, ec::xyzz<O>* totals) {    \
        msm::fixup<O>(off, (uint32_t)nbk, (uint32_t)seg, buckets, head, tail, totals);               \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_reduce(const ec::xyzz<O>* buckets, uint64_t wn,          \
                                                   uint64_t nb, uint64_t q, ec::xyzz<O>* out) {      \
        msm::reduce<O>(buckets, (uint32_t)wn, (uint32_t)nb, (uint32_t)q, out);                       \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_sum_groups(const ec::xyzz<O>* in, uint64_t n,            \
                                                       uint64_t group, ec::xyzz<O>* out) {           \
        msm::sum_groups<O>(in, n, (uint32_t)group, out);                                             \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_msm_sum_gathered(const ec::affine<O>* bases,                 \
                                                         const uint32_t* idx, uint64_t n,            \
                                                         uint64_t group, ec::xyzz<O>* out) {         \
        msm::sum_gathered<O>(bases, idx, n, (uint32_t)group, out);                                   \
    }                                                                                                \
    /* Precomputed copies of fixed bases: out[i] = 2^doublings * in[i]. */                        \
    extern "C" __global__ void c2_##G##_msm_precompute(const ec::affine<O>* in, uint64_t n,          \
                                                       uint64_t doublings, ec::xyzz<O>* out) {       \
        GRID_STRIDE(i, n) {                                                                          \
            ec::xyzz<O> p = ec::from_affine(in[i]);                                                  \
            for (uint64_t k = 0; k < doublings; k++) p = ec::dbl(p);                                 \
            out[i] = p;                                                                              \
        }                                                                                            \
    }                                                                                                \
    extern "C" __global__ void c2_##G##_to_affine(const ec::xyzz<O>* in, uint64_t n,                 \
                                                  ec::affine<O>* out) {                              \
        GRID_STRIDE(i, n) { out[i] = ec::to_affine(in[i]); }                                         \
    }

C2_MSM_CURVE(g1, fp_ops)
C2_MSM_CURVE(g2, fp2_ops)
