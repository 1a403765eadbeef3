//! Window plans and scratch shapes: pure functions of the sizes, the
//! memory budget and the curve (unit-tested without a device; compiled
//! without CUDA so that device-memory planners can size MSM scratch).

use crate::MsmError;

use crate::config::BucketSum;

/// The plan of one Pippenger run, chosen from the number of full-width
/// scalars `m` and the memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Window width in bits.
    pub c: u32,
    /// Windows (bucket sets) in all: floor(255 / c) + 1, or with
    /// precomputed copies of the bases the windows of one copy
    /// ([`copy_windows`]).
    pub windows: u32,
    /// Windows sorted and summed per pass (memory).
    pub per_pass: u32,
}

impl WindowPlan {
    /// Buckets per window: 2^(c-1) (signed digits).
    pub fn buckets(&self) -> usize {
        1 << (self.c - 1)
    }
}

/// Why `copies` precomputed copies for `c`-bit windows cannot be built
/// (`None`: they can): widths 2..=24 (the kernels' window range), 1 to the
/// scalar's floor(255 / c) + 1 windows of copies. The bases' count is
/// checked where it is known.
pub fn copies_problem(c: u32, copies: u32) -> Option<&'static str> {
    if !(2..=24).contains(&c) {
        return Some("the window width must be in 2..=24");
    }
    if copies == 0 || copies > 255 / c + 1 {
        return Some("copies must be between 1 and the scalar's windows");
    }
    None
}

/// Windows of one copy of bases precomputed `copies` times for c-bit
/// windows: the scalar's floor(255 / c) + 1 windows split into `copies`
/// runs of this many (copy j holds 2^(j k c) times each base, k this
/// number), the last run possibly shorter. One copy: every window.
pub fn copy_windows(c: u32, copies: u32) -> u32 {
    (255 / c.max(1) + 1).div_ceil(copies.max(1))
}

/// Work units of a Pippenger with window c over m scalars: one mixed
/// addition per (scalar, window) plus ~3 full additions per bucket
/// (fix-up, running sum, total sum; a full XYZZ addition costs ~1.4 mixed
/// ones).
pub(crate) fn plan_cost(m: usize, c: u32, bucket_weight: f64) -> f64 {
    let windows = (255 / c + 1) as f64;
    windows * (m as f64 + bucket_weight * (1u64 << (c - 1)) as f64)
}

/// Cost of one bucket (fix-up, running sums, chunk scaling) in mixed
/// additions, measured on the H200 (2026-11-30): ~4 for G1; ~12 for G2,
/// where c = 13 beat c = 16 at 2^20 (110 vs 133 ms) but lost at 2^24.
pub(crate) fn bucket_weight(xyzz_bytes: usize) -> f64 {
    if xyzz_bytes > 192 {
        12.0
    } else {
        4.0
    }
}

/// What one pass's device scratch is made of besides m, c and the windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchShape {
    /// Bytes of one XYZZ point (192 for G1, 384 for G2).
    pub xyzz_bytes: usize,
    /// Threads the bucket kernels aim for ([`crate::GpuMsmConfig::target_threads`]).
    pub threads: usize,
    /// Segments per thread: 1 for [`BucketSum::Xyzz`], `batch` chains for
    /// [`BucketSum::BatchedAffine`].
    pub segments_per_thread: usize,
    /// Extra bytes per segment (batched affine: accumulator, prefix product
    /// and bucket word of a chain).
    pub segment_state_bytes: usize,
    /// Extra bytes per sorted entry ([`BucketSum::AffinePairs`]: the first
    /// two pair passes' outputs, half and a quarter of an affine point per
    /// entry), besides two more offset arrays.
    pub entry_state_bytes: usize,
    /// The pass sorts in two levels ([`crate::Sort::TwoLevel`]): its
    /// temporary entries and count table take scratch too.
    pub two_level_sort: bool,
    /// Copies of the bases (precomputed multiples, [`copy_windows`]): every
    /// window of a pass gathers one digit per scalar from each copy, so a
    /// pass holds up to `copies` entries per scalar and window. 1: none.
    pub copies: usize,
}

impl ScratchShape {
    /// XYZZ bucket sums: one segment per thread, no chain state.
    pub fn xyzz(xyzz_bytes: usize, threads: usize) -> Self {
        Self {
            xyzz_bytes,
            threads,
            segments_per_thread: 1,
            segment_state_bytes: 0,
            entry_state_bytes: 0,
            two_level_sort: false,
            copies: 1,
        }
    }

