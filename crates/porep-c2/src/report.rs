//! What proving cost: per-step wall times, the GPU's event times, and the
//! per-partition and per-proof reports built from them.

use std::time::{Duration, Instant};

/// What one partition cost.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PartitionReport {
    /// Partition index.
    pub partition: usize,
    /// Constraints (input constraints included).
    pub constraints: usize,
    /// Aux variables.
    pub aux: usize,
    /// Host bytes the synthesized partition held until its prover took it
    /// ([`crate::Partition::host_bytes`]; host-to-device bytes are in
    /// `steps.gpu`).
    pub host_bytes: usize,
    /// Synthesis wall time.
    pub synthesis: Duration,
    /// Time the synthesized partition waited for the prover.
    pub queue_wait: Duration,
    /// Proving wall time (NTT + MSMs + assembly).
    pub prove: Duration,
    /// The proving time by step (of the run that produced the proof).
    pub steps: ProveTimings,
    /// When the primary backend failed and the partition was synthesized
    /// again and proved on `ProverConfig::retry_backend`: the failure.
    pub retried_after: Option<String>,
}

impl PartitionReport {
    /// One partition's timeline on one line: host stages, then (GPU workers)
    /// the CUDA-event times.
    pub fn timeline(&self) -> String {
        let p = self;
        let mut line = format!(
            "partition {:>2}: synth {:.2} s ({:.2} GB host), queue {:.2} s, prove {:.2} s (ntt {:.2}, msm H {:.2} L {:.2} A {:.2} B1 {:.2} B2 {:.2}, assemble {:.3})",
            p.partition,
            p.synthesis.as_secs_f64(),
            p.host_bytes as f64 / 1e9,
            p.queue_wait.as_secs_f64(),
            p.prove.as_secs_f64(),
            p.steps.ntt.as_secs_f64(),
            p.steps.msm_h.as_secs_f64(),
            p.steps.msm_l.as_secs_f64(),
            p.steps.msm_a.as_secs_f64(),
            p.steps.msm_b_g1.as_secs_f64(),
            p.steps.msm_b_g2.as_secs_f64(),
            p.steps.assemble.as_secs_f64()
        );
        if let Some(g) = &p.steps.gpu {
            line += &format!(
                " | cuda:{}/{}: staging {:.0} ms, parameters {:.0} ms, {:.1} GB host-to-device | events ms: upload {:.1} ntt {:.1} H {:.1} L {:.1} A {:.1} B1 {:.1} B2 {:.1} = kernels {:.1}{}",
                g.device,
                g.worker,
                g.stage.as_secs_f64() * 1e3,
                g.params.as_secs_f64() * 1e3,
                g.h2d_bytes as f64 / 1e9,
                g.upload_ms,
                g.ntt_ms,
                g.msm_h_ms,
                g.msm_l_ms,
                g.msm_a_ms,
                g.msm_b_g1_ms,
                g.msm_b_g2_ms,
                g.kernel_ms(),
                if g.params_resident { "" } else { " (parameters streamed, all or in part)" }
            );
            if g.batch > 1 {
                line += &format!(
                    " | MSMs in a batch of {} (pass times and streamed bases shared), H {:.1} GB to the host",
                    g.batch,
                    g.d2h_bytes as f64 / 1e9
                );
            }
        }
        if let Some(why) = &p.retried_after {
            line += &format!(" | retried after: {why}");
        }
        line
    }
}

/// What a whole proof cost.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ProofReport {
    /// Backend description.
    pub backend: String,
    /// Reading the parameters.
    pub load_params: Duration,
    /// Verifying the C1 vanilla proofs.
    pub check_vanilla: Duration,
    /// Synthesis and proving of all partitions (pipelined).
    pub pipeline: Duration,
    /// Verifying the Groth16 proofs.
    pub verify: Duration,
    /// Everything.
    pub total: Duration,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
}

impl ProofReport {
    /// Partitions whose primary backend failed and that were proved again on
    /// the retry backend (`ProverConfig::retry_backend`): a GPU node that
    /// reports any is not proving at GPU speed.
    pub fn retries(&self) -> usize {
        self.partitions.iter().filter(|p| p.retried_after.is_some()).count()
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
    /// From the first to the last copy of a, b, c, aux and inputs (events
    /// on the copy stream; the copies overlap compute_h).
    pub upload_ms: f32,
    /// Bytes copied host-to-device for this partition: a, b, c, the witness,
    /// inputs and masks, plus every streamed parameter base its scalars
    /// reach (zero once the parameters are resident).
    pub h2d_bytes: u64,
    /// Bytes copied device-to-host for this partition (a batch member's H,
    /// kept on the host until the batch's MSM passes; else 0).
    pub d2h_bytes: u64,
    /// Partitions whose MSMs ran in the same streamed passes of the
    /// parameters as this one's (1: alone; issue 42). A batch's MSM
    /// kernel time and streamed bases are shared equally among its
    /// members in the fields above.
    pub batch: usize,
    /// Bytes of the streamed parameter vectors that were page-locked (read
    /// by the DMA engine directly; the rest went through the staging slots).
    pub pinned_param_bytes: u64,
    /// compute_h kernels (with a, b, c's products when they ran on the
    /// device: `abc_ms` of them).
    pub ntt_ms: f32,
    /// a, b, c = A·z, B·z, C·z on the device (0 when they came from the host).
    pub abc_ms: f32,
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

/// Runs `f`, storing its wall time in `slot`.
pub(crate) fn timed<T>(slot: &mut Duration, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    *slot = t.elapsed();
    r
}

#[cfg(test)]
mod tests {
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
