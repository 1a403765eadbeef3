//! Tuning of the GPU MSM.

/// How the bucket sums (step 5) are accumulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketSum {
    /// Mixed additions into XYZZ accumulators: 8M + 2S each, no inversion,
    /// the accumulator stays in registers.
    Xyzz,
    /// Affine additions, each thread advancing `batch` independent chains in
    /// lockstep so that one field inversion serves `batch` additions
    /// (Montgomery's trick): ~6 products + 1/`batch` inversion each, with the
    /// chain state in device memory (`cuda-kernels/msm/batch_affine.cuh`).
    BatchedAffine {
        /// Additions sharing one inversion (chains per thread), >= 1.
        batch: u32,
        /// Threads of the accumulation kernel (chains = threads x batch).
        threads: usize,
    },
    /// Affine pair passes, then XYZZ: each pass halves every bucket's list
    /// (point 2j + point 2j + 1 within the bucket), `batch` consecutive
    /// additions per thread sharing one inversion (~6 products + 1/`batch`
    /// inversion each, against 10 for a mixed XYZZ addition); pairs never
    /// cross a bucket's border, so no chain leaves partial sums for the
    /// fix-up, and no chain state outlives a pass (the prefix products wait
    /// in the outputs). Passes run while they keep `min_threads` threads
    /// busy; the XYZZ accumulation sums what is left
    /// (`cuda-kernels/msm/batch_affine.cuh`, `pair_sums`). Scratch: 3/8 of
    /// an XYZZ point per sorted entry (the first two passes' outputs).
    /// Measured on the H200 (session 21, G1 2^24): 200.6-211.3 ms against
    /// XYZZ's 136.5: the passes move ~480 bytes per addition (points read
    /// twice, prefix products written and read, outputs written), 1.5x
    /// slower for ~25 % fewer products. Selectable and in the differential
    /// suite; not a default.
    AffinePairs {
        /// Additions per thread sharing one inversion, >= 1.
        batch: u32,
        /// The fewest threads a pass may run (outputs / batch); below it
        /// the passes stop.
        min_threads: usize,
    },
}

impl BucketSum {
    /// What the H200 measurements chose for a Pippenger over `m` full-width
    /// scalars (`xyzz_bytes`: the curve): XYZZ for both curves at every size.
    /// Batched affine (512 chains per thread on 2^15 threads) led G2 from
    /// 2^24 on while the XYZZ loop ran a warp's lanes bucket by bucket
    /// (2026-11-30: G2 2^25 1315 vs 1574 ms); with one flat loop per
    /// segment (2026-12-03, session 18) XYZZ leads: G2 2^25 864.4 vs
    /// 1086.7 ms, same run. G1: XYZZ at every size measured (2^20-2^27).
    pub fn measured_default(_xyzz_bytes: usize, _m: usize) -> Self {
        BucketSum::Xyzz
    }
}

/// How a window pass sorts its (bucket, base) entries by bucket (steps 2-4,
/// `cuda-kernels/msm/sort.cuh`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// One global atomic counter per (window, bucket), hit once per entry in
    /// the histogram and once in the scatter: any window width. The H200
    /// sorted G1 2^27 in 120.5 ms, bound by its scattered one-entry requests
    /// (an atomic with return and a store per entry). What windows wider
    /// than the two-level sort's, budgets too small for its scratch and
    /// devices without its shared memory sort by.
    GlobalCounters,
    /// The default: a counting sort by coarse bin (window, bucket >> 8),
    /// each block staging a tile of entries grouped by bin in shared memory
    /// and writing each bin's run to consecutive positions, then one block
    /// per bin sorting it by the bucket's low 8 bits the same way: no global
    /// atomics and 4-8x fewer memory requests for 5 more bytes of scratch
    /// per entry ([`crate::plan::SORT_TMP_BYTES`]). H200, G1 2^27 (session
    /// 20): 60.7 vs 120.8 ms, the MSM 1002.6 vs 1062.6. Windows of at most
    /// [`crate::plan::TWO_LEVEL_MAX_BUCKETS`] buckets (c <= 20; one window
    /// per pass at c = 20, 2048 coarse bins) on devices
    /// that let a block opt in to 144 KB of shared memory (sm_80, sm_90),
    /// where one window fits the budget with its scratch; elsewhere the
    /// global counters sort.
    #[default]
    TwoLevel,
}

/// What the H200 measured (BENCHMARKS.md, 2026-12-02, session 17) for the
/// inlined XYZZ accumulation of a curve whose XYZZ points take `xyzz_bytes`:
/// G1 (192 bytes) held to 4 blocks per SM, its accumulation 3-4 % faster at
/// 2^24-2^27 (2^27: 1165.0 -> 1117.6 ms; ncu saw the unbounded kernel at
/// two blocks per SM issuing in 27 % of cycles, latency-bound); G2
/// unbounded (255 registers already; at 4 blocks B_G2 of the 32 GiB-shaped
/// partition took 237 ms instead of 196).
pub fn measured_accumulate_blocks(xyzz_bytes: usize) -> u32 {
    if xyzz_bytes <= 192 {
        4
    } else {
        0
    }
}

