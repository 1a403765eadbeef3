//! One Pippenger run on the device: the 0/1 split, the ones' tree sum, the
//! counting sort by bucket, the bucket sums (XYZZ or batched affine), the
//! fix-up, the running sums and the window points.

use std::sync::Arc;

use c2_cuda::{DeviceMemory, Event, Gpu, Launch, Stream};
use group::prime::PrimeCurveAffine;
use group::Group;

use crate::MsmError;

use super::curve::GpuCurve;
use super::inputs::{DeviceDensity, MsmScalars};
use super::instance::{
    gpu_err, grid, poisoned, GpuMsm, PlaceLaunch, Streams, CURVE_THREADS, INT_THREADS, SORT_THREADS, SUM_GROUP,
};
use super::scratch::{Scratch, Slot};
use crate::config::{measured_accumulate_blocks, BucketSum, Sort};
use crate::plan::{
    plan_windows, reduce_chunk, sort_fine_bits, sort_jobs, split_items, xyzz_segment, ScratchShape, WindowPlan,
    SORT_COARSE_MAX, TWO_LEVEL_MAX_BUCKETS,
};

/// Kernel time per stage from CUDA events: `mark(name)` closes the stage
/// `name` that began at the previous mark.
pub(super) struct StageClock {
    pub(super) marks: Vec<(&'static str, Event)>,
    pub(super) gpu: Option<Arc<Gpu>>,
}

impl StageClock {
    pub(super) fn new(gpu: &Arc<Gpu>, on: bool, s: &Stream) -> Result<Self, MsmError> {
        let mut c = Self { marks: Vec::new(), gpu: on.then(|| gpu.clone()) };
        c.mark("start", s)?;
        Ok(c)
    }

    pub(super) fn mark(&mut self, name: &'static str, s: &Stream) -> Result<(), MsmError> {
        if let Some(g) = &self.gpu {
            let e = g.event().map_err(gpu_err)?;
            e.record(s).map_err(gpu_err)?;
            self.marks.push((name, e));
        }
        Ok(())
    }

    /// Milliseconds per stage name, summed over passes (events complete).
    pub(super) fn totals(&self) -> Result<Vec<(&'static str, f32)>, MsmError> {
        let mut out: Vec<(&'static str, f32)> = Vec::new();
        for w in self.marks.windows(2) {
            let ms = w[1].1.elapsed_ms(&w[0].1).map_err(gpu_err)?;
            match out.iter_mut().find(|(n, _)| *n == w[1].0) {
                Some((_, t)) => *t += ms,
                None => out.push((w[1].0, ms)),
            }
        }
        Ok(out)
    }
}

/// What one window pass sorts: the full-width scalars (canonical) and their
/// base indices, windows `w0..w0 + wn` of `c` bits.
struct SortPass {
    others: u64,
    others_base: u64,
    m: usize,
    c: u32,
    w0: u32,
    wn: u32,
    /// The plan left room for the two-level sort's scratch
    /// ([`ScratchShape::two_level_sort`]).
    two_level: bool,
    /// Precomputed copies of the bases: `copies` of `k` windows each,
    /// `stride` bases apart (one copy: k = every window, stride 0).
    copies: usize,
    k: u32,
    stride: usize,
}

impl SortPass {
    fn buckets(&self) -> usize {
        1 << (self.c - 1)
    }

    /// Buckets of the pass, all windows.
    fn nbk(&self) -> usize {
        self.wn as usize * self.buckets()
    }

    /// The two-level sort's coarse bins.
    fn bins(&self) -> usize {
        self.nbk() >> sort_fine_bits(self.buckets())
    }

    /// Most entries of the pass: a digit per scalar, window and copy.
    fn max_entries(&self) -> usize {
        self.m * self.wn as usize * self.copies
    }

