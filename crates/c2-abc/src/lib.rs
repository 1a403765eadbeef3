//! a, b, c = A·z, B·z, C·z: a partition's constraint evaluations from its
//! witness z = (inputs, aux) and the circuit shape's constraint matrices
//! (recorded once per shape by `c2-synth`), instead of evaluating every
//! linear combination during synthesis.
//!
//! The matrices come in as borrowed CSR views ([`MatricesView`]), so this
//! crate needs no synthesis types: the caller points the views at whatever
//! owns the rows. [`evaluate`] is the CPU implementation (rayon over rows)
//! and the oracle; with feature `cuda`, `GpuAbc` runs the same product on
//! the device, from matrices kept resident there (`DeviceMatrices`), with
//! bit-identical results. A device without room for the matrices gets them
//! streamed in row chunks ([`ChunkedMatrices`]; feature `cuda`:
//! `GpuAbc::stream_matrices`), same results.
//!
//! ```
//! use blstrs::Scalar;
//! use c2_abc::{evaluate, CsrView, MatricesView};
//! use ff::Field;
//! // One constraint (x · x = y) over z = (ONE, x, y): A = B = [x], C = [y].
//! let coeffs = [Scalar::ONE];
//! let row = |col: u32| (vec![0u64, 1], vec![col], vec![0u32]);
//! let (x_rows, y_rows) = (row(1), row(2));
//! fn view(m: &(Vec<u64>, Vec<u32>, Vec<u32>)) -> CsrView<'_> {
//!     CsrView { row_starts: &m.0, cols: &m.1, coeff_index: &m.2 }
//! }
//! let m = MatricesView { inputs: 1, aux: 2, coeffs: &coeffs, a: view(&x_rows), b: view(&x_rows), c: view(&y_rows) };
//! let three = Scalar::from(3u64);
//! let (a, b, c) = evaluate(&m, &[Scalar::ONE], &[three, three * three]).unwrap();
//! assert_eq!((a[0] * b[0], c[0]), (three * three, three * three));
//! ```
#![deny(missing_docs)]

mod chunked;
#[cfg(feature = "cuda")]
mod gpu;
mod repeat;

pub use chunked::{ChunkedMatrices, MatrixChunk, LONG_ROW};
#[cfg(feature = "cuda")]
pub use gpu::{AbcStream, DeviceMatrices, GpuAbc, PinnedChunks};
pub use repeat::{find_repeat, CompactCsr, RepeatedMatrices, RowRepeat};

use blstrs::Scalar;
pub use c2_core::{CompactWitness, CsrView, MatricesView};
use ff::Field;
use rayon::prelude::*;

/// a, b, c: one value per constraint each.
pub type Abc = (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>);

