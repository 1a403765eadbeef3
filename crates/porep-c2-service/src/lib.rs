//! A proving service for node software: Curio's cuzk.v1 `ProvingEngine`
//! gRPC protocol (package, service, messages and field numbers as Curio's
//! generated client expects them, so `[Cuzk] Address` can point at it
//! unchanged), a thin layer over the `porep-c2` facade.
//!
//! ```text
//!  Curio (lib/cuzk client) ──gRPC──► server   (unix socket or TCP, 256 MiB messages)
//!                                     │ service  (decode, status codes, waiting)
//!                                     ▼
//!                                   jobs     (priority queue, runners, cancel, drain)
//!                                     │ Engine::prove (blocking, on a runner thread)
//!                                     ▼
//!                                   FilecoinEngine ──► porep_c2::prove_porep_c2_with_report
//!                                                  ├─► porep_c2::prove_window_post_with_report
//!                                                  ├─► porep_c2::prove_winning_post_with_report
//!                                                  └─► porep_c2::prove_empty_sector_update_with_report
//! ```
//! The process keeps the facades' parameter cache and GPU backend for its
//! lifetime, so parameters are read once and stay on the devices across
//! proofs. `POREP_SEAL_COMMIT` (raw C1 JSON or Curio's envelope),
//! `WINDOW_POST_PARTITION`, `WINNING_POST` and `SNAP_DEALS_UPDATE` (bincode
//! vanilla proofs): every kind Curio sends to its `[Cuzk] Address`, proved
//! on the same workers, PoSt ahead of queued C2 and SnapDeals by priority
//! (GPU turns and, with host lanes, host threads). Every returned
//! proof was verified by the facade. The job table holds results, never
//! request bodies once a job ends, and a request beyond `max_pending` is
//! refused before its body is read.
#![deny(missing_docs)]

pub mod client;
pub mod config;
pub mod curio;
pub mod engine;
pub mod jobs;
pub mod metrics;
pub mod request;
pub mod server;
pub mod service;

/// The protocol's messages, server and client (generated from
/// `proto/cuzk/v1/proving.proto`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("cuzk.v1");
}

pub use config::ServiceConfig;
pub use engine::{
    check_registered_proof, circuit_sector_size, known_circuits, post_request, request_config, update_request, Circuit,
    Engine, EngineError, FilecoinEngine, LoadedSet, Placement, ProofOutput, SECTOR_SIZES,
};
pub use jobs::{Jobs, JobsConfig};
pub use metrics::Metrics;
pub use request::{
    prover_id_from_actor, registered_post_proof, registered_seal_proof, registered_update_proof, ProofKind,
    ProofRequest, RequestInfo,
};
pub use server::{serve, serve_with, Listen, ServeError, ServeOptions};
pub use service::ProvingService;
