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
//! [`plan_device`] first fits the minimum per worker (runs and streamed
//! chunks of 2^22 bases, one window per pass) for as many of the requested
//! workers as the budget holds, then spends what is left on, in order:
//! resident parameter vectors (most bytes first: each is PCIe traffic saved
//! on every partition), then longer MSM runs and more windows per pass.

use c2_msm::plan::{full_pass_budget, min_pass_budget, split_bytes};

/// Bytes of one scalar (Fr) and of one affine G1 / G2 point on the device.
const SCALAR: usize = 32;
const G1_POINT: usize = 96;
const G2_POINT: usize = 192;
/// XYZZ points (the MSM's bucket sums): G1 and G2.
const G1_XYZZ: usize = 192;
const G2_XYZZ: usize = 384;
/// The MSM's bucket kernels' target thread count (`GpuMsmConfig` default).
const MSM_THREADS: usize = 1 << 17;
/// Bases per run and per streamed chunk in the smallest plan: 2^22 (1.6 GB
/// of G2 slots) keeps per-run overheads (one split of all scalars, window
/// reductions, two host waits) below ~3 % of a 2^27 H MSM's runs.
const MIN_RUN: usize = 1 << 22;
/// Longest streamed chunk (the MSM's default, 2^24 bases).
const MAX_CHUNK: usize = 1 << 24;
/// Room for the tables of other domain sizes (2^22: 64 MB) and small
/// uploads on the shared part of a device (the parameter cache leaves it
/// free).
pub const SHARED_SLACK: usize = 256 << 20;
/// Slack of each MSM arena: buffers that grow inside one MSM (prefix-sum
/// temporaries, partial sums) leave holes; measured scratch stays below it.
const MSM_SLACK: usize = 96 << 20;

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
        let s = |log_domain, aux: usize, inputs: usize, a: usize, b: usize| Self {
            log_domain,
            aux,
            inputs,
            bases: [(1 << log_domain) - 1, aux, a, b, b],
        };
        let permille = |x: usize, p: usize| x * p / 1000;
        Some(match bytes {
            2048 => s(22, 2_685_673, 40, 2_674_948, 685_522),
            0x80_0000 => s(22, 3_842_449, 40, 3_815_036, 1_011_290),
            0x2000_0000 => s(23, 4_420_837, 40, 40 + permille(4_420_837, 992), permille(4_420_837, 266)),
            0x8_0000_0000 => s(27, 130_169_893, 328, 328 + permille(130_169_893, 997), permille(130_169_893, 254)),
            0x10_0000_0000 => {
                let aux = (1 << 27) - 328;
                s(27, aux, 328, 328 + aux, permille(aux, 300))
            }
            _ => return None,
        })
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
    /// Bases per streamed chunk (`GpuMsmConfig::stream_chunk`).
    pub stream_chunk: usize,
    /// The NTT tables of the shape's domain plus room for smaller ones.
    pub tables_bytes: usize,
    /// Which parameter vectors (h, l, a, b_g1, b_g2) the plan keeps resident.
    pub resident: [bool; 5],
    /// What the shared part has left after the tables and those vectors
    /// (other parameter sets may use it).
    pub spare_bytes: usize,
}

impl DevicePlan {
    /// Bytes every worker's arenas take.
    pub fn per_worker(&self) -> usize {
        self.vectors_bytes + self.msm_bytes
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
            "{:.1} GB for 2^{} partitions: {} worker(s) x ({:.1} GB vectors + {:.1} GB MSM scratch), tables {:.1} GB, parameters resident: {} ({:.1} GB), runs of {}, chunks of {} bases; {:.1} GB host-to-device per partition",
            gb(self.budget),
            shape.log_domain,
            self.workers,
            gb(self.vectors_bytes),
            gb(self.msm_bytes),
            gb(self.tables_bytes),
            if resident.is_empty() { "none".to_string() } else { resident.join(", ") },
            gb(self.resident_bytes(shape)),
            self.max_run.map_or("all".to_string(), |r| r.to_string()),
            self.stream_chunk,
            gb(shape.pcie_bytes(&self.resident)),
        )
    }
}

/// A device budget that cannot hold one worker's minimal working set.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{budget} bytes of device memory cannot prove 2^{log_domain} partitions: one worker needs at least {minimum} bytes ({:.1} GiB; NTT tables, two domain vectors, MSM scratch for runs of 2^22 bases)",
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