    /// (c, w0, wn, k, stride) as the sort kernels take them
    /// (`msm::PassWindows`).
    fn window_args(&self) -> (u64, u64, u64, u64, u64) {
        (self.c as u64, self.w0 as u64, self.wn as u64, self.k as u64, self.stride as u64)
    }
}

/// Every bucket's list of points before the bucket sums: bucket b holds
/// list positions off[b]..off[b + 1] (device addresses).
#[derive(Clone, Copy)]
struct Lists {
    /// Affine points.
    points: u64,
    /// Position i is `points[entries[i]]` (bit 31: negated); 0: `points[i]`.
    entries: u64,
    /// nbk + 1 offsets.
    off: u64,
    /// At most this many positions in all.
    max: usize,
}

/// What a streamed or resident run needs to know about its bases.
pub(super) struct BaseRange {
    pub(super) ptr: u64,
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// Precomputed copies of the bases (1: none; see
    /// [`crate::plan::copy_windows`]): copy j of base i at index
    /// i + j * stride from `ptr`, built for `c`-bit windows.
    pub(super) copies: Option<Copies>,
}

/// Bases precomputed for `c`-bit windows in `copies` copies, `stride` bases
/// apart.
#[derive(Clone, Copy, Debug)]
pub(super) struct Copies {
    pub(super) c: u32,
    pub(super) copies: u32,
    pub(super) stride: usize,
}

/// Where a window pass leaves its windows.
#[derive(Clone, Copy)]
enum Target {
    /// Reduced: the window points at this address (XYZZ, window w0 first).
    Windows(u64),
    /// Unreduced: every bucket added into the MSM's bucket totals at this
    /// address (all windows, window 0 first), reduced once by
    /// [`GpuMsm::finish`].
    Totals(u64),
}

/// The full-width scalars of one run after the split, and what every
/// window pass needs of the run.
struct Others<'a> {
    range: &'a BaseRange,
    /// Device address of the kept scalars (canonical) and of their base
    /// indices.
    others: u64,
    others_base: u64,
    /// How many were kept.
    m: usize,
    plan: WindowPlan,
    bucket_sum: BucketSum,
    shape: ScratchShape,
    target: Target,
}

/// One MSM made of runs over parts of its bases (streamed chunks, bounded
/// runs over resident bases), begun by [`GpuMsm::begin`], fed by
/// [`GpuMsm::run_part`], ended by [`GpuMsm::finish`]. Every run leaves the
/// sum of its ones in a slot of its own; the full-width scalars of all runs
/// share one window width and add their buckets into one set of bucket
/// totals, reduced once at the end. Measured on the H200 (session 8, 16 GiB
/// cap): reducing every window in every run cost +1.2 s of kernel time per
/// 32 GiB partition. Where the totals do not fit (or for a single run),
/// each run reduces its own windows.
pub(super) struct RunSum<C: GpuCurve> {
    /// Which MSM of a batch (its slots in `scratch.runs`; 0 alone).
    member: usize,
    /// Where the member's slots are allocated (`None`: the instance's
    /// memory): a batch's caller may hand its own arena
    /// ([`GpuMsm::msm_batch_host_bases`]).
    memory: Option<DeviceMemory>,
    /// Runs planned, and begun so far.
    runs: usize,
    done: usize,
    /// The window plan of the first run with full-width scalars (the later
    /// runs keep its width c; their passes follow their own counts).
    plan: Option<WindowPlan>,
    /// Buckets of all runs in the member's totals (else each run reduced its
    /// own windows).
    accumulated: bool,
    /// The windows of a single run, reduced, wait in `scratch.finals`.
    pending_windows: bool,
    /// Other MSMs of a batch run between this one's runs and its finish:
    /// `scratch.finals` is theirs too, so a single run's windows are
    /// collected at once instead of waiting there (the next member's run
    /// would overwrite them: a batch over bases that fit one chunk, e.g.
    /// the public inputs' parts, gave every member but the last the last
    /// member's windows: the first device run of a GPU worker's batches,
    /// 2026-12-07, where only each batch's last partition verified).
    shares_finals: bool,
    /// Windows of runs that reduced their own.
    partial: C::Projective,
    /// Stage events of the runs, read once the stream has passed them.
    clocks: Vec<StageClock>,
}

impl GpuMsm {
    /// Starts MSM `member` of a batch (0 alone) of `runs` runs: one zeroed
    /// (infinity) ones point per run. The members of a batch keep their
    /// state apart, so their runs may interleave (one chunk of streamed
    /// bases serving every member before the next chunk).
    pub(super) fn begin<C: GpuCurve>(
        &self,
        streams: &Streams,
        scratch: &mut Scratch,
        runs: usize,
        member: usize,
        memory: Option<&DeviceMemory>,
        shares_finals: bool,
    ) -> Result<RunSum<C>, MsmError> {
        let s = &streams.compute;
        let xw = std::mem::size_of::<C::Xyzz>() / 8;
        let runs = runs.max(1);
        // XYZZ infinity has ZZ = 0; all-zero bytes are one.
        scratch
            .run_slots(member)
            .ones_parts
            .get((memory.unwrap_or(&self.memory), s), runs * xw)
            .map_err(gpu_err)?
            .zero_async(0, runs * xw, s)
            .map_err(gpu_err)?;
        Ok(RunSum {
            member,
            memory: memory.cloned(),
            runs,
            done: 0,
            plan: None,
            accumulated: false,
            pending_windows: false,
            shares_finals,
            partial: C::Projective::identity(),
            clocks: Vec::new(),
        })
    }

