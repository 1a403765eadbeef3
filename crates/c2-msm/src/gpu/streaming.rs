//! MSMs over bases in host memory, streamed through two device slots.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{PinnedShared, Stager};
use group::Group;

use crate::{check_shape, Density, Msm, MsmError};

use super::curve::{GpuCurve, G1, G2};
use super::inputs::{DeviceDensity, DeviceScalars};
use super::instance::{check_shape_device, gpu_err, poisoned, stream_priority, GpuMsm, Streams, STAGING_BYTES};
use super::pippenger::BaseRange;
use super::scratch::AnySlot;

impl GpuMsm {
    /// MSM with bases in host memory, streamed in chunks of
    /// `config.stream_chunk` bases through two device slots. Uploads go
    /// through the pinned staging path (`c2_cuda::Stager`: pageable copies
    /// ran at 6.3 GB/s against 55 pinned); a helper thread stages chunk
    /// k + 1 (its host copies into the pinned slots block that thread) while
    /// this thread queues chunk k's kernels. Events order the slots: an
    /// upload waits until the kernels that read its slot are done.
    pub fn msm_host_bases<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_streamed::<C>(bases, false, scalars, mask)
    }

    /// [`GpuMsm::msm_host_bases`] over page-locked bases from index `first`
    /// on: each chunk is copied by the DMA engine straight from the pinned
    /// vector into its device slot (no host copy, no staging slots).
    pub fn msm_pinned_bases<C: GpuCurve>(
        &self,
        bases: &PinnedShared<C::Affine>,
        first: usize,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_streamed::<C>(bases.as_slice().get(first..).unwrap_or(&[]), true, scalars, mask)
    }

    /// The streamed MSM; `pinned`: `bases` are page-locked.
    fn msm_streamed<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        pinned: bool,
        scalars: DeviceScalars<'_>,
        mask: Option<&DeviceDensity>,
    ) -> Result<C::Projective, MsmError> {
        let n = check_shape_device(C::PREFIX, bases.len(), scalars.len(), mask)?;
        if n == 0 {
            return Ok(C::Projective::identity());
        }
        let bases = &bases[..n];
        // Chunks of `stream_chunk` bases, or of as many as fit
        // `stream_slot_bytes` (G1 chunks twice as long as G2's): two device
        // slots of that size however long the query (what a device-memory
        // plan counts on), the next chunk's upload overlapping this chunk's
        // kernels.
        let point = std::mem::size_of::<C::Affine>();
        let chunk = self.config.stream_slot_bytes.map_or(self.config.stream_chunk, |b| b / point).clamp(1, n);
        let (streams, scratch) = &mut *self.state.lock().map_err(|_| poisoned())?;
        self.before_msm()?;
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
        let mut stager = match streams.stager.take() {
            Some(st) => st,
            None => Stager::with_priority(&self.gpu, STAGING_BYTES, stream_priority(&self.config)).map_err(gpu_err)?,
        };
        let streams_ref: &Streams = streams;
        let memory = &self.memory;
        // Chunk k into its device slot through the pinned staging path, after
        // the kernels that read that slot last (event `free`), then `ready`.
        let upload = |k: usize, slot: &mut AnySlot, stager: &mut Stager| -> Result<u64, MsmError> {
            let (lo, hi) = chunks[k];
            // Allocated above at this size: no growth (and no wait) here.
            let buf = slot.get::<C::Affine>((memory, stager.stream()), chunk).map_err(gpu_err)?;
            stager.stream().wait(&streams_ref.free[k % 2]).map_err(gpu_err)?;
            if pinned {
                // SAFETY: the DMA engine reads the pinned vector directly
                // after this returns; `bases` stays borrowed (and so
                // registered and unchanged) until the copy stream is
                // synchronised below, on every path out of this function.
                unsafe { buf.upload_async(0, &bases[lo..hi], stager.stream()) }.map_err(gpu_err)?;
            } else {
                stager.upload(buf, 0, &bases[lo..hi]).map_err(gpu_err)?;
            }
            streams_ref.ready[k % 2].record(stager.stream()).map_err(gpu_err)?;
            Ok(buf.device_ptr())
        };
        let result = std::thread::scope(|sc| -> Result<C::Projective, MsmError> {
            let [s0, s1] = &mut slots;
            let mut idle: [Option<&mut AnySlot>; 2] = [Some(s0), Some(s1)];
            let mut sum = self.begin::<C>(streams_ref, scratch, chunks.len())?;
            let mut ptr = upload(0, idle[0].as_deref_mut().expect("slot 0"), &mut stager)?;
            let mut stager_idle = Some(&mut stager);
            for k in 0..chunks.len() {
                // Chunk k + 1 uploads on a helper thread into the other slot
                // (the host copies into the pinned slots block that thread).
                let pending = match idle[(k + 1) % 2].take() {
                    Some(slot) if k + 1 < chunks.len() => {
                        let st = stager_idle.take().expect("the stager is back after each upload");
                        Some(sc.spawn(move || (upload(k + 1, slot, st), slot, st)))
                    }
                    other => {
                        idle[(k + 1) % 2] = other;
                        None
                    }
                };
                streams_ref.compute.wait(&streams_ref.ready[k % 2]).map_err(gpu_err)?;
                let range = BaseRange { ptr, lo: chunks[k].0, hi: chunks[k].1, copies: None };
                let part = self.run_part::<C>(streams_ref, scratch, &range, scalars, mask, &mut sum);
                // The slot is free once the kernels queued on it are done.
                streams_ref.free[k % 2].record(&streams_ref.compute).map_err(gpu_err)?;
                if let Some(h) = pending {
                    let (next, slot, st) = h.join().map_err(|_| MsmError::Backend {
                        backend: "cuda",
                        message: "base upload thread panicked".into(),
                    })?;
                    idle[(k + 1) % 2] = Some(slot);
                    stager_idle = Some(st);
                    ptr = next?;
                }
                part?;
            }
            self.finish::<C>(streams_ref, scratch, sum)
        });
        // On an error above, the copy stream may still be writing a slot:
        // finish it before the slots can be reused or returned.
        let settled = stager.stream().synchronize().map_err(gpu_err);
        streams.stager = Some(stager);
        scratch.stream_bases = slots;
        settled?;
        self.after_msm(streams, scratch)?;
        result
    }
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
