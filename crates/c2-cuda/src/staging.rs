//! The one pinned staging path for host <-> device copies of pageable
//! vectors (feature `cuda`): two page-locked slots; the host copies chunk
//! i + 1 into one slot (on the stager's own copy threads) while the DMA
//! engine moves chunk i from the other. Every upload of host vectors goes
//! through it: a partition's a/b/c/witness (the GPU worker), the parameter
//! sets (c2-vram's residency), streamed MSM bases (c2-msm) and the host-level
//! NTT API (c2-ntt, both directions).
//!
//! Why staging rather than pinning the source: `cuMemHostRegister` on a
//! fresh 4 GB vector cost ~1 s on the H200, more than the copy; pageable
//! copies ran at 6.3 GB/s against 55 GB/s pinned.

use std::mem::MaybeUninit;
use std::sync::Arc;

use rayon::prelude::*;

use crate::device::Gpu;
use crate::memory::DeviceBuffer;
use crate::pinned::PinnedBuffer;
use crate::plain::bytes_of;
use crate::stream::{Event, Stream, StreamPriority};
use crate::{DeviceCopy, GpuError};

/// Bytes per parallel host copy piece.
const PIECE_BYTES: usize = 1 << 20;

/// Copy threads per stager: one core copies ~5-10 GB/s, PCIe moves 55.
const COPY_THREADS: usize = 8;

/// Two pinned staging slots, the copy stream uploads run on, and the
/// threads that fill and drain the slots.
pub struct Stager {
    copy: Stream,
    /// Page-locked slots (as 8-byte words, so any `DeviceCopy` element of
    /// alignment <= 8 fits at offset 0) and, per slot, the event after its
    /// last copy.
    /// Two of them (a `Vec` so that `Drop` can take them to leak them).
    slots: Vec<(PinnedBuffer<u64>, Event)>,
    slot_bytes: usize,
    /// The stager's own threads, not rayon's global pool: synthesis keeps
    /// the global pool busy, and work injected there from a GPU worker
    /// waits until a pool thread runs out of its own tasks. On the H200
    /// hosts that stretched the 47 GB parameter upload to 6-17 s while
    /// partitions were being synthesized (55 GB/s would be ~1 s).
    threads: rayon::ThreadPool,
}

/// `v` as possibly uninitialised bytes (writing whole byte patterns of `T`
/// into them leaves valid `T`s: DeviceCopy).
fn uninit_bytes_of<T: DeviceCopy>(v: &mut [MaybeUninit<T>]) -> &mut [MaybeUninit<u8>] {
    // SAFETY: same allocation, same length in bytes; MaybeUninit<u8> has no
    // validity requirement.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), std::mem::size_of_val(v)) }
}

impl Stager {
    /// Slots of `slot_bytes` each (e.g. 128 MiB).
    pub fn new(gpu: &Arc<Gpu>, slot_bytes: usize) -> Result<Self, GpuError> {
        Self::with_priority(gpu, slot_bytes, StreamPriority::Normal)
    }

