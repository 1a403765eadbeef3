//! Constraint matrices whose rows repeat: one block of rows kept, the
//! others read from it with their columns shifted.
//!
//! A StackedDrg partition is a shared prefix (replica id, commitments)
//! followed by one sub-circuit per challenge, all built by the same gadget
//! code: each challenge's rows are the first challenge's, with the columns
//! of the variables that challenge allocated moved by a fixed step (its
//! inputs by one step, its aux by another; columns of the prefix stay).
//! bellperson's `input · 0 = 0` rows close the matrices. So rows
//! `first_row .. first_row + blocks · block_rows` are `blocks` copies of
//! one block up to a column shift ([`RowRepeat`]), and the matrices can be
//! kept as the rows before, block 0 and the rows after
//! ([`RepeatedMatrices`]): about 1/18 of the 7.34 GB of a 32 GiB
//! partition's matrices (18 challenges), small enough to stay resident on
//! a 16 GiB card instead of crossing PCIe for every partition.
//!
//! [`find_repeat`] finds the longest such run from the matrices alone (no
//! knowledge of the circuit): a Z-function over the rows' lengths and
//! coefficients from the end of the body finds the period, then every
//! entry of every block is compared with block 0 shifted. A repeat is
//! only ever reported after that exhaustive comparison, so the compact
//! form gives the same a, b, c as the full matrices, entry for entry
//! ([`RepeatedMatrices::product`], tested against [`crate::product`]).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::{z_at, CsrView, MatricesView};

/// Rows that repeat one block with shifted columns: block `j` (rows
/// `first_row + j · block_rows ..`) is block 0 with every column `c`
/// replaced by [`RowRepeat::shift`]`(c, j)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowRepeat {
    /// First row of block 0.
    pub first_row: usize,
    /// Rows per block.
    pub block_rows: usize,
    /// Blocks (at least 2).
    pub blocks: usize,
    /// z's inputs (ONE included): columns below are inputs, the rest aux.
    pub inputs: u32,
    /// Input columns from here on (to `inputs`) move by `input_step` per
    /// block; those below stay.
    pub input_from: u32,
    /// The input columns' step per block.
    pub input_step: u32,
    /// Aux columns (z indices) from here on move by `aux_step` per block;
    /// those below stay.
    pub aux_from: u32,
    /// The aux columns' step per block.
    pub aux_step: u32,
}

impl RowRepeat {
    /// Block 0's column `col` in block `block` (for a repeat
    /// [`RepeatedMatrices::validate`] accepts, always a column of z).
    pub fn shift(&self, col: u32, block: u32) -> u32 {
        self.shift_wide(col, block) as u32
    }

    /// [`RowRepeat::shift`] without overflow, for checking candidates whose
    /// steps would leave `u32`.
    fn shift_wide(&self, col: u32, block: u32) -> u64 {
        let step = if col >= self.aux_from {
            self.aux_step
        } else if col >= self.input_from && col < self.inputs {
            self.input_step
        } else {
            0
        };
        u64::from(col) + u64::from(block) * u64::from(step)
    }

    /// One past the last repeated row.
    pub fn end_row(&self) -> usize {
        self.first_row + self.blocks * self.block_rows
    }
}

/// A key per row of the three matrices: lengths and coefficient indices
/// (what repeats exactly; columns shift), hashed to 64 bits.
fn row_keys(m: &MatricesView<'_>, rows: usize) -> Vec<u64> {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(K).rotate_left(29);
    (0..rows)
        .into_par_iter()
        .map(|r| {
            let mut h = 0u64;
            for x in [&m.a, &m.b, &m.c] {
                let (s, e) = (x.row_starts[r] as usize, x.row_starts[r + 1] as usize);
                h = mix(h, (e - s) as u64 + 1);
                for &i in &x.coeff_index[s..e] {
                    h = mix(h, u64::from(i));
                }
            }
            h
        })
        .collect()
}

/// The Z-function of `t`: `z[i]` is the length of the longest common prefix
/// of `t` and `t[i..]` (`z[0] = 0`). Linear time.
fn z_function(t: &[u64]) -> Vec<u32> {
    let n = t.len();
    let mut z = vec![0u32; n];
    let (mut l, mut r) = (0usize, 0usize);
    for i in 1..n {
        let mut k = if i < r { (z[i - l] as usize).min(r - i) } else { 0 };
        while i + k < n && t[k] == t[i + k] {
            k += 1;
        }
        z[i] = k as u32;
        if i + k > r {
            (l, r) = (i, i + k);
        }
    }
    z
}

