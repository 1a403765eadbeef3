//! Devices: discovery, the primary context, the embedded kernel module, and
//! the constructors of streams, events and buffers. Every driver call goes
//! through [`Driver`] (results read as integers).

use std::ffi::c_int;
use std::sync::{Arc, OnceLock};

use crate::driver::{attribute, check, CuContext, CuDevice, CuModule, Driver};
use crate::{DeviceInfo, GpuError, NoGpu};

/// The fatbin built from `cuda-kernels/` by build.rs.
#[cfg(feature = "cuda")]
pub static KERNELS_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_kernels.fatbin"));

/// The curve self-test module (feature `selftest`; test tooling only).
#[cfg(feature = "selftest")]
pub(crate) static SELFTEST_FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/c2_selftest.fatbin"));

/// `cuInit`; any failure means no usable driver ([`NoGpu::Driver`]).
fn init(driver: &Driver) -> Result<(), GpuError> {
    // SAFETY: cuInit takes flags (must be 0) and touches no memory of ours.
    check("cuInit", unsafe { (driver.cuInit)(0) }).map_err(as_no_gpu)
}

/// A failed start-up call as "no GPU", keeping the driver's code.
fn as_no_gpu(e: GpuError) -> GpuError {
    match e {
        GpuError::Driver { op, error, .. } => GpuError::NoDevice(NoGpu::Driver { op, error }),
        other => other,
    }
}

/// Lists the devices `driver` reports.
pub(crate) fn list_devices(driver: &Driver) -> Result<Vec<DeviceInfo>, GpuError> {
    init(driver)?;
    let mut n: c_int = 0;
    // SAFETY: `n` is a valid out-pointer for the call.
    check("cuDeviceGetCount", unsafe { (driver.cuDeviceGetCount)(&mut n) }).map_err(as_no_gpu)?;
    if n <= 0 {
        return Err(GpuError::NoDevice(NoGpu::NoDevices));
    }
    (0..n as usize).map(|ordinal| device_info(driver, ordinal).map(|(info, _)| info)).collect()
}

