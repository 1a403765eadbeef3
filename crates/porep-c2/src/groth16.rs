//! Groth16 proving from a synthesized circuit: H via the NTT stage, the five
//! MSMs via the MSM stage, blinding with `r`, `s`, and assembly.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::groth16::{Parameters, Proof, VerifyingKey};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use c2_msm::{CpuMsm, Msm};
use c2_ntt::{CpuNtt, Ntt};
use c2_sched::{HostPermit, PriorityGate};
use c2_synth::Synthesized;
use group::{prime::PrimeCurveAffine, Curve};

use crate::Error;

/// Proves one synthesized partition end to end with its own resources
/// (e.g. one GPU worker: the whole device-level path, parameters resident).
/// A [`Backend`] with workers runs one pipeline consumer per worker.
pub trait PartitionProver: Send + Sync {
    /// For logs and reports.
    fn name(&self) -> String;

    /// The proof of `s` with blinding `r`, `s_blind`. `params_key` names the
    /// parameter set (file and verifying key) for caches that outlive a call.
    /// `host` is the partition's share of the host-memory budget (`None`
    /// without one): drop it when `s`'s vectors are freed (a GPU worker does
    /// so once they are on the device) so the next partition is admitted
    /// sooner; dropping it with `s` at the end is always correct.
    fn prove(
        &self,
        s: Synthesized,
        host: Option<HostPermit>,
        params: &Parameters<Bls12>,
        params_key: &str,
        r: Scalar,
        s_blind: Scalar,
    ) -> Result<(Proof<Bls12>, ProveTimings), Error>;

    /// Makes `params` ready for later [`PartitionProver::prove`] calls with
    /// the same `params_key` (a GPU worker uploads them to its device once,
    /// off any proof's clock). Returns whether they are resident now;
    /// workers without a cache answer `false`.
    fn preload(&self, params: &Parameters<Bls12>, params_key: &str) -> Result<bool, Error> {
        let _ = (params, params_key);
        Ok(false)
    }
}

/// The stage implementations a prover uses. `Default` is the CPU path.
#[derive(Clone)]
pub struct Backend {
    /// Computes H (host-level stage).
    pub ntt: Arc<dyn Ntt>,
    /// Computes the MSMs (host-level stage).
    pub msm: Arc<dyn Msm>,
    /// Whole-partition provers (e.g. two per GPU); when not empty they prove
    /// the partitions, one pipeline consumer each, and `ntt` / `msm` serve
    /// only callers that use the stages directly.
    pub workers: Vec<Arc<dyn PartitionProver>>,
    /// Turns at each worker for the proofs sharing this backend, by
    /// `PipelineConfig::priority` (shared by clones).
    pub gates: WorkerGates,
}

/// One [`PriorityGate`] per worker, shared by every proof using a backend
/// (and by its clones): when proofs in flight compete for a worker, the
/// higher priority proves first, equal priorities in arrival order.
#[derive(Clone)]
pub struct WorkerGates {
    gates: Arc<Mutex<Vec<Arc<PriorityGate>>>>,
    grace: Duration,
}

impl Default for WorkerGates {
    fn default() -> Self {
        Self::with_grace(WORKER_GRACE)
    }
}

/// How long a worker, free after a higher-priority partition, waits for
/// that proof's next partition before taking a lower-priority one: the
/// consumer brings it within microseconds when it is ready; 10 ms is <1 %
/// of a large partition's proving time.
const WORKER_GRACE: Duration = Duration::from_millis(10);

impl WorkerGates {
    /// Gates whose lower priorities defer `grace` to the priority of the
    /// turn that just ended ([`PriorityGate::new`]); the default is 10 ms.
    pub fn with_grace(grace: Duration) -> Self {
        Self { gates: Arc::default(), grace }
    }

    /// Worker `w`'s gate (made on first use).
    pub fn gate(&self, w: usize) -> Arc<PriorityGate> {
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        while gates.len() <= w {
            gates.push(Arc::new(PriorityGate::new(self.grace)));
        }
        gates[w].clone()
    }
}

impl std::fmt::Debug for WorkerGates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerGates(..)")
    }
}

impl Default for Backend {
    fn default() -> Self {
        Self::staged(Arc::new(CpuNtt), Arc::new(CpuMsm))
    }
}

