//! Devices (feature `cuda`): discovery, the primary context, the embedded
//! kernel module, and the constructors of streams, events and buffers.
//! rustacuda serves initialisation and device queries; cuda-driver-sys what
//! it lacks (primary contexts, loading a fatbin image).

use std::ffi::{CStr, CString};
use std::sync::{Arc, OnceLock};

use cuda_driver_sys as sys;
use rustacuda::device::{Device, DeviceAttribute};
use rustacuda::CudaFlags;

use crate::kernel::Kernel;
use crate::memory::DeviceBuffer;
use crate::stream::{Event, Stream};
use crate::{DeviceCopy, DeviceInfo, GpuError};
/// The fatbin built from `cuda-kernels/` by build.rs.
pub static KERNELS_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_kernels.fatbin"));

pub(crate) fn check(op: &'static str, r: sys::CUresult) -> Result<(), GpuError> {
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
    let rc = |op: &'static str| {
        move |e: rustacuda::error::CudaError| GpuError::Driver { op, code: e as i32, name: format!("{e:?}") }
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
    pub(crate) info: DeviceInfo,
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
                check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut m, aligned.as_ptr().cast()) })?;
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
        Ok(Kernel::new(f, name))
    }

    /// A new non-blocking stream.
    pub fn stream(self: &Arc<Self>) -> Result<Stream, GpuError> {
        self.bind()?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        // SAFETY: valid out-pointer; CU_STREAM_NON_BLOCKING = 1.
        check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut s, 1) })?;
        Ok(Stream::new(s, self.clone()))
    }

    /// A new event that records timing.
    pub fn event(self: &Arc<Self>) -> Result<Event, GpuError> {
        self.bind()?;
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: valid out-pointer; flags 0 = default (timing enabled).
        check("cuEventCreate", unsafe { sys::cuEventCreate(&mut e, 0) })?;
        Ok(Event::new(e, self.clone()))
    }

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
