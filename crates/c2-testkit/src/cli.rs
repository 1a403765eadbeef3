//! Command-line helpers shared by the examples (`prove`, `witness-mix`) and
//! the `porep-c2` command.

/// A 32-byte value from 64 hex digits (optionally `0x`-prefixed), e.g. a
/// prover id.
pub fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let s = s.trim_start_matches("0x");
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A registered PoRep (V1_1) by sector size, case-insensitive: `2KiB`,
/// `8MiB`, `512MiB`, `32GiB`, `64GiB`, or the short forms `2k`, `8m`,
/// `512m`, `32g`, `64g`.
pub fn parse_sector_size(s: &str) -> Option<filecoin_proofs_api::RegisteredSealProof> {
    use filecoin_proofs_api::RegisteredSealProof as R;
    Some(match s.to_ascii_lowercase().trim_end_matches("ib") {
        "2k" => R::StackedDrg2KiBV1_1,
        "8m" => R::StackedDrg8MiBV1_1,
        "512m" => R::StackedDrg512MiBV1_1,
        "32g" => R::StackedDrg32GiBV1_1,
        "64g" => R::StackedDrg64GiBV1_1,
        _ => return None,
    })
}

/// `--backend cpu|auto`.
pub fn parse_backend(s: &str) -> Option<porep_c2::Backend> {
    match s {
        "cpu" => Some(porep_c2::Backend::cpu()),
        "auto" => Some(porep_c2::Backend::auto()),
        _ => None,
    }
}

/// Prints the error and exits with status 1.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1)
}
