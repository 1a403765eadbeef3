//! The bounded producer/consumer pipeline.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;

use crate::budget::{AdmissionError, HostBudget, HostPermit};
use crate::cancel::CancelToken;
use crate::host::{on_host_pool, HostPool};

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
    /// The rayon pool the producers' work runs on (`produce(k)` and every
    /// parallel task it spawns); `None`: rayon's global pool. A service
    /// gives urgent proofs [`HostLanes::urgent`](crate::HostLanes) and the
    /// rest the background pool, so a PoSt's synthesis is not shared out
    /// equally with C2 partitions'.
    pub host_pool: Option<Arc<HostPool>>,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            synthesis_workers: 1,
            queue_depth: 1,
            host_budget: None,
            item_bytes: 0,
            cancel: None,
            priority: 0,
            host_pool: None,
        }
    }
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
    /// How many items that consumer took together with this one, this one
    /// included ([`Pipeline::run_batched`]; 1 otherwise).
    pub batch: usize,
}

/// An item handed to a batch consumer ([`Pipeline::run_batched`]).
#[derive(Debug)]
pub struct Ready<I> {
    /// The item's index.
    pub index: usize,
    /// The item.
    pub item: I,
    /// Its host memory permit (`None` without a budget): dropping it
    /// admits the next item.
    pub permit: Option<HostPermit>,
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
        self.run_settled(jobs, cost, produce, |_: &I| None, consumers)
    }

    /// [`Pipeline::run_with_permits`] where `cost(k)` is an estimate made
    /// before item k exists and `held(&item)` the bytes it really holds once
    /// produced: the permit is settled to that figure (returning what was
    /// reserved in excess, or recording an excess without waiting: the
    /// memory is in use already), so the budget's `used` and `peak` are what
    /// the items in flight hold. `None` keeps the estimate.
    pub fn run_settled<I, O, E, P, C>(
        &self,
        jobs: usize,
        cost: impl Fn(usize) -> usize + Sync,
        produce: P,
        held: impl Fn(&I) -> Option<usize> + Sync,
        consumers: Vec<C>,
    ) -> Result<PipelineOutput<O>, SchedError<E>>
    where
        I: Send,
        O: Send,
        E: Send,
        P: Fn(usize) -> Result<I, E> + Sync,
        C: FnMut(usize, I, Option<HostPermit>) -> Result<O, E> + Send,
    {
        let consumers = consumers
            .into_iter()
            .map(|mut consume| {
                move |batch: Vec<Ready<I>>| -> Result<Vec<O>, (usize, E)> {
                    let mut out = Vec::with_capacity(batch.len());
                    for Ready { index, item, permit } in batch {
                        out.push(consume(index, item, permit).map_err(|e| (index, e))?);
                    }
                    Ok(out)
                }
            })
            .collect();
        self.run_batched(jobs, cost, produce, held, 1, consumers)
    }

    /// [`Pipeline::run_settled`] with consumers that take up to `max_batch`
    /// items at once: a free consumer takes the next finished item and,
    /// with it, every other one already waiting (never waiting for more),
    /// so an item waits at most for a consumer, never for a batch to fill.
    /// A GPU worker proves such a batch's MSMs in one pass of the
    /// parameters it streams (issue 42); `config.queue_depth` bounds how
    /// many finished items can wait, and so the batches. The consumer
    /// returns the batch's outputs in its order, or the index of the item
    /// that failed and its error.
    pub fn run_batched<I, O, E, P, B>(
        &self,
        jobs: usize,
        cost: impl Fn(usize) -> usize + Sync,
        produce: P,
        held: impl Fn(&I) -> Option<usize> + Sync,
        max_batch: usize,
        consumers: Vec<B>,
    ) -> Result<PipelineOutput<O>, SchedError<E>>
    where
        I: Send,
        O: Send,
        E: Send,
        P: Fn(usize) -> Result<I, E> + Sync,
        B: FnMut(Vec<Ready<I>>) -> Result<Vec<O>, (usize, E)> + Send,
    {
        let max_batch = max_batch.max(1);
        if consumers.is_empty() {
            return Err(SchedError::NoConsumer);
        }
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let admission: Mutex<Option<AdmissionError>> = Mutex::new(None);
        // A batch consumer that broke its contract (outputs for every item).
        let contract: Mutex<Option<String>> = Mutex::new(None);
        let cancel = self.config.cancel.as_ref();
        let budget = self.config.host_budget.as_ref();
        let cancelled = || cancel.is_some_and(CancelToken::is_cancelled);
        let (tx, rx) = bounded::<Produced<I>>(self.config.queue_depth);
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<(usize, Result<(O, JobTiming), E>)>();

        let scope_result = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for w in 0..self.config.synthesis_workers.max(1) {
                let (tx, done_tx) = (tx.clone(), done_tx.clone());
                let (next, stop, produce, cost, held, admission) = (&next, &stop, &produce, &cost, &held, &admission);
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
                        let mut permit =
                            match budget.map(|b| b.acquire_with_priority(cost(index), priority, cancel)).transpose() {
                                Ok(p) => p,
                                Err(e) => {
                                    stop.store(true, Ordering::Relaxed);
                                    *admission.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                                    break;
                                }
                            };
                        let t = Instant::now();
                        match on_host_pool(self.config.host_pool.as_deref(), || produce(index)) {
                            Ok(item) => {
                                if let (Some(permit), Some(bytes)) = (permit.as_mut(), held(&item)) {
                                    permit.settle(bytes);
                                }
                                let p =
                                    Produced { index, item, produce: t.elapsed(), ready_at: Instant::now(), permit };
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
                let (rx, done_tx, stop, contract) = (rx.clone(), done_tx.clone(), &stop, &contract);
                let h = std::thread::Builder::new()
                    .name(format!("c2-sched-prove-{ci}"))
                    .spawn_scoped(s, move || {
                        for first in rx.iter() {
                            if stop.load(Ordering::Relaxed) || cancelled() {
                                break;
                            }
                            // This item and those already waiting, never
                            // more than max_batch, never waiting for more.
                            let mut batch = vec![first];
                            while batch.len() < max_batch {
                                match rx.try_recv() {
                                    Ok(p) => batch.push(p),
                                    Err(_) => break,
                                }
                            }
                            let n = batch.len();
                            let seen: Vec<(usize, Duration, Duration)> =
                                batch.iter().map(|p| (p.index, p.produce, p.ready_at.elapsed())).collect();
                            let ready = batch
                                .into_iter()
                                .map(|p| Ready { index: p.index, item: p.item, permit: p.permit })
                                .collect();
                            let t = Instant::now();
                            let outcome = consume(ready);
                            let consume_t = t.elapsed();
                            let timing = |produce, queue_wait| JobTiming {
                                produce,
                                queue_wait,
                                consume: consume_t,
                                consumer: ci,
                                batch: n,
                            };
                            let sent = match outcome {
                                Ok(outs) if outs.len() == n => seen
                                    .iter()
                                    .zip(outs)
                                    .all(|(&(index, p, w), o)| done_tx.send((index, Ok((o, timing(p, w))))).is_ok()),
                                Ok(outs) => {
                                    stop.store(true, Ordering::Relaxed);
                                    *contract.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
                                        "consumer {ci} returned {} outputs for a batch of {n}",
                                        outs.len()
                                    ));
                                    false
                                }
                                Err((index, e)) => {
                                    stop.store(true, Ordering::Relaxed);
                                    done_tx.send((index, Err(e))).is_ok()
                                }
                            };
                            if !sent || stop.load(Ordering::Relaxed) {
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
        if let Some(msg) = scope_result.or_else(|| contract.into_inner().unwrap_or_else(|p| p.into_inner())) {
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
