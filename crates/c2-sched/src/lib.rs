//! The partition scheduler: synthesis of partition `k+1` overlaps proving of
//! partition `k`.
//!
//! A [`Pipeline`] runs `synthesis_workers` producer threads that build work
//! items (synthesized partitions) in index order and push them into a bounded
//! queue; one or more consumers ("provers": a CPU prover today, one per GPU
//! later) pull from it. The queue bound plus the number of workers is the
//! memory admission rule: at most `synthesis_workers + queue_depth + provers`
//! items exist at once, whatever the number of partitions.
//!
//! Across pipelines (several proofs in flight), a shared [`HostBudget`]
//! admits an item only when its host bytes fit: a producer waits for room
//! before it starts, and the bytes come back when the consumer is done with
//! the item; waiting items are admitted by [`PipelineConfig::priority`], then
//! in arrival order. A [`CancelToken`] stops a run between items.
//!
//! The pipeline knows nothing about circuits: items and results are generic,
//! so the same scheduler serves proofs, benchmarks and tests.
//!
//! ```
//! use c2_sched::{Pipeline, PipelineConfig};
//! let squares = Pipeline::new(PipelineConfig::default())
//!     .run(5, |k| Ok::<_, String>(k * k), vec![|_k: usize, x: usize| Ok::<_, String>(x + 1)])
//!     .unwrap();
//! assert_eq!(squares.results, vec![1, 2, 5, 10, 17]);
//! ```
#![deny(missing_docs)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;

mod gate;
pub use gate::{PriorityGate, Turn};

/// Pipeline shape.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Threads that produce items (synthesize partitions) concurrently.
    /// Default 1: one partition ahead of the prover is enough to hide
    /// synthesis when proving a partition takes longer than synthesizing it.
    pub synthesis_workers: usize,
    /// Finished items that may wait for a prover. Default 1.
    pub queue_depth: usize,
    /// Host memory shared by every pipeline given the same budget (e.g. all
    /// proofs of a process). `None`: no accounting.
    pub host_budget: Option<Arc<HostBudget>>,
    /// Host bytes one item holds from the start of its production until its
    /// consumer returns, for [`Pipeline::run`] (a 32 GiB partition's
    /// synthesized vectors are ~17 GB). 0: not counted.
    pub item_bytes: usize,
    /// Stops the run between items when cancelled.
    pub cancel: Option<CancelToken>,
    /// Admission priority of this run's items on the shared `host_budget`:
    /// while items wait for room, higher priorities are admitted first (then
    /// first come, first served). Default 0.
    pub priority: i32,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self { synthesis_workers: 1, queue_depth: 1, host_budget: None, item_bytes: 0, cancel: None, priority: 0 }
    }
}

/// A cancellation flag shared between the caller and running pipelines.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: running pipelines start no new item and return
    /// [`SchedError::Cancelled`].
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

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
    next_ticket: u64,
    /// Waiting requests: (priority, ticket).
    waiting: Vec<(i32, u64)>,
}

/// True when no waiter in `waiting` (priority, ticket) comes before `me`:
/// higher priority first, then lower ticket (earlier arrival).
fn first_in_line(waiting: &[(i32, u64)], me: (i32, u64)) -> bool {
    !waiting.iter().any(|&(p, t)| (p, std::cmp::Reverse(t)) > (me.0, std::cmp::Reverse(me.1)))
}

/// Bytes held from a [`HostBudget`]; returned on drop.
#[derive(Debug)]
pub struct HostPermit {
    budget: Arc<HostBudget>,
    bytes: usize,
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

