//! The GPU MSM (feature `cuda`): Pippenger with signed-digit windows, a
//! counting sort of (bucket, base) entries, segment-balanced bucket sums in
//! XYZZ coordinates and chunked running-sum reduction, all in
//! `cuda-kernels/msm/pippenger.cuh`; G1 and G2 from the same templates.
//!
//! Scalars equal to 0 (or masked out by a [`Density`]) are dropped and
//! scalars equal to 1 are summed by plain additions; the split runs on the
//! GPU. Bases can be resident (a [`DeviceBuffer`] the caller uploaded once)
//! or streamed from host memory in chunks, the next chunk's upload on a copy
//! stream overlapping the current chunk's kernels.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{DeviceBuffer, DeviceMemory, Event, Gpu, GpuError, Kernel, Stream};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};

use crate::{check_shape, Density, Msm, MsmError};

fn gpu_err(e: GpuError) -> MsmError {
    MsmError::Gpu(e)
}

/// Threads per block of the curve kernels (G2 points take ~100 registers
/// per accumulator; 128 threads keep a block's registers within one SM).
const CURVE_THREADS: u32 = 128;
/// Threads per block of the integer kernels.
const INT_THREADS: u32 = 256;
/// Values per block of `c2_scan_blocks` (4 per thread, 1024 threads).
const SCAN_BLOCK: usize = 4096;
/// Group size of the tree sums (ones, window results).
const SUM_GROUP: usize = 32;
/// Base indices carry the sign in bit 31.
const MAX_BASES: usize = 1 << 31;

/// A curve group the GPU MSM serves: G1 over Fp or G2 over Fp2.
pub trait GpuCurve: Send + Sync + 'static {
    /// Affine points as blst lays them out (what parameter files hold).
    type Affine: PrimeCurveAffine<Curve = Self::Projective> + c2_cuda::DeviceCopy;
    /// The group element returned.
    type Projective: Group + Curve<AffineRepr = Self::Affine> + Copy;
    /// An XYZZ point's bytes on the device (4 coordinates).
    type Xyzz: Copy + Send + Sync;
    /// Kernel name prefix ("g1" / "g2").
    const PREFIX: &'static str;
}

/// G1 (48-byte Fp coordinates).
pub enum G1 {}
/// G2 (96-byte Fp2 coordinates).
pub enum G2 {}

impl GpuCurve for G1 {
    type Affine = G1Affine;
    type Projective = G1Projective;
    type Xyzz = [u64; 24];
    const PREFIX: &'static str = "g1";
}

impl GpuCurve for G2 {
    type Affine = G2Affine;
    type Projective = G2Projective;
    type Xyzz = [u64; 48];
    const PREFIX: &'static str = "g2";
}

/// Scalars on the device, in one of the two forms the MSM reads (the
/// conversion to canonical integers happens in the split kernel), possibly a
/// prefix of a larger buffer (e.g. the `2^k − 1` coefficients of H in a
/// `2^k` buffer).
#[derive(Clone, Copy)]
pub struct DeviceScalars<'a> {
    ptr: u64,
    len: usize,
    montgomery: bool,
    _buffer: PhantomData<&'a ()>,
}

impl<'a> DeviceScalars<'a> {
    /// `blstrs::Scalar`'s in-memory form (Montgomery), as synthesis makes
    /// them.
    pub fn montgomery(buffer: &'a DeviceBuffer<Scalar>) -> Self {
        Self { ptr: buffer.device_ptr(), len: buffer.len(), montgomery: true, _buffer: PhantomData }
    }

    /// Canonical little-endian 256-bit integers (`Scalar::to_repr` as u64
    /// words); values >= r are reduced.
    pub fn canonical(buffer: &'a DeviceBuffer<[u64; 4]>) -> Self {
        Self { ptr: buffer.device_ptr(), len: buffer.len(), montgomery: false, _buffer: PhantomData }
    }

    /// The first `len` scalars only (no-op when `len` is larger).
    pub fn prefix(self, len: usize) -> Self {
        Self { len: len.min(self.len), ..self }
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn ptr(&self) -> u64 {
        self.ptr
    }

    fn montgomery_flag(&self) -> u64 {
        u64::from(self.montgomery)
    }
}

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
}

impl BucketSum {
    /// What the H200 measurements (BENCHMARKS.md, 2026-11-30) chose for a
    /// Pippenger over `m` full-width scalars: G2 from 2^24 on, batched affine
    /// with 512 chains per thread on 2^15 threads (G2 2^24: 680 vs 825 ms,
    /// 2^25: 1315 vs 1574 ms, same run); below that, and for G1 at every
    /// size measured (2^20-2^27: at best equal), XYZZ.
    pub fn measured_default(xyzz_bytes: usize, m: usize) -> Self {
        if xyzz_bytes > 192 && m >= 1 << 24 {
            BucketSum::BatchedAffine { batch: 512, threads: 1 << 15 }
        } else {
            BucketSum::Xyzz
        }
    }
}

/// Tuning of the GPU MSM; `Default` picks everything from n and the device.
#[derive(Clone, Debug)]
pub struct GpuMsmConfig {
    /// Window width c (2..=24); `None` chooses it from the number of
    /// full-width scalars (2..=16, see [`plan_windows`]).
    pub window_bits: Option<u32>,
    /// Device memory the MSM may use for scratch and streamed bases, bytes;
    /// `None` = free memory at call time minus `reserve_bytes`.
    pub memory_budget: Option<usize>,
    /// Device memory left free when the budget comes from the driver.
    pub reserve_bytes: usize,
    /// Bases per streamed chunk (host-resident bases that exceed the
    /// budget, or always when `force_streaming`).
    pub stream_chunk: usize,
    /// Stream host bases in chunks even when they would fit (tests).
    pub force_streaming: bool,
    /// Threads the bucket kernels aim to run at once (segments, chunks).
    pub target_threads: usize,
    /// Bucket accumulation with the mixed addition inlined into its loop
    /// (`c2_*_msm_accumulate_inl`) instead of called ([`BucketSum::Xyzz`]).
    pub inline_bucket_add: bool,
    /// Bucket accumulation; `None` = the measured choice for the curve and
    /// the number of full-width scalars ([`BucketSum::measured_default`]).
    pub bucket_sum: Option<BucketSum>,
    /// Record CUDA events between the stages of every MSM; read them with
    /// [`GpuMsm::last_stage_times`] (costs a few microseconds per stage).
    pub stage_timing: bool,
}

