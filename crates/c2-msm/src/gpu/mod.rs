//! The GPU MSM (feature `cuda`): Pippenger with signed-digit windows, a
//! counting sort of (bucket, base) entries (`cuda-kernels/msm/sort.cuh`: per-block
//! counters in shared memory, or global ones), segment-balanced bucket sums in
//! XYZZ coordinates and chunked running-sum reduction, all in
//! `cuda-kernels/msm/pippenger.cuh`; G1 and G2 from the same templates.
//!
//! Scalars equal to 0 (or masked out by a [`crate::Density`]) are dropped and
//! scalars equal to 1 are summed by plain additions; the split runs on the
//! GPU. Bases can be resident (a `DeviceBuffer` the caller uploaded once)
//! or streamed from host memory in chunks, the next chunk's upload on a copy
//! stream overlapping the current chunk's kernels.
//!
//! The tuning ([`GpuMsmConfig`]) and the window plans and scratch shapes
//! (pure functions, [`crate::plan`]) live at the crate's top level, so
//! planners compile and are tested without CUDA. One module per job here,
//! each importing only those before it: `curve` (the groups), `inputs`
//! (scalars and masks on the device), `scratch` (device scratch slots), `instance` ([`GpuMsm`]: kernels,
//! streams, budget, mask upload, prefix sums), `pippenger` (the bucket
//! pipeline of one run), `resident` (bases on the device), `precomputed` (fixed
//! bases with precomputed multiples), `streaming`
//! (bases from host memory, and the host-level [`crate::Msm`] trait). This
//! module only declares and re-exports them.

mod curve;
mod inputs;
mod instance;
mod pippenger;
mod precomputed;
mod resident;
mod scratch;
mod streaming;
#[cfg(test)]
mod tests;

pub use crate::config::{BucketSum, GpuMsmConfig, Sort};
pub use crate::plan::{plan_windows, ScratchShape, WindowPlan};
pub use curve::{GpuCurve, G1, G2};
pub use inputs::{DeviceCompact, DeviceDensity, DeviceScalars, MsmScalars};
pub use instance::GpuMsm;
pub use precomputed::PrecomputedBases;
pub use streaming::BatchScalars;
