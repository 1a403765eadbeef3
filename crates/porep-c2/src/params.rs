//! Groth16 parameters: where they are found and how they are read.
//!
//! The file format is bellperson's (`Parameters::write`): the verifying key,
//! then the H, L, A, B_G1 (uncompressed G1, 96 bytes each) and B_G2
//! (uncompressed G2, 192 bytes) vectors, each behind a big-endian u32 length.
//! We read it ourselves, in parallel, with every length checked against the
//! file size first: a truncated or corrupt file is a typed error, never a
//! panic (bellperson's mmap reader indexes past the end of a short file).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{Bls12, G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use rayon::prelude::*;
use storage_proofs_core::parameter_cache::{GROTH_PARAMETER_EXT, VERIFYING_KEY_EXT, VERSION};

/// filecoin-proofs' default parameter folder (used when
/// `FIL_PROOFS_PARAMETER_CACHE` is not set).
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters/";

/// The environment variable filecoin-proofs reads for the parameter folder.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

const G1_LEN: u64 = 96;
const G2_LEN: u64 = 192;
/// Points decoded per task: large enough to amortise a positional read.
const CHUNK_POINTS: u64 = 1 << 15;

/// Where the prover gets its Groth16 parameters.
#[derive(Clone)]
pub enum ParamsSource {
    /// A filecoin-proofs parameter folder: the file is
    /// `v28-<parameter id>.params` in it, exactly as filecoin-proofs names it.
    CacheDir(PathBuf),
    /// This exact `.params` file.
    File(PathBuf),
    /// Parameters already in memory (reuse across proofs of one sector size).
    Loaded(Arc<Parameters<Bls12>>),
    /// Sets already in memory, by parameter id: a process serving several
    /// circuits with sets it made itself (test kits, benchmarks over
    /// generated parameters). An id not in the map is
    /// [`ParamsError::NotInMemory`].
    ById(Arc<BTreeMap<String, Arc<Parameters<Bls12>>>>),
}

impl std::fmt::Debug for ParamsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CacheDir(p) => f.debug_tuple("CacheDir").field(p).finish(),
            Self::File(p) => f.debug_tuple("File").field(p).finish(),
            Self::Loaded(p) => write!(f, "Loaded(h: {}, l: {})", p.h.len(), p.l.len()),
            Self::ById(sets) => f.debug_tuple("ById").field(&sets.keys().collect::<Vec<_>>()).finish(),
        }
    }
}

impl Default for ParamsSource {
    fn default() -> Self {
        Self::CacheDir(PathBuf::from(DEFAULT_PARAMETER_CACHE))
    }
}

impl ParamsSource {
    /// The source filecoin-proofs would use: `$FIL_PROOFS_PARAMETER_CACHE`,
    /// else its default folder. This is the one place the crate reads it.
    pub fn from_env() -> Self {
        match std::env::var_os(PARAMETER_CACHE_ENV) {
            Some(dir) if !dir.is_empty() => Self::CacheDir(PathBuf::from(dir)),
            _ => Self::default(),
        }
    }

    /// Reads the parameters for `parameter_id` (see
    /// [`c2_synth::ProofInstance::parameter_id`]) from their file, every
    /// call; [`crate::ParamsCache::load`] reads each file once.
    pub fn load(&self, parameter_id: &str) -> Result<Arc<Parameters<Bls12>>, ParamsError> {
        match self {
            Self::Loaded(p) => Ok(p.clone()),
            Self::ById(sets) => sets
                .get(parameter_id)
                .cloned()
                .ok_or_else(|| ParamsError::NotInMemory { parameter_id: parameter_id.to_string() }),
            Self::File(path) => read_parameters(path).map(Arc::new),
            Self::CacheDir(dir) => read_parameters(&params_path(dir, parameter_id)).map(Arc::new),
        }
    }

    /// The file behind this source for `parameter_id` (`None` for
    /// parameters already in memory).
    pub fn path(&self, parameter_id: &str) -> Option<PathBuf> {
        match self {
            Self::Loaded(_) | Self::ById(_) => None,
            Self::File(path) => Some(path.clone()),
            Self::CacheDir(dir) => Some(params_path(dir, parameter_id)),
        }
    }
}

/// `<dir>/v28-<id>.params`, filecoin-proofs' file name.
pub fn params_path(dir: &Path, parameter_id: &str) -> PathBuf {
    dir.join(format!("v{VERSION}-{parameter_id}.{GROTH_PARAMETER_EXT}"))
}

