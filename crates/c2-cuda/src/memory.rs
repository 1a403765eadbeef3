//! Device memory (feature `cuda`): typed buffers, and where they come
//! from (the driver, or an arena reserved once).

use std::marker::PhantomData;
use std::sync::Arc;

use cuda_driver_sys as sys;

use crate::call::check;
use crate::device::Gpu;
use crate::plain::{bytes_of, bytes_of_mut};
use crate::stream::Stream;
use crate::{DeviceCopy, GpuError};

/// A reservation of device memory that hands out ranges of itself
/// (c2-vram's `VramPool`): buffers drawn from it cost no driver call and no
/// implicit device synchronisation, and running out is a typed
/// [`GpuError::OutOfBudget`].
///
/// A range goes back to the arena the moment its [`DeviceBuffer`] drops, and
/// the arena may hand it out again at once: drop a buffer only after the
/// work queued on it has finished (synchronise its stream or an event).
pub trait DeviceArena: Send + Sync {
    /// The device the reservation is on.
    fn gpu(&self) -> &Arc<Gpu>;
    /// `bytes` of the reservation: the range's device address (aligned to
    /// 256 bytes) and a lease that returns the range when dropped.
    fn reserve(&self, bytes: usize) -> Result<(u64, Box<dyn Send + Sync>), GpuError>;
    /// The largest request that would succeed now.
    fn largest_free(&self) -> usize;
}

/// Where a stage's device buffers come from: one driver allocation per
/// buffer ([`DeviceMemory::driver`]), or ranges of an arena reserved once
/// ([`DeviceMemory::arena`]). Cheap to clone; stages take one at
/// construction, so the caller decides for all of them.
#[derive(Clone)]
pub struct DeviceMemory {
    gpu: Arc<Gpu>,
    arena: Option<Arc<dyn DeviceArena>>,
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = if self.arena.is_some() { "arena" } else { "driver" };
        write!(f, "DeviceMemory({}, {source})", self.gpu.info().ordinal)
    }
}

impl DeviceMemory {
    /// `cuMemAlloc` / `cuMemFree` per buffer.
    pub fn driver(gpu: Arc<Gpu>) -> Self {
        Self { gpu, arena: None }
    }

    /// Ranges of `arena`.
    pub fn arena(arena: Arc<dyn DeviceArena>) -> Self {
        Self { gpu: arena.gpu().clone(), arena: Some(arena) }
    }

    /// The device.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// True when buffers come from an arena.
    pub fn is_arena(&self) -> bool {
        self.arena.is_some()
    }

    /// `len` elements of uninitialised device memory.
    pub fn alloc<T: DeviceCopy>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        let Some(arena) = &self.arena else {
            return self.gpu.alloc(len);
        };
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| GpuError::Invalid(format!("allocation of {len} elements overflows")))?;
        if bytes == 0 {
            return Ok(DeviceBuffer::from_parts(0, len, self.gpu.clone(), None));
        }
        let (ptr, lease) = arena.reserve(bytes)?;
        Ok(DeviceBuffer::from_parts(ptr, len, self.gpu.clone(), Some(lease)))
    }

    /// Bytes one more allocation may take now: the arena's largest free
    /// range, or the driver's free memory.
    pub fn available(&self) -> Result<usize, GpuError> {
        match &self.arena {
            Some(a) => Ok(a.largest_free()),
            None => Ok(self.gpu.memory()?.0),
        }
    }
}

/// Device memory holding `len` values of `T` (plain bytes: [`DeviceCopy`]).
pub struct DeviceBuffer<T> {
    ptr: sys::CUdeviceptr,
    len: usize,
    gpu: Arc<Gpu>,
    /// Set when the memory is a range of a [`DeviceArena`]: dropping it
    /// returns the range (instead of `cuMemFree`).
    lease: Option<Box<dyn Send + Sync>>,
    _t: PhantomData<T>,
}

// SAFETY: device memory is not tied to a host thread.
unsafe impl<T> Send for DeviceBuffer<T> {}
unsafe impl<T> Sync for DeviceBuffer<T> {}

impl<T> DeviceBuffer<T> {
    pub(crate) fn from_parts(ptr: u64, len: usize, gpu: Arc<Gpu>, lease: Option<Box<dyn Send + Sync>>) -> Self {
        Self { ptr, len, gpu, lease, _t: PhantomData }
    }
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw device address (for kernel arguments).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    fn range_check(&self, offset: usize, n: usize) -> Result<(), GpuError> {
        if offset.checked_add(n).is_none_or(|end| end > self.len) {
            return Err(GpuError::Invalid(format!(
                "copy of {n} elements at {offset} exceeds a buffer of {}",
                self.len
            )));
        }
        Ok(())
    }

