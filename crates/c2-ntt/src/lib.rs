//! Number-theoretic transforms over the BLS12-381 scalar field and the Groth16
//! quotient polynomial `H = (A·B − C) / Z`.
//!
//! [`Domain`] is a radix-2 evaluation domain with in-place forward, inverse and
//! coset transforms; [`Ntt`] is the stage boundary the prover calls
//! ([`Ntt::compute_h`]); [`CpuNtt`] is the CPU implementation and the oracle
//! for every other one. Results are bit-identical to bellperson's
//! `EvaluationDomain` (same roots of unity, same coset generator).
//!
//! ```
//! use c2_ntt::Domain;
//! use ff::Field;
//! let d = Domain::new(3).unwrap();
//! let mut v: Vec<blstrs::Scalar> = (0..8u64).map(blstrs::Scalar::from).collect();
//! let orig = v.clone();
//! d.fft(&mut v);
//! d.ifft(&mut v);
//! assert_eq!(v, orig);
//! ```
#![deny(missing_docs)]

mod domain;
#[cfg(feature = "cuda")]
mod gpu;

pub use domain::Domain;
#[cfg(feature = "cuda")]
pub use gpu::{GpuNtt, NttKind};

use blstrs::Scalar;
use ff::{Field, PrimeField};

/// Errors of the NTT stage.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum NttError {
    /// The requested transform is larger than the field's 2-adicity allows.
    #[error("NTT of 2^{log_n} points requested; the BLS12-381 scalar field supports at most 2^{max}")]
    DomainTooLarge {
        /// Requested log2 size.
        log_n: u32,
        /// Largest supported log2 size.
        max: u32,
    },
    /// a, b and c must have the same length.
    #[error("a, b, c have lengths {a}, {b}, {c}; they must be equal")]
    LengthMismatch {
        /// len(a)
        a: usize,
        /// len(b)
        b: usize,
        /// len(c)
        c: usize,
    },
    /// The device failed (out of memory, a driver error, no device): the
    /// runtime's typed error, so callers can match on it
    /// ([`c2_cuda::GpuError::is_out_of_memory`]).
    #[error(transparent)]
    Gpu(#[from] c2_cuda::GpuError),
    /// Any other backend failure (an invalid request to a GPU kernel, an
    /// injected fault), with its message.
    #[error("{backend} NTT backend failed: {message}")]
    Backend {
        /// The backend's name.
        backend: &'static str,
        /// What went wrong.
        message: String,
    },
}

/// The H-polynomial stage of a Groth16 prover.
pub trait Ntt: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// Computes the coefficients of `H = (A·B − C) / Z` from the evaluations
    /// of A, B and C at the constraint points (one value per constraint, as
    /// synthesis produces them). The domain is the smallest power of two
    /// `m >= len`; the result has `m − 1` coefficients, exactly what
    /// bellperson's prover feeds to the H multi-exponentiation.
    fn compute_h(&self, a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> Result<Vec<Scalar>, NttError>;
}

/// The CPU implementation (rayon); the reference for other backends.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuNtt;

impl Ntt for CpuNtt {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn compute_h(&self, mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>) -> Result<Vec<Scalar>, NttError> {
        if a.len() != b.len() || a.len() != c.len() {
            return Err(NttError::LengthMismatch { a: a.len(), b: b.len(), c: c.len() });
        }
        let domain = Domain::for_len(a.len())?;
        let m = domain.size();
        for v in [&mut a, &mut b, &mut c] {
            v.resize(m, Scalar::ZERO);
        }
        // The three polynomials are independent: transform them concurrently.
        let to_coset = |v: &mut Vec<Scalar>| {
            domain.ifft(v);
            domain.coset_fft(v);
        };
        rayon::join(|| to_coset(&mut a), || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)));
        pointwise_quotient(&mut a, &b, &c, domain.z_on_coset_inverse());
        drop(b);
        drop(c);
        domain.icoset_fft(&mut a);
        a.truncate(m - 1);
        Ok(a)
    }
}

/// `a[i] = (a[i]·b[i] − c[i]) · zinv`, the pointwise step of `compute_h`.
fn pointwise_quotient(a: &mut [Scalar], b: &[Scalar], c: &[Scalar], zinv: Scalar) {
    use rayon::prelude::*;
    a.par_iter_mut().zip(b.par_iter()).zip(c.par_iter()).for_each(|((a, b), c)| {
        *a = (*a * b - c) * zinv;
    });
}

/// The largest supported transform, log2 (the field's 2-adicity, 32).
pub const MAX_LOG_SIZE: u32 = Scalar::S;

/// Device bytes of the GPU NTT's tables for a `2^log_n` domain, kept per
/// domain size for the instance's lifetime: the twiddles (n/2 scalars,
/// 2 GiB at 2^27) and four power tables (2^12 + n/2^12 scalars each), every
/// buffer rounded up to the 256-byte allocation unit.
pub fn table_bytes(log_n: u32) -> usize {
    let n = 1usize << log_n.min(MAX_LOG_SIZE);
    let scalar = std::mem::size_of::<Scalar>();
    let round = |len: usize| (len.max(1) * scalar).next_multiple_of(256);
    let power = round(n.min(1 << 12)) + round(n.div_ceil(1 << 12));
    round(n / 2) + 4 * power + round(1)
}

#[cfg(test)]
mod tests;