    /// The most bytes ever held at once (host RAM of the items in flight).
    pub fn peak(&self) -> usize {
        self.lock().peak
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
                break Ok(HostPermit { budget: self.clone(), bytes });
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

impl Drop for HostPermit {
    fn drop(&mut self) {
        self.budget.lock().used -= self.bytes;
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

/// Why a pipeline stopped.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchedError<E> {
    /// A producer or consumer returned an error for item `index`.
    #[error("job {index}: {error}")]
    Job {
        /// The item's index.
        index: usize,
        /// The error it returned.
        error: E,
    },
    /// A worker thread panicked.
    #[error("a pipeline worker panicked: {0}")]
    Panic(String),
    /// No consumer was given.
    #[error("a pipeline needs at least one consumer")]
    NoConsumer,
    /// The run was cancelled through its [`CancelToken`].
    #[error("cancelled")]
    Cancelled,
    /// An item could never fit the host memory budget.
    #[error(transparent)]
    Admission(AdmissionError),
}

/// Wall-clock figures of one item's passage through the pipeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobTiming {
    /// Time spent producing (synthesizing) it.
    pub produce: Duration,
    /// Time it waited in the queue for a consumer.
    pub queue_wait: Duration,
    /// Time the consumer (prover) spent on it.
    pub consume: Duration,
    /// Which consumer took it.
    pub consumer: usize,
}

/// The results of a run, in index order, with per-item timings.
#[derive(Debug)]
pub struct PipelineOutput<O> {
    /// One result per index.
    pub results: Vec<O>,
    /// One timing per index.
    pub timings: Vec<JobTiming>,
    /// Wall time of the whole run.
    pub wall: Duration,
}

/// A bounded producer/consumer pipeline (see the crate docs).
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    config: PipelineConfig,
}

struct Produced<I> {
    index: usize,
    item: I,
    produce: Duration,
    ready_at: Instant,
    /// Host bytes held until the consumer drops them (with the item, or
    /// earlier).
    permit: Option<HostPermit>,
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

impl Pipeline {
    /// A pipeline with this configuration.
    pub fn new(config: PipelineConfig) -> Self {
        Self { config }
    }

    /// Runs items `0..jobs`: `produce(k)` on the synthesis workers, then
    /// `consumers[c](k, item)` on whichever consumer is free. Stops at the
    /// first error (remaining items are not started) and returns it. Every
    /// item costs `config.item_bytes` of the host budget, if any.
    pub fn run<I, O, E, P, C>(
        &self,
        jobs: usize,
        produce: P,
        consumers: Vec<C>,
    ) -> Result<PipelineOutput<O>, SchedError<E>>
    where
        I: Send,
        O: Send,
        E: Send,
        P: Fn(usize) -> Result<I, E> + Sync,
        C: FnMut(usize, I) -> Result<O, E> + Send,
    {
        let bytes = self.config.item_bytes;
        self.run_admitted(jobs, |_| bytes, produce, consumers)
    }

    /// [`Pipeline::run`] with a host cost per item: item k holds `cost(k)`
    /// bytes of `config.host_budget` from before its production until its
    /// consumer returns.
    pub fn run_admitted<I, O, E, P, C>(
        &self,
        jobs: usize,
        cost: impl Fn(usize) -> usize + Sync,
        produce: P,
        consumers: Vec<C>,
    ) -> Result<PipelineOutput<O>, SchedError<E>>
    where
        I: Send,
        O: Send,
        E: Send,
        P: Fn(usize) -> Result<I, E> + Sync,
        C: FnMut(usize, I) -> Result<O, E> + Send,
    {
        let consumers = consumers
            .into_iter()
            .map(|mut consume| {
                move |k: usize, item: I, permit: Option<HostPermit>| {
                    let r = consume(k, item);
                    drop(permit);
                    r
                }
            })
            .collect();
        self.run_with_permits(jobs, cost, produce, consumers)
    }

