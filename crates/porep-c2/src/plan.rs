//! The device working set of the GPU workers, planned from a device's memory
//! budget: a pure function, tested without a device.
//!
//! One partition on a worker holds at most (ARCHITECTURE.md, "Device
//! memory"):
//! - **vectors**: two domain-size scalar vectors. compute_h runs a and b in
//!   two buffers and uploads c into b's after a·b; H ends in a's buffer and
//!   the witness (aux) is uploaded into b's once H is done. 8.6 GB at 2^27.
//! - **MSM scratch**: two slots of streamed bases, the 0/1 split of one run
//!   (40 bytes per base), the window pass (sort entries, buckets: what
//!   [`c2_msm::plan::plan_windows`] divides) and the density masks.
//!
//! Per device there are also the NTT tables (2.1 GB at 2^27) and whatever
//! parameter vectors stay resident. Each worker's vectors and MSM scratch
//! are arenas of their own (`c2_vram::VramPool::carve`), so two workers
//! cannot fragment each other's memory: a partition either fits its arenas
//! or is refused before anything is queued.
//!
//! [`plan_device`] first fits the minimum per worker (G2 chunks of 2^22
//! bases, G1 chunks and runs of 2^23, one window per pass) for as many of
//! the requested workers as the budget holds, then spends what is left on,
//! in order: MSM scratch up to runs of 2^24 with every window in one pass,
//! resident parameter vectors (most bytes first: each is PCIe traffic saved
//! on every partition), whole-query runs with longer chunks, and, once every
//! parameter vector is resident, a, b, c on the device: each worker's
//! witness vector (4.2 GB at 32 GiB) and the shape's constraint matrices
//! (7.3 GB), so only the witness crosses PCIe; where they do not fit, the
//! matrices are streamed in row chunks and z lives in the MSM arena while
//! compute_h runs (that arena grown for it: [`plan_device`]). Scratch
//! comes before residency because it was measured to matter more: on the
//! H200, 32 runs of 2^22 instead of one run cost the H MSM 0.87 s (2.29 vs
//! 1.42 s, bases resident), and a third of the pass budget slowed H and B_G2
//! by 1.2 s each, while streaming a 12.5 GB vector through the staging path
//! costs ~0.5 s (~25 GB/s).

use c2_msm::plan::{full_pass_budget, min_pass_budget, split_bytes, totals_bytes};

/// Bytes of one scalar (Fr) and of one affine G1 / G2 point on the device.
const SCALAR: usize = 32;
const G1_POINT: usize = 96;
const G2_POINT: usize = 192;
/// XYZZ points (the MSM's bucket sums): G1 and G2.
const G1_XYZZ: usize = 192;
const G2_XYZZ: usize = 384;
/// The MSM's bucket kernels' target thread count (`GpuMsmConfig` default).
const MSM_THREADS: usize = 1 << 17;
/// Bytes per streamed slot in all plans but the roomiest: 2^22 G2 bases
/// (0.8 GB; G1 chunks of 2^23). Two slots per worker.
const SLOT_BYTES: usize = (1 << 22) * G2_POINT;
/// Bytes per slot when memory is plentiful: 2^24 G2 bases (3.2 GB; G1
/// chunks of 2^25).
const WIDE_SLOT_BYTES: usize = (1 << 24) * G2_POINT;
/// Runs over resident bases in the smallest plan: 2^23, as long as the G1
/// chunks (each run pays a split of all scalars, window reductions and two
/// host waits: ~27 ms per run of 2^22 measured on the H200's H MSM).
const MIN_RUN: usize = 1 << 23;
/// Runs of the middle plan.
const MID_RUN: usize = 1 << 24;
/// Room for the tables of other domain sizes (2^22: 64 MB) and small
/// uploads on the shared part of a device (the parameter cache leaves it
/// free).
pub const SHARED_SLACK: usize = 256 << 20;
/// Slack of each MSM arena: buffers that grow inside one MSM (prefix-sum
/// temporaries, partial sums) leave holes; measured scratch stays below it.
const MSM_SLACK: usize = 96 << 20;
/// Bytes per slot of streamed constraint-matrix chunks (two per worker):
/// 64 M words, ~30 M entries, so a 32 GiB partition's 7.3 GB arrive in
/// ~30 chunks of ~5 ms of PCIe each, each computed while the next arrives.
pub const MATRIX_SLOT_BYTES: usize = 256 << 20;
/// Most partitions one batched MSM pass over streamed parameters serves
/// (issue 42): a 32 GiB proof's 10 partitions and a few of the next one's.
pub const MAX_BATCH: usize = 16;

/// What decides a partition's device memory: its domain, witness and
/// parameter vector lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionShape {
    /// log2 of the NTT domain (constraints rounded up to a power of two).
    pub log_domain: u32,
    /// Aux (witness) variables.
    pub aux: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Bases per query: h, l, a, b_g1, b_g2.
    pub bases: [usize; 5],
    /// Non-zero entries of the circuit's A, B and C together (0 when not
    /// known: a, b, c are then never planned on the device).
    pub matrix_entries: usize,
    /// Blocks of rows the circuit repeats (a PoRep partition's challenges:
    /// 18 at 32 GiB, 2 at 2 KiB, found by `c2_abc::find_repeat` on the
    /// recorded matrices): their repeated form (`c2_abc::RepeatedMatrices`)
    /// keeps one block, ~1/`repeat_blocks` of the matrices' bytes. 1 when
    /// the rows do not repeat or that was not measured: nothing is then
    /// planned for the repeated form.
    pub repeat_blocks: usize,
}

/// The parameter vectors in [`PartitionShape::bases`] order.
pub const QUERIES: [&str; 5] = ["h", "l", "a", "b_g1", "b_g2"];

impl PartitionShape {
    /// The shape of a parameter set (the circuit's sizes as
    /// `check_parameters` holds them: H has domain − 1 points, L one per
    /// aux variable, the verifying key one IC point per input).
    pub fn of_parameters(params: &bellperson::groth16::Parameters<blstrs::Bls12>) -> Self {
        let m = (params.h.len() + 1).next_power_of_two();
        Self {
            log_domain: m.trailing_zeros(),
            aux: params.l.len(),
            inputs: params.vk.ic.len(),
            bases: [params.h.len(), params.l.len(), params.a.len(), params.b_g1.len(), params.b_g2.len()],
            matrix_entries: 0,
            repeat_blocks: 1,
        }
    }

