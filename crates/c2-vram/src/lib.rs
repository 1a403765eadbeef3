//! Device memory for porep-c2, reserved once and sub-allocated.
//!
//! Prior art measured what goes wrong otherwise (ARCHITECTURE.md, "Lessons from prior art"): freed
//! stream-ordered pool memory that synchronous allocations cannot see (OOM
//! with memory free), and `cudaFree`'s implicit device synchronisation
//! serialising workers. So a device gets one reservation, sized from the
//! driver's free memory minus a margin or from a configured cap, and every
//! buffer of a proof is a range of it. Running out is a typed
//! [`VramError::OutOfBudget`], never a driver OOM in the middle of a kernel
//! sequence.
//!
//! [`RangeAllocator`] is the bookkeeping (first fit, coalescing, aligned),
//! [`SharedBudget`] shares it between workers (a request that does not fit
//! waits a while for ranges to come back); with the `cuda` feature,
//! `VramPool` backs it with one device slab and is the `c2_cuda::DeviceArena`
//! every stage of the GPU prover draws its buffers from
//! (`VramPool::memory`).
//!
//! Parameter residency: with the `cuda` feature, `SrsCache` keeps each
//! Groth16 parameter set on a device once uploaded, dropping the least
//! recently used set not in use when a new one needs room
//! ([`plan_eviction`]); a set that cannot fit whole keeps the vectors that
//! do ([`plan_residency`]), and the MSMs stream the others from host
//! memory.
//!
//! Arenas: `VramPool::carve` takes a range of a pool as a pool of its own,
//! so each purpose (a worker's partition vectors, its MSM scratch, the
//! parameter sets) has memory no other purpose can take or fragment.
#![deny(missing_docs)]

use std::collections::BTreeMap;

pub use c2_cuda::OutOfBudget;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[cfg(feature = "cuda")]
mod pool;
#[cfg(feature = "cuda")]
pub use pool::VramPool;
#[cfg(feature = "cuda")]
mod srs;
#[cfg(feature = "cuda")]
pub use srs::{ResidentSrs, SrsCache, SrsSource};

/// Offsets handed out are multiples of this (cudaMalloc's own alignment;
/// coalesced 128-byte accesses need at least that).
pub const ALIGN: usize = 256;