    /// Queues a host-to-device copy of `src` to element `offset`. For a truly
    /// asynchronous copy `src` must be pinned ([`crate::PinnedRange`]); the caller
    /// keeps it alive until the stream has passed this point.
    pub fn upload_async(&mut self, offset: usize, src: &[T], stream: &Stream) -> Result<(), GpuError> {
        self.upload_bytes_async(offset, bytes_of(src), stream)
    }

    /// Queues a device-to-host copy from element `offset` into `dst`.
    pub fn download_async(&self, offset: usize, dst: &mut [T], stream: &Stream) -> Result<(), GpuError> {
        self.download_bytes_async(offset, bytes_of_mut(dst), stream)
    }

    /// Queues a host-to-device copy of `src`, the bytes of whole elements,
    /// to element `offset` (the staging path's slots are untyped bytes).
    pub(crate) fn upload_bytes_async(&mut self, offset: usize, src: &[u8], stream: &Stream) -> Result<(), GpuError> {
        let sz = std::mem::size_of::<T>().max(1);
        if !src.len().is_multiple_of(sz) {
            return Err(GpuError::Invalid(format!("{} bytes are not whole elements of {sz}", src.len())));
        }
        self.range_check(offset, src.len() / sz)?;
        if src.is_empty() {
            return Ok(());
        }
        self.gpu.bind()?;
        // SAFETY: range checked; src valid for its length.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(self.ptr + (offset * sz) as u64, src.as_ptr().cast(), src.len(), stream.raw())
        })
    }

    /// Queues a device-to-host copy of `dst.len()` bytes (whole elements)
    /// from element `offset`.
    pub(crate) fn download_bytes_async(&self, offset: usize, dst: &mut [u8], stream: &Stream) -> Result<(), GpuError> {
        let sz = std::mem::size_of::<T>().max(1);
        if !dst.len().is_multiple_of(sz) {
            return Err(GpuError::Invalid(format!("{} bytes are not whole elements of {sz}", dst.len())));
        }
        self.range_check(offset, dst.len() / sz)?;
        if dst.is_empty() {
            return Ok(());
        }
        self.gpu.bind()?;
        // SAFETY: range checked; dst valid for its length.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), self.ptr + (offset * sz) as u64, dst.len(), stream.raw())
        })
    }

    /// Queues a device-to-device copy of all of `src` to element `offset`.
    pub fn copy_from_async(&mut self, offset: usize, src: &DeviceBuffer<T>, stream: &Stream) -> Result<(), GpuError> {
        self.copy_range_from_async(offset, src, 0, src.len, stream)
    }

    /// Queues a device-to-device copy of `src[src_offset..src_offset + len]`
    /// to element `offset`.
    pub fn copy_range_from_async(
        &mut self,
        offset: usize,
        src: &DeviceBuffer<T>,
        src_offset: usize,
        len: usize,
        stream: &Stream,
    ) -> Result<(), GpuError> {
        self.range_check(offset, len)?;
        src.range_check(src_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: both ranges checked.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(
                self.ptr + (offset * sz) as u64,
                src.ptr + (src_offset * sz) as u64,
                len * sz,
                stream.raw(),
            )
        })
    }

    /// Queues zero bytes over elements `offset..len`.
    pub fn zero_tail_async(&mut self, offset: usize, stream: &Stream) -> Result<(), GpuError> {
        self.zero_async(offset, self.len.saturating_sub(offset), stream)
    }

    /// Queues zero bytes over elements `offset..offset + len`.
    pub fn zero_async(&mut self, offset: usize, len: usize, stream: &Stream) -> Result<(), GpuError> {
        self.range_check(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: in range.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(self.ptr + (offset * sz) as u64, 0, len * sz, stream.raw())
        })
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.lease.take().is_some() {
            return; // the range went back to its arena
        }
        if self.ptr != 0 {
            let _ = self.gpu.bind();
            // SAFETY: allocated by cuMemAlloc in this context.
            unsafe {
                let _ = sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// Driver allocations (here, next to the buffer type).
impl Gpu {
    /// `len` elements of uninitialised device memory.
    pub fn alloc<T: DeviceCopy>(self: &Arc<Self>, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        self.bind()?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| GpuError::Invalid(format!("allocation of {len} elements overflows")))?;
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            // SAFETY: valid out-pointer.
            check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
        }
        Ok(DeviceBuffer::from_parts(ptr, len, self.clone(), None))
    }
}