    /// One run of `sum` over the bases `range.lo..range.hi` (at `range.ptr`):
    /// the split, the ones' sum, and the full-width scalars' windows (into the
    /// MSM's bucket totals, or reduced). Queued on the compute stream; later
    /// runs may reuse this run's scratch (same stream, in order).
    pub(super) fn run_part<C: GpuCurve>(
        &self,
        streams: &Streams,
        scratch: &mut Scratch,
        range: &BaseRange,
        scalars: MsmScalars<'_>,
        mask: Option<&DeviceDensity>,
        sum: &mut RunSum<C>,
    ) -> Result<(), MsmError> {
        let n = scalars.len();
        let slot = sum.done;
        sum.done += 1;
        if slot >= sum.runs {
            return Err(MsmError::Backend {
                backend: "cuda",
                message: format!("run {slot} of an MSM of {} runs", sum.runs),
            });
        }
        if n == 0 || range.hi <= range.lo {
            return Ok(());
        }
        let s = &streams.compute;
        let g = (&self.memory, s);
        let e = gpu_err;
        let xyzz = std::mem::size_of::<C::Xyzz>();
        let xw = xyzz / 8;
        let kc = self.curve::<C>();

        let mut clock = StageClock::new(&self.gpu, self.config.stage_timing, s)?;
        // 1. Split on the GPU: zeros dropped, ones listed, others kept.
        let counters = scratch.counters.get(g, 2).map_err(e)?;
        counters.zero_async(0, 2, s).map_err(e)?;
        // At most one entry per base of the run (each base meets one
        // scalar): a chunked run needs split scratch for its own bases only.
        let run = n.min(range.hi - range.lo);
        let others = scratch.others.get(g, run).map_err(e)?.device_ptr();
        let others_base = scratch.others_base.get(g, run).map_err(e)?.device_ptr();
        let ones_base = scratch.ones_base.get(g, run).map_err(e)?.device_ptr();
        let (mask_ptr, rank_ptr) = mask.map_or((0, 0), |m| (m.words.device_ptr(), m.ranks.device_ptr()));
        let (lo, hi, counters_ptr) = (range.lo as u64, range.hi as u64, counters.device_ptr());
        // Only the scalars whose bases can be in this run.
        let (first, end) = split_items(n, mask.map(|m| &m.host_ranks[..]), range.lo, range.hi);
        let span = end - first;
        match scalars {
            // SAFETY: n scalars in, at most one entry per base of the run in
            // each output list (each base meets one scalar).
            MsmScalars::Full(f) => unsafe {
                self.kernels.split.launch(
                    s,
                    Launch::new(grid(span, INT_THREADS), INT_THREADS),
                    (
                        f.ptr(),
                        n as u64,
                        first as u64,
                        end as u64,
                        mask_ptr,
                        rank_ptr,
                        f.montgomery_flag(),
                        lo,
                        hi,
                        others,
                        others_base,
                        ones_base,
                        counters_ptr,
                    ),
                )
            },
            // SAFETY: n bits and `listed` values in (indices checked
            // against n in the kernel); outputs as above: the compact form
            // holds each variable once, as a set bit or a listed value.
            MsmScalars::Compact(c) => unsafe {
                self.kernels.split_compact.launch(
                    s,
                    Launch::new(grid(span + c.listed, INT_THREADS), INT_THREADS),
                    (
                        c.bits.device_ptr(),
                        n as u64,
                        first as u64,
                        end as u64,
                        c.index.device_ptr(),
                        c.value.device_ptr(),
                        c.listed as u64,
                        mask_ptr,
                        rank_ptr,
                        lo,
                        hi,
                        others,
                        others_base,
                        ones_base,
                        counters_ptr,
                    ),
                )
            },
        }
        .map_err(e)?;
        clock.mark("split", s)?;
        let mut count = [0u32; 2];
        // Returns when the copy (and so everything queued before it) is done.
        counters.download(0, &mut count, s).map_err(e)?;
        let (m, ones) = (count[0] as usize, count[1] as usize);

        // 2. Ones: tree sums of gathered bases, into this run's slot.
        if ones > 0 {
            let group = (ones / self.config.target_threads).max(SUM_GROUP);
            let partial = ones.div_ceil(group);
            let out = scratch.sums[0].get(g, partial * xw).map_err(e)?.device_ptr();
            // SAFETY: `ones` indices below range.hi - range.lo; partial outputs.
            unsafe {
                kc.sum_gathered.launch(
                    s,
                    Launch::new(grid(partial, CURVE_THREADS), CURVE_THREADS),
                    (range.ptr, ones_base, ones as u64, group as u64, out),
                )
            }
            .map_err(e)?;
            let ones_parts = &scratch.runs[sum.member].ones_parts;
            let dst = ones_parts.buf.as_ref().expect("allocated by begin").device_ptr() + (slot * xyzz) as u64;
            self.tree_sum::<C>(s, scratch, out, partial, 1, dst)?;
        }
        clock.mark("ones", s)?;

        // 3. Others: Pippenger, `per_pass` windows at a time.
        if m > 0 {
            let bucket_sum = self.config.bucket_sum.unwrap_or(BucketSum::measured_default(xyzz, m));
            let copies = range.copies.map_or(1, |k| k.copies as usize);
            let base = ScratchShape::for_bucket_sum(bucket_sum, xyzz, self.config.target_threads).with_copies(copies);
            // Precomputed bases fix the width.
            let width = range.copies.map(|k| k.c).or(self.config.window_bits);
            let (plan, shape) = match sum.plan {
                Some(first) => self.plan_passes(m, Some(first.c), base)?,
                None => {
                    let (p, shape) = self.plan_passes(m, width, base)?;
                    sum.plan = Some(p);
                    if sum.runs > 1 {
                        let words = p.windows as usize * p.buckets() * xw;
                        let on = (sum.memory.as_ref().unwrap_or(&self.memory), s);
                        match scratch.run_slots(sum.member).totals.get(on, words) {
                            Ok(t) => {
                                t.zero_async(0, words, s).map_err(e)?;
                                sum.accumulated = true;
                            }
                            // No room beside the passes: each run reduces its own.
                            Err(err) if err.is_out_of_memory() => scratch.runs[sum.member].totals = Slot::new(),
                            Err(err) => return Err(e(err)),
                        }
                    }
                    // The totals took device memory: plan the passes again.
                    if sum.accumulated {
                        self.plan_passes(m, Some(p.c), base)?
                    } else {
                        (p, shape)
                    }
                }
            };
            let windows = plan.windows as usize;
            let target = if sum.accumulated {
                Target::Totals(scratch.runs[sum.member].totals.buf.as_ref().expect("allocated above").device_ptr())
            } else {
                Target::Windows(scratch.finals.get(g, (1 + windows) * xw).map_err(e)?.device_ptr() + xyzz as u64)
            };
            let sorted = Others { range, others, others_base, m, plan, bucket_sum, shape, target };
            let mut w0 = 0u32;
            while w0 < plan.windows {
                let wn = plan.per_pass.min(plan.windows - w0);
                self.window_pass::<C>(streams, scratch, &sorted, w0, wn, &mut clock)?;
                w0 += wn;
            }
            if !sum.accumulated {
                if sum.runs == 1 && !sum.shares_finals {
                    sum.pending_windows = true;
                } else {
                    let finals = scratch.finals.buf.as_ref().expect("allocated above").device_ptr();
                    let points = self.collect::<C>(s, scratch, finals + xyzz as u64, windows, &mut clock)?;
                    sum.partial += combine_windows::<C>(&points, plan.c);
                }
            }
        }
        sum.clocks.push(clock);
        Ok(())
    }

