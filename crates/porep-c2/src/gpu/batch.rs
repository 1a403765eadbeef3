//! Several partitions' MSMs in one streamed pass of the parameters (issue
//! 42). A worker whose device cannot keep a parameter set resident streams
//! every vector it lacks once per partition: 47.4 GB for a 32 GiB partition
//! at a 16 GiB cap, where the link (20-26 GB/s on the PCIe 4 cards storage
//! providers own) and not the kernels sets the pace. Here each partition of
//! a batch runs its a, b, c and compute_h as alone, leaves H on the host
//! (page-locked: the device cannot keep several, 4.3 GB each) and its
//! compact witness for later; then every query's pass serves all of them
//! with each chunk while it is on the device
//! ([`GpuMsm::msm_batch_pinned_bases`]), so k partitions share one pass of
//! the bases. Same sums as alone (exact group arithmetic), hence the same
//! bytes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_core::CompactWitness;
use c2_cuda::{DeviceBuffer, Gpu, GpuError, PinnedBuffer};
use c2_msm::gpu::{BatchScalars, DeviceScalars, GpuCurve, MsmScalars, G1, G2};

use super::{dev, g1_bases, g2_bases, Bases, GpuProver, SettleOnError, Staged};
use crate::backend::{Partition, PartitionJob, PartitionProver};
use crate::config::ShapeMatrices;
use crate::error::Error;
use crate::groth16::{assemble, Sums};
use crate::lobby::Proved;
use crate::report::{GpuTimes, ProveTimings};

/// A partition of a batch between its compute_h and the batch's MSM
/// passes: what the passes need of it, on the host.
pub(super) struct Member {
    /// The partition's index in its proof (for logs).
    pub partition: usize,
    /// H's coefficients (Montgomery form) in the first `h_len` elements.
    pub h: PinnedBuffer<Scalar>,
    /// m - 1: the H MSM's length.
    pub h_len: usize,
    /// Public inputs, ONE first.
    pub inputs: Vec<Scalar>,
    /// The aux assignment, compact (77 MB at 32 GiB).
    pub aux: CompactWitness,
    /// The shape (densities shared by every member).
    pub shape: Arc<ShapeMatrices>,
    /// Blinding.
    pub r: Scalar,
    pub s: Scalar,
    /// Times so far (compute_h, uploads).
    pub t: ProveTimings,
    pub g: GpuTimes,
}

/// Page-locked host vectors for the members' H, allocated once per worker
/// (`cuMemAllocHost` and zeroing: ~1 s per 4.3 GB) and reused by every
/// later batch.
#[derive(Default)]
pub(super) struct HostVectors(Mutex<Vec<PinnedBuffer<Scalar>>>);

impl HostVectors {
    /// A vector of at least `len` scalars: a kept one, else a new one.
    fn take(&self, gpu: &Arc<Gpu>, len: usize) -> Result<PinnedBuffer<Scalar>, GpuError> {
        let kept = {
            let mut pool = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let at = pool.iter().position(|b| b.as_slice().len() >= len);
            at.map(|i| pool.swap_remove(i))
        };
        match kept {
            Some(b) => Ok(b),
            None => PinnedBuffer::new(gpu, len),
        }
    }

    /// `b` kept for the next batch.
    pub(super) fn put(&self, b: PinnedBuffer<Scalar>) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(b);
    }
}

/// H's length of a witness partition (m - 1), `None` for any other.
fn h_len(job: &PartitionJob<'_>) -> Option<usize> {
    match &job.partition_data {
        Partition::Witness(w) => Some(w.matrices.matrices.constraints().max(1).next_power_of_two() - 1),
        Partition::Synthesized(_) => None,
    }
}

/// One pass's share for each of `k` members: its wall time and kernel
/// milliseconds, divided equally.
fn share(wall: Duration, ms: f32, k: usize) -> (Duration, f32) {
    let k = k.max(1);
    (wall / k as u32, ms / k as f32)
}

