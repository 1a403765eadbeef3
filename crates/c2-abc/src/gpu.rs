//! The GPU sparse product (feature `cuda`): the kernel in
//! `cuda-kernels/abc/sparse.cuh`, one thread per row, from matrices kept on
//! the device ([`DeviceMatrices`]: uploaded once per circuit shape and
//! device, beside the parameters) and a witness already there.

use std::mem::MaybeUninit;
use std::sync::Arc;

use blstrs::Scalar;
use c2_cuda::{
    DeviceBuffer, DeviceMemory, Event, Gpu, GpuError, Kernel, KernelId, Launch, PinnedShared, Stager, Stream,
};
use ff::Field;
use rayon::prelude::*;

use crate::{
    Abc, AbcError, ChunkedMatrices, CompactWitness, CsrView, MatricesView, RepeatedMatrices, RowRepeat, LONG_ROW,
};

/// Threads per block of the row kernel.
const THREADS: u32 = 256;
/// Staging slot for the uploads (128 MiB; the matrices of a 32 GiB
/// partition are ~7 GB, crossing PCIe once per device).
const STAGING_BYTES: usize = 128 << 20;

/// One matrix on the device: row starts, columns, coefficient indices, all
/// `u32` (a 32 GiB partition's A has 309 M entries; more than 2^32 is
/// refused at upload).
pub struct DeviceCsr {
    row_starts: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    coeff_index: DeviceBuffer<u32>,
    rows: usize,
    /// Rows longer than [`LONG_ROW`] entries, summed one warp each.
    long_rows: DeviceBuffer<u32>,
    n_long: usize,
}

impl DeviceCsr {
    /// Device bytes.
    pub fn bytes(&self) -> usize {
        4 * (self.row_starts.len() + self.cols.len() + self.coeff_index.len() + self.long_rows.len())
    }
}

/// The rows of a [`RowRepeat`] on the device: per matrix, block 0's long
/// rows (block-local) and the rows after the run. The head (the rows up to
/// and including block 0) is [`DeviceMatrices`]' own CSR.
struct DeviceRepeat {
    rule: RowRepeat,
    template_long: [(DeviceBuffer<u32>, usize); 3],
    tails: [DeviceCsr; 3],
}

/// A circuit shape's A, B, C on one device: every row, or (from
/// [`GpuAbc::upload_repeated`]) the rows up to a repeat's block 0 and
/// those after it, the repeated blocks read from block 0.
pub struct DeviceMatrices {
    inputs: usize,
    aux: usize,
    /// Rows of each matrix.
    rows: usize,
    coeffs: DeviceBuffer<Scalar>,
    /// Index of the coefficient ONE (u32::MAX when the table has none).
    one_index: u32,
    /// A, B, C (their heads when repeated).
    mats: [DeviceCsr; 3],
    repeat: Option<DeviceRepeat>,
}

/// A block's column shift as the row kernels take it: (input_from |
/// input_step << 32, aux_from | aux_step << 32, inputs | block << 32);
/// block 0 (all zeros) leaves every column as it is.
type Shift = (u64, u64, u64);

/// Block 0's shift: columns as they are.
const NO_SHIFT: Shift = (0, 0, 0);

fn shift_args(rule: &RowRepeat, block: u32) -> Shift {
    let pack = |lo: u32, hi: u32| u64::from(lo) | u64::from(hi) << 32;
    (pack(rule.input_from, rule.input_step), pack(rule.aux_from, rule.aux_step), pack(rule.inputs, block))
}

impl DeviceMatrices {
    /// Device bytes of the three matrices and the coefficient table.
    pub fn bytes(&self) -> usize {
        let repeat = self.repeat.as_ref().map_or(0, |r| {
            r.tails.iter().map(DeviceCsr::bytes).sum::<usize>()
                + r.template_long.iter().map(|(b, _)| 4 * b.len()).sum::<usize>()
        });
        self.mats.iter().map(DeviceCsr::bytes).sum::<usize>() + 32 * self.coeffs.len() + repeat
    }

