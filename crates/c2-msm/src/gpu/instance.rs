//! One GPU MSM instance: its kernels, streams, scratch and budget, and the
//! helpers every run uses (the density-mask upload, prefix sums).

use std::sync::{Arc, Mutex};

use blstrs::Scalar;
use c2_cuda::{
    CurveId, CurveStep, DeviceBuffer, DeviceMemory, Event, Gpu, GpuError, Kernel, KernelId, Launch, Stager, Stream,
};

use crate::{check_shape, Density, MsmError};
use c2_core::CompactWitness;

use super::curve::GpuCurve;
use super::inputs::{DeviceCompact, DeviceDensity};
use super::scratch::{Scratch, Slot};
use crate::config::GpuMsmConfig;

/// The priority of the MSM's streams ([`GpuMsmConfig::urgent_streams`]).
pub(super) fn stream_priority(config: &GpuMsmConfig) -> c2_cuda::StreamPriority {
    if config.urgent_streams {
        c2_cuda::StreamPriority::Urgent
    } else {
        c2_cuda::StreamPriority::Normal
    }
}

pub(super) fn gpu_err(e: GpuError) -> MsmError {
    MsmError::Gpu(e)
}

/// Threads per block of the curve kernels (G2 points take ~100 registers
/// per accumulator; 128 threads keep a block's registers within one SM).
pub(super) const CURVE_THREADS: u32 = 128;
/// Threads per block of the integer kernels.
pub(super) const INT_THREADS: u32 = 256;
/// Values per block of `c2_scan_blocks` (4 per thread, 1024 threads).
pub(super) const SCAN_BLOCK: usize = 4096;
/// Group size of the tree sums (ones, window results).
pub(super) const SUM_GROUP: usize = 32;
/// Base indices carry the sign in bit 31.
pub(super) const MAX_BASES: usize = 1 << 31;

pub(super) struct Kernels {
    pub(super) split: Kernel,
    pub(super) split_compact: Kernel,
    pub(super) histogram: Kernel,
    pub(super) scatter: Kernel,
    pub(super) coarse_count: Kernel,
    pub(super) coarse_place: Kernel,
    pub(super) fine_sort: Kernel,
    pub(super) pair_counts: Kernel,
    pub(super) scan_blocks: Kernel,
    pub(super) scan_add: Kernel,
}

/// The curve-dependent kernels of one group.
pub(super) struct CurveKernels {
    pub(super) accumulate: Kernel,
    pub(super) accumulate_inline: Kernel,
    /// The inlined loop bounded to 3 and 4 blocks per SM.
    pub(super) accumulate_inline3: Kernel,
    pub(super) accumulate_inline4: Kernel,
    pub(super) accumulate_affine: Kernel,
    pub(super) pair_sums: Kernel,
    pub(super) fixup_heads: Kernel,
    pub(super) fixup: Kernel,
    pub(super) reduce: Kernel,
    pub(super) sum_groups: Kernel,
    pub(super) sum_gathered: Kernel,
    /// Bases doubled a given number of times (precomputed copies).
    pub(super) precompute: Kernel,
    pub(super) to_affine: Kernel,
    /// Threads of `reduce` the device runs at once (its blocks per SM from
    /// the driver's occupancy answer, times the SMs): what the window
    /// reduction's chunks are sized for ([`crate::plan::reduce_chunk`]).
    pub(super) reduce_resident: usize,
}

impl CurveKernels {
    fn load(gpu: &Gpu, curve: CurveId) -> Result<Self, GpuError> {
        let k = |step| gpu.kernel(KernelId::Curve(curve, step));
        let reduce = k(CurveStep::Reduce)?;
        let reduce_resident = reduce.max_blocks_per_sm(CURVE_THREADS, 0)?.max(1) as usize
            * CURVE_THREADS as usize
            * gpu.info().multiprocessors;
        Ok(Self {
            accumulate: k(CurveStep::Accumulate)?,
            accumulate_inline: k(CurveStep::AccumulateInline)?,
            accumulate_inline3: k(CurveStep::AccumulateInline3)?,
            accumulate_inline4: k(CurveStep::AccumulateInline4)?,
            accumulate_affine: k(CurveStep::AccumulateAffine)?,
            pair_sums: k(CurveStep::PairSums)?,
            fixup_heads: k(CurveStep::FixupHeads)?,
            fixup: k(CurveStep::Fixup)?,
            reduce,
            reduce_resident,
            sum_groups: k(CurveStep::SumGroups)?,
            sum_gathered: k(CurveStep::SumGathered)?,
            precompute: k(CurveStep::Precompute)?,
            to_affine: k(CurveStep::ToAffine)?,
        })
    }
}