impl Backend {
    /// The CPU for every stage (the oracle; no device is probed).
    pub fn cpu() -> Self {
        Self::default()
    }

    /// Host-level stages only: H by `ntt`, the MSMs by `msm`.
    pub fn staged(ntt: Arc<dyn Ntt>, msm: Arc<dyn Msm>) -> Self {
        Self { ntt, msm, workers: Vec::new(), gates: WorkerGates::default() }
    }

    /// The fastest stages this build and host offer: with the `cuda` feature
    /// and CUDA devices, the whole GPU path on every device
    /// ([`crate::gpu::GpuBackendConfig::default`]: two workers per device,
    /// parameters resident) and the GPU stages of device 0 for direct use;
    /// otherwise the CPU. Says which, and why, in one log line (warn level
    /// when falling back).
    pub fn auto() -> Self {
        #[cfg(feature = "cuda")]
        {
            match crate::gpu::gpu_backend(&crate::gpu::GpuBackendConfig::default()) {
                Ok(b) => return b,
                Err(e) => log::warn!("porep-c2: {e}; proving on the CPU"),
            }
        }
        #[cfg(not(feature = "cuda"))]
        log::warn!("porep-c2: {}; proving on the CPU", c2_cuda::GpuError::NotCompiled);
        Self::default()
    }
}

impl Backend {
    /// Uploads `params` (the set for `parameter_id`, as
    /// [`c2_synth::PorepInstance::parameter_id`] names it) to every worker's
    /// device now, all devices at once, so the first proof does not wait
    /// for ~47 GB (32 GiB) to cross PCIe. A node calls it once at start-up
    /// for each sector size it proves. Returns how many workers have them
    /// resident (0 on the CPU, or when they do not fit and will stream).
    pub fn preload(&self, parameter_id: &str, params: &Parameters<Bls12>) -> Result<usize, Error> {
        let key = crate::prover::params_key(parameter_id, params);
        let results: Vec<Result<bool, Error>> = std::thread::scope(|s| {
            let handles: Vec<_> =
                self.workers.iter().map(|w| s.spawn(|| w.preload(params, &key))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(Error::Device("a worker panicked in preload".into()))))
                .collect()
        });
        results.into_iter().try_fold(0, |n, r| Ok(n + usize::from(r?)))
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.workers.is_empty() {
            write!(f, "Backend {{ ntt: {}, msm: {} }}", self.ntt.name(), self.msm.name())
        } else {
            let w: Vec<String> = self.workers.iter().map(|w| w.name()).collect();
            write!(f, "Backend {{ workers: [{}] }}", w.join(", "))
        }
    }
}

/// Wall time of each proving step for one partition.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ProveTimings {
    /// compute_h (7 NTTs and the pointwise step).
    pub ntt: Duration,
    /// H MSM.
    pub msm_h: Duration,
    /// L MSM.
    pub msm_l: Duration,
    /// A MSMs (inputs and aux).
    pub msm_a: Duration,
    /// B MSMs in G1.
    pub msm_b_g1: Duration,
    /// B MSMs in G2.
    pub msm_b_g2: Duration,
    /// Blinding and assembly.
    pub assemble: Duration,
    /// Device-side times from CUDA events (the GPU workers' path only).
    pub gpu: Option<GpuTimes>,
}

/// One partition on a GPU, from CUDA events (kernel and copy time, ms) and
/// host clocks.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct GpuTimes {
    /// Device ordinal.
    pub device: usize,
    /// Worker on that device.
    pub worker: usize,
    /// Host: queuing the uploads (the host copies into the pinned staging
    /// slots; the last chunk's DMA may still run).
    pub stage: Duration,
    /// Host: waiting for / uploading the parameter set (zero once resident).
    pub params: Duration,
    /// Parameters were resident (else the MSMs streamed them from host).
    pub params_resident: bool,
    /// a, b, c, aux and inputs over PCIe (events around the copies).
    pub upload_ms: f32,
    /// compute_h kernels.
    pub ntt_ms: f32,
    /// H MSM kernels (first to last event of the MSM's stages).
    pub msm_h_ms: f32,
    /// L MSM kernels.
    pub msm_l_ms: f32,
    /// A MSMs.
    pub msm_a_ms: f32,
    /// B MSMs in G1.
    pub msm_b_g1_ms: f32,
    /// B MSMs in G2.
    pub msm_b_g2_ms: f32,
    /// When the device worked for this partition: (start, end) of compute_h
    /// and of the MSM phase, ms after the device's epoch event (shared by
    /// its workers). The union over a device's partitions is its busy time
    /// ([`device_busy_ms`]); summing per-partition times would count two
    /// workers' overlapping kernels twice.
    pub spans_ms: Vec<(f32, f32)>,
}