    /// [`Pipeline::run_admitted`], handing each consumer its item's permit
    /// (`None` without a budget): a consumer that frees the item's host
    /// memory early (a GPU worker, once the item is on the device) drops the
    /// permit then, so the next item is admitted sooner; otherwise the
    /// permit returns its bytes when the consumer drops it.
    pub fn run_with_permits<I, O, E, P, C>(
        &self,
        jobs: usize,
        cost: impl Fn(usize) -> usize + Sync,
        produce: P,
        consumers: Vec<C>,
    ) -> Result<PipelineOutput<O>, SchedError<E>>
    where
        I: Send,
        O: Send,
        E: Send,
        P: Fn(usize) -> Result<I, E> + Sync,
        C: FnMut(usize, I, Option<HostPermit>) -> Result<O, E> + Send,
    {
        if consumers.is_empty() {
            return Err(SchedError::NoConsumer);
        }
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let admission: Mutex<Option<AdmissionError>> = Mutex::new(None);
        let cancel = self.config.cancel.as_ref();
        let budget = self.config.host_budget.as_ref();
        let cancelled = || cancel.is_some_and(CancelToken::is_cancelled);
        let (tx, rx) = bounded::<Produced<I>>(self.config.queue_depth);
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<(usize, Result<(O, JobTiming), E>)>();

        let scope_result = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for w in 0..self.config.synthesis_workers.max(1) {
                let (tx, done_tx) = (tx.clone(), done_tx.clone());
                let (next, stop, produce, cost, admission) = (&next, &stop, &produce, &cost, &admission);
                let h = std::thread::Builder::new()
                    .name(format!("c2-sched-synth-{w}"))
                    .spawn_scoped(s, move || loop {
                        if stop.load(Ordering::Relaxed) || cancelled() {
                            break;
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= jobs {
                            break;
                        }
                        let priority = self.config.priority;
                        let permit = match budget.map(|b| b.acquire_with_priority(cost(index), priority, cancel)).transpose() {
                            Ok(p) => p,
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                *admission.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                                break;
                            }
                        };
                        let t = Instant::now();
                        match produce(index) {
                            Ok(item) => {
                                let p = Produced {
                                    index,
                                    item,
                                    produce: t.elapsed(),
                                    ready_at: Instant::now(),
                                    permit,
                                };
                                if tx.send(p).is_err() {
                                    break;
                                }
                            }
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                let _ = done_tx.send((index, Err(e)));
                                break;
                            }
                        }
                    })
                    .expect("spawning a scheduler thread");
                handles.push(h);
            }
            drop(tx);
            for (ci, mut consume) in consumers.into_iter().enumerate() {
                let (rx, done_tx, stop) = (rx.clone(), done_tx.clone(), &stop);
                let h = std::thread::Builder::new()
                    .name(format!("c2-sched-prove-{ci}"))
                    .spawn_scoped(s, move || {
                        for p in rx.iter() {
                            if stop.load(Ordering::Relaxed) || cancelled() {
                                break;
                            }
                            let queue_wait = p.ready_at.elapsed();
                            let t = Instant::now();
                            let Produced { index, item, produce, permit, .. } = p;
                            let r = consume(index, item, permit).map(|o| {
                                let timing = JobTiming {
                                    produce,
                                    queue_wait,
                                    consume: t.elapsed(),
                                    consumer: ci,
                                };
                                (o, timing)
                            });
                            if r.is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                            if done_tx.send((index, r)).is_err() {
                                break;
                            }
                        }
                    })
                    .expect("spawning a scheduler thread");
                handles.push(h);
            }
            drop(rx);
            drop(done_tx);
            let mut panic = None;
            for h in handles {
                if let Err(p) = h.join() {
                    stop.store(true, Ordering::Relaxed);
                    panic = Some(panic_message(p));
                }
            }
            panic
        });
        if let Some(msg) = scope_result {
            return Err(SchedError::Panic(msg));
        }

