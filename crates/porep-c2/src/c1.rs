//! Reading the C1 output (filecoin-proofs-api's JSON, what Lotus and Curio
//! write).

use std::path::Path;

use filecoin_proofs_api::seal::SealCommitPhase1Output;

use crate::error::Error;

/// Parses a C1 output from filecoin-proofs-api's JSON (what Lotus and Curio
/// write).
pub fn parse_c1_json(bytes: &[u8]) -> Result<SealCommitPhase1Output, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::InvalidC1 { source_name: "input".into(), message: e.to_string() })
}

/// Reads and parses a C1 JSON file.
pub fn read_c1_json(path: &Path) -> Result<SealCommitPhase1Output, Error> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::InvalidC1 { source_name: path.display().to_string(), message: e.to_string() })?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::InvalidC1 { source_name: path.display().to_string(), message: e.to_string() })
}
