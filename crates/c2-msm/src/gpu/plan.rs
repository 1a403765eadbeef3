//! Window plans and scratch shapes: pure functions of the sizes, the
//! memory budget and the curve (unit-tested without a device).

use crate::MsmError;

use super::config::BucketSum;

/// The plan of one Pippenger run, chosen from the number of full-width
/// scalars `m` and the memory budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    /// Window width in bits.
    pub c: u32,
    /// Windows in all: floor(255 / c) + 1.
    pub windows: u32,
    /// Windows sorted and summed per pass (memory).
    pub per_pass: u32,
}

impl WindowPlan {
    /// Buckets per window: 2^(c-1) (signed digits).
    pub fn buckets(&self) -> usize {
        1 << (self.c - 1)
    }
}

/// Work units of a Pippenger with window c over m scalars: one mixed
/// addition per (scalar, window) plus ~3 full additions per bucket
/// (fix-up, running sum, total sum; a full XYZZ addition costs ~1.4 mixed
/// ones).
pub(super) fn plan_cost(m: usize, c: u32, bucket_weight: f64) -> f64 {
    let windows = (255 / c + 1) as f64;
    windows * (m as f64 + bucket_weight * (1u64 << (c - 1)) as f64)
}

/// Cost of one bucket (fix-up, running sums, chunk scaling) in mixed
/// additions, measured on the H200 (2026-11-30): ~4 for G1; ~12 for G2,
/// where c = 13 beat c = 16 at 2^20 (110 vs 133 ms) but lost at 2^24.
pub(super) fn bucket_weight(xyzz_bytes: usize) -> f64 {
    if xyzz_bytes > 192 {
        12.0
    } else {
        4.0
    }
}

/// What one pass's device scratch is made of besides m, c and the windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScratchShape {
    /// Bytes of one XYZZ point (192 for G1, 384 for G2).
    pub xyzz_bytes: usize,
    /// Threads the bucket kernels aim for ([`super::GpuMsmConfig::target_threads`]).
    pub threads: usize,
    /// Segments per thread: 1 for [`BucketSum::Xyzz`], `batch` chains for
    /// [`BucketSum::BatchedAffine`].
    pub segments_per_thread: usize,
    /// Extra bytes per segment (batched affine: accumulator, prefix product
    /// and bucket word of a chain).
    pub segment_state_bytes: usize,
}

impl ScratchShape {
    /// XYZZ bucket sums: one segment per thread, no chain state.
    pub fn xyzz(xyzz_bytes: usize, threads: usize) -> Self {
        Self { xyzz_bytes, threads, segments_per_thread: 1, segment_state_bytes: 0 }
    }

    /// The shape of `sum` for a curve whose XYZZ points take `xyzz_bytes`
    /// (affine points take half, a field element a quarter); `threads` is
    /// the XYZZ kernel's target (batched affine brings its own).
    pub fn for_bucket_sum(sum: BucketSum, xyzz_bytes: usize, threads: usize) -> Self {
        match sum {
            BucketSum::Xyzz => Self::xyzz(xyzz_bytes, threads),
            BucketSum::BatchedAffine { batch, threads: affine_threads } => Self {
                xyzz_bytes,
                threads: affine_threads.max(1),
                segments_per_thread: batch.max(1) as usize,
                segment_state_bytes: xyzz_bytes / 2 + xyzz_bytes / 4 + 4,
            },
        }
    }

    /// Device scratch bytes of one window of an MSM over `m` full-width
    /// scalars with `c`-bit windows (what [`plan_windows`] divides the
    /// budget by).
    pub fn window_bytes(&self, m: usize, c: u32) -> usize {
        pass_bytes(m, 1 << (c.clamp(1, 31) - 1), 1, self)
    }

    /// Segments of a pass with `entries` sorted entries: at least 8 entries
    /// each, at most `threads * segments_per_thread`.
    pub(super) fn segments(&self, entries: usize) -> usize {
        entries.div_ceil(8).min(self.threads * self.segments_per_thread)
    }
}

/// Chooses c (2..=16) by `plan_cost` (windows x (m + weight x buckets)), then how many windows fit a pass.
pub fn plan_windows(
    m: usize,
    forced: Option<u32>,
    budget: usize,
    shape: &ScratchShape,
) -> Result<WindowPlan, MsmError> {
    let xyzz_bytes = shape.xyzz_bytes;
    let c = match forced {
        Some(c) if (2..=24).contains(&c) => c,
        Some(c) => {
            return Err(MsmError::Backend { backend: "cuda", message: format!("window width {c} not in 2..=24") })
        }
        None => {
            let w = bucket_weight(xyzz_bytes);
            (2..=16).min_by(|&a, &b| plan_cost(m, a, w).total_cmp(&plan_cost(m, b, w))).unwrap_or(16)
        }
    };
    let windows = 255 / c + 1;
    let per_window = shape.window_bytes(m, c);
    // Offsets are u32: entries of one pass must stay below 2^32.
    let by_offsets = ((u32::MAX as usize) / m.max(1)).max(1);
    let per_pass = (budget / per_window.max(1)).min(windows as usize).min(by_offsets);
    if per_pass == 0 {
        return Err(MsmError::Backend {
            backend: "cuda",
            message: format!(
                "MSM of {m} scalars needs {per_window} bytes of device scratch per window; budget is {budget}"
            ),
        });
    }
    Ok(WindowPlan { c, windows, per_pass: per_pass as u32 })
}

/// Device scratch of one pass over `wn` windows (entries, counts, buckets,
/// segment partials, reduction outputs) per window, with `wn` windows.
pub(super) fn pass_bytes(m: usize, buckets: usize, wn: usize, shape: &ScratchShape) -> usize {
    let entries = m * wn;
    let segments = shape.segments(entries) + 1;
    let xyzz = shape.xyzz_bytes;
    entries * 4
        + (wn * buckets + 1) * 12
        + wn * buckets * xyzz
        + segments * (2 * xyzz + shape.segment_state_bytes)
        + shape.threads * xyzz
}