    /// The shape of `sum` for a curve whose XYZZ points take `xyzz_bytes`
    /// (affine points take half, a field element a quarter); `threads` is
    /// the XYZZ kernel's target (batched affine brings its own).
    pub fn for_bucket_sum(sum: BucketSum, xyzz_bytes: usize, threads: usize) -> Self {
        match sum {
            BucketSum::Xyzz => Self::xyzz(xyzz_bytes, threads),
            BucketSum::BatchedAffine { batch, threads: affine_threads } => Self {
                xyzz_bytes,
                threads: affine_threads.max(1),
                segments_per_thread: batch.max(1) as usize,
                segment_state_bytes: xyzz_bytes / 2 + xyzz_bytes / 4 + 4,
                entry_state_bytes: 0,
                two_level_sort: false,
                copies: 1,
            },
            // Affine points are half an XYZZ point: 1/2 + 1/4 of one per entry.
            BucketSum::AffinePairs { .. } => {
                Self { entry_state_bytes: xyzz_bytes * 3 / 8, ..Self::xyzz(xyzz_bytes, threads) }
            }
        }
    }

    /// The same shape sorting by `sort`.
    pub fn with_sort(self, sort: crate::Sort) -> Self {
        Self { two_level_sort: sort == crate::Sort::TwoLevel, ..self }
    }

    /// The same shape over bases precomputed `copies` times.
    pub fn with_copies(self, copies: usize) -> Self {
        Self { copies: copies.max(1), ..self }
    }

    /// The most windows one pass of the two-level sort takes at `buckets`
    /// buckets per window: its coarse bins (2^8 buckets each) within the
    /// kernels' shared counters ([`SORT_COARSE_MAX`]); unbounded for the
    /// global counters.
    fn sort_windows(&self, buckets: usize) -> usize {
        if self.two_level_sort && buckets <= TWO_LEVEL_MAX_BUCKETS {
            (SORT_COARSE_MAX / (buckets >> sort_fine_bits(buckets)).max(1)).max(1)
        } else {
            usize::MAX
        }
    }

    /// Device scratch bytes of a pass of one window of an MSM over `m`
    /// full-width scalars with `c`-bit windows: the least budget
    /// [`plan_windows`] plans with; `k` windows fit in `k` times this.
    pub fn window_bytes(&self, m: usize, c: u32) -> usize {
        pass_bytes(m, 1 << (c.clamp(1, 31) - 1), 1, self)
    }

    /// Segments of a pass with `entries` sorted entries: at least 8 entries
    /// each, at most `threads * segments_per_thread`.
    pub(crate) fn segments(&self, entries: usize) -> usize {
        entries.div_ceil(8).min(self.threads * self.segments_per_thread)
    }
}

/// Chooses c (2..=16) by `plan_cost` (windows x (m + weight x buckets)), then how many windows fit a pass
/// (with precomputed copies, `shape.copies`, c is the copies' and forced).
pub fn plan_windows(
    m: usize,
    forced: Option<u32>,
    budget: usize,
    shape: &ScratchShape,
) -> Result<WindowPlan, MsmError> {
    let xyzz_bytes = shape.xyzz_bytes;
    let c = match forced {
        Some(c) if (2..=24).contains(&c) => c,
        Some(c) => {
            return Err(MsmError::Backend { backend: "cuda", message: format!("window width {c} not in 2..=24") })
        }
        None => {
            let w = bucket_weight(xyzz_bytes);
            (2..=16).min_by(|&a, &b| plan_cost(m, a, w).total_cmp(&plan_cost(m, b, w))).unwrap_or(16)
        }
    };
    let windows = copy_windows(c, shape.copies as u32);
    let per_window = shape.window_bytes(m, c);
    // Offsets are u32: entries of one pass must stay below 2^32.
    let by_offsets = ((u32::MAX as usize) / (m.max(1) * shape.copies.max(1))).max(1);
    // The most windows whose pass fits (a pass's sort table and thread
    // scratch are shared by its windows, so this may exceed budget / one
    // window's bytes).
    let buckets = 1usize << (c - 1);
    let per_pass = (1..=(windows as usize).min(by_offsets).min(shape.sort_windows(buckets)))
        .rev()
        .find(|&wn| pass_bytes(m, buckets, wn, shape) <= budget)
        .unwrap_or(0);
    if per_pass == 0 {
        return Err(MsmError::Backend {
            backend: "cuda",
            message: format!(
                "MSM of {m} scalars needs {per_window} bytes of device scratch per window; budget is {budget}"
            ),
        });
    }
    Ok(WindowPlan { c, windows, per_pass: per_pass as u32 })
}

