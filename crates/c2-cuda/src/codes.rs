//! [`DriverError`]: the CUDA driver's result codes by name (always built:
//! [`crate::GpuError`] carries them on every build).

macro_rules! driver_errors {
    ($($(#[$doc:meta])* $variant:ident = $code:literal => $name:literal,)*) => {
        /// A CUDA driver result other than `CUDA_SUCCESS`: every code that
        /// CUDA 13's `cuda.h` defines (13.0's `CUresult` plus 917 and 918 of
        /// 13.1 / 13.3), by name, and any other value kept as the number the
        /// driver returned ([`DriverError::Unlisted`]).
        ///
        /// The driver's answer is read as the `int` it is and only then
        /// mapped here: a code newer than this list is a value of
        /// `Unlisted`, never an out-of-range enum (the undefined behaviour of
        /// reading it through a Rust enum, issue 38).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum DriverError {
            $($(#[$doc])* #[doc = concat!("`", $name, "` (", stringify!($code), ").")] $variant,)*
            /// A code this list does not name (a newer driver's).
            Unlisted(i32),
        }

        impl DriverError {
            /// The error for a driver result; `None` for `CUDA_SUCCESS` (0).
            pub const fn from_code(code: i32) -> Option<Self> {
                match code {
                    0 => None,
                    $($code => Some(Self::$variant),)*
                    other => Some(Self::Unlisted(other)),
                }
            }

            /// The driver's number.
            pub const fn code(self) -> i32 {
                match self {
                    $(Self::$variant => $code,)*
                    Self::Unlisted(code) => code,
                }
            }

            /// The name `cuda.h` gives the code (`"CUDA_ERROR_UNLISTED"` for
            /// a code it does not define).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                    Self::Unlisted(_) => "CUDA_ERROR_UNLISTED",
                }
            }

            /// Every named code (for tests and documentation).
            pub const NAMED: &'static [DriverError] = &[$(Self::$variant),*];
        }
    };
}

driver_errors! {
    InvalidValue = 1 => "CUDA_ERROR_INVALID_VALUE",
    OutOfMemory = 2 => "CUDA_ERROR_OUT_OF_MEMORY",
    NotInitialized = 3 => "CUDA_ERROR_NOT_INITIALIZED",
    Deinitialized = 4 => "CUDA_ERROR_DEINITIALIZED",
    ProfilerDisabled = 5 => "CUDA_ERROR_PROFILER_DISABLED",
    ProfilerNotInitialized = 6 => "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
    ProfilerAlreadyStarted = 7 => "CUDA_ERROR_PROFILER_ALREADY_STARTED",
    ProfilerAlreadyStopped = 8 => "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
    StubLibrary = 34 => "CUDA_ERROR_STUB_LIBRARY",
    CallRequiresNewerDriver = 36 => "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
    DeviceUnavailable = 46 => "CUDA_ERROR_DEVICE_UNAVAILABLE",
    NoDevice = 100 => "CUDA_ERROR_NO_DEVICE",
    InvalidDevice = 101 => "CUDA_ERROR_INVALID_DEVICE",
    DeviceNotLicensed = 102 => "CUDA_ERROR_DEVICE_NOT_LICENSED",
    InvalidImage = 200 => "CUDA_ERROR_INVALID_IMAGE",
    InvalidContext = 201 => "CUDA_ERROR_INVALID_CONTEXT",
    ContextAlreadyCurrent = 202 => "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
    MapFailed = 205 => "CUDA_ERROR_MAP_FAILED",
    UnmapFailed = 206 => "CUDA_ERROR_UNMAP_FAILED",
    ArrayIsMapped = 207 => "CUDA_ERROR_ARRAY_IS_MAPPED",
    AlreadyMapped = 208 => "CUDA_ERROR_ALREADY_MAPPED",
    NoBinaryForGpu = 209 => "CUDA_ERROR_NO_BINARY_FOR_GPU",
    AlreadyAcquired = 210 => "CUDA_ERROR_ALREADY_ACQUIRED",
    NotMapped = 211 => "CUDA_ERROR_NOT_MAPPED",
    NotMappedAsArray = 212 => "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
    NotMappedAsPointer = 213 => "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
    EccUncorrectable = 214 => "CUDA_ERROR_ECC_UNCORRECTABLE",
    UnsupportedLimit = 215 => "CUDA_ERROR_UNSUPPORTED_LIMIT",
    ContextAlreadyInUse = 216 => "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
    PeerAccessUnsupported = 217 => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
    InvalidPtx = 218 => "CUDA_ERROR_INVALID_PTX",
    InvalidGraphicsContext = 219 => "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
    NvlinkUncorrectable = 220 => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    JitCompilerNotFound = 221 => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
    UnsupportedPtxVersion = 222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    JitCompilationDisabled = 223 => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
    UnsupportedExecAffinity = 224 => "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
    UnsupportedDevsideSync = 225 => "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
    Contained = 226 => "CUDA_ERROR_CONTAINED",
    InvalidSource = 300 => "CUDA_ERROR_INVALID_SOURCE",
    FileNotFound = 301 => "CUDA_ERROR_FILE_NOT_FOUND",
    SharedObjectSymbolNotFound = 302 => "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
    SharedObjectInitFailed = 303 => "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
    OperatingSystem = 304 => "CUDA_ERROR_OPERATING_SYSTEM",
    InvalidHandle = 400 => "CUDA_ERROR_INVALID_HANDLE",
    IllegalState = 401 => "CUDA_ERROR_ILLEGAL_STATE",
    LossyQuery = 402 => "CUDA_ERROR_LOSSY_QUERY",
    NotFound = 500 => "CUDA_ERROR_NOT_FOUND",
    NotReady = 600 => "CUDA_ERROR_NOT_READY",
    IllegalAddress = 700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
    LaunchOutOfResources = 701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    LaunchTimeout = 702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
    LaunchIncompatibleTexturing = 703 => "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
    PeerAccessAlreadyEnabled = 704 => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
    PeerAccessNotEnabled = 705 => "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
    PrimaryContextActive = 708 => "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
    ContextIsDestroyed = 709 => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    Assert = 710 => "CUDA_ERROR_ASSERT",
    TooManyPeers = 711 => "CUDA_ERROR_TOO_MANY_PEERS",
    HostMemoryAlreadyRegistered = 712 => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
    HostMemoryNotRegistered = 713 => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
    HardwareStackError = 714 => "CUDA_ERROR_HARDWARE_STACK_ERROR",
    IllegalInstruction = 715 => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    MisalignedAddress = 716 => "CUDA_ERROR_MISALIGNED_ADDRESS",
    InvalidAddressSpace = 717 => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    InvalidPc = 718 => "CUDA_ERROR_INVALID_PC",
    LaunchFailed = 719 => "CUDA_ERROR_LAUNCH_FAILED",
    CooperativeLaunchTooLarge = 720 => "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
    TensorMemoryLeak = 721 => "CUDA_ERROR_TENSOR_MEMORY_LEAK",
    NotPermitted = 800 => "CUDA_ERROR_NOT_PERMITTED",
    NotSupported = 801 => "CUDA_ERROR_NOT_SUPPORTED",
    SystemNotReady = 802 => "CUDA_ERROR_SYSTEM_NOT_READY",
    SystemDriverMismatch = 803 => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    CompatNotSupportedOnDevice = 804 => "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    MpsConnectionFailed = 805 => "CUDA_ERROR_MPS_CONNECTION_FAILED",
    MpsRpcFailure = 806 => "CUDA_ERROR_MPS_RPC_FAILURE",
    MpsServerNotReady = 807 => "CUDA_ERROR_MPS_SERVER_NOT_READY",
    MpsMaxClientsReached = 808 => "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
    MpsMaxConnectionsReached = 809 => "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
    MpsClientTerminated = 810 => "CUDA_ERROR_MPS_CLIENT_TERMINATED",
    CdpNotSupported = 811 => "CUDA_ERROR_CDP_NOT_SUPPORTED",
    CdpVersionMismatch = 812 => "CUDA_ERROR_CDP_VERSION_MISMATCH",
    StreamCaptureUnsupported = 900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
    StreamCaptureInvalidated = 901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
    StreamCaptureMerge = 902 => "CUDA_ERROR_STREAM_CAPTURE_MERGE",
    StreamCaptureUnmatched = 903 => "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
    StreamCaptureUnjoined = 904 => "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
    StreamCaptureIsolation = 905 => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
    StreamCaptureImplicit = 906 => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
    CapturedEvent = 907 => "CUDA_ERROR_CAPTURED_EVENT",
    StreamCaptureWrongThread = 908 => "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
    Timeout = 909 => "CUDA_ERROR_TIMEOUT",
    GraphExecUpdateFailure = 910 => "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
    ExternalDevice = 911 => "CUDA_ERROR_EXTERNAL_DEVICE",
    InvalidClusterSize = 912 => "CUDA_ERROR_INVALID_CLUSTER_SIZE",
    FunctionNotLoaded = 913 => "CUDA_ERROR_FUNCTION_NOT_LOADED",
    InvalidResourceType = 914 => "CUDA_ERROR_INVALID_RESOURCE_TYPE",
    InvalidResourceConfiguration = 915 => "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
    KeyRotation = 916 => "CUDA_ERROR_KEY_ROTATION",
    Unknown = 999 => "CUDA_ERROR_UNKNOWN",
    StreamDetached = 917 => "CUDA_ERROR_STREAM_DETACHED",
    GraphRecaptureFailure = 918 => "CUDA_ERROR_GRAPH_RECAPTURE_FAILURE",
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code(), self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every named code maps back to itself, the names are cuda.h's and
    /// distinct, and codes outside the list keep their number.
    #[test]
    fn codes_round_trip_and_unknown_ones_keep_their_number() {
        assert_eq!(DriverError::from_code(0), None);
        let mut names = std::collections::HashSet::new();
        for &e in DriverError::NAMED {
            assert_eq!(DriverError::from_code(e.code()), Some(e));
            assert!(e.name().starts_with("CUDA_ERROR_"), "{e:?}");
            assert!(names.insert(e.name()), "{} twice", e.name());
        }
        assert_eq!(DriverError::NAMED.len(), 102);
        assert_eq!(DriverError::from_code(34), Some(DriverError::StubLibrary));
        assert_eq!(DriverError::from_code(46), Some(DriverError::DeviceUnavailable));
        assert_eq!(DriverError::from_code(222), Some(DriverError::UnsupportedPtxVersion));
        assert_eq!(DriverError::from_code(805), Some(DriverError::MpsConnectionFailed));
        assert_eq!(DriverError::from_code(999), Some(DriverError::Unknown));
        for odd in [12345, -1, 35, 1000, i32::MIN, i32::MAX] {
            let e = DriverError::from_code(odd).unwrap();
            assert_eq!(e, DriverError::Unlisted(odd));
            assert_eq!(e.code(), odd);
            assert_eq!(e.to_string(), format!("{odd} (CUDA_ERROR_UNLISTED)"));
        }
        assert_eq!(DriverError::OutOfMemory.to_string(), "2 (CUDA_ERROR_OUT_OF_MEMORY)");
    }
}
