//! [`HostPool`] and [`HostLanes`]: host work (vanilla checks, synthesis,
//! verification) of urgent proofs ahead of the rest on the same cores.
//!
//! The GPU workers already take turns by priority ([`crate::PriorityGate`]),
//! but a proof's host work ran on rayon's one global pool, in equal shares
//! with every other proof in flight: a WinningPoSt's synthesis behind a
//! 32 GiB C2 partition's got half the cores at best. Here each class of
//! work has its own rayon pool and the background pool's threads run at a
//! higher nice value, so while both have work the kernel's scheduler gives
//! the urgent threads most of the CPU (CFS weights: nice 0 is 1024, nice 10
//! is 110, so ~90 % to the urgent side), and when the urgent pool is idle
//! the background pool has every core. No thread is parked and nothing is
//! preempted by hand: both pools are as wide as the machine.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A rayon pool whose threads run at one nice value (Linux; elsewhere the
/// value is not applied and [`HostPool::nice`] says 0).
pub struct HostPool {
    pool: rayon::ThreadPool,
    nice: i32,
    /// Threads on which the nice value could not be applied.
    refused: Arc<AtomicUsize>,
}

impl std::fmt::Debug for HostPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostPool").field("threads", &self.threads()).field("nice", &self.nice).finish()
    }
}

/// Why a pool could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HostPoolError {
    /// rayon could not start the threads.
    #[error("starting the {name} host threads: {reason}")]
    Start {
        /// The pool's name.
        name: String,
        /// rayon's message.
        reason: String,
    },
    /// Nice values go from 0 (the process' own, normal priority) to 19.
    #[error("nice value {0} out of range (0 to 19: only lowering a thread's priority needs no privilege)")]
    Nice(i32),
}

impl HostPool {
    /// `threads` threads (0: one per core) named `<name>-<i>`, each at nice
    /// value `nice` (0..=19; raising a priority would need privileges, so
    /// only the range at or below the process' own is offered).
    pub fn new(name: &str, threads: usize, nice: i32) -> Result<Self, HostPoolError> {
        if !(0..=19).contains(&nice) {
            return Err(HostPoolError::Nice(nice));
        }
        let refused = Arc::new(AtomicUsize::new(0));
        let r = refused.clone();
        let prefix = name.to_string();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{prefix}-{i}"))
            .start_handler(move |_| {
                if nice != 0 && !set_thread_nice(nice) {
                    r.fetch_add(1, Ordering::Relaxed);
                }
            })
            .build()
            .map_err(|e| HostPoolError::Start { name: name.to_string(), reason: e.to_string() })?;
        // The start handlers run as the threads come up; one trip through
        // every thread makes sure they all have before `nice()` is read.
        pool.broadcast(|_| ());
        let failed = refused.load(Ordering::Relaxed);
        if failed > 0 {
            log::warn!("c2-sched: {name}: nice {nice} not applied on {failed} thread(s): host work is not prioritised");
        }
        let applied = if failed == 0 && cfg!(target_os = "linux") { nice } else { 0 };
        Ok(Self { pool, nice: applied, refused })
    }

    /// Runs `f` on this pool: `f` and every rayon task it spawns run on the
    /// pool's threads; the caller waits.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// The pool's threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The nice value its threads run at (0 where it could not be applied).
    pub fn nice(&self) -> i32 {
        if self.refused.load(Ordering::Relaxed) > 0 {
            0
        } else {
            self.nice
        }
    }

    /// Each thread's nice value as the kernel reports it (Linux; `None`
    /// elsewhere): what a test or an operator checks.
    pub fn observed_nice(&self) -> Option<Vec<i32>> {
        let mut seen = Vec::new();
        for v in self.pool.broadcast(|_| thread_nice()) {
            seen.push(v?);
        }
        Some(seen)
    }
}