    /// One partition of a registered PoRep sector size (bytes), for planning
    /// before any parameters are read. 2 KiB and 8 MiB are the real vector
    /// lengths; 512 MiB and 32 GiB are the measured constraint and aux counts
    /// with the measured A/B densities (99.2 / 26.6 % and 99.7 / 25.4 %);
    /// 64 GiB, not measured here, is the bound of its 2^27 domain (every aux
    /// variable in A, 30 % in B). Sources: ARCHITECTURE.md, "Facts we rely
    /// on". `None` for other sizes.
    pub fn for_sector_size(bytes: u64) -> Option<Self> {
        let s = |log_domain, aux: usize, inputs: usize, a: usize, b: usize, matrix_entries| Self {
            log_domain,
            aux,
            inputs,
            bases: [(1 << log_domain) - 1, aux, a, b, b],
            matrix_entries,
            repeat_blocks: 1,
        };
        let permille = |x: usize, p: usize| x * p / 1000;
        // Matrix entries measured on CC test sectors (A + B + C): 2 KiB
        // 14.93 M, 8 MiB 21.47 M, 32 GiB 722.39 M (5.55 per constraint);
        // 512 MiB and 64 GiB at 5.6 per constraint of their domains' bound.
        // Repeated blocks found on the real partitions (H100, 2026-12-07,
        // `--only abc`): 2 KiB 2 of 1,343,675 rows, 32 GiB 18 of 7,237,665
        // rows (0.408 GB on the device against 7.34 GB whole); the other
        // sizes were not searched.
        Some(match bytes {
            2048 => Self { repeat_blocks: 2, ..s(22, 2_685_673, 40, 2_674_948, 685_522, 14_934_693) },
            0x80_0000 => s(22, 3_842_449, 40, 3_815_036, 1_011_290, 21_471_221),
            0x2000_0000 => {
                s(23, 4_420_837, 40, 40 + permille(4_420_837, 992), permille(4_420_837, 266), 5_600 * 4_423_473 / 1000)
            }
            0x8_0000_0000 => Self {
                repeat_blocks: 18,
                ..s(27, 130_169_893, 328, 328 + permille(130_169_893, 997), permille(130_169_893, 254), 722_388_891)
            },
            0x10_0000_0000 => {
                let aux = (1 << 27) - 328;
                s(27, aux, 328, 328 + aux, permille(aux, 300), 5_600 * (1 << 27) / 1000)
            }
            _ => return None,
        })
    }

    /// The shape of a recorded circuit (its constraint matrices): what
    /// [`PartitionShape::of_parameters`] gives for its parameters, with the
    /// matrices' entries.
    pub fn of_matrices(m: &c2_synth::ConstraintMatrices) -> Self {
        let n = m.parameter_lengths();
        Self {
            log_domain: n.domain.trailing_zeros(),
            aux: n.aux,
            inputs: n.inputs,
            bases: [n.domain - 1, n.aux, n.a, n.b, n.b],
            matrix_entries: m.a.entries() + m.b.entries() + m.c.entries(),
            // Finding the repeat takes seconds at 2^27 (2.5 s): not here.
            repeat_blocks: 1,
        }
    }

    /// The largest of each of the two shapes' counts: a plan for it holds a
    /// partition of either.
    pub fn covering(&self, other: &Self) -> Self {
        let bases = std::array::from_fn(|i| self.bases[i].max(other.bases[i]));
        Self {
            log_domain: self.log_domain.max(other.log_domain),
            aux: self.aux.max(other.aux),
            inputs: self.inputs.max(other.inputs),
            bases,
            matrix_entries: self.matrix_entries.max(other.matrix_entries),
            // The fewer blocks of the larger matrices: at least either's
            // repeated form (none planned when either's rows do not repeat).
            repeat_blocks: self.repeat_blocks.min(other.repeat_blocks),
        }
    }

    /// A WinningPoSt partition of any registered size: the 32 and 64 GiB
    /// circuits' counts covered ([`PartitionShape::covering`]), as recorded
    /// from storage-proofs-post's circuit on valid test sectors (the test
    /// `the_winning_post_shape_covers_the_recorded_circuits` records them
    /// again). What the GPU backend's urgent lane is planned for.
    pub fn winning_post() -> Self {
        Self {
            log_domain: WINNING_LOG_DOMAIN,
            aux: WINNING_AUX,
            inputs: WINNING_INPUTS,
            bases: [(1 << WINNING_LOG_DOMAIN) - 1, WINNING_AUX, WINNING_A, WINNING_B, WINNING_B],
            matrix_entries: WINNING_ENTRIES,
            repeat_blocks: 1,
        }
    }

    /// What device memory is planned for to prove partitions of `family`
    /// at `sector_size` bytes: the PoRep partition of that size covering
    /// the family's own shape where it exceeds it in some count. A
    /// WindowPoSt partition at 32 GiB has fewer constraints and aux than
    /// C2's but 79x the public inputs (25,840), 2.8x B's bases and 1.6x
    /// the matrix entries (recorded: [`PartitionShape::window_post_32g`]);
    /// at 64 GiB (2,300 sectors, one tree level more; not recorded here)
    /// the 32 GiB counts are covered the same way. WinningPoSt and the
    /// SnapDeals update (81 M constraints, 5 inputs at 32 GiB, recorded)
    /// fit within the PoRep partition of their size, but for WinningPoSt's
    /// public inputs (more than C2's at every size; at 32 and 64 GiB
    /// [`PartitionShape::winning_post`] is covered whole).
    /// `None` for a size that is not registered.
    pub fn for_proof(family: ProofFamily, sector_size: u64) -> Option<Self> {
        let porep = Self::for_sector_size(sector_size)?;
        let big = sector_size >= 0x8_0000_0000;
        Some(match family {
            ProofFamily::WindowPost if big => porep.covering(&Self::window_post_32g()),
            ProofFamily::WinningPost if big => porep.covering(&Self::winning_post()),
            // 66 challenges' public inputs at every size (IC 133 at 2 KiB).
            ProofFamily::WinningPost => Self { inputs: porep.inputs.max(WINNING_INPUTS), ..porep },
            _ => porep,
        })
    }

    /// A WindowPoSt partition of 32 GiB sectors (2,349 of them), as recorded
    /// from storage-proofs-post's circuit on valid test sectors (on the dev
    /// box: `POST_FULL_MATRICES=1 cargo test --release -p c2-synth --lib --
    /// --ignored a_full_size_window`; on the H100 by the device runner's
    /// `--only post --post-sizes 32g`, 2026-12-06): 125,305,057
    /// constraints, 25,840 inputs, 126,902,376 aux, A 96,205,645 and B
    /// 91,925,767 bases, 1,147,216,366 matrix entries.
    pub fn window_post_32g() -> Self {
        let (aux, a, b) = (126_902_376, 96_205_645, 91_925_767);
        Self {
            log_domain: 27,
            aux,
            inputs: 25_840,
            bases: [(1 << 27) - 1, aux, a, b, b],
            matrix_entries: 1_147_216_366,
            repeat_blocks: 1,
        }
    }

    /// The registered PoRep sector sizes, smallest first.
    pub const SECTOR_SIZES: [u64; 5] = [2048, 0x80_0000, 0x2000_0000, 0x8_0000_0000, 0x10_0000_0000];

    /// Domain size.
    pub fn domain(&self) -> usize {
        1 << self.log_domain
    }

    /// Device bytes of each parameter vector (h, l, a, b_g1, b_g2).
    pub fn parameter_bytes(&self) -> [usize; 5] {
        let b = self.bases;
        [b[0] * G1_POINT, b[1] * G1_POINT, b[2] * G1_POINT, b[3] * G1_POINT, b[4] * G2_POINT]
    }

    /// Bytes of the partition's vectors arena: two domain vectors (or the
    /// domain plus the witness, if that is longer) and the inputs, each
    /// rounded to the pool's 256-byte unit.
    pub fn vectors_bytes(&self) -> usize {
        let round = |b: usize| b.next_multiple_of(256);
        let m = self.domain() * SCALAR;
        round(m) + round(m.max(self.aux * SCALAR)) + round(self.inputs.max(1) * SCALAR)
    }

    /// Device bytes of one worker's witness vector (inputs, aux) when a, b,
    /// c are computed on the device: z must outlive both domain vectors.
    pub fn witness_bytes(&self) -> usize {
        ((self.inputs + self.aux) * SCALAR).next_multiple_of(256)
    }

    /// Device bytes of the circuit's A, B, C (`c2_abc::DeviceMatrices`: u32
    /// row starts, columns and coefficient indices; 7.34 GB at 32 GiB
    /// measured), bounded by the domain's rows; 0 when the entries are not
    /// known.
    pub fn matrices_bytes(&self) -> usize {
        if self.matrix_entries == 0 {
            return 0;
        }
        4 * (3 * (self.domain() + 1) + 2 * self.matrix_entries) + (1 << 20)
    }

