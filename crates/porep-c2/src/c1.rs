//! Reading the C1 output as node software hands it over: filecoin-proofs-api's
//! `SealCommitPhase1Output` JSON (what Lotus and Curio write to disk), or the
//! same JSON inside the envelope that Curio's cuzk client sends
//! (`lib/ffi/cuzk_funcs.go`, `c1OutputWrapper`) and lotus-bench writes
//! (`Commit2In`): `{"SectorNum": n, "Phase1Out": "<base64>", "SectorSize": bytes}`,
//! with `Phase1Out` the C1 JSON in standard base64 with padding, as Go's
//! `encoding/json` writes a `[]byte`. One reader for the CLI and every engine.

use std::path::Path;

use base64::Engine as _;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use serde::Deserialize;

use crate::error::Error;

/// Parses a C1 output from filecoin-proofs-api's JSON (what Lotus and Curio
/// write). [`C1Input::parse`] also reads the envelope.
pub fn parse_c1_json(bytes: &[u8]) -> Result<SealCommitPhase1Output, Error> {
    parse_raw(bytes, "input")
}

/// Reads and parses a C1 JSON file (raw C1 JSON or the envelope; the
/// envelope's sector fields are checked against the C1 output's size).
pub fn read_c1_json(path: &Path) -> Result<SealCommitPhase1Output, Error> {
    let input = C1Input::read(path)?;
    input.check_sector(None, None)?;
    Ok(input.c1)
}

fn parse_raw(bytes: &[u8], source_name: &str) -> Result<SealCommitPhase1Output, Error> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::InvalidC1 { source_name: source_name.to_string(), message: e.to_string() })
}

/// The sector fields of the envelope (Curio's `c1OutputWrapper`,
/// lotus-bench's `Commit2In`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct C1Envelope {
    /// `SectorNum`: the sector's number.
    pub sector_number: u64,
    /// `SectorSize`: the sector's size in bytes.
    pub sector_size: u64,
}

impl C1Envelope {
    /// `c1_json` in this envelope, byte for byte as Go's `encoding/json`
    /// writes Curio's `c1OutputWrapper` (fields in declaration order, no
    /// spaces, `Phase1Out` in padded standard base64): what Curio sends as
    /// a PoRep request's `vanilla_proof`.
    pub fn wrap(&self, c1_json: &[u8]) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(c1_json);
        format!(r#"{{"SectorNum":{},"Phase1Out":"{b64}","SectorSize":{}}}"#, self.sector_number, self.sector_size)
            .into_bytes()
    }
}

/// A C1 output and, when it came in the envelope, the envelope's fields.
#[derive(Debug)]
pub struct C1Input {
    /// The C1 output.
    pub c1: SealCommitPhase1Output,
    /// `Some` when the input was the envelope.
    pub envelope: Option<C1Envelope>,
}

/// The envelope's keys; every one optional so that a raw C1 output (none of
/// them) parses too, its own keys skipped.
/// The numbers are read as any JSON value, so that a wrong one (Go's
/// `int64` allows -1) is named rather than mistaken for a raw C1 output.
#[derive(Deserialize)]
struct EnvelopeKeys {
    #[serde(rename = "SectorNum")]
    sector_num: Option<serde_json::Value>,
    #[serde(rename = "Phase1Out")]
    phase1_out: Option<String>,
    #[serde(rename = "SectorSize")]
    sector_size: Option<serde_json::Value>,
}

