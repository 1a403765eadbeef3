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
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;

/// Pipeline shape.
#[derive(Clone, Debug)]
pub struct PipelineConfig {
    /// Threads that produce items (synthesize partitions) concurrently.
    /// Default 1: one partition ahead of the prover is enough to hide
    /// synthesis when proving a partition takes longer than synthesizing it.
    pub synthesis_workers: usize,
    /// Finished items that may wait for a prover. Default 1.
    pub queue_depth: usize,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self { synthesis_workers: 1, queue_depth: 1 }
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
    /// first error (remaining items are not started) and returns it.
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
        if consumers.is_empty() {
            return Err(SchedError::NoConsumer);
        }
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let (tx, rx) = bounded::<Produced<I>>(self.config.queue_depth);
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<(usize, Result<(O, JobTiming), E>)>();

        let scope_result = std::thread::scope(|s| {
            let mut handles = Vec::new();
            for w in 0..self.config.synthesis_workers.max(1) {
                let (tx, done_tx) = (tx.clone(), done_tx.clone());
                let (next, stop, produce) = (&next, &stop, &produce);
                let h = std::thread::Builder::new()
                    .name(format!("c2-sched-synth-{w}"))
                    .spawn_scoped(s, move || loop {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= jobs {
                            break;
                        }
                        let t = Instant::now();
                        match produce(index) {
                            Ok(item) => {
                                let p = Produced { index, item, produce: t.elapsed(), ready_at: Instant::now() };
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
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            let queue_wait = p.ready_at.elapsed();
                            let t = Instant::now();
                            let r = consume(p.index, p.item).map(|o| {
                                let timing = JobTiming {
                                    produce: p.produce,
                                    queue_wait,
                                    consume: t.elapsed(),
                                    consumer: ci,
                                };
                                (o, timing)
                            });
                            if r.is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                            if done_tx.send((p.index, r)).is_err() {
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
        let p = Pipeline::new(PipelineConfig { synthesis_workers: 3, queue_depth: 2 });
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
        let cfg = PipelineConfig { synthesis_workers: 2, queue_depth: 1 };
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

    #[test]
    fn no_consumer_is_an_error() {
        let consumers: Vec<fn(usize, usize) -> Result<(), ()>> = vec![];
        assert!(matches!(
            Pipeline::default().run(1, Ok, consumers),
            Err(SchedError::NoConsumer)
        ));
    }
}
