//! The driver-API layer (feature `cuda`): rustacuda for initialisation and
//! device queries, cuda-driver-sys for what rustacuda lacks (primary
//! contexts, loading a fatbin, raw streams/events usable with our launches,
//! host registration).

use std::ffi::{c_void, CStr, CString};
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use cuda_driver_sys as sys;
use rustacuda::device::{Device, DeviceAttribute};
use rustacuda::CudaFlags;

use crate::{DeviceInfo, GpuError};

/// The fatbin built from `cuda-kernels/` by build.rs.
pub static KERNELS_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_kernels.fatbin"));

fn check(op: &'static str, r: sys::CUresult) -> Result<(), GpuError> {
    if r == sys::cudaError_enum::CUDA_SUCCESS {
        return Ok(());
    }
    let mut p: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string or fails.
    let name = unsafe {
        if sys::cuGetErrorName(r, &mut p) == sys::cudaError_enum::CUDA_SUCCESS && !p.is_null() {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        } else {
            format!("{r:?}")
        }
    };
    Err(GpuError::Driver { op, code: r as i32, name })
}

fn init() -> Result<(), GpuError> {
    rustacuda::init(CudaFlags::empty()).map_err(|e| GpuError::NoDevice(format!("cuInit: {e:?}")))
}

pub(crate) fn list_devices() -> Result<Vec<DeviceInfo>, GpuError> {
    init()?;
    let n = Device::num_devices().map_err(|e| GpuError::NoDevice(format!("cuDeviceGetCount: {e:?}")))?;
    if n == 0 {
        return Err(GpuError::NoDevice("the driver reports 0 CUDA devices".into()));
    }
    (0..n as usize).map(device_info).collect()
}

fn device_info(ordinal: usize) -> Result<DeviceInfo, GpuError> {
    let rc = |op: &'static str| move |e: rustacuda::error::CudaError| GpuError::Driver {
        op,
        code: e as i32,
        name: format!("{e:?}"),
    };
    let d = Device::get_device(ordinal as u32).map_err(rc("cuDeviceGet"))?;
    Ok(DeviceInfo {
        ordinal,
        name: d.name().map_err(rc("cuDeviceGetName"))?,
        total_memory: d.total_memory().map_err(rc("cuDeviceTotalMem"))?,
        compute_capability: (
            d.get_attribute(DeviceAttribute::ComputeCapabilityMajor).map_err(rc("cuDeviceGetAttribute"))?,
            d.get_attribute(DeviceAttribute::ComputeCapabilityMinor).map_err(rc("cuDeviceGetAttribute"))?,
        ),
    })
}

/// One CUDA device with its primary context and (lazily) the kernel module.
pub struct Gpu {
    info: DeviceInfo,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    module: OnceLock<Result<Module, GpuError>>,
}

// SAFETY: a CUDA context and the handles made in it may be used from any
// thread once the context is current there; every entry point binds first.
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

struct Module(sys::CUmodule);

impl Gpu {
    /// Opens device `ordinal` (retains its primary context, as the CUDA
    /// runtime and other libraries do, so they share it).
    pub fn open(ordinal: usize) -> Result<Arc<Gpu>, GpuError> {
        init()?;
        let info = device_info(ordinal)?;
        let mut device: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: plain driver calls with valid out-pointers.
        unsafe {
            check("cuDeviceGet", sys::cuDeviceGet(&mut device, ordinal as i32))?;
            check("cuDevicePrimaryCtxRetain", sys::cuDevicePrimaryCtxRetain(&mut ctx, device))?;
        }
        Ok(Arc::new(Gpu { info, device, ctx, module: OnceLock::new() }))
    }

    /// What the driver says about this device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: ctx is a retained primary context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    /// Free and total device memory, bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers.
        check("cuMemGetInfo", unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
        Ok((free, total))
    }