/// The shift rule of one region (inputs or aux) from the column pairs of
/// block 0 and block 1 in that region: columns from some point on move by
/// one positive step, those below stay. `None` when the pairs fit no such
/// rule. Returns `(from, step)`; `from = end` when nothing moves.
fn region_rule(pairs: &[(u32, u32)], end: u32) -> Option<(u32, u32)> {
    let mut step = None;
    let mut from = end;
    let mut below = 0u32; // one past the largest column that stays
    for &(c0, c1) in pairs {
        if c1 < c0 {
            return None;
        }
        let d = c1 - c0;
        if d == 0 {
            below = below.max(c0 + 1);
        } else {
            if *step.get_or_insert(d) != d {
                return None;
            }
            from = from.min(c0);
        }
    }
    (below <= from).then_some((from, step.unwrap_or(0)))
}

/// The run of `blocks` blocks of `block_rows` rows ending at row `end`, if
/// its columns follow one shift rule (derived from blocks 0 and 1, then
/// checked on every entry of every block).
fn check_candidate(m: &MatricesView<'_>, end: usize, block_rows: usize, blocks: usize) -> Option<RowRepeat> {
    let first_row = end - blocks * block_rows;
    let inputs = m.inputs as u32;
    let mats = [&m.a, &m.b, &m.c];
    // Column pairs (block 0, block 1) by region; the keys matched, so the
    // rows have the same lengths unless a hash collided (checked below).
    let (mut ins, mut auxs) = (Vec::new(), Vec::new());
    for x in mats {
        let (s0, e0) = (x.row_starts[first_row] as usize, x.row_starts[first_row + block_rows] as usize);
        let (s1, e1) = (e0, x.row_starts[first_row + 2 * block_rows] as usize);
        if e1 - s1 != e0 - s0 {
            return None;
        }
        for (&c0, &c1) in x.cols[s0..e0].iter().zip(&x.cols[s1..e1]) {
            match (c0 < inputs, c1 < inputs) {
                (true, true) => ins.push((c0, c1)),
                (false, false) => auxs.push((c0, c1)),
                _ => return None,
            }
        }
    }
    let (input_from, input_step) = region_rule(&ins, inputs)?;
    let (aux_from, aux_step) = region_rule(&auxs, u32::MAX)?;
    let rep = RowRepeat { first_row, block_rows, blocks, inputs, input_from, input_step, aux_from, aux_step };
    // Every entry of every block against block 0 shifted.
    let same = mats.iter().all(|x| {
        (1..blocks).into_par_iter().all(|j| {
            let row = |k: usize| x.row_starts[first_row + k] as usize;
            let (s0, e0) = (row(0), row(block_rows));
            let (sj, ej) = (row(j * block_rows), row((j + 1) * block_rows));
            ej - sj == e0 - s0
                && (0..block_rows).all(|r| row(r + 1) - row(r) == row(j * block_rows + r + 1) - row(j * block_rows + r))
                && x.coeff_index[s0..e0] == x.coeff_index[sj..ej]
                && x.cols[s0..e0]
                    .iter()
                    .zip(&x.cols[sj..ej])
                    .all(|(&c0, &cj)| rep.shift_wide(c0, j as u32) == u64::from(cj))
        })
    });
    same.then_some(rep)
}

/// The longest run of repeated blocks ending where bellperson's
/// `input · 0 = 0` rows begin (the last `inputs` rows; the whole matrix
/// when it has fewer rows), or `None`. Candidates (periods whose blocks
/// repeat at least twice by the rows' lengths and coefficients) are tried
/// from the most rows saved down; the first whose columns follow one shift
/// rule on every entry is returned. `m` is assumed valid
/// ([`crate::validate`]).
pub fn find_repeat(m: &MatricesView<'_>) -> Option<RowRepeat> {
    let rows = m.constraints();
    let end = if rows > m.inputs { rows - m.inputs } else { rows };
    if end < 2 {
        return None;
    }
    let keys = row_keys(m, end);
    // The body read backwards, so runs that end at `end` start at 0.
    let reversed: Vec<u64> = keys.into_iter().rev().collect();
    let z = z_function(&reversed);
    // Period p repeats over z[p] + p rows from the end: that many whole
    // blocks.
    let mut candidates: Vec<(usize, usize)> = (1..end)
        .into_par_iter()
        .filter_map(|p| {
            let blocks = (z[p] as usize + p) / p;
            (blocks >= 2).then_some((p, blocks))
        })
        .collect();
    // Most rows saved first; of equal savings, the shorter block.
    candidates.sort_unstable_by_key(|&(p, b)| (std::cmp::Reverse((b - 1) * p), p));
    // A few tries: a hash collision or a period whose columns do not shift
    // uniformly costs one comparison pass each.
    candidates.into_iter().take(8).find_map(|(p, b)| check_candidate(m, end, p, b))
}

