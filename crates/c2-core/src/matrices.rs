//! Borrowed views of a circuit shape's constraint matrices A, B, C in CSR
//! form over z = (inputs, aux): recorded by synthesis (`c2-synth`), read by
//! the a, b, c stage (`c2-abc`).

use blstrs::Scalar;

/// One constraint matrix in CSR form, borrowed.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a> {
    /// Row r's entries are `row_starts[r]..row_starts[r + 1]`; `rows + 1`
    /// values, the first 0.
    pub row_starts: &'a [u64],
    /// Column of each entry in z = (inputs, aux).
    pub cols: &'a [u32],
    /// Index of each entry's coefficient in [`MatricesView::coeffs`].
    pub coeff_index: &'a [u32],
}

impl CsrView<'_> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.row_starts.len().saturating_sub(1)
    }

    /// Entries.
    pub fn entries(&self) -> usize {
        self.cols.len()
    }
}

/// A circuit shape's A, B, C over z = (inputs, aux), borrowed.
#[derive(Clone, Copy, Debug)]
pub struct MatricesView<'a> {
    /// Public inputs (ONE included): z's first part.
    pub inputs: usize,
    /// Aux variables: z's second part.
    pub aux: usize,
    /// The distinct coefficients the entries index.
    pub coeffs: &'a [Scalar],
    /// A.
    pub a: CsrView<'a>,
    /// B.
    pub b: CsrView<'a>,
    /// C.
    pub c: CsrView<'a>,
}

impl MatricesView<'_> {
    /// Constraints (rows of each matrix).
    pub fn constraints(&self) -> usize {
        self.a.rows()
    }
}