/// `<dir>/v28-<id>.vk`, filecoin-proofs' verifying key file name.
pub fn verifying_key_path(dir: &Path, parameter_id: &str) -> PathBuf {
    dir.join(format!("v{VERSION}-{parameter_id}.{VERIFYING_KEY_EXT}"))
}

/// Errors reading parameters.
#[derive(Debug, thiserror::Error)]
pub enum ParamsError {
    /// The file does not exist.
    #[error("Groth16 parameter file {path} not found (set FIL_PROOFS_PARAMETER_CACHE or pass the file)")]
    Missing {
        /// The path looked for.
        path: PathBuf,
    },
    /// [`ParamsSource::ById`] holds no set of this id.
    #[error("no Groth16 parameters in memory for {parameter_id}")]
    NotInMemory {
        /// The parameter id asked for.
        parameter_id: String,
    },
    /// Another I/O error.
    #[error("reading Groth16 parameters {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file ends before the data its headers announce.
    #[error("Groth16 parameter file {path} is truncated: section {section} needs {needed} bytes, file has {actual}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which section ran past the end.
        section: &'static str,
        /// Bytes needed up to the end of that section.
        needed: u64,
        /// File size.
        actual: u64,
    },
    /// A point does not decode, or is the point at infinity where the format
    /// forbids it.
    #[error("Groth16 parameter file {path}: invalid point {index} in section {section}")]
    InvalidPoint {
        /// The file.
        path: PathBuf,
        /// The section.
        section: &'static str,
        /// Index within the section.
        index: u64,
    },
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> ParamsError + '_ {
    move |source| {
        if source.kind() == std::io::ErrorKind::UnexpectedEof {
            ParamsError::Truncated { path: path.into(), section: "vk", needed: 0, actual: 0 }
        } else {
            ParamsError::Io { path: path.into(), source }
        }
    }
}

/// Reads a bellperson parameter file (points unchecked for subgroup
/// membership, exactly as filecoin-proofs reads its cached parameters).
pub fn read_parameters(path: &Path) -> Result<Parameters<Bls12>, ParamsError> {
    let file = File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ParamsError::Missing { path: path.into() },
        _ => ParamsError::Io { path: path.into(), source },
    })?;
    let file_len = file.metadata().map_err(io_err(path))?.len();

    // The verifying key is small: read it with bellperson's own reader.
    let mut reader = BufReader::new(&file);
    let vk = VerifyingKey::<Bls12>::read(&mut reader).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            ParamsError::Truncated { path: path.into(), section: "vk", needed: 0, actual: file_len }
        }
        std::io::ErrorKind::InvalidData => ParamsError::InvalidPoint { path: path.into(), section: "vk", index: 0 },
        _ => ParamsError::Io { path: path.into(), source: e },
    })?;
    drop(reader);
    let mut offset = 3 * G1_LEN + 3 * G2_LEN + 4 + G1_LEN * vk.ic.len() as u64;

    let section_g1 = |section: &'static str, offset: &mut u64| {
        read_section(&file, path, file_len, section, offset, G1_LEN, |b| {
            let mut repr = [0u8; 96];
            repr.copy_from_slice(b);
            Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&repr))
                .filter(|p| !bool::from(p.is_identity()))
        })
    };
    let h = section_g1("h", &mut offset)?;
    let l = section_g1("l", &mut offset)?;
    let a = section_g1("a", &mut offset)?;
    let b_g1 = section_g1("b_g1", &mut offset)?;
    let b_g2 = read_section(&file, path, file_len, "b_g2", &mut offset, G2_LEN, |b| {
        let mut repr = [0u8; 192];
        repr.copy_from_slice(b);
        Option::<G2Affine>::from(G2Affine::from_uncompressed_unchecked(&repr)).filter(|p| !bool::from(p.is_identity()))
    })?;
    Ok(Parameters { vk, h: Arc::new(h), l: Arc::new(l), a: Arc::new(a), b_g1: Arc::new(b_g1), b_g2: Arc::new(b_g2) })
}