/// Streams and the events that order streamed-base uploads.
pub(super) struct Streams {
    pub(super) compute: Stream,
    /// The pinned staging path for streamed bases (its copy stream carries
    /// the uploads); made on the first streamed MSM, so an instance whose
    /// bases are resident pins no host memory.
    pub(super) stager: Option<Stager>,
    /// Per upload slot: the upload finished / the kernels reading it finished.
    pub(super) ready: [Event; 2],
    pub(super) free: [Event; 2],
}

/// Bytes per pinned staging slot of streamed bases (two slots per instance).
pub(super) const STAGING_BYTES: usize = 64 << 20;

/// Threads per block of the two-level sort (`c2_msm_coarse_*`, `c2_msm_fine_sort`).
pub(super) const SORT_THREADS: u32 = 1024;
/// Shared memory of `c2_msm_coarse_place` besides its tile
/// (`PLACE_FIXED_BYTES` in `cuda-kernels/msm/sort.cuh`): three words per
/// coarse bin (2048) and 32 words of scan scratch.
const PLACE_FIXED_BYTES: usize = 3 * 4 * 2048 + 4 * 32;
/// Shared bytes per staged entry of the placement (base word, fine index, bin).
const PLACE_ENTRY_BYTES: usize = 7;
/// The placement's largest tile: ~8 entries per coarse bin and tile at
/// 2048 bins (16 windows of c = 16).
const PLACE_MAX_TILE: usize = 16384;
/// The smallest tile worth the two-level sort: ~2 entries per bin and tile.
const PLACE_MIN_TILE: usize = 4096;
/// Shared memory the driver keeps per resident block (1 KB on sm_80+).
const DRIVER_SHARED_PER_BLOCK: usize = 1024;

/// How `c2_msm_coarse_place` launches on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PlaceLaunch {
    /// Staged entries per tile (a multiple of 1024).
    pub(super) tile: u32,
    /// Dynamic shared memory per block, bytes.
    pub(super) shared: u32,
    /// Most blocks to launch: `blocks` per SM.
    pub(super) max_grid: u32,
}

impl PlaceLaunch {
    /// The placement at `blocks` per SM (1 or 2) on a device with `sms`
    /// SMs of `per_sm` shared bytes that lets a block opt in to `optin`:
    /// the largest tile (multiple of 1024, at most 16384) that fits;
    /// `None` where less than a 4096-entry tile fits (the global counters
    /// sort there).
    pub(super) fn new(blocks: u32, sms: usize, per_sm: usize, optin: usize) -> Option<Self> {
        let blocks = blocks.clamp(1, 2);
        let per_block = (per_sm / blocks as usize).saturating_sub(DRIVER_SHARED_PER_BLOCK).min(optin);
        let tile = (per_block.saturating_sub(PLACE_FIXED_BYTES) / PLACE_ENTRY_BYTES / 1024 * 1024).min(PLACE_MAX_TILE);
        (tile >= PLACE_MIN_TILE).then(|| Self {
            tile: tile as u32,
            shared: (PLACE_FIXED_BYTES + PLACE_ENTRY_BYTES * tile) as u32,
            max_grid: (sms.max(1) * blocks as usize) as u32,
        })
    }
}

/// A grid that covers `n` items with `block` threads, capped (kernels loop).
pub(super) fn grid(n: usize, block: u32) -> u32 {
    n.div_ceil(block as usize).clamp(1, 1 << 20) as u32
}

