//! The constraint matrices cut into row chunks for streaming: a device too
//! small to keep a shape's matrices resident (7.34 GB at 32 GiB) receives
//! them chunk by chunk through two slots while the previous chunk's rows
//! are computed, instead of having a, b, c computed on the host and staged
//! (12.5 GB of vectors per 32 GiB partition plus ~2.5 s of host work,
//! measured on the H200 at a 16 GiB cap, BENCHMARKS.md session 12).
//!
//! Each chunk is one contiguous run of `u32` words, so one DMA brings it
//! over: the chunk's row starts rebased to its first entry (`rows + 1`
//! words), its columns, its coefficient indices, then its rows longer than
//! the row kernel's [`LONG_ROW`] (chunk-local indices, summed one warp
//! each on the device). The whole set is one shared vector, page-locked
//! once per process by the GPU path. [`ChunkedMatrices::product`] computes
//! from this layout on the CPU: the oracle the streamed GPU product is
//! tested against, itself tested against [`crate::product`].

use std::sync::Arc;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::{validate, AbcError, CsrView, MatricesView};

/// Rows longer than this many entries are listed per chunk (the GPU sums
/// them one warp each; `abc::LONG_ROW` in `cuda-kernels/abc/sparse.cuh`).
pub const LONG_ROW: u64 = 32;

/// One chunk of one matrix: rows `row0 .. row0 + rows`, laid out from word
/// `offset` of [`ChunkedMatrices::data`] as row starts (`rows + 1`, the
/// first 0), columns and coefficient indices (`entries` each), long rows
/// (`long_rows`, chunk-local).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixChunk {
    /// First row.
    pub row0: usize,
    /// Rows.
    pub rows: usize,
    /// Entries of those rows.
    pub entries: usize,
    /// Rows longer than [`LONG_ROW`] entries.
    pub long_rows: usize,
    /// Word offset of the chunk in the shared vector.
    pub offset: usize,
}

impl MatrixChunk {
    /// Words of the chunk.
    pub fn words(&self) -> usize {
        self.rows + 1 + 2 * self.entries + self.long_rows
    }

    /// Word offsets (within the chunk) of its columns, coefficient indices
    /// and long rows.
    pub fn sections(&self) -> (usize, usize, usize) {
        let cols = self.rows + 1;
        (cols, cols + self.entries, cols + 2 * self.entries)
    }
}

/// A shape's A, B, C in row chunks of at most [`ChunkedMatrices::slot_words`]
/// words each, in one shared vector (see the module's documentation).
#[derive(Debug)]
pub struct ChunkedMatrices {
    inputs: usize,
    aux: usize,
    rows: usize,
    coeffs: Vec<Scalar>,
    one_index: u32,
    chunks: [Vec<MatrixChunk>; 3],
    slot_words: usize,
    data: Arc<Vec<u32>>,
}

/// The most words a chunk of `rows` rows and `entries` entries can take
/// (every long row listed takes more than [`LONG_ROW`] entries).
fn words_bound(rows: usize, entries: usize) -> usize {
    rows + 1 + 2 * entries + entries / (LONG_ROW as usize + 1)
}

/// Cuts one matrix into row ranges of at most `max_words` words each (a
/// row longer than that forms a range of its own).
fn cut(m: &CsrView<'_>, max_words: usize) -> Vec<(usize, usize)> {
    let starts = m.row_starts;
    let rows = m.rows();
    let mut ranges = Vec::new();
    let mut r0 = 0;
    while r0 < rows {
        // The largest r1 whose rows r0..r1 fit (at least one row: a row
        // longer than the bound still forms a chunk of its own).
        let fits = |r1: usize| words_bound(r1 - r0, (starts[r1] - starts[r0]) as usize) <= max_words;
        let (mut lo, mut hi) = (r0 + 1, rows);
        if fits(hi) {
            lo = hi;
        } else {
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
        }
        ranges.push((r0, lo));
        r0 = lo;
    }
    ranges
}

