//! The partition scheduler: synthesis of partition `k+1` overlaps proving of
//! partition `k`.
//!
//! A [`Pipeline`] runs `synthesis_workers` producer threads that build work
//! items (synthesized partitions) in index order and push them into a bounded
//! queue; one or more consumers ("provers": a CPU prover today, one per GPU
//! later) pull from it. The queue bound plus the number of workers is the
//! memory admission rule: at most `synthesis_workers + queue_depth + provers`
//! items exist at once, whatever the number of partitions.
//!
//! Across pipelines (several proofs in flight), a shared [`HostBudget`]
//! admits an item only when its host bytes fit: a producer waits for room
//! before it starts, and the bytes come back when the consumer is done with
//! the item; waiting items are admitted by [`PipelineConfig::priority`], then
//! in arrival order. A [`CancelToken`] stops a run between items. The
//! producers' parallel work runs on [`PipelineConfig::host_pool`] when set:
//! [`HostLanes`] give urgent proofs (PoSt) threads ahead of the rest, and a
//! device's [`YieldGate`] has its ordinary workers queue nothing new while an
//! urgent proof runs there.
//!
//! The pipeline knows nothing about circuits: items and results are generic,
//! so the same scheduler serves proofs, benchmarks and tests.
//!
//! ```
//! use c2_sched::{Pipeline, PipelineConfig};
//! let squares = Pipeline::new(PipelineConfig::default())
//!     .run(5, |k| Ok::<_, String>(k * k), vec![|_k: usize, x: usize| Ok::<_, String>(x + 1)])
//!     .unwrap();
//! assert_eq!(squares.results, vec![1, 2, 5, 10, 17]);
//! ```
#![deny(missing_docs)]

mod budget;
mod cancel;
mod gate;
mod host;
mod pipeline;
#[cfg(test)]
mod tests;
mod yield_gate;

pub use budget::{AdmissionError, HostBudget, HostPermit};
pub use cancel::CancelToken;
pub use gate::{PriorityGate, Turn};
pub use host::{on_host_pool, HostLanes, HostPool, HostPoolError};
pub use pipeline::{JobTiming, Pipeline, PipelineConfig, PipelineOutput, Ready, SchedError};
pub use yield_gate::{Urgent, YieldGate};
