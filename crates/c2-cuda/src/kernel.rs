//! Kernels of the embedded module and their launches (feature `cuda`).

use std::ffi::{c_int, c_void, CString};
use std::sync::Arc;

#[cfg(feature = "cuda")]
use crate::device::KERNELS_FATBIN;
#[cfg(feature = "selftest")]
use crate::device::SELFTEST_FATBIN;
use crate::device::{Gpu, Module};
use crate::driver::{attribute, check, CuFunction, Driver};
use crate::stream::Stream;
use crate::{DeviceCopy, GpuError};

/// A kernel of a loaded module. It holds the module (and so its context),
/// so its handle stays valid for as long as the `Kernel` lives, whatever
/// happens to the [`Gpu`] it came from.
pub struct Kernel {
    f: CuFunction,
    name: &'static str,
    module: Arc<Module>,
}

// SAFETY: a CUfunction is valid on any thread with its context current;
// every call binds the module's context first, and `module` keeps both alive.
unsafe impl Send for Kernel {}
// SAFETY: as above; the handle is never written after lookup (attribute
// setters change the driver's state, which the driver itself serialises).
unsafe impl Sync for Kernel {}

impl Kernel {
    fn driver(&self) -> &Driver {
        &self.module.context.driver
    }

    /// Sets a `CUfunction_attribute` with the module's context current.
    fn set_attribute(&self, attribute: c_int, value: c_int) -> Result<(), GpuError> {
        self.module.context.bind()?;
        // SAFETY: a function of a loaded module (held by `self`), its context
        // current; attribute values are cuda.h's.
        check("cuFuncSetAttribute", unsafe { (self.driver().cuFuncSetAttribute)(self.f, attribute, value) })
    }

    /// The kernel's symbol in its module.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Allows `bytes` of dynamic shared memory per block (needed above 48 KB).
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<(), GpuError> {
        let bytes = c_int::try_from(bytes).map_err(|_| GpuError::Invalid(format!("{bytes} bytes of shared memory")))?;
        self.set_attribute(attribute::FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)
    }