impl C1Input {
    /// Parses raw C1 JSON or the envelope (told apart by its `Phase1Out`
    /// key). A malformed envelope (a key missing, `Phase1Out` not base64)
    /// or C1 JSON is [`Error::InvalidC1`] naming the part.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        Self::parse_named(bytes, "input")
    }

    /// Reads and parses a file (see [`C1Input::parse`]).
    pub fn read(path: &Path) -> Result<Self, Error> {
        let name = path.display().to_string();
        let bytes =
            std::fs::read(path).map_err(|e| Error::InvalidC1 { source_name: name.clone(), message: e.to_string() })?;
        Self::parse_named(&bytes, &name)
    }

    fn parse_named(bytes: &[u8], name: &str) -> Result<Self, Error> {
        let keys = match serde_json::from_slice::<EnvelopeKeys>(bytes) {
            Ok(k) => k,
            // Not a JSON object at all: the C1 parser's message says where.
            Err(_) => return Ok(Self { c1: parse_raw(bytes, name)?, envelope: None }),
        };
        let Some(phase1_out) = keys.phase1_out else {
            return Ok(Self { c1: parse_raw(bytes, name)?, envelope: None });
        };
        let bad = |message: String| Error::InvalidC1 { source_name: format!("{name} (envelope)"), message };
        let (Some(sector_num), Some(size)) = (keys.sector_num, keys.sector_size) else {
            return Err(bad("an envelope needs SectorNum, Phase1Out and SectorSize".into()));
        };
        let number = |key: &str, v: serde_json::Value| {
            v.as_u64().ok_or_else(|| bad(format!("{key} = {v} is not an unsigned integer")))
        };
        let (sector_number, sector_size) = (number("SectorNum", sector_num)?, number("SectorSize", size)?);
        let json = base64::engine::general_purpose::STANDARD
            .decode(phase1_out.trim())
            .map_err(|e| bad(format!("Phase1Out is not standard base64: {e}")))?;
        drop(phase1_out);
        let c1 = parse_raw(&json, &format!("{name} (envelope's Phase1Out)"))?;
        Ok(Self { c1, envelope: Some(C1Envelope { sector_number, sector_size }) })
    }

    /// The C1 output's sector size in bytes (from its registered proof).
    pub fn sector_size(&self) -> u64 {
        u64::from(self.c1.registered_proof.sector_size())
    }

    /// Checks that the envelope (when there is one) agrees with the C1
    /// output's own sector size and with the caller's `sector_number` and
    /// `sector_size` (when given, e.g. a request's fields): a mismatch is
    /// [`Error::C1Mismatch`] naming both values. Also checks the caller's
    /// `sector_size` against the C1 output without an envelope.
    pub fn check_sector(&self, sector_number: Option<u64>, sector_size: Option<u64>) -> Result<(), Error> {
        let own = self.sector_size();
        let mismatch = |what: &'static str, expected: u64, found: u64| {
            if expected == found {
                Ok(())
            } else {
                Err(Error::C1Mismatch { what, expected, found })
            }
        };
        if let Some(e) = self.envelope {
            mismatch(
                "the envelope's SectorSize (expected: the C1 output's registered proof's size)",
                own,
                e.sector_size,
            )?;
            if let Some(n) = sector_number {
                mismatch("the envelope's SectorNum (expected: the request's sector number)", n, e.sector_number)?;
            }
        }
        if let Some(s) = sector_size {
            mismatch("the request's sector size (expected: the C1 output's registered proof's size)", own, s)?;
        }
        Ok(())
    }

    /// The sector number the envelope names, if any.
    pub fn sector_number(&self) -> Option<u64> {
        self.envelope.map(|e| e.sector_number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The envelope as Go's `encoding/json` writes `c1OutputWrapper`
    /// (`SectorNum` is Go's int64, so negative numbers can be sent).
    fn go_envelope(c1_json: &[u8], sector: i64, size: u64) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(c1_json);
        let out = format!(r#"{{"SectorNum":{sector},"Phase1Out":"{b64}","SectorSize":{size}}}"#).into_bytes();
        if let Ok(n) = u64::try_from(sector) {
            assert_eq!(C1Envelope { sector_number: n, sector_size: size }.wrap(c1_json), out);
        }
        out
    }

    fn is_invalid(r: Result<C1Input, Error>, needle: &str) {
        match r {
            Err(Error::InvalidC1 { message, source_name }) => {
                assert!(message.contains(needle) || source_name.contains(needle), "{source_name}: {message}")
            }
            other => panic!("expected InvalidC1 ({needle}), got {other:?}"),
        }
    }

    #[test]
    fn malformed_envelopes_are_named() {
        // Not JSON, and JSON that is neither a C1 output nor an envelope.
        is_invalid(C1Input::parse(b"not json"), "expected");
        is_invalid(C1Input::parse(b"{}"), "registered_proof");
        // An envelope without SectorSize, with bad base64, with a C1 that is not one.
        is_invalid(C1Input::parse(br#"{"SectorNum":1,"Phase1Out":"e30="}"#), "SectorSize");
        is_invalid(C1Input::parse(br#"{"SectorNum":1,"Phase1Out":"%%%","SectorSize":2048}"#), "base64");
        is_invalid(C1Input::parse(&go_envelope(b"{}", 1, 2048)), "Phase1Out");
        // A negative sector number (Go's int64) is refused by name.
        is_invalid(C1Input::parse(&go_envelope(b"{}", -1, 2048)), "SectorNum = -1");
    }

    #[test]
    fn envelopes_are_told_from_raw_c1_and_checked() {
        // Any C1 output serializes: one made of defaults is enough for the reader.
        let c1 = tiny_c1();
        let raw = serde_json::to_vec(&c1).unwrap();
        let plain = C1Input::parse(&raw).unwrap();
        assert_eq!(plain.envelope, None);
        plain.check_sector(Some(7), None).unwrap();
        let size = plain.sector_size();
        assert_eq!(size, 2048);
        let wrapped = C1Input::parse(&go_envelope(&raw, 7, size)).unwrap();
        assert_eq!(wrapped.envelope, Some(C1Envelope { sector_number: 7, sector_size: 2048 }));
        assert_eq!(serde_json::to_vec(&wrapped.c1).unwrap(), raw);
        wrapped.check_sector(Some(7), Some(2048)).unwrap();
        // Mismatches name both values.
        let e = wrapped.check_sector(Some(8), None).unwrap_err();
        assert!(matches!(e, Error::C1Mismatch { expected: 8, found: 7, .. }), "{e}");
        let e = C1Input::parse(&go_envelope(&raw, 7, 8 << 20)).unwrap().check_sector(None, None).unwrap_err();
        assert!(matches!(e, Error::C1Mismatch { expected: 2048, found: 8388608, .. }), "{e}");
        assert!(e.to_string().contains("SectorSize"), "{e}");
        let e = plain.check_sector(None, Some(32 << 30)).unwrap_err();
        assert!(matches!(e, Error::C1Mismatch { expected: 2048, found: 34359738368, .. }), "{e}");
    }

    /// A C1 output of the 2 KiB proof with no vanilla proofs (the reader
    /// does not look inside them).
    fn tiny_c1() -> SealCommitPhase1Output {
        use filecoin_proofs_api::seal::VanillaSealProof;
        use filecoin_proofs_api::RegisteredSealProof;
        SealCommitPhase1Output {
            registered_proof: RegisteredSealProof::StackedDrg2KiBV1_1,
            vanilla_proofs: VanillaSealProof::StackedDrg2KiBV1(Vec::new()),
            comm_r: [1; 32],
            comm_d: [2; 32],
            replica_id: Default::default(),
            seed: [4; 32],
            ticket: [5; 32],
        }
    }
}