    /// Waits until all work queued on the device (every stream of this
    /// context) has finished. Device-wide: for error paths and teardown,
    /// never per partition (it serialises workers, DESIGN.md).
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: plain driver call on the current context.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    fn module(&self) -> Result<&Module, GpuError> {
        self.module
            .get_or_init(|| {
                self.bind()?;
                // The driver wants the image 8-byte aligned; include_bytes!
                // guarantees 1.
                let mut aligned = vec![0u64; KERNELS_FATBIN.len().div_ceil(8)];
                // SAFETY: the destination holds at least len bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        KERNELS_FATBIN.as_ptr(),
                        aligned.as_mut_ptr().cast::<u8>(),
                        KERNELS_FATBIN.len(),
                    );
                }
                let mut m: sys::CUmodule = std::ptr::null_mut();
                // SAFETY: a fatbin image produced by nvcc.
                check("cuModuleLoadData", unsafe {
                    sys::cuModuleLoadData(&mut m, aligned.as_ptr().cast())
                })?;
                Ok(Module(m))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A kernel of the embedded module by name.
    pub fn kernel(&self, name: &str) -> Result<Kernel, GpuError> {
        let m = self.module()?;
        let cname = CString::new(name).map_err(|_| GpuError::MissingKernel(name.into()))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: valid module and C string.
        let r = unsafe { sys::cuModuleGetFunction(&mut f, m.0, cname.as_ptr()) };
        if r != sys::cudaError_enum::CUDA_SUCCESS {
            return Err(GpuError::MissingKernel(name.into()));
        }
        Ok(Kernel { f, name: name.to_string() })
    }

    /// A new non-blocking stream.
    pub fn stream(self: &Arc<Self>) -> Result<Stream, GpuError> {
        self.bind()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointer; CU_STREAM_NON_BLOCKING = 1.
        check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, 1) })?;
        Ok(Stream { s, gpu: self.clone() })
    }

    /// A new event that records timing.
    pub fn event(self: &Arc<Self>) -> Result<Event, GpuError> {
        self.bind()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: valid out-pointer; flags 0 = default (timing enabled).
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, 0) })?;
        Ok(Event { e, gpu: self.clone() })
    }

    /// `len` elements of uninitialised device memory.
    pub fn alloc<T: Copy>(self: &Arc<Self>, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        self.bind()?;
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            GpuError::Invalid(format!("allocation of {len} elements overflows"))
        })?;
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            // SAFETY: valid out-pointer.
            check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) })?;
        }
        Ok(DeviceBuffer { ptr, len, gpu: self.clone(), lease: None, _t: PhantomData })
    }
}

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
        write!(f, "DeviceMemory({}, {source})", self.gpu.info.ordinal)
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
    pub fn alloc<T: Copy>(&self, len: usize) -> Result<DeviceBuffer<T>, GpuError> {
        let Some(arena) = &self.arena else {
            return self.gpu.alloc(len);
        };
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            GpuError::Invalid(format!("allocation of {len} elements overflows"))
        })?;
        if bytes == 0 {
            return Ok(DeviceBuffer { ptr: 0, len, gpu: self.gpu.clone(), lease: None, _t: PhantomData });
        }
        let (ptr, lease) = arena.reserve(bytes)?;
        Ok(DeviceBuffer { ptr, len, gpu: self.gpu.clone(), lease: Some(lease), _t: PhantomData })
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

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: releases what open() retained; errors at teardown are moot.
        unsafe {
            if let Some(Ok(m)) = self.module.get() {
                let _ = sys::cuCtxSetCurrent(self.ctx);
                let _ = sys::cuModuleUnload(m.0);
            }
            let _ = sys::cuDevicePrimaryCtxRelease(self.device);
        }
    }
}

/// A kernel of the embedded module.
pub struct Kernel {
    f: sys::CUfunction,
    name: String,
}

// SAFETY: CUfunction handles are valid in any thread with the context current.
unsafe impl Send for Kernel {}
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Allows `bytes` of dynamic shared memory per block (needed above 48 KB).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), GpuError> {
        // SAFETY: valid function handle;
        // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(
                self.f,
                std::mem::transmute::<i32, sys::CUfunction_attribute>(8),
                bytes as i32,
            )
        })
    }

    /// Launches on `stream` with a 1-D grid.
    ///
    /// # Safety
    /// `args` must point to values matching the kernel's parameter list, and
    /// every device pointer among them must be valid for what the kernel does.
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &mut [*mut c_void],
    ) -> Result<(), GpuError> {
        stream.gpu.bind()?;
        let r = sys::cuLaunchKernel(
            self.f,
            grid.max(1),
            1,
            1,
            block,
            1,
            1,
            shared_bytes,
            stream.s,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        );
        check("cuLaunchKernel", r).map_err(|e| match e {
            GpuError::Driver { code, name, .. } => GpuError::Driver {
                op: "cuLaunchKernel",
                code,
                name: format!("{name} in kernel {}", self.name),
            },
            other => other,
        })
    }
}

impl Kernel {
    /// Launches a kernel whose parameters are all 64 bits wide (device
    /// pointers and `uint64_t`), passing `args` in order. Our MSM kernels
    /// keep to that rule so a launch is one line.
    ///
    /// # Safety
    /// As [`Kernel::launch`]: `args` must match the kernel's parameter list
    /// and every device pointer among them must be valid for what it does.
    pub unsafe fn launch_u64(
        &self,
        stream: &Stream,
        grid: u32,
        block: u32,
        args: &[u64],
    ) -> Result<(), GpuError> {
        let mut values = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        self.launch(stream, grid, block, 0, &mut ptrs)
    }
}

/// A CUDA stream of one device.
pub struct Stream {
    s: sys::CUstream,
    gpu: Arc<Gpu>,
}

// SAFETY: streams may be used from any thread with the context current.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    /// Waits on the host until all work queued so far has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: valid stream.
        check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(self.s) })
    }

    /// Makes later work on this stream wait for `event` (no host block).
    pub fn wait(&self, event: &Event) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: valid handles.
        check("cuStreamWaitEvent", unsafe { sys::cuStreamWaitEvent(self.s, event.e, 0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: valid stream; destroy after its work completes.
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.s);
        }
    }
}