    /// Blocks of `threads` threads (with `shared` bytes of dynamic shared
    /// memory each) that one SM holds at once: the driver's occupancy
    /// answer from this kernel's registers and shared memory.
    pub fn max_blocks_per_sm(&self, threads: u32, shared: usize) -> Result<u32, GpuError> {
        let threads =
            c_int::try_from(threads).map_err(|_| GpuError::Invalid(format!("{threads} threads per block")))?;
        self.module.context.bind()?;
        let mut blocks: c_int = 0;
        // SAFETY: a function of a loaded module (held by `self`), its context
        // current; `blocks` is a valid out-pointer.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            (self.driver().cuOccupancyMaxActiveBlocksPerMultiprocessor)(&mut blocks, self.f, threads, shared)
        })?;
        Ok(blocks.max(0) as u32)
    }

    /// Asks for the largest shared-memory carveout of the L1/shared array
    /// when this kernel runs, so that as many of its blocks as their
    /// shared memory allows share an SM (the driver may otherwise pick a
    /// smaller carveout and fit fewer).
    pub fn prefer_max_shared(&self) -> Result<(), GpuError> {
        // In percent of the maximum: 100 = all of it.
        self.set_attribute(attribute::FUNC_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)
    }

    /// Launches on `stream` with a 1-D grid, passing `args` (a tuple of
    /// plain values in the kernel's parameter order: device addresses as
    /// `u64` from [`crate::DeviceBuffer::device_ptr`], sizes as `u64` or
    /// `u32` exactly as the kernel's C signature declares them).
    ///
    /// # Safety
    /// `args` must match the kernel's parameter list in number, order and
    /// width, and every device address among them must be valid for what
    /// the kernel does with it (sizes, lifetimes: the buffers outlive the
    /// work queued on `stream`).
    pub unsafe fn launch<A: KernelArgs>(&self, stream: &Stream, dims: Launch, mut args: A) -> Result<(), GpuError> {
        args.with_pointers(|ptrs| self.launch_raw(stream, dims, ptrs))
    }

    /// # Safety
    /// As [`Kernel::launch`], with `args` pointing to the values.
    unsafe fn launch_raw(&self, stream: &Stream, dims: Launch, args: &mut [*mut c_void]) -> Result<(), GpuError> {
        if stream.gpu().context.handle() != self.module.context.handle() {
            return Err(GpuError::Invalid(format!("kernel {} launched on another device's stream", self.name)));
        }
        stream.gpu().bind()?;
        // SAFETY: (the caller's contract, above) `args` matches the kernel's
        // parameters and the buffers they name outlive the work; the function
        // and the stream belong to the current context (checked above).
        let r = unsafe {
            (self.driver().cuLaunchKernel)(
                self.f,
                dims.grid.max(1),
                1,
                1,
                dims.block,
                1,
                1,
                dims.shared_bytes,
                stream.raw(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check("cuLaunchKernel", r).map_err(|e| match e {
            GpuError::Driver { op, error, .. } => GpuError::Driver { op, error, kernel: Some(self.name) },
            other => other,
        })
    }
}

/// The shape of a 1-D launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks (at least one is launched).
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl Launch {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: u32, block: u32) -> Self {
        Self { grid, block, shared_bytes: 0 }
    }

    /// With `bytes` of dynamic shared memory per block.
    pub fn shared(self, bytes: u32) -> Self {
        Self { shared_bytes: bytes, ..self }
    }
}

/// One by-value kernel parameter: a device address or size as `u64`, or a
/// `u32`, the only widths our kernels declare. Deliberately not `i32`: an
/// untyped integer literal in a launch would default to it and pass four
/// bytes where the kernel reads eight; with this bound it does not compile.
pub trait KernelArg: DeviceCopy {}
impl KernelArg for u64 {}
impl KernelArg for u32 {}

/// A kernel's arguments: a tuple of [`KernelArg`] values, each passed by
/// value (the driver copies them into the launch's parameter buffer).
pub trait KernelArgs {
    /// Calls `f` with one pointer per argument, in order.
    fn with_pointers<R>(&mut self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R;
}

macro_rules! kernel_args {
    ($($t:ident $i:tt),+) => {
        impl<$($t: KernelArg),+> KernelArgs for ($($t,)+) {
            fn with_pointers<R>(&mut self, f: impl FnOnce(&mut [*mut c_void]) -> R) -> R {
                f(&mut [$((&mut self.$i as *mut $t).cast::<c_void>()),+])
            }
        }
    };
}

kernel_args!(A 0);
kernel_args!(A 0, B 1);
kernel_args!(A 0, B 1, C 2);
kernel_args!(A 0, B 1, C 2, D 3);
kernel_args!(A 0, B 1, C 2, D 3, E 4);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13);
kernel_args!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14);

/// The entry points of the embedded module (`cuda-kernels/c2_kernels.cu`),
/// so a kernel is named once, here, and a typo is a compile error rather
/// than a `MissingKernel` at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelId {
    /// NTT: bit-reversal permutation in place (pairs swapped).
    NttBitReverse,
    /// NTT: a group of butterfly stages in shared memory.
    NttPass,
    /// NTT: a group of inverse butterfly stages in shared memory (natural
    /// order towards bit-reversed order), optionally scaling by powers.
    NttPassInverse,
    /// NTT: a transform's last pass folded into a second vector
    /// (`acc *= result` or `acc = (acc - result) * zinv`).
    NttPassCombine,
    /// `out[i] = hi[i >> b] * lo[i & mask]` (twiddle tables).
    Powers,
    /// `data[i] *= hi[i >> b] * lo[i & mask]` (coset shifts, 1/n).
    ScaleByPowers,
    /// `a *= b` element-wise (a·b on the coset).
    MulPointwise,
    /// `a = (a - c) * zinv`: the H quotient on the coset, after `MulPointwise`.
    SubScale,
    /// `out[r] = Σ coeff · z[col]` over row r of a CSR constraint matrix
    /// (a, b, c from the witness), rows up to 32 entries.
    AbcRows,
    /// The same for the listed longer rows, one warp per row.
    AbcLongRows,
    /// The satisfaction check: the first i with `a_i · b_i ≠ c_i`.
    AbcUnsatisfied,
    /// A compact witness' bits expanded to 0/1 field elements.
    WitnessBits,
    /// A compact witness' other values written at their indices.
    WitnessScatter,
    /// Prefix sums: per-block scans.
    ScanBlocks,
    /// Prefix sums: add the block offsets.
    ScanAdd,
    /// MSM: drop zeros and masked-out scalars, list ones, compact the rest.
    MsmSplit,
    /// MSM: the same from a compact witness (bits and listed values).
    MsmSplitCompact,
    /// MSM: bucket histogram per window.
    MsmHistogram,
    /// MSM: counting-sort scatter by bucket.
    MsmScatter,
    /// MSM: two-level sort, per-block counts of the coarse bins.
    MsmCoarseCount,
    /// MSM: two-level sort, entries placed by coarse bin.
    MsmCoarsePlace,
    /// MSM: two-level sort, each coarse bin sorted by its fine buckets.
    MsmFineSort,
    /// MSM: per bucket, the points an affine pair pass keeps.
    MsmPairCounts,
    /// A per-group MSM step.
    Curve(CurveId, CurveStep),
}

