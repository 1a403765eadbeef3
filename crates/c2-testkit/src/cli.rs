//! Command-line helpers shared by the examples (`prove`, `c2-bench`,
//! `witness-mix`).

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