    /// Whether the repeated blocks are read from block 0 (uploaded by
    /// [`GpuAbc::upload_repeated`]).
    pub fn is_repeated(&self) -> bool {
        self.repeat.is_some()
    }

    /// Device bytes `view` takes once uploaded (for planning).
    pub fn bytes_for(view: &MatricesView<'_>) -> usize {
        // (The long-row lists are at most entries / 33 rows: left out.)
        let m = |x: &CsrView<'_>| 4 * (x.row_starts.len() + 2 * x.cols.len());
        m(&view.a) + m(&view.b) + m(&view.c) + 32 * view.coeffs.len()
    }

    /// Constraints (rows).
    pub fn constraints(&self) -> usize {
        self.rows
    }

    /// (inputs, aux) of the witness this shape takes.
    pub fn witness_shape(&self) -> (usize, usize) {
        (self.inputs, self.aux)
    }
}

/// The sparse product on one GPU.
pub struct GpuAbc {
    gpu: Arc<Gpu>,
    memory: DeviceMemory,
    rows: Kernel,
    long_rows: Kernel,
    unsatisfied: Kernel,
    witness_bits: Kernel,
    witness_scatter: Kernel,
}

impl std::fmt::Debug for GpuAbc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuAbc({})", self.gpu.info().name)
    }
}

fn grid_for(n: usize) -> u32 {
    n.div_ceil(THREADS as usize).clamp(1, 1 << 20) as u32
}

