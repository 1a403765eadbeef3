//! Scalars and density masks on the device.

use std::marker::PhantomData;

use blstrs::Scalar;
use c2_cuda::DeviceBuffer;

use crate::MaskShape;

/// Scalars on the device, in one of the two forms the MSM reads (the
/// conversion to canonical integers happens in the split kernel), possibly a
/// prefix of a larger buffer (e.g. the `2^k − 1` coefficients of H in a
/// `2^k` buffer).
#[derive(Clone, Copy)]
pub struct DeviceScalars<'a> {
    ptr: u64,
    len: usize,
    montgomery: bool,
    _buffer: PhantomData<&'a ()>,
}

impl<'a> DeviceScalars<'a> {
    /// `blstrs::Scalar`'s in-memory form (Montgomery), as synthesis makes
    /// them.
    pub fn montgomery(buffer: &'a DeviceBuffer<Scalar>) -> Self {
        Self { ptr: buffer.device_ptr(), len: buffer.len(), montgomery: true, _buffer: PhantomData }
    }

    /// Canonical little-endian 256-bit integers (`Scalar::to_repr` as u64
    /// words); values >= r are reduced.
    pub fn canonical(buffer: &'a DeviceBuffer<[u64; 4]>) -> Self {
        Self { ptr: buffer.device_ptr(), len: buffer.len(), montgomery: false, _buffer: PhantomData }
    }

    /// `len` Montgomery scalars at the device address `ptr`, which the
    /// caller keeps allocated and unchanged while the result is used (a
    /// chunk slot of the streamed MSM).
    pub(super) fn montgomery_at(ptr: u64, len: usize) -> Self {
        Self { ptr, len, montgomery: true, _buffer: PhantomData }
    }

    /// The first `len` scalars only (no-op when `len` is larger).
    pub fn prefix(self, len: usize) -> Self {
        Self { len: len.min(self.len), ..self }
    }

    /// The scalars after the first `n` (none when `n` is larger): e.g. the
    /// aux part of a witness vector that holds (inputs, aux).
    pub fn skip(self, n: usize) -> Self {
        let n = n.min(self.len);
        Self { ptr: self.ptr + (n * std::mem::size_of::<Scalar>()) as u64, len: self.len - n, ..self }
    }

    /// Number of scalars.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(super) fn ptr(&self) -> u64 {
        self.ptr
    }

    pub(super) fn montgomery_flag(&self) -> u64 {
        u64::from(self.montgomery)
    }
}

/// A compact witness on the device ([`c2_core::CompactWitness`]: one bit
/// per variable for the values 0 and 1, the other values listed with their
/// indices), read by the MSM's split as it is: at 32 GiB a partition's
/// 130.2 M aux scalars are 16 MB of bits and ~3 % listed values instead of
/// 4.2 GB of field elements, so several partitions' witnesses fit on a
/// small card at once (the batched passes, [`crate::gpu::GpuMsm::msm_batch_host_bases`]).
pub struct DeviceCompact {
    pub(super) bits: DeviceBuffer<u64>,
    pub(super) index: DeviceBuffer<u32>,
    pub(super) value: DeviceBuffer<Scalar>,
    pub(super) len: usize,
    pub(super) listed: usize,
}

impl DeviceCompact {
    /// Variables (= scalars of the MSM).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no variable.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Device bytes held (bits, indices, values).
    pub fn bytes(&self) -> usize {
        8 * self.bits.len() + 4 * self.index.len() + 32 * self.value.len()
    }
}

/// The scalars of one MSM on the device: field elements, or a compact
/// witness.
#[derive(Clone, Copy)]
pub enum MsmScalars<'a> {
    /// Field elements ([`DeviceScalars`]).
    Full(DeviceScalars<'a>),
    /// A compact witness ([`DeviceCompact`]).
    Compact(&'a DeviceCompact),
}

impl MsmScalars<'_> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            Self::Full(s) => s.len(),
            Self::Compact(c) => c.len(),
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'a> From<DeviceScalars<'a>> for MsmScalars<'a> {
    fn from(s: DeviceScalars<'a>) -> Self {
        Self::Full(s)
    }
}

impl<'a> From<&'a DeviceCompact> for MsmScalars<'a> {
    fn from(c: &'a DeviceCompact) -> Self {
        Self::Compact(c)
    }
}

/// A density mask on the device: the bit words and, per word, the number of
/// set bits before it (counted once on the host and uploaded), with the
/// ranks' host copy that bounds which scalars a run reads
/// ([`crate::plan::split_items`]; 8 MB for a 32 GiB query's 130 M bits).
pub struct DeviceDensity {
    pub(super) words: DeviceBuffer<u64>,
    pub(super) ranks: DeviceBuffer<u32>,
    pub(super) host_ranks: Vec<u32>,
    pub(super) len: usize,
    pub(super) set: usize,
}

impl DeviceDensity {
    /// Bits in the mask (= scalars of the query).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty mask.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set bits (= bases needed).
    pub fn count_ones(&self) -> usize {
        self.set
    }
}

impl MaskShape for DeviceDensity {
    fn bits(&self) -> usize {
        self.len
    }
    fn ones(&self) -> usize {
        self.set
    }
}