/// The two pools a service runs host work on: urgent proofs (priority at or
/// above `urgent_from`: WindowPoSt and WinningPoSt as Curio sends them) on
/// threads at the process' own priority, the rest at `background_nice`.
#[derive(Clone, Debug)]
pub struct HostLanes {
    /// Host work of urgent proofs.
    pub urgent: Arc<HostPool>,
    /// Host work of every other proof.
    pub background: Arc<HostPool>,
    /// The lowest priority that counts as urgent.
    pub urgent_from: i32,
}

impl HostLanes {
    /// Both pools `threads` wide (0: one thread per core each).
    pub fn new(threads: usize, background_nice: i32, urgent_from: i32) -> Result<Self, HostPoolError> {
        Ok(Self {
            urgent: Arc::new(HostPool::new("c2-host-urgent", threads, 0)?),
            background: Arc::new(HostPool::new("c2-host-background", threads, background_nice)?),
            urgent_from,
        })
    }

    /// The pool for work of `priority`.
    pub fn for_priority(&self, priority: i32) -> &Arc<HostPool> {
        if priority >= self.urgent_from {
            &self.urgent
        } else {
            &self.background
        }
    }
}

/// Runs `f` on `pool` when there is one, else here (rayon's global pool).
pub fn on_host_pool<R: Send>(pool: Option<&HostPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Sets the calling thread's nice value; false when the kernel refused.
#[cfg(target_os = "linux")]
fn set_thread_nice(nice: i32) -> bool {
    // SAFETY: gettid has no preconditions; setpriority with PRIO_PROCESS
    // and a thread id changes only that thread's nice value on Linux
    // (setpriority(2), NOTES) and reports failure through its result.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn set_thread_nice(_nice: i32) -> bool {
    false
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
fn thread_nice() -> Option<i32> {
    // SAFETY: as above; getpriority may legitimately return -1, so errno
    // is cleared first and read after to tell an error from a value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        *libc::__errno_location() = 0;
        let v = libc::getpriority(libc::PRIO_PROCESS, tid);
        (*libc::__errno_location() == 0).then_some(v)
    }
}

#[cfg(not(target_os = "linux"))]
fn thread_nice() -> Option<i32> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn background_threads_run_at_their_nice_value_and_urgent_ones_at_ours() {
        let lanes = HostLanes::new(2, 10, 2).unwrap();
        assert_eq!(lanes.urgent.threads(), 2);
        assert_eq!(lanes.background.nice(), 10);
        assert_eq!(lanes.urgent.nice(), 0);
        if cfg!(target_os = "linux") {
            assert_eq!(lanes.background.observed_nice().unwrap(), vec![10, 10]);
            // The test runner's own nice value (0 unless run under `nice`).
            let ours = thread_nice().unwrap();
            assert_eq!(lanes.urgent.observed_nice().unwrap(), vec![ours, ours]);
        }
        // From `urgent_from` (2) up the work is urgent; below it, not.
        assert!(Arc::ptr_eq(lanes.for_priority(3), &lanes.urgent));
        assert!(Arc::ptr_eq(lanes.for_priority(2), &lanes.urgent));
        assert!(Arc::ptr_eq(lanes.for_priority(1), &lanes.background));
        assert!(Arc::ptr_eq(lanes.for_priority(0), &lanes.background));
        // Work sent to a pool runs on its threads, nested rayon work too.
        let names: Vec<String> = on_host_pool(Some(&lanes.background), || {
            use rayon::prelude::*;
            (0..64).into_par_iter().map(|_| std::thread::current().name().unwrap_or("").to_string()).collect()
        });
        assert!(names.iter().all(|n| n.starts_with("c2-host-background-")), "{names:?}");
        assert_eq!(on_host_pool(None, || 7), 7);
    }

    #[test]
    fn out_of_range_nice_values_are_refused() {
        assert!(matches!(HostPool::new("x", 1, -1), Err(HostPoolError::Nice(-1))));
        assert!(matches!(HostPool::new("x", 1, 20), Err(HostPoolError::Nice(20))));
    }
}