/// The MSM arena of one worker: two slots of streamed bases, the split of
/// the longest run, the pass budget, the masks and slack. The slots are
/// always there, sized for G2 points: whatever the plan keeps resident, the
/// device's parameter cache may hold another set when a partition comes
/// (or residency is off), and then its bases stream.
fn msm_arena(shape: &PartitionShape, run: usize, chunk: usize, pass: usize) -> usize {
    let longest = shape.bases.iter().copied().max().unwrap_or(0);
    let slots = 2 * chunk.min(longest) * G2_POINT;
    slots + split_bytes(run.max(chunk).min(longest.max(1))) + pass + shape.mask_bytes() + MSM_SLACK
}

/// The per-pass budget that one window of a run of `run` bases needs, in
/// both groups (G2 runs are no longer than B_G2: from 2^24 full-width
/// scalars on its batched-affine chains take ~1 KB per segment).
fn min_pass(shape: &PartitionShape, run: usize) -> usize {
    let g2_run = run.min(shape.bases[4].max(1));
    min_pass_budget(run, G1_XYZZ, MSM_THREADS).max(min_pass_budget(g2_run, G2_XYZZ, MSM_THREADS))
}

/// Plans `budget` bytes of one device for `workers` workers proving
/// partitions of `shape` (see the module's documentation for the order).
/// Fewer workers when not all fit; [`TooSmall`] when not even one does.
pub fn plan_device(budget: usize, workers: usize, shape: &PartitionShape) -> Result<DevicePlan, TooSmall> {
    let tables = c2_ntt::table_bytes(shape.log_domain) + SHARED_SLACK;
    let vectors = shape.vectors_bytes();
    let longest = shape.bases.iter().copied().max().unwrap_or(0).max(1);
    let min_run = MIN_RUN.min(longest);
    let min_msm = msm_arena(shape, min_run, min_run, min_pass(shape, min_run));
    let minimum = tables + vectors + min_msm;
    let fit = |per_worker: usize| budget.saturating_sub(tables) / per_worker.max(1);
    let workers = workers.max(1).min(fit(vectors + min_msm));
    if workers == 0 {
        return Err(TooSmall { budget, minimum, log_domain: shape.log_domain });
    }

    // Resident parameters: the most bytes that fit beside minimal arenas.
    let params = shape.parameter_bytes();
    let keep = c2_vram::plan_residency(&params, budget - tables - workers * (vectors + min_msm));
    let resident = [keep[0], keep[1], keep[2], keep[3], keep[4]];
    let resident_bytes: usize = params.iter().zip(&resident).filter(|(_, &r)| r).map(|(b, _)| b).sum();
    let left = budget - tables - resident_bytes;
    let per_worker = left / workers;

    // MSM scratch from what is left per worker: the fastest tier that fits.
    // Full: one run per MSM, every window in one pass, streamed chunks of
    // 2^24 (or 2^22) bases. Chunked: runs and chunks of 2^24, all windows
    // per pass. Else runs of 2^22 with as many windows per pass as the
    // rest holds.
    let longest_resident = (0..5).filter(|&i| resident[i]).map(|i| shape.bases[i]).max().unwrap_or(0);
    let chunk = MAX_CHUNK.min(longest);
    let tiers = [
        (None, longest_resident.max(chunk), chunk),
        (None, longest_resident.max(min_run), min_run),
        (Some(chunk), chunk, chunk),
    ];
    let plan = |msm_bytes, pass_budget, max_run: Option<usize>, stream_chunk| {
        let p = DevicePlan {
            budget,
            workers,
            vectors_bytes: vectors,
            msm_bytes,
            pass_budget,
            // A run limit at or above the longest resident query is no limit.
            max_run: max_run.filter(|&r| r < longest_resident),
            stream_chunk,
            tables_bytes: tables,
            resident,
            spare_bytes: 0,
        };
        with_spare(p, shape)
    };
    for (max_run, run, chunk) in tiers {
        let pass = full_pass_budget(run, G1_XYZZ, MSM_THREADS).max(min_pass(shape, run));
        let msm = msm_arena(shape, run, chunk, pass);
        if vectors + msm <= per_worker {
            return Ok(plan(msm, pass, max_run, chunk));
        }
    }
    let base = msm_arena(shape, min_run, min_run, 0);
    let pass = (per_worker - vectors - base)
        .min(full_pass_budget(min_run, G1_XYZZ, MSM_THREADS))
        .max(min_pass(shape, min_run));
    Ok(plan(base + pass, pass, Some(min_run), min_run))
}

