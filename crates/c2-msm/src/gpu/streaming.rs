//! MSMs over bases in host memory, streamed through two device slots.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use c2_cuda::{DeviceMemory, GpuError, PinnedShared, Stager};
use group::Group;

use crate::{check_shape, Density, Msm, MsmError};

use super::curve::{GpuCurve, G1, G2};
use super::inputs::{DeviceDensity, DeviceScalars, MsmScalars};
use super::instance::{check_shape_device, gpu_err, poisoned, stream_priority, GpuMsm, Streams, STAGING_BYTES};
use super::pippenger::BaseRange;
use super::scratch::{AnySlot, Slot};

/// One MSM of a batched pass over streamed bases
/// ([`GpuMsm::msm_batch_host_bases`]): where its scalars are.
#[derive(Clone, Copy)]
pub enum BatchScalars<'a> {
    /// On the device (field elements or a compact witness), with an
    /// optional density mask (see [`crate::Msm`] for the mask rule).
    Device(MsmScalars<'a>, Option<&'a DeviceDensity>),
    /// In host memory (Montgomery form, no mask: scalar i meets base i),
    /// uploaded chunk by chunk beside the bases: e.g. H's coefficients,
    /// which a small card cannot keep on the device for several partitions
    /// at once (4.3 GB each at 32 GiB).
    Host(&'a [Scalar]),
    /// As [`BatchScalars::Host`], in page-locked host memory (a
    /// `c2_cuda::PinnedBuffer`): each chunk is copied by the DMA engine
    /// straight from it, with no host copy into the staging slots (a
    /// 32 GiB partition's H is 4.3 GB per pass and member). Pageable memory
    /// here is still correct, only staged by the driver.
    Pinned(&'a [Scalar]),
}

impl BatchScalars<'_> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            Self::Device(s, _) => s.len(),
            Self::Host(s) | Self::Pinned(s) => s.len(),
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn mask(&self) -> Option<&DeviceDensity> {
        match self {
            Self::Device(_, m) => *m,
            Self::Host(_) | Self::Pinned(_) => None,
        }
    }
}

/// The device slots of one parity: a chunk of bases, and a chunk of
/// scalars per host member.
type ChunkSlots<'s> = (&'s mut AnySlot, &'s mut Vec<Slot<Scalar>>);