impl GpuAbc {
    /// Loads the kernel on `memory`'s device; matrices and host-level
    /// buffers come from `memory`.
    pub fn with_memory(memory: DeviceMemory) -> Result<Self, AbcError> {
        let gpu = memory.gpu().clone();
        let rows = gpu.kernel(KernelId::AbcRows)?;
        let long_rows = gpu.kernel(KernelId::AbcLongRows)?;
        let unsatisfied = gpu.kernel(KernelId::AbcUnsatisfied)?;
        let witness_bits = gpu.kernel(KernelId::WitnessBits)?;
        let witness_scatter = gpu.kernel(KernelId::WitnessScatter)?;
        Ok(Self { gpu, memory, rows, long_rows, unsatisfied, witness_bits, witness_scatter })
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Uploads `view` (validated first) through pinned staging on its own
    /// copy stream; returns when it is on the device.
    pub fn upload(&self, view: &MatricesView<'_>) -> Result<DeviceMatrices, AbcError> {
        crate::validate(view)?;
        let mut stager = Stager::new(&self.gpu, STAGING_BYTES)?;
        let mut mats = Vec::with_capacity(3);
        for (name, m) in [("A", &view.a), ("B", &view.b), ("C", &view.c)] {
            mats.push(self.upload_csr(&mut stager, name, m)?);
        }
        let mats: [DeviceCsr; 3] = mats.try_into().map_err(|_| AbcError::Malformed("three matrices".into()))?;
        let (coeffs, one_index) = self.upload_coeffs(&mut stager, view.coeffs)?;
        let (inputs, aux, rows) = (view.inputs, view.aux, view.constraints());
        Ok(DeviceMatrices { inputs, aux, rows, coeffs, one_index, mats, repeat: None })
    }

    /// Uploads the compact form of a shape whose rows repeat (validated
    /// first): the rows up to and including block 0 and those after the
    /// run, 1/18 of the full matrices for a 32 GiB partition's 18
    /// challenges. [`GpuAbc::product_device`] gives the same a, b, c as
    /// from [`GpuAbc::upload`] of the full matrices.
    pub fn upload_repeated(&self, m: &RepeatedMatrices) -> Result<DeviceMatrices, AbcError> {
        m.validate()?;
        let rule = m.repeat;
        let head_rows = rule.first_row + rule.block_rows;
        let mut stager = Stager::new(&self.gpu, STAGING_BYTES)?;
        let (mut mats, mut tails, mut template_long) = (Vec::new(), Vec::new(), Vec::new());
        for (name, x) in ["A", "B", "C"].into_iter().zip(&m.matrices) {
            let (head, tail) = (x.head(), x.tail());
            // Block 0's long rows, numbered from its first row.
            let long: Vec<u32> = (rule.first_row..head_rows)
                .into_par_iter()
                .filter(|&r| x.head_starts[r + 1] - x.head_starts[r] > LONG_ROW)
                .map(|r| (r - rule.first_row) as u32)
                .collect();
            let mut d = self.memory.alloc::<u32>(long.len().max(1))?;
            stager.upload(&mut d, 0, &long)?;
            stager.stream().synchronize()?;
            template_long.push((d, long.len()));
            mats.push(self.upload_csr(&mut stager, name, &head)?);
            tails.push(self.upload_csr(&mut stager, name, &tail)?);
        }
        let three = || AbcError::Malformed("three matrices".into());
        let mats: [DeviceCsr; 3] = mats.try_into().map_err(|_| three())?;
        let tails: [DeviceCsr; 3] = tails.try_into().map_err(|_| three())?;
        let template_long: [(DeviceBuffer<u32>, usize); 3] = template_long.try_into().map_err(|_| three())?;
        let (coeffs, one_index) = self.upload_coeffs(&mut stager, &m.coeffs)?;
        let repeat = Some(DeviceRepeat { rule, template_long, tails });
        Ok(DeviceMatrices { inputs: m.inputs, aux: m.aux, rows: m.rows, coeffs, one_index, mats, repeat })
    }

    /// One CSR matrix (validated by the caller) with its long-row list, as
    /// `u32` words through `stager`; returns once on the device.
    fn upload_csr(&self, stager: &mut Stager, name: &str, m: &CsrView<'_>) -> Result<DeviceCsr, AbcError> {
        if m.entries() > u32::MAX as usize {
            return Err(AbcError::Malformed(format!("{name}: {} entries, more than 2^32", m.entries())));
        }
        let up32 = |stager: &mut Stager, v: &[u32]| -> Result<DeviceBuffer<u32>, GpuError> {
            let mut d = self.memory.alloc::<u32>(v.len().max(1))?;
            stager.upload(&mut d, 0, v)?;
            Ok(d)
        };
        let starts: Vec<u32> = m.row_starts.iter().map(|&s| s as u32).collect();
        let long: Vec<u32> = (0..m.rows())
            .into_par_iter()
            .filter(|&r| m.row_starts[r + 1] - m.row_starts[r] > LONG_ROW)
            .map(|r| r as u32)
            .collect();
        let csr = DeviceCsr {
            row_starts: up32(stager, &starts)?,
            cols: up32(stager, m.cols)?,
            coeff_index: up32(stager, m.coeff_index)?,
            rows: m.rows(),
            long_rows: up32(stager, &long)?,
            n_long: long.len(),
        };
        // The staged copies of `starts` and `long` are queued; they are
        // dropped after the stream has read them.
        stager.stream().synchronize()?;
        Ok(csr)
    }

    /// The coefficient table on the device, and the index of ONE in it
    /// (u32::MAX when absent).
    fn upload_coeffs(&self, stager: &mut Stager, table: &[Scalar]) -> Result<(DeviceBuffer<Scalar>, u32), AbcError> {
        let mut coeffs = self.memory.alloc::<Scalar>(table.len().max(1))?;
        stager.upload(&mut coeffs, 0, table)?;
        stager.stream().synchronize()?;
        let one_index = table.iter().position(|c| *c == Scalar::ONE).map_or(u32::MAX, |i| i as u32);
        Ok((coeffs, one_index))
    }

    /// `out[..rows] = M·z` for matrix `which` (0 = A, 1 = B, 2 = C) and
    /// zeros in the rest of `out` (a domain vector's padding), queued on
    /// `stream`. `z` holds (inputs, aux) in Montgomery form, as uploaded from
    /// `blstrs::Scalar`s.
    pub fn product_device(
        &self,
        m: &DeviceMatrices,
        which: usize,
        z: &DeviceBuffer<Scalar>,
        out: &mut DeviceBuffer<Scalar>,
        stream: &Stream,
    ) -> Result<(), AbcError> {
        let mat = m.mats.get(which).ok_or_else(|| AbcError::Malformed(format!("matrix {which} of 3")))?;
        if z.len() < m.inputs + m.aux {
            return Err(AbcError::WitnessShape { inputs: z.len(), aux: 0, want_inputs: m.inputs, want_aux: m.aux });
        }
        if out.len() < m.rows {
            return Err(AbcError::Malformed(format!("output of {} for {} rows", out.len(), m.rows)));
        }
        let args = |x: &DeviceCsr| RowsArgs {
            row_starts: x.row_starts.device_ptr(),
            cols: x.cols.device_ptr(),
            coeff_index: x.coeff_index.device_ptr(),
            long_rows: x.long_rows.device_ptr(),
            n_long: x.n_long,
        };
        let (coeffs, one) = (m.coeffs.device_ptr(), m.one_index);
        let Some(rep) = &m.repeat else {
            // SAFETY: the matrices were validated at upload (every column <
            // the witness length checked above, every index < the table,
            // long rows < rows), `out` holds out.len() >= rows elements.
            return unsafe {
                self.launch_rows(out.device_ptr(), &args(mat), coeffs, one, z, mat.rows, out.len(), NO_SHIFT, stream)
            };
        };
        let rule = &rep.rule;
        let at = |row: usize| out.device_ptr() + (row * std::mem::size_of::<Scalar>()) as u64;
        // The head (the rows before the run and block 0) as it is.
        // SAFETY: validated at upload (`RepeatedMatrices::validate`); `out`
        // holds m.rows >= the head's rows.
        unsafe { self.launch_rows(at(0), &args(mat), coeffs, one, z, mat.rows, mat.rows, NO_SHIFT, stream) }?;
        // Blocks 1.. from block 0's rows (row starts from its first row on,
        // which index the head's entries), columns shifted.
        let (long, n_long) = &rep.template_long[which];
        let block0 = RowsArgs {
            row_starts: mat.row_starts.device_ptr() + 4 * rule.first_row as u64,
            long_rows: long.device_ptr(),
            n_long: *n_long,
            ..args(mat)
        };
        for j in 1..rule.blocks {
            let row0 = rule.first_row + j * rule.block_rows;
            let shift = shift_args(rule, j as u32);
            // SAFETY: block 0's rows were validated at upload, their
            // columns shifted to the last block included (< z's length,
            // checked above); `out` holds row0 + block_rows <= m.rows.
            unsafe {
                self.launch_rows(at(row0), &block0, coeffs, one, z, rule.block_rows, rule.block_rows, shift, stream)
            }?;
        }
        // The rows after the run, and the domain's padding.
        let tail = &rep.tails[which];
        let end = rule.end_row();
        // SAFETY: validated at upload; `out` holds out.len() - end elements
        // from `end` on, at least the tail's rows.
        unsafe { self.launch_rows(at(end), &args(tail), coeffs, one, z, tail.rows, out.len() - end, NO_SHIFT, stream) }
    }

    /// Queues the row kernels for `rows` rows of one matrix (or chunk)
    /// described by `csr`, writing `out_ptr[0..rows]` and zeros in
    /// `out_ptr[rows..out_len]`, then the long rows after them.
    ///
    /// # Safety
    /// `csr` points at `rows + 1` row starts and the entries and long rows
    /// they index, every column is < `z.len()`, every coefficient index is
    /// in the table at `coeffs`, every long row < `rows`; `out_ptr` holds
    /// `out_len >= rows` elements; every column shifted by `shift` is
    /// < `z.len()`; all of it stays valid until `stream` has run the
    /// kernels.
    #[allow(clippy::too_many_arguments)]
    unsafe fn launch_rows(
        &self,
        out_ptr: u64,
        csr: &RowsArgs,
        coeffs: u64,
        one_index: u32,
        z: &DeviceBuffer<Scalar>,
        rows: usize,
        out_len: usize,
        shift: Shift,
        stream: &Stream,
    ) -> Result<(), AbcError> {
        // c2_abc_rows(out, row_starts, cols, coeff_index, coeffs, z, rows, one_index, out_len,
        //             input_rule, aux_rule, inputs_block)
        let args = (
            out_ptr,
            csr.row_starts,
            csr.cols,
            csr.coeff_index,
            coeffs,
            z.device_ptr(),
            rows as u64,
            one_index,
            out_len as u64,
            shift.0,
            shift.1,
            shift.2,
        );
        // SAFETY: the caller's contract.
        unsafe { self.rows.launch(stream, Launch::new(grid_for(out_len), THREADS), args) }?;
        if csr.n_long > 0 {
            // c2_abc_long_rows(out, row_starts, cols, coeff_index, coeffs, z, long_rows, n_long, one_index,
            //                  input_rule, aux_rule, inputs_block), after the short rows on the same stream.
            let args = (
                out_ptr,
                csr.row_starts,
                csr.cols,
                csr.coeff_index,
                coeffs,
                z.device_ptr(),
                csr.long_rows,
                csr.n_long as u64,
                one_index,
                shift.0,
                shift.1,
                shift.2,
            );
            // SAFETY: the caller's contract.
            unsafe { self.long_rows.launch(stream, Launch::new(grid_for(32 * csr.n_long), THREADS), args) }?;
        }
        Ok(())
    }

    /// Device bytes [`GpuAbc::stream_matrices`] takes for `m`: two chunk
    /// slots and the coefficient table.
    pub fn stream_bytes(m: &ChunkedMatrices) -> usize {
        2 * (4 * m.slot_words()).next_multiple_of(256) + (32 * m.coeffs().len().max(1)).next_multiple_of(256)
    }

    /// Streamed products for one partition: the coefficient table and two
    /// chunk slots from `memory` ([`GpuAbc::stream_bytes`]), the table
    /// uploaded on `copy`. [`AbcStream::product`] then brings each chunk
    /// over on `copy` while the previous one is computed.
    pub fn stream_matrices<'a>(
        &'a self,
        m: &'a PinnedChunks,
        memory: &DeviceMemory,
        copy: &Stream,
    ) -> Result<AbcStream<'a>, AbcError> {
        let cm = m.matrices();
        let words = cm.slot_words().max(1);
        let slots = [memory.alloc::<u32>(words)?, memory.alloc::<u32>(words)?];
        let mut coeffs = memory.alloc::<Scalar>(cm.coeffs().len().max(1))?;
        let events = [self.gpu.event()?, self.gpu.event()?, self.gpu.event()?, self.gpu.event()?];
        let [c0, c1, u0, u1] = events;
        // SAFETY: the table lives in `m`, borrowed by the returned stream for
        // 'a; that stream waits for its copies before it drops (`Drop`),
        // and on an error here `coeffs` waits for this copy as it drops.
        unsafe { coeffs.upload_async(0, cm.coeffs(), copy) }?;
        let table = self.gpu.event()?;
        table.record(copy)?;
        Ok(AbcStream { abc: self, m, coeffs, slots, copied: [c0, c1], consumed: [u0, u1], table, next: 0 })
    }

    /// Expands a compact witness into    /// Expands a compact witness into `z[offset..offset + w.len()]` on the
    /// device: its bits, indices and values uploaded into temporaries from
    /// `scratch` (`w.bytes()` cross PCIe instead of 32 per variable), then
    /// the two expansion kernels on `stream`; returns when `z` holds the
    /// values and the temporaries are free again.
    pub fn expand_witness(
        &self,
        w: &CompactWitness,
        z: &mut DeviceBuffer<Scalar>,
        offset: usize,
        scratch: &DeviceMemory,
        stream: &Stream,
    ) -> Result<(), AbcError> {
        if offset + w.len() > z.len() {
            return Err(AbcError::Malformed(format!(
                "a witness of {} at offset {offset} in a vector of {}",
                w.len(),
                z.len()
            )));
        }
        if w.is_empty() {
            return Ok(());
        }
        let mut bits = scratch.alloc::<u64>(w.bits().len().max(1))?;
        // SAFETY: `w`'s vectors are pageable (staged by the driver before
        // it returns) and borrowed until `stream` is synchronised below.
        unsafe { bits.upload_async(0, w.bits(), stream) }?;
        let dst = z.device_ptr() + (offset * std::mem::size_of::<Scalar>()) as u64;
        // c2_witness_bits(z + offset, bits, n)
        let args = (dst, bits.device_ptr(), w.len() as u64);
        // SAFETY: z holds offset + len elements (checked above); `bits`
        // holds len.div_ceil(64) words, uploaded on the same stream.
        unsafe { self.witness_bits.launch(stream, Launch::new(grid_for(w.len()), THREADS), args) }?;
        let m = w.full_index().len();
        let (mut index, mut value) = (scratch.alloc::<u32>(m.max(1))?, scratch.alloc::<Scalar>(m.max(1))?);
        if m > 0 {
            // SAFETY: as for `bits`.
            unsafe { index.upload_async(0, w.full_index(), stream) }?;
            // SAFETY: as for `bits`.
            unsafe { value.upload_async(0, w.full_value(), stream) }?;
            // c2_witness_scatter(z + offset, index, value, m), after the bits.
            let args = (dst, index.device_ptr(), value.device_ptr(), m as u64);
            // SAFETY: every index is < len (the compact form's invariant:
            // indices of its own variables); index and value hold m each.
            unsafe { self.witness_scatter.launch(stream, Launch::new(grid_for(m), THREADS), args) }?;
        }
        // The uploads above read host memory and the kernels the temporary
        // buffers: both must be done before they are dropped.
        stream.synchronize()?;
        Ok(())
    }

    /// The satisfaction check on device vectors: the smallest `i < n` with
    /// `a_i · b_i ≠ c_i` (`None`: all `n` constraints hold), queued on
    /// `stream` and waited for. `n` counts constraints, input constraints
    /// included; the padding beyond is not checked.
    pub fn first_unsatisfied_device(
        &self,
        a: &DeviceBuffer<Scalar>,
        b: &DeviceBuffer<Scalar>,
        c: &DeviceBuffer<Scalar>,
        n: usize,
        stream: &Stream,
    ) -> Result<Option<usize>, AbcError> {
        if a.len().min(b.len()).min(c.len()) < n {
            return Err(AbcError::Malformed(format!(
                "{n} constraints to check in vectors of {} / {} / {}",
                a.len(),
                b.len(),
                c.len()
            )));
        }
        let mut first = self.memory.alloc::<u64>(1)?;
        let start = [n as u64];
        first.upload(0, &start, stream)?;
        // c2_abc_unsatisfied(a, b, c, n, first)
        let args = (a.device_ptr(), b.device_ptr(), c.device_ptr(), n as u64, first.device_ptr());
        // SAFETY: a, b, c hold at least n elements (checked above); `first`
        // is one u64, initialised to n on the same stream.
        unsafe { self.unsatisfied.launch(stream, Launch::new(grid_for(n), THREADS), args) }?;
        let mut out = [0u64];
        // Returns when the copy, after the kernel, is done.
        first.download(0, &mut out, stream)?;
        Ok((out[0] < n as u64).then_some(out[0] as usize))
    }

    /// The satisfaction check of a witness against the matrices, on the
    /// device: a, b, c from [`GpuAbc::product_device`], then
    /// [`GpuAbc::first_unsatisfied_device`] (the full-size correctness
    /// oracle where no parameters exist).
    pub fn first_unsatisfied(
        &self,
        m: &DeviceMatrices,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Result<Option<usize>, AbcError> {
        let (z, _stager) = self.upload_witness(m, inputs, aux)?;
        let stream = self.gpu.stream()?;
        let rows = m.constraints().max(1);
        let mut abc = Vec::with_capacity(3);
        for which in 0..3 {
            let mut out = self.memory.alloc::<Scalar>(rows)?;
            self.product_device(m, which, &z, &mut out, &stream)?;
            abc.push(out);
        }
        self.first_unsatisfied_device(&abc[0], &abc[1], &abc[2], m.constraints(), &stream)
    }

    /// z = (inputs, aux) checked against `m`'s shape and uploaded (host-level
    /// entry points), with the stager for any download that follows.
    fn upload_witness(
        &self,
        m: &DeviceMatrices,
        inputs: &[Scalar],
        aux: &[Scalar],
    ) -> Result<(DeviceBuffer<Scalar>, Stager), AbcError> {
        crate::witness_fits((m.inputs, m.aux), inputs.len(), aux.len())?;
        let mut stager = Stager::new(&self.gpu, STAGING_BYTES)?;
        let mut z = self.memory.alloc::<Scalar>((m.inputs + m.aux).max(1))?;
        stager.upload(&mut z, 0, inputs)?;
        stager.upload(&mut z, m.inputs, aux)?;
        stager.stream().synchronize()?;
        Ok((z, stager))
    }

    /// Host-level a, b, c (for tests and one-off use): z uploaded, the three
    /// products, downloaded. `m` from [`GpuAbc::upload`].
    pub fn evaluate(&self, m: &DeviceMatrices, inputs: &[Scalar], aux: &[Scalar]) -> Result<Abc, AbcError> {
        let (z, mut stager) = self.upload_witness(m, inputs, aux)?;
        let stream = self.gpu.stream()?;
        let rows = m.constraints();
        let mut out = self.memory.alloc::<Scalar>(rows.max(1))?;
        let mut result = Vec::with_capacity(3);
        for which in 0..3 {
            self.product_device(m, which, &z, &mut out, &stream)?;
            let mut host: Vec<MaybeUninit<Scalar>> = Vec::with_capacity(rows);
            // SAFETY: MaybeUninit needs no initialisation; download writes
            // every element before we read them (Ok below).
            unsafe { host.set_len(rows) };
            stager.download(&out, 0, &mut host, &stream)?;
            // SAFETY: every element was written by the download.
            result.push(host.into_iter().map(|x| unsafe { x.assume_init() }).collect::<Vec<_>>());
        }
        let c = result.pop().unwrap_or_default();
        let b = result.pop().unwrap_or_default();
        let a = result.pop().unwrap_or_default();
        Ok((a, b, c))
    }
}