    /// Ends `sum`: the ones' points summed, the bucket totals reduced (or the
    /// single run's windows), converted to affine on the GPU and combined on
    /// the host.
    pub(super) fn finish<C: GpuCurve>(
        &self,
        streams: &Streams,
        scratch: &mut Scratch,
        sum: RunSum<C>,
    ) -> Result<C::Projective, MsmError> {
        let s = &streams.compute;
        let g = (&self.memory, s);
        let e = gpu_err;
        let xyzz = std::mem::size_of::<C::Xyzz>();
        let xw = xyzz / 8;
        let mut clock = StageClock::new(&self.gpu, self.config.stage_timing, s)?;
        let plan = sum.plan.filter(|_| sum.accumulated || sum.pending_windows);
        let windows = plan.map_or(0, |p| p.windows as usize);
        // Final points: [ones, window 0, window 1, ...] (a single run's
        // windows are in place already).
        let finals = scratch.finals.get(g, (1 + windows) * xw).map_err(e)?.device_ptr();
        let slots = &scratch.runs[sum.member];
        let ones = slots.ones_parts.buf.as_ref().expect("allocated by begin").device_ptr();
        let totals = slots.totals.buf.as_ref().map(|t| t.device_ptr());
        self.tree_sum::<C>(s, scratch, ones, sum.runs, 1, finals)?;
        if let (Some(p), true) = (plan, sum.accumulated) {
            let totals = totals.expect("allocated by run_part");
            self.reduce_windows::<C>(s, scratch, totals, p.windows, p.buckets(), finals + xyzz as u64, &mut clock)?;
        }
        let points = self.collect::<C>(s, scratch, finals, 1 + windows, &mut clock)?;
        // The stream has passed every event now.
        for c in sum.clocks.iter().chain([&clock]) {
            self.add_stage_times(c)?;
        }
        let windows_sum = plan.map_or(C::Projective::identity(), |p| combine_windows::<C>(&points[1..], p.c));
        Ok(windows_sum + points[0].to_curve() + sum.partial)
    }

    /// `points` XYZZ points at `src`, in affine on the host (converted on
    /// the GPU; waits for the stream).
    fn collect<C: GpuCurve>(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        src: u64,
        points: usize,
        clock: &mut StageClock,
    ) -> Result<Vec<C::Affine>, MsmError> {
        let kc = self.curve::<C>();
        let aff = scratch.affine.get::<C::Affine>((&self.memory, s), points).map_err(gpu_err)?;
        // SAFETY: points XYZZ in, as many affine out.
        unsafe {
            kc.to_affine.launch(
                s,
                Launch::new(grid(points, CURVE_THREADS), CURVE_THREADS),
                (src, points as u64, aff.device_ptr()),
            )
        }
        .map_err(gpu_err)?;
        let mut host = vec![C::Affine::identity(); points];
        clock.mark("affine", s)?;
        aff.download(0, &mut host, s).map_err(gpu_err)?;
        Ok(host)
    }

    /// Adds a run's stage times to the MSM's (`config.stage_timing`; the
    /// MSM's entry point cleared them; the events are complete).
    fn add_stage_times(&self, clock: &StageClock) -> Result<(), MsmError> {
        if !self.config.stage_timing {
            return Ok(());
        }
        let mut stages = self.stages.lock().map_err(|_| poisoned())?;
        for (name, ms) in clock.totals()? {
            match stages.iter_mut().find(|(n, _)| *n == name) {
                Some((_, t)) => *t += ms,
                None => stages.push((name, ms)),
            }
        }
        Ok(())
    }

