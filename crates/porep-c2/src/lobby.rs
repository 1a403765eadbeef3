//! Partitions of every proof in flight in one batch (issue 42). A worker
//! that streams its parameters proves a batch's MSMs in one pass of them,
//! so the more partitions a pass serves, the fewer bytes cross PCIe per
//! partition (a 32 GiB partition's 47.4 GB of parameters at a 16 GiB cap:
//! 4.7 GB each in a batch of 10, plus its own H's 4.3 GB back from the
//! host). One proof has at most its own ready partitions to offer (10 at
//! 32 GiB, fewer while synthesis catches up), so a proof waiting for a
//! worker's turn leaves its partitions in that worker's lobby, and the
//! proof whose turn comes first takes them into its batch, as far as the
//! worker's bound allows; the results go back to the proof that left them.
//!
//! The jobs borrow their proof's parameters (`PartitionJob<'a>`), and the
//! proof that takes them runs on another thread. A [`Deposit`] holds the
//! borrow: until its jobs are back with it or their results are in, its
//! owner cannot return nor unwind past it (its `Drop` waits for the
//! results), so the borrowed parameters outlive every use of the jobs.

use std::marker::PhantomData;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bellperson::groth16::{Parameters, Proof};
use blstrs::Bls12;

use crate::backend::PartitionJob;
use crate::error::Error;
use crate::report::ProveTimings;

/// One partition's outcome.
pub(crate) type Proved = Result<(Proof<Bls12>, ProveTimings), Error>;

/// Jobs waiting for a worker's turn that the proof holding a turn there may
/// take into its batch. Shared by a backend's clones.
#[derive(Clone, Default)]
pub struct WorkerLobby(Arc<Mutex<Vec<Waiting>>>);

/// One partition in the lobby.
struct Waiting {
    worker: usize,
    /// The job, its lifetime erased: see [`Deposit`].
    job: PartitionJob<'static>,
    handoff: Arc<Handoff>,
}

/// Where the turn that took a job leaves its result.
#[derive(Default)]
struct Handoff {
    state: Mutex<HandoffState>,
    done: Condvar,
}

#[derive(Default)]
struct HandoffState {
    /// The job's borrow is over: back with its owner, or dropped by the
    /// turn that took it.
    finished: bool,
    /// The result and the device it ran on, until collected.
    result: Option<(Proved, Option<usize>)>,
}

impl Handoff {
    fn lock(&self) -> MutexGuard<'_, HandoffState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait_finished(&self) -> MutexGuard<'_, HandoffState> {
        let mut state = self.lock();
        while !state.finished {
            state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state
    }

    fn finish(&self, result: Option<(Proved, Option<usize>)>) {
        let mut state = self.lock();
        state.result = result;
        state.finished = true;
        self.done.notify_all();
    }
}

impl WorkerLobby {
    fn lock(&self) -> MutexGuard<'_, Vec<Waiting>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leaves `jobs` at worker `worker` for whichever turn there comes
    /// first (this proof's own, or another's that takes some of them).
    pub(crate) fn deposit<'l, 'a>(&'l self, worker: usize, jobs: Vec<PartitionJob<'a>>) -> Deposit<'l, 'a> {
        let mut lobby = self.lock();
        let handoffs = jobs
            .into_iter()
            .map(|job| {
                // SAFETY: only the lifetime changes (same type, same
                // layout). The returned `Deposit` keeps `'a` alive: each
                // job comes back to its owner with `'a` (`withdraw`), or a
                // taker drops it before it finishes the handoff, which
                // `Deposit::drop` waits for.
                let job = unsafe { std::mem::transmute::<PartitionJob<'a>, PartitionJob<'static>>(job) };
                let handoff = Arc::new(Handoff::default());
                lobby.push(Waiting { worker, job, handoff: handoff.clone() });
                handoff
            })
            .collect();
        Deposit { lobby: self, handoffs, _borrow: PhantomData }
    }

