//! Device memory (feature `cuda`): typed buffers, and where they come
//! from (the driver, or an arena reserved once).

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::device::Gpu;
use crate::driver::{check, CuDevicePtr, CuStream};
use crate::plain::{bytes_of, bytes_of_mut};
use crate::stream::{Event, Stream};
use crate::{DeviceCopy, GpuError};

/// Where the work queued on one buffer has got to: per stream that touched
/// it, an event recorded after its last operation there. A buffer waits for
/// them before its memory is freed or returned to an arena, so safe code
/// cannot hand device memory to someone else while queued copies still
/// write it.
#[derive(Default)]
pub(crate) struct Fence {
    marks: Mutex<Vec<(CuStream, Event)>>,
    /// A record failed after an operation was queued: the marks do not
    /// cover it, so the whole device is synchronised instead.
    unfenced: std::sync::atomic::AtomicBool,
}

// SAFETY: the stream handles are only compared (never called through);
// events are Send + Sync.
unsafe impl Send for Fence {}
// SAFETY: as above; the list is behind a mutex.
unsafe impl Sync for Fence {}

impl Fence {
    /// Records `stream`'s current end after an operation queued there.
    pub(crate) fn record(&self, gpu: &Arc<Gpu>, stream: &Stream) -> Result<(), GpuError> {
        let result = self.try_record(gpu, stream);
        if result.is_err() {
            self.unfenced.store(true, std::sync::atomic::Ordering::Release);
        }
        result
    }

    fn try_record(&self, gpu: &Arc<Gpu>, stream: &Stream) -> Result<(), GpuError> {
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, e)) = marks.iter().find(|(s, _)| *s == stream.raw()) {
            return e.record(stream);
        }
        let e = gpu.marker()?;
        e.record(stream)?;
        marks.push((stream.raw(), e));
        Ok(())
    }

    /// Blocks until every operation recorded so far has finished.
    pub(crate) fn wait(&self, gpu: &Gpu) -> Result<(), GpuError> {
        if self.unfenced.load(std::sync::atomic::Ordering::Acquire) {
            gpu.synchronize()?;
        }
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks.iter().try_for_each(|(_, e)| e.synchronize())
    }
}

/// A reservation of device memory that hands out ranges of itself
/// (c2-vram's `VramPool`): buffers drawn from it cost no driver call and no
/// implicit device synchronisation, and running out is a typed
/// [`GpuError::OutOfBudget`].
///
/// A range goes back to the arena when its [`DeviceBuffer`] drops, after
/// the copies and fills queued on it through safe calls have finished (the
/// buffer waits for them); kernels launched on it are the launch's contract
/// ([`crate::Kernel::launch`]: the buffers outlive the work).
///
/// # Safety
/// `reserve` must return the address of `bytes` bytes of device memory of
/// `gpu()`'s context that nothing else uses until the returned lease drops:
/// safe copies and fills write through it.
pub unsafe trait DeviceArena: Send + Sync {
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
///
/// Copies and fills queued through its safe methods are recorded in the
/// buffer; dropping it waits for them before the memory is freed or goes
/// back to its arena. Host memory in a copy is the copy's business: the
/// safe [`DeviceBuffer::upload`] / [`DeviceBuffer::download`] return when it
/// is done with, the asynchronous forms are `unsafe` with that contract.
pub struct DeviceBuffer<T> {
    ptr: CuDevicePtr,
    len: usize,
    gpu: Arc<Gpu>,
    /// Set when the memory is a range of a [`DeviceArena`]: dropping it
    /// returns the range (instead of `cuMemFree`).
    lease: Option<Box<dyn Send + Sync>>,
    fence: Fence,
    _t: PhantomData<T>,
}

// SAFETY: device memory is not tied to a host thread; `T` is only ever
// moved as bytes by the device (DeviceCopy: Send + Sync plain data).
unsafe impl<T> Send for DeviceBuffer<T> {}
// SAFETY: as above; shared access only reads the handle or queues reads.
unsafe impl<T> Sync for DeviceBuffer<T> {}

impl<T> DeviceBuffer<T> {
    pub(crate) fn from_parts(ptr: u64, len: usize, gpu: Arc<Gpu>, lease: Option<Box<dyn Send + Sync>>) -> Self {
        Self { ptr, len, gpu, lease, fence: Fence::default(), _t: PhantomData }
    }