    /// Device bytes of the matrices' repeated form (one block of the
    /// repeated rows with the rows before and after it): the whole
    /// matrices' bytes over [`PartitionShape::repeat_blocks`], plus 1 MiB
    /// for each matrix's long-row list and the rows outside the blocks
    /// (0.41 GB at 32 GiB: 0.408 GB measured). 0 when the rows do not
    /// repeat or the matrices are not known.
    pub fn repeated_matrices_bytes(&self) -> usize {
        if self.repeat_blocks <= 1 {
            return 0;
        }
        self.matrices_bytes() / self.repeat_blocks + (3 << 20)
    }

    /// Device bytes a worker needs during compute_h when a, b, c are
    /// computed from streamed matrices (all in its MSM arena, idle until
    /// the MSMs): z = (inputs, aux) as scalars, two matrix-chunk slots, the
    /// compact witness' temporaries (its bits and, as the host's admission
    /// estimate assumes, one aux value in 16 listed in full: 0.31 GB at
    /// 32 GiB, 77 MB measured) and the coefficient table. 5.1 GB at 32 GiB;
    /// 0 when the matrices are not known.
    pub fn streamed_abc_bytes(&self) -> usize {
        if self.matrix_entries == 0 {
            return 0;
        }
        let compact = (self.aux / 8).next_multiple_of(256) + (self.aux / 16) * (4 + SCALAR) + (2 << 20);
        self.witness_bytes() + 2 * MATRIX_SLOT_BYTES + compact + (1 << 20) + MSM_SLACK
    }

    /// Host bytes one partition holds as a member of a batched MSM pass,
    /// page-locked, between its compute_h and the passes: H's
    /// coefficients (domain − 1 scalars; 4 GiB at 32 GiB). The device cannot
    /// keep several (a 16 GiB card holds four with nothing else), so they
    /// wait on the host and come back chunk by chunk with H's bases.
    pub fn batch_member_host_bytes(&self) -> usize {
        (self.domain() - 1) * SCALAR
    }

    /// Device bytes one partition holds as a member of a batched MSM pass
    /// over streamed parameters (`c2_msm::gpu::GpuMsm::msm_batch_host_bases`)
    /// with slots of `slot_bytes`: its aux witness in compact form (bits,
    /// and one value in 32 listed in full: the ~3 % measured on 2 KiB to
    /// 512 MiB witnesses; a 32 GiB partition's measured 77 MB is less), its
    /// inputs and density masks, two chunks of H's scalars (they come from
    /// the host, a chunk per slot, as long as a G1 chunk) and the bucket
    /// totals of an MSM of several runs (G2's, the larger). 0.95 GB at
    /// 32 GiB with 0.8 GB slots. An upper bound for planning: the worker
    /// counts each partition's real compact witness when it forms a batch.
    pub fn batch_member_bytes(&self, slot_bytes: usize) -> usize {
        let compact = (self.aux / 8).next_multiple_of(256) + (self.aux / 32) * (4 + SCALAR);
        let inputs = (self.inputs.max(1) * SCALAR).next_multiple_of(256);
        let h_chunk = (slot_bytes / G1_POINT).clamp(1, self.bases[0].max(1));
        let longest = self.bases.iter().copied().max().unwrap_or(0);
        let runs = longest.div_ceil((slot_bytes / G2_POINT).max(1));
        compact
            + inputs
            + self.mask_bytes()
            + 2 * (h_chunk * SCALAR).next_multiple_of(256)
            + totals_bytes(G2_XYZZ, runs)
    }

    /// Device bytes of the three density masks (bit words and per-word ranks).
    fn mask_bytes(&self) -> usize {
        let mask = |bits: usize| {
            let words = bits.div_ceil(64).max(1);
            (words * 8).next_multiple_of(256) + ((words + 1) * 4).next_multiple_of(256)
        };
        2 * mask(self.aux) + mask(self.inputs)
    }

    /// Bytes one partition moves host-to-device when the vectors `resident`
    /// marks stay on the device: a, b, c and the witness (full scalars, one
    /// per constraint bounded by the domain), inputs, masks, and every base
    /// of the streamed queries.
    pub fn pcie_bytes(&self, resident: &[bool; 5]) -> usize {
        let vectors = (3 * self.domain() + self.aux + self.inputs) * SCALAR + self.mask_bytes();
        let streamed: usize = self.parameter_bytes().iter().zip(resident).filter(|(_, &r)| !r).map(|(b, _)| b).sum();
        vectors + streamed
    }
}

/// The proof families whose partitions the planner tells apart
/// ([`PartitionShape::for_proof`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofFamily {
    /// PoRep C2 (StackedDrg).
    Porep,
    /// WindowPoSt (FallbackPoSt, many sectors per partition).
    WindowPost,
    /// WinningPoSt (FallbackPoSt, one sector).
    WinningPost,
    /// SnapDeals (EmptySectorUpdate).
    EmptySectorUpdate,
}

// WinningPoSt's circuit at 32 and 64 GiB, the larger of each count
// (recorded: see `PartitionShape::winning_post`). 32 GiB: 375,210 aux, 133
// inputs, A 284,329 and B 272,185 bases, 3,391,147 entries; 64 GiB (one
// tree level more): 396,000, 133, 299,971, 287,695, 3,578,059; both in a
// 2^19 domain.
const WINNING_LOG_DOMAIN: u32 = 19;
const WINNING_AUX: usize = 396_000;
const WINNING_INPUTS: usize = 133;
const WINNING_A: usize = 299_971;
const WINNING_B: usize = 287_695;
const WINNING_ENTRIES: usize = 3_578_059;

/// How one device is used for partitions of one shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePlan {
    /// The device budget planned (bytes).
    pub budget: usize,
    /// Workers that fit (at most the requested number).
    pub workers: usize,
    /// Bytes of each worker's vectors arena.
    pub vectors_bytes: usize,
    /// Bytes of each worker's MSM scratch arena.
    pub msm_bytes: usize,
    /// The MSM's per-pass budget (`GpuMsmConfig::memory_budget`).
    pub pass_budget: usize,
    /// Bases per Pippenger run over resident bases (`GpuMsmConfig::max_run`;
    /// `None`: one run per MSM).
    pub max_run: Option<usize>,
    /// Bytes per streamed slot (`GpuMsmConfig::stream_slot_bytes`; chunks
    /// of as many bases as fit, two slots).
    pub slot_bytes: usize,
    /// The NTT tables of the shape's domain plus room for smaller ones.
    pub tables_bytes: usize,
    /// Which parameter vectors (h, l, a, b_g1, b_g2) the plan keeps resident.
    pub resident: [bool; 5],
    /// What the shared part has left after the tables and those vectors
    /// (other parameter sets may use it).
    pub spare_bytes: usize,
    /// Bytes of each worker's witness vector (part of `vectors_bytes`) when
    /// a, b, c are computed on the device from the shape's matrices; 0 when
    /// they come from the host.
    pub witness_bytes: usize,
    /// Bytes planned for the shape's matrices in the shared part (0: a, b,
    /// c on the host or from streamed matrices).
    pub matrices_bytes: usize,
    /// a, b, c computed on the device from matrices streamed in chunks
    /// (`c2_abc::AbcStream`) with z in the idle MSM arena (sized for it:
    /// [`PartitionShape::streamed_abc_bytes`]): when the matrices do not fit
    /// resident.
    pub abc_streamed: bool,
    /// Bytes planned in the shared part for the matrices' repeated form
    /// ([`PartitionShape::repeated_matrices_bytes`]) under a streamed plan
    /// (a, b, c then come from it, not from chunks), before any parameter
    /// vector: at 32 GiB its 0.41 GB saves each partition 7.34 GB of
    /// matrix chunks, where a resident b_g1 (3.2 GB) saves 3.2 GB per pass,
    /// shared by a batch. 0 when the rows do not repeat.
    pub repeated_bytes: usize,
    /// Most partitions a worker's batched MSM pass serves when parameters
    /// stream: as many members ([`PartitionShape::batch_member_bytes`]) as
    /// its vectors arena holds (idle during the MSMs: H has gone to the
    /// host and z back to its compact form), at most [`MAX_BATCH`]; 1 when
    /// every parameter vector is resident (nothing to share).
    pub max_batch: usize,
}