/// Errors of the a, b, c stage: malformed matrices, a witness of another
/// shape, or the device.
#[derive(Debug, thiserror::Error)]
pub enum AbcError {
    /// The matrices are inconsistent (row starts, entry or coefficient
    /// indices out of range): never evaluated, on any backend.
    #[error("constraint matrices: {0}")]
    Malformed(String),
    /// The witness does not have the matrices' inputs and aux.
    #[error("witness of {inputs} inputs and {aux} aux; the matrices take {want_inputs} and {want_aux}")]
    WitnessShape {
        /// Inputs given.
        inputs: usize,
        /// Aux given.
        aux: usize,
        /// Inputs the matrices take.
        want_inputs: usize,
        /// Aux the matrices take.
        want_aux: usize,
    },
    /// The device failed (out of memory, a driver error, no device).
    #[error(transparent)]
    Gpu(#[from] c2_cuda::GpuError),
}

/// Checks what every backend relies on: A, B, C have the same rows; row
/// starts begin at 0, never decrease and end at the entry count; every
/// column is in z and every coefficient index in the table. One pass over
/// the entries (in parallel), so a corrupt matrix is refused before any
/// kernel reads it.
pub fn validate(m: &MatricesView<'_>) -> Result<(), AbcError> {
    let bad = |w: String| Err(AbcError::Malformed(w));
    let rows = m.a.rows();
    let width = (m.inputs + m.aux) as u64;
    for (name, x) in [("A", &m.a), ("B", &m.b), ("C", &m.c)] {
        if x.rows() != rows {
            return bad(format!("{name} has {} rows, A {rows}", x.rows()));
        }
        if x.cols.len() != x.coeff_index.len() {
            return bad(format!("{name}: {} columns, {} coefficient indices", x.cols.len(), x.coeff_index.len()));
        }
        if x.row_starts.first() != Some(&0) || x.row_starts.last() != Some(&(x.cols.len() as u64)) {
            return bad(format!("{name}: row starts do not span the {} entries", x.cols.len()));
        }
        if x.row_starts.par_windows(2).any(|w| w[1] < w[0]) {
            return bad(format!("{name}: row starts decrease"));
        }
        if let Some(c) = x.cols.par_iter().find_any(|&&c| c as u64 >= width) {
            return bad(format!("{name}: column {c} outside z ({width} values)"));
        }
        let n = m.coeffs.len();
        if let Some(i) = x.coeff_index.par_iter().find_any(|&&i| i as usize >= n) {
            return bad(format!("{name}: coefficient index {i} outside the table of {n}"));
        }
    }
    Ok(())
}

/// Checks that a witness of `inputs` and `aux` values fits `m`.
pub fn check_witness(m: &MatricesView<'_>, inputs: usize, aux: usize) -> Result<(), AbcError> {
    witness_fits((m.inputs, m.aux), inputs, aux)
}

/// `Err(WitnessShape)` unless `inputs` and `aux` values are what a shape
/// of `want` (inputs, aux) takes.
pub(crate) fn witness_fits(want: (usize, usize), inputs: usize, aux: usize) -> Result<(), AbcError> {
    if (inputs, aux) != want {
        return Err(AbcError::WitnessShape { inputs, aux, want_inputs: want.0, want_aux: want.1 });
    }
    Ok(())
}

/// z[col] for z = (inputs, aux).
pub(crate) fn z_at(inputs: &[Scalar], aux: &[Scalar], col: u32) -> Scalar {
    let col = col as usize;
    if col < inputs.len() {
        inputs[col]
    } else {
        aux[col - inputs.len()]
    }
}

/// A·z for one matrix, in parallel over rows (the oracle: what the GPU
/// kernel computes, entry for entry in the same order).
pub fn product(m: &CsrView<'_>, coeffs: &[Scalar], inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
    let z = |col: u32| z_at(inputs, aux, col);
    (0..m.rows())
        .into_par_iter()
        .map(|r| {
            let (s, e) = (m.row_starts[r] as usize, m.row_starts[r + 1] as usize);
            let mut acc = Scalar::ZERO;
            for k in s..e {
                let c = coeffs[m.coeff_index[k] as usize];
                let v = z(m.cols[k]);
                acc += if c == Scalar::ONE { v } else { v * c };
            }
            acc
        })
        .collect()
}

/// a, b, c = A·z, B·z, C·z on the CPU, after [`validate`] and
/// [`check_witness`].
pub fn evaluate(m: &MatricesView<'_>, inputs: &[Scalar], aux: &[Scalar]) -> Result<Abc, AbcError> {
    validate(m)?;
    check_witness(m, inputs.len(), aux.len())?;
    Ok((
        product(&m.a, m.coeffs, inputs, aux),
        product(&m.b, m.coeffs, inputs, aux),
        product(&m.c, m.coeffs, inputs, aux),
    ))
}

/// The satisfaction check on the CPU: the smallest `i < n` with
/// `a_i · b_i ≠ c_i` (`None`: every constraint holds), where `n` is the
/// shortest of the three (padding beyond the constraints is not checked).
/// The oracle for the GPU check (`GpuAbc::first_unsatisfied`, feature `cuda`).
pub fn first_unsatisfied(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Option<usize> {
    let n = a.len().min(b.len()).min(c.len());
    (0..n).into_par_iter().find_first(|&i| a[i] * b[i] != c[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A random CSR matrix: rows of 0-4 entries, columns anywhere in z.
    pub(crate) fn random_csr(rows: usize, width: u32, coeffs: u32, seed: u64) -> (Vec<u64>, Vec<u32>, Vec<u32>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut starts, mut cols, mut idx) = (vec![0u64], Vec::new(), Vec::new());
        for _ in 0..rows {
            for _ in 0..rng.gen_range(0..5) {
                cols.push(rng.gen_range(0..width));
                idx.push(rng.gen_range(0..coeffs));
            }
            starts.push(cols.len() as u64);
        }
        (starts, cols, idx)
    }

    fn view(m: &(Vec<u64>, Vec<u32>, Vec<u32>)) -> CsrView<'_> {
        CsrView { row_starts: &m.0, cols: &m.1, coeff_index: &m.2 }
    }

    #[test]
    fn products_match_a_dense_evaluation() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let coeffs = vec![Scalar::ONE, Scalar::ZERO, -Scalar::ONE, Scalar::from(2u64), Scalar::random(&mut rng)];
        let (inputs, aux) = (3usize, 40usize);
        let z: Vec<Scalar> = (0..inputs + aux).map(|_| Scalar::random(&mut rng)).collect();
        let m = [random_csr(100, 43, 5, 1), random_csr(100, 43, 5, 2), random_csr(100, 43, 5, 3)];
        let mv = MatricesView { inputs, aux, coeffs: &coeffs, a: view(&m[0]), b: view(&m[1]), c: view(&m[2]) };
        let (a, b, c) = evaluate(&mv, &z[..inputs], &z[inputs..]).unwrap();
        for (got, mat) in [(&a, &m[0]), (&b, &m[1]), (&c, &m[2])] {
            for (r, (got, w)) in got.iter().zip(mat.0.windows(2)).enumerate() {
                let mut want = Scalar::ZERO;
                for k in w[0] as usize..w[1] as usize {
                    want += z[mat.1[k] as usize] * coeffs[mat.2[k] as usize];
                }
                assert_eq!(*got, want, "row {r}");
            }
        }
    }

    #[test]
    fn malformed_matrices_and_witnesses_are_refused() {
        let coeffs = [Scalar::ONE];
        let good = random_csr(10, 5, 1, 9);
        let mut bad_col = good.clone();
        bad_col.1[0] = 5;
        let mut bad_coeff = good.clone();
        bad_coeff.2[0] = 1;
        let mut bad_end = good.clone();
        bad_end.0.pop();
        bad_end.0.push(0);
        let mut short = good.clone();
        short.0.truncate(5);
        *short.0.last_mut().unwrap() = good.0[4];
        short.1.truncate(good.0[4] as usize);
        short.2.truncate(good.0[4] as usize);
        for m in [&bad_col, &bad_coeff, &bad_end, &short] {
            let mv = MatricesView { inputs: 1, aux: 4, coeffs: &coeffs, a: view(&good), b: view(m), c: view(&good) };
            assert!(matches!(evaluate(&mv, &[Scalar::ONE], &[Scalar::ONE; 4]), Err(AbcError::Malformed(_))));
        }
        let mv = MatricesView { inputs: 1, aux: 4, coeffs: &coeffs, a: view(&good), b: view(&good), c: view(&good) };
        assert!(evaluate(&mv, &[Scalar::ONE], &[Scalar::ONE; 4]).is_ok());
        assert!(matches!(evaluate(&mv, &[Scalar::ONE], &[Scalar::ONE; 3]), Err(AbcError::WitnessShape { .. })));
    }
}