/// Busy time per device, ms: the union of the partitions' kernel spans
/// ([`GpuTimes::spans_ms`]) on each device, in device order.
pub fn device_busy_ms<'a>(times: impl IntoIterator<Item = &'a GpuTimes>) -> Vec<(usize, f64)> {
    let mut by_device: std::collections::BTreeMap<usize, Vec<(f32, f32)>> = Default::default();
    for g in times {
        by_device.entry(g.device).or_default().extend(g.spans_ms.iter().copied());
    }
    by_device
        .into_iter()
        .map(|(device, mut spans)| {
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut busy, mut open): (f64, Option<(f32, f32)>) = (0.0, None);
            for (s, e) in spans {
                open = match open {
                    Some((os, oe)) if s <= oe => Some((os, oe.max(e))),
                    Some((os, oe)) => {
                        busy += f64::from(oe - os);
                        Some((s, e))
                    }
                    None => Some((s, e)),
                };
            }
            busy += open.map_or(0.0, |(s, e)| f64::from(e - s));
            (device, busy)
        })
        .collect()
}

impl GpuTimes {
    /// NTT and MSM kernel time, ms (copies excluded).
    pub fn kernel_ms(&self) -> f32 {
        self.ntt_ms + self.msm_h_ms + self.msm_l_ms + self.msm_a_ms + self.msm_b_g1_ms + self.msm_b_g2_ms
    }
}

/// The unblinded sums of one proof (the five MSMs; A and B include the
/// input parts).
pub(crate) struct Sums {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// Blinds with `r`, `s` and assembles, in bellperson's grouping.
pub(crate) fn assemble(vk: &VerifyingKey<Bls12>, r: Scalar, s_blind: Scalar, sums: &Sums) -> Proof<Bls12> {
    // A = alpha + sum a_i(tau) z_i + r delta
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + sums.a;
    // B = beta + sum b_i(tau) z_i + s delta (in G2)
    let g_b = vk.delta_g2 * s_blind + vk.beta_g2 + sums.b_g2;
    // C = s A' + r B'_G1 + rs delta + s alpha + r beta + H + L, where A'
    // and B' are the unblinded sums; this is bellperson's grouping.
    let g_c = sums.a * s_blind
        + sums.b_g1 * r
        + vk.delta_g1 * (r * s_blind)
        + vk.alpha_g1 * s_blind
        + vk.beta_g1 * r
        + sums.h
        + sums.l;
    Proof { a: g_a.to_affine(), b: g_b.to_affine(), c: g_c.to_affine() }
}

/// Checks that `params` fit the synthesized circuit, query by query. A
/// mismatch means parameters for another circuit (another sector size or
/// proof version): a typed error instead of a proof that cannot verify.
pub fn check_parameters(s: &Synthesized, params: &Parameters<Bls12>) -> Result<(), Error> {
    let m = s.num_constraints().max(1).next_power_of_two();
    let checks = [
        ("vk.ic (public inputs)", s.num_inputs(), params.vk.ic.len()),
        ("h (domain size - 1)", m - 1, params.h.len()),
        ("l (aux variables)", s.num_aux(), params.l.len()),
        ("a (inputs + A-dense aux)", s.num_inputs() + s.a_aux_density.count_ones(), params.a.len()),
        (
            "b_g1 (B-dense inputs + aux)",
            s.b_input_density.count_ones() + s.b_aux_density.count_ones(),
            params.b_g1.len(),
        ),
        (
            "b_g2 (B-dense inputs + aux)",
            s.b_input_density.count_ones() + s.b_aux_density.count_ones(),
            params.b_g2.len(),
        ),
    ];
    for (query, expected, actual) in checks {
        if expected != actual {
            return Err(Error::ParamsMismatch { query, expected, actual });
        }
    }
    if bool::from(params.vk.delta_g1.is_identity() | params.vk.delta_g2.is_identity()) {
        // bellperson refuses these too: a subverted CRS.
        return Err(Error::ParamsMismatch { query: "vk.delta (identity)", expected: 1, actual: 0 });
    }
    Ok(())
}

pub(crate) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *slot = t.elapsed();
    r
}