impl DevicePlan {
    /// Bytes every worker's arenas take.
    pub fn per_worker(&self) -> usize {
        self.vectors_bytes + self.msm_bytes
    }

    /// Whether a, b, c are computed on the device (from resident or
    /// streamed matrices) rather than on the host.
    pub fn abc_on_device(&self) -> bool {
        self.matrices_bytes > 0 || self.abc_streamed
    }

    /// Bytes one partition moves host-to-device under this plan: the
    /// witness and masks only when a, b, c are computed on the device.
    pub fn pcie_bytes(&self, shape: &PartitionShape) -> usize {
        let witness = (shape.aux + shape.inputs) * SCALAR + shape.mask_bytes();
        if self.matrices_bytes > 0 {
            witness
        } else if self.abc_streamed {
            let streamed: usize =
                shape.parameter_bytes().iter().zip(&self.resident).filter(|(_, &r)| !r).map(|(b, _)| b).sum();
            let chunks = if self.repeated_bytes > 0 { 0 } else { shape.matrices_bytes() };
            witness + chunks + streamed
        } else {
            shape.pcie_bytes(&self.resident)
        }
    }

    /// The most partitions a worker of this plan batches when the device's
    /// workers may page-lock `host_bytes` together for their members' H
    /// ([`PartitionShape::batch_member_host_bytes`] each): the plan's bound
    /// ([`DevicePlan::max_batch`], device memory) within the host's; at
    /// least 1.
    pub fn batch_within(&self, shape: &PartitionShape, host_bytes: usize) -> usize {
        let host = host_bytes / self.workers.max(1) / shape.batch_member_host_bytes().max(1);
        self.max_batch.min(host).max(1)
    }

    /// Bytes one partition moves host-to-device under this plan when its
    /// MSMs run in passes of `batch` partitions: the streamed parameters
    /// divided among them, plus, in a batch of two or more, H's scalars
    /// coming back from the host (domain − 1 scalars: 4.3 GB at 32 GiB).
    pub fn batched_pcie_bytes(&self, shape: &PartitionShape, batch: usize) -> usize {
        let streamed: usize =
            shape.parameter_bytes().iter().zip(&self.resident).filter(|(_, &r)| !r).map(|(b, _)| b).sum();
        let batch = batch.max(1);
        let h_back = if batch > 1 { shape.bases[0] * SCALAR } else { 0 };
        self.pcie_bytes(shape) - streamed + streamed / batch + h_back
    }

    /// Bytes of the resident parameter vectors.
    pub fn resident_bytes(&self, shape: &PartitionShape) -> usize {
        shape.parameter_bytes().iter().zip(&self.resident).filter(|(_, &r)| r).map(|(b, _)| b).sum()
    }

    /// One line for logs: workers, arenas, residency, PCIe bytes per partition.
    pub fn describe(&self, shape: &PartitionShape) -> String {
        let gb = |b: usize| b as f64 / 1e9;
        let resident: Vec<&str> = QUERIES.iter().zip(&self.resident).filter(|(_, &r)| r).map(|(q, _)| *q).collect();
        format!(
            "{:.1} GB for 2^{} partitions: {} worker(s) x ({:.1} GB vectors + {:.1} GB MSM scratch, {:.2} GB per pass), tables {:.1} GB, parameters resident: {} ({:.1} GB), runs of {}, G1 chunks of {} bases; a, b, c {}; {:.1} GB host-to-device per partition{}",
            gb(self.budget),
            shape.log_domain,
            self.workers,
            gb(self.vectors_bytes),
            gb(self.msm_bytes),
            gb(self.pass_budget),
            gb(self.tables_bytes),
            if resident.is_empty() { "none".to_string() } else { resident.join(", ") },
            gb(self.resident_bytes(shape)),
            self.max_run.map_or("all".to_string(), |r| r.to_string()),
            self.slot_bytes / G1_POINT,
            if self.matrices_bytes > 0 {
                format!("on the device ({:.1} GB of matrices)", gb(self.matrices_bytes))
            } else if self.repeated_bytes > 0 {
                format!("on the device from the matrices' repeated form ({:.2} GB)", gb(self.repeated_bytes))
            } else if self.abc_streamed {
                format!("on the device from streamed matrices ({:.1} GB)", gb(shape.matrices_bytes()))
            } else {
                "from the host".to_string()
            },
            gb(self.pcie_bytes(shape)),
            if self.max_batch > 1 {
                format!(
                    "; batched MSM passes of up to {} partitions ({:.1} GB each at that batch)",
                    self.max_batch,
                    gb(self.batched_pcie_bytes(shape, self.max_batch))
                )
            } else {
                String::new()
            },
        )
    }
}

/// A device budget that cannot hold one worker's minimal working set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{budget} bytes of device memory cannot prove 2^{log_domain} partitions: one worker needs at least {minimum} bytes ({:.1} GiB; NTT tables, two domain vectors, MSM scratch for runs of 2^23 bases)",
    *minimum as f64 / (1u64 << 30) as f64
)]
pub struct TooSmall {
    /// The budget given.
    pub budget: usize,
    /// The least budget that proves this shape with one worker.
    pub minimum: usize,
    /// The shape's domain, log2.
    pub log_domain: u32,
}

/// How one worker's MSMs run: what its arena is sized for.
#[derive(Clone, Copy)]
struct MsmTier {
    /// Runs over resident bases (`None`: whole queries).
    run: Option<usize>,
    /// Bytes per streamed slot.
    slot: usize,
}

impl MsmTier {
    /// Runs of `run` bases and slots of `slot` bytes, the slots no larger
    /// than the shape's longest query needs.
    fn new(shape: &PartitionShape, run: Option<usize>, slot: usize) -> Self {
        let longest = shape.bases.iter().copied().max().unwrap_or(0).max(1);
        Self { run, slot: slot.min((longest * G2_POINT).next_multiple_of(256)) }
    }

    /// The longest run in G1 and in G2: resident runs, or one chunk.
    fn runs(&self, shape: &PartitionShape) -> (usize, usize) {
        let longest = shape.bases.iter().copied().max().unwrap_or(0).max(1);
        let resident = self.run.unwrap_or(longest);
        let g1 = resident.max(self.slot / G1_POINT).min(longest);
        let g2 = resident.max(self.slot / G2_POINT).min(shape.bases[4].max(1));
        (g1, g2)
    }

    /// The per-pass budget for one window of any run, in both groups (with
    /// each group's default bucket sums, `BucketSum::measured_default`).
    fn min_pass(&self, shape: &PartitionShape) -> usize {
        let (g1, g2) = self.runs(shape);
        min_pass_budget(g1, G1_XYZZ, MSM_THREADS).max(min_pass_budget(g2, G2_XYZZ, MSM_THREADS))
    }