/// The group a curve kernel works in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CurveId {
    /// BLS12-381 G1 (over Fp).
    G1,
    /// BLS12-381 G2 (over Fp2).
    G2,
}

/// The per-group MSM steps (`C2_MSM_CURVE` in `c2_kernels.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CurveStep {
    /// Bucket sums, XYZZ mixed additions in a called helper.
    Accumulate,
    /// Bucket sums, XYZZ mixed additions inlined.
    AccumulateInline,
    /// [`CurveStep::AccumulateInline`] compiled for at least 3 blocks of 128
    /// threads per SM (fewer registers, more warps).
    AccumulateInline3,
    /// The same for at least 4 blocks per SM.
    AccumulateInline4,
    /// Bucket sums, batched affine additions.
    AccumulateAffine,
    /// One affine pair pass over every bucket's list.
    PairSums,
    /// The heads of buckets spanning many segments, summed in groups.
    FixupHeads,
    /// Buckets that cross segment borders.
    Fixup,
    /// Running sums per window.
    Reduce,
    /// Tree sums of groups of points.
    SumGroups,
    /// Tree sums of gathered affine bases (the scalars equal to one).
    SumGathered,
    /// Precomputed copies of fixed bases: each base doubled a given number
    /// of times (XYZZ out).
    Precompute,
    /// XYZZ to affine.
    ToAffine,
}

impl KernelId {
    /// Every entry point of the module.
    pub const ALL: [KernelId; 49] = {
        use CurveId::{G1, G2};
        use CurveStep as S;
        [
            Self::NttBitReverse,
            Self::NttPass,
            Self::NttPassInverse,
            Self::NttPassCombine,
            Self::Powers,
            Self::ScaleByPowers,
            Self::MulPointwise,
            Self::SubScale,
            Self::AbcRows,
            Self::AbcLongRows,
            Self::AbcUnsatisfied,
            Self::WitnessBits,
            Self::WitnessScatter,
            Self::ScanBlocks,
            Self::ScanAdd,
            Self::MsmSplit,
            Self::MsmSplitCompact,
            Self::MsmHistogram,
            Self::MsmScatter,
            Self::MsmCoarseCount,
            Self::MsmCoarsePlace,
            Self::MsmFineSort,
            Self::MsmPairCounts,
            Self::Curve(G1, S::Accumulate),
            Self::Curve(G1, S::AccumulateInline),
            Self::Curve(G1, S::AccumulateInline3),
            Self::Curve(G1, S::AccumulateInline4),
            Self::Curve(G1, S::AccumulateAffine),
            Self::Curve(G1, S::PairSums),
            Self::Curve(G1, S::FixupHeads),
            Self::Curve(G1, S::Fixup),
            Self::Curve(G1, S::Reduce),
            Self::Curve(G1, S::SumGroups),
            Self::Curve(G1, S::SumGathered),
            Self::Curve(G1, S::Precompute),
            Self::Curve(G1, S::ToAffine),
            Self::Curve(G2, S::Accumulate),
            Self::Curve(G2, S::AccumulateInline),
            Self::Curve(G2, S::AccumulateInline3),
            Self::Curve(G2, S::AccumulateInline4),
            Self::Curve(G2, S::AccumulateAffine),
            Self::Curve(G2, S::PairSums),
            Self::Curve(G2, S::FixupHeads),
            Self::Curve(G2, S::Fixup),
            Self::Curve(G2, S::Reduce),
            Self::Curve(G2, S::SumGroups),
            Self::Curve(G2, S::SumGathered),
            Self::Curve(G2, S::Precompute),
            Self::Curve(G2, S::ToAffine),
        ]
    };

