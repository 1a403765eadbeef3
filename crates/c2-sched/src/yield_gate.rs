//! [`YieldGate`]: ordinary work steps aside while urgent work runs.

use std::sync::{Condvar, Mutex, MutexGuard};

/// Shared by the workers of one device: an urgent proof holds an
/// [`Urgent`] mark while it runs, and ordinary workers call
/// [`YieldGate::wait_clear`] before each step they queue on the device (a
/// transform, an MSM), so at most the steps already running are ahead of the
/// urgent proof.
///
/// Why: a GPU runs a kernel's blocks on every SM until the kernel ends, and
/// stream priority only orders blocks that wait for an SM. A C2 partition's
/// MSM kernels fill the device for hundreds of ms each; an urgent proof
/// whose kernels come one at a time (host waits between its MSMs) met a new
/// one of them at every step (WinningPoSt 32 GiB under C2 load on an H100:
/// median 2.28 s with priority streams alone, against 0.08 s idle).
#[derive(Debug, Default)]
pub struct YieldGate {
    urgent: Mutex<usize>,
    cleared: Condvar,
}

/// An urgent proof in flight on a [`YieldGate`]'s device; ordinary work
/// resumes when the last one is dropped.
#[derive(Debug)]
pub struct Urgent<'a> {
    gate: &'a YieldGate,
}

impl YieldGate {
    /// A gate with no urgent work in flight.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.urgent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks urgent work in flight until the mark is dropped.
    pub fn urgent(&self) -> Urgent<'_> {
        *self.lock() += 1;
        Urgent { gate: self }
    }

    /// How many urgent marks are held now.
    pub fn urgent_in_flight(&self) -> usize {
        *self.lock()
    }

    /// Returns at once when no urgent work is in flight, else when the last
    /// urgent mark is dropped.
    pub fn wait_clear(&self) {
        let mut n = self.lock();
        while *n > 0 {
            n = self.cleared.wait(n).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Urgent<'_> {
    fn drop(&mut self) {
        let mut n = self.gate.lock();
        *n -= 1;
        if *n == 0 {
            self.gate.cleared.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// Ordinary work passes a clear gate at once, waits while any urgent
    /// mark is held (two overlapping ones: until both are dropped), and
    /// every waiter resumes when the last goes.
    #[test]
    fn ordinary_work_waits_while_urgent_work_runs() {
        let gate = YieldGate::new();
        gate.wait_clear();
        let first = gate.urgent();
        let second = gate.urgent();
        assert_eq!(gate.urgent_in_flight(), 2);
        let resumed = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        gate.wait_clear();
                        assert!(resumed.load(Ordering::SeqCst), "resumed before the last mark went");
                    })
                })
                .collect();
            std::thread::sleep(Duration::from_millis(50));
            drop(first);
            std::thread::sleep(Duration::from_millis(50));
            assert!(waiters.iter().all(|w| !w.is_finished()), "one mark is still held");
            resumed.store(true, Ordering::SeqCst);
            drop(second);
            for w in waiters {
                w.join().unwrap();
            }
        });
        assert_eq!(gate.urgent_in_flight(), 0);
        gate.wait_clear();
    }
}
