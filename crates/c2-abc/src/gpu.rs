//! The GPU sparse product (feature `cuda`): the kernel in
//! `cuda-kernels/abc/sparse.cuh`, one thread per row, from matrices kept on
//! the device ([`DeviceMatrices`]: uploaded once per circuit shape and
//! device, beside the parameters) and a witness already there.

use std::mem::MaybeUninit;
use std::sync::Arc;

use blstrs::Scalar;
use c2_cuda::{DeviceBuffer, DeviceMemory, Gpu, GpuError, Kernel, KernelId, Launch, Stager, Stream};
use ff::Field;
use rayon::prelude::*;

use crate::{Abc, AbcError, CompactWitness, CsrView, MatricesView};

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

/// Rows longer than this go to the warp-per-row kernel (`abc::LONG_ROW` in
/// `cuda-kernels/abc/sparse.cuh`; the two must agree).
const LONG_ROW: u64 = 32;

/// A circuit shape's A, B, C on one device.
pub struct DeviceMatrices {
    inputs: usize,
    aux: usize,
    coeffs: DeviceBuffer<Scalar>,
    /// Index of the coefficient ONE (u32::MAX when the table has none).
    one_index: u32,
    /// A, B, C.
    mats: [DeviceCsr; 3],
}

impl DeviceMatrices {
    /// Device bytes of the three matrices and the coefficient table.
    pub fn bytes(&self) -> usize {
        self.mats.iter().map(DeviceCsr::bytes).sum::<usize>() + 32 * self.coeffs.len()
    }

    /// Device bytes `view` takes once uploaded (for planning).
    pub fn bytes_for(view: &MatricesView<'_>) -> usize {
        // (The long-row lists are at most entries / 33 rows: left out.)
        let m = |x: &CsrView<'_>| 4 * (x.row_starts.len() + 2 * x.cols.len());
        m(&view.a) + m(&view.b) + m(&view.c) + 32 * view.coeffs.len()
    }

    /// Constraints (rows).
    pub fn constraints(&self) -> usize {
        self.mats[0].rows
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
        let up32 = |stager: &mut Stager, v: &[u32]| -> Result<DeviceBuffer<u32>, GpuError> {
            let mut d = self.memory.alloc::<u32>(v.len().max(1))?;
            stager.upload(&mut d, 0, v)?;
            Ok(d)
        };
        let mut mats = Vec::with_capacity(3);
        for (name, m) in [("A", &view.a), ("B", &view.b), ("C", &view.c)] {
            if m.entries() > u32::MAX as usize {
                return Err(AbcError::Malformed(format!("{name}: {} entries, more than 2^32", m.entries())));
            }
            let starts: Vec<u32> = m.row_starts.iter().map(|&s| s as u32).collect();
            let long: Vec<u32> = (0..m.rows())
                .into_par_iter()
                .filter(|&r| m.row_starts[r + 1] - m.row_starts[r] > LONG_ROW)
                .map(|r| r as u32)
                .collect();
            mats.push(DeviceCsr {
                row_starts: up32(&mut stager, &starts)?,
                cols: up32(&mut stager, m.cols)?,
                coeff_index: up32(&mut stager, m.coeff_index)?,
                rows: m.rows(),
                long_rows: up32(&mut stager, &long)?,
                n_long: long.len(),
            });
            // The staged copies of `starts` are queued; it is dropped after
            // the stream has read it.
            stager.stream().synchronize()?;
        }
        let mut coeffs = self.memory.alloc::<Scalar>(view.coeffs.len().max(1))?;
        stager.upload(&mut coeffs, 0, view.coeffs)?;
        stager.stream().synchronize()?;
        let one_index = view.coeffs.iter().position(|c| *c == Scalar::ONE).map_or(u32::MAX, |i| i as u32);
        let mats: [DeviceCsr; 3] = mats.try_into().map_err(|_| AbcError::Malformed("three matrices".into()))?;
        Ok(DeviceMatrices { inputs: view.inputs, aux: view.aux, coeffs, one_index, mats })
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
        if out.len() < mat.rows {
            return Err(AbcError::Malformed(format!("output of {} for {} rows", out.len(), mat.rows)));
        }
        let n = out.len();
        // c2_abc_rows(out, row_starts, cols, coeff_index, coeffs, z, rows, one_index, out_len)
        let args = (
            out.device_ptr(),
            mat.row_starts.device_ptr(),
            mat.cols.device_ptr(),
            mat.coeff_index.device_ptr(),
            m.coeffs.device_ptr(),
            z.device_ptr(),
            mat.rows as u64,
            m.one_index,
            n as u64,
        );
        // SAFETY: the matrices were validated at upload (every column < the
        // witness length checked above, every index < the table), `out`
        // holds `n` >= rows elements.
        unsafe { self.rows.launch(stream, Launch::new(grid_for(n), THREADS), args) }?;
        if mat.n_long > 0 {
            // c2_abc_long_rows(out, row_starts, cols, coeff_index, coeffs, z, long_rows, n_long, one_index),
            // after the short rows on the same stream.
            let args = (
                out.device_ptr(),
                mat.row_starts.device_ptr(),
                mat.cols.device_ptr(),
                mat.coeff_index.device_ptr(),
                m.coeffs.device_ptr(),
                z.device_ptr(),
                mat.long_rows.device_ptr(),
                mat.n_long as u64,
                m.one_index,
            );
            // SAFETY: as above; `long_rows` holds `n_long` row indices < rows.
            unsafe { self.long_rows.launch(stream, Launch::new(grid_for(32 * mat.n_long), THREADS), args) }?;
        }
        Ok(())
    }

    /// Expands a compact witness into `z[offset..offset + w.len()]` on the
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
        bits.upload_async(0, w.bits(), stream)?;
        let dst = z.device_ptr() + (offset * std::mem::size_of::<Scalar>()) as u64;
        // c2_witness_bits(z + offset, bits, n)
        let args = (dst, bits.device_ptr(), w.len() as u64);
        // SAFETY: z holds offset + len elements (checked above); `bits`
        // holds len.div_ceil(64) words, uploaded on the same stream.
        unsafe { self.witness_bits.launch(stream, Launch::new(grid_for(w.len()), THREADS), args) }?;
        let m = w.full_index().len();
        let (mut index, mut value) = (scratch.alloc::<u32>(m.max(1))?, scratch.alloc::<Scalar>(m.max(1))?);
        if m > 0 {
            index.upload_async(0, w.full_index(), stream)?;
            value.upload_async(0, w.full_value(), stream)?;
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
        first.upload_async(0, &start, stream)?;
        // c2_abc_unsatisfied(a, b, c, n, first)
        let args = (a.device_ptr(), b.device_ptr(), c.device_ptr(), n as u64, first.device_ptr());
        // SAFETY: a, b, c hold at least n elements (checked above); `first`
        // is one u64, initialised to n on the same stream.
        unsafe { self.unsatisfied.launch(stream, Launch::new(grid_for(n), THREADS), args) }?;
        let mut out = [0u64];
        first.download_async(0, &mut out, stream)?;
        stream.synchronize()?;
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
        if (inputs.len(), aux.len()) != (m.inputs, m.aux) {
            return Err(AbcError::WitnessShape {
                inputs: inputs.len(),
                aux: aux.len(),
                want_inputs: m.inputs,
                want_aux: m.aux,
            });
        }
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