impl Default for GpuMsmConfig {
    fn default() -> Self {
        Self {
            window_bits: None,
            memory_budget: None,
            reserve_bytes: 1 << 30,
            stream_chunk: 1 << 24,
            force_streaming: false,
            // 132 SMs x ~1000 resident threads on an H200.
            target_threads: 1 << 17,
            stage_timing: false,
            // 7-8 % faster at 2^24..2^27 (G1 and G2) on the H200; costs
            // ~50 s more nvcc time per architecture.
            inline_bucket_add: true,
            bucket_sum: None,
        }
    }
}

/// A density mask on the device: the bit words and, per word, the number of
/// set bits before it (computed on the GPU).
pub struct DeviceDensity {
    words: DeviceBuffer<u64>,
    ranks: DeviceBuffer<u32>,
    len: usize,
    set: usize,
}

impl DeviceDensity {
    /// Bits in the mask (= scalars of the query).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mask.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set bits (= bases needed).
    pub fn count_ones(&self) -> usize {
        self.set
    }
}

struct Kernels {
    mask_popc: Kernel,
    split: Kernel,
    histogram: Kernel,
    scatter: Kernel,
    scan_blocks: Kernel,
    scan_add: Kernel,
}

/// The curve-dependent kernels of one group.
struct CurveKernels {
    accumulate: Kernel,
    accumulate_inline: Kernel,
    accumulate_affine: Kernel,
    fixup: Kernel,
    reduce: Kernel,
    sum_groups: Kernel,
    sum_gathered: Kernel,
    to_affine: Kernel,
}

impl CurveKernels {
    fn load(gpu: &Gpu, prefix: &str) -> Result<Self, GpuError> {
        let k = |s: &str| gpu.kernel(&format!("c2_{prefix}_{s}"));
        Ok(Self {
            accumulate: k("msm_accumulate")?,
            accumulate_inline: k("msm_accumulate_inl")?,
            accumulate_affine: k("msm_accumulate_affine")?,
            fixup: k("msm_fixup")?,
            reduce: k("msm_reduce")?,
            sum_groups: k("msm_sum_groups")?,
            sum_gathered: k("msm_sum_gathered")?,
            to_affine: k("to_affine")?,
        })
    }
}

/// Streams and the events that order streamed-base uploads.
struct Streams {
    compute: Stream,
    copy: Stream,
    /// Per upload slot: the upload finished / the kernels reading it finished.
    ready: [Event; 2],
    free: [Event; 2],
}

/// The plan of one Pippenger run, chosen from the number of full-width
/// scalars `m` and the memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Window width in bits.
    pub c: u32,
    /// Windows in all: floor(255 / c) + 1.
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

/// Work units of a Pippenger with window c over m scalars: one mixed
/// addition per (scalar, window) plus ~3 full additions per bucket
/// (fix-up, running sum, total sum; a full XYZZ addition costs ~1.4 mixed
/// ones).
fn plan_cost(m: usize, c: u32, bucket_weight: f64) -> f64 {
    let windows = (255 / c + 1) as f64;
    windows * (m as f64 + bucket_weight * (1u64 << (c - 1)) as f64)
}

/// Cost of one bucket (fix-up, running sums, chunk scaling) in mixed
/// additions, measured on the H200 (2026-11-30): ~4 for G1; ~12 for G2,
/// where c = 13 beat c = 16 at 2^20 (110 vs 133 ms) but lost at 2^24.
fn bucket_weight(xyzz_bytes: usize) -> f64 {
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
    /// Threads the bucket kernels aim for ([`GpuMsmConfig::target_threads`]).
    pub threads: usize,
    /// Segments per thread: 1 for [`BucketSum::Xyzz`], `batch` chains for
    /// [`BucketSum::BatchedAffine`].
    pub segments_per_thread: usize,
    /// Extra bytes per segment (batched affine: accumulator, prefix product
    /// and bucket word of a chain).
    pub segment_state_bytes: usize,
}

impl ScratchShape {
    /// XYZZ bucket sums: one segment per thread, no chain state.
    pub fn xyzz(xyzz_bytes: usize, threads: usize) -> Self {
        Self { xyzz_bytes, threads, segments_per_thread: 1, segment_state_bytes: 0 }
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
            },
        }
    }

    /// Device scratch bytes of one window of an MSM over `m` full-width
    /// scalars with `c`-bit windows (what [`plan_windows`] divides the
    /// budget by).
    pub fn window_bytes(&self, m: usize, c: u32) -> usize {
        pass_bytes(m, 1 << (c.clamp(1, 31) - 1), 1, self)
    }

    /// Segments of a pass with `entries` sorted entries: at least 8 entries
    /// each, at most `threads * segments_per_thread`.
    fn segments(&self, entries: usize) -> usize {
        entries.div_ceil(8).min(self.threads * self.segments_per_thread)
    }
}

/// Chooses c (2..=16) by [`plan_cost`], then how many windows fit a pass.
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
    let windows = 255 / c + 1;
    let per_window = shape.window_bytes(m, c);
    // Offsets are u32: entries of one pass must stay below 2^32.
    let by_offsets = ((u32::MAX as usize) / m.max(1)).max(1);
    let per_pass = (budget / per_window.max(1)).min(windows as usize).min(by_offsets);
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