/// Device scratch of one pass over `wn` windows (entries, counts, the
/// two-level sort's temporary entries and count table, buckets, segment
/// partials, reduction outputs).
pub(crate) fn pass_bytes(m: usize, buckets: usize, wn: usize, shape: &ScratchShape) -> usize {
    let entries = m * wn * shape.copies.max(1);
    let segments = shape.segments(entries) + 1;
    let xyzz = shape.xyzz_bytes;
    let sort = if shape.two_level_sort && buckets <= TWO_LEVEL_MAX_BUCKETS {
        let words = sort_table_words(m, buckets, wn, shape.threads);
        // The temporary entries, the table and its scan's block sums (one
        // word per 4096).
        entries * SORT_TMP_BYTES + 4 * (words + words / 1024 + 1)
    } else {
        0
    };
    // Pair passes: outputs per entry, and per bucket two offset words and
    // the odd lists' extra output in the first two passes (1/2 + 3/4 of an
    // affine point).
    let pairs = if shape.entry_state_bytes > 0 {
        entries * shape.entry_state_bytes + (wn * buckets + 1) * (8 + xyzz * 5 / 8)
    } else {
        0
    };
    entries * 4
        + pairs
        + (wn * buckets + 1) * 12
        + sort
        + wn * buckets * xyzz
        + segments * (2 * xyzz + shape.segment_state_bytes)
        + shape.threads * xyzz
}

/// Buckets per chunk (q) of the window reduction (`reduce` in
/// `cuda-kernels/msm/pippenger.cuh`): one thread per chunk of q buckets of
/// each of `wn` windows of `nb` buckets sums its chunk by running sums (2q
/// point additions in sequence) and scales the chunk sum by its offset kq
/// (double-and-add: ~1.5 operations per bit of nb - q); `resident` threads
/// run at once. The kernel is latency-bound (each addition a chain of
/// dependent products), so its time follows waves x the longest thread:
/// q minimizes ceil(wn nb / q / resident) x (2q + 1.5 bits(nb - q)).
///
/// Before this, q came from 2^17 target threads: G2 at 2^20 (c = 14) ran
/// q = 1, 155,648 threads each scaling one bucket, ~10 waves of ~22
/// operations (reduce 17.0 ms of an 89.3 ms MSM, H200, session 20); G1 at
/// c = 20 ran q = 32 (14.1 ms).
pub fn reduce_chunk(wn: usize, nb: usize, resident: usize) -> usize {
    let (wn, nb, resident) = (wn.max(1), nb.max(1).next_power_of_two(), resident.max(1));
    let cost = |q: usize| {
        let waves = (wn * nb / q).div_ceil(resident);
        let bits = (usize::BITS - (nb - q).leading_zeros()) as usize;
        waves * (4 * q + 3 * bits)
    };
    (0..=nb.trailing_zeros()).map(|k| 1usize << k).min_by_key(|&q| (cost(q), std::cmp::Reverse(q))).unwrap_or(1)
}

/// Entries per segment of the XYZZ bucket sums of a pass with `entries`
/// sorted entries in `nbk` buckets, aiming at `threads` segments: at least
/// 8, and at least 4 average buckets (measured on the H200, session 9:
/// with segments about one bucket long, G2 2^20 at c = 14 and G1 2^24 PoRep
/// mix, the fix-up took 78 / 18 ms instead of ~1-2 ms), but never fewer
/// than `threads / 16` segments: with few buckets and many entries
/// (precomputed copies at a narrow width: c = 3 with 86 copies puts 1.7 M
/// entries of 20,000 scalars into 4 buckets) four buckets' length left one
/// thread adding them all (the fix-up sums long buckets' heads in groups).
pub fn xyzz_segment(entries: usize, nbk: usize, threads: usize) -> usize {
    let floor = entries.div_ceil(threads.max(1)).max(8);
    let avg_bucket = entries.div_ceil(nbk.max(1));
    floor.max((4 * avg_bucket).min(entries.div_ceil((threads / 16).max(1))))
}

/// Buckets per window the two-level sort ([`crate::Sort::TwoLevel`]) takes:
/// 2^19 (c <= 20), the most whose coarse bins of 2^8 buckets (2048 at c =
/// 20) fit one block's counters in 8 KB of shared memory; a pass holds as
/// many windows as fit them (16 at c = 16, one at c = 20).
pub const TWO_LEVEL_MAX_BUCKETS: usize = 1 << 19;