/// Reads one length-prefixed section of points starting at `*offset`,
/// decoding chunks in parallel; advances `*offset` past it.
fn read_section<T: Send>(
    file: &File,
    path: &Path,
    file_len: u64,
    section: &'static str,
    offset: &mut u64,
    point_len: u64,
    decode: impl Fn(&[u8]) -> Option<T> + Sync,
) -> Result<Vec<T>, ParamsError> {
    let truncated = |needed| ParamsError::Truncated { path: path.into(), section, needed, actual: file_len };
    if *offset + 4 > file_len {
        return Err(truncated(*offset + 4));
    }
    let mut len_bytes = [0u8; 4];
    file.read_exact_at(&mut len_bytes, *offset).map_err(io_err(path))?;
    let count = u32::from_be_bytes(len_bytes) as u64;
    let start = *offset + 4;
    let end = start + count * point_len;
    if end > file_len {
        return Err(truncated(end));
    }
    let chunks: Vec<u64> = (0..count.div_ceil(CHUNK_POINTS)).collect();
    let parts: Vec<Vec<T>> = chunks
        .par_iter()
        .map(|&ci| {
            let first = ci * CHUNK_POINTS;
            let n = CHUNK_POINTS.min(count - first);
            let mut buf = vec![0u8; (n * point_len) as usize];
            file.read_exact_at(&mut buf, start + first * point_len).map_err(io_err(path))?;
            buf.chunks_exact(point_len as usize)
                .enumerate()
                .map(|(i, b)| {
                    decode(b).ok_or(ParamsError::InvalidPoint { path: path.into(), section, index: first + i as u64 })
                })
                .collect()
        })
        .collect::<Result<_, _>>()?;
    *offset = end;
    let mut out = Vec::with_capacity(count as usize);
    for p in parts {
        out.extend(p);
    }
    Ok(out)
}

/// Writes parameters in bellperson's format, plus the `.vk` file beside them
/// when `vk_path` is given (the layout filecoin-proofs' cache expects).
pub fn write_parameters(
    params: &Parameters<Bls12>,
    params_path: &Path,
    vk_path: Option<&Path>,
) -> Result<(), ParamsError> {
    let io = |source| ParamsError::Io { path: params_path.into(), source };
    if let Some(dir) = params_path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    // Each file is written under a name of its own writer and renamed: a
    // crash never leaves a truncated file under the real name, and two
    // writers of the same set never write into one file.
    write_then_rename(params_path, |w| params.write(w))?;
    if let Some(vk_path) = vk_path {
        write_then_rename(vk_path, |w| params.vk.write(w))?;
    }
    Ok(())
}

/// Writes a `.vk` file alone (bellperson's verifying key format, what
/// filecoin-proofs' verifiers read from its cache), its folder created,
/// renamed into place as [`write_parameters`] does.
pub fn write_verifying_key(vk: &VerifyingKey<Bls12>, vk_path: &Path) -> Result<(), ParamsError> {
    if let Some(dir) = vk_path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| ParamsError::Io { path: vk_path.into(), source })?;
    }
    write_then_rename(vk_path, |w| vk.write(w))
}

/// Writes `path` through `write` into `<path>.partial.<process>.<thread>`,
/// then renames it into place (atomic on one file system).
fn write_then_rename(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), ParamsError> {
    let io = |source| ParamsError::Io { path: path.into(), source };
    let thread = format!("{:?}", std::thread::current().id());
    let thread: String = thread.chars().filter(char::is_ascii_digit).collect();
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".partial.{}.{thread}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = (|| {
        let mut w = std::io::BufWriter::new(File::create(&tmp)?);
        write(&mut w)?;
        std::io::Write::flush(&mut w)?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(io)
}

/// Reads a `.vk` file (bellperson's verifying key format), or the verifying
/// key at the head of a `.params` file (only the head is read).
pub fn read_verifying_key(path: &Path) -> Result<VerifyingKey<Bls12>, ParamsError> {
    let f = File::open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ParamsError::Missing { path: path.into() },
        _ => ParamsError::Io { path: path.into(), source },
    })?;
    VerifyingKey::read(BufReader::new(f)).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            ParamsError::Truncated { path: path.into(), section: "vk", needed: 0, actual: 0 }
        }
        std::io::ErrorKind::InvalidData => ParamsError::InvalidPoint { path: path.into(), section: "vk", index: 0 },
        _ => ParamsError::Io { path: path.into(), source: e },
    })
}

/// Names a parameter set for device caches: the file's cache identifier
/// (`parameter_id`) and the start of its verifying key's delta (random per
/// setup, so two setups under one name never share a cache entry).
pub fn params_key(parameter_id: &str, params: &Parameters<Bls12>) -> String {
    let delta = params.vk.delta_g1.to_compressed();
    let hex: String = delta[..12].iter().map(|b| format!("{b:02x}")).collect();
    format!("{parameter_id}#{hex}")
}