/// Errors of the VRAM budget.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum VramError {
    /// The request does not fit what is free of the budget now.
    #[error(transparent)]
    OutOfBudget(#[from] OutOfBudget),
    /// A zero-byte budget or a request that overflows.
    #[error("invalid VRAM request: {0}")]
    Invalid(String),
    /// The device runtime failed (reserving the slab).
    #[error(transparent)]
    Gpu(#[from] c2_cuda::GpuError),
}

impl From<VramError> for c2_cuda::GpuError {
    fn from(e: VramError) -> Self {
        match e {
            VramError::OutOfBudget(o) => Self::OutOfBudget(o),
            VramError::Invalid(m) => Self::Invalid(m),
            VramError::Gpu(g) => g,
        }
    }
}

/// How much of a device a pool reserves.
#[derive(Clone, Debug)]
pub struct VramConfig {
    /// Reserve at most this many bytes (e.g. 16 GiB to behave like a
    /// smaller card); `None`: the driver's free memory minus `margin`.
    pub cap: Option<usize>,
    /// Left to the driver, other libraries and local memory of kernels.
    pub margin: usize,
    /// How long a request that does not fit now waits for other workers on
    /// the device to return memory before it fails with
    /// [`VramError::OutOfBudget`] (zero: fail at once). A request larger
    /// than the whole budget fails at once.
    pub wait: Duration,
}

impl Default for VramConfig {
    fn default() -> Self {
        // Two workers per device each return their partition's buffers
        // within one partition's time (~3 s on the H200 at 32 GiB).
        Self { cap: None, margin: 2 << 30, wait: Duration::from_secs(20) }
    }
}

impl VramConfig {
    /// The budget for a device with `free` bytes free now.
    pub fn budget(&self, free: usize) -> usize {
        let avail = free.saturating_sub(self.margin);
        self.cap.map_or(avail, |c| c.min(avail)) / ALIGN * ALIGN
    }
}

/// First-fit allocation of aligned ranges of `0..budget`, with free ranges
/// merged on release. Pure bookkeeping: no memory behind it.
#[derive(Debug)]
pub struct RangeAllocator {
    budget: usize,
    /// Free ranges: offset -> length, never adjacent (merged on release).
    free: BTreeMap<usize, usize>,
    used: usize,
}

impl RangeAllocator {
    /// A budget of `budget` bytes (rounded down to [`ALIGN`]).
    pub fn new(budget: usize) -> Result<Self, VramError> {
        let budget = budget / ALIGN * ALIGN;
        if budget == 0 {
            return Err(VramError::Invalid("budget below one aligned block".into()));
        }
        Ok(Self { budget, free: BTreeMap::from([(0, budget)]), used: 0 })
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes handed out.
    pub fn used(&self) -> usize {
        self.used
    }

    /// The largest request that would succeed now.
    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }

    /// Reserves `bytes` (rounded up to [`ALIGN`]; zero takes one block so
    /// every range has a distinct offset). Returns the offset and the
    /// rounded length.
    pub fn alloc(&mut self, bytes: usize) -> Result<(usize, usize), VramError> {
        let len = bytes
            .max(1)
            .checked_next_multiple_of(ALIGN)
            .ok_or_else(|| VramError::Invalid(format!("{bytes} bytes overflows")))?;
        let hit = self.free.iter().find(|(_, &l)| l >= len).map(|(&o, &l)| (o, l));
        let Some((off, free_len)) = hit else {
            return Err(VramError::OutOfBudget(OutOfBudget {
                requested: len,
                largest_free: self.largest_free(),
                free: self.budget - self.used,
                budget: self.budget,
            }));
        };
        self.free.remove(&off);
        if free_len > len {
            self.free.insert(off + len, free_len - len);
        }
        self.used += len;
        Ok((off, len))
    }

    /// Returns a range from [`RangeAllocator::alloc`]; merges it with free
    /// neighbours. Panics on a range that is not allocated (a double free
    /// is a bug in the caller, not a user error).
    pub fn release(&mut self, offset: usize, len: usize) {
        assert!(offset + len <= self.budget && len > 0, "release of {len} bytes at {offset} outside the budget");
        let before = self.free.range(..=offset).next_back().map(|(&o, &l)| (o, l));
        if let Some((o, l)) = before {
            assert!(o + l <= offset, "double free of the range at {offset}");
        }
        if let Some((&o, _)) = self.free.range(offset..).next() {
            assert!(offset + len <= o, "double free of the range at {offset}");
        }
        let (mut start, mut end) = (offset, offset + len);
        if let Some((o, l)) = before.filter(|(o, l)| o + l == offset) {
            self.free.remove(&o);
            start = o;
            let _ = l;
        }
        if let Some(l) = self.free.remove(&end) {
            end += l;
        }
        self.free.insert(start, end - start);
        self.used -= len;
    }
}

/// A [`RangeAllocator`] shared by threads: a request that does not fit
/// waits (up to a limit) for ranges that others give back.
#[derive(Debug)]
pub struct SharedBudget {
    ranges: Mutex<RangeAllocator>,
    returned: Condvar,
}

impl SharedBudget {
    /// A budget of `budget` bytes (rounded down to [`ALIGN`]).
    pub fn new(budget: usize) -> Result<Self, VramError> {
        Ok(Self { ranges: Mutex::new(RangeAllocator::new(budget)?), returned: Condvar::new() })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RangeAllocator> {
        // The allocator's state is consistent between calls: a panic
        // elsewhere while holding the lock cannot leave it half-updated.
        self.ranges.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.lock().budget()
    }

    /// Bytes handed out now.
    pub fn used(&self) -> usize {
        self.lock().used()
    }

    /// The largest request that would succeed now.
    pub fn largest_free(&self) -> usize {
        self.lock().largest_free()
    }

    /// A range of at least `bytes` (offset, rounded length). When it does not
    /// fit now but could once others give ranges back, waits up to `wait`
    /// for them; then [`VramError::OutOfBudget`].
    pub fn take(&self, bytes: usize, wait: Duration) -> Result<(usize, usize), VramError> {
        let deadline = Instant::now() + wait;
        let mut ranges = self.lock();
        loop {
            match ranges.alloc(bytes) {
                Err(VramError::OutOfBudget(o)) if o.requested <= o.budget && ranges.used() > 0 => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return ranges.alloc(bytes);
                    }
                    ranges = self.returned.wait_timeout(ranges, left).unwrap_or_else(|p| p.into_inner()).0;
                }
                other => return other,
            }
        }
    }

    /// Gives back a range from [`SharedBudget::take`] and wakes the waiters.
    pub fn give(&self, offset: usize, len: usize) {
        self.lock().release(offset, len);
        self.returned.notify_all();
    }
}

/// A parameter set resident on a device, as eviction sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidentEntry {
    /// Device bytes it holds.
    pub bytes: usize,
    /// Logical time of its last use (larger = more recent).
    pub last_use: u64,
    /// A prover holds it now: it cannot be dropped.
    pub in_use: bool,
}