/// Pippenger MSMs on one GPU. One MSM runs at a time per instance (the
/// scratch is reused); make one instance per device, or several for
/// concurrent MSMs on one device.
pub struct GpuMsm {
    pub(super) gpu: Arc<Gpu>,
    /// Source of scratch, streamed-base slots and density masks.
    pub(super) memory: DeviceMemory,
    pub(super) config: GpuMsmConfig,
    pub(super) kernels: Kernels,
    pub(super) g1: CurveKernels,
    pub(super) g2: CurveKernels,
    /// How the two-level sort's placement launches here; `None`: the device
    /// cannot run the two-level sort ([`crate::Sort::TwoLevel`]).
    pub(super) place: Option<PlaceLaunch>,
    pub(super) state: Mutex<(Streams, Scratch)>,
    pub(super) stages: Mutex<Vec<(&'static str, f32)>>,
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
        let k = |id| gpu.kernel(id).map_err(gpu_err);
        let kernels = Kernels {
            split: k(KernelId::MsmSplit)?,
            split_compact: k(KernelId::MsmSplitCompact)?,
            histogram: k(KernelId::MsmHistogram)?,
            scatter: k(KernelId::MsmScatter)?,
            coarse_count: k(KernelId::MsmCoarseCount)?,
            coarse_place: k(KernelId::MsmCoarsePlace)?,
            fine_sort: k(KernelId::MsmFineSort)?,
            pair_counts: k(KernelId::MsmPairCounts)?,
            scan_blocks: k(KernelId::ScanBlocks)?,
            scan_add: k(KernelId::ScanAdd)?,
        };
        // The two-level sort's tiled placement stages a tile in up to 137
        // KB of shared memory, above the 48 KB a launch gets without opting
        // in; at the configured blocks per SM, else one; devices without
        // room for a 4096-entry tile sort by global counters.
        let info = gpu.info();
        let on_device = |blocks| {
            PlaceLaunch::new(blocks, info.multiprocessors, info.max_shared_per_sm, info.max_shared_per_block_optin)
        };
        let place = on_device(config.sort_place_blocks).or_else(|| on_device(1));
        if let Some(p) = place {
            kernels.coarse_place.set_max_dynamic_shared(p.shared).map_err(gpu_err)?;
            kernels.coarse_place.prefer_max_shared().map_err(gpu_err)?;
        }
        let g1 = CurveKernels::load(&gpu, CurveId::G1).map_err(gpu_err)?;
        let g2 = CurveKernels::load(&gpu, CurveId::G2).map_err(gpu_err)?;
        let streams = Streams {
            compute: gpu.stream_at(stream_priority(&config)).map_err(gpu_err)?,
            stager: None,
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
            place,
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

    /// Kernel milliseconds per stage of the last MSM (split, ones, sort,
    /// accumulate, fixup, reduce, window sums, affine), summed over its runs
    /// (streamed chunks, bounded runs), with `config.stage_timing` on; empty
    /// otherwise.
    pub fn last_stage_times(&self) -> Vec<(&'static str, f32)> {
        self.stages.lock().map(|v| v.clone()).unwrap_or_default()
    }

    pub(super) fn curve<C: GpuCurve>(&self) -> &CurveKernels {
        if C::CURVE == CurveId::G1 {
            &self.g1
        } else {
            &self.g2
        }
    }

    pub(super) fn budget(&self) -> Result<usize, MsmError> {
        match self.config.memory_budget {
            Some(b) => Ok(b),
            None => {
                let free = self.memory.available().map_err(gpu_err)?;
                Ok(free.saturating_sub(self.config.reserve_bytes))
            }
        }
    }

    /// Before every MSM: the stage totals start from zero.
    pub(super) fn before_msm(&self) -> Result<(), MsmError> {
        self.stages.lock().map_err(|_| poisoned())?.clear();
        Ok(())
    }

    /// After every MSM: with `config.release_scratch`, waits for the MSM's
    /// stream and gives the scratch back (also after a failed MSM).
    pub(super) fn after_msm(&self, streams: &Streams, scratch: &mut Scratch) -> Result<(), MsmError> {
        if self.config.release_scratch {
            streams.compute.synchronize().map_err(gpu_err)?;
            scratch.clear();
        }
        Ok(())
    }

    /// Uploads a density mask with its per-word ranks, counted once on the
    /// host: the split kernels read the device copy, and the host copy
    /// bounds which scalars a run reads ([`crate::plan::split_items`]).
    pub fn upload_density(&self, mask: &Density) -> Result<DeviceDensity, MsmError> {
        let (streams, _) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let s = &streams.compute;
        let w = mask.as_words();
        // ranks[i] = set bits in words[..i]; one more entry than words.
        let host_ranks: Vec<u32> = std::iter::once(0)
            .chain(w.iter().scan(0u32, |r, x| {
                *r += x.count_ones();
                Some(*r)
            }))
            .collect();
        let mut words = self.memory.alloc::<u64>(w.len()).map_err(gpu_err)?;
        let mut ranks = self.memory.alloc::<u32>(host_ranks.len()).map_err(gpu_err)?;
        // SAFETY: `w` and `host_ranks` are pageable vectors (nothing
        // registers masks), which the driver stages before returning; the
        // stream is synchronized below all the same.
        unsafe {
            words.upload_async(0, w, s).map_err(gpu_err)?;
            ranks.upload_async(0, &host_ranks, s).map_err(gpu_err)?;
        }
        s.synchronize().map_err(gpu_err)?;
        Ok(DeviceDensity { words, ranks, host_ranks, len: mask.len(), set: mask.count_ones() })
    }

    /// Exclusive prefix sum of `data[..n]` in place (u32, totals < 2^32).
    pub(super) fn scan(
        &self,
        data: &mut DeviceBuffer<u32>,
        n: usize,
        tmp: &mut Slot<u32>,
        s: &Stream,
    ) -> Result<(), MsmError> {
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
                    .launch(s, Launch::new(len.div_ceil(SCAN_BLOCK) as u32, 1024), (ptrs[i], len as u64, ptrs[i + 1]))
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
                    .launch(s, Launch::new(grid(len, INT_THREADS), INT_THREADS), (ptrs[i], len as u64, ptrs[i + 1]))
                    .map_err(gpu_err)?;
            }
        }
        Ok(())
    }

