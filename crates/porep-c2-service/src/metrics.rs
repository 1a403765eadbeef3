//! Counters and stage durations of the service, as Prometheus text
//! (`GetMetrics`).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use crate::jobs::{Finished, Outcome};
use crate::request::ProofKind;

/// Per proof kind: counts and summed seconds.
#[derive(Clone, Debug, Default)]
struct KindStats {
    submitted: u64,
    completed: u64,
    failed: u64,
    cancelled: u64,
    retries: u64,
    queue_wait_s: f64,
    total_s: f64,
    params_load_s: f64,
    synthesis_s: f64,
    gpu_compute_s: f64,
    h2d_bytes: u64,
}

/// The service's metrics.
pub struct Metrics {
    started: Instant,
    kinds: Mutex<BTreeMap<&'static str, KindStats>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { started: Instant::now(), kinds: Mutex::new(BTreeMap::new()) }
    }
}

/// Device figures sampled when metrics are read.
#[derive(Clone, Debug, Default)]
pub struct DeviceSample {
    /// Device ordinal.
    pub ordinal: u32,
    /// Bytes in use on it (total minus free).
    pub used_bytes: u64,
    /// Its total memory.
    pub total_bytes: u64,
}

impl Metrics {
    fn with(&self, kind: ProofKind, f: impl FnOnce(&mut KindStats)) {
        let mut k = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        f(k.entry(kind.name()).or_default());
    }

    /// A job was queued.
    pub fn submitted(&self, kind: ProofKind) {
        self.with(kind, |s| s.submitted += 1);
    }

    /// A job ended.
    pub fn finished(&self, kind: ProofKind, done: &Finished) {
        self.with(kind, |s| {
            s.queue_wait_s += done.queue_wait.as_secs_f64();
            s.total_s += done.total.as_secs_f64();
            match &done.outcome {
                Outcome::Completed(o) => {
                    s.completed += 1;
                    s.retries += o.retries as u64;
                    s.params_load_s += o.params_load.as_secs_f64();
                    s.synthesis_s += o.synthesis.as_secs_f64();
                    s.gpu_compute_s += o.gpu_compute.as_secs_f64();
                    s.h2d_bytes += o.h2d_bytes;
                }
                Outcome::Failed(_) => s.failed += 1,
                Outcome::Cancelled => s.cancelled += 1,
            }
        });
    }

    /// Proofs completed and failed, over every kind.
    pub fn totals(&self) -> (u64, u64) {
        let k = self.kinds.lock().unwrap_or_else(|p| p.into_inner());
        (k.values().map(|s| s.completed).sum(), k.values().map(|s| s.failed).sum())
    }

    /// Seconds since the service started.
    pub fn uptime_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// The Prometheus text exposition: counters and summed stage seconds
    /// per proof kind, queue depths, devices' memory in use.
    pub fn prometheus(&self, queues: &[(ProofKind, usize, usize)], devices: &[DeviceSample]) -> String {
        let k = self.kinds.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, values: Vec<(String, String)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, v) in values {
                let _ = writeln!(out, "{name}{labels} {v}");
            }
        };
        let per_kind = |f: &dyn Fn(&KindStats) -> String| -> Vec<(String, String)> {
            k.iter().map(|(kind, s)| (format!("{{proof_kind=\"{kind}\"}}"), f(s))).collect()
        };
        family(
            "porep_c2_proofs_submitted_total",
            "counter",
            "Proof requests queued.",
            per_kind(&|s| s.submitted.to_string()),
        );
        family(
            "porep_c2_proofs_completed_total",
            "counter",
            "Proofs completed (each verified).",
            per_kind(&|s| s.completed.to_string()),
        );
        family(
            "porep_c2_proofs_failed_total",
            "counter",
            "Proof requests that failed.",
            per_kind(&|s| s.failed.to_string()),
        );
        family(
            "porep_c2_proofs_cancelled_total",
            "counter",
            "Proof requests cancelled.",
            per_kind(&|s| s.cancelled.to_string()),
        );
        family(
            "porep_c2_partition_retries_total",
            "counter",
            "Partitions proved again on the retry backend after a device fault.",
            per_kind(&|s| s.retries.to_string()),
        );
        for (stage, help, f) in [
            (
                "queue_wait",
                "Seconds jobs waited for a runner.",
                (|s: &KindStats| s.queue_wait_s) as fn(&KindStats) -> f64,
            ),
            ("total", "Seconds from submit to end.", |s| s.total_s),
            ("params_load", "Seconds reading or finding parameters.", |s| s.params_load_s),
            ("synthesis", "Seconds of synthesis, summed over partitions.", |s| s.synthesis_s),
            ("gpu_compute", "Seconds of GPU kernels (CUDA events), summed over partitions.", |s| s.gpu_compute_s),
        ] {
            family(&format!("porep_c2_{stage}_seconds_total"), "counter", help, per_kind(&|s| format!("{:.6}", f(s))));
        }
        family(
            "porep_c2_host_to_device_bytes_total",
            "counter",
            "Bytes copied host to device by the GPU workers.",
            per_kind(&|s| s.h2d_bytes.to_string()),
        );
        let q = |running: bool| -> Vec<(String, String)> {
            queues
                .iter()
                .map(|(kind, queued, run)| {
                    (format!("{{proof_kind=\"{}\"}}", kind.name()), if running { run } else { queued }.to_string())
                })
                .collect()
        };
        family("porep_c2_jobs_queued", "gauge", "Jobs waiting for a runner.", q(false));
        family("porep_c2_jobs_running", "gauge", "Jobs being proved.", q(true));
        family(
            "porep_c2_device_memory_used_bytes",
            "gauge",
            "Device memory in use (the service's pool included).",
            devices.iter().map(|d| (format!("{{gpu=\"{}\"}}", d.ordinal), d.used_bytes.to_string())).collect(),
        );
        family(
            "porep_c2_uptime_seconds",
            "gauge",
            "Seconds since the service started.",
            vec![(String::new(), self.uptime_s().to_string())],
        );
        out
    }
}
