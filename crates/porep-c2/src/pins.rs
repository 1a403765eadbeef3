//! Page-locked parameter vectors for the MSMs that stream them (feature
//! `cuda`). A device too small to keep a parameter set resident (a 16-24 GB
//! card proving 32 GiB sectors) streams the bases of every MSM it does not
//! hold, 47.4 GB per 32 GiB partition at a 16 GiB cap. Through the pinned
//! staging slots that ran at ~25 GB/s (host copies on the stager's threads);
//! from page-locked memory the DMA engine reads the vector itself at the
//! PCIe ceiling (55 GB/s on the H200). Registration is paid once per vector
//! per process: the vectors are the shared `Arc`s of the loaded parameter
//! set (`Parameters` holds each query as `Arc<Vec<_>>`), so nothing is
//! copied and no host memory is added; a [`PinnedShared`] keeps its vector
//! alive until it is unregistered.

use std::sync::{Arc, Mutex};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};
use c2_cuda::{Gpu, GpuError, PinnedShared};

use crate::groth16::G1Query;

/// The page-locked vectors of one parameter set (those pinned so far).
#[derive(Default)]
pub struct PinnedSet {
    g1: [Option<PinnedShared<G1Affine>>; 4],
    b_g2: Option<PinnedShared<G2Affine>>,
}

impl PinnedSet {
    /// The pinned vector of a G1 query, if pinned.
    pub(crate) fn g1(&self, q: G1Query) -> Option<&PinnedShared<G1Affine>> {
        self.g1[g1_index(q)].as_ref()
    }

    /// The pinned B query in G2, if pinned.
    pub fn g2(&self) -> Option<&PinnedShared<G2Affine>> {
        self.b_g2.as_ref()
    }

    /// Bytes page-locked.
    pub fn bytes(&self) -> usize {
        self.g1.iter().flatten().map(|p| p.bytes()).sum::<usize>() + self.b_g2.as_ref().map_or(0, |p| p.bytes())
    }

    /// Only the pins hold the vectors: the parameter set was dropped.
    fn orphaned(&self) -> bool {
        let g1 = self.g1.iter().flatten().all(|p| Arc::strong_count(p.shared()) == 1);
        g1 && self.b_g2.as_ref().is_none_or(|p| Arc::strong_count(p.shared()) == 1)
    }

    /// This set pins vectors of `params` (compared by allocation).
    fn belongs_to(&self, params: &Parameters<Bls12>) -> bool {
        let v = g1_vectors(params);
        self.g1.iter().zip(v).any(|(p, v)| p.as_ref().is_some_and(|p| Arc::ptr_eq(p.shared(), v)))
            || self.b_g2.as_ref().is_some_and(|p| Arc::ptr_eq(p.shared(), &params.b_g2))
    }
}

fn g1_index(q: G1Query) -> usize {
    match q {
        G1Query::H => 0,
        G1Query::L => 1,
        G1Query::A => 2,
        G1Query::BG1 => 3,
    }
}

fn g1_vectors(p: &Parameters<Bls12>) -> [&Arc<Vec<G1Affine>>; 4] {
    [&p.h, &p.l, &p.a, &p.b_g1]
}

/// The vectors of a parameter set a device streams: which of h, l, a, b_g1,
/// b_g2 it does not hold.
pub type Streamed = [bool; 5];

/// The page-locked parameter vectors of a backend (every device's streamed
/// vectors; registration is portable across contexts), at most `max_bytes`
/// of them. Sets whose parameters were dropped elsewhere are unpinned at the
/// next request; over the bound, the least recently used other sets go.
#[allow(clippy::type_complexity)]
pub struct HostPins {
    max_bytes: usize,
    /// The sets with their last use, and the use clock.
    state: Mutex<(Vec<(Arc<PinnedSet>, u64)>, u64)>,
}

