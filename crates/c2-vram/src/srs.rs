//! Parameter (SRS) residency: each Groth16 parameter set uploaded once per
//! device and kept while it fits, so a partition moves only its own data
//! over PCIe (ARCHITECTURE.md, "Lessons from prior art": two workers re-uploading parameters regressed
//! 32.1 -> 41.0 s/proof in prior art).

use std::sync::{Arc, Mutex};

use blstrs::{G1Affine, G2Affine};
use c2_cuda::{DeviceBuffer, DeviceMemory, Gpu, GpuError, Stager};

use crate::{plan_eviction, plan_residency, ResidentEntry, VramError};

/// The bases of a proof's five MSMs, in host memory (a `Parameters`'
/// vectors: h, l, a, b_g1, b_g2).
#[derive(Clone, Copy)]
pub struct SrsSource<'a> {
    /// H query (domain size - 1 points).
    pub h: &'a [G1Affine],
    /// L query (one per aux variable).
    pub l: &'a [G1Affine],
    /// A query (inputs, then A-dense aux).
    pub a: &'a [G1Affine],
    /// B query in G1 (B-dense inputs, then aux).
    pub b_g1: &'a [G1Affine],
    /// B query in G2.
    pub b_g2: &'a [G2Affine],
}

impl SrsSource<'_> {
    /// Device bytes of each vector: h, l, a, b_g1, b_g2.
    pub fn vector_bytes(&self) -> [usize; 5] {
        let g1 = |v: &[G1Affine]| std::mem::size_of_val(v);
        [g1(self.h), g1(self.l), g1(self.a), g1(self.b_g1), std::mem::size_of_val(self.b_g2)]
    }

    /// Device bytes the whole set takes.
    pub fn bytes(&self) -> usize {
        self.vector_bytes().iter().sum()
    }
}

/// One parameter set in device memory: every vector, or (on a device too
/// small for the whole set) those [`crate::plan_residency`] kept; the MSMs
/// stream the others (`None`) from host memory.
pub struct ResidentSrs {
    /// H query.
    pub h: Option<DeviceBuffer<G1Affine>>,
    /// L query.
    pub l: Option<DeviceBuffer<G1Affine>>,
    /// A query.
    pub a: Option<DeviceBuffer<G1Affine>>,
    /// B query in G1.
    pub b_g1: Option<DeviceBuffer<G1Affine>>,
    /// B query in G2.
    pub b_g2: Option<DeviceBuffer<G2Affine>>,
}

impl ResidentSrs {
    /// Every vector is on the device.
    pub fn is_complete(&self) -> bool {
        self.h.is_some() && self.l.is_some() && self.a.is_some() && self.b_g1.is_some() && self.b_g2.is_some()
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        fn bytes<T: c2_cuda::DeviceCopy>(b: &Option<DeviceBuffer<T>>) -> usize {
            b.as_ref().map_or(0, |b| b.len() * std::mem::size_of::<T>())
        }
        bytes(&self.h) + bytes(&self.l) + bytes(&self.a) + bytes(&self.b_g1) + bytes(&self.b_g2)
    }
}

struct Entry {
    key: String,
    srs: Arc<ResidentSrs>,
    bytes: usize,
    last_use: u64,
}

/// Parameter sets resident on one device, by key (e.g. the parameter file's
/// cache identifier plus a fingerprint of its verifying key). Shared by the
/// device's workers; the least recently used set not in use is dropped when
/// a new one needs its room.
pub struct SrsCache {
    memory: DeviceMemory,
    state: Mutex<(Vec<Entry>, u64)>,
}

/// Bytes per pinned staging slot of a parameter upload (2^20 G1 points).
const STAGING_BYTES: usize = 96 << 20;

impl SrsCache {
    /// An empty cache whose sets live in `memory` (the device's pool, so
    /// parameters and the workers' buffers share one budget).
    pub fn new(memory: DeviceMemory) -> Arc<Self> {
        Arc::new(Self { memory, state: Mutex::new((Vec::new(), 0)) })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        self.memory.gpu()
    }

    /// Bytes resident now.
    pub fn resident_bytes(&self) -> usize {
        self.state.lock().map(|s| s.0.iter().map(|e| e.bytes).sum()).unwrap_or(0)
    }

    /// Drops the set `key` from the cache; the device bytes it held (0: not
    /// resident). A partition still using it keeps its copy until it ends
    /// (the buffers go back to the pool with the last holder).
    pub fn evict(&self, key: &str) -> usize {
        let Ok(mut guard) = self.state.lock() else { return 0 };
        let entries = &mut guard.0;
        match entries.iter().position(|e| e.key == key) {
            Some(i) => entries.swap_remove(i).bytes,
            None => 0,
        }
    }