/// Device addresses of one matrix's (or chunk's) CSR arrays.
struct RowsArgs {
    row_starts: u64,
    cols: u64,
    coeff_index: u64,
    long_rows: u64,
    n_long: usize,
}

/// A shape's [`ChunkedMatrices`] page-locked once per process (portable:
/// every device's copies read them by DMA; 7.4 GB at 32 GiB, streamed per
/// partition in ~0.15 s at the H200's 55 GB/s instead of staged).
pub struct PinnedChunks {
    matrices: Arc<ChunkedMatrices>,
    /// The registration of `matrices`' words, held while this lives.
    _pinned: PinnedShared<u32>,
}

impl PinnedChunks {
    /// Page-locks `m`'s chunks (registered through `gpu`'s context).
    pub fn new(gpu: &Arc<Gpu>, m: Arc<ChunkedMatrices>) -> Result<Self, GpuError> {
        let pinned = PinnedShared::new(gpu, m.data().clone())?;
        Ok(Self { matrices: m, _pinned: pinned })
    }

    /// Holds `m` without page-locking it: copies are pageable (slower,
    /// same results).
    pub fn unregistered(m: Arc<ChunkedMatrices>) -> Self {
        let pinned = PinnedShared::unregistered(m.data().clone());
        Self { matrices: m, _pinned: pinned }
    }

