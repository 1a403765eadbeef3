//! Compiles `proto/cuzk/v1/proving.proto` with protox (a protobuf compiler in
//! Rust, so no `protoc` is needed) and generates the tonic server and client.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;
    Ok(())
}
