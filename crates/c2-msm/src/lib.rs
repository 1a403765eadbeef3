//! Multi-scalar multiplication (MSM) over BLS12-381, the stage that dominates
//! Groth16 proving.
//!
//! The [`Msm`] trait is the host-level stage boundary: bases and scalars in,
//! one point out, with an optional [`Density`] mask. [`CpuMsm`] runs blst's
//! Pippenger and is the oracle every other implementation is tested against.
//!
//! ```
//! use c2_msm::{CpuMsm, Msm};
//! use group::{prime::PrimeCurveAffine, Group};
//! let bases = vec![blstrs::G1Affine::generator(); 3];
//! let scalars = vec![blstrs::Scalar::from(2u64); 3];
//! let sum = CpuMsm::default().msm_g1(&bases, &scalars, None).unwrap();
//! assert_eq!(sum, blstrs::G1Projective::generator() * blstrs::Scalar::from(6u64));
//! ```
#![deny(missing_docs)]

mod config;
mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod plan;

/// The mask type of every query (shared with synthesis through `c2-core`).
pub use c2_core::Density;
pub use config::{measured_accumulate_blocks, BucketSum, GpuMsmConfig, Sort};
pub use cpu::{naive_msm, CpuMsm};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

/// Errors of the MSM stage.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum MsmError {
    /// The density mask and the scalar vector disagree in length.
    #[error("{query}: density mask has {mask} bits but there are {scalars} scalars")]
    MaskLength {
        /// Which query (for messages), e.g. "A aux".
        query: &'static str,
        /// Bits in the mask.
        mask: usize,
        /// Scalars given.
        scalars: usize,
    },
    /// Fewer bases than the scalars (or set mask bits) need.
    #[error("{query}: {needed} bases needed but only {available} available")]
    TooFewBases {
        /// Which query.
        query: &'static str,
        /// Bases needed.
        needed: usize,
        /// Bases given.
        available: usize,
    },
    /// The device failed (out of memory, a driver error, no device): the
    /// runtime's typed error, so callers can match on it
    /// ([`c2_cuda::GpuError::is_out_of_memory`]).
    #[error(transparent)]
    Gpu(#[from] c2_cuda::GpuError),
    /// Precomputed copies of bases that cannot be built: a window width
    /// outside 2..=24, no copies or more than the scalar's windows, or more
    /// than 2^31 points in all (base words carry a sign bit).
    #[error("{copies} precomputed copies of {bases} bases for {c}-bit windows: {reason}")]
    BadCopies {
        /// Window width asked for.
        c: u32,
        /// Copies asked for.
        copies: u32,
        /// Bases per copy.
        bases: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Any other backend failure (an invalid request to a GPU kernel, an
    /// injected fault), with its message.
    #[error("{backend} MSM backend failed: {message}")]
    Backend {
        /// The backend's name.
        backend: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// A multi-scalar multiplication backend: computes `sum_i scalars[i] * bases[j(i)]`
/// where, without a mask, `j(i) = i`, and with a mask only scalars whose bit is
/// set take part and the `k`-th of them meets `bases[k]`.
///
/// Extra bases beyond those needed are ignored (Groth16 parameter vectors are
/// shared by the input and aux parts of a query and sliced by the caller).
pub trait Msm: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// MSM in G1.
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G1Projective, MsmError>;

    /// MSM in G2.
    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Scalar], mask: Option<&Density>) -> Result<G2Projective, MsmError>;
}

/// What a shape check needs of a density mask, on the host ([`Density`])
/// or on the device (`gpu::DeviceDensity`).
pub trait MaskShape {
    /// Bits in the mask (one per scalar).
    fn bits(&self) -> usize;
    /// Set bits (one per base used).
    fn ones(&self) -> usize;
}

impl MaskShape for Density {
    fn bits(&self) -> usize {
        self.len()
    }
    fn ones(&self) -> usize {
        self.count_ones()
    }
}

/// Checks a request's shape and returns how many bases it needs: the one
/// shape check of every MSM implementation.
pub fn check_shape<M: MaskShape>(
    query: &'static str,
    bases: usize,
    scalars: usize,
    mask: Option<&M>,
) -> Result<usize, MsmError> {
    let needed = match mask {
        Some(m) if m.bits() != scalars => return Err(MsmError::MaskLength { query, mask: m.bits(), scalars }),
        Some(m) => m.ones(),
        None => scalars,
    };
    if bases < needed {
        return Err(MsmError::TooFewBases { query, needed, available: bases });
    }
    Ok(needed)
}