        let mut slots: Vec<Option<(O, JobTiming)>> = (0..jobs).map(|_| None).collect();
        let mut first_error: Option<(usize, E)> = None;
        for (index, r) in done_rx.iter() {
            match r {
                Ok(v) => slots[index] = Some(v),
                Err(error) => {
                    if first_error.as_ref().is_none_or(|(i, _)| index < *i) {
                        first_error = Some((index, error));
                    }
                }
            }
        }
        if let Some((index, error)) = first_error {
            return Err(SchedError::Job { index, error });
        }
        match admission.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(AdmissionError::Cancelled) => return Err(SchedError::Cancelled),
            Some(e) => return Err(SchedError::Admission(e)),
            None => {}
        }
        if cancelled() && slots.iter().any(Option::is_none) {
            return Err(SchedError::Cancelled);
        }
        let mut results = Vec::with_capacity(jobs);
        let mut timings = Vec::with_capacity(jobs);
        for (index, slot) in slots.into_iter().enumerate() {
            match slot {
                Some((o, t)) => {
                    results.push(o);
                    timings.push(t);
                }
                // Only reachable if a worker stopped without an error or a
                // panic, which the loops above do not do.
                None => return Err(SchedError::Panic(format!("job {index} produced no result"))),
            }
        }
        Ok(PipelineOutput { results, timings, wall: start.elapsed() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    #[test]
    fn results_come_back_in_index_order_with_many_workers() {
        let p = Pipeline::new(PipelineConfig { synthesis_workers: 3, queue_depth: 2, ..Default::default() });
        let consumers: Vec<_> = (0..2)
            .map(|_| {
                |k: usize, x: usize| {
                    std::thread::sleep(Duration::from_millis((k % 3) as u64));
                    Ok::<_, String>(x * 10)
                }
            })
            .collect();
        let out = p.run(20, Ok, consumers).unwrap();
        assert_eq!(out.results, (0..20).map(|k| k * 10).collect::<Vec<_>>());
        assert_eq!(out.timings.len(), 20);
    }

    #[test]
    fn synthesis_overlaps_proving_and_memory_stays_bounded() {
        // Live items never exceed workers + queue depth + consumers.
        let live = AtomicUsize::new(0);
        let peak = Mutex::new(0usize);
        let cfg = PipelineConfig { synthesis_workers: 2, queue_depth: 1, ..Default::default() };
        let out = Pipeline::new(cfg)
            .run(
                12,
                |k| {
                    let n = live.fetch_add(1, Ordering::SeqCst) + 1;
                    let mut p = peak.lock().unwrap();
                    *p = (*p).max(n);
                    drop(p);
                    std::thread::sleep(Duration::from_millis(5));
                    Ok::<_, ()>(k)
                },
                vec![|_k, x: usize| {
                    std::thread::sleep(Duration::from_millis(10));
                    live.fetch_sub(1, Ordering::SeqCst);
                    Ok(x)
                }],
            )
            .unwrap();
        assert_eq!(out.results.len(), 12);
        let peak = *peak.lock().unwrap();
        assert!(peak <= 2 + 1 + 1, "peak live items {peak}");
        assert!(peak >= 2, "producers never overlapped the consumer (peak {peak})");
    }

    #[test]
    fn first_error_stops_the_run() {
        let produced = AtomicUsize::new(0);
        let r = Pipeline::new(PipelineConfig::default()).run(
            100,
            |k| {
                produced.fetch_add(1, Ordering::SeqCst);
                if k == 3 { Err(format!("bad {k}")) } else { Ok(k) }
            },
            vec![|_k, x: usize| Ok::<_, String>(x)],
        );
        assert_eq!(r.unwrap_err(), SchedError::Job { index: 3, error: "bad 3".to_string() });
        assert!(produced.load(Ordering::SeqCst) < 100);

        let r = Pipeline::new(PipelineConfig::default()).run(
            5,
            Ok,
            vec![|k, _x: usize| if k == 2 { Err("prover failed") } else { Ok(()) }],
        );
        assert_eq!(r.unwrap_err(), SchedError::Job { index: 2, error: "prover failed" });
    }

    #[test]
    fn worker_panics_become_errors() {
        let r = Pipeline::new(PipelineConfig::default()).run(
            3,
            Ok::<_, ()>,
            vec![|k, _x: usize| {
                if k == 1 {
                    panic!("boom");
                }
                Ok(())
            }],
        );
        assert!(matches!(r, Err(SchedError::Panic(m)) if m.contains("boom")));
    }

    /// Counts live items (produced, not yet consumed) and their peak.
    struct Live {
        now: AtomicUsize,
        peak: AtomicUsize,
    }

    impl Live {
        fn new() -> Self {
            Self { now: AtomicUsize::new(0), peak: AtomicUsize::new(0) }
        }
        fn up(&self) {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(n, Ordering::SeqCst);
        }
        fn down(&self) {
            self.now.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn host_budget_bounds_live_items_across_pipelines() {
        // 25 bytes, 10 per item: at most 2 items alive in all, although two
        // pipelines with 4 workers and queue 4 each would allow 18.
        let budget = HostBudget::new(25);
        let live = Live::new();
        let cfg = PipelineConfig {
            synthesis_workers: 4,
            queue_depth: 4,
            host_budget: Some(budget.clone()),
            item_bytes: 10,
            cancel: None,
            priority: 0,
        };
        std::thread::scope(|s| {
            for _ in 0..2 {
                let (cfg, live) = (cfg.clone(), &live);
                s.spawn(move || {
                    let out = Pipeline::new(cfg)
                        .run(
                            8,
                            |k| {
                                live.up();
                                std::thread::sleep(Duration::from_millis(2));
                                Ok::<_, ()>(k)
                            },
                            vec![|_k, x: usize| {
                                std::thread::sleep(Duration::from_millis(3));
                                live.down();
                                Ok(x)
                            }],
                        )
                        .unwrap();
                    assert_eq!(out.results, (0..8).collect::<Vec<_>>());
                });
            }
        });
        let peak = live.peak.load(Ordering::SeqCst);
        assert!((1..=2).contains(&peak), "peak live items {peak}");
        assert_eq!(budget.used(), 0, "every permit returned");
        assert!(budget.peak() > 0 && budget.peak() <= budget.total(), "peak {}", budget.peak());
    }

    #[test]
    fn a_consumer_that_drops_its_permit_lets_the_next_item_in() {
        // Budget for one item. Consumers that release the permit at once
        // (their item's memory is gone, as a GPU worker's after upload) let
        // the second item be produced and consumed while the first consumer
        // still works: two consumers run at the same time. Holding the
        // permit (run_admitted) keeps it to one.
        let run = |release_early: bool| {
            let live = Live::new();
            let cfg = PipelineConfig { host_budget: Some(HostBudget::new(10)), item_bytes: 10, ..Default::default() };
            let consumer = |_k: usize, x: usize, permit: Option<HostPermit>| {
                assert!(permit.is_some(), "a budget gives every item a permit");
                if release_early {
                    drop(permit);
                }
                live.up();
                std::thread::sleep(Duration::from_millis(150));
                live.down();
                Ok::<_, ()>(x)
            };
            let out = Pipeline::new(cfg).run_with_permits(2, |_| 10, Ok, vec![consumer, consumer]).unwrap();
            assert_eq!(out.results, vec![0, 1]);
            live.peak.load(Ordering::SeqCst)
        };
        assert_eq!(run(true), 2);
        assert_eq!(run(false), 1);
    }

    #[test]
    fn an_item_larger_than_the_budget_is_a_typed_error() {
        let cfg = PipelineConfig { host_budget: Some(HostBudget::new(100)), ..Default::default() };
        let r = Pipeline::new(cfg).run_admitted(
            3,
            |k| if k == 1 { 101 } else { 10 },
            Ok::<_, ()>,
            vec![|_k, x: usize| Ok(x)],
        );
        assert_eq!(r.unwrap_err(), SchedError::Admission(AdmissionError::TooLarge { requested: 101, budget: 100 }));
    }

    #[test]
    fn cancel_stops_between_items() {
        let token = CancelToken::new();
        let consumed = AtomicUsize::new(0);
        let cfg = PipelineConfig { cancel: Some(token.clone()), ..Default::default() };
        let r = Pipeline::new(cfg).run(100, Ok::<_, ()>, vec![|k, x: usize| {
            consumed.fetch_add(1, Ordering::SeqCst);
            if k == 3 {
                token.cancel();
            }
            Ok(x)
        }]);
        assert_eq!(r.unwrap_err(), SchedError::Cancelled);
        assert!(consumed.load(Ordering::SeqCst) < 10, "kept going after cancel");
    }

    #[test]
    fn cancel_while_waiting_for_memory() {
        let budget = HostBudget::new(10);
        let held = budget.acquire(10, None).unwrap();
        let token = CancelToken::new();
        let cfg = PipelineConfig {
            host_budget: Some(budget.clone()),
            item_bytes: 5,
            cancel: Some(token.clone()),
            ..Default::default()
        };
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            token.cancel();
        });
        let r = Pipeline::new(cfg).run(3, Ok::<_, ()>, vec![|_k, x: usize| Ok(x)]);
        canceller.join().unwrap();
        assert_eq!(r.unwrap_err(), SchedError::Cancelled);
        drop(held);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn no_consumer_is_an_error() {
        let consumers: Vec<fn(usize, usize) -> Result<(), ()>> = vec![];
        assert!(matches!(
            Pipeline::default().run(1, Ok, consumers),
            Err(SchedError::NoConsumer)
        ));
    }

    #[test]
    fn waiting_requests_are_admitted_by_priority_then_arrival() {
        let budget = HostBudget::new(10);
        let first = budget.acquire(10, None).unwrap();
        let order = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = [("low", 0), ("high", 5), ("mid", 1), ("low2", 0)]
            .into_iter()
            .enumerate()
            .map(|(n, (label, priority))| {
                let (mine, order) = (budget.clone(), order.clone());
                let h = std::thread::spawn(move || {
                    let permit = mine.acquire_with_priority(10, priority, None).unwrap();
                    order.lock().unwrap().push(label);
                    std::thread::sleep(Duration::from_millis(10));
                    drop(permit);
                });
                // Arrival order is the spawn order: wait until it queued.
                while budget.waiting() < n + 1 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                h
            })
            .collect();
        drop(first);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec!["high", "mid", "low", "low2"]);
        assert_eq!((budget.used(), budget.waiting(), budget.peak()), (0, 0, 10));
    }
}
