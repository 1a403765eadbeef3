//! Parameters read once per process: a shared cache of loaded parameter
//! sets, keyed by the file's identity (canonical path, size, modification
//! time), bounded in host bytes.
//!
//! Why: reading and decoding a parameter file is seconds per proof (1.43 GB
//! for 8 MiB: 1.4-1.7 s alone, 8.8 s of a ~14 s proof with 16 proofs in
//! flight on the H200 host; a 32 GiB sector's 47 GB: 30-90 s), and the
//! device caches key their resident copies on the loaded set anyway.
//! [`ParamsSource::CacheDir`] and `File` go through [`ParamsCache::load`]; proofs that share a [`crate::ProverConfig`] (or
//! clones of it) share one cache.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, G1Affine, G2Affine};

use crate::params::{read_parameters, ParamsError, ParamsSource};

/// A file as the cache knows it: the same path with another size or
/// modification time is another file (rewritten parameters are read again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    /// The canonical path.
    pub path: PathBuf,
    /// Bytes.
    pub len: u64,
    /// Last modification, where the file system records it.
    pub modified: Option<SystemTime>,
}

impl FileIdentity {
    /// The identity of the file at `path` now ([`ParamsError::Missing`] when
    /// there is none).
    pub fn of(path: &Path) -> Result<Self, ParamsError> {
        let missing = |source: std::io::Error| match source.kind() {
            std::io::ErrorKind::NotFound => ParamsError::Missing { path: path.into() },
            _ => ParamsError::Io { path: path.into(), source },
        };
        let canonical = std::fs::canonicalize(path).map_err(missing)?;
        let meta = std::fs::metadata(&canonical).map_err(missing)?;
        Ok(Self { path: canonical, len: meta.len(), modified: meta.modified().ok() })
    }
}

/// Host bytes of a loaded parameter set (its point vectors).
pub fn parameter_bytes(p: &Parameters<Bls12>) -> usize {
    let g1 = p.h.len() + p.l.len() + p.a.len() + p.b_g1.len() + p.vk.ic.len();
    g1 * std::mem::size_of::<G1Affine>() + p.b_g2.len() * std::mem::size_of::<G2Affine>()
}

/// One file's slot: filled by the first caller that reads it; the others
/// wait on the slot's lock instead of reading the file again.
type Slot = Arc<Mutex<Option<Arc<Parameters<Bls12>>>>>;

struct Entry {
    id: FileIdentity,
    slot: Slot,
    bytes: usize,
    last_use: u64,
}

/// Loaded parameter sets shared by the proofs of a process (see the
/// module's documentation). When the sets held exceed `max_bytes`, the
/// least recently used ones that no proof holds are dropped; the set just
/// loaded always stays, so one set larger than the bound is still read
/// once, not once per proof.
pub struct ParamsCache {
    max_bytes: usize,
    state: Mutex<(Vec<Entry>, u64)>,
    reads: AtomicUsize,
}

impl std::fmt::Debug for ParamsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ParamsCache({} sets, {} bytes of {})", self.len(), self.bytes(), self.max_bytes)
    }
}

/// The default bound: one 32 GiB sector's parameters (47.5 GB) plus the
/// small sizes', with room to spare on a 128 GB host.
pub const DEFAULT_MAX_BYTES: usize = 64 << 30;

impl Default for ParamsCache {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BYTES)
    }
}

