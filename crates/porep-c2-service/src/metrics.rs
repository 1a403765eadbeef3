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

/// Spans arriving this long after later ones are still merged exactly: a
/// proof reports its partitions' kernel spans when it ends, so spans come
/// out of order by up to one proof's length (a 32 GiB proof: ~1 min).
const BUSY_HORIZON_MS: f32 = 10.0 * 60e3;

/// One device's busy time: the union of every proof's kernel spans (ms on
/// the device's time origin). Spans older than [`BUSY_HORIZON_MS`] before
/// the latest are folded into a total; the rest stay merged and sorted.
#[derive(Clone, Debug, Default)]
struct BusyClock {
    /// Busy ms folded into the total, all before `frontier`.
    settled_ms: f64,
    /// Spans before it are settled; a late one is clipped to it.
    frontier: f32,
    /// Disjoint spans after `frontier`, sorted.
    open: Vec<(f32, f32)>,
}

impl BusyClock {
    /// Adds spans (any order, overlapping or not).
    fn add(&mut self, spans: &[(f32, f32)]) {
        let late = spans.iter().map(|&(s, e)| (s.max(self.frontier), e)).filter(|(s, e)| e > s);
        let mut all: Vec<(f32, f32)> = self.open.drain(..).chain(late).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (s, e) in all {
            match self.open.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => self.open.push((s, e)),
            }
        }
        let newest = self.open.last().map_or(self.frontier, |l| l.1);
        let keep = self.open.partition_point(|&(_, e)| e < newest - BUSY_HORIZON_MS);
        for (s, e) in self.open.drain(..keep) {
            self.settled_ms += f64::from(e - s);
            self.frontier = self.frontier.max(e);
        }
    }

    /// Busy seconds so far.
    fn busy_s(&self) -> f64 {
        (self.settled_ms + self.open.iter().map(|(s, e)| f64::from(e - s)).sum::<f64>()) / 1e3
    }
}

/// The service's metrics.
pub struct Metrics {
    started: Instant,
    kinds: Mutex<BTreeMap<&'static str, KindStats>>,
    busy: Mutex<BTreeMap<usize, BusyClock>>,
    /// Partitions of completed proofs by where they were proved: a device
    /// ordinal, or `cpu`.
    placed: Mutex<BTreeMap<String, u64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            kinds: Mutex::new(BTreeMap::new()),
            busy: Mutex::new(BTreeMap::new()),
            placed: Mutex::new(BTreeMap::new()),
        }
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
                    let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
                    for (device, spans) in &o.device_spans {
                        busy.entry(*device).or_default().add(spans);
                    }
                    let mut placed = self.placed.lock().unwrap_or_else(|p| p.into_inner());
                    for (device, n) in &o.partitions_by_device {
                        let label = device.map_or("cpu".to_string(), |d| d.to_string());
                        *placed.entry(label).or_default() += *n as u64;
                    }
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

    /// GPU busy seconds per device ordinal: the union of the kernel spans
    /// (CUDA events) of every completed proof, so two workers' overlapping
    /// kernels count once.
    pub fn gpu_busy_s(&self) -> Vec<(usize, f64)> {
        let busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        busy.iter().map(|(d, c)| (*d, c.busy_s())).collect()
    }

    /// Seconds since the service started.
    pub fn uptime_s(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// The Prometheus text exposition: counters and summed stage seconds
    /// per proof kind, queue depths, devices' memory in use, and whether
    /// each of the engine's `workers` (name, healthy) takes partitions.
    pub fn prometheus(
        &self,
        queues: &[(ProofKind, usize, usize)],
        devices: &[DeviceSample],
        workers: &[(String, bool)],
    ) -> String {
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
            "Partitions proved again after a device fault (on a healthy worker or the retry backend), or on the retry backend while every worker was fenced.",
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
            "porep_c2_gpu_busy_seconds_total",
            "counter",
            "GPU busy seconds: the union of completed proofs' kernel spans (CUDA events); rate() is the busy fraction.",
            self.gpu_busy_s().into_iter().map(|(d, s)| (format!("{{gpu=\"{d}\"}}"), format!("{s:.6}"))).collect(),
        );
        family(
            "porep_c2_worker_healthy",
            "gauge",
            "1 while a worker takes partitions, 0 while it is fenced after a device fault (its partitions go to the others).",
            workers.iter().map(|(name, ok)| (format!("{{worker=\"{name}\"}}"), u8::from(*ok).to_string())).collect(),
        );
        let placed = self.placed.lock().unwrap_or_else(|p| p.into_inner()).clone();
        family(
            "porep_c2_partitions_total",
            "counter",
            "Partitions of completed proofs by where they were proved: a GPU ordinal, or cpu.",
            placed.into_iter().map(|(d, n)| (format!("{{device=\"{d}\"}}"), n.to_string())).collect(),
        );
        if let Some(rss) = resident_bytes() {
            family(
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory of the service's process (parameters held in host memory included).",
                vec![(String::new(), rss.to_string())],
            );
        }
        family(
            "porep_c2_uptime_seconds",
            "gauge",
            "Seconds since the service started.",
            vec![(String::new(), self.uptime_s().to_string())],
        );
        out
    }
}

/// The process's resident set (`VmRSS` of `/proc/self/status`; `None`
/// where there is no procfs).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::BusyClock;

    #[test]
    fn resident_memory_is_read_on_linux() {
        let rss = super::resident_bytes();
        if cfg!(target_os = "linux") {
            // A test process holds at least a megabyte.
            assert!(rss.is_some_and(|b| b > 1 << 20), "{rss:?}");
        }
    }

    #[test]
    fn busy_clock_is_the_union_of_spans_in_any_order() {
        let mut c = BusyClock::default();
        c.add(&[(10.0, 20.0), (15.0, 30.0)]);
        c.add(&[(0.0, 5.0)]); // earlier, reported later
        c.add(&[(29.0, 31.0), (40.0, 41.0)]);
        assert_eq!(c.busy_s(), (5.0 + 21.0 + 1.0) / 1e3);
        // A span past the horizon settles the old ones; totals stay exact.
        let far = super::BUSY_HORIZON_MS + 1000.0;
        c.add(&[(far, far + 2.0)]);
        assert_eq!(c.frontier, 41.0);
        assert_eq!(c.open, vec![(far, far + 2.0)]);
        assert_eq!(c.busy_s(), (5.0 + 21.0 + 1.0 + 2.0) / 1e3);
        // A late span overlapping settled time counts only past the frontier.
        c.add(&[(35.0, 45.0)]);
        assert_eq!(c.busy_s(), (5.0 + 21.0 + 1.0 + 2.0 + 4.0) / 1e3);
    }
}
