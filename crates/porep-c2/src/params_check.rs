//! Parameter files checked against a manifest of blake2b digests, as
//! filecoin-proofs does when `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` is set
//! (storage-proofs-core `parameter_cache::verify_production_entry`): the
//! digest is blake2b-512 of the whole file, hex, first 32 characters.
//!
//! [`ParameterManifest::production`] is the `parameters.json` (Groth16
//! parameters and verifying keys) and `srs-inner-product.json` (the
//! aggregation SRS) that storage-proofs-core ships, so the files a node
//! fetched with `paramfetch` or `lotus fetch-params` can be checked before
//! it proves with them.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::params::ParamsError;

/// One file of a manifest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct ManifestEntry {
    /// The file name (`v28-stacked-proof-of-replication-....params`).
    #[serde(skip)]
    pub name: String,
    /// Its blake2b digest: blake2b-512, hex, the first 32 characters.
    pub digest: String,
    /// The sector size it serves, bytes.
    pub sector_size: u64,
}

/// File names with their expected digests.
#[derive(Clone, Debug, Default)]
pub struct ParameterManifest {
    entries: BTreeMap<String, ManifestEntry>,
}

/// What a check found for one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileStatus {
    /// Present, digest as in the manifest.
    Valid,
    /// In the manifest, not in the folder.
    Missing,
    /// Present, another digest (corrupt, truncated, or other parameters
    /// under the production name: e.g. random test parameters).
    Mismatched {
        /// The file's digest.
        digest: String,
    },
    /// Present but not readable.
    Unreadable(String),
    /// A parameter-like file (`.params`, `.vk`, `.srs`) the manifest does not
    /// name: another version, or not filecoin-proofs' file.
    Unknown,
}

/// One file's check.
#[derive(Clone, Debug)]
pub struct FileReport {
    /// The file name.
    pub name: String,
    /// Its path.
    pub path: PathBuf,
    /// What the check found.
    pub status: FileStatus,
    /// Its size, bytes (0 when missing).
    pub bytes: u64,
    /// The manifest's entry (none for [`FileStatus::Unknown`]).
    pub entry: Option<ManifestEntry>,
}

impl ParameterManifest {
    /// filecoin-proofs' production manifest (the `parameters.json` and
    /// `srs-inner-product.json` of the storage-proofs-core crate this crate
    /// is built with).
    pub fn production() -> Self {
        use storage_proofs_core::parameter_cache::{PARAMETERS_DATA, SRS_PARAMETERS_DATA};
        let mut m = Self::default();
        for json in [PARAMETERS_DATA, SRS_PARAMETERS_DATA] {
            // Both are compiled into storage-proofs-core, which parses them
            // itself (and would panic first were they invalid).
            if let Ok(more) = Self::from_json(json) {
                m.entries.extend(more.entries);
            }
        }
        m
    }

    /// A manifest in `parameters.json`'s form:
    /// `{ "<file name>": { "cid": ..., "digest": ..., "sector_size": ... } }`.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        let raw: BTreeMap<String, ManifestEntry> = serde_json::from_str(json)?;
        let entries = raw.into_iter().map(|(name, e)| (name.clone(), ManifestEntry { name, ..e })).collect();
        Ok(Self { entries })
    }

    /// The entries, by file name.
    pub fn entries(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.entries.values()
    }

    /// Checks the files of the entries `select` picks in `dir` (several
    /// files at once; `hashed` is told the bytes read as they are read, for
    /// a progress bar), then lists the parameter-like files of `dir` that
    /// the manifest does not name. Reports come in file-name order.
    pub fn check_dir(
        &self,
        dir: &Path,
        select: &(dyn Fn(&ManifestEntry) -> bool + Sync),
        hashed: &(dyn Fn(u64) + Sync),
    ) -> Result<Vec<FileReport>, ParamsError> {
        let listing = std::fs::read_dir(dir).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ParamsError::Missing { path: dir.into() },
            _ => ParamsError::Io { path: dir.into(), source },
        })?;
        let chosen: Vec<&ManifestEntry> = self.entries.values().filter(|e| select(e)).collect();
        let mut reports: Vec<FileReport> = chosen
            .par_iter()
            .map(|e| {
                let path = dir.join(&e.name);
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                let status = if !path.exists() {
                    FileStatus::Missing
                } else {
                    match file_digest(&path, hashed) {
                        Ok(d) if d == e.digest => FileStatus::Valid,
                        Ok(digest) => FileStatus::Mismatched { digest },
                        Err(err) => FileStatus::Unreadable(err.to_string()),
                    }
                };
                FileReport { name: e.name.clone(), path, status, bytes, entry: Some((*e).clone()) }
            })
            .collect();
        for item in listing.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            let parameter_like = [".params", ".vk", ".srs"].iter().any(|x| name.ends_with(x));
            if parameter_like && !self.entries.contains_key(&name) {
                let bytes = item.metadata().map(|m| m.len()).unwrap_or(0);
                reports.push(FileReport { path: item.path(), name, status: FileStatus::Unknown, bytes, entry: None });
            }
        }
        reports.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(reports)
    }
}