    /// Up to `room` jobs of other proofs waiting at worker `worker`, of the
    /// parameter set `params` (`key`), oldest first. The caller proves them
    /// with its own and hands each its result ([`Taken::finish`];
    /// dropping a `Taken` unfinished hands it an error).
    pub(crate) fn take(&self, worker: usize, key: &str, params: &Parameters<Bls12>, room: usize) -> Vec<Taken> {
        let mut lobby = self.lock();
        let mut taken = Vec::new();
        let mut i = 0;
        while i < lobby.len() && taken.len() < room {
            let w = &lobby[i];
            if w.worker == worker && w.job.params_key == key && std::ptr::eq(w.job.params, params) {
                let w = lobby.remove(i);
                taken.push(Taken { job: Some(w.job), handoff: w.handoff });
            } else {
                i += 1;
            }
        }
        taken
    }
}

/// A proof's jobs left in a [`WorkerLobby`]; each comes back to its owner
/// or its result does.
pub(crate) struct Deposit<'l, 'a> {
    lobby: &'l WorkerLobby,
    /// One per job, in the order deposited.
    handoffs: Vec<Arc<Handoff>>,
    /// The jobs' borrow, held while they are in the lobby or being proved.
    _borrow: PhantomData<PartitionJob<'a>>,
}

impl<'a> Deposit<'_, 'a> {
    /// The jobs no other turn took, back with their owner: `Some` at
    /// their places, `None` where another turn took one
    /// ([`Deposit::result`]).
    pub(crate) fn withdraw(&self) -> Vec<Option<PartitionJob<'a>>> {
        let mut lobby = self.lobby.lock();
        self.handoffs
            .iter()
            .map(|h| {
                let at = lobby.iter().position(|w| Arc::ptr_eq(&w.handoff, h))?;
                let job = lobby.remove(at).job;
                h.finish(None);
                // 'static to 'a: a job is covariant in its borrow.
                Some(job)
            })
            .collect()
    }

    /// Whether every job was taken by another turn and its result is in:
    /// nothing would come back to the owner ([`Deposit::withdraw`] is the
    /// only other way a job finishes, and only the owner calls it).
    pub(crate) fn settled(&self) -> bool {
        self.handoffs.iter().all(|h| h.lock().finished)
    }

    /// The result of job `i`, taken by another turn (waits for it), and
    /// the device it ran on.
    pub(crate) fn result(&self, i: usize) -> (Proved, Option<usize>) {
        let lost = || Error::Pipeline("a batch that took this partition gave no result".into());
        match self.handoffs.get(i) {
            Some(h) => h.wait_finished().result.take().unwrap_or_else(|| (Err(lost()), None)),
            None => (Err(lost()), None),
        }
    }
}

impl Drop for Deposit<'_, '_> {
    fn drop(&mut self) {
        // Jobs still waiting come back (and are dropped here); for the
        // others, wait until their takers have dropped them: the borrow
        // ends only then.
        drop(self.withdraw());
        for h in &self.handoffs {
            drop(h.wait_finished());
        }
    }
}

/// Another proof's job taken from the lobby into this turn's batch.
pub(crate) struct Taken {
    job: Option<PartitionJob<'static>>,
    handoff: Arc<Handoff>,
}

impl Taken {
    /// The job, to prove with the taker's own (once). The caller drops it
    /// (proves it) before [`Taken::finish`].
    pub(crate) fn job<'b>(&mut self) -> Option<PartitionJob<'b>> {
        self.job.take()
    }

    /// Hands the depositor its result, proved on `device`.
    pub(crate) fn finish(mut self, result: Proved, device: Option<usize>) {
        self.job = None;
        self.handoff.finish(Some((result, device)));
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        // Unfinished (the taker unwound): the job is dropped first (if it
        // was handed out, the batch that held it is gone), then the
        // depositor learns it was not proved.
        drop(self.job.take());
        if !self.handoff.lock().finished {
            let e = Error::Pipeline("a batch that took this partition ended without proving it".into());
            self.handoff.finish(Some((Err(e), None)));
        }
    }
}