/// A CUDA event (timing enabled).
pub struct Event {
    e: sys::CUevent,
    gpu: Arc<Gpu>,
}

// SAFETY: events may be used from any thread with the context current.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    /// Records the event on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: valid handles.
        check("cuEventRecord", unsafe { sys::cuEventRecord(self.e, stream.s) })
    }

    /// Blocks the host until the event has completed.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: valid event.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(self.e) })
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    pub fn elapsed_ms(&self, start: &Event) -> Result<f32, GpuError> {
        self.gpu.bind()?;
        let mut ms = 0f32;
        // SAFETY: valid handles and out-pointer.
        check("cuEventElapsedTime", unsafe { sys::cuEventElapsedTime(&mut ms, start.e, self.e) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: valid event.
        unsafe {
            let _ = sys::cuEventDestroy_v2(self.e);
        }
    }
}

/// Device memory holding `len` values of `T` (plain bytes: `T` must be a
/// type whose every bit pattern the kernels accept, e.g. field elements).
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

impl<T: Copy> DeviceBuffer<T> {
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
    /// asynchronous copy `src` must be pinned ([`PinnedRange`]); the caller
    /// keeps it alive until the stream has passed this point.
    pub fn upload_async(&mut self, offset: usize, src: &[T], stream: &Stream) -> Result<(), GpuError> {
        self.range_check(offset, src.len())?;
        if src.is_empty() {
            return Ok(());
        }
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: range checked; src valid for its length.
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                self.ptr + (offset * sz) as u64,
                src.as_ptr().cast(),
                std::mem::size_of_val(src),
                stream.s,
            )
        })
    }

    /// Queues a device-to-host copy from element `offset` into `dst`.
    pub fn download_async(&self, offset: usize, dst: &mut [T], stream: &Stream) -> Result<(), GpuError> {
        self.range_check(offset, dst.len())?;
        if dst.is_empty() {
            return Ok(());
        }
        self.gpu.bind()?;
        let sz = std::mem::size_of::<T>();
        // SAFETY: range checked; dst valid for its length.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(
                dst.as_mut_ptr().cast(),
                self.ptr + (offset * sz) as u64,
                std::mem::size_of_val(dst),
                stream.s,
            )
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
                stream.s,
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
            sys::cuMemsetD8Async(self.ptr + (offset * sz) as u64, 0, len * sz, stream.s)
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

/// A host slice page-locked with `cuMemHostRegister` for the lifetime of
/// this guard, so copies from and to it run at full PCIe speed and
/// asynchronously (pageable copies ran at 6 GB/s against 55 GB/s pinned on
/// the H200). Derefs to the slice.
pub struct PinnedRange<'a, T> {
    slice: &'a mut [T],
    gpu: Arc<Gpu>,
}

impl<'a, T> PinnedRange<'a, T> {
    /// Pins `slice` (empty slices are a no-op).
    pub fn new(gpu: &Arc<Gpu>, slice: &'a mut [T]) -> Result<Self, GpuError> {
        if !slice.is_empty() {
            gpu.bind()?;
            // SAFETY: a live host allocation of that size; flags 0 = default.
            check("cuMemHostRegister", unsafe {
                sys::cuMemHostRegister_v2(slice.as_mut_ptr().cast(), std::mem::size_of_val(slice), 0)
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
            // SAFETY: registered in new().
            unsafe {
                let _ = sys::cuMemHostUnregister(self.slice.as_mut_ptr().cast());
            }
        }
    }
}

/// Page-locked host memory from `cuMemAllocHost`: the staging area for
/// chunked copies (allocated once; pinning a fresh 4 GB vector per call cost
/// seconds on the H200, far more than the copy itself).
pub struct PinnedBuffer<T> {
    ptr: *mut T,
    len: usize,
    gpu: Arc<Gpu>,
}

// SAFETY: plain host memory owned by this value.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}
unsafe impl<T: Sync> Sync for PinnedBuffer<T> {}

impl<T: Copy> PinnedBuffer<T> {
    /// `len` elements of pinned host memory (uninitialised bytes: `T` must
    /// accept any bit pattern; the callers copy data in before reading).
    pub fn new(gpu: &Arc<Gpu>, len: usize) -> Result<Self, GpuError> {
        gpu.bind()?;
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| GpuError::Invalid(format!("pinned allocation of {len} elements overflows")))?;
        let mut p: *mut c_void = std::ptr::null_mut();
        if bytes > 0 {
            // SAFETY: valid out-pointer.
            check("cuMemAllocHost", unsafe { sys::cuMemAllocHost_v2(&mut p, bytes) })?;
        }
        Ok(Self { ptr: p.cast(), len, gpu: gpu.clone() })
    }

    /// The memory as a slice.
    pub fn as_slice(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: allocated for len elements; callers write before reading.
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
            // SAFETY: allocated by cuMemAllocHost.
            unsafe {
                let _ = sys::cuMemFreeHost(self.ptr.cast());
            }
        }
    }
}
