//! Test and benchmark tooling for porep-c2, kept out of the production
//! library (unpublished): the examples, the integration tests, the benches
//! and the device runner use it; no library crate does.
//!
//! - [`demo`]: a tiny StackedDrg sector that proves in seconds, the
//!   registered seal flow (PC1, PC2, C1) for real C1 outputs, and random
//!   Groth16 parameters written under filecoin-proofs' file names.
//! - [`synthetic`]: partitions of the 32 GiB circuit's shape with the
//!   measured witness mix and random parameters, for timing (their proofs
//!   do not verify). The shapes themselves are in `c2-shapes`, a lighter
//!   crate that the peer provers' benchmark uses without our prover.
//! - [`setup`]: Groth16 test parameters from recorded constraint matrices,
//!   bellperson's bytes for the same seed, several times faster (what
//!   [`demo::ensure_parameters`] uses).
//! - [`cli`]: the argument helpers the examples share.
//! - `curve_check` (feature `cuda`): the GPU curve formulas against blstrs,
//!   through the self-test kernel module (c2-cuda's `selftest` feature), so
//!   production binaries do not carry those kernels.
//! - `field_check` (feature `cuda`): both GPU field backends (ec-gpu-gen,
//!   sppark) against blstrs / blst, and their throughput side by side.
#![deny(missing_docs)]

pub mod cli;
#[cfg(feature = "cuda")]
pub mod curve_check;
pub mod demo;
#[cfg(feature = "cuda")]
pub mod field_check;
pub mod setup;
pub mod synthetic;

pub use c2_shapes::median;
