//! Streams and events (feature `cuda`).

use std::sync::Arc;

use cuda_driver_sys as sys;

use crate::call::check;
use crate::device::Gpu;
use crate::GpuError;

/// A CUDA stream of one device.
pub struct Stream {
    s: sys::CUstream,
    gpu: Arc<Gpu>,
}

// SAFETY: streams may be used from any thread with the context current.
unsafe impl Send for Stream {}
unsafe impl Sync for Stream {}

impl Stream {
    /// The driver's handle, for launches and copies queued on this stream.
    pub(crate) fn raw(&self) -> sys::CUstream {
        self.s
    }

    /// The stream's device.
    pub(crate) fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

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

/// Streams and events of a device (constructed here, next to their types).
impl Gpu {
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
}