/// `p` with its spare bytes filled in.
fn with_spare(mut p: DevicePlan, shape: &PartitionShape) -> DevicePlan {
    let used = p.tables_bytes + p.resident_bytes(shape) + p.workers * p.per_worker();
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
                    let used = p.tables_bytes + p.resident_bytes(&shape) + p.workers * p.per_worker();
                    assert!(used <= budget, "{what}: uses {used}");
                    assert_eq!(used + p.spare_bytes, budget, "{what}");
                    assert!((1..=workers).contains(&p.workers), "{what}");
                    assert!(p.vectors_bytes >= 2 * shape.domain() * SCALAR, "{what}");
                    // One window of the longest run fits the pass budget.
                    // Runs over resident bases: max_run or whole; over
                    // streamed ones: one chunk.
                    let longest = |resident: bool| {
                        (0..5).filter(|&i| p.resident[i] == resident).map(|i| shape.bases[i]).max().unwrap_or(0)
                    };
                    let run =
                        p.max_run.unwrap_or(usize::MAX).min(longest(true)).max(p.stream_chunk.min(longest(false)));
                    assert!(p.pass_budget >= min_pass(&shape, run), "{what}");
                    // Streaming slots are always planned (another set may hold the room).
                    let slots = 2 * p.stream_chunk.min(longest(true).max(longest(false))) * G2_POINT;
                    assert!(p.msm_bytes >= p.pass_budget + split_bytes(p.stream_chunk.min(run)) + slots, "{what}");
                }
            }
        }
    }

    #[test]
    fn small_sectors_fit_12_gib_twice_and_2_27_partitions_need_12_2_gib() {
        for (size, shape) in shapes() {
            let p = plan_device(12 * GIB, 2, &shape);
            if shape.log_domain <= 23 {
                // 2 KiB .. 512 MiB: two workers, everything resident, one run per MSM.
                let p = p.unwrap();
                assert_eq!((p.workers, p.resident, p.max_run), (2, [true; 5], None), "{size}: {}", p.describe(&shape));
            } else {
                // 32 / 64 GiB: tables 2.4 GB + vectors 8.6 GB + MSM scratch
                // 2.1 GB (G2 slots of 2^22 bases 1.6 GB) = 13.1 GB > 12.9 GB.
                let e = p.unwrap_err();
                assert!(e.minimum > 12 * GIB && e.minimum < 12 * GIB + GIB / 2, "{size}: {e}");
                assert!(e.to_string().contains("at least"), "{e}");
                let p = plan_device(e.minimum, 2, &shape).unwrap();
                assert_eq!((p.workers, p.resident, p.stream_chunk), (1, [false; 5], MIN_RUN), "{size}");
            }
        }
    }

    /// The 32 GiB shape on the H200's budgets: what each cap buys.
    #[test]
    fn budgets_for_32_gib_partitions_spend_memory_on_residency_then_scratch() {
        let shape = PartitionShape::for_sector_size(0x8_0000_0000).unwrap();
        let params: usize = shape.parameter_bytes().iter().sum();
        assert!((47_000_000_000..48_000_000_000).contains(&params), "{params}");
        // 16 GiB: one worker, b_g1 (3.2 GB) resident, the rest streamed.
        let p = plan_device(16 * GIB, 2, &shape).unwrap();
        assert_eq!(p.workers, 1, "{}", p.describe(&shape));
        assert_eq!(p.resident, [false, false, false, true, false], "{}", p.describe(&shape));
        // 24 GiB: two workers fit with minimal scratch.
        let p = plan_device(24 * GIB, 2, &shape).unwrap();
        assert_eq!(p.workers, 2, "{}", p.describe(&shape));
        // 40 GiB, one worker: h + l resident (25.4 GB), PCIe per partition
        // below what streaming everything would move.
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
        assert_eq!(p.pass_budget, full_pass_budget(h, G1_XYZZ, MSM_THREADS).max(min_pass(&shape, h)));
        // Every resident byte is one less over PCIe.
        let streamed_all = shape.pcie_bytes(&[false; 5]);
        assert_eq!(streamed_all - shape.pcie_bytes(&[true; 5]), params);
    }

    #[test]
    fn shapes_of_parameters_match_the_registered_table() {
        // The 2 KiB shape as check_parameters sees it: H = domain - 1.
        let s = PartitionShape::for_sector_size(2048).unwrap();
        assert_eq!((s.domain(), s.bases[0]), (1 << 22, (1 << 22) - 1));
        assert!(PartitionShape::for_sector_size(4096).is_none());
        // More witness than domain (not PoRep's case): the vectors arena
        // holds the domain and the longer witness.
        let wide = PartitionShape { log_domain: 10, aux: 5000, inputs: 3, bases: [1023, 5000, 5000, 10, 10] };
        assert!(wide.vectors_bytes() >= (1024 + 5000) * SCALAR);
    }
}
