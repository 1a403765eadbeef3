//! A circuit's constraint matrices, recorded once per circuit shape: A, B
//! and C as sparse rows over z = (inputs, aux), coefficients deduplicated,
//! so that a, b, c = A·z, B·z, C·z can be computed from a witness alone
//! (by the a, b, c stage, `c2-abc`, on the CPU or the GPU, through
//! [`ConstraintMatrices::view`]) instead of being evaluated
//! constraint by constraint during synthesis. The densities of the MSM
//! queries are structural and come with them.
//!
//! Recorded from a blank circuit (no values: the structure is the same for
//! every partition of a shape), with bellperson's `input · 0 = 0`
//! constraints appended, so A·z, B·z, C·z are exactly what
//! [`crate::synthesize`] records. Zero coefficients are dropped (they
//! neither add nor mark a density, as in bellperson's evaluation).
//!
//! On disk (`write` / `read`): a small header, the coefficients, the three
//! matrices, and a SHA-256 of everything before it; `read` refuses a file
//! whose checksum or sizes do not match ([`MatrixError`]), and
//! `ProofInstance::load_or_record_matrices` then records them again.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::Density;
use c2_core::{CsrView, MatricesView};

/// One matrix: per row, its entries (column, coefficient index).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseMatrix {
    /// Row r's entries are `cols[row_starts[r]..row_starts[r + 1]]`.
    pub row_starts: Vec<u64>,
    /// Column of each entry: inputs first (0..inputs), then aux.
    pub cols: Vec<u32>,
    /// Index into [`ConstraintMatrices::coeffs`] of each entry.
    pub coeffs: Vec<u32>,
}

impl SparseMatrix {
    fn new() -> Self {
        Self { row_starts: vec![0], cols: Vec::new(), coeffs: Vec::new() }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.row_starts.len() - 1
    }

    /// Non-zero entries.
    pub fn entries(&self) -> usize {
        self.cols.len()
    }

    /// The borrowed CSR view.
    pub fn view(&self) -> CsrView<'_> {
        CsrView { row_starts: &self.row_starts, cols: &self.cols, coeff_index: &self.coeffs }
    }
}

/// The lengths of a circuit's Groth16 parameters, from its matrices: what
/// random parameters of its shape must have (timing where the real ones
/// are not at hand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParameterLengths {
    /// Constraints, the inputs' own included.
    pub constraints: usize,
    /// The NTT domain: H has `domain - 1` points.
    pub domain: usize,
    /// Public inputs, ONE included (IC points).
    pub inputs: usize,
    /// Aux variables (L points).
    pub aux: usize,
    /// A points: every input, the aux columns A uses.
    pub a: usize,
    /// B points (G1 and G2): the input and aux columns B uses.
    pub b: usize,
}

/// A, B, C of one circuit shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConstraintMatrices {
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Aux variables.
    pub aux: usize,
    /// The distinct coefficients.
    pub coeffs: Vec<Scalar>,
    /// A.
    pub a: SparseMatrix,
    /// B.
    pub b: SparseMatrix,
    /// C.
    pub c: SparseMatrix,
}

/// Errors of the matrix cache.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// Reading or writing the file failed.
    #[error("constraint matrices {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a matrix file of this version, or its checksum or
    /// sizes do not match its contents.
    #[error("constraint matrices {path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What did not match.
        reason: String,
    },
    /// Recording the blank circuit failed.
    #[error("recording constraint matrices: {0}")]
    Synthesis(#[from] SynthesisError),
    /// This instance has no recordable circuit shape.
    #[error("constraint matrices are not available for {0}")]
    Unsupported(String),
    /// Building the circuit to record, or joining its recorded parts, failed.
    #[error("recording constraint matrices: {0}")]
    Circuit(String),
}

/// The constraint system that records the matrices (also for one challenge
/// part at a time: [`ConstraintMatrices::join_parts`]).
pub(crate) struct MatrixCs {
    m: ConstraintMatrices,
    coeff_index: HashMap<[u8; 32], u32>,
}

impl ConstraintSystem<Scalar> for MatrixCs {
    type Root = Self;