    /// The window plan of `m` full-width scalars in this MSM's budget and
    /// the scratch shape it planned with (`base` with a sort): the two-level
    /// sort where the configuration asks for it, the device runs it and one
    /// window fits with its scratch; else the global counters, which need
    /// the least (the planners' budgets count those, so a budget sized for
    /// one window always plans). The two-level sort wins even in more
    /// passes: a pass re-reads the scalars (2^27: 4.3 GB, ~1 ms at 3.98
    /// TB/s, per read) while each window's sort costs half (H200, G1 2^27:
    /// 60.7 vs 120.8 ms for 16 windows).
    fn plan_passes(
        &self,
        m: usize,
        forced: Option<u32>,
        base: ScratchShape,
    ) -> Result<(WindowPlan, ScratchShape), MsmError> {
        let budget = self.budget()?;
        if self.config.sort == Sort::TwoLevel && self.place.is_some() {
            let two_level = base.with_sort(Sort::TwoLevel);
            if let Ok(plan) = plan_windows(m, forced, budget, &two_level) {
                return Ok((plan, two_level));
            }
        }
        let global = base.with_sort(Sort::GlobalCounters);
        Ok((plan_windows(m, forced, budget, &global)?, global))
    }

    /// Steps 2-4 for the pass `p`: the bucket offsets (nbk + 1, in
    /// `scratch.counts`) and the entries sorted by bucket (in
    /// `scratch.entries`), as device addresses. The two-level sort where the
    /// plan chose it ([`GpuMsm::plan_passes`]) and the window width allows
    /// it, else the global counters.
    fn sort_pass(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        p: &SortPass,
        clock: &mut StageClock,
    ) -> Result<(u64, u64), MsmError> {
        let entries = scratch.entries.get((&self.memory, s), p.max_entries()).map_err(gpu_err)?.device_ptr();
        let place = self.place.filter(|pl| {
            p.two_level
                && p.buckets() <= TWO_LEVEL_MAX_BUCKETS
                && p.bins() <= SORT_COARSE_MAX
                && pl.tile as usize >= p.wn as usize * p.copies
        });
        let off = if let Some(place) = place {
            self.sort_two_level(s, scratch, p, place, entries, clock)?
        } else {
            self.sort_global(s, scratch, p, entries, clock)?
        };
        Ok((off, entries))
    }

    /// The sort by global counters: histogram, scan, a cursor per bucket,
    /// scatter. Returns the offsets' address.
    fn sort_global(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        p: &SortPass,
        entries: u64,
        clock: &mut StageClock,
    ) -> Result<u64, MsmError> {
        let g = (&self.memory, s);
        let e = gpu_err;
        let nbk = p.nbk();
        let counts = scratch.counts.get(g, nbk + 1).map_err(e)?;
        counts.zero_async(0, nbk + 1, s).map_err(e)?;
        let counts_ptr = counts.device_ptr();
        let (c, w0, wn, k, stride) = p.window_args();
        // SAFETY: m canonical scalars; counts has nbk + 1 slots.
        unsafe {
            self.kernels.histogram.launch(
                s,
                Launch::new(grid(p.m, INT_THREADS), INT_THREADS),
                (p.others, p.m as u64, c, w0, wn, k, stride, counts_ptr),
            )
        }
        .map_err(e)?;
        clock.mark("sort: count", s)?;
        self.scan(scratch.counts.get(g, nbk + 1).map_err(e)?, nbk + 1, &mut scratch.scan_tmp, s)?;
        let cursor = scratch.cursor.get(g, nbk).map_err(e)?;
        let counts_buf = scratch.counts.buf.as_ref().expect("allocated above");
        cursor.copy_range_from_async(0, counts_buf, 0, nbk, s).map_err(e)?;
        clock.mark("sort: scan", s)?;
        // SAFETY: every nonzero digit gets one slot below off[nbk] <=
        // max_entries; base words stay below 2^31 (checked with the copies).
        unsafe {
            self.kernels.scatter.launch(
                s,
                Launch::new(grid(p.m, INT_THREADS), INT_THREADS),
                (p.others, p.others_base, p.m as u64, c, w0, wn, k, stride, cursor.device_ptr(), entries),
            )
        }
        .map_err(e)?;
        clock.mark("sort: place", s)?;
        Ok(counts_ptr)
    }

