//! Device scratch of one MSM instance: slots that are kept and grown, so a
//! steady run allocates nothing.

use std::any::Any;

use blstrs::Scalar;
use c2_cuda::{DeviceBuffer, DeviceMemory, GpuError, Stream};

/// Where scratch comes from, and the stream whose queued work may still use
/// a slot's current buffer.
pub(super) type On<'a> = (&'a DeviceMemory, &'a Stream);

/// Frees a slot's outgrown buffer once `stream` has passed the work queued
/// on it: a pool may hand the range to another worker at once (the driver's
/// cuMemFree would have waited by itself). Growth happens in the first few
/// MSMs only, so the wait costs nothing in steady state.
pub(super) fn retire<B>(old: Option<B>, stream: &Stream) -> Result<(), GpuError> {
    if let Some(old) = old {
        stream.synchronize()?;
        drop(old);
    }
    Ok(())
}

/// Device buffers reused across MSMs; grown when too small.
pub(super) struct Slot<T> {
    pub(super) buf: Option<DeviceBuffer<T>>,
}

impl<T: c2_cuda::DeviceCopy> Slot<T> {
    pub(super) const fn new() -> Self {
        Self { buf: None }
    }

    pub(super) fn get(&mut self, (memory, stream): On<'_>, len: usize) -> Result<&mut DeviceBuffer<T>, GpuError> {
        let len = len.max(1);
        if self.buf.as_ref().is_none_or(|b| b.len() < len) {
            retire(self.buf.take(), stream)?; // free before allocating the larger one
            self.buf = Some(memory.alloc::<T>(len)?);
        }
        Ok(self.buf.as_mut().expect("allocated above"))
    }
}

/// Scratch for one MSM at a time (split results, sort, buckets, sums).
pub(super) struct Scratch {
    pub(super) counters: Slot<u32>,
    pub(super) others: Slot<Scalar>,
    pub(super) others_base: Slot<u32>,
    pub(super) ones_base: Slot<u32>,
    pub(super) counts: Slot<u32>,
    pub(super) cursor: Slot<u32>,
    /// The two-level sort's (coarse bin, job) counts and its temporary
    /// entries (base word, fine index).
    pub(super) sort_table: Slot<u32>,
    pub(super) sort_tmp_entry: Slot<u32>,
    pub(super) sort_tmp_fine: Slot<u8>,
    pub(super) scan_tmp: Slot<u32>,
    pub(super) entries: Slot<u32>,
    /// Bucket and partial sums (XYZZ), as raw u64 words.
    pub(super) buckets: Slot<u64>,
    pub(super) head: Slot<u64>,
    pub(super) tail: Slot<u64>,
    /// Batched-affine chain state: accumulators, prefix products, bucket words.
    pub(super) chain_acc: Slot<u64>,
    pub(super) chain_prefix: Slot<u64>,
    pub(super) chain_bucket: Slot<u32>,
    /// Affine pair passes: outputs (affine points as u64 words) and
    /// offsets, alternating between passes.
    pub(super) pair_points: [Slot<u64>; 2],
    pub(super) pair_off: [Slot<u32>; 2],
    pub(super) sums: [Slot<u64>; 2],
    pub(super) finals: Slot<u64>,
    /// Per MSM of a batch (one for a single MSM): the state kept across
    /// its runs (`pippenger::RunSum`).
    pub(super) runs: Vec<RunSlots>,
    /// Affine results, typed by curve (`DeviceBuffer<C::Affine>`).
    pub(super) affine: AnySlot,
    /// Two upload slots for streamed bases (`DeviceBuffer<C::Affine>`).
    pub(super) stream_bases: [AnySlot; 2],
    /// Per upload slot, one chunk of scalars for each batch member whose
    /// scalars are in host memory ([`crate::gpu::BatchScalars::Host`]).
    pub(super) stream_scalars: [Vec<Slot<Scalar>>; 2],
}

/// What one MSM keeps across its runs: each run's ones' point, and the
/// bucket totals of every window (XYZZ words).
pub(super) struct RunSlots {
    pub(super) ones_parts: Slot<u64>,
    pub(super) totals: Slot<u64>,
}

impl Scratch {
    /// Gives back every batch member's run slots and the host members'
    /// scalar slots (a batch whose caller lent their memory). The caller
    /// has synchronised the streams that used them.
    pub(super) fn release_members(&mut self) {
        self.runs.clear();
        self.stream_scalars = [Vec::new(), Vec::new()];
    }

    /// The run slots of MSM `member` of a batch (made on first use).
    pub(super) fn run_slots(&mut self, member: usize) -> &mut RunSlots {
        while self.runs.len() <= member {
            self.runs.push(RunSlots { ones_parts: Slot::new(), totals: Slot::new() });
        }
        &mut self.runs[member]
    }
}

/// A reusable device buffer whose element type depends on the curve of the
/// current MSM.
#[derive(Default)]
pub(super) struct AnySlot(Option<Box<dyn Any + Send>>);

impl AnySlot {
    pub(super) fn get<T: c2_cuda::DeviceCopy>(
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
    /// Gives every buffer back ([`crate::GpuMsmConfig::release_scratch`]).
    /// The caller has synchronised the streams that used them.
    pub(super) fn clear(&mut self) {
        *self = Self::new();
    }

    pub(super) fn new() -> Self {
        Self {
            counters: Slot::new(),
            others: Slot::new(),
            others_base: Slot::new(),
            ones_base: Slot::new(),
            counts: Slot::new(),
            cursor: Slot::new(),
            sort_table: Slot::new(),
            sort_tmp_entry: Slot::new(),
            sort_tmp_fine: Slot::new(),
            scan_tmp: Slot::new(),
            entries: Slot::new(),
            buckets: Slot::new(),
            head: Slot::new(),
            tail: Slot::new(),
            chain_acc: Slot::new(),
            chain_prefix: Slot::new(),
            chain_bucket: Slot::new(),
            pair_points: [Slot::new(), Slot::new()],
            pair_off: [Slot::new(), Slot::new()],
            sums: [Slot::new(), Slot::new()],
            finals: Slot::new(),
            runs: Vec::new(),
            affine: AnySlot::default(),
            stream_bases: [AnySlot::default(), AnySlot::default()],
            stream_scalars: [Vec::new(), Vec::new()],
        }
    }
}