impl ParamsCache {
    /// An empty cache holding at most `max_bytes` of sets nobody uses.
    pub fn new(max_bytes: usize) -> Self {
        Self { max_bytes, state: Mutex::new((Vec::new(), 0)), reads: AtomicUsize::new(0) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Vec<Entry>, u64)> {
        // Entries are consistent between statements: a panic elsewhere
        // cannot leave the list half-updated.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The parameters `source` names for `parameter_id`, through the cache
    /// (parameters already in memory are returned as they are).
    pub fn load(&self, source: &ParamsSource, parameter_id: &str) -> Result<Arc<Parameters<Bls12>>, ParamsError> {
        match source.path(parameter_id) {
            Some(path) => self.get(&path),
            None => source.load(parameter_id),
        }
    }

    /// The parameters in the file at `path`: the loaded set when this file
    /// (same identity) was read before, else read now. Concurrent callers
    /// for one file read it once. A failed read caches nothing.
    pub fn get(&self, path: &Path) -> Result<Arc<Parameters<Bls12>>, ParamsError> {
        let id = FileIdentity::of(path)?;
        let slot = {
            let mut guard = self.lock();
            let (entries, clock) = &mut *guard;
            *clock += 1;
            // A rewritten file (same path, new identity) replaces its entry.
            entries.retain(|e| e.id.path != id.path || e.id == id);
            match entries.iter_mut().find(|e| e.id == id) {
                Some(e) => {
                    e.last_use = *clock;
                    e.slot.clone()
                }
                None => {
                    let slot = Slot::default();
                    entries.push(Entry { id: id.clone(), slot: slot.clone(), bytes: 0, last_use: *clock });
                    slot
                }
            }
        };
        let mut loaded = slot.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = &*loaded {
            return Ok(p.clone());
        }
        let params = match read_parameters(path) {
            Ok(p) => Arc::new(p),
            Err(e) => {
                drop(loaded);
                // Nothing to keep: drop the entry unless a waiter filled it.
                self.lock()
                    .0
                    .retain(|e| !(Arc::ptr_eq(&e.slot, &slot) && e.slot.try_lock().is_ok_and(|s| s.is_none())));
                return Err(e);
            }
        };
        self.reads.fetch_add(1, Ordering::Relaxed);
        *loaded = Some(params.clone());
        drop(loaded);
        self.settle(&slot, parameter_bytes(&params));
        Ok(params)
    }

    /// Records the bytes of the set in `slot` and drops least recently used
    /// sets nobody holds while the total exceeds the bound.
    fn settle(&self, slot: &Slot, bytes: usize) {
        let mut guard = self.lock();
        let entries = &mut guard.0;
        if let Some(e) = entries.iter_mut().find(|e| Arc::ptr_eq(&e.slot, slot)) {
            e.bytes = bytes;
        }
        loop {
            let total: usize = entries.iter().map(|e| e.bytes).sum();
            if total <= self.max_bytes {
                return;
            }
            // Not in use: only the cache holds the set (and nobody is
            // reading into the slot).
            let idle = |e: &Entry| {
                !Arc::ptr_eq(&e.slot, slot)
                    && e.slot.try_lock().is_ok_and(|s| s.as_ref().is_some_and(|p| Arc::strong_count(p) == 1))
            };
            let Some(victim) = entries.iter().enumerate().filter(|(_, e)| idle(e)).min_by_key(|(_, e)| e.last_use)
            else {
                return;
            };
            let i = victim.0;
            entries.swap_remove(i);
        }
    }

    /// Forgets the set `source` names for `parameter_id` (its host memory is
    /// freed once no proof holds it); the bytes it held (0: not cached, or
    /// parameters given in memory).
    pub fn evict(&self, source: &ParamsSource, parameter_id: &str) -> usize {
        let Some(path) = source.path(parameter_id) else { return 0 };
        let mut guard = self.lock();
        let entries = &mut guard.0;
        let bytes = entries.iter().filter(|e| e.id.path == path).map(|e| e.bytes).sum();
        entries.retain(|e| e.id.path != path);
        bytes
    }

    /// Files read since the cache was made (each read decodes a whole set).
    pub fn reads(&self) -> usize {
        self.reads.load(Ordering::Relaxed)
    }

    /// Sets held.
    pub fn len(&self) -> usize {
        self.lock().0.iter().filter(|e| e.bytes > 0).count()
    }

    /// No set is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Host bytes of the sets held.
    pub fn bytes(&self) -> usize {
        self.lock().0.iter().map(|e| e.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::write_parameters;
    use bellperson::groth16::VerifyingKey;
    use group::prime::PrimeCurveAffine;
    use group::{Curve, Group};

    /// A parameter set with `n` points per vector (valid points, no circuit).
    fn params(n: usize, seed: u64) -> Parameters<Bls12> {
        let g1 = |i: usize| {
            (blstrs::G1Projective::generator() * blstrs::Scalar::from(seed * 1000 + i as u64 + 1)).to_affine()
        };
        let g2 = |i: usize| {
            (blstrs::G2Projective::generator() * blstrs::Scalar::from(seed * 1000 + i as u64 + 1)).to_affine()
        };
        let vk = VerifyingKey {
            alpha_g1: g1(0),
            beta_g1: g1(1),
            beta_g2: g2(2),
            gamma_g2: g2(3),
            delta_g1: g1(4),
            delta_g2: g2(5),
            ic: vec![G1Affine::generator(), g1(6)],
        };
        let v = |k: usize| Arc::new((0..n).map(|i| g1(i + k)).collect::<Vec<_>>());
        Parameters { vk, h: v(10), l: v(20), a: v(30), b_g1: v(40), b_g2: Arc::new((0..n).map(g2).collect()) }
    }

    fn write(dir: &Path, name: &str, n: usize, seed: u64) -> PathBuf {
        let path = dir.join(name);
        write_parameters(&params(n, seed), &path, None).unwrap();
        path
    }

    /// A `.vk` written alone (its folder made) reads back as the same key,
    /// and equals the head of the parameter file written for the same set.
    #[test]
    fn a_verifying_key_written_alone_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let set = params(3, 4);
        let vk_path = dir.path().join("cache/v28-x.vk");
        crate::params::write_verifying_key(&set.vk, &vk_path).unwrap();
        assert_eq!(crate::params::read_verifying_key(&vk_path).unwrap(), set.vk);
        let params_path = write(dir.path(), "x.params", 3, 4);
        assert_eq!(crate::params::read_verifying_key(&params_path).unwrap(), set.vk);
    }

    #[test]
    fn a_file_is_read_once_and_shared() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a.params", 5, 1);
        let cache = ParamsCache::default();
        let first = cache.get(&path).unwrap();
        let second = cache.get(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!((cache.reads(), cache.len()), (1, 1));
        assert_eq!(cache.bytes(), parameter_bytes(&first));
        // The same file by another path (a `..` detour) is the same file.
        let detour = dir.path().join("sub").join("..").join("a.params");
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        assert!(Arc::ptr_eq(&cache.get(&detour).unwrap(), &first));
        assert_eq!(cache.reads(), 1);
        assert_eq!(first.h.len(), 5);
    }

    #[test]
    fn a_rewritten_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a.params", 5, 1);
        let cache = ParamsCache::default();
        let old = cache.get(&path).unwrap();
        // Another set under the same name (another size: a new identity
        // even where the clock's resolution hides the new time).
        write(dir.path(), "a.params", 7, 2);
        let new = cache.get(&path).unwrap();
        assert_eq!((old.h.len(), new.h.len(), cache.reads(), cache.len()), (5, 7, 2, 1));
    }

    #[test]
    fn concurrent_proofs_read_a_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "a.params", 300, 3);
        let cache = ParamsCache::default();
        let sets: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..6).map(|_| s.spawn(|| cache.get(&path).unwrap())).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(cache.reads(), 1);
        assert!(sets.iter().all(|p| Arc::ptr_eq(p, &sets[0])));
    }

    #[test]
    fn the_bound_drops_least_recently_used_sets_nobody_holds() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (write(dir.path(), "a", 5, 1), write(dir.path(), "b", 5, 2), write(dir.path(), "c", 5, 3));
        let one = parameter_bytes(&params(5, 1));
        // Room for two sets.
        let cache = ParamsCache::new(2 * one);
        let held_a = cache.get(&a).unwrap();
        drop(cache.get(&b).unwrap());
        // a is held by a proof, b is not: loading c drops b.
        drop(cache.get(&c).unwrap());
        assert_eq!((cache.len(), cache.reads()), (2, 3));
        assert!(Arc::ptr_eq(&cache.get(&a).unwrap(), &held_a));
        assert_eq!(cache.reads(), 3, "a stayed");
        drop(cache.get(&b).unwrap());
        assert_eq!(cache.reads(), 4, "b was dropped and is read again");
        // Everything held: the bound is exceeded rather than a set in use
        // dropped; the newest set always stays.
        let tiny = ParamsCache::new(1);
        let (x, y) = (tiny.get(&a).unwrap(), tiny.get(&b).unwrap());
        assert_eq!(tiny.len(), 2);
        drop((x, y));
        let _z = tiny.get(&c).unwrap();
        assert_eq!(tiny.len(), 1, "idle sets go once the bound is exceeded");
    }

    #[test]
    fn missing_and_corrupt_files_are_typed_errors_and_not_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParamsCache::default();
        let missing = dir.path().join("none.params");
        assert!(matches!(cache.get(&missing), Err(ParamsError::Missing { .. })));
        let path = write(dir.path(), "a.params", 5, 1);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        assert!(matches!(cache.get(&path), Err(ParamsError::Truncated { .. })));
        assert_eq!((cache.len(), cache.reads()), (0, 0));
        // Repaired: read now.
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.get(&path).unwrap().h.len(), 5);
        assert_eq!((cache.len(), cache.reads()), (1, 1));
    }
}