    /// The two-level sort: coarse bins (window, bucket >> F) by per-block
    /// counts and tiled placement, then each bin by its fine buckets
    /// (bucket & (2^F - 1)). Returns the offsets' address.
    fn sort_two_level(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        p: &SortPass,
        place: PlaceLaunch,
        entries: u64,
        clock: &mut StageClock,
    ) -> Result<u64, MsmError> {
        let g = (&self.memory, s);
        let e = gpu_err;
        let (nbk, bins, m) = (p.nbk(), p.bins(), p.m);
        let jobs = sort_jobs(m, self.config.target_threads);
        let words = bins * jobs + 1;
        let table = scratch.sort_table.get(g, words).map_err(e)?;
        // coarse_count writes every count; the last word (the total after
        // the scan) starts at zero.
        table.zero_async(words - 1, 1, s).map_err(e)?;
        let table_ptr = table.device_ptr();
        let tmp_entry = scratch.sort_tmp_entry.get(g, p.max_entries()).map_err(e)?.device_ptr();
        let tmp_fine = scratch.sort_tmp_fine.get(g, p.max_entries()).map_err(e)?.device_ptr();
        // The count: about one block per SM (target_threads / 1024), jobs
        // looping.
        let grid_count = jobs.min(self.config.target_threads / SORT_THREADS as usize).max(1) as u32;
        let (c, w0, wn, k, stride) = p.window_args();
        let (fb, jobs64) = (sort_fine_bits(p.buckets()) as u64, jobs as u64);
        // SAFETY: each job writes the table words (bin, job) for its bins
        // (bins * jobs < words); bins <= SORT_COARSE_MAX, the kernels'
        // shared counters.
        unsafe {
            self.kernels.coarse_count.launch(
                s,
                Launch::new(grid_count, SORT_THREADS),
                (p.others, m as u64, c, w0, wn, k, stride, fb, jobs64, table_ptr),
            )
        }
        .map_err(e)?;
        clock.mark("sort: count", s)?;
        self.scan(scratch.sort_table.get(g, words).map_err(e)?, words, &mut scratch.scan_tmp, s)?;
        clock.mark("sort: scan", s)?;
        // SAFETY: the scanned table gives each (bin, job) a range of exactly
        // its count below the total <= max_entries (the temporary arrays'
        // length); `place.shared` (tile >= wn * copies, checked by
        // sort_pass) was allowed at
        // instance creation. At most the configured blocks per SM, jobs
        // looping: the blocks in flight bound the write frontier (blocks x
        // bins runs of both temporaries: 17 MB at 132 x 2048 x 2 x 32
        // bytes, twice that at two blocks per SM) that L2 (50 MB) holds
        // while tiles fill the runs.
        let grid_place = jobs.min(place.max_grid as usize).max(1) as u32;
        let tile = place.tile as u64;
        unsafe {
            self.kernels.coarse_place.launch(
                s,
                Launch::new(grid_place, SORT_THREADS).shared(place.shared),
                (
                    p.others,
                    p.others_base,
                    m as u64,
                    c,
                    w0,
                    wn,
                    k,
                    stride,
                    fb,
                    jobs64,
                    table_ptr,
                    tmp_entry,
                    tmp_fine,
                    tile,
                ),
            )
        }
        .map_err(e)?;
        clock.mark("sort: place", s)?;
        let off = scratch.counts.get(g, nbk + 1).map_err(e)?.device_ptr();
        // SAFETY: bin g reads its range of the temporaries and writes the
        // same range of `entries` and offsets g * 2^F .. (g + 1) * 2^F; off
        // has nbk + 1 = bins * 2^F + 1 slots.
        unsafe {
            self.kernels.fine_sort.launch(
                s,
                Launch::new(bins as u32, SORT_THREADS),
                (tmp_entry, tmp_fine, table_ptr, jobs64, bins as u64, fb, entries, off),
            )
        }
        .map_err(e)?;
        clock.mark("sort: fine", s)?;
        Ok(off)
    }

