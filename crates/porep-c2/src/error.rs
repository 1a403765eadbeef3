//! The facade's error: one enum, by stage, with the device's typed error
//! kept as a source so callers can match on "out of device memory", "device
//! fault" and "no GPU" without reading strings.

use c2_cuda::GpuError;

use crate::params::ParamsError;

/// Everything that can go wrong, by stage.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The C1 output could not be read or parsed.
    #[error("C1 output {source_name}: {message}")]
    InvalidC1 {
        /// File name or "input".
        source_name: String,
        /// The parser's message.
        message: String,
    },
    /// The C1 input disagrees with itself or with the request it came in:
    /// the envelope's `SectorSize` or `SectorNum`, or a request's sector
    /// size (`what` says which, `expected` is the value it should equal).
    #[error("{what}: expected {expected}, found {found}")]
    C1Mismatch {
        /// Which value, and what it is checked against.
        what: &'static str,
        /// The value it should equal.
        expected: u64,
        /// The value given.
        found: u64,
    },
    /// Circuit construction or synthesis failed, or the C1 is inconsistent.
    #[error(transparent)]
    Synthesis(#[from] c2_synth::SynthError),
    /// Parameters could not be read.
    #[error(transparent)]
    Params(#[from] ParamsError),
    /// Constraint matrices could not be recorded, read or written
    /// (`SynthesisPath::Matrices`).
    #[error(transparent)]
    Matrices(#[from] c2_synth::MatrixError),
    /// a, b, c could not be computed from the constraint matrices and the
    /// witness (malformed matrices, a witness of another shape; a device
    /// error is [`Error::Gpu`]).
    #[error("a, b, c from the constraint matrices: {0}")]
    Abc(c2_abc::AbcError),
    /// Parameters do not belong to this circuit.
    #[error("Groth16 parameters do not fit the circuit: {query} expects {expected}, parameters have {actual} (parameters for another sector size or proof type?)")]
    ParamsMismatch {
        /// Which query.
        query: &'static str,
        /// What the circuit needs.
        expected: usize,
        /// What the parameters hold.
        actual: usize,
    },
    /// The NTT stage failed (a device error of the GPU NTT arrives as
    /// [`Error::Gpu`] instead).
    #[error(transparent)]
    Ntt(c2_ntt::NttError),
    /// The MSM stage failed (a device error of the GPU MSM arrives as
    /// [`Error::Gpu`] instead).
    #[error(transparent)]
    Msm(c2_msm::MsmError),
    /// A device failed, in any stage: out of memory
    /// ([`GpuError::OutOfBudget`], [`GpuError::is_out_of_memory`]), a driver
    /// error, or no GPU at all ([`GpuError::is_no_gpu`]). Match on `source`.
    #[error("{stage} on the GPU: {source}")]
    Gpu {
        /// Where it happened: "NTT", "MSM", "worker", "backend", ...
        stage: &'static str,
        /// The device runtime's error.
        #[source]
        source: GpuError,
    },
    /// A device cannot hold one worker's minimal working set for the
    /// partitions the backend plans for (`GpuBackendConfig::plan_for`):
    /// refused when the backend starts, not after a partition was queued.
    #[error("GPU {device}: {source}")]
    DeviceTooSmall {
        /// Device ordinal.
        device: usize,
        /// The budget and the minimum it would need.
        #[source]
        source: crate::plan::TooSmall,
    },
    /// A whole-partition worker failed for a reason that is not a device
    /// error (a panic inside it, an injected fault): retried like one.
    #[error("worker {worker}: {message}")]
    Worker {
        /// The worker's name.
        worker: String,
        /// What went wrong.
        message: String,
    },
    /// Every worker of a [`crate::Workers`] backend is fenced after device
    /// faults ([`crate::WorkerFences`]): the partition goes to the retry
    /// backend like any device failure.
    #[error("all {workers} workers are out of service after device faults")]
    NoHealthyWorker {
        /// The backend's workers.
        workers: usize,
    },
    /// Explicit randomness has the wrong number of pairs.
    #[error("{given} (r, s) pairs given for {partitions} partitions")]
    Randomness {
        /// Pairs given.
        given: usize,
        /// Partitions.
        partitions: usize,
    },
    /// The finished proof does not verify (it is not returned).
    #[error("proof of partition(s) {partitions:?} failed verification; no proof returned")]
    VerificationFailed {
        /// Failing partitions.
        partitions: Vec<usize>,
    },
    /// The verifier itself failed.
    #[error("verifier error: {0}")]
    Verifier(String),
    /// A pipeline worker panicked.
    #[error("pipeline: {0}")]
    Pipeline(String),
    /// The proof was cancelled (`ProverConfig::pipeline.cancel`).
    #[error("proof cancelled")]
    Cancelled,
    /// A partition can never fit the host memory budget
    /// (`ProverConfig::pipeline.host_budget` / `item_bytes`).
    #[error(transparent)]
    HostMemory(#[from] c2_sched::AdmissionError),
}

impl Error {
    /// This failure again for another partition of a batch that failed as
    /// a whole (one error, several partitions; the stage errors are not
    /// `Clone`): a device error as the same typed device error (so running
    /// out of device memory still reads as such), cancellation and
    /// pipeline or worker failures as themselves, anything else as a
    /// worker failure with this message (a backend failure: retried).
    pub(crate) fn for_another_partition(&self) -> Error {
        match self {
            Error::Gpu { stage, source } => Error::Gpu { stage, source: source.clone() },
            Error::Cancelled => Error::Cancelled,
            Error::Pipeline(m) => Error::Pipeline(m.clone()),
            Error::NoHealthyWorker { workers } => Error::NoHealthyWorker { workers: *workers },
            Error::Worker { worker, message } => Error::Worker { worker: worker.clone(), message: message.clone() },
            other => Error::Worker { worker: "batch".into(), message: other.to_string() },
        }
    }

    /// A device error of `stage`.
    pub fn gpu(stage: &'static str, source: impl Into<GpuError>) -> Self {
        Self::Gpu { stage, source: source.into() }
    }

    /// True for failures of a stage backend itself (a GPU error, a worker
    /// fault, an injected fault), as opposed to bad input: the partition can
    /// be retried on another backend.
    pub fn is_backend_failure(&self) -> bool {
        matches!(
            self,
            Error::Ntt(c2_ntt::NttError::Backend { .. })
                | Error::Msm(c2_msm::MsmError::Backend { .. })
                | Error::Gpu { .. }
                | Error::Worker { .. }
                | Error::NoHealthyWorker { .. }
        )
    }

    /// The device's typed error, when a device failed.
    pub fn gpu_error(&self) -> Option<&GpuError> {
        match self {
            Error::Gpu { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when a device ran out of memory (its pool's budget or the
    /// driver's memory): back off rather than retry at once.
    pub fn is_device_out_of_memory(&self) -> bool {
        self.gpu_error().is_some_and(GpuError::is_out_of_memory)
    }
}

/// A device error of the NTT stage becomes [`Error::Gpu`], anything else
/// [`Error::Ntt`]: one place to match a device failure, whatever the stage.
impl From<c2_ntt::NttError> for Error {
    fn from(e: c2_ntt::NttError) -> Self {
        match e {
            c2_ntt::NttError::Gpu(source) => Error::Gpu { stage: "NTT", source },
            other => Error::Ntt(other),
        }
    }
}

/// As for the NTT: a device error of the MSM stage is [`Error::Gpu`].
impl From<c2_msm::MsmError> for Error {
    fn from(e: c2_msm::MsmError) -> Self {
        match e {
            c2_msm::MsmError::Gpu(source) => Error::Gpu { stage: "MSM", source },
            other => Error::Msm(other),
        }
    }
}

/// As for the NTT: a device error of the a, b, c stage is [`Error::Gpu`].
impl From<c2_abc::AbcError> for Error {
    fn from(e: c2_abc::AbcError) -> Self {
        match e {
            c2_abc::AbcError::Gpu(source) => Error::Gpu { stage: "a, b, c", source },
            other => Error::Abc(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use c2_cuda::OutOfBudget;

    #[test]
    fn a_device_error_of_any_stage_is_one_matchable_variant() {
        let oob = GpuError::OutOfBudget(OutOfBudget {
            requested: 4 << 30,
            largest_free: 1 << 30,
            free: 2 << 30,
            budget: 16 << 30,
        });
        for e in [
            Error::from(c2_msm::MsmError::Gpu(oob.clone())),
            Error::from(c2_ntt::NttError::Gpu(oob.clone())),
            Error::from(c2_abc::AbcError::Gpu(oob.clone())),
            Error::gpu("worker", oob.clone()),
        ] {
            assert!(
                matches!(e, Error::Gpu { source: GpuError::OutOfBudget(o), .. } if o.requested == 4 << 30),
                "{e:?}"
            );
            assert!(e.is_device_out_of_memory() && e.is_backend_failure(), "{e:?}");
            // The cause chain keeps the device error as a typed source.
            let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<GpuError>());
            assert_eq!(source, Some(&oob));
        }
        let driver_oom = Error::gpu(
            "MSM",
            GpuError::Driver { op: "cuMemAlloc", error: c2_cuda::DriverError::OutOfMemory, kernel: None },
        );
        assert!(driver_oom.is_device_out_of_memory());
        let no_gpu = Error::gpu("backend", GpuError::NoDevice(c2_cuda::NoGpu::NoDevices));
        assert!(no_gpu.gpu_error().is_some_and(GpuError::is_no_gpu) && !no_gpu.is_device_out_of_memory());
        // Not device errors: bad input stays its own variant.
        let mask = Error::from(c2_msm::MsmError::MaskLength { query: "A", mask: 1, scalars: 2 });
        assert!(matches!(mask, Error::Msm(_)) && !mask.is_backend_failure() && mask.gpu_error().is_none());
    }
}