impl ChunkedMatrices {
    /// `view` (validated first) cut into chunks of at most `max_words`
    /// words each (a single row longer than that gets a chunk of its own,
    /// so [`ChunkedMatrices::slot_words`] may be larger).
    pub fn new(view: &MatricesView<'_>, max_words: usize) -> Result<Self, AbcError> {
        validate(view)?;
        let max_words = max_words.max(8);
        let mats = [&view.a, &view.b, &view.c];
        for (name, m) in ["A", "B", "C"].iter().zip(mats) {
            if m.entries() > u32::MAX as usize {
                return Err(AbcError::Malformed(format!("{name}: {} entries, more than 2^32", m.entries())));
            }
        }
        // Chunk boundaries, then each chunk's long rows, then offsets.
        let mut chunks: [Vec<MatrixChunk>; 3] = Default::default();
        let mut offset = 0;
        for (which, m) in mats.iter().enumerate() {
            let ranges = cut(m, max_words);
            let longs: Vec<usize> = ranges
                .par_iter()
                .map(|&(r0, r1)| (r0..r1).filter(|&r| m.row_starts[r + 1] - m.row_starts[r] > LONG_ROW).count())
                .collect();
            for (&(r0, r1), &long_rows) in ranges.iter().zip(&longs) {
                let entries = (m.row_starts[r1] - m.row_starts[r0]) as usize;
                let c = MatrixChunk { row0: r0, rows: r1 - r0, entries, long_rows, offset };
                offset += c.words();
                chunks[which].push(c);
            }
        }
        // Fill every chunk in parallel, each its own slice of the vector.
        let mut data = vec![0u32; offset];
        let mut slices = Vec::new();
        let mut rest = data.as_mut_slice();
        for (which, list) in chunks.iter().enumerate() {
            for c in list {
                let (head, tail) = rest.split_at_mut(c.words());
                slices.push((mats[which], *c, head));
                rest = tail;
            }
        }
        slices.into_par_iter().for_each(|(m, c, out)| {
            let (cols, coeff_index, long) = c.sections();
            let base = m.row_starts[c.row0];
            let (e0, e1) = (base as usize, base as usize + c.entries);
            for (i, w) in out[..=c.rows].iter_mut().enumerate() {
                *w = (m.row_starts[c.row0 + i] - base) as u32;
            }
            out[cols..coeff_index].copy_from_slice(&m.cols[e0..e1]);
            out[coeff_index..long].copy_from_slice(&m.coeff_index[e0..e1]);
            let mut k = long;
            for r in 0..c.rows {
                if m.row_starts[c.row0 + r + 1] - m.row_starts[c.row0 + r] > LONG_ROW {
                    out[k] = r as u32;
                    k += 1;
                }
            }
        });
        let slot_words = chunks.iter().flatten().map(MatrixChunk::words).max().unwrap_or(0);
        let one_index = view.coeffs.iter().position(|c| *c == Scalar::ONE).map_or(u32::MAX, |i| i as u32);
        Ok(Self {
            inputs: view.inputs,
            aux: view.aux,
            rows: view.a.rows(),
            coeffs: view.coeffs.to_vec(),
            one_index,
            chunks,
            slot_words,
            data: Arc::new(data),
        })
    }

    /// (inputs, aux) of the witness this shape takes.
    pub fn witness_shape(&self) -> (usize, usize) {
        (self.inputs, self.aux)
    }

    /// Constraints (rows of each matrix).
    pub fn constraints(&self) -> usize {
        self.rows
    }

    /// The coefficient table.
    pub fn coeffs(&self) -> &[Scalar] {
        &self.coeffs
    }

    /// Index of the coefficient ONE in the table (`u32::MAX`: none).
    pub fn one_index(&self) -> u32 {
        self.one_index
    }

    /// The chunks of matrix `which` (0 = A, 1 = B, 2 = C), in row order.
    pub fn chunks(&self, which: usize) -> &[MatrixChunk] {
        self.chunks.get(which).map_or(&[], |c| c.as_slice())
    }

    /// Words of the largest chunk: what one device slot must hold.
    pub fn slot_words(&self) -> usize {
        self.slot_words
    }

    /// Every chunk, in one shared vector (page-locked once by the GPU path).
    pub fn data(&self) -> &Arc<Vec<u32>> {
        &self.data
    }

    /// The words of one chunk.
    pub fn chunk_words(&self, c: &MatrixChunk) -> &[u32] {
        &self.data[c.offset..c.offset + c.words()]
    }

    /// Host bytes of the chunks.
    pub fn bytes(&self) -> usize {
        4 * self.data.len()
    }