    /// The per-pass budget that puts every window of the longest G1 run in
    /// one pass (and at least one of G2's).
    fn full_pass(&self, shape: &PartitionShape) -> usize {
        full_pass_budget(self.runs(shape).0, G1_XYZZ, MSM_THREADS).max(self.min_pass(shape))
    }

    /// The arena for `pass` bytes per pass: two slots (always there, sized
    /// in bytes: whatever the plan keeps resident, the device's parameter
    /// cache may hold another set when a partition comes, or residency is
    /// off, and then its bases stream), the split of the longest run, the
    /// pass, the bucket totals of an MSM of several runs (G2's, the
    /// larger), the masks and slack.
    fn arena(&self, shape: &PartitionShape, pass: usize) -> usize {
        let (g1, g2) = self.runs(shape);
        let longest = shape.bases.iter().copied().max().unwrap_or(0);
        let totals = totals_bytes(G2_XYZZ, longest.div_ceil(g1.min(g2).max(1)));
        2 * self.slot + split_bytes(g1) + pass + totals + shape.mask_bytes() + MSM_SLACK
    }
}

/// Plans `budget` bytes of one device for `workers` workers proving
/// partitions of `shape` (see the module's documentation for the order).
/// Fewer workers when not all fit; [`TooSmall`] when not even one does.
///
/// When the shape's matrices are known but do not fit resident, a, b, c
/// are still computed on the device, from matrices streamed in chunks
/// (`DevicePlan::abc_streamed`), if one worker's MSM arena can hold z and
/// two chunk slots ([`PartitionShape::streamed_abc_bytes`]), with as many
/// workers as then fit, even if that is fewer than with a, b, c from the
/// host: host a, b, c cost a 32 GiB partition ~2.5 s of host work on the
/// worker's critical path, 12.5 GB of host memory and ~1.8 s of staged
/// PCIe, measured at a 16 GiB cap (BENCHMARKS.md, session 12), against
/// 7.3 GB of page-locked matrix chunks (~0.15 s at 55 GB/s).
pub fn plan_device(budget: usize, workers: usize, shape: &PartitionShape) -> Result<DevicePlan, TooSmall> {
    let host = plan_with(budget, workers, shape, 0)?;
    let floor = shape.streamed_abc_bytes();
    if host.matrices_bytes > 0 || floor == 0 {
        return Ok(host);
    }
    for w in (1..=host.workers).rev() {
        match plan_with(budget, w, shape, floor) {
            Ok(p) if p.workers == w => return Ok(p),
            _ => continue,
        }
    }
    Ok(host)
}

/// The device memory that `workers` workers proving partitions of `shape`
/// take at their fastest plan (a budget with room for everything), plus
/// every set of `sets` resident (its parameter vectors and constraint
/// matrices), plus a 10 % margin (at least 1 GiB) for the arena's alignment
/// and the set cache's fragmentation: what a device pool reserves by
/// default instead of all free memory, so a GPU shared with other work
/// (PoSt) keeps the rest. Two workers: 11.7 GiB for 2 KiB + 8 MiB (the
/// workers' fastest arenas for 2^22 partitions are most of it), 129.9 GiB
/// for 32 GiB (every vector and the matrices resident).
pub fn sized_budget(workers: usize, shape: &PartitionShape, sets: &[PartitionShape]) -> usize {
    // A budget no shape exhausts: 2^50 bytes (1 PiB).
    let roomy = match plan_with(1 << 50, workers, shape, 0) {
        Ok(p) => p,
        Err(e) => return e.minimum,
    };
    let arenas = roomy.workers * roomy.per_worker();
    let resident: usize = sets.iter().map(|s| s.parameter_bytes().iter().sum::<usize>() + s.matrices_bytes()).sum();
    let need = roomy.tables_bytes + arenas + resident;
    need + (need / 10).max(1 << 30)
}

/// Device bytes of one worker planned for `shape` with all it can use (its
/// vectors, the matrices' witness and MSM arenas, not the shared part): what
/// the GPU backend's urgent lane takes from each device's budget.
pub fn lane_bytes(shape: &PartitionShape) -> usize {
    plan_device(1 << 50, 1, shape).map_or(0, |p| p.per_worker())
}

/// Whether a device keeps its urgent lane, given the ordinary workers' plan
/// with the lane's bytes taken (`with_lane`) and without (`alone`): unless
/// the lane moves their a, b, c from the device (resident or streamed
/// matrices) to the host. At a 16 GiB cap a 32 GiB partition with host a,
/// b, c measured 6.1 s against 2.6 s from streamed matrices (H100,
/// 2026-12-07), while an urgent proof without a lane waits at most one
/// partition of an ordinary worker.
pub fn keeps_urgent_lane(with_lane: &DevicePlan, alone: &DevicePlan) -> bool {
    with_lane.abc_on_device() || !alone.abc_on_device()
}

/// [`plan_device`] with a, b, c never from streamed matrices: resident when
/// the plan has room for the matrices, else computed on the host (for a
/// host short of the 7.4 GB the page-locked chunks of a 32 GiB shape take;
/// `GpuBackendConfig::stream_matrices`).
pub fn plan_device_host_abc(budget: usize, workers: usize, shape: &PartitionShape) -> Result<DevicePlan, TooSmall> {
    plan_with(budget, workers, shape, 0)
}