    /// Windows `w0..w0 + wn` of the full-width scalars: counting sort by
    /// bucket, bucket sums, fix-up, and either the running sums and window
    /// points (into the target's) or the buckets added into the totals.
    fn window_pass<C: GpuCurve>(
        &self,
        streams: &Streams,
        scratch: &mut Scratch,
        o: &Others<'_>,
        w0: u32,
        wn: u32,
        clock: &mut StageClock,
    ) -> Result<(), MsmError> {
        let s = &streams.compute;
        let g = (&self.memory, s);
        let e = gpu_err;
        let xyzz = std::mem::size_of::<C::Xyzz>();
        let xw = xyzz / 8;
        let kc = self.curve::<C>();
        let Others { range, others, others_base, m, plan, bucket_sum, shape, target } = *o;
        let nb = plan.buckets();
        let nbk = wn as usize * nb;
        let (copies, stride) = range.copies.map_or((1, 0), |k| (k.copies as usize, k.stride));
        let pass = SortPass {
            others,
            others_base,
            m,
            c: plan.c,
            w0,
            wn,
            two_level: shape.two_level_sort,
            copies,
            k: plan.windows,
            stride,
        };
        let max_entries = pass.max_entries();
        let (counts_ptr, entries) = self.sort_pass(s, scratch, &pass, clock)?;
        // Affine pair passes first (BucketSum::AffinePairs): the XYZZ
        // accumulation then sums the lists they leave.
        let lists = Lists { points: range.ptr, entries, off: counts_ptr, max: max_entries };
        let lists = match bucket_sum {
            BucketSum::AffinePairs { batch, min_threads } => {
                self.pair_passes::<C>(s, scratch, lists, nbk, batch, min_threads, clock)?
            }
            _ => lists,
        };
        let Lists { points, entries, off, max: max_entries } = lists;
        // Segments: enough for the target thread count (times the
        // chains per thread), >= 8 entries; XYZZ segments a few buckets
        // long (`xyzz_segment`).
        let seg = match bucket_sum {
            BucketSum::Xyzz | BucketSum::AffinePairs { .. } => {
                xyzz_segment(max_entries, nbk, self.config.target_threads)
            }
            BucketSum::BatchedAffine { .. } => max_entries.div_ceil(shape.segments(max_entries)).max(8),
        };
        let nseg = max_entries.div_ceil(seg);
        let buckets = scratch.buckets.get(g, nbk * xw).map_err(e)?.device_ptr();
        let head = scratch.head.get(g, nseg * xw).map_err(e)?.device_ptr();
        let tail = scratch.tail.get(g, nseg * xw).map_err(e)?.device_ptr();
        match bucket_sum {
            BucketSum::Xyzz | BucketSum::AffinePairs { .. } => {
                let blocks = self
                    .config
                    .accumulate_blocks
                    .unwrap_or_else(|| measured_accumulate_blocks(std::mem::size_of::<C::Xyzz>()));
                let k = match (self.config.inline_bucket_add, blocks) {
                    (false, _) => &kc.accumulate,
                    (true, 3) => &kc.accumulate_inline3,
                    (true, 4) => &kc.accumulate_inline4,
                    (true, _) => &kc.accumulate_inline,
                };
                // SAFETY: kernels stay within nbk buckets and nseg segments;
                // `entries` (0: the points in list order) index `points`.
                unsafe {
                    k.launch(
                        s,
                        Launch::new(grid(nseg, CURVE_THREADS), CURVE_THREADS),
                        (points, entries, off, nbk as u64, seg as u64, buckets, head, tail),
                    )
                }
                .map_err(e)?;
            }
            BucketSum::BatchedAffine { batch, .. } => {
                let batch = batch.max(1) as usize;
                // Chain state: affine accumulator (xyzz / 2 bytes),
                // prefix product (xyzz / 4), bucket word.
                let acc = scratch.chain_acc.get(g, nseg * xw / 2).map_err(e)?.device_ptr();
                let prefix = scratch.chain_prefix.get(g, nseg * xw / 4).map_err(e)?.device_ptr();
                let cur = scratch.chain_bucket.get(g, nseg).map_err(e)?.device_ptr();
                // SAFETY: grid * block * batch >= nseg (nseg <=
                // target_threads * batch, far below the grid cap); the
                // kernel touches chain slots < nseg only.
                unsafe {
                    kc.accumulate_affine.launch(
                        s,
                        Launch::new(grid(nseg.div_ceil(batch), CURVE_THREADS), CURVE_THREADS),
                        (
                            points,
                            entries,
                            off,
                            nbk as u64,
                            seg as u64,
                            batch as u64,
                            acc,
                            prefix,
                            cur,
                            buckets,
                            head,
                            tail,
                        ),
                    )
                }
                .map_err(e)?;
            }
        }
        clock.mark("accumulate", s)?;
        // Into the totals: this pass's windows start at bucket w0 * nb.
        let totals = match target {
            Target::Totals(t) => t + (w0 as usize * nb * xyzz) as u64,
            Target::Windows(_) => 0,
        };
        // SAFETY: reads off[..=nbk]; sums heads < nseg in place.
        unsafe {
            kc.fixup_heads.launch(
                s,
                Launch::new(grid(nseg, CURVE_THREADS), CURVE_THREADS),
                (off, nbk as u64, seg as u64, nseg as u64, head),
            )
        }
        .map_err(e)?;
        // SAFETY: reads off[..=nbk] and the partials accumulate wrote;
        // writes nbk buckets (or totals) from the pass's first.
        unsafe {
            kc.fixup.launch(
                s,
                Launch::new(grid(nbk, CURVE_THREADS), CURVE_THREADS),
                (off, nbk as u64, seg as u64, buckets, head, tail, totals),
            )
        }
        .map_err(e)?;

        clock.mark("fixup", s)?;
        if let Target::Windows(dst) = target {
            self.reduce_windows::<C>(s, scratch, buckets, wn, nb, dst + (w0 as usize * xyzz) as u64, clock)?;
        }
        Ok(())
    }