    /// M·z for matrix `which` on the CPU, read from the chunks exactly as
    /// the device reads them (the oracle of the streamed GPU product): one
    /// value per constraint. The witness shape is checked.
    pub fn product(&self, which: usize, inputs: &[Scalar], aux: &[Scalar]) -> Result<Vec<Scalar>, AbcError> {
        crate::witness_fits((self.inputs, self.aux), inputs.len(), aux.len())?;
        if which >= 3 {
            return Err(AbcError::Malformed(format!("matrix {which} of 3")));
        }
        let z = |col: u32| crate::z_at(inputs, aux, col);
        let mut out = vec![Scalar::ZERO; self.rows];
        for c in self.chunks(which) {
            let w = self.chunk_words(c);
            let (cols, coeff_index, _) = c.sections();
            out[c.row0..c.row0 + c.rows].par_iter_mut().enumerate().for_each(|(r, o)| {
                let mut acc = Scalar::ZERO;
                for k in w[r] as usize..w[r + 1] as usize {
                    let (col, ci) = (w[cols + k], w[coeff_index + k]);
                    let v = z(col);
                    acc += if ci == self.one_index { v } else { v * self.coeffs[ci as usize] };
                }
                *o = acc;
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::random_csr;
    use rand::SeedableRng;

    fn view(m: &(Vec<u64>, Vec<u32>, Vec<u32>)) -> CsrView<'_> {
        CsrView { row_starts: &m.0, cols: &m.1, coeff_index: &m.2 }
    }

    /// A matrix with long rows (33 and 200 entries), an empty row, and
    /// random short rows.
    fn with_long_rows(rows: usize, width: u32, coeffs: u32, seed: u64) -> (Vec<u64>, Vec<u32>, Vec<u32>) {
        let (mut starts, mut cols, mut idx) = random_csr(rows, width, coeffs, seed);
        for (len, s) in [(33usize, 1u32), (0, 2), (200, 3), (32, 4)] {
            for k in 0..len as u32 {
                cols.push((k * 7 + s) % width);
                idx.push((k + s) % coeffs);
            }
            starts.push(cols.len() as u64);
        }
        (starts, cols, idx)
    }

    /// Chunked products == the CSR products for chunks of every size from
    /// one row each to the whole matrix; every row and entry lands in
    /// exactly one chunk; long rows are listed where they are.
    #[test]
    fn chunked_products_equal_the_csr_product_at_every_chunk_size() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let coeffs = vec![Scalar::ONE, Scalar::ZERO, -Scalar::ONE, Scalar::from(2u64), Scalar::random(&mut rng)];
        let (inputs, aux) = (3usize, 300usize);
        let z: Vec<Scalar> = (0..inputs + aux).map(|_| Scalar::random(&mut rng)).collect();
        let width = (inputs + aux) as u32;
        let m = [with_long_rows(400, width, 5, 1), random_csr(404, width, 5, 2), with_long_rows(400, width, 5, 3)];
        let mv = MatricesView { inputs, aux, coeffs: &coeffs, a: view(&m[0]), b: view(&m[1]), c: view(&m[2]) };
        for max_words in [1usize, 8, 50, 97, 1000, 1 << 20] {
            let ch = ChunkedMatrices::new(&mv, max_words).unwrap();
            assert_eq!(ch.constraints(), 404);
            for (which, csr) in [&mv.a, &mv.b, &mv.c].into_iter().enumerate() {
                let want = crate::product(csr, &coeffs, &z[..inputs], &z[inputs..]);
                assert_eq!(ch.product(which, &z[..inputs], &z[inputs..]).unwrap(), want, "{which}, {max_words}");
                let chunks = ch.chunks(which);
                assert_eq!(chunks.iter().map(|c| c.rows).sum::<usize>(), 404);
                assert_eq!(chunks.iter().map(|c| c.entries).sum::<usize>(), csr.entries());
                let long = (0..404).filter(|&r| csr.row_starts[r + 1] - csr.row_starts[r] > LONG_ROW).count();
                assert_eq!(chunks.iter().map(|c| c.long_rows).sum::<usize>(), long);
                for c in chunks {
                    assert!(c.words() <= ch.slot_words());
                    // A chunk over the bound holds one row (longer than it).
                    assert!(c.words() <= max_words.max(8) || c.rows == 1, "{c:?} over {max_words}");
                    let w = ch.chunk_words(c);
                    let (_, _, l) = c.sections();
                    for &r in &w[l..] {
                        assert!(w[r as usize + 1] - w[r as usize] > LONG_ROW as u32);
                    }
                }
            }
        }
    }

    #[test]
    fn malformed_matrices_and_witnesses_are_refused() {
        let coeffs = [Scalar::ONE];
        let good = random_csr(10, 5, 1, 9);
        let mut bad = good.clone();
        bad.1[0] = 5;
        let mv = MatricesView { inputs: 1, aux: 4, coeffs: &coeffs, a: view(&good), b: view(&bad), c: view(&good) };
        assert!(matches!(ChunkedMatrices::new(&mv, 64), Err(AbcError::Malformed(_))));
        let mv = MatricesView { inputs: 1, aux: 4, coeffs: &coeffs, a: view(&good), b: view(&good), c: view(&good) };
        let ch = ChunkedMatrices::new(&mv, 64).unwrap();
        assert!(matches!(ch.product(0, &[Scalar::ONE], &[Scalar::ONE; 3]), Err(AbcError::WitnessShape { .. })));
        assert!(matches!(ch.product(3, &[Scalar::ONE], &[Scalar::ONE; 4]), Err(AbcError::Malformed(_))));
    }
}