/// One matrix kept as its rows up to and including block 0 (`head`) and
/// its rows after the repeat (`tail`), owned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactCsr {
    /// Row starts of rows `0 .. first_row + block_rows`.
    pub head_starts: Vec<u64>,
    /// Their columns.
    pub head_cols: Vec<u32>,
    /// Their coefficient indices.
    pub head_coeffs: Vec<u32>,
    /// Row starts of the rows after the repeat.
    pub tail_starts: Vec<u64>,
    /// Their columns.
    pub tail_cols: Vec<u32>,
    /// Their coefficient indices.
    pub tail_coeffs: Vec<u32>,
}

impl CompactCsr {
    /// The rows up to and including block 0.
    pub fn head(&self) -> CsrView<'_> {
        CsrView { row_starts: &self.head_starts, cols: &self.head_cols, coeff_index: &self.head_coeffs }
    }

    /// The rows after the repeat.
    pub fn tail(&self) -> CsrView<'_> {
        CsrView { row_starts: &self.tail_starts, cols: &self.tail_cols, coeff_index: &self.tail_coeffs }
    }

    fn new(x: &CsrView<'_>, rep: &RowRepeat) -> Self {
        let slice = |from: usize, to: usize| {
            let (s, e) = (x.row_starts[from] as usize, x.row_starts[to] as usize);
            (
                x.row_starts[from..=to].iter().map(|&r| r - s as u64).collect(),
                x.cols[s..e].to_vec(),
                x.coeff_index[s..e].to_vec(),
            )
        };
        let (head_starts, head_cols, head_coeffs) = slice(0, rep.first_row + rep.block_rows);
        let (tail_starts, tail_cols, tail_coeffs) = slice(rep.end_row(), x.rows());
        Self { head_starts, head_cols, head_coeffs, tail_starts, tail_cols, tail_coeffs }
    }

    /// Entries kept.
    pub fn entries(&self) -> usize {
        self.head_cols.len() + self.tail_cols.len()
    }

    /// Bytes kept (row starts as 8 bytes, entries as 4 + 4).
    pub fn bytes(&self) -> usize {
        8 * (self.head_starts.len() + self.tail_starts.len()) + 8 * self.entries()
    }
}

/// A shape's A, B, C with their repeated rows kept once (see the module's
/// documentation): what a device keeps resident instead of the full
/// matrices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepeatedMatrices {
    /// Public inputs (ONE included).
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// Rows of each matrix.
    pub rows: usize,
    /// The distinct coefficients.
    pub coeffs: Vec<Scalar>,
    /// Where the rows repeat.
    pub repeat: RowRepeat,
    /// A, B, C.
    pub matrices: [CompactCsr; 3],
}

impl RepeatedMatrices {
    /// The compact form of `m`, when [`find_repeat`] finds a repeat.
    pub fn find(m: &MatricesView<'_>) -> Option<Self> {
        find_repeat(m).map(|rep| Self::with_repeat(m, rep))
    }

    /// The compact form of `m` for a repeat [`find_repeat`] returned.
    pub fn with_repeat(m: &MatricesView<'_>, repeat: RowRepeat) -> Self {
        Self {
            inputs: m.inputs,
            aux: m.aux,
            rows: m.constraints(),
            coeffs: m.coeffs.to_vec(),
            repeat,
            matrices: [&m.a, &m.b, &m.c].map(|x| CompactCsr::new(x, &repeat)),
        }
    }

