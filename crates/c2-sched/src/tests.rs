//! The pipeline with budgets, cancellation and priorities, end to end.

use crate::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

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
            if k == 3 {
                Err(format!("bad {k}"))
            } else {
                Ok(k)
            }
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
        host_pool: None,
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
    let r =
        Pipeline::new(cfg).run_admitted(3, |k| if k == 1 { 101 } else { 10 }, Ok::<_, ()>, vec![|_k, x: usize| Ok(x)]);
    assert_eq!(r.unwrap_err(), SchedError::Admission(AdmissionError::TooLarge { requested: 101, budget: 100 }));
}

#[test]
fn cancel_stops_between_items() {
    let token = CancelToken::new();
    let consumed = AtomicUsize::new(0);
    let cfg = PipelineConfig { cancel: Some(token.clone()), ..Default::default() };
    let r = Pipeline::new(cfg).run(
        100,
        Ok::<_, ()>,
        vec![|k, x: usize| {
            consumed.fetch_add(1, Ordering::SeqCst);
            if k == 3 {
                token.cancel();
            }
            Ok(x)
        }],
    );
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
    type Consumer = fn(usize, usize) -> Result<(), ()>;
    let consumers: Vec<Consumer> = vec![];
    assert!(matches!(Pipeline::default().run(1, Ok, consumers), Err(SchedError::NoConsumer)));
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

#[test]
fn settled_permits_hold_what_the_items_hold() {
    // Reserve 10 per item (an estimate), settle to the item's real size:
    // 3 for even items, 12 for odd ones (above the estimate). The budget
    // (20) then admits more than two estimated items at once, and its
    // peak is the settled bytes, not the estimates.
    let budget = HostBudget::new(20);
    let cfg = PipelineConfig {
        synthesis_workers: 2,
        queue_depth: 2,
        host_budget: Some(budget.clone()),
        ..Default::default()
    };
    let size = |k: usize| if k.is_multiple_of(2) { 3 } else { 12 };
    let consumer = |_k: usize, x: usize, permit: Option<HostPermit>| {
        assert_eq!(permit.as_ref().map(HostPermit::bytes), Some(size(x)), "item {x}'s permit settled to its size");
        std::thread::sleep(Duration::from_millis(5));
        Ok::<_, ()>(x)
    };
    let out = Pipeline::new(cfg).run_settled(6, |_| 10, Ok, |&x: &usize| Some(size(x)), vec![consumer]).unwrap();
    assert_eq!(out.results, (0..6).collect::<Vec<_>>());
    assert_eq!(budget.used(), 0, "every settled permit returned in full");
    // Two reserved (10 + 10) is the most admitted at once; settling an odd
    // item while another is reserved can reach 12 + 10 > 20: recorded.
    assert!(budget.peak() >= 12, "peak {} counts a settled 12", budget.peak());
    // One consumer, queue 2, two producers: at most 5 items exist at once.
    assert!((12..=3 * 12 + 2 * 3).contains(&budget.settled_peak()), "settled peak {}", budget.settled_peak());
}

#[test]
fn settle_down_returns_bytes_and_settle_up_counts_in_peak() {
    let budget = HostBudget::new(10);
    let mut p = budget.acquire(8, None).unwrap();
    p.settle(2);
    assert_eq!((budget.used(), p.bytes()), (2, 2));
    let q = budget.acquire(8, None).unwrap(); // fits only because p settled down
    p.settle(6);
    assert_eq!(budget.used(), 14);
    assert_eq!(budget.peak(), 14, "an item larger than its estimate shows in the peak");
    assert_eq!(budget.settled_peak(), 6, "q is an estimate, p holds 6 at most");
    drop((p, q));
    assert_eq!(budget.used(), 0);
}

#[test]
fn producers_run_on_the_configured_host_pool() {
    // Each item records the thread its production (and a parallel task
    // inside it) ran on: the pool's, not the scheduler's own thread or
    // rayon's global pool.
    let pool = std::sync::Arc::new(crate::HostPool::new("lane-test", 2, 0).unwrap());
    let cfg = PipelineConfig { synthesis_workers: 2, host_pool: Some(pool), ..Default::default() };
    let name = || std::thread::current().name().unwrap_or("").to_string();
    let produce = |_k: usize| {
        let inner = rayon::join(name, name);
        Ok::<_, ()>([name(), inner.0, inner.1])
    };
    let out = Pipeline::new(cfg).run(4, produce, vec![|_k, names: [String; 3]| Ok(names)]).unwrap();
    for names in out.results {
        assert!(names.iter().all(|n| n.starts_with("lane-test-")), "{names:?}");
    }
}

/// Batch consumers (issue 42): a free consumer takes every finished item
/// already waiting, up to the bound, and never waits for more; outputs come
/// back in index order with each item's batch size in its timing.
#[test]
fn batch_consumers_take_what_is_waiting_up_to_the_bound() {
    // Fast producers, a slow consumer: items pile up, batches form.
    let cfg = PipelineConfig { synthesis_workers: 4, queue_depth: 8, ..Default::default() };
    let sizes = Mutex::new(Vec::new());
    let consumer = |batch: Vec<Ready<usize>>| {
        sizes.lock().unwrap().push(batch.len());
        std::thread::sleep(Duration::from_millis(20));
        Ok::<_, (usize, String)>(batch.into_iter().map(|r| (r.index, r.item * 2)).collect())
    };
    let out = Pipeline::new(cfg).run_batched(30, |_| 0, Ok, |_| None, 3, vec![consumer]).unwrap();
    assert_eq!(out.results, (0..30).map(|k| (k, 2 * k)).collect::<Vec<_>>());
    let sizes = sizes.into_inner().unwrap();
    assert!(sizes.iter().all(|&n| (1..=3).contains(&n)), "{sizes:?}");
    assert!(sizes.iter().any(|&n| n > 1), "no batch formed: {sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 30);
    // Every item's timing names its batch's size; a batch of n has n items.
    for &n in &[1usize, 2, 3] {
        let items = out.timings.iter().filter(|t| t.batch == n).count();
        assert_eq!(items, n * sizes.iter().filter(|&&s| s == n).count(), "batches of {n}");
    }

    // A slow producer, a fast consumer: nothing waits, so every batch is
    // one item (the consumer never holds an item back to fill a batch).
    let cfg = PipelineConfig { synthesis_workers: 1, queue_depth: 8, ..Default::default() };
    let produce = |k: usize| {
        // Long enough that a consumer delayed by a busy machine still
        // finds one item at most.
        std::thread::sleep(Duration::from_millis(40));
        Ok::<_, (usize, String)>(k)
    };
    let consumer = |batch: Vec<Ready<usize>>| Ok(batch.into_iter().map(|r| r.item).collect::<Vec<_>>());
    let out = Pipeline::new(cfg)
        .run_batched(6, |_| 0, |k| produce(k).map_err(|(_, e)| e), |_| None, 4, vec![consumer])
        .unwrap();
    assert_eq!(out.results, (0..6).collect::<Vec<_>>());
    assert!(out.timings.iter().all(|t| t.batch == 1), "{:?}", out.timings);
}

/// A failed item of a batch stops the run with that item's index; a batch
/// consumer that returns the wrong number of outputs is reported, not
/// trusted.
#[test]
fn batch_consumers_report_the_failed_item_and_a_broken_contract() {
    let cfg = PipelineConfig { synthesis_workers: 2, queue_depth: 4, ..Default::default() };
    let failing = |batch: Vec<Ready<usize>>| {
        let mut out = Vec::new();
        for r in batch {
            if r.index == 5 {
                return Err((r.index, "item 5 failed".to_string()));
            }
            out.push(r.item);
        }
        Ok(out)
    };
    let r = Pipeline::new(cfg.clone()).run_batched(20, |_| 0, Ok, |_| None, 3, vec![failing]);
    assert!(matches!(r, Err(SchedError::Job { index: 5, ref error }) if error == "item 5 failed"), "{r:?}");

    let short = |batch: Vec<Ready<usize>>| Ok::<_, (usize, String)>(vec![0usize; batch.len() - 1]);
    let r = Pipeline::new(cfg).run_batched(4, |_| 0, Ok, |_| None, 2, vec![short]);
    assert!(matches!(r, Err(SchedError::Panic(ref m)) if m.contains("outputs for a batch of")), "{r:?}");
}

/// Batched items hold their host permits until the consumer drops them,
/// as unbatched ones do: the budget's peak stays within what it admits.
#[test]
fn batched_items_hold_their_host_permits() {
    let budget = HostBudget::new(300);
    let cfg = PipelineConfig {
        synthesis_workers: 4,
        queue_depth: 8,
        host_budget: Some(budget.clone()),
        ..Default::default()
    };
    let consumer = |batch: Vec<Ready<usize>>| {
        std::thread::sleep(Duration::from_millis(10));
        Ok::<_, (usize, String)>(batch.into_iter().map(|r| r.item).collect::<Vec<_>>())
    };
    let out = Pipeline::new(cfg).run_batched(12, |_| 100, Ok, |_| None, 4, vec![consumer]).unwrap();
    assert_eq!(out.results, (0..12).collect::<Vec<_>>());
    assert!(budget.peak() <= 300 && budget.used() == 0, "peak {} used {}", budget.peak(), budget.used());
    assert!(out.timings.iter().all(|t| (1..=3).contains(&t.batch)), "{:?}", out.timings);
}