/// Coarse bins of one pass the two-level sort's first level counts in a
/// block's shared memory (`COARSE_MAX` in `cuda-kernels/msm/sort.cuh`): 16
/// windows x 2^7 at c = 16, one window of 2^11 at c = 20 (the plans'
/// passes stay within it).
pub const SORT_COARSE_MAX: usize = 2048;

/// Bytes per entry of the two-level sort's temporary copy: the base word
/// and the one-byte fine index.
pub const SORT_TMP_BYTES: usize = 5;

/// Low bits of a bucket index the two-level sort's second level sorts by
/// (the rest, with the window, make the coarse bin).
pub fn sort_fine_bits(buckets: usize) -> u32 {
    buckets.max(1).trailing_zeros().min(8)
}

/// Fewest scalars per job of the two-level sort's first level.
const SORT_MIN_CHUNK: usize = 1 << 12;

/// Jobs (chunks of the scalars) of the two-level sort's first level: about
/// `threads / 256` (512 for the H200's 2^17 target threads, ~4 per SM), at
/// least 2^12 scalars each. The table holds a count per (coarse bin, job).
pub fn sort_jobs(m: usize, threads: usize) -> usize {
    (threads / 256).clamp(1, m.div_ceil(SORT_MIN_CHUNK).max(1))
}

/// Words of the two-level sort's count table for a pass: one per (coarse
/// bin, job), plus the total.
pub fn sort_table_words(m: usize, buckets: usize, wn: usize, threads: usize) -> usize {
    let coarse = wn * (buckets >> sort_fine_bits(buckets));
    coarse * sort_jobs(m, threads) + 1
}

/// Device bytes of one run over `run` bases besides the per-pass scratch
/// that [`plan_windows`] sizes from its budget: the split's outputs (a
/// canonical copy and a base index per full-width scalar, a base index per
/// scalar equal to one; at most one entry per base of the run), the split
/// counters, and the window points.
pub fn split_bytes(run: usize) -> usize {
    run * (std::mem::size_of::<[u64; 4]>() + 2 * std::mem::size_of::<u32>()) + (1 << 16)
}

/// The scalars `first..end` of `n` that one run's split reads: those whose
/// base can fall in the run's bases `lo..hi`. Without a mask scalar i meets
/// base i; with one, `ranks[w]` is the number of set bits before mask word
/// w (`words + 1` entries, non-decreasing), and only the words whose bases
/// `ranks[w]..ranks[w + 1]` meet `lo..hi` are read (a bound to whole
/// words: the kernel still checks each base). A streamed 32 GiB query of
/// 130 M scalars in chunks of 8.4 M bases read every scalar once per chunk
/// (16 times per query) before this bound.
pub fn split_items(n: usize, ranks: Option<&[u32]>, lo: usize, hi: usize) -> (usize, usize) {
    let (first, end) = match ranks {
        _ if hi <= lo => (0, 0),
        None => (lo, hi),
        Some(r) if r.len() < 2 => (0, 0),
        Some(r) => {
            let words = r.len() - 1;
            let below = |x: usize| r.partition_point(|&k| (k as usize) < x);
            // The first word with bases at or past `lo`'s word end: every
            // word before it ends at or before lo.
            let first = r[1..].partition_point(|&k| (k as usize) <= lo);
            // Words from the first with ranks[w] >= hi hold bases >= hi
            // (and past the last set bit, none: ranks[w] == the total).
            let end = below(hi.min(r[words] as usize)).min(words);
            (first * 64, end * 64)
        }
    };
    (first.min(n), end.min(n).max(first.min(n)))
}

/// Device bytes an MSM of several runs (streamed chunks, bounded runs) keeps
/// beside its passes: the bucket totals of every window, for the widest
/// window [`plan_windows`] chooses (c = 16: 16 windows of 2^15 buckets,
/// 100 MB in G1, 201 MB in G2), and one point per run (`runs`).
pub fn totals_bytes(xyzz_bytes: usize, runs: usize) -> usize {
    let widest = (2..=16u32).map(|c| (255 / c + 1) as usize * (1usize << (c - 1))).max().unwrap_or(0);
    (widest + runs) * xyzz_bytes
}

/// The per-pass budget [`plan_windows`] needs to plan one window of any run
/// of at most `run` full-width scalars (every run length from `run` down,
/// halving, since the window width follows the count), with the default
/// bucket sums for a curve whose XYZZ points take `xyzz_bytes`. Both
/// budgets count the sort by global counters, the least scratch: the GPU
/// MSM sorts in two levels wherever a window fits with that sort's 5 more
/// bytes per entry (in more passes if need be: each window's sort still
/// costs about half) and by the global counters where none does.
pub fn min_pass_budget(run: usize, xyzz_bytes: usize, threads: usize) -> usize {
    let mut worst = 0;
    let mut m = run.max(1);
    loop {
        worst = worst.max(pass_budget(m, xyzz_bytes, threads, |_| 1));
        if m == 1 {
            return worst;
        }
        m /= 2;
    }
}

