//! A fault drill: one device's workers fail as a lost GPU does, so an
//! operator (or a benchmark) can watch the fallback work on real hardware:
//! the device fenced ([`crate::WorkerFences`]), its partitions finished on
//! the other devices or the retry backend, no proof lost, the alerts
//! (`porep_c2_worker_healthy`, `porep_c2_partition_retries_total`) firing.
//! Never on by default; `porep-c2 serve --fault-drill` turns it on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bellperson::groth16::{Parameters, Proof};
use blstrs::Bls12;

use crate::backend::{Backend, PartitionJob, PartitionProver, Workers};
use crate::error::Error;
use crate::report::ProveTimings;

/// Which device fails, from which of its partitions on, and how often.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultDrill {
    /// The device ordinal whose workers fail.
    pub device: usize,
    /// The first failing partition, counted over the partitions the
    /// device's workers finish (0: the first one).
    pub from: usize,
    /// How many partitions fail (`None`: every one from `from` on, a dead
    /// device; `Some(1)`: one transient fault).
    pub faults: Option<usize>,
}

impl FaultDrill {
    /// `DEVICE:FROM[:FAULTS]`, e.g. `0:5` (device 0 dead from its sixth
    /// partition on) or `0:5:1` (one fault there).
    pub fn parse(s: &str) -> Result<Self, String> {
        let bad = || format!("fault drill {s:?}: DEVICE:FROM[:FAULTS], e.g. 0:5 or 0:5:1");
        let mut parts = s.split(':').map(|p| p.trim().parse::<usize>().map_err(|_| bad()));
        let (Some(device), Some(from)) = (parts.next(), parts.next()) else { return Err(bad()) };
        let faults = parts.next().transpose()?;
        if parts.next().is_some() || faults == Some(0) {
            return Err(bad());
        }
        Ok(Self { device: device?, from: from?, faults })
    }
}

/// What a drill has done so far (shared by the wrapped workers).
#[derive(Debug, Default)]
pub struct DrillCounts {
    /// Partitions the drilled device's workers finished (proved or failed).
    pub finished: AtomicUsize,
    /// Faults injected.
    pub injected: AtomicUsize,
}

/// A worker of the drilled device: proves with the real worker (the device
/// does the work), then fails the partition when the drill says so, as a
/// device that faults at the end of a partition loses all of it.
struct Drilled {
    inner: Arc<dyn PartitionProver>,
    drill: FaultDrill,
    counts: Arc<DrillCounts>,
}

impl PartitionProver for Drilled {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn device(&self) -> Option<usize> {
        self.inner.device()
    }

    fn prove(&self, job: PartitionJob<'_>) -> Result<(Proof<Bls12>, ProveTimings), Error> {
        let out = self.inner.prove(job);
        let n = self.counts.finished.fetch_add(1, Ordering::SeqCst);
        // One atomic step, so two workers finishing at once inject no more
        // than `faults`.
        let take = |injected: usize| self.drill.faults.is_none_or(|f| injected < f).then_some(injected + 1);
        if n >= self.drill.from && self.counts.injected.fetch_update(Ordering::SeqCst, Ordering::SeqCst, take).is_ok() {
            return Err(Error::Worker { worker: self.name(), message: "fault drill: injected device fault".into() });
        }
        out
    }

    fn preload(&self, params: &Parameters<Bls12>, params_key: &str) -> Result<bool, Error> {
        self.inner.preload(params, params_key)
    }

    fn evict(&self, params_key: &str) -> usize {
        self.inner.evict(params_key)
    }
}

impl Backend {
    /// This backend with `drill` applied to the workers on its device (the
    /// host-level stages are returned as they are: they have no device),
    /// and the drill's counts. Logs a warning: proofs still verify, but the
    /// drilled device proves nothing while fenced.
    pub fn with_fault_drill(self, drill: FaultDrill) -> (Self, Arc<DrillCounts>) {
        let counts = Arc::new(DrillCounts::default());
        let Self::Workers(w) = self else {
            log::warn!("porep-c2: fault drill asked for, but this backend has no device workers: nothing is drilled");
            return (self, counts);
        };
        let provers: Vec<Arc<dyn PartitionProver>> = w
            .provers
            .into_iter()
            .map(|p| {
                if p.device() != Some(drill.device) {
                    return p;
                }
                Arc::new(Drilled { inner: p, drill, counts: counts.clone() }) as Arc<dyn PartitionProver>
            })
            .collect();
        log::warn!(
            "porep-c2: FAULT DRILL: device {}'s workers fail {} from their partition {} on",
            drill.device,
            drill.faults.map_or("every partition".to_string(), |f| format!("{f} partition(s)")),
            drill.from
        );
        (Self::Workers(Workers { provers, ..w }), counts)
    }
}

#[cfg(test)]
mod tests {
    use super::FaultDrill;

    #[test]
    fn drills_parse() {
        assert_eq!(FaultDrill::parse("0:5"), Ok(FaultDrill { device: 0, from: 5, faults: None }));
        assert_eq!(FaultDrill::parse("1:0:1"), Ok(FaultDrill { device: 1, from: 0, faults: Some(1) }));
        for bad in ["", "0", "0:x", "0:1:0", "0:1:2:3", "-1:2"] {
            assert!(FaultDrill::parse(bad).is_err(), "{bad}");
        }
    }
}
