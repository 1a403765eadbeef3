//! The runtime against the project's own driver stub (`scripts/libcuda-stub.c`,
//! built here with the system C compiler and loaded in place of libcuda):
//! every answer the stub is told to give, named by cuda.h or not, surfaces
//! as a typed error naming the call, and a stub that answers success runs
//! copies and fills through the same code the GPU path uses. Built on every
//! build (no nvcc, no GPU): `cargo test --release` runs it.

use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;
use std::sync::Arc;

use crate::device::{list_devices, Gpu};
use crate::driver::Driver;
use crate::kernel::Launch;
use crate::{DriverError, GpuError, NoGpu};

/// The stub library, built once per test process.
struct Stub {
    path: PathBuf,
    driver: Arc<Driver>,
    answer: unsafe extern "C" fn(c_int, *const c_char),
    calls: unsafe extern "C" fn() -> *const c_char,
    clear: unsafe extern "C" fn(),
    _library: libloading::Library,
}

impl Stub {
    /// A copy of its own for test `name` (a library loaded from another
    /// file is another instance: tests running at once do not share the
    /// stub's answer).
    fn build(name: &str) -> Stub {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/libcuda-stub.c");
        let dir = std::env::temp_dir().join(format!("c2-cuda-stub-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("libcuda-stub.so");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = std::process::Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&path)
            .arg(&source)
            .status()
            .unwrap_or_else(|e| panic!("the stub needs a C compiler ({cc}): {e}"));
        assert!(status.success(), "{cc} failed on {}", source.display());
        let driver = Driver::load(path.to_str().unwrap()).expect("the stub has every entry point");
        // SAFETY: the same library the driver table was resolved from (the
        // loader hands back the loaded copy); the C signatures are
        // `void c2_stub_answer(int, const char *)`, `const char
        // *c2_stub_calls(void)` and `void c2_stub_clear_calls(void)`.
        let (library, answer, calls, clear) = unsafe {
            let library = libloading::Library::new(&path).unwrap();
            let answer = *library.get::<unsafe extern "C" fn(c_int, *const c_char)>(b"c2_stub_answer\0").unwrap();
            let calls = *library.get::<unsafe extern "C" fn() -> *const c_char>(b"c2_stub_calls\0").unwrap();
            let clear = *library.get::<unsafe extern "C" fn()>(b"c2_stub_clear_calls\0").unwrap();
            (library, answer, calls, clear)
        };
        Stub { path, driver, answer, calls, clear, _library: library }
    }

    /// Every call returns `code`, except the entry points in `ok`.
    fn answer(&self, code: i32, ok: &[&str]) {
        let ok = CString::new(ok.join(",")).unwrap();
        // SAFETY: a NUL-terminated list the stub copies; called between
        // driver calls on this thread only.
        unsafe { (self.answer)(code, ok.as_ptr()) }
    }
}

impl Stub {
    /// The driver calls since the last [`Stub::clear`], in order, leaving
    /// out `cuCtxSetCurrent` (every call binds first).
    fn calls(&self) -> Vec<String> {
        // SAFETY: the stub's log is a NUL-terminated static buffer, read on
        // this thread while no driver call runs.
        let log = unsafe { std::ffi::CStr::from_ptr((self.calls)()) }.to_string_lossy().into_owned();
        log.split(',').filter(|c| !c.is_empty() && *c != "cuCtxSetCurrent").map(str::to_string).collect()
    }

    fn clear(&self) {
        // SAFETY: no driver call runs on another thread of this test.
        unsafe { (self.clear)() }
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.path.parent().unwrap());
    }
}

/// The calls that list and describe a device.
const DESCRIBE: &[&str] =
    &["cuInit", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute"];

/// Those and the calls that open and bind it.
fn opening() -> Vec<&'static str> {
    let mut v = DESCRIBE.to_vec();
    v.extend(["cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuDevicePrimaryCtxRelease_v2"]);
    v
}

/// One test (the stub's answer is process-wide): start-up, opening, every
/// kind of call, and the codes 34, 46, 222, 999 and 12345 at each.
#[test]
fn every_driver_answer_surfaces_as_a_typed_error() {
    use DriverError as D;
    let stub = Stub::build("answers");
    let drv = stub.driver.clone();

    // A library that is not there is "no GPU", not a loader failure.
    let missing = Driver::load("/nonexistent/libcuda.so.1").unwrap_err();
    assert!(matches!(&missing, GpuError::NoDevice(NoGpu::Library { path, .. }) if path == "/nonexistent/libcuda.so.1"));
    assert!(missing.is_no_gpu());

    // cuInit's answer, whatever it is, means no usable driver, with the code.
    let codes = [(34, D::StubLibrary), (46, D::DeviceUnavailable), (222, D::UnsupportedPtxVersion)];
    let more = [(999, D::Unknown), (12345, D::Unlisted(12345)), (100, D::NoDevice)];
    for (code, error) in codes.into_iter().chain(more) {
        stub.answer(code, &[]);
        let e = list_devices(&drv).unwrap_err();
        assert_eq!(e, GpuError::NoDevice(NoGpu::Driver { op: "cuInit", error }), "code {code}");
        assert!(e.is_no_gpu() && e.driver_error() == Some(error));
        assert_eq!(e.to_string(), format!("no GPU: CUDA cuInit failed: {code} ({})", error.name()));
        assert!(matches!(Gpu::open_with(drv.clone(), 0), Err(GpuError::NoDevice(_))));
    }
    stub.answer(12345, &["cuInit"]);
    let e = list_devices(&drv).unwrap_err();
    assert_eq!(e, GpuError::NoDevice(NoGpu::Driver { op: "cuDeviceGetCount", error: D::Unlisted(12345) }));

    // A device the driver lists but will not open (46: exclusive-process
    // mode, held by another process) is a device error, not "no GPU".
    stub.answer(46, DESCRIBE);
    let listed = list_devices(&drv).unwrap();
    assert_eq!((listed.len(), listed[0].name.as_str(), listed[0].compute_capability), (1, "c2 stub device", (9, 0)));
    let e = Gpu::open_with(drv.clone(), 0).map(|_| ()).unwrap_err();
    let retain = |error| GpuError::Driver { op: "cuDevicePrimaryCtxRetain", error, kernel: None };
    assert_eq!(e, retain(D::DeviceUnavailable));
    assert!(!e.is_no_gpu() && !e.is_out_of_memory());
    for (code, error) in [(999, D::Unknown), (12345, D::Unlisted(12345))] {
        stub.answer(code, DESCRIBE);
        assert_eq!(Gpu::open_with(drv.clone(), 0).map(|_| ()).unwrap_err(), retain(error));
    }

    // An open device: each kind of call, each code.
    let open = opening();
    stub.answer(0, &open);
    let gpu = Gpu::open_with(drv.clone(), 0).unwrap();
    for (code, error) in codes.into_iter().chain(more) {
        stub.answer(code, &open);
        let at = |op: &'static str| GpuError::Driver { op, error, kernel: None };
        assert_eq!(gpu.load_module(b"not a fatbin").map(|_| ()).unwrap_err(), at("cuModuleLoadData"), "{code}");
        assert_eq!(gpu.alloc::<u64>(4).map(|_| ()).unwrap_err(), at("cuMemAlloc"));
        assert_eq!(gpu.stream().map(|_| ()).unwrap_err(), at("cuStreamCreate"));
        let urgent = gpu.stream_at(crate::stream::StreamPriority::Urgent).map(|_| ()).unwrap_err();
        assert_eq!(urgent, at("cuCtxGetStreamPriorityRange"));
        assert_eq!(gpu.memory().unwrap_err(), at("cuMemGetInfo"));
        assert_eq!(gpu.synchronize().unwrap_err(), at("cuCtxSynchronize"));
        let e = gpu.alloc::<u64>(4).map(|_| ()).unwrap_err();
        assert_eq!(e.to_string(), format!("CUDA cuMemAlloc failed: {code} ({})", error.name()));
    }
    stub.answer(2, &open);
    assert!(gpu.alloc::<u64>(4).map(|_| ()).unwrap_err().is_out_of_memory());

    // A kernel's launch error names the kernel; the kernel keeps its module
    // (and context) after the `Gpu` is gone.
    stub.answer(0, &[]);
    let module = gpu.load_module(b"not a fatbin").unwrap();
    let kernel = Gpu::function(&module, "c2_stub_kernel").unwrap();
    let stream = gpu.stream().unwrap();
    drop(module);
    for (code, error) in codes.into_iter().chain(more) {
        let mut ok = open.clone();
        ok.extend(["cuModuleGetFunction", "cuFuncSetAttribute"]);
        stub.answer(code, &ok);
        // SAFETY: the stub's "kernel" reads nothing.
        let e = unsafe { kernel.launch(&stream, Launch::new(1, 32), (0u64,)) }.unwrap_err();
        assert_eq!(e, GpuError::Driver { op: "cuLaunchKernel", error, kernel: Some("c2_stub_kernel") });
        assert!(e.to_string().ends_with(" in kernel c2_stub_kernel"), "{e}");
        assert!(kernel.max_blocks_per_sm(128, 0).is_err());
    }
    stub.answer(0, &[]);
    drop(stream);
    drop(gpu);
    kernel.set_max_dynamic_shared(64 << 10).unwrap();
    kernel.prefer_max_shared().unwrap();
    assert_eq!(kernel.max_blocks_per_sm(128, 0).unwrap(), 1);
}

/// An urgent stream is made at the greatest priority the driver lists (the
/// stub's range is 0 to -5, as on Hopper); a normal one without a priority.
#[test]
fn an_urgent_stream_takes_the_drivers_greatest_priority() {
    let stub = Stub::build("priority");
    stub.answer(0, &[]);
    let gpu = Gpu::open_with(stub.driver.clone(), 0).unwrap();
    stub.clear();
    let urgent = gpu.stream_at(crate::stream::StreamPriority::Urgent).unwrap();
    let normal = gpu.stream().unwrap();
    assert_eq!(
        stub.calls(),
        ["cuCtxGetStreamPriorityRange", "cuStreamCreateWithPriority", "priority -5", "cuStreamCreate"]
    );
    drop((urgent, normal, gpu));
}

/// With every call succeeding (the stub's "device" memory is host memory),
/// copies and fills run through the safe API and land where asked; a copy
/// that fails leaves the buffer droppable.
#[test]
fn copies_and_fills_through_the_stub_land_where_asked() {
    let stub = Stub::build("copies");
    stub.answer(0, &[]);
    let gpu = Gpu::open_with(stub.driver.clone(), 0).unwrap();
    let stream = gpu.stream().unwrap();
    let mut a = gpu.alloc::<u64>(6).unwrap();
    a.upload(0, &[1, 2, 3, 4, 5, 6], &stream).unwrap();
    a.zero_async(1, 2, &stream).unwrap();
    let mut b = gpu.alloc::<u64>(4).unwrap();
    b.copy_range_from_async(1, &a, 3, 3, &stream).unwrap();
    b.zero_async(0, 1, &stream).unwrap();
    let (mut ha, mut hb) = ([0u64; 6], [9u64; 4]);
    a.download(0, &mut ha, &stream).unwrap();
    b.download(0, &mut hb, &stream).unwrap();
    assert_eq!((ha, hb), ([1, 0, 0, 4, 5, 6], [0, 4, 5, 6]));
    // Out of range: refused before the driver sees it.
    assert!(matches!(a.upload(5, &[1, 2], &stream), Err(GpuError::Invalid(_))));
    assert!(matches!(b.copy_range_from_async(2, &a, 0, 3, &stream), Err(GpuError::Invalid(_))));
    // A failing copy is a typed error; the buffer still drops (its fence
    // waits for what was recorded).
    stub.answer(700, &opening());
    let e = a.upload(0, &[7], &stream).unwrap_err();
    assert_eq!(e.driver_error(), Some(DriverError::IllegalAddress));
    stub.answer(0, &[]);
    drop((a, b, stream, gpu));
}

/// A device buffer's memory goes back only after the copies queued on it
/// have finished: its drop waits for its event on each stream that used it
/// before `cuMemFree`, and a buffer whose wait fails is leaked, never freed
/// (the device may still write it). A kernel holds its module and the
/// module its context: both outlive the `Gpu`, and go in that order.
#[test]
fn buffers_wait_for_their_copies_and_kernels_keep_their_module() {
    let stub = Stub::build("order");
    stub.answer(0, &[]);
    let gpu = Gpu::open_with(stub.driver.clone(), 0).unwrap();
    let (s1, s2) = (gpu.stream().unwrap(), gpu.stream().unwrap());
    let mut a = gpu.alloc::<u64>(4).unwrap();
    let b = gpu.alloc::<u64>(4).unwrap();
    // SAFETY: a pageable array (the driver stages it before returning).
    unsafe { a.upload_async(0, &[1, 2, 3, 4], &s1) }.unwrap();
    a.copy_range_from_async(0, &b, 0, 4, &s2).unwrap();
    stub.clear();
    drop(a);
    let wait_then_free =
        ["cuEventSynchronize", "cuEventSynchronize", "cuMemFree_v2", "cuEventDestroy_v2", "cuEventDestroy_v2"];
    assert_eq!(stub.calls(), wait_then_free);
    stub.clear();
    drop(b);
    assert_eq!(stub.calls(), ["cuEventSynchronize", "cuMemFree_v2", "cuEventDestroy_v2"]);

    // The device fails while a copy may still run: the memory is leaked.
    let mut c = gpu.alloc::<u64>(4).unwrap();
    c.zero_async(0, 4, &s1).unwrap();
    let all_but_waits = ["cuCtxSetCurrent", "cuMemFree_v2", "cuEventDestroy_v2", "cuStreamDestroy_v2"];
    stub.answer(700, &all_but_waits);
    stub.clear();
    drop(c);
    assert_eq!(stub.calls(), ["cuEventSynchronize", "cuEventDestroy_v2"]);
    stub.answer(0, &[]);

    let module = gpu.load_module(b"not a fatbin").unwrap();
    let kernel = Gpu::function(&module, "c2_stub_kernel").unwrap();
    drop((module, s1, s2));
    stub.clear();
    drop(gpu);
    assert_eq!(stub.calls(), Vec::<String>::new(), "the kernel still holds the module and the context");
    kernel.set_max_dynamic_shared(100 << 10).unwrap();
    assert_eq!(stub.calls(), ["cuFuncSetAttribute"]);
    stub.clear();
    drop(kernel);
    assert_eq!(stub.calls(), ["cuModuleUnload", "cuDevicePrimaryCtxRelease_v2"]);
}