    /// The kernel's C symbol in the module.
    pub const fn symbol(self) -> &'static str {
        use CurveId::{G1, G2};
        use CurveStep as S;
        match self {
            Self::NttBitReverse => "c2_ntt_bit_reverse",
            Self::NttPass => "c2_ntt_pass",
            Self::NttPassInverse => "c2_ntt_pass_inverse",
            Self::NttPassCombine => "c2_ntt_pass_combine",
            Self::Powers => "c2_powers",
            Self::ScaleByPowers => "c2_scale_by_powers",
            Self::MulPointwise => "c2_mul_pointwise",
            Self::SubScale => "c2_sub_scale",
            Self::AbcRows => "c2_abc_rows",
            Self::AbcLongRows => "c2_abc_long_rows",
            Self::AbcUnsatisfied => "c2_abc_unsatisfied",
            Self::WitnessBits => "c2_witness_bits",
            Self::WitnessScatter => "c2_witness_scatter",
            Self::ScanBlocks => "c2_scan_blocks",
            Self::ScanAdd => "c2_scan_add",
            Self::MsmSplit => "c2_msm_split",
            Self::MsmSplitCompact => "c2_msm_split_compact",
            Self::MsmHistogram => "c2_msm_histogram",
            Self::MsmScatter => "c2_msm_scatter",
            Self::MsmCoarseCount => "c2_msm_coarse_count",
            Self::MsmCoarsePlace => "c2_msm_coarse_place",
            Self::MsmFineSort => "c2_msm_fine_sort",
            Self::MsmPairCounts => "c2_msm_pair_counts",
            Self::Curve(G1, S::Accumulate) => "c2_g1_msm_accumulate",
            Self::Curve(G1, S::AccumulateInline) => "c2_g1_msm_accumulate_inl",
            Self::Curve(G1, S::AccumulateInline3) => "c2_g1_msm_accumulate_inl3",
            Self::Curve(G1, S::AccumulateInline4) => "c2_g1_msm_accumulate_inl4",
            Self::Curve(G1, S::AccumulateAffine) => "c2_g1_msm_accumulate_affine",
            Self::Curve(G1, S::PairSums) => "c2_g1_msm_pair_sums",
            Self::Curve(G1, S::FixupHeads) => "c2_g1_msm_fixup_heads",
            Self::Curve(G1, S::Fixup) => "c2_g1_msm_fixup",
            Self::Curve(G1, S::Reduce) => "c2_g1_msm_reduce",
            Self::Curve(G1, S::SumGroups) => "c2_g1_msm_sum_groups",
            Self::Curve(G1, S::SumGathered) => "c2_g1_msm_sum_gathered",
            Self::Curve(G1, S::Precompute) => "c2_g1_msm_precompute",
            Self::Curve(G1, S::ToAffine) => "c2_g1_to_affine",
            Self::Curve(G2, S::Accumulate) => "c2_g2_msm_accumulate",
            Self::Curve(G2, S::AccumulateInline) => "c2_g2_msm_accumulate_inl",
            Self::Curve(G2, S::AccumulateInline3) => "c2_g2_msm_accumulate_inl3",
            Self::Curve(G2, S::AccumulateInline4) => "c2_g2_msm_accumulate_inl4",
            Self::Curve(G2, S::AccumulateAffine) => "c2_g2_msm_accumulate_affine",
            Self::Curve(G2, S::PairSums) => "c2_g2_msm_pair_sums",
            Self::Curve(G2, S::FixupHeads) => "c2_g2_msm_fixup_heads",
            Self::Curve(G2, S::Fixup) => "c2_g2_msm_fixup",
            Self::Curve(G2, S::Reduce) => "c2_g2_msm_reduce",
            Self::Curve(G2, S::SumGroups) => "c2_g2_msm_sum_groups",
            Self::Curve(G2, S::SumGathered) => "c2_g2_msm_sum_gathered",
            Self::Curve(G2, S::Precompute) => "c2_g2_msm_precompute",
            Self::Curve(G2, S::ToAffine) => "c2_g2_to_affine",
        }
    }
}