/// Proves one synthesized circuit with blinding factors `r`, `s`.
///
/// Bit-identical to bellperson 0.27's `create_proof_batch_priority` for the
/// same circuit, parameters, `r` and `s` (the group arithmetic is exact, so
/// any correct NTT and MSM give the same points).
pub fn prove_synthesized(
    s: Synthesized,
    params: &Parameters<Bls12>,
    r: Scalar,
    s_blind: Scalar,
    backend: &Backend,
) -> Result<(Proof<Bls12>, ProveTimings), Error> {
    check_parameters(&s, params)?;
    let mut t = ProveTimings::default();
    let Synthesized {
        a,
        b,
        c,
        input_assignment: inputs,
        aux_assignment: aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = s;
    let n_in = inputs.len();

    let h = timed(&mut t.ntt, || backend.ntt.compute_h(a, b, c))?;
    let msm = &backend.msm;
    let h_acc = timed(&mut t.msm_h, || msm.msm_g1(&params.h, &h, None))?;
    drop(h);
    let l_acc = timed(&mut t.msm_l, || msm.msm_g1(&params.l, &aux, None))?;
    let a_acc = timed(&mut t.msm_a, || -> Result<G1Projective, Error> {
        let inputs_part = msm.msm_g1(&params.a[..n_in], &inputs, None)?;
        let aux_part = msm.msm_g1(&params.a[n_in..], &aux, Some(&a_aux_density))?;
        Ok(inputs_part + aux_part)
    })?;
    let b_in = b_input_density.count_ones();
    let b1_acc = timed(&mut t.msm_b_g1, || -> Result<G1Projective, Error> {
        let inputs_part = msm.msm_g1(&params.b_g1[..b_in], &inputs, Some(&b_input_density))?;
        let aux_part = msm.msm_g1(&params.b_g1[b_in..], &aux, Some(&b_aux_density))?;
        Ok(inputs_part + aux_part)
    })?;
    let b2_acc = timed(&mut t.msm_b_g2, || -> Result<G2Projective, Error> {
        let inputs_part = msm.msm_g2(&params.b_g2[..b_in], &inputs, Some(&b_input_density))?;
        let aux_part = msm.msm_g2(&params.b_g2[b_in..], &aux, Some(&b_aux_density))?;
        Ok(inputs_part + aux_part)
    })?;

    let sums = Sums { h: h_acc, l: l_acc, a: a_acc, b_g1: b1_acc, b_g2: b2_acc };
    let proof = timed(&mut t.assemble, || assemble(&params.vk, r, s_blind, &sums));
    Ok((proof, t))
}

#[cfg(test)]
mod busy_tests {
    use super::*;

    #[test]
    fn busy_time_is_the_union_of_spans_per_device() {
        let g = |device, spans: &[(f32, f32)]| GpuTimes { device, spans_ms: spans.to_vec(), ..Default::default() };
        // Two workers on device 0 overlap (10..30 and 20..40 -> 30 ms), a
        // disjoint span (50..55) and a nested one (21..22); device 1 alone.
        let times = [g(0, &[(10.0, 30.0), (50.0, 55.0)]), g(0, &[(20.0, 40.0), (21.0, 22.0)]), g(1, &[(0.0, 7.0)])];
        assert_eq!(device_busy_ms(&times), vec![(0, 35.0), (1, 7.0)]);
        assert!(device_busy_ms(&[] as &[GpuTimes]).is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` always yields a working backend: the GPU where one answers,
    /// else the CPU (after one log line).
    #[test]
    fn auto_falls_back_to_the_cpu_without_a_gpu() {
        let b = Backend::auto();
        match c2_cuda::devices() {
            Ok(_) => assert!(["cuda", "cpu"].contains(&b.ntt.name())),
            Err(_) => assert_eq!(b.ntt.name(), "cpu"),
        }
        assert_eq!(b.msm.name(), "cpu-blst");
    }
}