/// Device scratch of one pass over `wn` windows (entries, counts, buckets,
/// segment partials, reduction outputs) per window, with `wn` windows.
fn pass_bytes(m: usize, buckets: usize, wn: usize, shape: &ScratchShape) -> usize {
    let entries = m * wn;
    let segments = shape.segments(entries) + 1;
    let xyzz = shape.xyzz_bytes;
    entries * 4
        + (wn * buckets + 1) * 12
        + wn * buckets * xyzz
        + segments * (2 * xyzz + shape.segment_state_bytes)
        + shape.threads * xyzz
}

/// A grid that covers `n` items with `block` threads, capped (kernels loop).
fn grid(n: usize, block: u32) -> u32 {
    n.div_ceil(block as usize).clamp(1, 1 << 20) as u32
}

/// Where scratch comes from, and the stream whose queued work may still use
/// a slot's current buffer.
type On<'a> = (&'a DeviceMemory, &'a Stream);

/// Frees a slot's outgrown buffer once `stream` has passed the work queued
/// on it: a pool may hand the range to another worker at once (the driver's
/// cuMemFree would have waited by itself). Growth happens in the first few
/// MSMs only, so the wait costs nothing in steady state.
fn retire<B>(old: Option<B>, stream: &Stream) -> Result<(), GpuError> {
    if let Some(old) = old {
        stream.synchronize()?;
        drop(old);
    }
    Ok(())
}

/// Device buffers reused across MSMs; grown when too small.
struct Slot<T> {
    buf: Option<DeviceBuffer<T>>,
}

impl<T: c2_cuda::DeviceCopy> Slot<T> {
    const fn new() -> Self {
        Self { buf: None }
    }

    fn get(&mut self, (memory, stream): On<'_>, len: usize) -> Result<&mut DeviceBuffer<T>, GpuError> {
        let len = len.max(1);
        if self.buf.as_ref().is_none_or(|b| b.len() < len) {
            retire(self.buf.take(), stream)?; // free before allocating the larger one
            self.buf = Some(memory.alloc::<T>(len)?);
        }
        Ok(self.buf.as_mut().expect("allocated above"))
    }
}

/// Scratch for one MSM at a time (split results, sort, buckets, sums).
struct Scratch {
    counters: Slot<u32>,
    others: Slot<Scalar>,
    others_base: Slot<u32>,
    ones_base: Slot<u32>,
    counts: Slot<u32>,
    cursor: Slot<u32>,
    scan_tmp: Slot<u32>,
    entries: Slot<u32>,
    /// Bucket and partial sums (XYZZ), as raw u64 words.
    buckets: Slot<u64>,
    head: Slot<u64>,
    tail: Slot<u64>,
    /// Batched-affine chain state: accumulators, prefix products, bucket words.
    chain_acc: Slot<u64>,
    chain_prefix: Slot<u64>,
    chain_bucket: Slot<u32>,
    sums: [Slot<u64>; 2],
    finals: Slot<u64>,
    /// Affine results, typed by curve (`DeviceBuffer<C::Affine>`).
    affine: AnySlot,
    /// Two upload slots for streamed bases (`DeviceBuffer<C::Affine>`).
    stream_bases: [AnySlot; 2],
}

/// A reusable device buffer whose element type depends on the curve of the
/// current MSM.
#[derive(Default)]
struct AnySlot(Option<Box<dyn Any + Send>>);

impl AnySlot {
    fn get<T: c2_cuda::DeviceCopy>(
        &mut self,
        (memory, stream): On<'_>,
        len: usize,
    ) -> Result<&mut DeviceBuffer<T>, GpuError> {
        let len = len.max(1);
        let fits = self.0.as_ref().and_then(|b| b.downcast_ref::<DeviceBuffer<T>>()).is_some_and(|b| b.len() >= len);
        if !fits {
            retire(self.0.take(), stream)?;
            self.0 = Some(Box::new(memory.alloc::<T>(len)?));
        }
        Ok(self.0.as_mut().and_then(|b| b.downcast_mut::<DeviceBuffer<T>>()).expect("allocated above"))
    }
}

impl Scratch {
    fn new() -> Self {
        Self {
            counters: Slot::new(),
            others: Slot::new(),
            others_base: Slot::new(),
            ones_base: Slot::new(),
            counts: Slot::new(),
            cursor: Slot::new(),
            scan_tmp: Slot::new(),
            entries: Slot::new(),
            buckets: Slot::new(),
            head: Slot::new(),
            tail: Slot::new(),
            chain_acc: Slot::new(),
            chain_prefix: Slot::new(),
            chain_bucket: Slot::new(),
            sums: [Slot::new(), Slot::new()],
            finals: Slot::new(),
            affine: AnySlot::default(),
            stream_bases: [AnySlot::default(), AnySlot::default()],
        }
    }
}

/// Pippenger MSMs on one GPU. One MSM runs at a time per instance (the
/// scratch is reused); make one instance per device, or several for
/// concurrent MSMs on one device.
pub struct GpuMsm {
    gpu: Arc<Gpu>,
    /// Source of scratch, streamed-base slots and density masks.
    memory: DeviceMemory,
    config: GpuMsmConfig,
    kernels: Kernels,
    g1: CurveKernels,
    g2: CurveKernels,
    state: Mutex<(Streams, Scratch)>,
    stages: Mutex<Vec<(&'static str, f32)>>,
}

/// Kernel time per stage from CUDA events: `mark(name)` closes the stage
/// `name` that began at the previous mark.
struct StageClock {
    marks: Vec<(&'static str, Event)>,
    gpu: Option<Arc<Gpu>>,
}

impl StageClock {
    fn new(gpu: &Arc<Gpu>, on: bool, s: &Stream) -> Result<Self, MsmError> {
        let mut c = Self { marks: Vec::new(), gpu: on.then(|| gpu.clone()) };
        c.mark("start", s)?;
        Ok(c)
    }