/// Tuning of the GPU MSM; `Default` picks everything from n and the device.
#[derive(Clone, Debug)]
pub struct GpuMsmConfig {
    /// Window width c (2..=24); `None` chooses it from the number of
    /// full-width scalars (2..=16, see [`crate::plan::plan_windows`]).
    pub window_bits: Option<u32>,
    /// Device memory one window pass may use (sort entries, buckets,
    /// partial sums: what [`crate::plan::plan_windows`] divides), bytes;
    /// `None` = free memory at call time minus `reserve_bytes`.
    pub memory_budget: Option<usize>,
    /// Device memory left free when the budget comes from the driver.
    pub reserve_bytes: usize,
    /// Bases per streamed chunk of an MSM over host bases (two device
    /// slots of this many bases each), unless `stream_slot_bytes` is set.
    pub stream_chunk: usize,
    /// Bytes per streamed slot: each chunk is as many bases as fit (G1
    /// chunks twice as long as G2's, so the fixed cost of a run is paid
    /// half as often for G1); `None`: `stream_chunk` bases.
    pub stream_slot_bytes: Option<usize>,
    /// Bases per Pippenger run over resident bases: a longer MSM runs as
    /// several runs whose sums are added, so the split's scratch (40 bytes
    /// per base of a run, [`crate::plan::split_bytes`]) stays bounded on a
    /// small device. `None`: one run (fastest where memory allows).
    pub max_run: Option<usize>,
    /// Give every scratch buffer back to the memory source after each MSM
    /// (a pool hands ranges out without driver calls), so that MSMs of other
    /// sizes and curves start from an empty scratch arena and cannot
    /// fragment it; `false` keeps and grows the buffers (no reallocation
    /// when the memory source is the driver).
    pub release_scratch: bool,
    /// Threads the bucket kernels aim to run at once (segments, chunks).
    pub target_threads: usize,
    /// Bucket accumulation with the mixed addition inlined into its loop
    /// (`c2_*_msm_accumulate_inl`) instead of called ([`BucketSum::Xyzz`]).
    pub inline_bucket_add: bool,
    /// Blocks of 128 threads per SM the inlined XYZZ accumulation is
    /// compiled for: 0 = as many as its registers allow (G1: 180 registers,
    /// two blocks), 3 or 4 = the variants held to fewer registers
    /// (`c2_*_msm_accumulate_inl3` / `_inl4`; other values mean 0);
    /// `None` = the measured choice per curve ([`measured_accumulate_blocks`]).
    pub accumulate_blocks: Option<u32>,
    /// How window passes sort their entries by bucket.
    pub sort: Sort,
    /// Blocks per SM of the two-level sort's placement (`c2_msm_coarse_place`),
    /// which stages a tile of entries in shared memory: 1 = tiles of 16384
    /// entries (~8 per coarse bin and tile), measured (session 20: 41.3 ms
    /// at G1 2^27); 2 = tiles as large as half an SM's shared memory allows
    /// (12288 entries on an H200), since ncu saw the placement latency-bound
    /// at one block of 32 warps per SM (0.2 instructions issued per
    /// scheduler and cycle). Other values mean 1.
    pub sort_place_blocks: u32,
    /// Bucket accumulation; `None` = the measured choice for the curve and
    /// the number of full-width scalars ([`BucketSum::measured_default`]).
    pub bucket_sum: Option<BucketSum>,
    /// Record CUDA events between the stages of every MSM; read them with
    /// `GpuMsm::last_stage_times` (feature `cuda`) (costs a few microseconds per stage).
    pub stage_timing: bool,
    /// Queue the MSMs' kernels (and streamed bases' copies) on streams of
    /// the device's greatest priority, so an urgent proof's MSMs get SMs
    /// ahead of a large partition's running beside them.
    pub urgent_streams: bool,
}

impl Default for GpuMsmConfig {
    fn default() -> Self {
        Self {
            window_bits: None,
            memory_budget: None,
            reserve_bytes: 1 << 30,
            stream_chunk: 1 << 24,
            stream_slot_bytes: None,
            max_run: None,
            release_scratch: false,
            // 132 SMs x ~1000 resident threads on an H200.
            target_threads: 1 << 17,
            stage_timing: false,
            // 7-8 % faster at 2^24..2^27 (G1 and G2) on the H200; costs
            // ~50 s more nvcc time per architecture.
            inline_bucket_add: true,
            accumulate_blocks: None,
            sort: Sort::default(),
            sort_place_blocks: 1,
            bucket_sum: None,
            urgent_streams: false,
        }
    }
}
