//! A daemon proving tiny StackedDrg sectors (the service tests' engine) on
//! a unix socket, for clients in other languages to check the wire
//! protocol against (CI runs Python's grpcio against it):
//!
//! ```text
//! cargo run --release -p porep-c2-service --example tiny-daemon -- SOCKET PARAMS_DIR
//! ```
//! A request's `vanilla_proof` is `"<seed>:<partitions>"`; proofs are real
//! and verified (the tiny sector's parameters are read from, or generated
//! into, PARAMS_DIR). Prints `ready` once listening; stops (draining) on
//! SIGTERM or Ctrl-C.

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use porep_c2_service::{serve, Jobs, JobsConfig, Listen, Metrics};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [socket, params_dir] = args.as_slice() else {
        eprintln!("usage: tiny-daemon SOCKET PARAMS_DIR");
        std::process::exit(2)
    };
    let engine = Arc::new(common::TinyEngine::new(common::tiny_params(std::path::Path::new(params_dir))));
    let jobs = Jobs::start(engine, JobsConfig::default(), Arc::new(Metrics::default()));
    let listen = Listen::Unix(socket.into());
    tokio::runtime::Runtime::new()?.block_on(async {
        let shutdown = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM");
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        serve(&listen, jobs, 256 << 20, shutdown, || println!("ready")).await
    })?;
    Ok(())
}