    fn new() -> Self {
        Self {
            m: ConstraintMatrices {
                a: SparseMatrix::new(),
                b: SparseMatrix::new(),
                c: SparseMatrix::new(),
                ..Default::default()
            },
            coeff_index: HashMap::new(),
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.m.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.m.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.m.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.m.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        // Columns are numbered (inputs, aux) at the end: keep aux indices
        // raw now and shift them when the inputs are known.
        for (lc, which) in
            [(a(LinearCombination::zero()), 0), (b(LinearCombination::zero()), 1), (c(LinearCombination::zero()), 2)]
        {
            self.row_raw(&lc, which);
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    /// Extensible as bellperson's prover is: circuits that synthesize parts
    /// concurrently on their own constraint systems (storage-proofs-post's
    /// `FallbackPoStCircuit`, one group of sectors per core) take the same
    /// path here, so the matrices are what bellperson's prover records.
    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`, a part that began with its own ONE input (bellperson's
    /// `extend` contract): its ONE is ours, its other inputs and its aux are
    /// numbered after ours, its rows follow ours, its coefficients join our
    /// table (first appearance first, as one pass numbers them).
    fn extend(&mut self, other: &Self) {
        let map = self.merge_coeffs(&other.m.coeffs);
        let shift = ColumnShift { p_in: 1, p_aux: 0, in_base: self.m.inputs as u32, aux_base: self.m.aux as u32 };
        for which in 0..3u8 {
            let from = match which {
                0 => &other.m.a,
                1 => &other.m.b,
                _ => &other.m.c,
            };
            let into = self.mat(which);
            let base = *into.row_starts.last().unwrap_or(&0);
            into.row_starts.extend(from.row_starts[1..].iter().map(|&r| base + r));
            into.cols.par_extend(from.cols.par_iter().map(|&c| shift.apply(c)));
            into.coeffs.par_extend(from.coeffs.par_iter().map(|&i| map[i as usize]));
        }
        self.m.inputs += other.m.inputs.saturating_sub(1);
        self.m.aux += other.m.aux;
    }
}

/// Aux columns are recorded with this bit set and renumbered after the
/// last input is known (inputs can be allocated after aux variables).
const AUX_TAG: u32 = 1 << 31;

impl MatrixCs {
    fn row_raw(&mut self, lc: &LinearCombination<Scalar>, which: u8) {
        let tagged: Vec<(u32, Scalar)> = lc
            .iter_inputs()
            .map(|(&i, c)| (i as u32, *c))
            .chain(lc.iter_aux().map(|(&i, c)| (i as u32 | AUX_TAG, *c)))
            .filter(|(_, c)| !bool::from(c.is_zero()))
            .collect();
        let mat_index = which;
        for (col, coeff) in tagged {
            let idx = self.coeff_index_of(coeff);
            let mat = self.mat(mat_index);
            mat.cols.push(col);
            mat.coeffs.push(idx);
        }
        let mat = self.mat(mat_index);
        mat.row_starts.push(mat.cols.len() as u64);
    }

    /// A system for a part recorded after `prefix`: it numbers its own
    /// variables after the prefix's and holds only its own rows
    /// ([`ConstraintMatrices::join_continuations`]).
    pub(crate) fn continuing(prefix: &MatrixCs) -> Self {
        let mut cs = Self::new();
        cs.m.inputs = prefix.m.inputs;
        cs.m.aux = prefix.m.aux;
        cs
    }

    /// `coeff`'s index in the table, added when new.
    fn coeff_index_of(&mut self, coeff: Scalar) -> u32 {
        let next = self.m.coeffs.len() as u32;
        let idx = *self.coeff_index.entry(coeff.to_repr()).or_insert(next);
        if idx == next {
            self.m.coeffs.push(coeff);
        }
        idx
    }

    /// Each of `coeffs`' index in this table (added when new), in order.
    fn merge_coeffs(&mut self, coeffs: &[Scalar]) -> Vec<u32> {
        coeffs.iter().map(|&c| self.coeff_index_of(c)).collect()
    }

    fn mat(&mut self, which: u8) -> &mut SparseMatrix {
        match which {
            0 => &mut self.m.a,
            1 => &mut self.m.b,
            _ => &mut self.m.c,
        }
    }

    /// Renumbers tagged aux columns to `inputs + i`.
    fn finish(mut self) -> ConstraintMatrices {
        let inputs = self.m.inputs as u32;
        for mat in [&mut self.m.a, &mut self.m.b, &mut self.m.c] {
            for col in &mut mat.cols {
                if *col & AUX_TAG != 0 {
                    *col = inputs + (*col & !AUX_TAG);
                }
            }
        }
        self.m
    }
}

/// A part's columns in the joined numbering: its first `p_in` inputs and
/// `p_aux` aux are the shared prefix's; the rest move to `in_base` /
/// `aux_base` (tagged aux stays tagged until `finish`).
#[derive(Clone, Copy)]
struct ColumnShift {
    p_in: u32,
    p_aux: u32,
    in_base: u32,
    aux_base: u32,
}

impl ColumnShift {
    fn apply(&self, col: u32) -> u32 {
        if col & AUX_TAG != 0 {
            let i = col & !AUX_TAG;
            if i < self.p_aux {
                col
            } else {
                AUX_TAG | (self.aux_base + i - self.p_aux)
            }
        } else if col < self.p_in {
            col
        } else {
            self.in_base + col - self.p_in
        }
    }
}

impl ConstraintMatrices {
    /// Joins the recordings of a circuit's challenge parts, each of which
    /// recorded the ONE input, the shared `prefix`, then one challenge (as
    /// `ProofInstance::synthesize_partition` joins values): rows, inputs and
    /// aux of the parts appended in order, prefix variables shared, the
    /// coefficients of all parts deduplicated into one table, then
    /// bellperson's `input · 0 = 0` rows. The same matrices as recording the
    /// whole circuit in one pass (tested), in a fraction of the time: each
    /// part is recorded on its own core.
    pub(crate) fn join_parts(prefix: MatrixCs, parts: Vec<MatrixCs>) -> Result<Self, MatrixError> {
        let p = &prefix.m;
        let p_rows = p.a.rows();
        if p_rows != p.b.rows() || p_rows != p.c.rows() {
            return Err(MatrixError::Circuit("prefix: A, B, C row counts differ".into()));
        }
        for part in &parts {
            let same_prefix = part.m.inputs >= p.inputs
                && part.m.aux >= p.aux
                && [(&part.m.a, &p.a), (&part.m.b, &p.b), (&part.m.c, &p.c)].iter().all(|(m, q)| {
                    m.rows() >= p_rows
                        && m.row_starts[..=p_rows] == q.row_starts[..]
                        && m.cols[..q.cols.len()] == q.cols[..]
                });
            if !same_prefix {
                return Err(MatrixError::Circuit("a challenge part does not begin with the circuit's prefix".into()));
            }
        }
        // Part 0 brings the prefix rows; later parts only their challenge.
        Self::join((p.inputs, p.aux), parts, |j| if j == 0 { 0 } else { p_rows })
    }

    /// Joins parts recorded after `prefix` on constraint systems that
    /// continue its numbering ([`MatrixCs::continuing`]: each holds only its
    /// own rows, and reads the prefix's variables by their numbers): the
    /// prefix's rows, then each part's, each part's own variables after the
    /// previous part's, then bellperson's `input · 0 = 0` rows. The
    /// matrices of prefix and parts recorded one after the other on one
    /// system.
    pub(crate) fn join_continuations(prefix: MatrixCs, parts: Vec<MatrixCs>) -> Result<Self, MatrixError> {
        let (p_in, p_aux) = (prefix.m.inputs, prefix.m.aux);
        if parts.iter().any(|part| part.m.inputs < p_in || part.m.aux < p_aux) {
            return Err(MatrixError::Circuit("a part does not continue the circuit's prefix".into()));
        }
        // The prefix first, as a part with no variables of its own.
        Self::join((p_in, p_aux), std::iter::once(prefix).chain(parts).collect(), |_| 0)
    }

    /// Appends `parts`' rows from `from_row(j)` on, each part's variables
    /// past the shared `(inputs, aux)` numbered after the previous part's,
    /// its coefficients merged into one table (first appearance first).
    fn join(
        (p_in, p_aux): (usize, usize),
        mut parts: Vec<MatrixCs>,
        from_row: impl Fn(usize) -> usize,
    ) -> Result<Self, MatrixError> {
        let mut out = MatrixCs::new();
        let renumber: Vec<Vec<u32>> = parts.iter().map(|part| out.merge_coeffs(&part.m.coeffs)).collect();
        let (mut in_base, mut aux_base) = (p_in, p_aux);
        let mut shifts = Vec::with_capacity(parts.len());
        for part in &parts {
            shifts.push(ColumnShift {
                p_in: p_in as u32,
                p_aux: p_aux as u32,
                in_base: in_base as u32,
                aux_base: aux_base as u32,
            });
            in_base += part.m.inputs - p_in;
            aux_base += part.m.aux - p_aux;
        }
        if in_base + aux_base >= AUX_TAG as usize {
            return Err(MatrixError::Circuit(format!("{in_base} inputs and {aux_base} aux: too many to number")));
        }
        // Renumber every part in place, concurrently (722 M entries at 32 GiB).
        parts.par_iter_mut().zip(renumber.par_iter().zip(shifts.par_iter())).for_each(|(part, (map, shift))| {
            for m in [&mut part.m.a, &mut part.m.b, &mut part.m.c] {
                m.cols.par_iter_mut().for_each(|c| *c = shift.apply(*c));
                m.coeffs.par_iter_mut().for_each(|i| *i = map[*i as usize]);
            }
        });
        out.m.inputs = in_base;
        out.m.aux = aux_base;
        for (j, part) in parts.into_iter().enumerate() {
            let from_row = from_row(j);
            for (into, from) in [(&mut out.m.a, part.m.a), (&mut out.m.b, part.m.b), (&mut out.m.c, part.m.c)] {
                let (first, base) = (from.row_starts[from_row], *into.row_starts.last().unwrap_or(&0));
                into.row_starts.extend(from.row_starts[from_row + 1..].iter().map(|&r| base + r - first));
                into.cols.extend_from_slice(&from.cols[first as usize..]);
                into.coeffs.extend_from_slice(&from.coeffs[first as usize..]);
            }
        }
        Self::bind_inputs_and_finish(out)
    }

    /// Appends bellperson's `input_i · 0 = 0` rows and numbers the columns.
    fn bind_inputs_and_finish(mut cs: MatrixCs) -> Result<Self, MatrixError> {
        for i in 0..cs.m.inputs {
            cs.enforce(|| "input binding", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
        }
        let m = cs.finish();
        if m.inputs + m.aux >= AUX_TAG as usize {
            return Err(MatrixError::Synthesis(SynthesisError::Unsatisfiable));
        }
        Ok(m)
    }

    /// Records `circuit` (values not needed: a blank circuit will do) as
    /// bellperson's prover sees it: the ONE input first, the circuit, then
    /// `input_i · 0 = 0` for every input.
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Self, MatrixError> {
        let mut cs = MatrixCs::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        Self::bind_inputs_and_finish(cs)
    }

    /// Constraints (rows).
    pub fn constraints(&self) -> usize {
        self.a.rows()
    }

    /// The borrowed CSR view the a, b, c stage (`c2-abc`) evaluates.
    pub fn view(&self) -> MatricesView<'_> {
        MatricesView {
            inputs: self.inputs,
            aux: self.aux,
            coeffs: &self.coeffs,
            a: self.a.view(),
            b: self.b.view(),
            c: self.c.view(),
        }
    }

    /// The MSM queries' densities: aux columns in A, input and aux columns
    /// in B (structural: a column is set when some row uses it).
    pub fn densities(&self) -> (Density, Density, Density) {
        let mark = |m: &SparseMatrix, from: usize, len: usize| {
            let mut used = vec![false; len];
            for &c in &m.cols {
                let c = c as usize;
                if (from..from + len).contains(&c) {
                    used[c - from] = true;
                }
            }
            Density::from_bools(used)
        };
        (mark(&self.a, self.inputs, self.aux), mark(&self.b, 0, self.inputs), mark(&self.b, self.inputs, self.aux))
    }

    /// The lengths of this circuit's Groth16 parameters (the counts
    /// bellperson's prover reads through the densities).
    pub fn parameter_lengths(&self) -> ParameterLengths {
        let (a_aux, b_inputs, b_aux) = self.densities();
        ParameterLengths {
            constraints: self.constraints(),
            domain: self.constraints().next_power_of_two(),
            inputs: self.inputs,
            aux: self.aux,
            a: self.inputs + a_aux.count_ones(),
            b: b_inputs.count_ones() + b_aux.count_ones(),
        }
    }

    /// Bytes of the recorded entries.
    pub fn bytes(&self) -> usize {
        let m = |x: &SparseMatrix| x.row_starts.len() * 8 + x.cols.len() * 8;
        m(&self.a) + m(&self.b) + m(&self.c) + self.coeffs.len() * 32
    }
}

/// File magic and version (002: the checksum over chunk digests).
const MAGIC: &[u8; 8] = b"c2mtx002";

/// Bytes per checksummed chunk: the file's SHA-256 is taken over the
/// SHA-256s of its 64 MiB chunks, computed in parallel. Reading a 32 GiB
/// shape's 8.9 GB took 18.5 s on the H200 host with hashing, decoding and
/// checks on one thread; all three now run on every core (not yet measured
/// there; 512 MiB on the 2-core dev box: 597 -> 564 ms).
const CHECKSUM_CHUNK: usize = 64 << 20;

/// The file checksum: SHA-256 of the concatenated SHA-256s of `body`'s
/// chunks.
fn checksum(body: &[u8]) -> [u8; 32] {
    let digests: Vec<[u8; 32]> = body.par_chunks(CHECKSUM_CHUNK).map(|c| Sha256::digest(c).into()).collect();
    let mut h = Sha256::new();
    for d in &digests {
        h.update(d);
    }
    h.finalize().into()
}

/// Little-endian words of `bytes` (a multiple of `N` long), decoded in
/// parallel.
fn decode<const N: usize, T: Send>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    bytes.par_chunks_exact(N).map(|s| f(s.try_into().expect("N bytes"))).collect()
}

/// The little-endian bytes of `words`, encoded in parallel.
fn encode<const N: usize, T: Sync>(out: &mut Vec<u8>, words: &[T], f: fn(&T) -> [u8; N]) {
    let at = out.len();
    out.resize(at + N * words.len(), 0);
    out[at..].par_chunks_exact_mut(N).zip(words.par_iter()).for_each(|(d, w)| d.copy_from_slice(&f(w)));
}

impl ConstraintMatrices {
    /// Writes the matrices to `path` (through a temporary name, so a crash
    /// never leaves a partial file under the real one).
    pub fn write(&self, path: &Path) -> Result<(), MatrixError> {
        let io = |source| MatrixError::Io { path: path.into(), source };
        let mut body: Vec<u8> = Vec::with_capacity(self.bytes() + 64);
        body.extend_from_slice(MAGIC);
        for n in [self.inputs, self.aux, self.coeffs.len()] {
            body.extend_from_slice(&(n as u64).to_le_bytes());
        }
        for c in &self.coeffs {
            body.extend_from_slice(&c.to_repr());
        }
        for m in [&self.a, &self.b, &self.c] {
            body.extend_from_slice(&(m.row_starts.len() as u64).to_le_bytes());
            body.extend_from_slice(&(m.cols.len() as u64).to_le_bytes());
            encode(&mut body, &m.row_starts, |x| x.to_le_bytes());
            encode(&mut body, &m.cols, |x| x.to_le_bytes());
            encode(&mut body, &m.coeffs, |x| x.to_le_bytes());
        }
        let sum = checksum(&body);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("partial");
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&body).map_err(io)?;
        f.write_all(&sum).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Reads matrices written by [`ConstraintMatrices::write`], checking
    /// the checksum and every size.
    pub fn read(path: &Path) -> Result<Self, MatrixError> {
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|source| MatrixError::Io { path: path.into(), source })?;
        let corrupt = |reason: &str| MatrixError::Corrupt { path: path.into(), reason: reason.into() };
        if bytes.len() < MAGIC.len() + 32 || &bytes[..MAGIC.len()] != MAGIC {
            return Err(corrupt("not a constraint matrix file of this version"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 32);
        if checksum(body).as_slice() != sum {
            return Err(corrupt("checksum mismatch"));
        }
        let mut at = MAGIC.len();
        let mut take = |n: usize| -> Result<&[u8], MatrixError> {
            let s = body.get(at..at + n).ok_or_else(|| corrupt("truncated"))?;
            at += n;
            Ok(s)
        };
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
        let inputs = word(take(8)?) as usize;
        let aux = word(take(8)?) as usize;
        let n_coeffs = word(take(8)?) as usize;
        let mut coeffs = Vec::with_capacity(n_coeffs.min(body.len() / 32));
        for _ in 0..n_coeffs {
            let repr: [u8; 32] = take(32)?.try_into().expect("32 bytes");
            coeffs.push(Option::from(Scalar::from_repr(repr)).ok_or_else(|| corrupt("coefficient out of range"))?);
        }
        let mut mats = Vec::with_capacity(3);
        for _ in 0..3 {
            let rows1 = word(take(8)?) as usize;
            let entries = word(take(8)?) as usize;
            let row_starts: Vec<u64> =
                decode(take(rows1.checked_mul(8).ok_or_else(|| corrupt("size"))?)?, u64::from_le_bytes);
            let cols: Vec<u32> =
                decode(take(entries.checked_mul(4).ok_or_else(|| corrupt("size"))?)?, u32::from_le_bytes);
            let cidx: Vec<u32> = decode(take(entries * 4)?, u32::from_le_bytes);
            let ok = row_starts.first() == Some(&0)
                && row_starts.last() == Some(&(entries as u64))
                && row_starts.par_windows(2).all(|w| w[0] <= w[1])
                && cols.par_iter().all(|&c| (c as usize) < inputs + aux)
                && cidx.par_iter().all(|&c| (c as usize) < coeffs.len());
            if !ok {
                return Err(corrupt("inconsistent matrix"));
            }
            mats.push(SparseMatrix { row_starts, cols, coeffs: cidx });
        }
        if at != body.len() || mats.iter().any(|m| m.rows() != mats[0].rows()) {
            return Err(corrupt("sizes do not match"));
        }
        let c = mats.pop().expect("three");
        let b = mats.pop().expect("three");
        let a = mats.pop().expect("three");
        Ok(Self { inputs, aux, coeffs, a, b, c })
    }
}

/// `<dir>/v28-<parameter id>.matrices`: beside the parameter file.
pub fn matrices_path(dir: &Path, parameter_id: &str) -> PathBuf {
    dir.join(format!("v{}-{parameter_id}.matrices", storage_proofs_core::parameter_cache::VERSION))
}

/// The first constraint of `m` that `(inputs, aux)` does not satisfy,
/// evaluated 4 M rows at a time (a full-size partition's a, b, c would
/// take 12 GB at once).
#[cfg(test)]
pub(crate) fn first_unsatisfied_in_chunks(m: &ConstraintMatrices, inputs: &[Scalar], aux: &[Scalar]) -> Option<usize> {
    const ROWS: usize = 4 << 20;
    let rows = m.constraints();
    (0..rows).step_by(ROWS).find_map(|lo| {
        let hi = (lo + ROWS).min(rows);
        let part = |x: &SparseMatrix| {
            let v = CsrView { row_starts: &x.row_starts[lo..=hi], cols: &x.cols, coeff_index: &x.coeffs };
            c2_abc::product(&v, &m.coeffs, inputs, aux)
        };
        c2_abc::first_unsatisfied(&part(&m.a), &part(&m.b), &part(&m.c)).map(|i| lo + i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{cc_sector, instance_from_c1, CcSectorConfig, Synthesized};
    use filecoin_proofs_api::RegisteredSealProof;

    /// The 2 KiB circuit's matrices, recorded from a blank circuit, give the
    /// a, b, c and densities that synthesis records for a real witness.
    #[test]
    fn recorded_matrices_reproduce_synthesis() {
        let s = cc_sector(RegisteredSealProof::StackedDrg2KiBV1_1, &CcSectorConfig::default()).unwrap();
        let instance = instance_from_c1(&s.c1, s.prover_id, s.sector_id).unwrap();
        let p = instance.synthesize_partition(0).unwrap();
        let m = instance.record_matrices().unwrap();
        assert_eq!((m.inputs, m.aux, m.constraints()), (p.input_assignment.len(), p.aux_assignment.len(), p.a.len()));
        let (a, b, c) = c2_abc::evaluate(&m.view(), &p.input_assignment, &p.aux_assignment).unwrap();
        assert!(a == p.a && b == p.b && c == p.c, "A·z, B·z, C·z == synthesis");
        let (da, dbi, dba) = m.densities();
        assert!(da == p.a_aux_density && dbi == p.b_input_density && dba == p.b_aux_density, "densities");
        // The two challenges' rows repeat (c2-abc's repeat module): kept
        // once, they give the same a, b, c.
        let compact = c2_abc::RepeatedMatrices::find(&m.view()).expect("the challenge blocks repeat");
        let rep = compact.repeat;
        assert!(rep.blocks >= 2 && rep.end_row() == m.constraints() - m.inputs, "{rep:?}");
        for (which, full) in [&a, &b, &c].into_iter().enumerate() {
            assert!(compact.product(which, &p.input_assignment, &p.aux_assignment) == *full, "matrix {which}");
        }
        eprintln!(
            "2 KiB matrices repeat: {} blocks of {} rows from row {} (inputs from {} by {}, aux from {} by {}); {:.1} of {:.1} MB kept",
            rep.blocks,
            rep.block_rows,
            rep.first_row,
            rep.input_from,
            rep.input_step,
            rep.aux_from,
            rep.aux_step,
            compact.bytes() as f64 / 1e6,
            m.bytes() as f64 / 1e6
        );
        // Coefficients are few (deduplicated); entries are many.
        assert!(
            m.coeffs.len() < 2000 && m.a.entries() > 1_000_000,
            "{} coefficients, {} A entries",
            m.coeffs.len(),
            m.a.entries()
        );
        eprintln!(
            "2 KiB matrices: {} coefficients, A/B/C entries {} / {} / {}, {:.1} MB",
            m.coeffs.len(),
            m.a.entries(),
            m.b.entries(),
            m.c.entries(),
            m.bytes() as f64 / 1e6
        );
    }

    /// The new path (witness only, challenges concurrently, then the
    /// matrices) gives the old path's record on real 2 KiB and 8 MiB
    /// circuits.
    #[test]
    fn witness_then_matrices_equals_synthesis() {
        for rp in [RegisteredSealProof::StackedDrg2KiBV1_1, RegisteredSealProof::StackedDrg8MiBV1_1] {
            let s = cc_sector(rp, &CcSectorConfig::default()).unwrap();
            let instance = instance_from_c1(&s.c1, s.prover_id, s.sector_id).unwrap();
            let m = instance.record_matrices().unwrap();
            let t = std::time::Instant::now();
            let (inputs, aux) = instance.synthesize_witness(0).unwrap();
            let (a, b, c) = c2_abc::evaluate(&m.view(), &inputs, &aux).unwrap();
            let (a_aux_density, b_input_density, b_aux_density) = m.densities();
            let new = Synthesized {
                a,
                b,
                c,
                input_assignment: inputs,
                aux_assignment: aux,
                a_aux_density,
                b_input_density,
                b_aux_density,
            };
            let t_new = t.elapsed();
            let t = std::time::Instant::now();
            let old = instance.synthesize_partition_sequential(0).unwrap();
            eprintln!("{rp:?} partition 0: witness + matrices {t_new:.2?}, sequential synthesis {:.2?}", t.elapsed());
            assert!(new == old, "{rp:?}: witness + matrices == synthesis");
        }
    }

    /// Recording the challenges concurrently and joining them gives the
    /// matrices of the blank circuit recorded in one pass.
    #[test]
    fn challenge_parts_join_to_the_blank_circuits_matrices() {
        for rp in [RegisteredSealProof::StackedDrg2KiBV1_1, RegisteredSealProof::StackedDrg8MiBV1_1] {
            let s = cc_sector(rp, &CcSectorConfig::default()).unwrap();
            let instance = instance_from_c1(&s.c1, s.prover_id, s.sector_id).unwrap();
            let t = std::time::Instant::now();
            let joined = instance.record_matrices().unwrap();
            let t_joined = t.elapsed();
            let t = std::time::Instant::now();
            let one_pass = instance.record_matrices_sequential().unwrap();
            eprintln!("{rp:?}: matrices by challenge parts {t_joined:.2?}, one pass {:.2?}", t.elapsed());
            assert_eq!(
                (joined.inputs, joined.aux, joined.constraints()),
                (one_pass.inputs, one_pass.aux, one_pass.constraints())
            );
            assert!(joined.a == one_pass.a && joined.b == one_pass.b && joined.c == one_pass.c, "{rp:?}: A, B, C");
            assert!(joined.coeffs == one_pass.coeffs, "{rp:?}: the coefficient table");
        }
    }

    /// A part of a toy circuit: an input, aux, a row reading the ONE, the
    /// part's input and aux, and coefficients shared with other parts and
    /// its own.
    fn toy_part<CS: ConstraintSystem<Scalar>>(cs: &mut CS, j: u64) -> Result<(), SynthesisError> {
        let x = cs.alloc_input(|| "x", || Ok(Scalar::from(j)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(j + 1)))?;
        let z = cs.alloc(|| "z", || Ok(Scalar::ZERO))?;
        let own = Scalar::from(1000 + j);
        cs.enforce(|| "row", |lc| lc + x + (own, y), |lc| lc + CS::one() + (Scalar::from(3), z), |lc| lc + y);
        cs.enforce(|| "row 2", |lc| lc + (-Scalar::ONE, z), |lc| lc + x, |lc| lc);
        Ok(())
    }

    /// Three parts recorded on their own constraint systems (each with its
    /// temporary ONE) and appended with `extend`, as an extensible circuit
    /// does, are the parts recorded one after the other on one system.
    #[test]
    fn extended_parts_are_one_pass() {
        struct Parts(bool);
        impl Circuit<Scalar> for Parts {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                cs.alloc(|| "before", || Ok(Scalar::ONE))?;
                for j in 0..3 {
                    if self.0 && CS::is_extensible() {
                        let mut part = CS::new();
                        part.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                        toy_part(&mut part, j)?;
                        cs.extend(&part);
                    } else {
                        toy_part(cs, j)?;
                    }
                }
                Ok(())
            }
        }
        let extended = ConstraintMatrices::record(Parts(true)).unwrap();
        let one_pass = ConstraintMatrices::record(Parts(false)).unwrap();
        assert_eq!((extended.inputs, extended.aux, extended.constraints()), (4, 7, 6 + 4));
        assert!(extended == one_pass, "{extended:?}\n{one_pass:?}");
    }

    #[test]
    fn the_cache_round_trips_and_a_corrupt_file_is_recorded_again() {
        let s = cc_sector(RegisteredSealProof::StackedDrg2KiBV1_1, &CcSectorConfig::default()).unwrap();
        let instance = instance_from_c1(&s.c1, s.prover_id, s.sector_id).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = matrices_path(dir.path(), instance.parameter_id());
        let (m, recorded) = instance.load_or_record_matrices(dir.path()).unwrap();
        assert!(recorded);
        let (again, recorded) = instance.load_or_record_matrices(dir.path()).unwrap();
        assert!(!recorded && again == m, "read back from the cache");
        // One flipped byte: the checksum refuses it, and the matrices are recorded again.
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(ConstraintMatrices::read(&path), Err(MatrixError::Corrupt { .. })));
        let (fixed, recorded) = instance.load_or_record_matrices(dir.path()).unwrap();
        assert!(recorded && fixed == m);
        // Truncated, and not a matrix file at all.
        std::fs::write(&path, &bytes[..100]).unwrap();
        assert!(matches!(ConstraintMatrices::read(&path), Err(MatrixError::Corrupt { .. })));
        std::fs::write(&path, b"hello").unwrap();
        assert!(matches!(ConstraintMatrices::read(&path), Err(MatrixError::Corrupt { .. })));
    }
}