    /// Uploads a compact witness (pageable host memory; the driver stages
    /// it): what [`crate::gpu::MsmScalars::Compact`] reads.
    pub fn upload_compact(&self, w: &CompactWitness) -> Result<DeviceCompact, MsmError> {
        self.upload_compact_to(w, &self.memory)
    }

    /// [`GpuMsm::upload_compact`] into `memory` (e.g. a worker's vectors
    /// arena, where a batch's members are planned).
    pub fn upload_compact_to(&self, w: &CompactWitness, memory: &DeviceMemory) -> Result<DeviceCompact, MsmError> {
        let (streams, _) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let s = &streams.compute;
        let (listed, e) = (w.full_index().len(), gpu_err);
        let mut bits = memory.alloc::<u64>(w.bits().len().max(1)).map_err(e)?;
        let mut index = memory.alloc::<u32>(listed.max(1)).map_err(e)?;
        let mut value = memory.alloc::<Scalar>(listed.max(1)).map_err(e)?;
        if !w.bits().is_empty() {
            bits.upload(0, w.bits(), s).map_err(e)?;
        }
        if listed > 0 {
            index.upload(0, w.full_index(), s).map_err(e)?;
            value.upload(0, w.full_value(), s).map_err(e)?;
        }
        Ok(DeviceCompact { bits, index, value, len: w.len(), listed })
    }

    /// Uploads scalars (pageable host memory; the driver stages them).
    pub fn upload_scalars(&self, scalars: &[Scalar]) -> Result<DeviceBuffer<Scalar>, MsmError> {
        let (streams, _) = &mut *self.state.lock().map_err(|_| poisoned())?;
        let mut d = self.memory.alloc::<Scalar>(scalars.len()).map_err(gpu_err)?;
        d.upload(0, scalars, &streams.compute).map_err(gpu_err)?;
        Ok(d)
    }
}

pub(super) fn poisoned() -> MsmError {
    MsmError::Backend { backend: "cuda", message: "GPU MSM state poisoned by an earlier panic".into() }
}

pub(super) fn too_many(n: usize) -> MsmError {
    MsmError::Backend { backend: "cuda", message: format!("{n} bases: the GPU MSM takes fewer than 2^31 per call") }
}

/// [`check_shape`] plus the GPU's own limit (2^31 bases per call: u32
/// entry indices).
pub(super) fn check_shape_device(
    query: &'static str,
    bases: usize,
    scalars: usize,
    mask: Option<&DeviceDensity>,
) -> Result<usize, MsmError> {
    let needed = check_shape(query, bases, scalars, mask)?;
    if needed >= MAX_BASES {
        return Err(too_many(needed));
    }
    Ok(needed)
}
