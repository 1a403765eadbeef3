//! Page-locked host memory (feature `cuda`): copies from and to it run at
//! full PCIe speed and asynchronously.

use std::ffi::c_void;
use std::sync::Arc;

use crate::device::Gpu;
use crate::driver::{check, MEMHOSTREGISTER_PORTABLE};
use crate::{DeviceCopy, GpuError};

/// A host slice page-locked with `cuMemHostRegister` for the lifetime of
/// this guard, so copies from and to it run at full PCIe speed and
/// asynchronously (pageable copies ran at 6 GB/s against 55 GB/s pinned on
/// the H200). Derefs to the slice. Asynchronous copies from or into it are
/// `unsafe` ([`crate::DeviceBuffer::upload_async`]): the device may use it
/// after the call returns.
pub struct PinnedRange<'a, T> {
    slice: &'a mut [T],
    gpu: Arc<Gpu>,
}

impl<'a, T: DeviceCopy> PinnedRange<'a, T> {
    /// Pins `slice` (empty slices are a no-op).
    pub fn new(gpu: &Arc<Gpu>, slice: &'a mut [T]) -> Result<Self, GpuError> {
        if !slice.is_empty() {
            gpu.bind()?;
            // SAFETY: a live host allocation of that size, borrowed for the
            // guard's lifetime; the driver only locks its pages; flags 0.
            check("cuMemHostRegister", unsafe {
                (gpu.driver().cuMemHostRegister_v2)(slice.as_mut_ptr().cast(), std::mem::size_of_val(slice), 0)
            })?;
        }
        Ok(Self { slice, gpu: gpu.clone() })
    }
}

impl<T> std::ops::Deref for PinnedRange<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.slice
    }
}

impl<T> std::ops::DerefMut for PinnedRange<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.slice
    }
}

impl<T> Drop for PinnedRange<'_, T> {
    fn drop(&mut self) {
        if !self.slice.is_empty() {
            let _ = self.gpu.bind();
            // SAFETY: registered in new(), unregistered once.
            unsafe {
                let _ = (self.gpu.driver().cuMemHostUnregister)(self.slice.as_mut_ptr().cast());
            }
        }
    }
}

/// Page-locked host memory from `cuMemAllocHost`: the staging area for
/// chunked copies (allocated once; pinning a fresh 4 GB vector per call cost
/// seconds on the H200, far more than the copy itself). Asynchronous copies
/// from or into it are `unsafe` ([`crate::DeviceBuffer::upload_async`]);
/// [`crate::Stager`] owns its buffers and orders them by events.
pub struct PinnedBuffer<T> {
    ptr: *mut T,
    len: usize,
    gpu: Arc<Gpu>,
}

// SAFETY: plain host memory owned by this value (like a `Box<[T]>`).
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
// SAFETY: as above; `&self` gives shared slices only.
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// `len` elements of pinned host memory, all zeros (a valid value of
    /// every [`DeviceCopy`] type, so the slices below never expose
    /// uninitialised memory; zeroing a 128 MiB staging slot once costs ~20 ms
    /// against the seconds of copies it serves).
    pub fn new(gpu: &Arc<Gpu>, len: usize) -> Result<Self, GpuError> {
        gpu.bind()?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| GpuError::Invalid(format!("pinned allocation of {len} elements overflows")))?;
        let mut p: *mut c_void = std::ptr::null_mut();
        if bytes > 0 {
            // SAFETY: valid out-pointer; the context is current.
            check("cuMemAllocHost", unsafe { (gpu.driver().cuMemAllocHost_v2)(&mut p, bytes) })?;
            // SAFETY: `p` points to `bytes` writable bytes just allocated.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        }
        Ok(Self { ptr: p.cast(), len, gpu: gpu.clone() })
    }

    /// The memory as a slice.
    pub fn as_slice(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: allocated for len elements and zeroed in new(): every
        // element is a valid `T` (DeviceCopy).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The memory as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as above, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            let _ = self.gpu.bind();
            // SAFETY: allocated by cuMemAllocHost, freed once; copies into or
            // out of it were queued by `unsafe` calls whose contract keeps it
            // alive until they finish (or by a `Stager`, which waits first).
            unsafe {
                let _ = (self.gpu.driver().cuMemFreeHost)(self.ptr.cast());
            }
        }
    }
}

/// A shared host vector page-locked with `cuMemHostRegister` (portable: every
/// context sees it as pinned) for the lifetime of this value, which holds a
/// clone of the `Arc` so the memory outlives the registration (the fields
/// drop in order: unregistered first). For vectors that are read-only while
/// shared and copied to devices again and again, e.g. the parameter vectors
/// a device too small to keep them resident streams for every partition:
/// pinned once per process, their copies run at the DMA engine's speed
/// (55 GB/s on the H200) with no host copy, against ~25 GB/s through the
/// staging slots (measured at a 16 GiB cap, session 8).
pub struct PinnedShared<T> {
    /// The context it was registered in; `None`: not registered.
    gpu: Option<Arc<Gpu>>,
    data: Arc<Vec<T>>,
}

impl<T: DeviceCopy> PinnedShared<T> {
    /// Pins `data` (an empty vector is a no-op).
    pub fn new(gpu: &Arc<Gpu>, data: Arc<Vec<T>>) -> Result<Self, GpuError> {
        let bytes = std::mem::size_of_val(data.as_slice());
        if bytes > 0 {
            gpu.bind()?;
            // SAFETY: a live host allocation of `bytes` bytes, kept alive by
            // `data` until drop() has unregistered it. The driver only
            // locks the pages (nothing is written through this pointer).
            check("cuMemHostRegister", unsafe {
                (gpu.driver().cuMemHostRegister_v2)(data.as_ptr().cast_mut().cast(), bytes, MEMHOSTREGISTER_PORTABLE)
            })?;
        }
        Ok(Self { gpu: (bytes > 0).then(|| gpu.clone()), data })
    }

    /// Holds `data` without page-locking it (copies from it are pageable,
    /// still correct): for a registry's tests without a device, or a vector
    /// the driver would not register.
    pub fn unregistered(data: Arc<Vec<T>>) -> Self {
        Self { gpu: None, data }
    }

    /// The pinned elements.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The vector pinned (compare with `Arc::ptr_eq` to find a pin).
    pub fn shared(&self) -> &Arc<Vec<T>> {
        &self.data
    }

    /// Bytes pinned.
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(self.data.as_slice())
    }
}

impl<T> Drop for PinnedShared<T> {
    fn drop(&mut self) {
        if let Some(gpu) = &self.gpu {
            let _ = gpu.bind();
            // SAFETY: registered in new(), unregistered once; `data` is
            // still alive.
            unsafe {
                let _ = (gpu.driver().cuMemHostUnregister)(self.data.as_ptr().cast_mut().cast());
            }
        }
    }
}
