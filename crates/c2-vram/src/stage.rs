//! Page-locked staging for host-to-device copies: two pinned slots on a copy
//! stream; the host copies chunk i + 1 into one slot (on the stager's own
//! copy threads) while the DMA engine moves chunk i from the other. Pinning
//! the source vectors instead (`cuMemHostRegister`) cost seconds per fresh
//! 4 GB vector on the H200, more than the copy; pageable copies ran at
//! 6.3 GB/s against 55.

use std::sync::Arc;

use c2_cuda::{DeviceBuffer, Event, Gpu, GpuError, PinnedBuffer, Stream};
use rayon::prelude::*;

/// Bytes per parallel host copy piece.
const PIECE_BYTES: usize = 1 << 20;

/// Copy threads per stager: one core copies ~5-10 GB/s, PCIe moves 55.
const COPY_THREADS: usize = 8;

/// Two pinned staging slots, the copy stream they feed, and the threads
/// that fill them.
pub struct Stager<T> {
    copy: Stream,
    slots: [(PinnedBuffer<T>, Event); 2],
    /// The stager's own threads, not rayon's global pool: synthesis keeps
    /// the global pool busy, and work injected there from a GPU worker
    /// waits until a pool thread runs out of its own tasks. On the H200
    /// hosts that stretched the 47 GB parameter upload to 6-17 s while
    /// partitions were being synthesized (55 GB/s would be ~1 s).
    threads: rayon::ThreadPool,
}

impl<T: c2_cuda::DeviceCopy> Stager<T> {
    /// Slots of `slot_len` elements each (e.g. 2^22 scalars = 128 MiB).
    pub fn new(gpu: &Arc<Gpu>, slot_len: usize) -> Result<Self, GpuError> {
        let slot = || -> Result<_, GpuError> { Ok((PinnedBuffer::new(gpu, slot_len.max(1))?, gpu.event()?)) };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(COPY_THREADS.min(cores))
            .thread_name(|i| format!("c2-stage-{i}"))
            .build()
            .map_err(|e| GpuError::Invalid(format!("staging copy threads: {e}")))?;
        Ok(Self { copy: gpu.stream()?, slots: [slot()?, slot()?], threads })
    }

    /// The copy stream: record an event on it after [`Stager::upload`] and
    /// make the consuming stream wait for that event.
    pub fn stream(&self) -> &Stream {
        &self.copy
    }

    /// Queues `src` into `dst[offset..]`. Returns when the last chunk is
    /// queued (its DMA may still run: order later work by an event on
    /// [`Stager::stream`]); `src` may be dropped then.
    pub fn upload(&mut self, dst: &mut DeviceBuffer<T>, offset: usize, src: &[T]) -> Result<(), GpuError> {
        let chunk_len = self.slots[0].0.as_slice().len();
        let piece = (PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
        for (i, chunk) in src.chunks(chunk_len).enumerate() {
            let (buf, done) = &mut self.slots[i % 2];
            done.synchronize()?;
            let stage = &mut buf.as_mut_slice()[..chunk.len()];
            self.threads.install(|| {
                stage.par_chunks_mut(piece).zip(chunk.par_chunks(piece)).for_each(|(d, s)| d.copy_from_slice(s))
            });
            dst.upload_async(offset + i * chunk_len, stage, &self.copy)?;
            done.record(&self.copy)?;
        }
        Ok(())
    }
}