    /// Checks what a device relies on before it reads these rows: the kept
    /// rows' starts span their entries, every column (block 0's shifted to
    /// the last block included) lies in z, every coefficient index in the
    /// table, and the rows add up ([`crate::validate`]'s checks for the
    /// compact form; the fields are public, so anything may come in).
    pub fn validate(&self) -> Result<(), crate::AbcError> {
        let bad = |w: String| Err(crate::AbcError::Malformed(w));
        let rep = &self.repeat;
        let width = self.inputs as u64 + self.aux as u64;
        if rep.blocks < 1
            || rep.block_rows < 1
            || rep.inputs as usize != self.inputs
            || rep.first_row.checked_add(rep.blocks.saturating_mul(rep.block_rows)).is_none_or(|end| end > self.rows)
        {
            return bad(format!("repeat {rep:?} for {} rows and {} inputs", self.rows, self.inputs));
        }
        let head_rows = rep.first_row + rep.block_rows;
        // The kept rows are matrices of their own: the full matrices'
        // checks apply to them as they are.
        let [a, b, c] = &self.matrices;
        for (part, views, rows) in [
            ("head", [a.head(), b.head(), c.head()], head_rows),
            ("tail", [a.tail(), b.tail(), c.tail()], self.rows - rep.end_row()),
        ] {
            let [a, b, c] = views;
            let view = MatricesView { inputs: self.inputs, aux: self.aux, coeffs: &self.coeffs, a, b, c };
            if a.rows() != rows {
                return bad(format!("{part}: {} rows kept, the repeat says {rows}", a.rows()));
            }
            crate::validate(&view).map_err(|e| crate::AbcError::Malformed(format!("{part} rows: {e}")))?;
        }
        for (name, x) in ["A", "B", "C"].into_iter().zip(&self.matrices) {
            // Shifts only grow a column: the last block's is the largest.
            let block0 = x.head_starts[rep.first_row] as usize..x.head_cols.len();
            let last = u32::try_from(rep.blocks - 1).unwrap_or(u32::MAX);
            if x.head_cols[block0].par_iter().any(|&c| rep.shift_wide(c, last) >= width) {
                return bad(format!("{name}: a repeated column leaves z in the last block"));
            }
        }
        Ok(())
    }

    /// Bytes kept, all three matrices and the coefficients.
    pub fn bytes(&self) -> usize {
        self.matrices.iter().map(CompactCsr::bytes).sum::<usize>() + 32 * self.coeffs.len()
    }