/// What the driver says about device `ordinal`, and its handle.
fn device_info(driver: &Driver, ordinal: usize) -> Result<(DeviceInfo, CuDevice), GpuError> {
    let index = c_int::try_from(ordinal).map_err(|_| GpuError::Invalid(format!("device ordinal {ordinal}")))?;
    let mut device: CuDevice = 0;
    // SAFETY: valid out-pointer.
    check("cuDeviceGet", unsafe { (driver.cuDeviceGet)(&mut device, index) })?;
    let mut name = [0u8; 256];
    // SAFETY: the driver writes at most `len` bytes (NUL included) into `name`.
    check("cuDeviceGetName", unsafe {
        (driver.cuDeviceGetName)(name.as_mut_ptr().cast(), name.len() as c_int, device)
    })?;
    let name_len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let mut total_memory = 0usize;
    // SAFETY: valid out-pointer.
    check("cuDeviceTotalMem", unsafe { (driver.cuDeviceTotalMem_v2)(&mut total_memory, device) })?;
    let attr = |a: c_int| -> Result<c_int, GpuError> {
        let mut v: c_int = 0;
        // SAFETY: valid out-pointer; `a` is a CUdevice_attribute value.
        check("cuDeviceGetAttribute", unsafe { (driver.cuDeviceGetAttribute)(&mut v, a, device) })?;
        Ok(v)
    };
    let info = DeviceInfo {
        ordinal,
        name: String::from_utf8_lossy(&name[..name_len]).into_owned(),
        total_memory,
        compute_capability: (attr(attribute::COMPUTE_CAPABILITY_MAJOR)?, attr(attribute::COMPUTE_CAPABILITY_MINOR)?),
        max_shared_per_block_optin: attr(attribute::MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?.max(0) as usize,
        multiprocessors: attr(attribute::MULTIPROCESSOR_COUNT)?.max(1) as usize,
        max_shared_per_sm: attr(attribute::MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?.max(0) as usize,
    };
    Ok((info, device))
}

/// A retained primary context: released when the last holder (the
/// [`Gpu`], its modules and their kernels) drops.
pub(crate) struct Context {
    pub(crate) driver: Arc<Driver>,
    device: CuDevice,
    ctx: CuContext,
}

// SAFETY: a CUDA context may be made current on any thread; every use binds
// it first (`Context::bind`).
unsafe impl Send for Context {}
// SAFETY: as above; the handle itself is never written after creation.
unsafe impl Sync for Context {}

impl Context {
    /// The driver's handle (one per device: the primary context).
    pub(crate) fn handle(&self) -> CuContext {
        self.ctx
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<(), GpuError> {
        // SAFETY: `ctx` is a primary context retained until `drop`.
        check("cuCtxSetCurrent", unsafe { (self.driver.cuCtxSetCurrent)(self.ctx) })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: releases what `Gpu::open` retained (once: this is the only
        // owner of the retain); an error at teardown is moot.
        unsafe {
            let _ = (self.driver.cuDevicePrimaryCtxRelease_v2)(self.device);
        }
    }
}

/// A loaded module (fatbin image) of a device's context, unloaded when the
/// last holder (the [`Gpu`] and every [`crate::Kernel`] taken from it) drops.
pub(crate) struct Module {
    pub(crate) handle: CuModule,
    pub(crate) context: Arc<Context>,
}

// SAFETY: module handles are valid on any thread with their context current;
// every use binds `context` first.
unsafe impl Send for Module {}
// SAFETY: as above; the handle is never written after loading.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        if self.context.bind().is_ok() {
            // SAFETY: loaded in this context by `Gpu::load_module`; no kernel
            // of it is left (each holds an `Arc` of this module).
            unsafe {
                let _ = (self.context.driver.cuModuleUnload)(self.handle);
            }
        }
    }
}

/// One CUDA device with its primary context and (lazily) the kernel module.
pub struct Gpu {
    pub(crate) info: DeviceInfo,
    pub(crate) context: Arc<Context>,
    #[cfg(feature = "cuda")]
    pub(crate) module: OnceLock<Result<Arc<Module>, GpuError>>,
    #[cfg(feature = "selftest")]
    pub(crate) selftest: OnceLock<Result<Arc<Module>, GpuError>>,
}

impl Gpu {
    /// Opens device `ordinal` of the system's driver (retains its primary
    /// context, as the CUDA runtime and other libraries do, so they share it).
    pub fn open(ordinal: usize) -> Result<Arc<Gpu>, GpuError> {
        Self::open_with(Driver::system()?, ordinal)
    }

    /// Opens device `ordinal` of `driver`.
    pub fn open_with(driver: Arc<Driver>, ordinal: usize) -> Result<Arc<Gpu>, GpuError> {
        init(&driver)?;
        let (info, device) = device_info(&driver, ordinal)?;
        let mut ctx: CuContext = std::ptr::null_mut();
        // SAFETY: valid out-pointer and device handle; the retain is released
        // by `Context::drop`.
        check("cuDevicePrimaryCtxRetain", unsafe { (driver.cuDevicePrimaryCtxRetain)(&mut ctx, device) })?;
        Ok(Arc::new(Gpu {
            info,
            context: Arc::new(Context { driver, device, ctx }),
            #[cfg(feature = "cuda")]
            module: OnceLock::new(),
            #[cfg(feature = "selftest")]
            selftest: OnceLock::new(),
        }))
    }

    /// What the driver says about this device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The driver this device was opened with.
    pub(crate) fn driver(&self) -> &Driver {
        &self.context.driver
    }

    /// Makes this device's context current on the calling thread.
    pub fn bind(&self) -> Result<(), GpuError> {
        self.context.bind()
    }

    /// Free and total device memory, bytes.
    pub fn memory(&self) -> Result<(usize, usize), GpuError> {
        self.bind()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: valid out-pointers; the context is current.
        check("cuMemGetInfo", unsafe { (self.driver().cuMemGetInfo_v2)(&mut free, &mut total) })?;
        Ok((free, total))
    }

    /// Waits until all work queued on the device (every stream of this
    /// context) has finished. Device-wide: for error paths and teardown,
    /// never per partition (it serialises workers, ARCHITECTURE.md, "Lessons from prior art").
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.bind()?;
        // SAFETY: no arguments; the context is current.
        check("cuCtxSynchronize", unsafe { (self.driver().cuCtxSynchronize)() })
    }

    /// Loads `image` (a fatbin, cubin or PTX image) into this device's context.
    pub(crate) fn load_module(&self, image: &[u8]) -> Result<Arc<Module>, GpuError> {
        self.bind()?;
        // The driver wants the image 8-byte aligned; include_bytes!
        // guarantees 1. The copy is NUL-padded (a PTX image is a C string).
        let mut aligned = vec![0u64; image.len().div_ceil(8) + 1];
        bytemuck::cast_slice_mut::<u64, u8>(&mut aligned)[..image.len()].copy_from_slice(image);
        let mut handle: CuModule = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the image is aligned, NUL-terminated and
        // lives across the call (the driver copies what it keeps); the
        // context is current.
        check("cuModuleLoadData", unsafe { (self.driver().cuModuleLoadData)(&mut handle, aligned.as_ptr().cast()) })?;
        Ok(Arc::new(Module { handle, context: self.context.clone() }))
    }
}