impl GpuProver {
    /// [`crate::PartitionProver::prove_batch`]: partitions given as a
    /// witness of the first one's shape and parameter set become members
    /// (each compute_h as alone, H to the host), the others are proved
    /// alone; then the members' MSMs in one pass per query, and each
    /// proof assembled. Where the host cannot page-lock another H, the
    /// rest are proved alone.
    pub(super) fn prove_together(&self, jobs: Vec<PartitionJob<'_>>) -> Vec<Proved> {
        let n = jobs.len();
        let Some(first) = jobs.first() else { return Vec::new() };
        let (params, params_key) = (first.params, first.params_key);
        let shape = match &first.partition_data {
            Partition::Witness(w) => Some(w.matrices.clone()),
            Partition::Synthesized(_) => None,
        };
        let mut results: Vec<Option<Proved>> = (0..n).map(|_| None).collect();
        let mut members: Vec<(usize, Member)> = Vec::with_capacity(n);
        let mut pin_failed = false;
        for (i, job) in jobs.into_iter().enumerate() {
            let same = match (&job.partition_data, &shape) {
                (Partition::Witness(w), Some(s)) => Arc::ptr_eq(&w.matrices, s) && std::ptr::eq(job.params, params),
                _ => false,
            };
            let h_host = match h_len(&job).filter(|_| same && self.max_batch > 1 && !pin_failed) {
                Some(len) => match self.h_pool.take(&self.gpu, len) {
                    Ok(b) => Some(b),
                    Err(e) => {
                        log::warn!(
                            "porep-c2: {}: no page-locked host memory for another partition's H ({e}); \
                             the rest of this batch alone",
                            self.name()
                        );
                        pin_failed = true;
                        None
                    }
                },
                None => None,
            };
            results[i] = match self.prove_staged(job, h_host) {
                Ok(Staged::Proved(proof, t)) => Some(Ok((proof, t))),
                Ok(Staged::Member(m)) => {
                    members.push((i, m));
                    None
                }
                Err(e) => Some(Err(e)),
            };
        }
        let finish = |group: &mut [(usize, Member)], results: &mut [Option<Proved>]| -> Result<(), Error> {
            let sums = self.member_msms(params, params_key, group)?;
            let k = group.len();
            for ((i, m), sums) in group.iter_mut().zip(sums) {
                log::debug!("porep-c2: partition {} sums (batch of {k}): {}", m.partition, sums.digest());
                let mut t = std::mem::take(&mut m.t);
                let proof = crate::report::timed(&mut t.assemble, || assemble(&params.vk, m.r, m.s, &sums));
                t.gpu = Some(std::mem::take(&mut m.g));
                results[*i] = Some(Ok((proof, t)));
            }
            Ok(())
        };
        match if members.is_empty() { Ok(()) } else { finish(&mut members, &mut results) } {
            Ok(()) => {}
            // The members' state did not fit beside what the device holds
            // now (the plan's bound assumes a typical compact witness):
            // each member's passes alone, from its H and witness on the
            // host, rather than losing the batch.
            Err(e) if e.is_device_out_of_memory() && members.len() > 1 => {
                log::warn!(
                    "porep-c2: {}: a batch of {} ran out of device memory ({e}); its MSMs one partition at a time",
                    self.name(),
                    members.len()
                );
                for one in members.chunks_mut(1) {
                    if let Err(e) = finish(one, &mut results) {
                        results[one[0].0] = Some(Err(e));
                    }
                }
            }
            Err(e) => {
                for (i, _) in &members {
                    results[*i] = Some(Err(e.for_another_partition()));
                }
            }
        }
        for (_, m) in members {
            self.h_pool.put(m.h);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(dev(GpuError::Invalid("a batch member without a result".into())))))
            .collect()
    }

    /// The MSMs of every member, one pass per query over the parameters
    /// (resident queries: one MSM per member over the resident bases); the
    /// members' witnesses, inputs and run state in the worker's vectors
    /// arena (idle between partitions: the plan's
    /// [`crate::plan::DevicePlan::max_batch`] counts them there). Kernel
    /// times, wall times and streamed bytes of each pass are shared equally
    /// among the members; each member's own H scalars are its own.
    fn member_msms(
        &self,
        params: &Parameters<Bls12>,
        params_key: &str,
        members: &mut [(usize, Member)],
    ) -> Result<Vec<Sums>, Error> {
        let k = members.len();
        let e = |x: GpuError| dev(x);
        let srs = self.resident_params(params, params_key)?;
        let srs = srs.as_deref();
        let streamed = srs
            .map_or([true; 5], |x| [x.h.is_none(), x.l.is_none(), x.a.is_none(), x.b_g1.is_none(), x.b_g2.is_none()]);
        let pins = self.pins.get(&self.gpu, params, streamed).unwrap_or_else(|x| {
            log::warn!("porep-c2: GPU {}: page-locking streamed parameters failed ({x}); staging them", self.device);
            None
        });
        let pins = pins.as_deref();
        let shape = members[0].1.shape.clone();
        let [da, dbi, dba] = [&shape.densities.0, &shape.densities.1, &shape.densities.2];
        let n_in = members[0].1.inputs.len();
        let b_in = dbi.count_ones();
        // The members' witnesses and inputs in the vectors arena, the
        // shape's masks once for all.
        let compacts = members
            .iter()
            .map(|(_, m)| self.msm.upload_compact_to(&m.aux, &self.vectors))
            .collect::<Result<Vec<_>, _>>()?;
        let inputs = members
            .iter()
            .map(|(_, m)| -> Result<DeviceBuffer<Scalar>, GpuError> {
                let mut d = self.vectors.alloc::<Scalar>(n_in.max(1))?;
                d.upload(0, &m.inputs, &self.stream)?;
                Ok(d)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(e)?;
        let a_mask = self.msm.upload_density(da)?;
        let b_in_mask = self.msm.upload_density(dbi)?;
        let b_aux_mask = self.msm.upload_density(dba)?;
        let mut settle = SettleOnError { gpu: &self.gpu, armed: true };
        let mask_bytes: u64 = [da, dbi, dba].iter().map(|d| std::mem::size_of_val(d.as_words()) as u64).sum();
        for ((_, m), c) in members.iter_mut().zip(&compacts) {
            m.g.batch = k;
            m.g.h2d_bytes += (c.bytes() + n_in * std::mem::size_of::<Scalar>()) as u64 + mask_bytes / k as u64;
        }
        let aux: Vec<BatchScalars<'_>> =
            compacts.iter().map(|c| BatchScalars::Device(MsmScalars::Compact(c), None)).collect();
        let masked = |mask| -> Vec<BatchScalars<'_>> {
            compacts.iter().map(|c| BatchScalars::Device(MsmScalars::Compact(c), Some(mask))).collect()
        };
        let ins = |mask| -> Vec<BatchScalars<'_>> {
            inputs.iter().map(|d| BatchScalars::Device(DeviceScalars::montgomery(d).into(), mask)).collect()
        };
        let k_marks = &self.marks;
        k_marks.msms_start.record(&self.stream).map_err(e)?;
        use crate::groth16::G1Query as Q;
        let g1 = |q: Q| g1_bases(srs, pins, params, q);
        let g2 = g2_bases(srs, pins, params);

        // H: each member's coefficients from its page-locked host vector.
        let hs: Vec<BatchScalars<'_>> =
            members.iter().map(|(_, m)| BatchScalars::Pinned(&m.h.as_slice()[..m.h_len])).collect();
        let h_bytes: Vec<u64> = members.iter().map(|(_, m)| (m.h_len * std::mem::size_of::<Scalar>()) as u64).collect();
        let (h, pass) = self.pass::<G1>(g1(Q::H), 0, &hs)?;
        self.charge(members, pass, |m| &mut m.t.msm_h, |g| &mut g.msm_h_ms);
        for ((_, m), b) in members.iter_mut().zip(&h_bytes) {
            m.g.h2d_bytes += b;
        }
        let (l, pass) = self.pass::<G1>(g1(Q::L), 0, &aux)?;
        self.charge(members, pass, |m| &mut m.t.msm_l, |g| &mut g.msm_l_ms);
        let (a_in, pass_in) = self.pass::<G1>(g1(Q::A), 0, &ins(None))?;
        let (a_aux, pass) = self.pass::<G1>(g1(Q::A), n_in, &masked(&a_mask))?;
        self.charge(members, pass_in.plus(pass), |m| &mut m.t.msm_a, |g| &mut g.msm_a_ms);
        let (b1_in, pass_in) = self.pass::<G1>(g1(Q::BG1), 0, &ins(Some(&b_in_mask)))?;
        let (b1_aux, pass) = self.pass::<G1>(g1(Q::BG1), b_in, &masked(&b_aux_mask))?;
        self.charge(members, pass_in.plus(pass), |m| &mut m.t.msm_b_g1, |g| &mut g.msm_b_g1_ms);
        let (b2_in, pass_in) = self.pass::<G2>(g2, 0, &ins(Some(&b_in_mask)))?;
        let (b2_aux, pass) = self.pass::<G2>(g2, b_in, &masked(&b_aux_mask))?;
        self.charge(members, pass_in.plus(pass), |m| &mut m.t.msm_b_g2, |g| &mut g.msm_b_g2_ms);

        k_marks.msms_end.record(&self.stream).map_err(e)?;
        k_marks.msms_end.synchronize().map_err(e)?;
        let span = (
            k_marks.msms_start.elapsed_ms(&self.epoch).map_err(e)?,
            k_marks.msms_end.elapsed_ms(&self.epoch).map_err(e)?,
        );
        for (_, m) in members.iter_mut() {
            m.g.spans_ms.push(span);
        }
        // Every MSM was waited for: the buffers can go back.
        settle.armed = false;
        Ok((0..k)
            .map(|j| Sums {
                h: h[j],
                l: l[j],
                a: a_in[j] + a_aux[j],
                b_g1: b1_in[j] + b1_aux[j],
                b_g2: b2_in[j] + b2_aux[j],
            })
            .collect())
    }

    /// One query's MSMs for every member from base `first` on: one batched
    /// pass over streamed bases, else one MSM per member over the resident
    /// bases (a member's host scalars uploaded into the vectors arena
    /// first). Returns the sums and what the pass cost.
    fn pass<C: GpuCurve>(
        &self,
        b: Bases<'_, C::Affine>,
        first: usize,
        members: &[BatchScalars<'_>],
    ) -> Result<(Vec<C::Projective>, Pass), Error> {
        self.step_aside();
        let clock = Instant::now();
        let msm = &self.msm;
        // Every base some member's scalars reach crosses PCIe once.
        let reach = |available: usize| -> u64 {
            let used = members
                .iter()
                .map(|m| match m {
                    BatchScalars::Device(_, Some(mask)) => mask.count_ones(),
                    other => other.len(),
                })
                .max()
                .unwrap_or(0)
                .min(available.saturating_sub(first));
            (used * std::mem::size_of::<C::Affine>()) as u64
        };
        let (sums, ms, streamed) = match b {
            Bases::Device(d) => {
                let (mut sums, mut ms) = (Vec::with_capacity(members.len()), 0.0);
                for m in members {
                    let sum = match *m {
                        BatchScalars::Device(s, mask) => msm.msm_device_from::<C>(d, first, s, mask)?,
                        BatchScalars::Host(h) | BatchScalars::Pinned(h) => {
                            let mut up = self.vectors.alloc::<Scalar>(h.len().max(1)).map_err(dev)?;
                            up.upload(0, h, &self.stream).map_err(dev)?;
                            msm.msm_device_from::<C>(d, first, DeviceScalars::montgomery(&up).prefix(h.len()), None)?
                        }
                    };
                    ms += self.msm_ms();
                    sums.push(sum);
                }
                (sums, ms, 0)
            }
            Bases::Pinned(p) => {
                let sums = msm.msm_batch_pinned_bases::<C>(p, first, members, Some(&self.vectors))?;
                (sums, self.msm_ms(), reach(p.as_slice().len()))
            }
            Bases::Host(h) => {
                let sums =
                    msm.msm_batch_host_bases::<C>(h.get(first..).unwrap_or(&[]), members, Some(&self.vectors))?;
                (sums, self.msm_ms(), reach(h.len()))
            }
        };
        Ok((sums, Pass { wall: clock.elapsed(), ms, streamed }))
    }

    /// Adds each member's share of `pass` to the fields `wall` and `ms`
    /// pick, and to its streamed bytes.
    fn charge(
        &self,
        members: &mut [(usize, Member)],
        pass: Pass,
        wall: impl Fn(&mut Member) -> &mut Duration,
        ms: impl Fn(&mut GpuTimes) -> &mut f32,
    ) {
        let k = members.len();
        let (w, m) = share(pass.wall, pass.ms, k);
        for (_, member) in members.iter_mut() {
            *wall(member) += w;
            *ms(&mut member.g) += m;
            member.g.h2d_bytes += pass.streamed / k as u64;
        }
    }
}

