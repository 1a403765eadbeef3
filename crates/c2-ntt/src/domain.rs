//! A radix-2 evaluation domain with in-place transforms.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::{NttError, MAX_LOG_SIZE};

/// Work below this many butterflies per stage runs on one thread: the rayon
/// split costs more than it saves.
const PAR_THRESHOLD: usize = 1 << 12;

/// A multiplicative subgroup of size `2^log_n` of the scalar field, with the
/// twiddle table for its transforms.
///
/// The generator is `ROOT_OF_UNITY^(2^(S − log_n))` and the coset shift is the
/// field's multiplicative generator (7), as in bellperson and filecoin-proofs.
#[derive(Clone, Debug)]
pub struct Domain {
    log_n: u32,
    omega: Scalar,
    n_inv: Scalar,
    /// `omega^j` for `j < n/2`.
    twiddles: Vec<Scalar>,
}

impl Domain {
    /// The domain of size `2^log_n`.
    pub fn new(log_n: u32) -> Result<Self, NttError> {
        if log_n > MAX_LOG_SIZE {
            return Err(NttError::DomainTooLarge { log_n, max: MAX_LOG_SIZE });
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let n = 1usize << log_n;
        let half = n / 2;
        let mut twiddles = vec![Scalar::ONE; half];
        // Fill in parallel chunks, each starting from its own power.
        const CHUNK: usize = 1 << 14;
        twiddles.par_chunks_mut(CHUNK).enumerate().for_each(|(ci, chunk)| {
            let mut w = omega.pow_vartime([(ci * CHUNK) as u64]);
            for t in chunk {
                *t = w;
                w *= omega;
            }
        });
        let n_inv = Scalar::from(n as u64).invert().unwrap();
        Ok(Self { log_n, omega, n_inv, twiddles })
    }

    /// The smallest domain holding `len` points, exactly as bellperson's
    /// `EvaluationDomain::from_coeffs` chooses it (which refuses `log_n >= S`).
    pub fn for_len(len: usize) -> Result<Self, NttError> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        if log_n >= Scalar::S {
            return Err(NttError::DomainTooLarge { log_n, max: Scalar::S - 1 });
        }
        Self::new(log_n)
    }

    /// Number of points, `2^log_n`.
    pub fn size(&self) -> usize {
        1 << self.log_n
    }

    /// log2 of the size.
    pub fn log_size(&self) -> u32 {
        self.log_n
    }

    /// The generator of the domain.
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// Forward transform: coefficients to evaluations at `omega^i`.
    /// Panics if `v.len() != self.size()` (a programming error, not input).
    pub fn fft(&self, v: &mut [Scalar]) {
        assert_eq!(v.len(), self.size(), "vector length must equal the domain size");
        bit_reverse(v, self.log_n);
        for s in 1..=self.log_n {
            self.stage(v, s);
        }
    }

    /// Inverse transform: evaluations to coefficients.
    pub fn ifft(&self, v: &mut [Scalar]) {
        // ifft(v) = fft(v) with outputs 1..n reversed, scaled by 1/n: saves a
        // second twiddle table (2 GB at 2^27).
        self.fft(v);
        v[1..].reverse();
        let n_inv = self.n_inv;
        v.par_iter_mut().with_min_len(PAR_THRESHOLD).for_each(|x| *x *= n_inv);
    }

    /// Evaluations on the coset `g·<omega>` (g = multiplicative generator).
    pub fn coset_fft(&self, v: &mut [Scalar]) {
        distribute_powers(v, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft(v);
    }

    /// Inverse of [`Domain::coset_fft`].
    pub fn icoset_fft(&self, v: &mut [Scalar]) {
        self.ifft(v);
        distribute_powers(v, Scalar::MULTIPLICATIVE_GENERATOR.invert().unwrap());
    }

    /// `1 / Z(g)` where `Z(x) = x^n − 1` vanishes on the domain and `g` is the
    /// coset shift: dividing by Z on the coset is a multiplication by this.
    pub fn z_on_coset_inverse(&self) -> Scalar {
        let z = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size() as u64]) - Scalar::ONE;
        z.invert().unwrap()
    }

    /// One radix-2 stage: blocks of `2^s` with butterflies `2^(s−1)` apart.
    fn stage(&self, v: &mut [Scalar], s: u32) {
        let m = 1usize << s;
        let half = m / 2;
        let stride = self.size() / m;
        let tw = &self.twiddles;
        let butterfly = |lo: &mut [Scalar], hi: &mut [Scalar], j0: usize| {
            for (j, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = *y * tw[(j0 + j) * stride];
                *y = *x - t;
                *x += t;
            }
        };
        let blocks = v.len() / m;
        if blocks >= 64 || v.len() < PAR_THRESHOLD {
            // Many small blocks: one task per group of blocks.
            v.par_chunks_mut(m).with_min_len((PAR_THRESHOLD / m).max(1)).for_each(|block| {
                let (lo, hi) = block.split_at_mut(half);
                butterfly(lo, hi, 0);
            });
        } else {
            // Few large blocks: split each block's butterflies across tasks.
            const SPLIT: usize = 1 << 10;
            for block in v.chunks_mut(m) {
                let (lo, hi) = block.split_at_mut(half);
                lo.par_chunks_mut(SPLIT)
                    .zip(hi.par_chunks_mut(SPLIT))
                    .enumerate()
                    .for_each(|(ci, (l, h))| butterfly(l, h, ci * SPLIT));
            }
        }
    }
}

/// `v[i] *= g^i`.
fn distribute_powers(v: &mut [Scalar], g: Scalar) {
    const CHUNK: usize = 1 << 12;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(ci, chunk)| {
        let mut u = g.pow_vartime([(ci * CHUNK) as u64]);
        for x in chunk {
            *x *= u;
            u *= g;
        }
    });
}

/// In-place bit-reversal permutation of `2^log_n` elements.
fn bit_reverse(v: &mut [Scalar], log_n: u32) {
    if log_n == 0 {
        return;
    }
    let shift = usize::BITS - log_n;
    for i in 0..v.len() {
        let r = i.reverse_bits() >> shift;
        if i < r {
            v.swap(i, r);
        }
    }
}