impl HostPins {
    /// At most `max_bytes` page-locked (0: none, every stream is staged).
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, state: Mutex::new((Vec::new(), 0)) }
    }

    /// The pins of `params` with every vector in `streamed` pinned as far as
    /// the bound allows (registering the missing ones now: ~1 s per 4 GB
    /// measured on the H200, once per process). `None` with a zero bound.
    pub fn get(
        &self,
        gpu: &Arc<Gpu>,
        params: &Parameters<Bls12>,
        streamed: Streamed,
    ) -> Result<Option<Arc<PinnedSet>>, GpuError> {
        self.get_with(params, streamed, |v| PinnedShared::new(gpu, v), |v| PinnedShared::new(gpu, v))
    }

    /// [`HostPins::get`] with the registrations made by `pin_g1` / `pin_g2`.
    fn get_with(
        &self,
        params: &Parameters<Bls12>,
        streamed: Streamed,
        pin_g1: impl Fn(Arc<Vec<G1Affine>>) -> Result<PinnedShared<G1Affine>, GpuError>,
        pin_g2: impl Fn(Arc<Vec<G2Affine>>) -> Result<PinnedShared<G2Affine>, GpuError>,
    ) -> Result<Option<Arc<PinnedSet>>, GpuError> {
        if self.max_bytes == 0 || !streamed.contains(&true) {
            return Ok(None);
        }
        // One registration at a time: a second worker needing the same
        // vectors waits for them instead of pinning them twice.
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (sets, clock) = &mut *guard;
        *clock += 1;
        sets.retain(|(s, _)| !s.orphaned());
        let i = match sets.iter().position(|(s, _)| s.belongs_to(params)) {
            Some(i) => i,
            None => {
                sets.push((Arc::new(PinnedSet::default()), 0));
                sets.len() - 1
            }
        };
        sets[i].1 = *clock;
        let g1 = g1_vectors(params);
        let want = |k: usize, have: bool| streamed[k] && !have;
        let missing = (0..4).any(|k| want(k, sets[i].0.g1[k].is_some())) || want(4, sets[i].0.b_g2.is_some());
        if !missing {
            return Ok(Some(sets[i].0.clone()));
        }
        // Room: other sets, least recently used first, while over the bound.
        let needed: usize = (0..4)
            .filter(|&k| want(k, sets[i].0.g1[k].is_some()))
            .map(|k| std::mem::size_of_val(g1[k].as_slice()))
            .sum::<usize>()
            + if want(4, sets[i].0.b_g2.is_some()) { std::mem::size_of_val(params.b_g2.as_slice()) } else { 0 };
        let mine = sets[i].0.clone();
        loop {
            let total: usize = sets.iter().map(|(s, _)| s.bytes()).sum();
            if total + needed <= self.max_bytes {
                break;
            }
            let victim = sets
                .iter()
                .enumerate()
                .filter(|(_, (s, _))| !Arc::ptr_eq(s, &mine))
                .min_by_key(|(_, (_, t))| *t)
                .map(|(j, _)| j);
            match victim {
                Some(j) => {
                    sets.swap_remove(j);
                }
                None => break,
            }
        }
        // The entry's pins are extended in place: taken out of the list
        // (with this function's own handle dropped) and put back. Pinning
        // the same pages twice would be refused by the driver.
        let i = sets.iter().position(|(s, _)| Arc::ptr_eq(s, &mine)).expect("kept above");
        drop(mine);
        let (old, t) = sets.swap_remove(i);
        let mut set = match Arc::try_unwrap(old) {
            Ok(s) => s,
            // Still held by a running partition: pin nothing more now.
            Err(old) => {
                sets.push((old.clone(), t));
                return Ok(Some(old));
            }
        };
        let mut total: usize = sets.iter().map(|(s, _)| s.bytes()).sum::<usize>() + set.bytes();
        let started = std::time::Instant::now();
        let mut pinned = 0usize;
        let mut pin_all = |set: &mut PinnedSet| -> Result<(), GpuError> {
            for (k, v) in g1.iter().enumerate() {
                let bytes = std::mem::size_of_val(v.as_slice());
                if want(k, set.g1[k].is_some()) && total + bytes <= self.max_bytes {
                    set.g1[k] = Some(pin_g1(Arc::clone(v))?);
                    total += bytes;
                    pinned += bytes;
                }
            }
            let bytes = std::mem::size_of_val(params.b_g2.as_slice());
            if want(4, set.b_g2.is_some()) && total + bytes <= self.max_bytes {
                set.b_g2 = Some(pin_g2(params.b_g2.clone())?);
                pinned += bytes;
            }
            Ok(())
        };
        let result = pin_all(&mut set);
        // What was pinned stays (also when a registration failed).
        let set = Arc::new(set);
        sets.push((set.clone(), t));
        result?;
        if pinned > 0 {
            log::info!(
                "porep-c2: page-locked {:.1} GB of streamed parameter vectors in {:.1} s (once per process)",
                pinned as f64 / 1e9,
                started.elapsed().as_secs_f64()
            );
        }
        Ok(Some(set))
    }

    /// Bytes page-locked now.
    pub fn bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).0.iter().map(|(s, _)| s.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::prime::PrimeCurveAffine;

    /// A parameter set with `n` points per query (no device needed: the
    /// registry's logic is what is tested).
    fn params(n: usize) -> Parameters<Bls12> {
        let g1 = || Arc::new(vec![G1Affine::identity(); n]);
        let vk = bellperson::groth16::VerifyingKey::<Bls12> {
            alpha_g1: G1Affine::identity(),
            beta_g1: G1Affine::identity(),
            beta_g2: G2Affine::identity(),
            gamma_g2: G2Affine::identity(),
            delta_g1: G1Affine::identity(),
            delta_g2: G2Affine::identity(),
            ic: Vec::new(),
        };
        Parameters { vk, h: g1(), l: g1(), a: g1(), b_g1: g1(), b_g2: Arc::new(vec![G2Affine::identity(); n]) }
    }

    fn get(pins: &HostPins, p: &Parameters<Bls12>, streamed: Streamed) -> Option<Arc<PinnedSet>> {
        let ok1 = |v| Ok(PinnedShared::unregistered(v));
        let ok2 = |v| Ok(PinnedShared::unregistered(v));
        pins.get_with(p, streamed, ok1, ok2).unwrap()
    }

    const G1: usize = std::mem::size_of::<G1Affine>();
    const G2: usize = std::mem::size_of::<G2Affine>();

    #[test]
    fn pins_what_streams_once_and_extends_later() {
        let pins = HostPins::new(1 << 30);
        let p = params(100);
        // Nothing streamed, or a zero bound: nothing pinned.
        assert!(get(&pins, &p, [false; 5]).is_none());
        assert!(get(&HostPins::new(0), &p, [true; 5]).is_none());
        // H and B_G2 stream: exactly those.
        let s = get(&pins, &p, [true, false, false, false, true]).expect("pinned");
        assert!(s.g1(G1Query::H).is_some_and(|x| Arc::ptr_eq(x.shared(), &p.h)));
        assert!(s.g1(G1Query::L).is_none() && s.g2().is_some());
        assert_eq!(s.bytes(), 100 * (G1 + G2));
        // Asked again: the same pins (no second registration).
        let again = get(&pins, &p, [true, false, false, false, true]).expect("pinned");
        assert!(Arc::ptr_eq(&s, &again));
        drop((s, again));
        // L too: the set is extended in place.
        let s = get(&pins, &p, [true, true, false, false, true]).expect("pinned");
        assert!(s.g1(G1Query::L).is_some() && s.g1(G1Query::H).is_some());
        assert_eq!(pins.bytes(), 100 * (2 * G1 + G2));
    }

    #[test]
    fn bound_evicts_other_sets_and_dropped_sets_are_unpinned() {
        let one = 100 * (4 * G1 + G2);
        let pins = HostPins::new(one + one / 2);
        let (p, q) = (params(100), params(100));
        assert_eq!(get(&pins, &p, [true; 5]).expect("p").bytes(), one);
        // q does not fit beside p: p (not in use) goes.
        assert_eq!(get(&pins, &q, [true; 5]).expect("q").bytes(), one);
        assert_eq!(pins.bytes(), one);
        // A set larger than what is left pins only what fits.
        let small = HostPins::new(100 * G1 + 1);
        assert_eq!(get(&small, &p, [true; 5]).expect("p").bytes(), 100 * G1);
        // Parameters dropped elsewhere: their pins go at the next request.
        drop(q);
        let r = params(10);
        get(&pins, &r, [true; 5]).expect("r");
        assert_eq!(pins.bytes(), 10 * (4 * G1 + G2));
    }
}