/// What one query's pass cost: wall time, kernel milliseconds, bases
/// streamed.
#[derive(Clone, Copy)]
struct Pass {
    wall: Duration,
    ms: f32,
    streamed: u64,
}

impl Pass {
    /// Two passes of one query (inputs and aux parts) together.
    fn plus(self, other: Pass) -> Pass {
        Pass { wall: self.wall + other.wall, ms: self.ms + other.ms, streamed: self.streamed + other.streamed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_is_shared_equally_among_its_members() {
        let (w, ms) = share(Duration::from_millis(900), 450.0, 3);
        assert_eq!((w, ms), (Duration::from_millis(300), 150.0));
        // A batch of none is charged as one (no division by zero).
        assert_eq!(share(Duration::from_millis(5), 2.0, 0), (Duration::from_millis(5), 2.0));
        let p = Pass { wall: Duration::from_millis(1), ms: 1.0, streamed: 7 }.plus(Pass {
            wall: Duration::from_millis(2),
            ms: 0.5,
            streamed: 3,
        });
        assert_eq!((p.wall, p.ms, p.streamed), (Duration::from_millis(3), 1.5, 10));
    }

    /// The batch a 32 GiB worker runs at a 16 GiB cap (the plan's 9):
    /// whole without urgent proofs or with their lane; at most
    /// `URGENT_TURN_BATCH` where they take the worker's turns (lane asked
    /// for, not kept); never above the config's own bound or the host's.
    #[test]
    fn urgent_proofs_without_their_lane_shorten_the_batch() {
        use crate::gpu::{batch_bound, ordinary_workers, GpuBackendConfig, URGENT_TURN_BATCH};
        let config = GpuBackendConfig::default();
        let plan = crate::plan::plan_device(16 << 30, 1, &config.plan_for).expect("a 16 GiB plan");
        assert_eq!(plan.max_batch, 9, "{}", plan.describe(&config.plan_for));
        let bound = |c: &GpuBackendConfig, lane_kept: bool| batch_bound(&ordinary_workers(c, lane_kept), &plan);
        assert_eq!(bound(&config, true), 9);
        assert_eq!(bound(&config, false), URGENT_TURN_BATCH);
        let no_lane = GpuBackendConfig { urgent_lane: None, ..config.clone() };
        assert_eq!(bound(&no_lane, false), 9);
        let two = GpuBackendConfig { max_batch: Some(2), ..config.clone() };
        assert_eq!(bound(&two, false), 2);
        let one_member = GpuBackendConfig { batch_host_bytes: 5 << 30, ..no_lane };
        assert_eq!(bound(&one_member, false), 1);
    }
}