/// The kernels of the self-test module (feature `selftest`).
#[cfg(feature = "selftest")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelftestKernel {
    /// The curve formulas of the built backend: per input pair `(a, b)`,
    /// `[a + b (mixed), a + b (xyzz + xyzz), 2a, 2a + b]`.
    Curve(CurveId),
    /// One field backend's operations: per input pair `(a, b)`,
    /// `[a * b, a^2, a + b, a - b, 2a]`.
    FieldOps(SelftestField, FieldBackend),
    /// Throughput: per thread `x <- x * y`, `iters` times.
    MulChain(SelftestField, FieldBackend),
    /// Throughput of the bucket step: per thread `acc <- acc + b` (inlined
    /// mixed addition), `iters` times, written as `a + iters * b`.
    AddChain(CurveId, FieldBackend),
    /// Fr products on the FP64 pipe (`ff/fr_fp64.cuh`): per input pair
    /// `(a, b)`, `a * b` in blstrs' form.
    FrMulFp64,
    /// Throughput of [`SelftestKernel::FrMulFp64`]: per thread `x <- x * y`,
    /// `iters` times (the same values as [`SelftestKernel::MulChain`]).
    FrMulChainFp64,
    /// Two independent Fr product chains per thread, both by sppark's
    /// integer product: `x <- x * y` and `z <- z * y` from `z = y`, `iters`
    /// times; writes `x` to `out[i]` and `z` to `out[n + i]`.
    FrMulChainPairInteger,
    /// As [`SelftestKernel::FrMulChainPairInteger`] with the `z` chain on
    /// the FP64 pipe (`ff/fr_fp64.cuh`): both pipes busy at once.
    FrMulChainPairMixed,
    /// Fixed-base multiplication by a byte-window comb (the test kit's
    /// Groth16 set-up): `out[i] = s_i · g` in affine form from a table of
    /// `d · 2^(8w) · g` (w < 32, d in 1..=255) and canonical scalars.
    CombMul(CurveId),
}

/// The two fields of the self-test field kernels.
#[cfg(feature = "selftest")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelftestField {
    /// The scalar field (8 x 32-bit limbs).
    Fr,
    /// The base field (12 x 32-bit limbs).
    Fp,
}

/// The field arithmetic backends of `cuda-kernels/ff/field.cuh`: both
/// compute the same limbs; the module is built with one
/// (`C2_CUDA_FIELD`), the self-test module holds both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldBackend {
    /// ec-gpu-gen's generated arithmetic (bellperson's).
    EcGpuGen,
    /// sppark's `mont_t` (SupraSeal's).
    Sppark,
}

impl FieldBackend {
    /// The backend the embedded module was compiled with.
    pub const BUILT: Self = if cfg!(c2_field_sppark) { Self::Sppark } else { Self::EcGpuGen };
    /// Its name as `C2_CUDA_FIELD` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::EcGpuGen => "ec-gpu-gen",
            Self::Sppark => "sppark",
        }
    }
}

#[cfg(feature = "selftest")]
impl SelftestKernel {
    /// The kernel's C symbol.
    pub const fn symbol(self) -> &'static str {
        use CurveId::{G1, G2};
        use FieldBackend::{EcGpuGen as E, Sppark as S};
        use SelftestField::{Fp, Fr};
        match self {
            Self::Curve(G1) => "c2_g1_selftest",
            Self::Curve(G2) => "c2_g2_selftest",
            Self::FieldOps(Fr, E) => "c2_fr_ops_ecgpu",
            Self::FieldOps(Fr, S) => "c2_fr_ops_sppark",
            Self::FieldOps(Fp, E) => "c2_fp_ops_ecgpu",
            Self::FieldOps(Fp, S) => "c2_fp_ops_sppark",
            Self::MulChain(Fr, E) => "c2_fr_mul_chain_ecgpu",
            Self::MulChain(Fr, S) => "c2_fr_mul_chain_sppark",
            Self::MulChain(Fp, E) => "c2_fp_mul_chain_ecgpu",
            Self::MulChain(Fp, S) => "c2_fp_mul_chain_sppark",
            Self::AddChain(G1, E) => "c2_g1_add_chain_ecgpu",
            Self::AddChain(G1, S) => "c2_g1_add_chain_sppark",
            Self::AddChain(G2, E) => "c2_g2_add_chain_ecgpu",
            Self::AddChain(G2, S) => "c2_g2_add_chain_sppark",
            Self::FrMulFp64 => "c2_fr_mul_fp64",
            Self::FrMulChainFp64 => "c2_fr_mul_chain_fp64",
            Self::FrMulChainPairInteger => "c2_fr_mul_chain_pair_sppark",
            Self::FrMulChainPairMixed => "c2_fr_mul_chain_pair_mixed",
            Self::CombMul(G1) => "c2_g1_comb_mul",
            Self::CombMul(G2) => "c2_g2_comb_mul",
        }
    }
}