    /// The set `key` on the device: the resident copy, or `source()` uploaded
    /// now. The whole set when it fits with `reserve` bytes left free
    /// (dropping least recently used sets not in use); else the vectors
    /// that fit once every set not in use is dropped ([`crate::plan_residency`]:
    /// the most bytes); `None` when not one vector fits (the caller streams
    /// every base from host memory). The lock is held during an upload, so
    /// two workers never upload the same set twice. The upload goes through
    /// pinned staging slots (55 GB/s on the H200 against 6.3 GB/s from
    /// pageable memory: ~1 s instead of ~7 s for the 47 GB of a 32 GiB
    /// sector), once per device.
    pub fn get_or_upload<'a>(
        &self,
        key: &str,
        reserve: usize,
        source: impl FnOnce() -> SrsSource<'a>,
    ) -> Result<Option<Arc<ResidentSrs>>, VramError> {
        let mut guard = self.state.lock().map_err(|_| VramError::Invalid("SRS cache poisoned by a panic".into()))?;
        let (entries, clock) = &mut *guard;
        *clock += 1;
        if let Some(e) = entries.iter_mut().find(|e| e.key == key) {
            e.last_use = *clock;
            return Ok(Some(e.srs.clone()));
        }
        let src = source();
        let sizes = src.vector_bytes();
        let view: Vec<ResidentEntry> = entries
            .iter()
            .map(|e| ResidentEntry { bytes: e.bytes, last_use: e.last_use, in_use: Arc::strong_count(&e.srs) > 1 })
            .collect();
        let free = self.memory.available()?;
        let keep = match plan_eviction(&view, free, reserve, src.bytes()) {
            Some(_) => vec![true; 5],
            None => {
                // What every set not in use would leave: the room for a part.
                let evictable: usize = view.iter().filter(|e| !e.in_use).map(|e| e.bytes).sum();
                plan_residency(&sizes, (free + evictable).saturating_sub(reserve))
            }
        };
        let needed: usize = sizes.iter().zip(&keep).filter(|(_, &k)| k).map(|(b, _)| b).sum();
        if needed == 0 {
            return Ok(None);
        }
        let Some(mut evict) = plan_eviction(&view, free, reserve, needed) else {
            return Ok(None);
        };
        evict.sort_unstable_by(|a, b| b.cmp(a));
        for i in evict {
            entries.swap_remove(i); // frees the device buffers
        }
        let Some(srs) = self.allocate(&src, &keep)? else {
            return Ok(None);
        };
        let srs = Arc::new(self.upload(srs, &src)?);
        let bytes = srs.bytes();
        entries.push(Entry { key: key.to_string(), srs: srs.clone(), bytes, last_use: *clock });
        Ok(Some(srs))
    }

    /// Device buffers for the vectors of `src` that `keep` marks, or `None`
    /// when the budget cannot hold them (fragmentation can defeat the
    /// eviction plan's arithmetic).
    fn allocate(&self, src: &SrsSource<'_>, keep: &[bool]) -> Result<Option<ResidentSrs>, VramError> {
        let g1 = |i: usize, v: &[G1Affine]| keep[i].then(|| self.memory.alloc::<G1Affine>(v.len())).transpose();
        let all = || -> Result<ResidentSrs, GpuError> {
            Ok(ResidentSrs {
                h: g1(0, src.h)?,
                l: g1(1, src.l)?,
                a: g1(2, src.a)?,
                b_g1: g1(3, src.b_g1)?,
                b_g2: keep[4].then(|| self.memory.alloc::<G2Affine>(src.b_g2.len())).transpose()?,
            })
        };
        match all() {
            Ok(srs) => Ok(Some(srs)),
            Err(GpuError::OutOfBudget(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Copies `src` into the buffers of `srs` and waits for the copies (on
    /// error too, so no DMA still writes a range that goes back to the pool).
    fn upload(&self, mut srs: ResidentSrs, src: &SrsSource<'_>) -> Result<ResidentSrs, VramError> {
        let gpu = self.gpu();
        let mut stager = Stager::new(gpu, STAGING_BYTES)?;
        let queued = (|| -> Result<(), GpuError> {
            for (d, h) in [(&mut srs.h, src.h), (&mut srs.l, src.l), (&mut srs.a, src.a), (&mut srs.b_g1, src.b_g1)] {
                if let Some(d) = d {
                    stager.upload(d, 0, h)?;
                }
            }
            if let Some(d) = &mut srs.b_g2 {
                stager.upload(d, 0, src.b_g2)?;
            }
            Ok(())
        })();
        let done = stager.stream().synchronize();
        queued?;
        done?;
        Ok(srs)
    }
}