    /// Records that work on `stream` uses this buffer up to the stream's
    /// current end: dropping the buffer waits for it. For kernels that write
    /// the buffer and whose completion the caller does not otherwise wait
    /// for before the buffer drops.
    pub fn hold_until(&self, stream: &Stream) -> Result<(), GpuError> {
        self.fence.record(&self.gpu, stream)
    }

    /// Blocks until every copy and fill queued on this buffer (and every
    /// [`DeviceBuffer::hold_until`]) has finished.
    pub fn settle(&self) -> Result<(), GpuError> {
        self.fence.wait(&self.gpu)
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

    /// Copies `src` to element `offset` on `stream` (after the work queued
    /// there) and returns when the copy has finished, so `src` may be
    /// anything: pageable or page-locked, dropped or changed right after.
    /// For copies that overlap other work use [`crate::Stager::upload`] or
    /// [`DeviceBuffer::upload_async`].
    pub fn upload(&mut self, offset: usize, src: &[T], stream: &Stream) -> Result<(), GpuError> {
        // SAFETY: the copy has finished when `settle` returns, before the
        // borrow of `src` ends; on an error the buffer waits for the device.
        unsafe { self.upload_bytes_async(offset, bytes_of(src), stream) }?;
        self.settle()
    }

    /// Copies elements `offset..offset + dst.len()` into `dst` on `stream`
    /// (after the work queued there) and returns when the copy has finished.
    pub fn download(&self, offset: usize, dst: &mut [T], stream: &Stream) -> Result<(), GpuError> {
        // SAFETY: as in `upload`: finished before the borrow of `dst` ends.
        unsafe { self.download_bytes_async(offset, bytes_of_mut(dst), stream) }?;
        self.settle()
    }

    /// Queues a host-to-device copy of `src` to element `offset`.
    ///
    /// # Safety
    /// If `src` is page-locked ([`crate::PinnedBuffer`], [`crate::PinnedRange`],
    /// [`crate::PinnedShared`] or registered by anyone else), the device
    /// reads it after this returns: it must stay allocated and unchanged
    /// until `stream` has passed this point. Pageable memory (an ordinary
    /// allocation) has no such requirement: the driver copies it to its own
    /// staging memory before returning.
    pub unsafe fn upload_async(&mut self, offset: usize, src: &[T], stream: &Stream) -> Result<(), GpuError> {
        // SAFETY: the caller's contract.
        unsafe { self.upload_bytes_async(offset, bytes_of(src), stream) }
    }

    /// Queues a device-to-host copy from element `offset` into `dst`.
    ///
    /// # Safety
    /// If `dst` is page-locked, the device writes it after this returns: it
    /// must stay allocated and must not be read or written until `stream`
    /// has passed this point. Into pageable memory the driver returns only
    /// when the copy has finished.
    pub unsafe fn download_async(&self, offset: usize, dst: &mut [T], stream: &Stream) -> Result<(), GpuError> {
        // SAFETY: the caller's contract.
        unsafe { self.download_bytes_async(offset, bytes_of_mut(dst), stream) }
    }

    /// Queues a host-to-device copy of `src`, the bytes of whole elements,
    /// to element `offset` (the staging path's slots are untyped bytes).
    ///
    /// # Safety
    /// As [`DeviceBuffer::upload_async`].
    pub(crate) unsafe fn upload_bytes_async(
        &mut self,
        offset: usize,
        src: &[u8],
        stream: &Stream,
    ) -> Result<(), GpuError> {
        let sz = std::mem::size_of::<T>().max(1);
        if !src.len().is_multiple_of(sz) {
            return Err(GpuError::Invalid(format!("{} bytes are not whole elements of {sz}", src.len())));
        }
        self.range_check(offset, src.len() / sz)?;
        if src.is_empty() {
            return Ok(());
        }
        self.same_device(stream)?;
        self.gpu.bind()?;
        // SAFETY: the device range is checked above and `src` is valid for
        // its length now; later reads of it are the caller's contract.
        check("cuMemcpyHtoDAsync", unsafe {
            (self.gpu.driver().cuMemcpyHtoDAsync_v2)(
                self.ptr + (offset * sz) as u64,
                src.as_ptr().cast(),
                src.len(),
                stream.raw(),
            )
        })?;
        self.fence.record(&self.gpu, stream)
    }

    /// Queues a device-to-host copy of `dst.len()` bytes (whole elements)
    /// from element `offset`.
    ///
    /// # Safety
    /// As [`DeviceBuffer::download_async`].
    pub(crate) unsafe fn download_bytes_async(
        &self,
        offset: usize,
        dst: &mut [u8],
        stream: &Stream,
    ) -> Result<(), GpuError> {
        let sz = std::mem::size_of::<T>().max(1);
        if !dst.len().is_multiple_of(sz) {
            return Err(GpuError::Invalid(format!("{} bytes are not whole elements of {sz}", dst.len())));
        }
        self.range_check(offset, dst.len() / sz)?;
        if dst.is_empty() {
            return Ok(());
        }
        self.same_device(stream)?;
        self.gpu.bind()?;
        // SAFETY: the device range is checked above and `dst` is valid for
        // its length now; later writes to it are the caller's contract.
        check("cuMemcpyDtoHAsync", unsafe {
            (self.gpu.driver().cuMemcpyDtoHAsync_v2)(
                dst.as_mut_ptr().cast(),
                self.ptr + (offset * sz) as u64,
                dst.len(),
                stream.raw(),
            )
        })?;
        self.fence.record(&self.gpu, stream)
    }

    /// A stream of another device cannot queue work on this buffer.
    fn same_device(&self, stream: &Stream) -> Result<(), GpuError> {
        if stream.gpu().context.handle() != self.gpu.context.handle() {
            return Err(GpuError::Invalid(format!(
                "a buffer of device {} used on a stream of device {}",
                self.gpu.info().ordinal,
                stream.gpu().info().ordinal
            )));
        }
        Ok(())
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
        self.same_device(stream)?;
        src.same_device(stream)?;
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: both device ranges are checked above; both buffers record
        // the copy and wait for it before their memory goes.
        check("cuMemcpyDtoDAsync", unsafe {
            (self.gpu.driver().cuMemcpyDtoDAsync_v2)(
                self.ptr + (offset * sz) as u64,
                src.ptr + (src_offset * sz) as u64,
                len * sz,
                stream.raw(),
            )
        })?;
        self.fence.record(&self.gpu, stream)?;
        src.fence.record(&src.gpu, stream)
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
        self.same_device(stream)?;
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: the device range is checked above; the buffer records the
        // fill and waits for it before its memory goes.
        check("cuMemsetD8Async", unsafe {
            (self.gpu.driver().cuMemsetD8Async)(self.ptr + (offset * sz) as u64, 0, len * sz, stream.raw())
        })?;
        self.fence.record(&self.gpu, stream)
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        // Queued copies into or out of this memory finish before anyone else
        // may be given it. A device that fails here is failing anyway: the
        // memory is then leaked rather than handed on.
        if self.fence.wait(&self.gpu).is_err() {
            if let Some(lease) = self.lease.take() {
                std::mem::forget(lease);
            }
            return;
        }
        if self.lease.take().is_some() {
            return; // the range went back to its arena
        }
        if self.ptr != 0 {
            let _ = self.gpu.bind();
            // SAFETY: allocated by cuMemAlloc in this context, freed once;
            // the copies recorded on it have finished (above).
            unsafe {
                let _ = (self.gpu.driver().cuMemFree_v2)(self.ptr);
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
        let mut ptr: CuDevicePtr = 0;
        if bytes > 0 {
            // SAFETY: valid out-pointer; the context is current.
            check("cuMemAlloc", unsafe { (self.driver().cuMemAlloc_v2)(&mut ptr, bytes) })?;
        }
        Ok(DeviceBuffer::from_parts(ptr, len, self.clone(), None))
    }
}
