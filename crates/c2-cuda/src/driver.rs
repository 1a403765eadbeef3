//! The CUDA driver library as this crate calls it: loaded at run time
//! (`libcuda.so.1`), each entry point typed with the `int` result that
//! `cuda.h` declares, and every result checked into a [`GpuError`].
//!
//! Why not rustacuda / cuda-driver-sys: cuda-driver-sys 0.3 declares the
//! result as a Rust enum holding CUDA 10's codes only. A current driver
//! returns others (34 with a stub library, 46 for a GPU held in
//! exclusive-process mode, 222-226 from the JIT, 805-812 from MPS), and an
//! enum value outside its variants is undefined behaviour the moment the
//! call returns, before any check can look at it. Here the result is an
//! integer until [`check`] maps it to a [`DriverError`].
//!
//! Loading instead of linking also means a `cuda` build starts on a host
//! without the driver and answers "no GPU" ([`NoGpu::Library`]) instead of
//! failing in the dynamic loader.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::{DriverError, GpuError, NoGpu};

/// A device ordinal's handle (`CUdevice`, an `int`).
pub(crate) type CuDevice = c_int;
/// `CUcontext`.
pub(crate) type CuContext = *mut c_void;
/// `CUmodule`.
pub(crate) type CuModule = *mut c_void;
/// `CUfunction`.
pub(crate) type CuFunction = *mut c_void;
/// `CUstream`.
pub(crate) type CuStream = *mut c_void;
/// `CUevent`.
pub(crate) type CuEvent = *mut c_void;
/// `CUdeviceptr`.
pub(crate) type CuDevicePtr = u64;
/// `CUresult`, read as the integer it is.
pub(crate) type CuResult = c_int;

/// The library's name on Linux (the driver package's soname).
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// `cuDeviceGetAttribute` attributes used here (cuda.h, `CUdevice_attribute`).
pub(crate) mod attribute {
    use std::ffi::c_int;
    pub const MULTIPROCESSOR_COUNT: c_int = 16;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 75;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 76;
    pub const MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: c_int = 81;
    pub const MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
    /// `CUfunction_attribute`: `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub const FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
    /// `CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT` (percent).
    pub const FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT: c_int = 9;
}

/// `CU_MEMHOSTREGISTER_PORTABLE`: every context sees the range as pinned.
pub(crate) const MEMHOSTREGISTER_PORTABLE: c_uint = 0x01;
/// `CU_STREAM_NON_BLOCKING`: no implicit order with the legacy stream.
pub(crate) const STREAM_NON_BLOCKING: c_uint = 0x1;
/// `CU_EVENT_DISABLE_TIMING`: the cheaper event, for completion only.
pub(crate) const EVENT_DISABLE_TIMING: c_uint = 0x2;

macro_rules! driver_api {
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {
        /// The driver entry points this crate calls, resolved from one
        /// loaded library. Cheap to share (`Arc`); every [`crate::Gpu`]
        /// holds the one it was opened with.
        #[allow(non_snake_case)]
        pub struct Driver {
            $(pub(crate) $name: unsafe extern "C" fn($($ty),*) -> CuResult,)*
            path: String,
            /// Never closed: unloading libcuda while its own threads run is
            /// not safe, and the loader counts references, so loading it
            /// again costs only the symbol lookups.
            _library: ManuallyDrop<libloading::Library>,
        }

        impl Driver {
            fn resolve(library: libloading::Library, path: &str) -> Result<Self, GpuError> {
                Ok(Self {
                    $($name: {
                        let symbol = concat!(stringify!($name), "\0").as_bytes();
                        // SAFETY: the symbol is looked up by the name cuda.h
                        // gives it and typed as cuda.h declares it, the
                        // result as an `int`; the pointer stays valid while
                        // the library is loaded, which is for ever (above).
                        let f = unsafe {
                            library.get::<unsafe extern "C" fn($($ty),*) -> CuResult>(symbol)
                        };
                        *f.map_err(|e| GpuError::NoDevice(NoGpu::Library {
                            path: path.to_string(),
                            detail: format!("{} is missing: {e}", stringify!($name)),
                        }))?
                    },)*
                    path: path.to_string(),
                    _library: ManuallyDrop::new(library),
                })
            }
        }
    };
}

