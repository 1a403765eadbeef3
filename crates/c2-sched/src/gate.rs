//! [`PriorityGate`]: exclusive turns at one worker, by priority.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::budget::{first_in_line, AdmissionError};
use crate::cancel::CancelToken;

/// Exclusive turns at one worker (e.g. a GPU worker shared by every proof in
/// flight): among waiters the highest priority goes first, equal priorities
/// in arrival order.
///
/// A proof brings its next partition to the gate a moment after its
/// previous turn ends (its consumer thread hands back the result, then takes
/// the next synthesized partition). A lower-priority waiter that is already
/// there would win that race every time and the priorities would only
/// alternate; so after a turn of priority `p` ends, waiters below `p` wait a
/// further `grace` for a waiter of `p` or above. With equal priorities there
/// is no grace, so a single-priority workload is unaffected.
#[derive(Debug)]
pub struct PriorityGate {
    state: Mutex<GateState>,
    changed: Condvar,
    grace: Duration,
}

#[derive(Debug, Default)]
struct GateState {
    busy: bool,
    next_ticket: u64,
    waiting: Vec<(i32, u64)>,
    /// Priority of the last turn and when it ended.
    last: Option<(i32, Instant)>,
}

/// A turn at a [`PriorityGate`]; the next waiter goes when it is dropped.
#[derive(Debug)]
pub struct Turn<'a> {
    gate: &'a PriorityGate,
    priority: i32,
}

impl PriorityGate {
    /// A free gate. `grace`: how long a lower priority defers to the
    /// priority of the turn that just ended (10 ms costs at most 10 ms per
    /// turn, and only while a higher-priority proof has nothing ready).
    pub fn new(grace: Duration) -> Self {
        Self { state: Mutex::new(GateState::default()), changed: Condvar::new(), grace }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a turn at `priority`; `cancel` set while waiting gives
    /// [`AdmissionError::Cancelled`].
    pub fn enter(&self, priority: i32, cancel: Option<&CancelToken>) -> Result<Turn<'_>, AdmissionError> {
        // Nothing settles the wait: it ends with a turn or a cancel.
        self.enter_unless(priority, cancel, &|| false)?.ok_or(AdmissionError::Cancelled)
    }