/// Kernel lookup (here rather than in `device`, which knows nothing of kernels).
impl Gpu {
    /// The function `name` of a loaded module.
    pub(crate) fn function(module: &Arc<Module>, name: &'static str) -> Result<Kernel, GpuError> {
        let cname = CString::new(name).map_err(|_| GpuError::MissingKernel(name.into()))?;
        module.context.bind()?;
        let mut f: CuFunction = std::ptr::null_mut();
        // SAFETY: a loaded module (held), a NUL-terminated name and a valid
        // out-pointer; the module's context is current.
        let r = unsafe { (module.context.driver.cuModuleGetFunction)(&mut f, module.handle, cname.as_ptr()) };
        match check("cuModuleGetFunction", r) {
            Ok(()) => Ok(Kernel { f, name, module: module.clone() }),
            Err(GpuError::Driver { error: crate::DriverError::NotFound, .. }) => {
                Err(GpuError::MissingKernel(name.into()))
            }
            Err(e) => Err(e),
        }
    }
    /// A kernel of the embedded module (loaded on first use).
    #[cfg(feature = "cuda")]
    pub fn kernel(&self, id: KernelId) -> Result<Kernel, GpuError> {
        let module = self.module.get_or_init(|| self.load_module(KERNELS_FATBIN)).as_ref().map_err(Clone::clone)?;
        Self::function(module, id.symbol())
    }
    /// A kernel of the curve self-test module (feature `selftest`).
    #[cfg(feature = "selftest")]
    pub fn selftest_kernel(&self, id: SelftestKernel) -> Result<Kernel, GpuError> {
        let module = self.selftest.get_or_init(|| self.load_module(SELFTEST_FATBIN)).as_ref().map_err(Clone::clone)?;
        Self::function(module, id.symbol())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each argument's pointer points at that argument, in order, at its
    /// own width (what the driver copies into the parameter buffer).
    #[test]
    fn kernel_args_point_at_each_value_in_order() {
        let mut args = (0x1122_3344_5566_7788u64, 7u32, u64::MAX);
        let read = args.with_pointers(|p| {
            assert_eq!(p.len(), 3);
            // SAFETY: the pointers come from the tuple above, with these types.
            unsafe { (*p[0].cast::<u64>(), *p[1].cast::<u32>(), *p[2].cast::<u64>()) }
        });
        assert_eq!(read, (0x1122_3344_5566_7788, 7, u64::MAX));
    }

    /// The ids name every entry point of `c2_kernels.cu` once, and only
    /// those: a kernel added or renamed there without its id (or the
    /// reverse) fails here, on the CPU, instead of at a device's first launch.
    #[test]
    fn kernel_ids_match_the_entry_points_of_the_module() {
        let source = include_str!("../../../cuda-kernels/c2_kernels.cu");
        let curve_steps: Vec<&str> = source
            .split("extern \"C\" __global__ void ")
            .skip(1)
            // As below: the name may follow `__launch_bounds__(..)`.
            .filter_map(|rest| rest.find("c2_").map(|at| &rest[at..]))
            .filter_map(|name| name.strip_prefix("c2_##G##_"))
            .map(|rest| rest.split('(').next().unwrap_or("").trim())
            .collect();
        let groups: Vec<&str> =
            source.lines().filter_map(|l| l.strip_prefix("C2_MSM_CURVE(").and_then(|r| r.split(',').next())).collect();
        let mut declared: Vec<String> = source
            .split("extern \"C\" __global__ void ")
            .skip(1)
            // The name is the first `c2_` word (after any `__launch_bounds__(..)`).
            .filter_map(|rest| rest.find("c2_").map(|at| &rest[at..]))
            .map(|name| name.split('(').next().unwrap_or("").trim().to_string())
            .filter(|name| !name.contains("##"))
            .collect();
        for g in &groups {
            declared.extend(curve_steps.iter().map(|step| format!("c2_{g}_{step}")));
        }
        declared.sort();
        let mut ids: Vec<String> = KernelId::ALL.iter().map(|k| k.symbol().to_string()).collect();
        ids.sort();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "two ids name one symbol");
        assert_eq!(ids, declared);
    }
}