    /// [`Stager::new`] with its copy stream at `priority` (kernels queued on
    /// it, such as a witness expansion, are scheduled at that priority).
    pub fn with_priority(gpu: &Arc<Gpu>, slot_bytes: usize, priority: StreamPriority) -> Result<Self, GpuError> {
        let words = slot_bytes.div_ceil(8).max(1);
        let slot = || -> Result<_, GpuError> {
            let done = gpu.event()?;
            Ok((PinnedBuffer::new(gpu, words)?, done))
        };
        let copy = gpu.stream_at(priority)?;
        let slots = vec![slot()?, slot()?];
        // A slot starts out free: its event has been recorded and is done.
        for (_, done) in &slots {
            done.record(&copy)?;
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(COPY_THREADS.min(cores))
            .thread_name(|i| format!("c2-stage-{i}"))
            .build()
            .map_err(|e| GpuError::Invalid(format!("staging copy threads: {e}")))?;
        Ok(Self { copy, slots, slot_bytes: words * 8, threads })
    }

    /// The copy stream uploads run on: make it wait for an event before an
    /// upload, and record one on it after.
    pub fn stream(&self) -> &Stream {
        &self.copy
    }

    /// Elements of `T` per slot.
    fn chunk_len<T>(&self) -> usize {
        (self.slot_bytes / std::mem::size_of::<T>().max(1)).max(1)
    }

    /// Queues `src` into `dst[offset..]` on [`Stager::stream`]. Returns when
    /// the last chunk is queued (its DMA may still run: order later work by
    /// an event on the copy stream); `src` may be dropped then.
    pub fn upload<T: DeviceCopy>(
        &mut self,
        dst: &mut DeviceBuffer<T>,
        offset: usize,
        src: &[T],
    ) -> Result<(), GpuError> {
        let chunk_len = self.chunk_len::<T>();
        for (i, chunk) in src.chunks(chunk_len).enumerate() {
            let (buf, done) = &mut self.slots[i % 2];
            done.synchronize()?;
            let bytes = bytes_of(chunk);
            let stage = &mut words_as_bytes_mut(buf.as_mut_slice())[..bytes.len()];
            self.threads.install(|| {
                stage
                    .par_chunks_mut(PIECE_BYTES)
                    .zip(bytes.par_chunks(PIECE_BYTES))
                    .for_each(|(d, s)| d.copy_from_slice(s))
            });
            // SAFETY: the slot is this stager's own page-locked memory; it is
            // written again (or freed) only after `done`, recorded next, has
            // completed (`done.synchronize()` above, `Drop`).
            unsafe { dst.upload_bytes_async(offset + i * chunk_len, stage, &self.copy) }?;
            done.record(&self.copy)?;
        }
        Ok(())
    }

    /// Copies `src[offset..offset + dst.len()]` into `dst` through the slots,
    /// the device-to-host copies queued on `after` (so they follow the work
    /// queued there). `dst` may be uninitialised; every element is written
    /// when this returns `Ok`.
    pub fn download<T: DeviceCopy>(
        &mut self,
        src: &DeviceBuffer<T>,
        offset: usize,
        dst: &mut [MaybeUninit<T>],
        after: &Stream,
    ) -> Result<(), GpuError> {
        let chunk_len = self.chunk_len::<T>();
        let size = std::mem::size_of::<T>();
        let chunks: Vec<(usize, usize)> =
            (0..dst.len()).step_by(chunk_len).map(|o| (o, chunk_len.min(dst.len() - o))).collect();
        let dst = uninit_bytes_of(dst);
        // Chunk i is in flight while chunk i - 1 is copied out on the host.
        for (i, &(off, len)) in chunks.iter().enumerate() {
            let (buf, done) = &mut self.slots[i % 2];
            done.synchronize()?;
            let slot = &mut words_as_bytes_mut(buf.as_mut_slice())[..len * size];
            // SAFETY: the slot is this stager's own page-locked memory; it is
            // read (`drain`), written again or freed only after `done`,
            // recorded next, has completed.
            unsafe { src.download_bytes_async(offset + off, slot, after) }?;
            done.record(after)?;
            if i > 0 {
                let (o, l) = chunks[i - 1];
                self.drain(i - 1, &mut dst[o * size..(o + l) * size])?;
            }
        }
        if let Some(last) = chunks.len().checked_sub(1) {
            let (o, l) = chunks[last];
            self.drain(last, &mut dst[o * size..(o + l) * size])?;
        }
        Ok(())
    }

    /// Waits for slot `i % 2`'s copy and moves its first `dst.len()` bytes out.
    fn drain(&self, i: usize, dst: &mut [MaybeUninit<u8>]) -> Result<(), GpuError> {
        let (buf, done) = &self.slots[i % 2];
        done.synchronize()?;
        let src = &words_as_bytes(buf.as_slice())[..dst.len()];
        self.threads.install(|| {
            dst.par_chunks_mut(PIECE_BYTES).zip(src.par_chunks(PIECE_BYTES)).for_each(|(d, s)| {
                for (d, s) in d.iter_mut().zip(s) {
                    d.write(*s);
                }
            })
        });
        Ok(())
    }
}

impl Drop for Stager {
    /// The slots are freed only after the copies queued from or into them
    /// have finished (a copy still running after an error, say).
    fn drop(&mut self) {
        for (_, done) in &self.slots {
            if done.synchronize().is_err() {
                // The device failed: never free memory it may still write.
                std::mem::forget(std::mem::take(&mut self.slots));
                return;
            }
        }
    }
}

/// A slot's words as bytes.
fn words_as_bytes(w: &[u64]) -> &[u8] {
    bytemuck::cast_slice(w)
}

/// A slot's words as mutable bytes.
fn words_as_bytes_mut(w: &mut [u64]) -> &mut [u8] {
    bytemuck::cast_slice_mut(w)
}