    fn mark(&mut self, name: &'static str, s: &Stream) -> Result<(), MsmError> {
        if let Some(g) = &self.gpu {
            let e = g.event().map_err(gpu_err)?;
            e.record(s).map_err(gpu_err)?;
            self.marks.push((name, e));
        }
        Ok(())
    }

    /// Milliseconds per stage name, summed over passes (events complete).
    fn totals(&self) -> Result<Vec<(&'static str, f32)>, MsmError> {
        let mut out: Vec<(&'static str, f32)> = Vec::new();
        for w in self.marks.windows(2) {
            let ms = w[1].1.elapsed_ms(&w[0].1).map_err(gpu_err)?;
            match out.iter_mut().find(|(n, _)| *n == w[1].0) {
                Some((_, t)) => *t += ms,
                None => out.push((w[1].0, ms)),
            }
        }
        Ok(out)
    }
}

/// What a streamed or resident run needs to know about its bases.
struct BaseRange {
    ptr: u64,
    lo: usize,
    hi: usize,
}

impl GpuMsm {
    /// Loads the kernels on `gpu` with the default configuration.
    pub fn new(gpu: Arc<Gpu>) -> Result<Self, MsmError> {
        Self::with_config(gpu, GpuMsmConfig::default())
    }

    /// Loads the kernels on `gpu`; buffers from the driver.
    pub fn with_config(gpu: Arc<Gpu>, config: GpuMsmConfig) -> Result<Self, MsmError> {
        Self::with_memory(DeviceMemory::driver(gpu), config)
    }

