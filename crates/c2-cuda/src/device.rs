//! Devices (feature `cuda`): discovery, the primary context, the embedded
//! kernel module, and the constructors of streams, events and buffers.
//! rustacuda serves initialisation and device queries; cuda-driver-sys what
//! it lacks (primary contexts, loading a fatbin image).

use std::sync::{Arc, OnceLock};

use cuda_driver_sys as sys;
use rustacuda::device::{Device, DeviceAttribute};
use rustacuda::CudaFlags;

use crate::call::check;
use crate::{DeviceInfo, GpuError};
/// The fatbin built from `cuda-kernels/` by build.rs.
pub static KERNELS_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_kernels.fatbin"));

/// The curve self-test module (feature `selftest`; test tooling only).
#[cfg(feature = "selftest")]
pub(crate) static SELFTEST_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_selftest.fatbin"));

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
        max_shared_per_block_optin: d
            .get_attribute(DeviceAttribute::MaxSharedMemoryPerBlockOptin)
            .map_err(rc("cuDeviceGetAttribute"))?
            .max(0) as usize,
        multiprocessors: d
            .get_attribute(DeviceAttribute::MultiprocessorCount)
            .map_err(rc("cuDeviceGetAttribute"))?
            .max(1) as usize,
        max_shared_per_sm: d
            .get_attribute(DeviceAttribute::MaxSharedMemoryPerMultiprocessor)
            .map_err(rc("cuDeviceGetAttribute"))?
            .max(0) as usize,
    })
}

/// One CUDA device with its primary context and (lazily) the kernel module.
pub struct Gpu {
    pub(crate) info: DeviceInfo,
    device: sys::CUdevice,
    ctx: sys::CUcontext,
    pub(crate) module: OnceLock<Result<Module, GpuError>>,
    #[cfg(feature = "selftest")]
    pub(crate) selftest: OnceLock<Result<Module, GpuError>>,
}

// SAFETY: a CUDA context and the handles made in it may be used from any
// thread once the context is current there; every entry point binds first.
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

/// A loaded module (fatbin image) of this device's context.
pub(crate) struct Module(pub(crate) sys::CUmodule);

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
        Ok(Arc::new(Gpu {
            info,
            device,
            ctx,
            module: OnceLock::new(),
            #[cfg(feature = "selftest")]
            selftest: OnceLock::new(),
        }))
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
    /// never per partition (it serialises workers, ARCHITECTURE.md, "Lessons from prior art").
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: plain driver call on the current context.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    /// Loads `image` (a fatbin) into this device's context.
    pub(crate) fn load_module(&self, image: &[u8]) -> Result<Module, GpuError> {
        self.bind()?;
        // The driver wants the image 8-byte aligned; include_bytes!
        // guarantees 1.
        let mut aligned = vec![0u64; image.len().div_ceil(8)];
        // SAFETY: the destination holds at least len bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len());
        }
        let mut m: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: a fatbin image produced by nvcc.
        check("cuModuleLoadData", unsafe { sys::cuModuleLoadData(&mut m, aligned.as_ptr().cast()) })?;
        Ok(Module(m))
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: releases what open() retained; errors at teardown are moot.
        unsafe {
            let _ = sys::cuCtxSetCurrent(self.ctx);
            if let Some(Ok(m)) = self.module.get() {
                let _ = sys::cuModuleUnload(m.0);
            }
            #[cfg(feature = "selftest")]
            if let Some(Ok(m)) = self.selftest.get() {
                let _ = sys::cuModuleUnload(m.0);
            }
            let _ = sys::cuDevicePrimaryCtxRelease(self.device);
        }
    }
}