    /// `M·z` for matrix `which` (0, 1, 2: A, B, C) on the CPU, row for row
    /// what [`crate::product`] gives on the full matrix: the oracle of the
    /// device's repeated product.
    pub fn product(&self, which: usize, inputs: &[Scalar], aux: &[Scalar]) -> Vec<Scalar> {
        let x = &self.matrices[which];
        let rep = &self.repeat;
        let head_rows = rep.first_row + rep.block_rows;
        let (head, tail) = (x.head(), x.tail());
        let sum = |m: &CsrView<'_>, r: usize, block: u32| {
            let mut acc = Scalar::ZERO;
            for k in m.row_starts[r] as usize..m.row_starts[r + 1] as usize {
                let c = self.coeffs[m.coeff_index[k] as usize];
                let v = z_at(inputs, aux, rep.shift(m.cols[k], block));
                acc += if c == Scalar::ONE { v } else { v * c };
            }
            acc
        };
        (0..self.rows)
            .into_par_iter()
            .map(|r| {
                if r < head_rows {
                    sum(&head, r, 0)
                } else if r < rep.end_row() {
                    let (j, t) = ((r - rep.first_row) / rep.block_rows, (r - rep.first_row) % rep.block_rows);
                    sum(&head, rep.first_row + t, j as u32)
                } else {
                    sum(&tail, r - rep.end_row(), 0)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    type Csr = (Vec<u64>, Vec<u32>, Vec<u32>);

    fn view(m: &Csr) -> CsrView<'_> {
        CsrView { row_starts: &m.0, cols: &m.1, coeff_index: &m.2 }
    }

    /// A circuit shaped like a partition: `prefix` rows over the prefix's
    /// variables, `blocks` challenge blocks (each allocating `bin` inputs
    /// and `baux` aux, reading the prefix's and its own), then one
    /// binding row per input.
    struct Shape {
        inputs: usize,
        aux: usize,
        mats: [Csr; 3],
    }

    fn shape(prefix: usize, blocks: usize, block_rows: usize, seed: u64) -> Shape {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (p_in, p_aux, bin, baux) = (3u32, 7u32, 2u32, 11u32);
        let inputs = p_in + blocks as u32 * bin;
        let aux = p_aux + blocks as u32 * baux;
        let mut mats: [Csr; 3] = Default::default();
        for m in &mut mats {
            m.0.push(0);
        }
        let push_row = |mats: &mut [Csr; 3], entries: [Vec<(u32, u32)>; 3]| {
            for (m, e) in mats.iter_mut().zip(entries) {
                for (c, i) in e {
                    m.1.push(c);
                    m.2.push(i);
                }
                m.0.push(m.1.len() as u64);
            }
        };
        let prefix_col = |rng: &mut rand_chacha::ChaCha8Rng| {
            if rng.gen_bool(0.3) {
                rng.gen_range(0..p_in)
            } else {
                inputs + rng.gen_range(0..p_aux)
            }
        };
        for _ in 0..prefix {
            let row = std::array::from_fn(|_| {
                (0..rng.gen_range(0..4)).map(|_| (prefix_col(&mut rng), rng.gen_range(0..5))).collect()
            });
            push_row(&mut mats, row);
        }
        // Block 0's rows in block-local terms: (prefix column) or (own
        // input k) or (own aux k).
        #[derive(Clone, Copy)]
        enum Col {
            Prefix(u32),
            In(u32),
            Aux(u32),
        }
        let template: Vec<[Vec<(Col, u32)>; 3]> = (0..block_rows)
            .map(|_| {
                std::array::from_fn(|_| {
                    (0..rng.gen_range(0..5))
                        .map(|_| {
                            let c = match rng.gen_range(0..3) {
                                0 => Col::Prefix(prefix_col(&mut rng)),
                                1 => Col::In(rng.gen_range(0..bin)),
                                _ => Col::Aux(rng.gen_range(0..baux)),
                            };
                            (c, rng.gen_range(0..5))
                        })
                        .collect()
                })
            })
            .collect();
        for j in 0..blocks as u32 {
            for row in &template {
                let row = row.clone().map(|e| {
                    e.into_iter()
                        .map(|(c, i)| {
                            let col = match c {
                                Col::Prefix(p) => p,
                                Col::In(k) => p_in + j * bin + k,
                                Col::Aux(k) => inputs + p_aux + j * baux + k,
                            };
                            (col, i)
                        })
                        .collect()
                });
                push_row(&mut mats, row);
            }
        }
        for i in 0..inputs {
            push_row(&mut mats, [vec![(i, 0)], vec![], vec![]]);
        }
        Shape { inputs: inputs as usize, aux: aux as usize, mats }
    }

    fn coeffs() -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        vec![Scalar::ONE, -Scalar::ONE, Scalar::from(2u64), Scalar::ZERO, Scalar::random(&mut rng)]
    }

    fn matrices<'a>(s: &'a Shape, coeffs: &'a [Scalar]) -> MatricesView<'a> {
        MatricesView {
            inputs: s.inputs,
            aux: s.aux,
            coeffs,
            a: view(&s.mats[0]),
            b: view(&s.mats[1]),
            c: view(&s.mats[2]),
        }
    }

    #[test]
    fn a_partition_shaped_matrix_is_found_and_its_products_are_the_full_ones() {
        let coeffs = coeffs();
        for (prefix, blocks, block_rows, seed) in [(5, 18, 40, 1), (0, 2, 1, 2), (30, 3, 97, 3), (1, 7, 13, 4)] {
            let s = shape(prefix, blocks, block_rows, seed);
            let m = matrices(&s, &coeffs);
            crate::validate(&m).unwrap();
            let compact = RepeatedMatrices::find(&m).expect("a repeat");
            let rep = compact.repeat;
            // The whole run of challenge blocks is covered (a block may be
            // found as a multiple of the generated one only if the shape
            // happens to repeat inside; these random ones do not).
            assert_eq!(rep.end_row(), prefix + blocks * block_rows, "{rep:?}");
            assert!(rep.blocks * rep.block_rows >= blocks * block_rows - block_rows, "{rep:?}");
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let inputs: Vec<Scalar> = (0..s.inputs).map(|_| Scalar::random(&mut rng)).collect();
            let aux: Vec<Scalar> = (0..s.aux).map(|_| Scalar::random(&mut rng)).collect();
            for (which, full) in [&m.a, &m.b, &m.c].into_iter().enumerate() {
                assert_eq!(compact.product(which, &inputs, &aux), crate::product(full, &coeffs, &inputs, &aux));
            }
            let full_entries: usize = s.mats.iter().map(|x| x.1.len()).sum();
            let kept: usize = compact.matrices.iter().map(CompactCsr::entries).sum();
            assert!(kept < full_entries, "{kept} of {full_entries} entries kept");
        }
    }

    #[test]
    fn blocks_that_read_their_neighbours_or_differ_are_not_a_repeat() {
        let coeffs = coeffs();
        // One entry of the last block moved: the run shrinks to the blocks
        // before it, or there is none.
        let s = shape(4, 3, 20, 7);
        let mut t = Shape { inputs: s.inputs, aux: s.aux, mats: s.mats.clone() };
        let last_block_entry = t.mats[0].0[4 + 2 * 20] as usize;
        let col = &mut t.mats[0].1[last_block_entry];
        *col = (*col + 1) % (s.inputs + s.aux) as u32;
        let m = matrices(&t, &coeffs);
        if let Some(rep) = find_repeat(&m) {
            // Whatever is found reproduces the changed matrices exactly.
            let compact = RepeatedMatrices::with_repeat(&m, rep);
            let inputs = vec![Scalar::from(3u64); s.inputs];
            let aux: Vec<Scalar> = (0..s.aux as u64).map(Scalar::from).collect();
            assert_eq!(compact.product(0, &inputs, &aux), crate::product(&m.a, &coeffs, &inputs, &aux));
        }
        // Random rows do not repeat at all.
        let r = [
            crate::tests::random_csr(60, 50, 5, 1),
            crate::tests::random_csr(60, 50, 5, 2),
            crate::tests::random_csr(60, 50, 5, 3),
        ];
        let m = MatricesView { inputs: 4, aux: 46, coeffs: &coeffs, a: view(&r[0]), b: view(&r[1]), c: view(&r[2]) };
        if let Some(rep) = find_repeat(&m) {
            let compact = RepeatedMatrices::with_repeat(&m, rep);
            let inputs = vec![Scalar::from(5u64); 4];
            let aux: Vec<Scalar> = (0..46u64).map(Scalar::from).collect();
            for (w, x) in [&m.a, &m.b, &m.c].into_iter().enumerate() {
                assert_eq!(compact.product(w, &inputs, &aux), crate::product(x, &coeffs, &inputs, &aux));
            }
        }
    }

    #[test]
    fn a_compact_form_that_would_read_outside_z_is_refused() {
        let coeffs = coeffs();
        let s = shape(5, 4, 12, 11);
        let good = RepeatedMatrices::find(&matrices(&s, &coeffs)).expect("a repeat");
        assert!(good.validate().is_ok());
        let mut more_blocks = good.clone();
        more_blocks.repeat.blocks += 1; // past the rows
        assert!(more_blocks.validate().is_err());
        let mut no_rows = good.clone();
        no_rows.repeat.block_rows = 0;
        assert!(no_rows.validate().is_err());
        let mut long_step = good.clone();
        long_step.repeat.aux_step = u32::MAX; // the last block's columns leave z
        assert!(long_step.validate().is_err());
        let mut bad_col = good;
        bad_col.matrices[2].tail_cols.push(0);
        assert!(bad_col.validate().is_err(), "entries beyond the row starts");
    }

    #[test]
    fn the_shift_rule_is_read_from_two_blocks() {
        assert_eq!(region_rule(&[(1, 1), (5, 9), (7, 11)], 20), Some((5, 4)));
        assert_eq!(region_rule(&[(1, 1), (5, 9), (7, 12)], 20), None, "two steps");
        assert_eq!(region_rule(&[(6, 6), (5, 9)], 20), None, "a column that stays above one that moves");
        assert_eq!(region_rule(&[(3, 3)], 20), Some((20, 0)), "nothing moves");
        assert_eq!(region_rule(&[(3, 2)], 20), None, "backwards");
        assert_eq!(z_function(&[1, 1, 2, 1, 1, 2, 1]), vec![0, 1, 0, 4, 1, 0, 1]);
    }
}