/// Which resident sets to drop, least recently used first, so that `needed`
/// more bytes fit while `reserve` bytes stay free for per-partition buffers:
/// `Some(indices)` (possibly empty), or `None` when even dropping every set
/// not in use would not make room (the caller streams the parameters instead).
pub fn plan_eviction(entries: &[ResidentEntry], free: usize, reserve: usize, needed: usize) -> Option<Vec<usize>> {
    let want = needed.checked_add(reserve)?;
    let mut have = free;
    let mut order: Vec<usize> = (0..entries.len()).filter(|&i| !entries[i].in_use).collect();
    order.sort_by_key(|&i| entries[i].last_use);
    let mut drop = Vec::new();
    for i in order {
        if have >= want {
            break;
        }
        have += entries[i].bytes;
        drop.push(i);
    }
    (have >= want).then_some(drop)
}

/// Which of a parameter set's vectors to keep resident when the whole set
/// does not fit in `room` bytes: the subset with the most bytes that fits
/// (every resident byte is one less to stream over PCIe per partition, so
/// bytes are what count). `sizes` are the vectors' device bytes; at most 16
/// vectors (a Groth16 set has five: h, l, a, b_g1, b_g2).
pub fn plan_residency(sizes: &[usize], room: usize) -> Vec<bool> {
    let n = sizes.len().min(16);
    let mut best = (0usize, 0u32);
    for subset in 0u32..(1 << n) {
        let bytes: usize = (0..n).filter(|&i| subset >> i & 1 == 1).map(|i| sizes[i]).sum();
        if bytes <= room && bytes > best.0 {
            best = (bytes, subset);
        }
    }
    (0..sizes.len()).map(|i| i < n && best.1 >> i & 1 == 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn entry(bytes: usize, last_use: u64, in_use: bool) -> ResidentEntry {
        ResidentEntry { bytes, last_use, in_use }
    }

    #[test]
    fn eviction_drops_least_recently_used_sets_not_in_use() {
        let e = [entry(30, 5, false), entry(20, 1, false), entry(40, 3, true), entry(10, 2, false)];
        // Enough free already: nothing dropped.
        assert_eq!(plan_eviction(&e, 100, 10, 90), Some(vec![]));
        // 25 more needed: the oldest (20 @ 1) then (10 @ 2) go; the set in use stays.
        assert_eq!(plan_eviction(&e, 50, 10, 65), Some(vec![1, 3]));
        // Dropping every set not in use (60 bytes) makes room for 100 more, not 101.
        assert_eq!(plan_eviction(&e, 50, 10, 100), Some(vec![1, 3, 0]));
        assert_eq!(plan_eviction(&e, 50, 10, 101), None);
        // Overflowing requests cannot fit.
        assert_eq!(plan_eviction(&e, 50, usize::MAX, 1), None);
    }

    #[test]
    fn residency_keeps_the_most_bytes_that_fit() {
        // A 32 GiB set (GB): h 12.9, l 12.5, a 12.5, b_g1 3.2, b_g2 6.4.
        let set = [129, 125, 125, 32, 64];
        assert_eq!(plan_residency(&set, 1000), vec![true; 5]);
        assert_eq!(plan_residency(&set, 0), vec![false; 5]);
        assert_eq!(plan_residency(&set, 31), vec![false; 5]);
        assert_eq!(plan_residency(&set, 43), vec![false, false, false, true, false]);
        // 20 GB: h + b_g2 (19.3) beats l + b_g2 (18.9) and h + b_g1 (16.1).
        assert_eq!(plan_residency(&set, 200), vec![true, false, false, false, true]);
        // 22.5 GB holds h + b_g1 + b_g2 exactly.
        assert_eq!(plan_residency(&set, 225), vec![true, false, false, true, true]);
        let all: usize = set.iter().sum();
        assert_eq!(plan_residency(&set, all - 1), vec![true, true, true, false, true]);
    }

    #[test]
    fn allocates_aligned_and_reports_exhaustion() {
        let mut a = RangeAllocator::new(10 * ALIGN + 7).unwrap();
        assert_eq!(a.budget(), 10 * ALIGN);
        let (o1, l1) = a.alloc(1).unwrap();
        let (o2, l2) = a.alloc(ALIGN + 1).unwrap();
        assert_eq!((o1, l1, o2, l2), (0, ALIGN, ALIGN, 2 * ALIGN));
        let e = a.alloc(8 * ALIGN).unwrap_err();
        assert_eq!(
            e,
            VramError::OutOfBudget(OutOfBudget {
                requested: 8 * ALIGN,
                largest_free: 7 * ALIGN,
                free: 7 * ALIGN,
                budget: 10 * ALIGN
            })
        );
        assert!(e.to_string().contains("budget exhausted"), "{e}");
        a.release(o1, l1);
        a.release(o2, l2);
        assert_eq!((a.used(), a.largest_free()), (0, 10 * ALIGN), "freed ranges merge back into one");
        assert!(RangeAllocator::new(ALIGN - 1).is_err());
    }

    #[test]
    fn fragmentation_is_reported_as_the_largest_piece() {
        let mut a = RangeAllocator::new(4 * ALIGN).unwrap();
        let r: Vec<_> = (0..4).map(|_| a.alloc(ALIGN).unwrap()).collect();
        a.release(r[0].0, r[0].1);
        a.release(r[2].0, r[2].1);
        match a.alloc(2 * ALIGN) {
            Err(VramError::OutOfBudget(o)) => assert_eq!((o.largest_free, o.free), (ALIGN, 2 * ALIGN)),
            other => panic!("{other:?}"),
        }
        a.release(r[1].0, r[1].1); // merges 0..3
        assert_eq!(a.alloc(3 * ALIGN).unwrap(), (0, 3 * ALIGN));
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_is_caught() {
        let mut a = RangeAllocator::new(4 * ALIGN).unwrap();
        let (o, l) = a.alloc(ALIGN).unwrap();
        a.release(o, l);
        a.release(o, l);
    }

    /// Random alloc/free against a shadow model: ranges never overlap, stay
    /// in the budget, and the accounting adds up.
    #[test]
    fn random_workload_never_overlaps() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut a = RangeAllocator::new(1 << 20).unwrap();
        let mut live: Vec<(usize, usize)> = Vec::new();
        for _ in 0..20_000 {
            if live.is_empty() || rng.gen_bool(0.55) {
                if let Ok(r) = a.alloc(rng.gen_range(0..40_000)) {
                    assert!(r.0 % ALIGN == 0 && r.0 + r.1 <= a.budget());
                    assert!(live.iter().all(|&(o, l)| r.0 + r.1 <= o || o + l <= r.0), "overlap");
                    live.push(r);
                }
            } else {
                let (o, l) = live.swap_remove(rng.gen_range(0..live.len()));
                a.release(o, l);
            }
            assert_eq!(a.used(), live.iter().map(|r| r.1).sum::<usize>());
        }
        for (o, l) in live.drain(..) {
            a.release(o, l);
        }
        assert_eq!(a.largest_free(), a.budget());
    }

    /// A request that does not fit waits for a range another thread gives
    /// back; without a wait, or past it, it fails with the typed error; a
    /// request larger than the budget fails at once even with a wait.
    #[test]
    fn shared_budget_waits_for_returned_ranges() {
        let b = std::sync::Arc::new(SharedBudget::new(4 * ALIGN).unwrap());
        let held = b.take(3 * ALIGN, Duration::ZERO).unwrap();
        assert!(matches!(b.take(2 * ALIGN, Duration::ZERO), Err(VramError::OutOfBudget(_))));
        let clock = Instant::now();
        assert!(matches!(b.take(2 * ALIGN, Duration::from_millis(50)), Err(VramError::OutOfBudget(_))));
        assert!(clock.elapsed() >= Duration::from_millis(50), "gave up before the wait was over");
        let clock = Instant::now();
        assert!(matches!(b.take(5 * ALIGN, Duration::from_secs(10)), Err(VramError::OutOfBudget(_))));
        assert!(clock.elapsed() < Duration::from_secs(5), "waited for a request that can never fit");

        let giver = {
            let b = b.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                b.give(held.0, held.1);
            })
        };
        let clock = Instant::now();
        let got = b.take(2 * ALIGN, Duration::from_secs(30)).unwrap();
        assert!(clock.elapsed() >= Duration::from_millis(90), "took the range before it was given back");
        giver.join().unwrap();
        assert_eq!((got.1, b.used()), (2 * ALIGN, 2 * ALIGN));
        b.give(got.0, got.1);
        assert_eq!(b.largest_free(), b.budget());
    }

    #[test]
    fn budget_from_free_memory_margin_and_cap() {
        let c = VramConfig { cap: Some(16 << 30), margin: 1 << 30, ..Default::default() };
        assert_eq!(c.budget(140 << 30), 16 << 30);
        assert_eq!(c.budget(10 << 30), 9 << 30);
        assert_eq!(c.budget(1 << 29), 0);
        assert_eq!(VramConfig::default().budget(100 << 30), 98 << 30);
    }
}