    /// The chunked matrices.
    pub fn matrices(&self) -> &ChunkedMatrices {
        &self.matrices
    }
}

/// One partition's streamed products (from [`GpuAbc::stream_matrices`]):
/// chunk k + 1 is copied into one slot on the copy stream while chunk k's
/// rows are computed from the other, events handing each slot over. On
/// drop it waits for its copies and kernels, so its slots never go back to
/// the arena while read or written.
pub struct AbcStream<'a> {
    abc: &'a GpuAbc,
    m: &'a PinnedChunks,
    coeffs: DeviceBuffer<Scalar>,
    slots: [DeviceBuffer<u32>; 2],
    /// Recorded on the copy stream after a chunk's copy into the slot.
    copied: [Event; 2],
    /// Recorded on the compute stream after the slot's kernels.
    consumed: [Event; 2],
    /// The coefficient table's upload.
    table: Event,
    /// The slot the next chunk goes to.
    next: usize,
}

impl AbcStream<'_> {
    /// `out[..rows] = M·z` for matrix `which` (0 = A, 1 = B, 2 = C) and
    /// zeros in the rest of `out`: chunks copied on `copy`, kernels queued
    /// on `stream` (which waits for each copy). `z` holds (inputs, aux) in
    /// Montgomery form.
    pub fn product(
        &mut self,
        which: usize,
        z: &DeviceBuffer<Scalar>,
        out: &mut DeviceBuffer<Scalar>,
        copy: &Stream,
        stream: &Stream,
    ) -> Result<(), AbcError> {
        let cm = self.m.matrices();
        if which >= 3 {
            return Err(AbcError::Malformed(format!("matrix {which} of 3")));
        }
        let (inputs, aux) = cm.witness_shape();
        if z.len() < inputs + aux {
            return Err(AbcError::WitnessShape { inputs: z.len(), aux: 0, want_inputs: inputs, want_aux: aux });
        }
        let rows = cm.constraints();
        if out.len() < rows {
            return Err(AbcError::Malformed(format!("output of {} for {rows} rows", out.len())));
        }
        out.zero_tail_async(rows, stream)?;
        stream.wait(&self.table)?;
        for c in cm.chunks(which) {
            let i = self.next;
            self.next ^= 1;
            // The slot's previous kernels are done before it is overwritten.
            copy.wait(&self.consumed[i])?;
            // The chunk's words lie in the page-locked vector (the same
            // shared data `PinnedChunks` registered): DMA straight from it.
            // SAFETY: the words lie in `self.m`, borrowed for 'a, and this
            // stream waits for its copies before it drops (`Drop`).
            unsafe { self.slots[i].upload_async(0, cm.chunk_words(c), copy) }?;
            self.copied[i].record(copy)?;
            stream.wait(&self.copied[i])?;
            let (cols, coeff_index, long) = c.sections();
            let at = |w: usize| self.slots[i].device_ptr() + 4 * w as u64;
            let csr = RowsArgs {
                row_starts: at(0),
                cols: at(cols),
                coeff_index: at(coeff_index),
                long_rows: at(long),
                n_long: c.long_rows,
            };
            let out_ptr = out.device_ptr() + (c.row0 * std::mem::size_of::<Scalar>()) as u64;
            // SAFETY: the chunk was cut from validated matrices
            // (`ChunkedMatrices::new`): rebased row starts index its own
            // entries, columns < inputs + aux <= z.len() (checked above),
            // coefficient indices < the table, long rows < its rows; the
            // slot holds the chunk (slot_words is the largest); out holds
            // row0 + rows <= constraints <= out.len() elements. The slot and
            // table live until drop, which waits for these kernels.
            unsafe {
                self.abc.launch_rows(
                    out_ptr,
                    &csr,
                    self.coeffs.device_ptr(),
                    cm.one_index(),
                    z,
                    c.rows,
                    c.rows,
                    NO_SHIFT,
                    stream,
                )
            }?;
            self.consumed[i].record(stream)?;
        }
        Ok(())
    }
}

impl Drop for AbcStream<'_> {
    fn drop(&mut self) {
        // A never-recorded event counts as complete.
        for e in self.copied.iter().chain(&self.consumed).chain([&self.table]) {
            if let Err(x) = e.synchronize() {
                log::warn!("c2-abc: waiting for a streamed chunk: {x}");
            }
        }
    }
}
