//! Host-memory admission: a byte budget shared across pipelines, served by
//! priority, then arrival.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::cancel::CancelToken;

/// A byte budget of host memory, shared (`Arc`) by the pipelines that
/// should not together exceed it. Waiters are served by priority, then in
/// arrival order: a request is admitted only when it fits and no waiter
/// ahead of it is still waiting (so a large urgent item is not starved by a
/// stream of small ones).
#[derive(Debug)]
pub struct HostBudget {
    total: usize,
    state: Mutex<BudgetState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct BudgetState {
    used: usize,
    peak: usize,
    /// Bytes of the settled permits (items that exist), and their peak.
    settled: usize,
    settled_peak: usize,
    next_ticket: u64,
    /// Waiting requests: (priority, ticket).
    waiting: Vec<(i32, u64)>,
}

/// True when no waiter in `waiting` (priority, ticket) comes before `me`:
/// higher priority first, then lower ticket (earlier arrival).
pub(crate) fn first_in_line(waiting: &[(i32, u64)], me: (i32, u64)) -> bool {
    !waiting.iter().any(|&(p, t)| (p, std::cmp::Reverse(t)) > (me.0, std::cmp::Reverse(me.1)))
}

/// Bytes held from a [`HostBudget`]; returned on drop.
#[derive(Debug)]
pub struct HostPermit {
    budget: Arc<HostBudget>,
    bytes: usize,
    /// Whether `bytes` is the item's real size ([`HostPermit::settle`]) or
    /// an estimate made before it existed.
    settled: bool,
}

impl HostBudget {
    /// A budget of `total` bytes.
    pub fn new(total: usize) -> Arc<Self> {
        Arc::new(Self { total, state: Mutex::new(BudgetState::default()), freed: Condvar::new() })
    }

    /// The budget.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.lock().used
    }

    /// The most bytes ever reserved or held at once (what admission
    /// bounded: estimates of items being made count in full).
    pub fn peak(&self) -> usize {
        self.lock().peak
    }

    /// The most bytes ever held at once by settled permits: the measured
    /// size of the items that existed together (synthesized, queued or
    /// being proved), estimates left out.
    pub fn settled_peak(&self) -> usize {
        self.lock().settled_peak
    }

    /// Requests waiting for room now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until `bytes` fit, then holds them (priority 0). Errors: more
    /// than the whole budget ([`AdmissionError::TooLarge`], waiting would
    /// never end), or `cancel` set while waiting ([`AdmissionError::Cancelled`]).
    pub fn acquire(self: &Arc<Self>, bytes: usize, cancel: Option<&CancelToken>) -> Result<HostPermit, AdmissionError> {
        self.acquire_with_priority(bytes, 0, cancel)
    }

    /// [`HostBudget::acquire`] with a priority: among waiting requests,
    /// higher priorities are admitted first, equal ones in arrival order.
    pub fn acquire_with_priority(
        self: &Arc<Self>,
        bytes: usize,
        priority: i32,
        cancel: Option<&CancelToken>,
    ) -> Result<HostPermit, AdmissionError> {
        if bytes > self.total {
            return Err(AdmissionError::TooLarge { requested: bytes, budget: self.total });
        }
        let mut st = self.lock();
        let me = (priority, st.next_ticket);
        st.next_ticket += 1;
        st.waiting.push(me);
        let result = loop {
            if st.used + bytes <= self.total && first_in_line(&st.waiting, me) {
                st.used += bytes;
                st.peak = st.peak.max(st.used);
                break Ok(HostPermit { budget: self.clone(), bytes, settled: false });
            }
            if cancel.is_some_and(CancelToken::is_cancelled) {
                break Err(AdmissionError::Cancelled);
            }
            // Timed wait: a cancel does not notify the condition variable.
            st = self.freed.wait_timeout(st, Duration::from_millis(20)).unwrap_or_else(|p| p.into_inner()).0;
        };
        st.waiting.retain(|&w| w != me);
        // The line moved: the next waiter may fit now.
        self.freed.notify_all();
        result
    }
}

impl HostPermit {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Holds `bytes` from now on: the item's real size, known once it
    /// exists. Less than before returns the difference at once (waiters may
    /// fit now); more is recorded without waiting, since the memory is in
    /// use already, and counts toward the peak (so a low estimate shows as
    /// `peak() > total()` rather than hiding).
    pub fn settle(&mut self, bytes: usize) {
        let mut st = self.budget.lock();
        st.used = st.used - self.bytes + bytes;
        st.peak = st.peak.max(st.used);
        st.settled = st.settled - if self.settled { self.bytes } else { 0 } + bytes;
        st.settled_peak = st.settled_peak.max(st.settled);
        self.settled = true;
        drop(st);
        if bytes < self.bytes {
            self.budget.freed.notify_all();
        }
        self.bytes = bytes;
    }
}

impl Drop for HostPermit {
    fn drop(&mut self) {
        let mut st = self.budget.lock();
        st.used -= self.bytes;
        if self.settled {
            st.settled -= self.bytes;
        }
        drop(st);
        self.budget.freed.notify_all();
    }
}

/// Why an item was not admitted.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum AdmissionError {
    /// The item alone needs more than the budget.
    #[error("an item of {requested} bytes exceeds the host memory budget of {budget} bytes")]
    TooLarge {
        /// Bytes the item needs.
        requested: usize,
        /// The whole budget.
        budget: usize,
    },
    /// Cancelled while waiting for room.
    #[error("cancelled while waiting for host memory")]
    Cancelled,
}