/// A file's digest as filecoin-proofs computes it: blake2b-512 of its
/// bytes, hex, the first 32 characters. `hashed` is told each block's bytes.
pub fn file_digest(path: &Path, hashed: &dyn Fn(u64)) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut state = blake2b_simd::Params::new().to_state();
    // 8 MiB reads: large enough for sequential disk throughput.
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        state.update(&buf[..n]);
        hashed(n as u64);
    }
    Ok(state.finalize().to_hex()[..32].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// blake2b-512("abc") from RFC 7693, appendix A.
    const ABC_DIGEST: &str = "ba80a53f981c4d0d6a2797b69f12f6e9";

    #[test]
    fn digest_is_blake2b_512_truncated_as_filecoin_proofs_writes_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        let seen = std::sync::atomic::AtomicU64::new(0);
        let add = |n| {
            seen.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        };
        assert_eq!(file_digest(&p, &add).unwrap(), ABC_DIGEST);
        assert_eq!(seen.into_inner(), 3);
    }

    #[test]
    fn check_dir_reports_valid_missing_mismatched_and_unknown_files() {
        let json = format!(
            r#"{{ "v28-a.params": {{ "cid": "x", "digest": "{ABC_DIGEST}", "sector_size": 2048 }},
                  "v28-a.vk": {{ "cid": "y", "digest": "{ABC_DIGEST}", "sector_size": 2048 }},
                  "v28-b.params": {{ "cid": "z", "digest": "{ABC_DIGEST}", "sector_size": 8388608 }} }}"#
        );
        let manifest = ParameterManifest::from_json(&json).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("v28-a.params"), b"abc").unwrap();
        std::fs::write(dir.path().join("v28-a.vk"), b"abd").unwrap();
        std::fs::write(dir.path().join("v27-old.params"), b"").unwrap();
        std::fs::write(dir.path().join("v28-a.meta"), b"{}").unwrap();
        let all = manifest.check_dir(dir.path(), &|_| true, &|_| {}).unwrap();
        let got: Vec<(&str, &FileStatus)> = all.iter().map(|r| (r.name.as_str(), &r.status)).collect();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], ("v27-old.params", &FileStatus::Unknown));
        assert_eq!(got[1], ("v28-a.params", &FileStatus::Valid));
        assert_eq!(got[2].0, "v28-a.vk");
        assert!(matches!(got[2].1, FileStatus::Mismatched { digest } if digest.len() == 32 && digest != ABC_DIGEST));
        assert_eq!(got[3], ("v28-b.params", &FileStatus::Missing));
        // A selection by sector size leaves the other sizes out.
        let small = manifest.check_dir(dir.path(), &|e| e.sector_size == 2048, &|_| {}).unwrap();
        assert!(small.iter().all(|r| r.entry.as_ref().is_none_or(|e| e.sector_size == 2048)));
        assert!(matches!(
            manifest.check_dir(&dir.path().join("nope"), &|_| true, &|_| {}),
            Err(ParamsError::Missing { .. })
        ));
    }

    #[test]
    fn the_production_manifest_names_the_32gib_porep_parameters() {
        let m = ParameterManifest::production();
        let porep_32g: Vec<_> = m
            .entries()
            .filter(|e| e.sector_size == 32 << 30 && e.name.contains("stacked-proof-of-replication"))
            .collect();
        // The .params and .vk of the 32 GiB PoRep circuit.
        assert_eq!(porep_32g.len(), 2, "{porep_32g:?}");
        assert!(m.entries().all(|e| e.digest.len() == 32));
    }
}