/// The plan for `workers` workers whose MSM arenas are at least `floor`
/// bytes (0: a, b, c resident or from the host; else streamed, z and the
/// slots in the MSM arena).
fn plan_with(budget: usize, workers: usize, shape: &PartitionShape, floor: usize) -> Result<DevicePlan, TooSmall> {
    let tables = c2_ntt::table_bytes(shape.log_domain) + SHARED_SLACK;
    let vectors = shape.vectors_bytes();
    let arena = |t: &MsmTier, pass: usize| t.arena(shape, pass).max(floor);
    let small = MsmTier::new(shape, Some(MIN_RUN), SLOT_BYTES);
    let minimum = tables + vectors + arena(&small, small.min_pass(shape));
    let workers = workers.max(1).min(budget.saturating_sub(tables) / (minimum - tables));
    if workers == 0 {
        return Err(TooSmall { budget, minimum, log_domain: shape.log_domain });
    }
    // Per worker, for its MSM arena: what the budget leaves beside
    // `resident` bytes of parameters.
    let room = |resident: usize| (budget - tables - resident) / workers - vectors;
    let fits = |t: &MsmTier, pass: usize, resident: usize| arena(t, pass) <= room(resident);

    // 1. MSM scratch: runs of 2^24 with every window in one pass, else
    //    2^23 likewise, else 2^23 with as many windows per pass as fit.
    let mid = MsmTier::new(shape, Some(MID_RUN), SLOT_BYTES);
    let (tier, pass) = if fits(&mid, mid.full_pass(shape), 0) {
        (mid, mid.full_pass(shape))
    } else if fits(&small, small.full_pass(shape), 0) {
        (small, small.full_pass(shape))
    } else {
        let base = small.arena(shape, 0);
        (small, (room(0) - base).min(small.full_pass(shape)).max(small.min_pass(shape)))
    };
    // 2. Under a streamed plan, the matrices' repeated form where the rows
    //    repeat (0.41 GB at 32 GiB saves 7.34 GB of chunks per partition),
    //    then resident parameters: the most bytes that fit beside those
    //    arenas.
    let room_left = budget - tables - workers * (vectors + arena(&tier, pass));
    let repeated = Some(shape.repeated_matrices_bytes()).filter(|&r| floor > 0 && r <= room_left).unwrap_or(0);
    let params = shape.parameter_bytes();
    let keep = c2_vram::plan_residency(&params, room_left - repeated);
    let resident = [keep[0], keep[1], keep[2], keep[3], keep[4]];
    let resident_bytes: usize = params.iter().zip(&resident).filter(|(_, &r)| r).map(|(b, _)| b).sum();
    // 3. Whole-query runs and wide slots with what is still left.
    let wide = MsmTier::new(shape, None, WIDE_SLOT_BYTES);
    let (tier, pass) = if fits(&wide, wide.full_pass(shape), resident_bytes + repeated) {
        (wide, wide.full_pass(shape))
    } else {
        (tier, pass)
    };
    // An arena grown to the floor gives its surplus to the window passes.
    let pass = if floor > tier.arena(shape, pass) {
        (pass + floor - tier.arena(shape, pass)).min(tier.full_pass(shape)).max(pass)
    } else {
        pass
    };
    // 4. a, b, c on the device: once every parameter vector is resident
    //    (streaming bases costs more than a, b, c from the host), each
    //    worker's witness vector and the shape's matrices (7.3 GB at
    //    32 GiB), if they fit what the wide tier left. Saves 12.5 GB of
    //    host memory and PCIe per 32 GiB partition. (With a floor, a, b,
    //    c come from streamed matrices instead.)
    let (witness, matrices) = (shape.witness_bytes(), shape.matrices_bytes());
    let used = tables + resident_bytes + workers * (vectors + arena(&tier, pass));
    let on_device =
        floor == 0 && matrices > 0 && resident == [true; 5] && used + workers * witness + matrices <= budget;
    let (witness, matrices) = if on_device { (witness, matrices) } else { (0, 0) };
    let max_batch = if resident == [true; 5] {
        1
    } else {
        (vectors / shape.batch_member_bytes(tier.slot).max(1)).clamp(1, MAX_BATCH)
    };
    let p = DevicePlan {
        budget,
        workers,
        vectors_bytes: vectors + witness,
        witness_bytes: witness,
        matrices_bytes: matrices,
        abc_streamed: floor > 0,
        repeated_bytes: repeated,
        msm_bytes: arena(&tier, pass),
        pass_budget: pass,
        // Kept even when nothing is planned resident: the device's cache
        // may still hold a vector when a partition comes (another set's
        // eviction), and a whole-query run would outgrow the arena.
        max_run: tier.run,
        slot_bytes: tier.slot,
        tables_bytes: tables,
        resident,
        spare_bytes: 0,
        max_batch,
    };
    Ok(with_spare(p, shape))
}