    /// Loads the kernels on `memory`'s device; every device buffer of the
    /// MSMs (scratch, streamed bases, density masks) comes from `memory`.
    pub fn with_memory(memory: DeviceMemory, config: GpuMsmConfig) -> Result<Self, MsmError> {
        let gpu = memory.gpu().clone();
        let k = |s: &str| gpu.kernel(s).map_err(gpu_err);
        let kernels = Kernels {
            mask_popc: k("c2_msm_mask_popc")?,
            split: k("c2_msm_split")?,
            histogram: k("c2_msm_histogram")?,
            scatter: k("c2_msm_scatter")?,
            scan_blocks: k("c2_scan_blocks")?,
            scan_add: k("c2_scan_add")?,
        };
        let g1 = CurveKernels::load(&gpu, G1::PREFIX).map_err(gpu_err)?;
        let g2 = CurveKernels::load(&gpu, G2::PREFIX).map_err(gpu_err)?;
        let streams = Streams {
            compute: gpu.stream().map_err(gpu_err)?,
            copy: gpu.stream().map_err(gpu_err)?,
            ready: [gpu.event().map_err(gpu_err)?, gpu.event().map_err(gpu_err)?],
            free: [gpu.event().map_err(gpu_err)?, gpu.event().map_err(gpu_err)?],
        };
        Ok(Self {
            gpu,
            memory,
            config,
            kernels,
            g1,
            g2,
            state: Mutex::new((streams, Scratch::new())),
            stages: Mutex::new(Vec::new()),
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// The configuration.
    pub fn config(&self) -> &GpuMsmConfig {
        &self.config
    }

    /// Kernel milliseconds per stage of the last MSM run (split, ones, sort,
    /// accumulate, fixup, reduce, window sums, affine), with
    /// `config.stage_timing` on; empty otherwise.
    pub fn last_stage_times(&self) -> Vec<(&'static str, f32)> {
        self.stages.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn curve<C: GpuCurve>(&self) -> &CurveKernels {
        if C::PREFIX == G1::PREFIX {
            &self.g1
        } else {
            &self.g2
        }
    }

    fn budget(&self) -> Result<usize, MsmError> {
        match self.config.memory_budget {
            Some(b) => Ok(b),
            None => {
                let free = self.memory.available().map_err(gpu_err)?;
                Ok(free.saturating_sub(self.config.reserve_bytes))
            }
        }
    }

    /// Uploads a density mask and computes its per-word ranks on the GPU.
    pub fn upload_density(&self, mask: &Density) -> Result<DeviceDensity, MsmError> {
        let (streams, scratch) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let s = &streams.compute;
        let w = mask.as_words();
        let mut words = self.memory.alloc::<u64>(w.len()).map_err(gpu_err)?;
        words.upload_async(0, w, s).map_err(gpu_err)?;
        let mut ranks = self.memory.alloc::<u32>(w.len() + 1).map_err(gpu_err)?;
        ranks.zero_async(0, w.len() + 1, s).map_err(gpu_err)?;
        // SAFETY: reads w.len() words, writes as many ranks.
        unsafe {
            self.kernels
                .mask_popc
                .launch_u64(
                    s,
                    grid(w.len(), INT_THREADS),
                    INT_THREADS,
                    &[words.device_ptr(), w.len() as u64, ranks.device_ptr()],
                )
                .map_err(gpu_err)?;
        }
        self.scan(&mut ranks, w.len() + 1, &mut scratch.scan_tmp, s)?;
        s.synchronize().map_err(gpu_err)?;
        Ok(DeviceDensity { words, ranks, len: mask.len(), set: mask.count_ones() })
    }

    /// Exclusive prefix sum of `data[..n]` in place (u32, totals < 2^32).
    fn scan(&self, data: &mut DeviceBuffer<u32>, n: usize, tmp: &mut Slot<u32>, s: &Stream) -> Result<(), MsmError> {
        // Level sizes: n, n/4096, ... down to one block.
        let mut levels = vec![n];
        while *levels.last().expect("non-empty") > SCAN_BLOCK {
            levels.push(levels.last().expect("non-empty").div_ceil(SCAN_BLOCK));
        }
        let tmp_len: usize = levels.iter().map(|l| l.div_ceil(SCAN_BLOCK)).sum();
        let tmp = tmp.get((&self.memory, s), tmp_len).map_err(gpu_err)?;
        // Pointers of each level's data: level 0 is `data`, level i > 0 the
        // block sums of level i - 1 inside tmp.
        let mut ptrs = vec![data.device_ptr()];
        let mut off = 0usize;
        for l in &levels {
            ptrs.push(tmp.device_ptr() + 4 * off as u64);
            off += l.div_ceil(SCAN_BLOCK);
        }
        for (i, &len) in levels.iter().enumerate() {
            // SAFETY: level i has len values at ptrs[i]; its block sums go
            // to ptrs[i + 1], sized len / 4096 rounded up.
            unsafe {
                self.kernels
                    .scan_blocks
                    .launch_u64(s, len.div_ceil(SCAN_BLOCK) as u32, 1024, &[ptrs[i], len as u64, ptrs[i + 1]])
                    .map_err(gpu_err)?;
            }
        }
        for (i, &len) in levels.iter().enumerate().rev() {
            if len <= SCAN_BLOCK {
                continue; // one block: already complete
            }
            // SAFETY: adds the scanned block sums at ptrs[i + 1] to level i.
            unsafe {
                self.kernels
                    .scan_add
                    .launch_u64(s, grid(len, INT_THREADS), INT_THREADS, &[ptrs[i], len as u64, ptrs[i + 1]])
                    .map_err(gpu_err)?;
            }
        }
        Ok(())
    }

    /// MSM with bases already on the device: `sum_i s_i * bases[j(i)]`
    /// (see [`Msm`] for the mask rule). `scalars` holds `n` scalars, or
    /// `mask.len()` with a mask. The MSM runs on this instance's own stream:
    /// uploads or kernels that write `bases` or `scalars` on another stream
    /// must be complete (synchronised) before the call.
    pub fn msm_device<C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::Affine>,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_device_from::<C>(bases, 0, scalars, mask)
    }

    /// [`GpuMsm::msm_device`] over the bases from index `first` on (e.g. the
    /// aux part of a resident A query whose first entries serve the public
    /// inputs).
    pub fn msm_device_from<C: GpuCurve>(
        &self,
        bases: &DeviceBuffer<C::Affine>,
        first: usize,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let available = bases.len().saturating_sub(first);
        let needed = match mask {
            Some(m) if m.len() != scalars.len() => {
                return Err(MsmError::MaskLength { query: C::PREFIX, mask: m.len(), scalars: scalars.len() })
            }
            Some(m) => m.count_ones(),
            None => scalars.len(),
        };
        if available < needed {
            return Err(MsmError::TooFewBases { query: C::PREFIX, needed, available });
        }
        if needed >= MAX_BASES {
            return Err(too_many(needed));
        }
        let (streams, scratch) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let ptr = bases.device_ptr() + (first * std::mem::size_of::<C::Affine>()) as u64;
        let range = BaseRange { ptr, lo: 0, hi: needed };
        let r = self.run::<C>(streams, scratch, &range, scalars, mask)?;
        Ok(r)
    }

    /// MSM with bases in host memory: uploaded whole when they fit the
    /// budget (and streaming is not forced), else streamed in chunks of
    /// `config.stream_chunk` bases through two device slots. A helper thread
    /// uploads chunk k + 1 on the copy stream while this thread runs chunk
    /// k's kernels (a copy from pageable memory blocks its calling thread
    /// while the driver stages it, so the overlap needs the second thread;
    /// from pinned memory the copy is asynchronous anyway). Events order the
    /// slots: an upload waits until the kernels that read its slot are done.
    pub fn msm_host_bases<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let n = check_shape_device(C::PREFIX, bases.len(), scalars.len(), mask)?;
        if n == 0 {
            return Ok(C::Projective::identity());
        }
        let bases = &bases[..n];
        let point = std::mem::size_of::<C::Affine>();
        let chunk = if self.config.force_streaming || n * point > self.budget()? / 2 {
            self.config.stream_chunk.max(1)
        } else {
            n
        };
        let (streams, scratch) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let chunks: Vec<(usize, usize)> = (0..n).step_by(chunk).map(|lo| (lo, (lo + chunk).min(n))).collect();
        // Both slots allocated up front: no allocation (and its implicit
        // device synchronisation) inside the loop.
        let mut slots = std::mem::take(&mut scratch.stream_bases);
        for slot in slots.iter_mut().take(chunks.len().min(2)) {
            slot.get::<C::Affine>((&self.memory, &streams.compute), chunk).map_err(gpu_err)?;
        }
        // Make the first waits on `free` pass.
        for e in &streams.free {
            e.record(&streams.compute).map_err(gpu_err)?;
        }
        let streams: &Streams = streams;
        let memory = &self.memory;
        let upload = |k: usize, slot: &mut AnySlot| -> Result<u64, MsmError> {
            let (lo, hi) = chunks[k];
            // Allocated above at this size: no growth (and no wait) here.
            let buf = slot.get::<C::Affine>((memory, &streams.copy), chunk).map_err(gpu_err)?;
            streams.copy.wait(&streams.free[k % 2]).map_err(gpu_err)?;
            buf.upload_async(0, &bases[lo..hi], &streams.copy).map_err(gpu_err)?;
            streams.ready[k % 2].record(&streams.copy).map_err(gpu_err)?;
            Ok(buf.device_ptr())
        };
        let result = std::thread::scope(|sc| -> Result<C::Projective, MsmError> {
            let [s0, s1] = &mut slots;
            let mut idle: [Option<&mut AnySlot>; 2] = [Some(s0), Some(s1)];
            let mut total = C::Projective::identity();
            let mut ptr = upload(0, idle[0].as_deref_mut().expect("slot 0"))?;
            for k in 0..chunks.len() {
                // Chunk k + 1 uploads on a helper thread into the other slot.
                let pending = match idle[(k + 1) % 2].take() {
                    Some(slot) if k + 1 < chunks.len() => Some(sc.spawn(move || (upload(k + 1, slot), slot))),
                    other => {
                        idle[(k + 1) % 2] = other;
                        None
                    }
                };
                streams.compute.wait(&streams.ready[k % 2]).map_err(gpu_err)?;
                let range = BaseRange { ptr, lo: chunks[k].0, hi: chunks[k].1 };
                let part = self.run::<C>(streams, scratch, &range, scalars, mask);
                streams.free[k % 2].record(&streams.compute).map_err(gpu_err)?;
                if let Some(h) = pending {
                    let (next, slot) = h.join().map_err(|_| MsmError::Backend {
                        backend: "cuda",
                        message: "base upload thread panicked".into(),
                    })?;
                    idle[(k + 1) % 2] = Some(slot);
                    ptr = next?;
                }
                total += part?;
            }
            streams.compute.synchronize().map_err(gpu_err)?;
            Ok(total)
        });
        scratch.stream_bases = slots;
        result
    }

    /// Uploads scalars (pageable host memory; the driver stages them).
    pub fn upload_scalars(&self, scalars: &[Scalar]) -> Result<DeviceBuffer<Scalar>, MsmError> {
        let (streams, _) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let mut d = self.memory.alloc::<Scalar>(scalars.len()).map_err(gpu_err)?;
        d.upload_async(0, scalars, &streams.compute).map_err(gpu_err)?;
        streams.compute.synchronize().map_err(gpu_err)?;
        Ok(d)
    }

    /// One Pippenger over the bases `range.lo..range.hi` (at `range.ptr`).
    fn run<C: GpuCurve>(
        &self,
        streams: &Streams,
        scratch: &mut Scratch,
        range: &BaseRange,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let n = scalars.len();
        if n == 0 || range.hi <= range.lo {
            return Ok(C::Projective::identity());
        }
        let s = &streams.compute;
        let g = (&self.memory, s);
        let e = gpu_err;
        let xyzz = std::mem::size_of::<C::Xyzz>();
        let xw = xyzz / 8;
        let kc = self.curve::<C>();

        let mut clock = StageClock::new(&self.gpu, self.config.stage_timing, s)?;
        // 1. Split on the GPU: zeros dropped, ones listed, others kept.
        let counters = scratch.counters.get(g, 2).map_err(e)?;
        counters.zero_async(0, 2, s).map_err(e)?;
        let others = scratch.others.get(g, n).map_err(e)?.device_ptr();
        let others_base = scratch.others_base.get(g, n).map_err(e)?.device_ptr();
        let ones_base = scratch.ones_base.get(g, n).map_err(e)?.device_ptr();
        let (mask_ptr, rank_ptr) = mask.map_or((0, 0), |m| (m.words.device_ptr(), m.ranks.device_ptr()));
        // SAFETY: n scalars in, at most n entries per output list.
        unsafe {
            self.kernels.split.launch_u64(
                s,
                grid(n, INT_THREADS),
                INT_THREADS,
                &[
                    scalars.ptr(),
                    n as u64,
                    mask_ptr,
                    rank_ptr,
                    scalars.montgomery_flag(),
                    range.lo as u64,
                    range.hi as u64,
                    others,
                    others_base,
                    ones_base,
                    counters.device_ptr(),
                ],
            )
        }
        .map_err(e)?;
        clock.mark("split", s)?;
        let mut count = [0u32; 2];
        counters.download_async(0, &mut count, s).map_err(e)?;
        s.synchronize().map_err(e)?;
        let (m, ones) = (count[0] as usize, count[1] as usize);

        let bucket_sum = self.config.bucket_sum.unwrap_or(BucketSum::measured_default(xyzz, m));
        let shape = ScratchShape::for_bucket_sum(bucket_sum, xyzz, self.config.target_threads);
        // Final points (affine on the host): [ones, window 0, window 1, ...].
        let plan = match m {
            0 => None,
            _ => Some(plan_windows(m, self.config.window_bits, self.budget()?, &shape)?),
        };
        let windows = plan.map_or(0, |p| p.windows as usize);
        let finals = scratch.finals.get(g, (1 + windows) * xw).map_err(e)?.device_ptr();

        // 2. Ones: tree sums of gathered bases.
        if ones > 0 {
            let group = (ones / self.config.target_threads).max(SUM_GROUP);
            let partial = ones.div_ceil(group);
            let out = scratch.sums[0].get(g, partial * xw).map_err(e)?.device_ptr();
            // SAFETY: `ones` indices below range.hi - range.lo; partial outputs.
            unsafe {
                kc.sum_gathered.launch_u64(
                    s,
                    grid(partial, CURVE_THREADS),
                    CURVE_THREADS,
                    &[range.ptr, ones_base, ones as u64, group as u64, out],
                )
            }
            .map_err(e)?;
            self.tree_sum::<C>(s, scratch, out, partial, 1, finals)?;
        } else {
            // XYZZ infinity has ZZ = 0; all-zero bytes are one.
            let f = scratch.finals.buf.as_mut().expect("allocated above");
            f.zero_async(0, xw, s).map_err(e)?;
        }

        clock.mark("ones", s)?;
        // 3. Others: Pippenger, `per_pass` windows at a time.
        if let Some(plan) = plan {
            let nb = plan.buckets();
            let mut w0 = 0u32;
            while w0 < plan.windows {
                let wn = plan.per_pass.min(plan.windows - w0);
                let nbk = wn as usize * nb;
                let counts = scratch.counts.get(g, nbk + 1).map_err(e)?;
                counts.zero_async(0, nbk + 1, s).map_err(e)?;
                let c = plan.c as u64;
                // SAFETY: m canonical scalars; counts has nbk + 1 slots.
                unsafe {
                    self.kernels.histogram.launch_u64(
                        s,
                        grid(m, INT_THREADS),
                        INT_THREADS,
                        &[others, m as u64, c, w0 as u64, wn as u64, counts.device_ptr()],
                    )
                }
                .map_err(e)?;
                let counts_ptr = counts.device_ptr();
                self.scan(scratch.counts.get(g, nbk + 1).map_err(e)?, nbk + 1, &mut scratch.scan_tmp, s)?;
                let cursor = scratch.cursor.get(g, nbk).map_err(e)?;
                let counts_buf = scratch.counts.buf.as_ref().expect("allocated above");
                cursor.copy_range_from_async(0, counts_buf, 0, nbk, s).map_err(e)?;
                let max_entries = m * wn as usize;
                let entries = scratch.entries.get(g, max_entries).map_err(e)?.device_ptr();
                // SAFETY: every nonzero digit gets one slot below off[nbk].
                unsafe {
                    self.kernels.scatter.launch_u64(
                        s,
                        grid(m, INT_THREADS),
                        INT_THREADS,
                        &[others, others_base, m as u64, c, w0 as u64, wn as u64, cursor.device_ptr(), entries],
                    )
                }
                .map_err(e)?;

                clock.mark("sort", s)?;
                // Segments: enough for the target thread count (times the
                // chains per thread), >= 8 entries. XYZZ segments also span
                // >= 4 average buckets: measured on the H200, with segments
                // about one bucket long (G2 2^20 at c = 14, G1 2^24 PoRep mix)
                // the fix-up took 78 / 18 ms instead of ~1-2 ms.
                let avg_bucket = m.div_ceil(nb);
                let seg = match bucket_sum {
                    BucketSum::Xyzz => max_entries.div_ceil(self.config.target_threads).max(8).max(4 * avg_bucket),
                    BucketSum::BatchedAffine { .. } => max_entries.div_ceil(shape.segments(max_entries)).max(8),
                };
                let nseg = max_entries.div_ceil(seg);
                let buckets = scratch.buckets.get(g, nbk * xw).map_err(e)?.device_ptr();
                let head = scratch.head.get(g, nseg * xw).map_err(e)?.device_ptr();
                let tail = scratch.tail.get(g, nseg * xw).map_err(e)?.device_ptr();
                match bucket_sum {
                    BucketSum::Xyzz => {
                        let k = if self.config.inline_bucket_add { &kc.accumulate_inline } else { &kc.accumulate };
                        // SAFETY: kernels stay within nbk buckets and nseg segments.
                        unsafe {
                            k.launch_u64(
                                s,
                                grid(nseg, CURVE_THREADS),
                                CURVE_THREADS,
                                &[range.ptr, entries, counts_ptr, nbk as u64, seg as u64, buckets, head, tail],
                            )
                        }
                        .map_err(e)?;
                    }
                    BucketSum::BatchedAffine { batch, .. } => {
                        let batch = batch.max(1) as usize;
                        // Chain state: affine accumulator (xyzz / 2 bytes),
                        // prefix product (xyzz / 4), bucket word.
                        let acc = scratch.chain_acc.get(g, nseg * xw / 2).map_err(e)?.device_ptr();
                        let prefix = scratch.chain_prefix.get(g, nseg * xw / 4).map_err(e)?.device_ptr();
                        let cur = scratch.chain_bucket.get(g, nseg).map_err(e)?.device_ptr();
                        // SAFETY: grid * block * batch >= nseg (nseg <=
                        // target_threads * batch, far below the grid cap); the
                        // kernel touches chain slots < nseg only.
                        unsafe {
                            kc.accumulate_affine.launch_u64(
                                s,
                                grid(nseg.div_ceil(batch), CURVE_THREADS),
                                CURVE_THREADS,
                                &[
                                    range.ptr,
                                    entries,
                                    counts_ptr,
                                    nbk as u64,
                                    seg as u64,
                                    batch as u64,
                                    acc,
                                    prefix,
                                    cur,
                                    buckets,
                                    head,
                                    tail,
                                ],
                            )
                        }
                        .map_err(e)?;
                    }
                }
                clock.mark("accumulate", s)?;
                // SAFETY: reads off[..=nbk] and the partials accumulate wrote.
                unsafe {
                    kc.fixup.launch_u64(
                        s,
                        grid(nbk, CURVE_THREADS),
                        CURVE_THREADS,
                        &[counts_ptr, nbk as u64, seg as u64, buckets, head, tail],
                    )
                }
                .map_err(e)?;

                clock.mark("fixup", s)?;
                // Running sums over chunks of q buckets per window.
                let chunks_per_window = (self.config.target_threads / wn as usize).next_power_of_two().clamp(1, nb);
                let q = nb / chunks_per_window;
                let parts = wn as usize * chunks_per_window;
                let out = scratch.sums[0].get(g, parts * xw).map_err(e)?.device_ptr();
                // SAFETY: wn * nb buckets in, parts points out.
                unsafe {
                    kc.reduce.launch_u64(
                        s,
                        grid(parts, CURVE_THREADS),
                        CURVE_THREADS,
                        &[buckets, wn as u64, nb as u64, q as u64, out],
                    )
                }
                .map_err(e)?;
                clock.mark("reduce", s)?;
                let dst = finals + ((1 + w0 as usize) * xyzz) as u64;
                self.tree_sum::<C>(s, scratch, out, parts, wn as usize, dst)?;
                clock.mark("window sums", s)?;
                w0 += wn;
            }
        }

        // 4. Affine on the GPU, combine on the host.
        let points = 1 + windows;
        let aff = scratch.affine.get::<C::Affine>(g, points).map_err(e)?;
        // SAFETY: points XYZZ in, as many affine out.
        unsafe {
            kc.to_affine.launch_u64(
                s,
                grid(points, CURVE_THREADS),
                CURVE_THREADS,
                &[finals, points as u64, aff.device_ptr()],
            )
        }
        .map_err(e)?;
        let mut host = vec![C::Affine::identity(); points];
        clock.mark("affine", s)?;
        aff.download_async(0, &mut host, s).map_err(e)?;
        s.synchronize().map_err(e)?;
        if self.config.stage_timing {
            *self.stages.lock().map_err(|_| poisoned())? = clock.totals()?;
        }
        let mut acc = C::Projective::identity();
        if let Some(plan) = plan {
            for w in (0..windows).rev() {
                for _ in 0..plan.c {
                    acc = acc.double();
                }
                acc += host[1 + w].to_curve();
            }
        }
        Ok(acc + host[0].to_curve())
    }

    /// Sums `n` XYZZ points at `src` that form `outputs` equal groups
    /// (n / outputs a power of two, or outputs = 1) into `outputs` points at
    /// `dst`, 32 at a time.
    fn tree_sum<C: GpuCurve>(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        src: u64,
        n: usize,
        outputs: usize,
        dst: u64,
    ) -> Result<(), MsmError> {
        let xw = std::mem::size_of::<C::Xyzz>() / 8;
        let kc = self.curve::<C>();
        let mut cur = src;
        let mut len = n;
        let mut flip = 1;
        while len > outputs {
            let per = len / outputs;
            let group = if outputs == 1 { SUM_GROUP.min(len) } else { SUM_GROUP.min(per) };
            let next_len = len.div_ceil(group);
            let out = if next_len == outputs {
                dst
            } else {
                let b = scratch.sums[flip].get((&self.memory, s), next_len * xw).map_err(gpu_err)?.device_ptr();
                flip ^= 1;
                b
            };
            // SAFETY: len points in, next_len out.
            unsafe {
                kc.sum_groups.launch_u64(
                    s,
                    grid(next_len, CURVE_THREADS),
                    CURVE_THREADS,
                    &[cur, len as u64, group as u64, out],
                )
            }
            .map_err(gpu_err)?;
            cur = out;
            len = next_len;
        }
        if cur != dst {
            // One group already (n == outputs): copy through a 1-wide sum.
            unsafe { kc.sum_groups.launch_u64(s, grid(len, CURVE_THREADS), CURVE_THREADS, &[cur, len as u64, 1, dst]) }
                .map_err(gpu_err)?;
        }
        Ok(())
    }
}

fn poisoned() -> MsmError {
    MsmError::Backend { backend: "cuda", message: "GPU MSM state poisoned by an earlier panic".into() }
}

fn too_many(n: usize) -> MsmError {
    MsmError::Backend { backend: "cuda", message: format!("{n} bases: the GPU MSM takes fewer than 2^31 per call") }
}

fn check_shape_device(
    query: &'static str,
    bases: usize,
    scalars: usize,
    mask: Option<&DeviceDensity>,
) -> Result<usize, MsmError> {
    let needed = match mask {
        Some(m) if m.len() != scalars => return Err(MsmError::MaskLength { query, mask: m.len(), scalars }),
        Some(m) => m.count_ones(),
        None => scalars,
    };
    if bases < needed {
        return Err(MsmError::TooFewBases { query, needed, available: bases });
    }
    if needed >= MAX_BASES {
        return Err(too_many(needed));
    }
    Ok(needed)
}

impl GpuMsm {
    /// The host-level MSM behind [`Msm`]: uploads scalars and mask, then
    /// [`GpuMsm::msm_host_bases`].
    fn host_msm<C: GpuCurve>(
        &self,
        query: &'static str,
        bases: &[C::Affine],
        scalars: &[Scalar],
        mask: Option<&Density>,
    ) -> Result<C::Projective, MsmError> {
        let n = check_shape(query, bases.len(), scalars.len(), mask)?;
        if n == 0 {
            return Ok(C::Projective::identity());
        }
        let d_scalars = self.upload_scalars(scalars)?;
        let d_mask = mask.map(|m| self.upload_density(m)).transpose()?;
        self.msm_host_bases::<C>(&bases[..n], DeviceScalars::montgomery(&d_scalars), d_mask.as_ref())
    }
}

impl Msm for GpuMsm {
    fn name(&self) -> &'static str {
        "cuda-pippenger"
    }

    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G1Projective, MsmError> {
        self.host_msm::<G1>("G1", bases, scalars, mask)
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G2Projective, MsmError> {
        self.host_msm::<G2>("G2", bases, scalars, mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuMsm;

    const BIG: usize = 1 << 40;

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
        ] {
            let per = pass_bytes(m, 1 << 15, 1, &shape);
            let p = plan_windows(m, Some(16), 3 * per, &shape).unwrap();
            assert_eq!(p.per_pass, 3, "{shape:?}");
            let e = plan_windows(m, Some(16), per - 1, &shape).unwrap_err();
            assert!(e.to_string().contains("budget"), "{e}");
        }
        // Chain state counts: the batched-affine pass needs more scratch.
        let affine = ScratchShape::for_bucket_sum(BucketSum::BatchedAffine { batch: 64, threads }, 192, threads);
        assert!(pass_bytes(m, 1 << 15, 1, &affine) > pass_bytes(m, 1 << 15, 1, &ScratchShape::xyzz(192, threads)));
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

    /// Without a device (CI) the constructor path reports "no GPU" as a typed
    /// error; on a GPU host the MSM must agree with blst.
    #[test]
    fn no_device_is_a_typed_error_else_matches_cpu() {
        use group::Group;
        match Gpu::open(0) {
            Err(e) => {
                eprintln!("no GPU here (expected on CI): {e}");
                assert!(matches!(e, GpuError::NoDevice(_) | GpuError::Driver { .. }), "{e:?}");
            }
            Ok(gpu) => {
                let m = GpuMsm::new(gpu).expect("kernels load");
                let bases: Vec<G1Affine> =
                    (1..=1000u64).map(|i| (G1Projective::generator() * Scalar::from(i)).to_affine()).collect();
                let s: Vec<Scalar> = (0..1000u64).map(|i| Scalar::from(i * i + 7) * Scalar::from(u64::MAX)).collect();
                assert_eq!(m.msm_g1(&bases, &s, None).unwrap(), CpuMsm.msm_g1(&bases, &s, None).unwrap());
            }
        }
    }
}
