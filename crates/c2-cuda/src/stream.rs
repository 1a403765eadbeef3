//! Streams and events (feature `cuda`).

use std::sync::Arc;

use crate::device::Gpu;
use crate::driver::{check, CuEvent, CuStream, EVENT_DISABLE_TIMING, STREAM_NON_BLOCKING};
use crate::GpuError;

/// Where a stream's kernels stand when the device picks the next block to
/// run. Lower numbers are greater priorities in CUDA (0 normal, down to -5
/// on Hopper); this names the two the prover uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamPriority {
    /// The default priority (0).
    #[default]
    Normal,
    /// The device's greatest priority: an urgent proof (WinningPoSt) beside
    /// a C2 partition that fills the GPU.
    Urgent,
}

/// A CUDA stream of one device.
pub struct Stream {
    s: CuStream,
    gpu: Arc<Gpu>,
}

// SAFETY: a stream may be used from any thread with its context current;
// every call binds first, and `gpu` keeps the context alive.
unsafe impl Send for Stream {}
// SAFETY: as above; the driver serialises work queued from several threads.
unsafe impl Sync for Stream {}

impl Stream {
    /// The driver's handle, for launches and copies queued on this stream.
    pub(crate) fn raw(&self) -> CuStream {
        self.s
    }

    /// The stream's device.
    pub(crate) fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Waits on the host until all work queued so far has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: a live stream of the current context.
        check("cuStreamSynchronize", unsafe { (self.gpu.driver().cuStreamSynchronize)(self.s) })
    }

    /// Makes later work on this stream wait for `event` (no host block).
    pub fn wait(&self, event: &Event) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: a live stream and event of the current context; flags 0.
        check("cuStreamWaitEvent", unsafe { (self.gpu.driver().cuStreamWaitEvent)(self.s, event.e, 0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: a live stream, destroyed once; the driver lets queued work
        // finish first (cuStreamDestroy returns at once and releases later).
        unsafe {
            let _ = (self.gpu.driver().cuStreamDestroy_v2)(self.s);
        }
    }
}

/// A CUDA event (timing enabled, or only completion: [`Gpu::marker`]).
pub struct Event {
    e: CuEvent,
    gpu: Arc<Gpu>,
}

// SAFETY: an event may be used from any thread with its context current;
// every call binds first, and `gpu` keeps the context alive.
unsafe impl Send for Event {}
// SAFETY: as above; the driver serialises records and queries.
unsafe impl Sync for Event {}

impl Event {
    /// Records the event on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<(), GpuError> {
        self.gpu.bind()?;
        if stream.gpu.context.handle() != self.gpu.context.handle() {
            return Err(GpuError::Invalid("event recorded on another device's stream".into()));
        }
        // SAFETY: a live event and stream of the current context (checked).
        check("cuEventRecord", unsafe { (self.gpu.driver().cuEventRecord)(self.e, stream.s) })
    }

    /// Blocks the host until the event has completed.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.gpu.bind()?;
        // SAFETY: a live event of the current context.
        check("cuEventSynchronize", unsafe { (self.gpu.driver().cuEventSynchronize)(self.e) })
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    pub fn elapsed_ms(&self, start: &Event) -> Result<f32, GpuError> {
        self.gpu.bind()?;
        let mut ms = 0f32;
        // SAFETY: live events of the current context and a valid out-pointer.
        check("cuEventElapsedTime", unsafe { (self.gpu.driver().cuEventElapsedTime)(&mut ms, start.e, self.e) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        let _ = self.gpu.bind();
        // SAFETY: a live event, destroyed once (a pending record completes
        // first: the driver releases it then).
        unsafe {
            let _ = (self.gpu.driver().cuEventDestroy_v2)(self.e);
        }
    }
}

/// Streams and events of a device (constructed here, next to their types).
impl Gpu {
    /// A new non-blocking stream.
    pub fn stream(self: &Arc<Self>) -> Result<Stream, GpuError> {
        self.stream_at(StreamPriority::Normal)
    }

    /// A new non-blocking stream of `priority`: [`StreamPriority::Urgent`]
    /// is the device's greatest stream priority, so when SMs free up, the
    /// blocks of its kernels are scheduled ahead of those of normal streams
    /// (a running block is not pre-empted).
    pub fn stream_at(self: &Arc<Self>, priority: StreamPriority) -> Result<Stream, GpuError> {
        self.bind()?;
        let mut s: CuStream = std::ptr::null_mut();
        match priority {
            StreamPriority::Normal => {
                // SAFETY: valid out-pointer; the context is current.
                check("cuStreamCreate", unsafe { (self.driver().cuStreamCreate)(&mut s, STREAM_NON_BLOCKING) })?;
            }
            StreamPriority::Urgent => {
                let (mut least, mut greatest) = (0, 0);
                // SAFETY: valid out-pointers; the context is current.
                check("cuCtxGetStreamPriorityRange", unsafe {
                    (self.driver().cuCtxGetStreamPriorityRange)(&mut least, &mut greatest)
                })?;
                // SAFETY: valid out-pointer; the context is current; the
                // priority is in the range the driver gave.
                check("cuStreamCreateWithPriority", unsafe {
                    (self.driver().cuStreamCreateWithPriority)(&mut s, STREAM_NON_BLOCKING, greatest)
                })?;
            }
        }
        Ok(Stream { s, gpu: self.clone() })
    }

    /// A new event that records timing.
    pub fn event(self: &Arc<Self>) -> Result<Event, GpuError> {
        self.new_event(0)
    }

    /// A new event without timing (cheaper to record): for completion only.
    pub fn marker(self: &Arc<Self>) -> Result<Event, GpuError> {
        self.new_event(EVENT_DISABLE_TIMING)
    }

    fn new_event(self: &Arc<Self>, flags: std::ffi::c_uint) -> Result<Event, GpuError> {
        self.bind()?;
        let mut e: CuEvent = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the context is current.
        check("cuEventCreate", unsafe { (self.driver().cuEventCreate)(&mut e, flags) })?;
        Ok(Event { e, gpu: self.clone() })
    }
}