    /// [`PriorityGate::enter`] for a waiter whose work another turn may do
    /// meanwhile (a batch that takes its partitions): leaves the line
    /// without a turn (`Ok(None)`) once `settled()` holds, checked at each
    /// wake (a turn's end, and every 20 ms), so it need not wait for the
    /// turns ahead of it only to find nothing left (a 32 GiB batch turn:
    /// ~20 s). A turn, once free for it, is taken first.
    pub fn enter_unless(
        &self,
        priority: i32,
        cancel: Option<&CancelToken>,
        settled: &dyn Fn() -> bool,
    ) -> Result<Option<Turn<'_>>, AdmissionError> {
        let mut st = self.lock();
        let me = (priority, st.next_ticket);
        st.next_ticket += 1;
        st.waiting.push(me);
        let result = loop {
            let deferred = st.last.and_then(|(p, ended)| {
                let left = self.grace.saturating_sub(ended.elapsed());
                (p > priority && !left.is_zero()).then_some(left)
            });
            if !st.busy && first_in_line(&st.waiting, me) && deferred.is_none() {
                st.busy = true;
                break Ok(Some(Turn { gate: self, priority }));
            }
            if cancel.is_some_and(CancelToken::is_cancelled) {
                break Err(AdmissionError::Cancelled);
            }
            if settled() {
                break Ok(None);
            }
            // Timed: neither a cancel nor the end of a grace notifies.
            let wait = deferred.unwrap_or(Duration::from_millis(20)).min(Duration::from_millis(20));
            st = self.changed.wait_timeout(st, wait).unwrap_or_else(|p| p.into_inner()).0;
        };
        st.waiting.retain(|&w| w != me);
        self.changed.notify_all();
        result
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut st = self.gate.lock();
        st.busy = false;
        st.last = Some((self.priority, Instant::now()));
        drop(st);
        self.gate.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Runs `turns` turns per (priority, start delay) thread, each holding
    /// the gate `hold` and coming back after `gap`; returns the priorities in
    /// the order the turns were taken.
    fn order(gate: Arc<PriorityGate>, threads: &[(i32, u64, usize)], hold: u64, gap: u64) -> Vec<i32> {
        let log = Arc::new(Mutex::new(Vec::new()));
        std::thread::scope(|s| {
            for &(priority, delay, turns) in threads {
                let (gate, log) = (gate.clone(), log.clone());
                s.spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay));
                    for _ in 0..turns {
                        let turn = gate.enter(priority, None).unwrap();
                        log.lock().unwrap().push(priority);
                        std::thread::sleep(Duration::from_millis(hold));
                        drop(turn);
                        std::thread::sleep(Duration::from_millis(gap));
                    }
                });
            }
        });
        let v = log.lock().unwrap().clone();
        v
    }

    /// Whether the turns of `priority` in `order` are one unbroken run.
    fn one_run(order: &[i32], priority: i32) -> bool {
        let at: Vec<usize> = (0..order.len()).filter(|&i| order[i] == priority).collect();
        at.windows(2).all(|w| w[1] == w[0] + 1)
    }

    #[test]
    fn a_higher_priority_keeps_the_gate_while_it_has_work() {
        // Priority 0 starts first; priority 5 arrives while 0 holds the gate
        // and, coming back 1 ms after each turn, takes its 3 turns in a row
        // (usually [0, 5, 5, 5, 0, 0]; the run is what matters).
        let gate = Arc::new(PriorityGate::new(Duration::from_millis(200)));
        let order = order(gate, &[(0, 0, 3), (5, 20, 3)], 60, 1);
        assert_eq!(order.len(), 6);
        assert!(one_run(&order, 5), "{order:?}");
    }

    #[test]
    fn without_a_grace_the_priorities_alternate() {
        // The race the grace exists for: when priority 5 comes back 60 ms
        // after each turn, the waiting lower priority takes the turns in
        // between.
        let gate = Arc::new(PriorityGate::new(Duration::ZERO));
        let order = order(gate, &[(0, 0, 3), (5, 20, 3)], 60, 60);
        assert!(!one_run(&order, 5), "{order:?}");
    }

    #[test]
    fn equal_priorities_go_in_arrival_order_and_cancel_stops_a_wait() {
        let gate = PriorityGate::new(Duration::from_millis(50));
        let first = gate.enter(1, None).unwrap();
        let token = CancelToken::new();
        token.cancel();
        assert_eq!(gate.enter(1, Some(&token)).unwrap_err(), AdmissionError::Cancelled);
        drop(first);
        // No grace between equal priorities: the next turn is immediate.
        let t = Instant::now();
        drop(gate.enter(1, None).unwrap());
        assert!(t.elapsed() < Duration::from_millis(40), "{:?}", t.elapsed());
    }

    /// A waiter whose work was done by the turn ahead of it leaves the line
    /// while that turn still holds the gate; a free turn is taken even when
    /// the waiter is settled, and the one that left is out of the line.
    #[test]
    fn a_settled_waiter_leaves_the_line_without_a_turn() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let gate = PriorityGate::new(Duration::ZERO);
        let held = gate.enter(1, None).unwrap();
        let settled = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter =
                s.spawn(|| gate.enter_unless(1, None, &|| settled.load(Ordering::SeqCst)).map(|t| t.is_some()));
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiter.is_finished(), "neither a turn nor settled yet");
            settled.store(true, Ordering::SeqCst);
            assert_eq!(waiter.join().unwrap(), Ok(false));
        });
        assert!(gate.lock().waiting.is_empty());
        drop(held);
        assert!(gate.enter_unless(1, None, &|| true).unwrap().is_some());
    }
}