/// `p` with its spare bytes filled in.
fn with_spare(mut p: DevicePlan, shape: &PartitionShape) -> DevicePlan {
    let used =
        p.tables_bytes + p.resident_bytes(shape) + p.matrices_bytes + p.repeated_bytes + p.workers * p.per_worker();
    p.spare_bytes = p.budget.saturating_sub(used);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;

    fn shapes() -> Vec<(u64, PartitionShape)> {
        PartitionShape::SECTOR_SIZES.iter().map(|&s| (s, PartitionShape::for_sector_size(s).unwrap())).collect()
    }

    /// The urgent lane's shape covers WinningPoSt's circuit at 32 and 64
    /// GiB, recorded here from storage-proofs-post's circuit on valid test
    /// sectors (no sealing; ~1 s each), and a roomy plan for it puts a, b,
    /// c on the device, every MSM window in one pass, in under 2 GiB (its
    /// arenas: 1.5 GB).
    #[test]
    fn the_winning_post_shape_covers_the_recorded_circuits() {
        use filecoin_proofs_api::RegisteredPoStProof as P;
        let recorded: Vec<PartitionShape> = [P::StackedDrgWinning32GiBV1, P::StackedDrgWinning64GiBV1]
            .into_iter()
            .map(|p| {
                let test = c2_synth::post_test_partition(p).unwrap();
                let m = test.instance().unwrap().record_matrices().unwrap();
                let shape = PartitionShape::of_matrices(&m);
                eprintln!("{p:?}: {shape:?}");
                shape
            })
            .collect();
        assert_eq!(PartitionShape::winning_post(), recorded[0].covering(&recorded[1]));
        let plan = plan_device(1 << 50, 1, &PartitionShape::winning_post()).unwrap();
        assert!(plan.witness_bytes > 0 && plan.matrices_bytes > 0, "{plan:?}");
        assert!(plan.per_worker() < 2 * GIB, "{}", plan.describe(&PartitionShape::winning_post()));
    }

    /// The sized budget gives the planner what it would take with all the
    /// memory in the world: the same workers and arenas, every parameter
    /// vector and the matrices resident; small sizes take ~12 GiB.
    #[test]
    fn a_sized_budget_plans_like_an_unbounded_one() {
        for (size, shape) in shapes() {
            for workers in [1usize, 2] {
                let budget = sized_budget(workers, &shape, &[shape]);
                let sized = plan_device(budget, workers, &shape).unwrap();
                let roomy = plan_device(1 << 50, workers, &shape).unwrap();
                let what = format!(
                    "{size} B sector, {workers} worker(s), {:.1} GB: {}",
                    budget as f64 / 1e9,
                    sized.describe(&shape)
                );
                assert_eq!(sized.workers, workers, "{what}");
                assert_eq!((sized.vectors_bytes, sized.msm_bytes), (roomy.vectors_bytes, roomy.msm_bytes), "{what}");
                assert_eq!(sized.resident, [true; 5], "{what}");
                assert_eq!(sized.matrices_bytes, shape.matrices_bytes(), "{what}");
                assert!(sized.spare_bytes >= GIB, "{what}: the margin");
            }
        }
        let (small, medium) = (shapes()[0].1, shapes()[1].1);
        let both = sized_budget(2, &medium, &[small, medium]);
        assert!(both < 12 * GIB, "2 KiB + 8 MiB: {both}");
        let big = shapes()[3].1;
        assert!(sized_budget(2, &big, &[big]) < 139 * GIB, "32 GiB fits an H200");
    }

    /// Every plan, at every budget and registered size, fits its budget,
    /// gives each worker arenas that hold what a partition allocates, and
    /// chooses MSM settings the MSM's own planner accepts.
    #[test]
    fn plans_fit_their_budget_at_12_16_24_40_80_gib_for_every_sector_size() {
        for (size, shape) in shapes() {
            for gib in [12usize, 16, 24, 40, 80, 127] {
                for workers in [1usize, 2] {
                    let budget = gib * GIB;
                    let Ok(p) = plan_device(budget, workers, &shape) else {
                        continue; // checked by the next test
                    };
                    let what = format!("{size} B sector, {gib} GiB, {workers} worker(s): {}", p.describe(&shape));
                    let used = p.tables_bytes
                        + p.resident_bytes(&shape)
                        + p.matrices_bytes
                        + p.repeated_bytes
                        + p.workers * p.per_worker();
                    assert!(used <= budget, "{what}: uses {used}");
                    assert_eq!(used + p.spare_bytes, budget, "{what}");
                    assert!((1..=workers).contains(&p.workers), "{what}");
                    assert!(p.vectors_bytes >= 2 * shape.domain() * SCALAR, "{what}");
                    // One window of the longest run (resident: max_run or
                    // whole; streamed: one chunk) fits the pass budget, in
                    // both groups.
                    let longest = *shape.bases.iter().max().unwrap();
                    let g1 = p.max_run.unwrap_or(longest).max(p.slot_bytes / G1_POINT).min(longest);
                    let g2 = p.max_run.unwrap_or(longest).max(p.slot_bytes / G2_POINT).min(shape.bases[4]);
                    assert!(p.pass_budget >= min_pass_budget(g1, G1_XYZZ, MSM_THREADS), "{what}");
                    assert!(p.pass_budget >= min_pass_budget(g2, G2_XYZZ, MSM_THREADS), "{what}");
                    // Streaming slots are always planned (another set may hold the room).
                    assert!(p.msm_bytes >= p.pass_budget + split_bytes(g1) + 2 * p.slot_bytes, "{what}");
                    // Streamed a, b, c: z and the chunk slots fit the MSM arena;
                    // never both streamed and resident matrices.
                    if p.abc_streamed {
                        assert!(p.msm_bytes >= shape.streamed_abc_bytes() && p.matrices_bytes == 0, "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn small_sectors_fit_12_gib_twice_and_2_27_partitions_need_more() {
        for (size, shape) in shapes() {
            let p = plan_device(12 * GIB, 2, &shape);
            if shape.log_domain <= 23 {
                // 2 KiB .. 512 MiB: two workers, everything resident, one
                // run per MSM.
                let p = p.unwrap();
                assert_eq!((p.workers, p.resident), (2, [true; 5]), "{size}: {}", p.describe(&shape));
                let longest = *shape.bases.iter().max().unwrap();
                assert!(p.max_run.is_none_or(|r| r >= longest), "{size}: {}", p.describe(&shape));
            } else {
                // 32 / 64 GiB: tables 2.4 GB + vectors 8.6 GB + MSM scratch
                // ~2.3 GB (two 0.8 GB slots) > 12.9 GB.
                let e = p.unwrap_err();
                assert!(e.minimum > 12 * GIB && e.minimum < 13 * GIB, "{size}: {e}");
                assert!(e.to_string().contains("at least"), "{e}");
                let p = plan_device(e.minimum, 2, &shape).unwrap();
                assert_eq!((p.workers, p.resident, p.slot_bytes), (1, [false; 5], SLOT_BYTES), "{size}");
            }
        }
    }

    /// The 32 GiB shape on the H200's budgets: what each cap buys.
    #[test]
    fn budgets_for_32_gib_partitions_spend_memory_on_scratch_then_residency() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        let params: usize = shape.parameter_bytes().iter().sum();
        assert!((47_000_000_000..48_000_000_000).contains(&params), "{params}");
        let streamed = shape.streamed_abc_bytes();
        assert!((5_000_000_000..5_300_000_000).contains(&streamed), "{streamed}");
        // 16 GiB: one worker, a, b, c from streamed matrices (z and the
        // slots in its MSM arena), runs of 2^24, every window in one pass.
        let p = plan_device(16 * GIB, 2, &shape).unwrap();
        assert_eq!((p.workers, p.max_run, p.abc_streamed), (1, Some(MID_RUN), true), "{}", p.describe(&shape));
        assert!(p.msm_bytes >= streamed, "{}", p.describe(&shape));
        // PCIe per partition: the matrices and the witness instead of a,
        // b, c and the witness (16.7 GB) on top of the streamed bases.
        let host_abc = shape.pcie_bytes(&p.resident);
        assert!(p.pcie_bytes(&shape) + 5_000_000_000 < host_abc, "{} vs {host_abc}", p.pcie_bytes(&shape));
        // 24 GiB: one worker computing a, b, c on the device rather than
        // two computing them on the host, from the matrices' repeated form
        // (0.41 GB), with b_g2 (6.3 GB) resident.
        let p = plan_device(24 * GIB, 2, &shape).unwrap();
        assert_eq!((p.workers, p.abc_streamed), (1, true), "{}", p.describe(&shape));
        assert_eq!(p.max_run, Some(MID_RUN), "{}", p.describe(&shape));
        assert!(p.resident_bytes(&shape) > 6_000_000_000 && p.repeated_bytes > 0, "{}", p.describe(&shape));
        // Host a, b, c where z and the slots do not fit: the minimum.
        let min = plan_device(16 * GIB, 1, &shape).unwrap();
        let tight = min.tables_bytes + shape.vectors_bytes() + streamed - 1;
        let p = plan_device(tight, 1, &shape).unwrap();
        assert!(!p.abc_streamed && p.matrices_bytes == 0, "{}", p.describe(&shape));
        // 40 GiB, one worker: more than 20 GB resident, less over PCIe.
        let p = plan_device(40 * GIB, 1, &shape).unwrap();
        assert!(p.resident_bytes(&shape) > 20_000_000_000, "{}", p.describe(&shape));
        assert!(shape.pcie_bytes(&p.resident) < shape.pcie_bytes(&[false; 5]));
        // 80 GiB: everything resident for one worker; 127 GiB (an H200's
        // free memory less the pool's margin): everything resident for two,
        // one run per MSM, every window in one pass.
        let p = plan_device(80 * GIB, 1, &shape).unwrap();
        assert_eq!(p.resident, [true; 5], "{}", p.describe(&shape));
        let p = plan_device(127 * GIB, 2, &shape).unwrap();
        assert_eq!((p.workers, p.resident, p.max_run), (2, [true; 5], None), "{}", p.describe(&shape));
        let h = shape.bases[0];
        assert!(p.pass_budget >= full_pass_budget(h, G1_XYZZ, MSM_THREADS), "{}", p.describe(&shape));
        // ... and a, b, c on the device: each worker's witness vector and
        // 7.3 GB of matrices; only the witness crosses PCIe.
        assert!(p.matrices_bytes > 7_000_000_000 && p.witness_bytes >= shape.aux * SCALAR, "{}", p.describe(&shape));
        assert!(!p.abc_streamed && p.pcie_bytes(&shape) < 4_300_000_000, "{}", p.describe(&shape));
        // Parameters partly streamed: matrices streamed too, not resident.
        let p = plan_device(40 * GIB, 1, &shape).unwrap();
        assert_eq!((p.matrices_bytes, p.witness_bytes, p.abc_streamed), (0, 0, true), "{}", p.describe(&shape));
        // Every resident byte is one less over PCIe.
        let streamed_all = shape.pcie_bytes(&[false; 5]);
        assert_eq!(streamed_all - shape.pcie_bytes(&[true; 5]), params);
    }

    /// Issue 42: where parameters stream, a worker's MSM passes serve
    /// several partitions, as many as its vectors arena holds (the 32 GiB
    /// shape's members ~0.95 GB each against 8.6 GB); where everything is
    /// resident, one. Every plan's batch fits its vectors arena, and the
    /// PCIe a partition moves falls with the batch (the streamed
    /// parameters shared, H's scalars back from the host).
    #[test]
    fn batched_passes_take_as_many_partitions_as_the_vectors_arena_holds() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        let member = shape.batch_member_bytes(SLOT_BYTES);
        assert!((900_000_000..1_000_000_000).contains(&member), "{member}");
        for gib in [16usize, 24] {
            let p = plan_device(gib * GIB, 1, &shape).unwrap();
            let what = p.describe(&shape);
            assert_eq!(
                p.max_batch,
                (p.vectors_bytes / shape.batch_member_bytes(p.slot_bytes)).min(MAX_BATCH),
                "{what}"
            );
            assert!(p.max_batch >= 8, "{what}");
            assert!(what.contains("batched MSM passes of up to"), "{what}");
            // 47.4 GB of parameters per partition unbatched (16 GiB);
            // at the batch, at most a fifth of it plus H's 4.3 GB back.
            let (one, batched) = (p.batched_pcie_bytes(&shape, 1), p.batched_pcie_bytes(&shape, p.max_batch));
            assert_eq!(one, p.pcie_bytes(&shape), "{what}");
            let streamed: usize =
                shape.parameter_bytes().iter().zip(&p.resident).filter(|(_, &r)| !r).map(|(b, _)| b).sum();
            assert_eq!(one - batched, streamed - streamed / p.max_batch - shape.bases[0] * SCALAR, "{what}");
            assert!(batched < one && p.batched_pcie_bytes(&shape, 2) < one, "{what}");
        }
        // Everything resident: nothing to share.
        let p = plan_device(80 * GIB, 1, &shape).unwrap();
        assert_eq!((p.resident, p.max_batch), ([true; 5], 1), "{}", p.describe(&shape));
        assert!(!p.describe(&shape).contains("batched"));
        // At every budget and size, a batch fits the arena it runs in.
        for (size, shape) in shapes() {
            for gib in [12usize, 16, 24, 40, 80] {
                let Ok(p) = plan_device(gib * GIB, 1, &shape) else { continue };
                assert!((1..=MAX_BATCH).contains(&p.max_batch), "{size} at {gib} GiB");
                if p.max_batch > 1 {
                    let need = p.max_batch * shape.batch_member_bytes(p.slot_bytes);
                    assert!(need <= p.vectors_bytes, "{size} at {gib} GiB: {}", p.describe(&shape));
                }
            }
        }
    }

    /// Under a streamed plan the matrices' repeated form comes before any
    /// resident parameter vector: at 24 GiB with one 32 GiB worker the
    /// parameters alone would take b_g1 and b_g2 (9.5 GB) and leave no
    /// room for it (H100, 2026-12-07: 7.34 GB of matrix chunks per
    /// partition, 19.4 GB in all, against 13.9 GB at 16 GiB). Shapes whose
    /// repeat was not measured plan as before.
    #[test]
    fn the_repeated_form_comes_before_a_resident_parameter_vector() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        let repeated = shape.repeated_matrices_bytes();
        assert!((400_000_000..420_000_000).contains(&repeated), "{repeated}: 0.408 GB measured");
        let unmeasured = PartitionShape { repeat_blocks: 1, ..shape };
        assert_eq!(unmeasured.repeated_matrices_bytes(), 0);
        for gib in [16usize, 24, 40] {
            let p = plan_device(gib * GIB, 1, &shape).unwrap();
            let before = plan_device(gib * GIB, 1, &unmeasured).unwrap();
            let what = format!("{gib} GiB: {} / before: {}", p.describe(&shape), before.describe(&unmeasured));
            assert!(p.abc_streamed && before.abc_streamed, "{what}");
            assert_eq!(p.repeated_bytes, repeated, "{what}");
            assert!(what.contains("repeated form"), "{what}");
            // The form and the resident vectors fit where the vectors alone did.
            assert!(p.resident_bytes(&shape) + repeated <= before.resident_bytes(&unmeasured) + repeated, "{what}");
            assert_eq!(
                p.spare_bytes + p.resident_bytes(&shape) + repeated,
                before.spare_bytes + before.resident_bytes(&unmeasured),
                "{what}"
            );
            // No matrix chunk crosses PCIe: the plan's bytes per partition
            // fall by the chunks less what the form cost in residency.
            let lost = before.resident_bytes(&unmeasured) - p.resident_bytes(&shape);
            assert_eq!(p.pcie_bytes(&shape) + shape.matrices_bytes(), before.pcie_bytes(&unmeasured) + lost, "{what}");
            assert!(p.pcie_bytes(&shape) < before.pcie_bytes(&unmeasured), "{what}");
        }
        // 24 GiB: b_g2 resident, not b_g1 beside it.
        let p = plan_device(24 * GIB, 1, &shape).unwrap();
        assert_eq!(p.resident, [false, false, false, false, true], "{}", p.describe(&shape));
        // Resident matrices (every vector fits): no repeated form planned.
        let p = plan_device(127 * GIB, 2, &shape).unwrap();
        assert_eq!((p.repeated_bytes, p.abc_streamed), (0, false), "{}", p.describe(&shape));
    }

    /// The page-locked host memory for members' H bounds the batch too:
    /// 32 GiB per device is 8 members of a 32 GiB partition (4 GiB each)
    /// with one worker, 4 each with two; less than one member's worth
    /// means one partition at a time; never above the device's bound.
    #[test]
    fn page_locked_host_memory_bounds_the_batch() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        assert_eq!(shape.batch_member_host_bytes(), ((1 << 27) - 1) * SCALAR);
        for (gib, workers) in [(16usize, 1usize), (24, 1), (48, 2)] {
            let p = plan_device(gib * GIB, workers, &shape).unwrap();
            let what = p.describe(&shape);
            assert_eq!(p.workers, workers, "{what}");
            assert!(p.max_batch > 8 / workers, "{what}");
            assert_eq!(p.batch_within(&shape, 32 * GIB), 8 / workers, "{gib} GiB, {workers} worker(s): {what}");
            assert_eq!(p.batch_within(&shape, 4 * GIB - 1), 1, "{what}");
            assert_eq!(p.batch_within(&shape, 0), 1, "{what}");
            assert_eq!(p.batch_within(&shape, usize::MAX / 2), p.max_batch, "{what}");
        }
        // Resident parameters: 1, whatever the host holds.
        let p = plan_device(80 * GIB, 1, &shape).unwrap();
        assert_eq!(p.batch_within(&shape, 1 << 40), 1);
    }

    /// The urgent lane's bytes (WinningPoSt's roomy plan) come off the
    /// ordinary workers' budget unless they would push a, b, c to the
    /// host: at 16 GiB they would (the lane is dropped), at 24 and 80 GiB
    /// not.
    #[test]
    fn the_urgent_lane_never_costs_the_workers_their_device_abc() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        let lane = lane_bytes(&PartitionShape::winning_post());
        assert!((500_000_000..3_000_000_000).contains(&lane), "{lane}");
        for (gib, keeps) in [(16usize, false), (24, true), (80, true)] {
            let with_lane = plan_device(gib * GIB - lane, 2, &shape).unwrap();
            let alone = plan_device(gib * GIB, 2, &shape).unwrap();
            assert!(alone.abc_on_device(), "{gib} GiB: {}", alone.describe(&shape));
            assert_eq!(keeps_urgent_lane(&with_lane, &alone), keeps, "{gib} GiB: {}", with_lane.describe(&shape));
        }
        // Host a, b, c either way: the lane costs nothing it could keep.
        let host = plan_device_host_abc(16 * GIB, 1, &shape).unwrap();
        assert!(!host.abc_on_device() && keeps_urgent_lane(&host, &host));
    }

    #[test]
    fn shapes_of_parameters_match_the_registered_table() {
        // The 2 KiB shape as check_parameters sees it: H = domain - 1.
        let s = PartitionShape::for_sector_size(2048).unwrap();
        assert_eq!((s.domain(), s.bases[0]), (1 << 22, (1 << 22) - 1));
        assert!(PartitionShape::for_sector_size(4096).is_none());
        // More witness than domain (not PoRep's case): the vectors arena
        // holds the domain and the longer witness.
        let wide = PartitionShape {
            log_domain: 10,
            aux: 5000,
            inputs: 3,
            bases: [1023, 5000, 5000, 10, 10],
            matrix_entries: 0,
            repeat_blocks: 1,
        };
        assert!(wide.vectors_bytes() >= (1024 + 5000) * SCALAR);
    }
}
