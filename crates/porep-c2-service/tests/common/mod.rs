//! The tiny-sector engine shared by the service tests and the
//! `tiny-daemon` example (the other-language client check in CI).
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_testkit::demo::{self, TinyConfig};
use porep_c2::{prove_instance, Backend, CancelToken, ProverConfig};
use porep_c2_service::{
    request_config, Engine, EngineError, LoadedSet, Placement, ProofKind, ProofOutput, ProofRequest,
};

/// The tiny sector's parameters from `dir` (generated there once): its
/// circuit does not depend on the partition count, so one set serves every
/// request.
pub fn tiny_params(dir: &Path) -> Arc<Parameters<Bls12>> {
    static PARAMS: Mutex<Option<Arc<Parameters<Bls12>>>> = Mutex::new(None);
    let mut p = PARAMS.lock().unwrap_or_else(|e| e.into_inner());
    p.get_or_insert_with(|| {
        let instance =
            demo::tiny_instance(&TinyConfig { partitions: 2, ..TinyConfig::default() }).expect("tiny sector");
        demo::ensure_parameters(&instance, dir, 7).expect("tiny parameters").0
    })
    .clone()
}

/// Blinding for a request: fixed per sector number, so the library can
/// make the same proof.
pub fn blinding(sector: u64, partitions: usize) -> Vec<(Scalar, Scalar)> {
    (0..partitions).map(|k| (Scalar::from(sector * 100 + k as u64 + 1), Scalar::from(sector * 100 + 51))).collect()
}

/// A tiny sector named by a request: `vanilla_proof` is `"<seed>:<partitions>"`.
fn tiny_of(request: &ProofRequest) -> Result<TinyConfig, EngineError> {
    let text = String::from_utf8_lossy(&request.vanilla_proof).to_string();
    let (seed, parts) = text
        .split_once(':')
        .ok_or_else(|| EngineError::Invalid(format!("vanilla_proof {text:?} is not <seed>:<partitions>")))?;
    let parse = |s: &str| s.parse::<u64>().map_err(|e| EngineError::Invalid(format!("{s:?}: {e}")));
    Ok(TinyConfig { seed: parse(seed)?, partitions: parse(parts)? as usize, ..TinyConfig::default() })
}

/// Proves tiny sectors through the facade (`prove_instance`: synthesis,
/// CPU stages, verification), honouring the request's priority and
/// cancellation like `PorepEngine`.
pub struct TinyEngine {
    /// The tiny sector's parameters.
    pub params: Arc<Parameters<Bls12>>,
    /// How partitions are proved (the CPU stages; a test's workers).
    pub backend: Backend,
}

impl TinyEngine {
    /// Proving on the CPU stages.
    pub fn new(params: Arc<Parameters<Bls12>>) -> Self {
        Self { params, backend: Backend::cpu() }
    }
}

impl Engine for TinyEngine {
    fn supports(&self, kind: ProofKind) -> bool {
        kind == ProofKind::PorepSealCommit
    }

    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        placement: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError> {
        let tiny = tiny_of(request)?;
        let instance = demo::tiny_instance(&tiny).map_err(|e| EngineError::Invalid(e.to_string()))?;
        let base = ProverConfig { backend: self.backend.clone(), ..ProverConfig::default() };
        let config = request_config(&base, request, cancel, placement);
        let pairs = blinding(request.sector_number, tiny.partitions);
        ProofOutput::from_result(prove_instance(&instance, &self.params, &pairs, &config))
    }

    fn preload(&self, _: &str) -> Result<bool, EngineError> {
        Ok(true)
    }

    fn evict(&self, _: &str) -> Result<u64, EngineError> {
        Ok(0)
    }

    fn loaded(&self) -> Vec<LoadedSet> {
        Vec::new()
    }

    fn worker_health(&self) -> Vec<(String, bool)> {
        self.backend.worker_health()
    }
}