/// Where chunk k's uploads went: the bases, and each host member's scalars
/// (device addresses in the slots of parity k % 2).
struct Uploaded {
    bases: u64,
    scalars: Vec<u64>,
}

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
        let one = [BatchScalars::Device(scalars.into(), mask)];
        Ok(self.msm_streamed::<C>(bases, false, &one, None)?.remove(0))
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
        let one = [BatchScalars::Device(scalars.into(), mask)];
        Ok(self.msm_batch_pinned_bases::<C>(bases, first, &one, None)?.remove(0))
    }

    /// Several MSMs over the same bases in host memory, in one streamed
    /// pass: each chunk, once on the device, serves every member before the
    /// next chunk, so k members cost one pass of the bases' PCIe bytes
    /// instead of k (a 16 GiB card streams a 32 GiB partition's 47.4 GB of
    /// parameters per pass). Each member keeps its own ones' points and
    /// bucket totals across the chunks; a member's result equals its own
    /// [`GpuMsm::msm_host_bases`] (same sums, exact arithmetic). Results in
    /// `members` order; the stage times ([`GpuMsm::last_stage_times`]) are
    /// the whole batch's.
    ///
    /// `state`: where the members' own device memory comes from (their
    /// ones' points and bucket totals, ~0.2 GB per member in G2 at 32 GiB,
    /// and the host members' two chunks of scalars); `None`: this
    /// instance's memory, kept for the next MSM. A caller whose MSM arena
    /// was planned for one MSM hands the arena it planned the members in;
    /// that memory is given back before this returns.
    pub fn msm_batch_host_bases<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        members: &[BatchScalars<'_>],
        state: Option<&DeviceMemory>,
    ) -> Result<Vec<C::Projective>, MsmError> {
        self.msm_streamed::<C>(bases, false, members, state)
    }

    /// [`GpuMsm::msm_batch_host_bases`] over page-locked bases from index
    /// `first` on (copied by the DMA engine, as
    /// [`GpuMsm::msm_pinned_bases`]).
    pub fn msm_batch_pinned_bases<C: GpuCurve>(
        &self,
        bases: &PinnedShared<C::Affine>,
        first: usize,
        members: &[BatchScalars<'_>],
        state: Option<&DeviceMemory>,
    ) -> Result<Vec<C::Projective>, MsmError> {
        self.msm_streamed::<C>(bases.as_slice().get(first..).unwrap_or(&[]), true, members, state)
    }

    /// The streamed MSMs; `pinned`: `bases` are page-locked; `state`: the
    /// members' memory (see [`GpuMsm::msm_batch_host_bases`]).
    fn msm_streamed<C: GpuCurve>(
        &self,
        bases: &[C::Affine],
        pinned: bool,
        members: &[BatchScalars<'_>],
        state: Option<&DeviceMemory>,
    ) -> Result<Vec<C::Projective>, MsmError> {
        let lens = members
            .iter()
            .map(|m| check_shape_device(C::PREFIX, bases.len(), m.len(), m.mask()))
            .collect::<Result<Vec<usize>, _>>()?;
        let n = lens.iter().copied().max().unwrap_or(0);
        if n == 0 {
            return Ok(vec![C::Projective::identity(); members.len()]);
        }
        let bases = &bases[..n];
        // The members whose scalars come from the host, in order, and
        // whether they are page-locked.
        let hosted: Vec<(&[Scalar], bool)> = members
            .iter()
            .enumerate()
            .filter_map(|(i, m)| match m {
                BatchScalars::Host(s) => Some((&s[..lens[i]], false)),
                BatchScalars::Pinned(s) => Some((&s[..lens[i]], true)),
                BatchScalars::Device(..) => None,
            })
            .collect();
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
        let mut scalar_slots = std::mem::take(&mut scratch.stream_scalars);
        let used = chunks.len().min(2);
        let mut allocated = || -> Result<(), GpuError> {
            for slot in slots.iter_mut().take(used) {
                slot.get::<C::Affine>((&self.memory, &streams.compute), chunk)?;
            }
            for set in scalar_slots.iter_mut().take(used) {
                set.resize_with(set.len().max(hosted.len()), Slot::new);
                for slot in set.iter_mut().take(hosted.len()) {
                    slot.get((state.unwrap_or(&self.memory), &streams.compute), chunk)?;
                }
            }
            Ok(())
        };
        if let Err(e) = allocated() {
            scratch.stream_bases = slots;
            scratch.stream_scalars = scalar_slots;
            return Err(gpu_err(e));
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
        let memory = state.unwrap_or(&self.memory);
        let hosted_ref = &hosted;
        // Chunk k (its bases, and the host members' scalars of its range)
        // into the slots of parity k % 2 through the pinned staging path,
        // after the kernels that read those slots last (event `free`), then
        // `ready`.
        let upload =
            |k: usize, (slot, scalar_set): ChunkSlots<'_>, stager: &mut Stager| -> Result<Uploaded, MsmError> {
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
                let mut scalars = Vec::with_capacity(hosted_ref.len());
                for (&(s, page_locked), slot) in hosted_ref.iter().zip(scalar_set.iter_mut()) {
                    let d = slot.get((memory, stager.stream()), chunk).map_err(gpu_err)?;
                    let part = s.get(lo..hi.min(s.len())).unwrap_or(&[]);
                    match (part.is_empty(), page_locked) {
                        (true, _) => {}
                        // SAFETY: as the pinned bases above: `members` stays
                        // borrowed (unchanged) until the copy stream is
                        // synchronised below, on every path.
                        (false, true) => unsafe { d.upload_async(0, part, stager.stream()) }.map_err(gpu_err)?,
                        (false, false) => stager.upload(d, 0, part).map_err(gpu_err)?,
                    }
                    scalars.push(d.device_ptr());
                }
                streams_ref.ready[k % 2].record(stager.stream()).map_err(gpu_err)?;
                Ok(Uploaded { bases: buf.device_ptr(), scalars })
            };
        let result = std::thread::scope(|sc| -> Result<Vec<C::Projective>, MsmError> {
            let [s0, s1] = &mut slots;
            let [v0, v1] = &mut scalar_slots;
            let mut idle: [Option<ChunkSlots<'_>>; 2] = [Some((s0, v0)), Some((s1, v1))];
            let mut sums = (0..members.len())
                .map(|i| self.begin::<C>(streams_ref, scratch, chunks.len(), i, state, members.len() > 1))
                .collect::<Result<Vec<_>, _>>()?;
            let first = idle[0].take().expect("slot 0");
            let (b0, v0) = first;
            let mut at = upload(0, (&mut *b0, &mut *v0), &mut stager)?;
            idle[0] = Some((b0, v0));
            let mut stager_idle = Some(&mut stager);
            for k in 0..chunks.len() {
                // Chunk k + 1 uploads on a helper thread into the other
                // slots (the host copies into the pinned slots block that
                // thread).
                let pending = match idle[(k + 1) % 2].take() {
                    Some(set) if k + 1 < chunks.len() => {
                        let st = stager_idle.take().expect("the stager is back after each upload");
                        Some(sc.spawn(move || {
                            let (b, v) = set;
                            let r = upload(k + 1, (&mut *b, &mut *v), st);
                            (r, (b, v), st)
                        }))
                    }
                    other => {
                        idle[(k + 1) % 2] = other;
                        None
                    }
                };
                streams_ref.compute.wait(&streams_ref.ready[k % 2]).map_err(gpu_err)?;
                let (lo, hi) = chunks[k];
                let mut part = Ok(());
                let mut hosted_seen = 0;
                for (i, (m, sum)) in members.iter().zip(sums.iter_mut()).enumerate() {
                    let (range, scalars, mask) = match *m {
                        BatchScalars::Device(s, mask) => (BaseRange { ptr: at.bases, lo, hi, copies: None }, s, mask),
                        // This chunk's scalars, numbered from its first base.
                        BatchScalars::Host(_) | BatchScalars::Pinned(_) => {
                            let len = lens[i].min(hi).saturating_sub(lo);
                            let ptr = at.scalars[hosted_seen];
                            hosted_seen += 1;
                            let s = DeviceScalars::montgomery_at(ptr, len);
                            (BaseRange { ptr: at.bases, lo: 0, hi: hi - lo, copies: None }, s.into(), None)
                        }
                    };
                    part = self.run_part::<C>(streams_ref, scratch, &range, scalars, mask, sum);
                    if part.is_err() {
                        break;
                    }
                }
                // The slots are free once the kernels queued on them are done.
                streams_ref.free[k % 2].record(&streams_ref.compute).map_err(gpu_err)?;
                if let Some(h) = pending {
                    let (next, set, st) = h.join().map_err(|_| MsmError::Backend {
                        backend: "cuda",
                        message: "base upload thread panicked".into(),
                    })?;
                    idle[(k + 1) % 2] = Some(set);
                    stager_idle = Some(st);
                    at = next?;
                }
                part?;
            }
            sums.into_iter().map(|sum| self.finish::<C>(streams_ref, scratch, sum)).collect()
        });
        // On an error above, the copy stream may still be writing a slot:
        // finish it before the slots can be reused or returned.
        let settled = stager.stream().synchronize().map_err(gpu_err);
        streams.stager = Some(stager);
        scratch.stream_bases = slots;
        scratch.stream_scalars = scalar_slots;
        if state.is_some() {
            // The caller's memory goes back, on every path, once the
            // kernels that use it are done (a pool hands a freed range out
            // again at once; if the wait fails the device is lost, and the
            // buffers are dropped all the same rather than kept from the
            // caller's arena).
            let waited = streams.compute.synchronize().map_err(gpu_err);
            scratch.release_members();
            waited?;
        }
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