driver_api! {
    fn cuInit(flags: c_uint);
    fn cuDeviceGetCount(count: *mut c_int);
    fn cuDeviceGet(device: *mut CuDevice, ordinal: c_int);
    fn cuDeviceGetName(name: *mut c_char, len: c_int, device: CuDevice);
    fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CuDevice);
    fn cuDeviceGetAttribute(value: *mut c_int, attribute: c_int, device: CuDevice);
    fn cuDevicePrimaryCtxRetain(ctx: *mut CuContext, device: CuDevice);
    fn cuDevicePrimaryCtxRelease_v2(device: CuDevice);
    fn cuCtxSetCurrent(ctx: CuContext);
    fn cuCtxSynchronize();
    fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize);
    fn cuModuleLoadData(module: *mut CuModule, image: *const c_void);
    fn cuModuleUnload(module: CuModule);
    fn cuModuleGetFunction(function: *mut CuFunction, module: CuModule, name: *const c_char);
    fn cuFuncSetAttribute(function: CuFunction, attribute: c_int, value: c_int);
    fn cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks: *mut c_int, function: CuFunction, block: c_int, shared: usize);
    fn cuLaunchKernel(
        function: CuFunction,
        grid_x: c_uint,
        grid_y: c_uint,
        grid_z: c_uint,
        block_x: c_uint,
        block_y: c_uint,
        block_z: c_uint,
        shared: c_uint,
        stream: CuStream,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    );
    fn cuMemAlloc_v2(ptr: *mut CuDevicePtr, bytes: usize);
    fn cuMemFree_v2(ptr: CuDevicePtr);
    fn cuMemAllocHost_v2(ptr: *mut *mut c_void, bytes: usize);
    fn cuMemFreeHost(ptr: *mut c_void);
    fn cuMemHostRegister_v2(ptr: *mut c_void, bytes: usize, flags: c_uint);
    fn cuMemHostUnregister(ptr: *mut c_void);
    fn cuMemcpyHtoDAsync_v2(dst: CuDevicePtr, src: *const c_void, bytes: usize, stream: CuStream);
    fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: CuDevicePtr, bytes: usize, stream: CuStream);
    fn cuMemcpyDtoDAsync_v2(dst: CuDevicePtr, src: CuDevicePtr, bytes: usize, stream: CuStream);
    fn cuMemsetD8Async(dst: CuDevicePtr, value: u8, count: usize, stream: CuStream);
    fn cuStreamCreate(stream: *mut CuStream, flags: c_uint);
    fn cuStreamCreateWithPriority(stream: *mut CuStream, flags: c_uint, priority: c_int);
    fn cuCtxGetStreamPriorityRange(least: *mut c_int, greatest: *mut c_int);
    fn cuStreamDestroy_v2(stream: CuStream);
    fn cuStreamSynchronize(stream: CuStream);
    fn cuStreamWaitEvent(stream: CuStream, event: CuEvent, flags: c_uint);
    fn cuEventCreate(event: *mut CuEvent, flags: c_uint);
    fn cuEventDestroy_v2(event: CuEvent);
    fn cuEventRecord(event: CuEvent, stream: CuStream);
    fn cuEventSynchronize(event: CuEvent);
    fn cuEventElapsedTime(ms: *mut f32, start: CuEvent, end: CuEvent);
}

impl Driver {
    /// The system's driver ([`DRIVER_LIBRARY`]), or [`NoGpu::Library`]
    /// when it cannot be loaded (no driver installed).
    pub fn system() -> Result<Arc<Self>, GpuError> {
        Self::load(DRIVER_LIBRARY)
    }

    /// The driver library at `path` (a name the dynamic loader searches for,
    /// or a path): e.g. the project's stub (`scripts/libcuda-stub.c`) in tests.
    pub fn load(path: &str) -> Result<Arc<Self>, GpuError> {
        // SAFETY: loading runs the library's initialisers; the CUDA driver's
        // (and the stub's) have no preconditions on the caller.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| GpuError::NoDevice(NoGpu::Library { path: path.to_string(), detail: e.to_string() }))?;
        Self::resolve(library, path).map(Arc::new)
    }

    /// Where the library was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Driver({})", self.path)
    }
}

/// `Ok` for `CUDA_SUCCESS`, else the call `op`'s typed error.
pub(crate) fn check(op: &'static str, result: CuResult) -> Result<(), GpuError> {
    match DriverError::from_code(result) {
        None => Ok(()),
        Some(error) => Err(GpuError::Driver { op, error, kernel: None }),
    }
}