    /// Affine pair passes ([`BucketSum::AffinePairs`]) over `lists` (`nbk`
    /// buckets), while a pass keeps `min_threads` threads of `batch`
    /// additions busy: each pass halves every bucket's list. Returns the
    /// lists the last pass left (the points in list order), or `lists`.
    #[allow(clippy::too_many_arguments)]
    fn pair_passes<C: GpuCurve>(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        lists: Lists,
        nbk: usize,
        batch: u32,
        min_threads: usize,
        clock: &mut StageClock,
    ) -> Result<Lists, MsmError> {
        let g = (&self.memory, s);
        let e = gpu_err;
        let kc = self.curve::<C>();
        let aw = std::mem::size_of::<C::Affine>() / 8;
        let batch = batch.max(1) as usize;
        let mut cur = lists;
        let mut flip = 0;
        loop {
            // sum ceil(n_b / 2) <= (sum n_b + buckets) / 2.
            let out_max = (cur.max + nbk) / 2;
            let threads = out_max.div_ceil(batch);
            if threads < min_threads.max(1) || out_max >= cur.max {
                break;
            }
            let cnt = scratch.pair_off[flip].get(g, nbk + 1).map_err(e)?;
            let cnt_ptr = cnt.device_ptr();
            // SAFETY: reads off[..=nbk], writes cnt[..=nbk].
            unsafe {
                self.kernels.pair_counts.launch(
                    s,
                    Launch::new(grid(nbk + 1, INT_THREADS), INT_THREADS),
                    (cur.off, nbk as u64, cnt_ptr),
                )
            }
            .map_err(e)?;
            self.scan(cnt, nbk + 1, &mut scratch.scan_tmp, s)?;
            let out = scratch.pair_points[flip].get(g, out_max * aw).map_err(e)?.device_ptr();
            // SAFETY: outputs below cnt[nbk] <= out_max; each thread reads
            // list positions of its outputs' buckets (< off[nbk]).
            unsafe {
                kc.pair_sums.launch(
                    s,
                    Launch::new(grid(threads, CURVE_THREADS), CURVE_THREADS),
                    (cur.points, cur.entries, cur.off, cnt_ptr, nbk as u64, batch as u64, out),
                )
            }
            .map_err(e)?;
            cur = Lists { points: out, entries: 0, off: cnt_ptr, max: out_max };
            flip ^= 1;
        }
        clock.mark("pairs", s)?;
        Ok(cur)
    }

    /// The window points of `wn` windows of `nb` buckets at `buckets` into
    /// `dst`: running sums over chunks of q buckets per window, then the
    /// chunks' tree sums.
    #[allow(clippy::too_many_arguments)]
    fn reduce_windows<C: GpuCurve>(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        buckets: u64,
        wn: u32,
        nb: usize,
        dst: u64,
        clock: &mut StageClock,
    ) -> Result<(), MsmError> {
        let xw = std::mem::size_of::<C::Xyzz>() / 8;
        let kc = self.curve::<C>();
        let q = reduce_chunk(wn as usize, nb, kc.reduce_resident);
        let parts = wn as usize * (nb / q);
        let out = scratch.sums[0].get((&self.memory, s), parts * xw).map_err(gpu_err)?.device_ptr();
        // SAFETY: wn * nb buckets in, parts points out.
        unsafe {
            kc.reduce.launch(
                s,
                Launch::new(grid(parts, CURVE_THREADS), CURVE_THREADS),
                (buckets, wn as u64, nb as u64, q as u64, out),
            )
        }
        .map_err(gpu_err)?;
        clock.mark("reduce", s)?;
        self.tree_sum::<C>(s, scratch, out, parts, wn as usize, dst)?;
        clock.mark("window sums", s)?;
        Ok(())
    }

    /// Sums `n` XYZZ points at `src` that form `outputs` equal groups
    /// (n / outputs a power of two, or outputs = 1) into `outputs` points at
    /// `dst`, 32 at a time.
    pub(super) fn tree_sum<C: GpuCurve>(
        &self,
        s: &Stream,
        scratch: &mut Scratch,
        src: u64,
        n: usize,
        outputs: usize,
        dst: u64,
    ) -> Result<(), MsmError> {
        let xw = std::mem::size_of::<C::Xyzz>() / 8;
        let kc = self.curve::<C>();
        let mut cur = src;
        let mut len = n;
        let mut flip = 1;
        while len > outputs {
            let per = len / outputs;
            let group = if outputs == 1 { SUM_GROUP.min(len) } else { SUM_GROUP.min(per) };
            let next_len = len.div_ceil(group);
            let out = if next_len == outputs {
                dst
            } else {
                let b = scratch.sums[flip].get((&self.memory, s), next_len * xw).map_err(gpu_err)?.device_ptr();
                flip ^= 1;
                b
            };
            // SAFETY: len points in, next_len out.
            unsafe {
                kc.sum_groups.launch(
                    s,
                    Launch::new(grid(next_len, CURVE_THREADS), CURVE_THREADS),
                    (cur, len as u64, group as u64, out),
                )
            }
            .map_err(gpu_err)?;
            cur = out;
            len = next_len;
        }
        if cur != dst {
            // One group already (n == outputs): copy through a 1-wide sum.
            // SAFETY: `len` points at `cur`, as many outputs at `dst`.
            unsafe {
                kc.sum_groups.launch(
                    s,
                    Launch::new(grid(len, CURVE_THREADS), CURVE_THREADS),
                    (cur, len as u64, 1u64, dst),
                )
            }
            .map_err(gpu_err)?;
        }
        Ok(())
    }
}

/// sum_w 2^(c w) W_w on the host (windows from the lowest): a few hundred
/// doublings.
fn combine_windows<C: GpuCurve>(windows: &[C::Affine], c: u32) -> C::Projective {
    let mut acc = C::Projective::identity();
    for w in windows.iter().rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        acc += w.to_curve();
    }
    acc
}