/// The per-pass budget that puts every window of a run of `run` full-width
/// scalars in one pass (the fastest plan; fewer full-width scalars may take
/// a second pass, which costs little at their size).
pub fn full_pass_budget(run: usize, xyzz_bytes: usize, threads: usize) -> usize {
    pass_budget(run.max(1), xyzz_bytes, threads, |p| p.windows as usize)
}

/// What [`plan_windows`] needs for `windows(plan)` windows per pass at `m`
/// (it divides its budget by one window's bytes).
fn pass_budget(m: usize, xyzz_bytes: usize, threads: usize, windows: impl Fn(&WindowPlan) -> usize) -> usize {
    let shape = ScratchShape::for_bucket_sum(BucketSum::measured_default(xyzz_bytes, m), xyzz_bytes, threads);
    plan_windows(m, None, usize::MAX / 4, &shape).map_or(0, |p| windows(&p) * shape.window_bytes(m, p.c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: usize = 1 << 40;

    /// Every scalar whose base falls in a run's `lo..hi` is within the
    /// items the split reads, and those items are whole mask words that
    /// hold such a base (or, unmasked, exactly `lo..hi`): random masks of
    /// odd lengths, empty and full words, runs over every boundary.
    #[test]
    fn a_runs_split_reads_every_scalar_of_its_bases_and_few_others() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        for n in [0usize, 1, 63, 64, 65, 1000, 4097] {
            for density in [0.0, 0.03, 0.5, 1.0] {
                let bits: Vec<bool> = (0..n).map(|_| rng.gen_bool(density)).collect();
                let words = n.div_ceil(64);
                let mut ranks = vec![0u32; words + 1];
                for w in 0..words {
                    let set = bits[w * 64..((w + 1) * 64).min(n)].iter().filter(|&&b| b).count() as u32;
                    ranks[w + 1] = ranks[w] + set;
                }
                let set = ranks[words] as usize;
                let base_of = |i: usize| {
                    bits[i].then(|| ranks[i / 64] as usize + bits[i / 64 * 64..i].iter().filter(|&&b| b).count())
                };
                let cuts = [0, 1, set / 3, set / 2, set.saturating_sub(1), set, set + 5];
                for &lo in &cuts {
                    for &hi in &cuts {
                        let (first, end) = split_items(n, Some(&ranks), lo, hi);
                        assert!(first <= end && end <= n, "n {n}, {lo}..{hi}: {first}..{end}");
                        for i in 0..n {
                            if base_of(i).is_some_and(|b| (lo..hi).contains(&b)) {
                                assert!(
                                    (first..end).contains(&i),
                                    "n {n}, {lo}..{hi}: item {i} outside {first}..{end}"
                                );
                            }
                        }
                        // Tight to words: the first and last word read hold a base of the run.
                        if end > first {
                            let holds = |w: usize| {
                                (w * 64..((w + 1) * 64).min(n))
                                    .any(|i| base_of(i).is_some_and(|b| (lo..hi).contains(&b)))
                            };
                            assert!(holds(first / 64) && holds((end - 1) / 64), "n {n}, {lo}..{hi}: {first}..{end}");
                        }
                        let (first, end) = split_items(n, None, lo, hi);
                        let want = if hi > lo { (lo.min(n), hi.min(n)) } else { (0, 0) };
                        assert_eq!((first, end), want, "unmasked n {n}, {lo}..{hi}");
                    }
                }
            }
        }
        assert_eq!(split_items(10, Some(&[0]), 0, 5), (0, 0), "an empty mask reads nothing");
    }

    #[test]
    fn large_inputs_use_16_bit_windows_in_one_pass() {
        for xyzz in [192, 384] {
            let p = plan_windows(1 << 26, None, BIG, &ScratchShape::xyzz(xyzz, 1 << 17)).unwrap();
            assert_eq!((p.c, p.windows, p.per_pass), (16, 16, 16), "xyzz {xyzz}");
        }
    }

    #[test]
    fn small_inputs_use_small_windows() {
        for m in [1usize, 2, 3, 100, 1000] {
            let p = plan_windows(m, None, BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap();
            assert!(p.c <= 8, "m = {m}: c = {}", p.c);
            assert_eq!(p.windows, 255 / p.c + 1);
        }
        // G2 buckets weigh more: narrower windows at 2^20 (measured faster).
        let g1 = plan_windows(1 << 20, None, BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap();
        let g2 = plan_windows(1 << 20, None, BIG, &ScratchShape::xyzz(384, 1 << 17)).unwrap();
        assert!(g2.c < g1.c, "{g1:?} {g2:?}");
    }

    #[test]
    fn windows_split_into_passes_under_a_budget() {
        let (m, threads) = (1 << 20, 1 << 17);
        for shape in [
            ScratchShape::xyzz(192, threads),
            ScratchShape::for_bucket_sum(BucketSum::BatchedAffine { batch: 64, threads }, 192, threads),
            ScratchShape::for_bucket_sum(BucketSum::AffinePairs { batch: 256, min_threads: 1 }, 192, threads),
        ] {
            let per = pass_bytes(m, 1 << 15, 1, &shape);
            let three = pass_bytes(m, 1 << 15, 3, &shape);
            assert!(three <= 3 * per && three < pass_bytes(m, 1 << 15, 4, &shape), "{shape:?}");
            let p = plan_windows(m, Some(16), three, &shape).unwrap();
            assert_eq!(p.per_pass, 3, "{shape:?}");
            assert_eq!(plan_windows(m, Some(16), three - 1, &shape).unwrap().per_pass, 2, "{shape:?}");
            let e = plan_windows(m, Some(16), per - 1, &shape).unwrap_err();
            assert!(e.to_string().contains("budget"), "{e}");
        }
        // Chain state counts: the batched-affine pass needs more scratch.
        let affine = ScratchShape::for_bucket_sum(BucketSum::BatchedAffine { batch: 64, threads }, 192, threads);
        assert!(pass_bytes(m, 1 << 15, 1, &affine) > pass_bytes(m, 1 << 15, 1, &ScratchShape::xyzz(192, threads)));
    }

    /// The affine pair passes' scratch: the two output buffers hold the
    /// first two passes' most outputs ((E + B) / 2 and half of that plus
    /// B / 2 for E entries and B buckets; later passes reuse them), and
    /// two offset arrays.
    #[test]
    fn pair_passes_are_counted() {
        let threads = 1 << 17;
        for xyzz in [192usize, 384] {
            let xyzz_shape = ScratchShape::xyzz(xyzz, threads);
            let pairs =
                ScratchShape::for_bucket_sum(BucketSum::AffinePairs { batch: 4, min_threads: 1 }, xyzz, threads);
            for (m, c, wn) in [(1usize, 2u32, 1usize), (1000, 8, 3), (1 << 20, 14, 19), (1 << 24, 16, 16), (77, 16, 2)]
            {
                let (buckets, entries) = (1usize << (c - 1), m * wn);
                let nbk = wn * buckets;
                let out1 = (entries + nbk) / 2;
                let out2 = (out1 + nbk) / 2;
                let need = (out1 + out2) * xyzz / 2 + 2 * 4 * (nbk + 1);
                let counted = pass_bytes(m, buckets, wn, &pairs) - pass_bytes(m, buckets, wn, &xyzz_shape);
                assert!(counted >= need, "xyzz {xyzz} m {m} c {c} wn {wn}: {counted} < {need}");
            }
        }
    }

    /// The two-level sort: ~threads / 256 first-level jobs of >= 2^12
    /// scalars, <= 2048 coarse bins per pass, its scratch counted only
    /// where it applies (at most 2^15 buckets).
    #[test]
    fn two_level_sort_is_bounded_and_counted() {
        let threads = 1 << 17;
        assert_eq!(sort_jobs(1 << 27, threads), 512);
        assert_eq!(sort_jobs(1 << 14, threads), 4);
        assert_eq!(sort_jobs(1, threads), 1);
        assert_eq!(sort_jobs(1 << 27, 64), 1);
        assert_eq!((sort_fine_bits(1 << 15), sort_fine_bits(1 << 4), sort_fine_bits(1)), (8, 4, 0));
        // Every width the sort takes fits the kernels' coarse counters in
        // every pass the plan makes: all windows at c <= 16, one at c = 20.
        let two = ScratchShape::xyzz(192, threads).with_sort(crate::Sort::TwoLevel);
        for c in 2..=20u32 {
            let b = 1usize << (c - 1);
            for copies in [1usize, 3] {
                let p = plan_windows(1 << 20, Some(c), BIG, &two.with_copies(copies)).unwrap();
                assert!(p.per_pass as usize * (b >> sort_fine_bits(b)) <= SORT_COARSE_MAX, "c = {c}");
                assert_eq!(p.per_pass == p.windows, c <= 16 || copies * p.per_pass as usize >= 16, "c = {c} x{copies}");
            }
        }
        assert_eq!(plan_windows(1 << 20, Some(20), BIG, &two).unwrap().per_pass, 1);
        assert_eq!(plan_windows(1 << 20, Some(18), BIG, &two).unwrap().per_pass, 4);
        // Wider windows sort by the global counters: no bound.
        assert_eq!(plan_windows(1 << 20, Some(22), BIG, &two).unwrap().per_pass, 12);
        // 2^27 G1, 16 windows: 16 x 128 coarse bins x 512 jobs.
        assert_eq!(sort_table_words(1 << 27, 1 << 15, 16, threads), (1 << 20) + 1);
        // Doubling the buckets adds their counts and points (12 + 192 bytes
        // each per window) and, up to 2^19, a larger table; at 2^20 (global
        // counters) the temporary entries and the table are gone.
        let shape = ScratchShape::xyzz(192, threads).with_sort(crate::Sort::TwoLevel);
        let (m, wn) = (1usize << 20, 2);
        let pass = |b| pass_bytes(m, b, wn, &shape);
        let table = |b| {
            let w = sort_table_words(m, b, wn, threads);
            4 * (w + w / 1024 + 1)
        };
        let per_bucket = wn * (12 + 192);
        assert_eq!(pass(1 << 15) - pass(1 << 14), (1 << 14) * per_bucket + table(1 << 15) - table(1 << 14));
        assert_eq!(pass(1 << 20) + table(1 << 19) + m * wn * SORT_TMP_BYTES, pass(1 << 19) + (1 << 19) * per_bucket);
        // Sorting by global counters, none of it.
        let global = ScratchShape::xyzz(192, threads);
        assert_eq!(pass(1 << 15), pass_bytes(m, 1 << 15, wn, &global) + table(1 << 15) + m * wn * SORT_TMP_BYTES);
    }

    /// The totals hold every window's buckets at every width the planner
    /// chooses (runs of one MSM keep the first run's width).
    #[test]
    fn totals_hold_every_planned_width() {
        for xyzz in [192usize, 384] {
            for log in [0u32, 10, 20, 24, 27] {
                let p = plan_windows(1 << log, None, BIG, &ScratchShape::xyzz(xyzz, 1 << 17)).unwrap();
                assert!(p.windows as usize * p.buckets() * xyzz <= totals_bytes(xyzz, 0), "2^{log}");
            }
        }
        assert_eq!(totals_bytes(192, 0), 16 * (1 << 15) * 192);
        assert_eq!(totals_bytes(384, 10) - totals_bytes(384, 0), 10 * 384);
    }

    /// XYZZ segments: the old rule (>= 4 average buckets) wherever a pass
    /// has >= 2^15 buckets (every default plan of a large MSM), never
    /// fewer than threads / 16 segments.
    #[test]
    fn xyzz_segments_stay_many() {
        let t = 1 << 17;
        let old = |e: usize, b: usize| e.div_ceil(t).max(8).max(4 * e.div_ceil(b));
        // G1 2^27 at c = 16, G2 2^20 at c = 14, the G1 2^24 PoRep mix at c = 13.
        for (e, b) in [(16usize << 27, 16usize << 15), (19 << 20, 19 << 13), (20 * 335_000, 20 << 12)] {
            assert_eq!(xyzz_segment(e, b, t), old(e, b), "{e} {b}");
        }
        // 86 copies at c = 3: 4 buckets.
        let (e, b) = (86 * 20_000, 4);
        assert_eq!(old(e, b), e);
        assert!((t / 32..=t / 16).contains(&e.div_ceil(xyzz_segment(e, b, t))));
        assert_eq!(xyzz_segment(0, 1, t), 8);
        assert_eq!(xyzz_segment(5, 0, 0), 8);
    }

    /// Precomputed copies: the windows split into copies of
    /// ceil(windows / copies) (the last one shorter), one set of buckets per
    /// window of a copy, a pass holding an entry per scalar, window and copy.
    #[test]
    fn copies_share_buckets() {
        let cases = [(16, 1, 16), (16, 2, 8), (16, 3, 6), (16, 16, 1), (20, 1, 13), (20, 3, 5), (3, 86, 1), (22, 4, 3)];
        for (c, copies, k) in cases {
            assert_eq!(copy_windows(c, copies), k, "c = {c} x{copies}");
            // Every window of the scalar lands in some copy, none twice.
            let windows = 255 / c + 1;
            assert!(k * copies >= windows && k * (copies - 1) < windows, "c = {c} x{copies}");
        }
        let (m, threads) = (1usize << 20, 1 << 17);
        let one = ScratchShape::xyzz(192, threads);
        let three = one.with_copies(3);
        let p = plan_windows(m, Some(16), BIG, &three).unwrap();
        assert_eq!((p.c, p.windows, p.per_pass), (16, 6, 6));
        // Three copies: three times the entries, a third of the buckets.
        let b = 1 << 15;
        assert_eq!(pass_bytes(m, b, 1, &three) - pass_bytes(m, b, 1, &one), 2 * m * 4);
        // Offsets stay u32: at 2^27 bases x 3 copies, at most 10 windows per pass.
        let p = plan_windows(1 << 27, Some(16), BIG, &three).unwrap();
        assert!(p.per_pass as usize * 3 * (1 << 27) <= u32::MAX as usize, "{p:?}");
    }

    #[test]
    fn window_widths_outside_2_to_24_are_rejected() {
        for c in [0, 1, 25, 64] {
            assert!(plan_windows(10, Some(c), BIG, &ScratchShape::xyzz(192, 1 << 17)).is_err(), "c = {c}");
        }
        for c in [2, 16, 24] {
            assert_eq!(plan_windows(10, Some(c), BIG, &ScratchShape::xyzz(192, 1 << 17)).unwrap().c, c);
        }
    }

    /// The pass budgets the planners use are what plan_windows needs: one
    /// window fits the minimum at every run length down to one, the full
    /// budget holds every window of the run in one pass.
    #[test]
    fn pass_budgets_hold_one_and_all_windows() {
        let threads = 1 << 17;
        for xyzz in [192usize, 384] {
            for log in [0u32, 5, 12, 20, 22, 24, 27] {
                let run = 1usize << log;
                let (min, full) = (min_pass_budget(run, xyzz, threads), full_pass_budget(run, xyzz, threads));
                assert!(min <= full, "2^{log} xyzz {xyzz}");
                let shape = |m| ScratchShape::for_bucket_sum(BucketSum::measured_default(xyzz, m), xyzz, threads);
                let p = plan_windows(run, None, full, &shape(run)).unwrap();
                assert_eq!(p.per_pass, p.windows, "full at 2^{log}");
                let mut m = run;
                loop {
                    assert!(plan_windows(m, None, min, &shape(m)).is_ok(), "min at {m} of 2^{log}");
                    if m == 1 {
                        break;
                    }
                    m /= 2;
                }
            }
        }
        // A 2^27 G1 run: ~0.5 GB per 16-bit window, 16 windows in one pass.
        let one = min_pass_budget(1 << 27, 192, threads);
        assert!((500 << 20..700 << 20).contains(&one), "{one}");
        assert!(full_pass_budget(1 << 27, 192, threads) >= 16 * (512 << 20));
    }

    /// The reduction's chunks: a power of two dividing the window, one
    /// wave where that is cheapest, never costlier by the model than the
    /// old choice (2^17 threads' worth of chunks).
    #[test]
    fn reduce_chunks_fill_one_wave_without_scaling_every_bucket() {
        // H200-like residencies: G2's reduce at 128 threads per SM, G1's at 256.
        let (g2, g1) = (132 * 128, 132 * 256);
        assert_eq!(reduce_chunk(19, 1 << 13, g2), 16, "G2 2^20, c = 14 (was q = 1)");
        assert_eq!(reduce_chunk(16, 1 << 15, g1), 16, "G1 c = 16 (was q = 4)");
        assert_eq!(reduce_chunk(1, 1 << 4, 1 << 20), 1, "everything fits: the shortest threads");
        let cost = |wn: usize, nb: usize, r: usize, q: usize| {
            (wn * nb / q).div_ceil(r) * (4 * q + 3 * (usize::BITS - (nb - q).leading_zeros()) as usize)
        };
        for wn in [1usize, 4, 13, 16, 19, 32, 128] {
            for c in 2..=24u32 {
                let nb = 1usize << (c - 1);
                for r in [1usize, 1000, g2, g1, 1 << 20] {
                    let q = reduce_chunk(wn, nb, r);
                    assert!(q.is_power_of_two() && q <= nb && nb.is_multiple_of(q), "{wn} {nb} {r}: {q}");
                    let old = nb / ((1usize << 17) / wn).next_power_of_two().clamp(1, nb);
                    assert!(cost(wn, nb, r, q) <= cost(wn, nb, r, old), "{wn} {nb} {r}: {q} vs {old}");
                }
            }
        }
    }
}
