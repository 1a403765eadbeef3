//! TIMING ONLY: `porep-c2 serve --synthetic-timing-only`, an engine that
//! answers every PoRep request with a proof of synthetic 32 GiB-shaped
//! partitions over random parameters (what `porep-c2 bench --synthetic`
//! proves in-process), whatever its C1 output. It exists to measure the
//! service's own overhead at the 32 GiB shape where no 32 GiB parameters
//! exist: its proofs do not verify and it must never face a node.

use std::sync::Arc;

use bellperson::groth16::Parameters;
use blstrs::{Bls12, Scalar};
use c2_testkit::synthetic::{SyntheticPorep, SyntheticShape};
use porep_c2::{prove_instance, CancelToken, ProofInstance, ProverConfig};
use porep_c2_service::{
    request_config, Engine, EngineError, LoadedSet, Placement, ProofKind, ProofOutput, ProofRequest,
};

/// The circuit id it reports as loaded.
const ID: &str = "synthetic-32g-timing-only";

/// Synthetic partitions for every request (see the module's documentation).
pub struct SyntheticEngine {
    instance: SyntheticPorep,
    params: Arc<Parameters<Bls12>>,
    config: ProverConfig,
}

impl SyntheticEngine {
    /// `partitions` partitions of the 32 GiB shape divided by `scale`,
    /// proved with `config` (verification and vanilla checks off: the
    /// parameters are random).
    pub fn new(scale: usize, partitions: usize, mut config: ProverConfig) -> Self {
        let shape = SyntheticShape::porep_32gib().scaled(scale.max(1));
        // Admission by the partitions' known size (16.7 GB at full scale),
        // as `bench --synthetic` does: the facade has no estimate for a
        // shape without matrices.
        config.pipeline.item_bytes = shape.host_bytes();
        let instance = SyntheticPorep::new(shape, partitions.max(1));
        let params = Arc::new(instance.parameters(1));
        config.verify = false;
        config.check_vanilla_proofs = false;
        log::warn!(
            "porep-c2: TIMING ONLY: every request proves {partitions} synthetic 32 GiB-shaped partition(s) (1/{scale}) over random parameters; the proofs do not verify"
        );
        Self { instance, params, config }
    }
}

impl Engine for SyntheticEngine {
    fn supports(&self, kind: ProofKind) -> bool {
        kind == ProofKind::PorepSealCommit
    }

    fn prove(
        &self,
        request: &ProofRequest,
        cancel: &CancelToken,
        placement: &Arc<Placement>,
    ) -> Result<ProofOutput, EngineError> {
        let config = request_config(&self.config, request, cancel, placement);
        // Fixed blinding, as the in-process synthetic bench uses.
        let blinding = vec![(Scalar::from(3u64), Scalar::from(5u64)); self.instance.num_partitions()];
        ProofOutput::from_result(prove_instance(&self.instance, &self.params, &blinding, &config))
    }

    fn preload(&self, _circuit_id: &str) -> Result<bool, EngineError> {
        let n = self.config.backend.preload(self.instance.parameter_id(), &self.params)?;
        log::info!("porep-c2: synthetic parameters resident for {n} worker(s)");
        Ok(false)
    }

    fn evict(&self, _circuit_id: &str) -> Result<u64, EngineError> {
        Ok(0)
    }

    fn loaded(&self) -> Vec<LoadedSet> {
        let bytes = porep_c2::parameter_bytes(&self.params) as u64;
        vec![LoadedSet { circuit_id: ID.into(), bytes, on_device: true }]
    }
}
