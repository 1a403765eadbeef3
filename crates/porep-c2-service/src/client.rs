//! A client for the service (and for any cuzk.v1 daemon): what the
//! `porep-c2 bench --daemon` load runs and the tests use.

use tonic::transport::{Channel, Endpoint, Uri};

use crate::proto::proving_engine_client::ProvingEngineClient;
use crate::server::Listen;

/// Messages up to this size each way, as Curio's client allows (a 32 GiB
/// C1 output is ~100-270 KB; the limit leaves room for other kinds).
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// A client of the daemon at `address` (`unix:///path.sock` or `host:port`).
pub async fn connect(address: &Listen) -> Result<ProvingEngineClient<Channel>, tonic::transport::Error> {
    let channel = match address {
        Listen::Unix(path) => {
            let path = path.clone();
            // The authority is never sent to a socket: any valid URI will do.
            Endpoint::from_static("http://localhost")
                .connect_with_connector(tower::service_fn(move |_: Uri| {
                    let path = path.clone();
                    async move {
                        let stream = tokio::net::UnixStream::connect(path).await?;
                        Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
                    }
                }))
                .await?
        }
        Listen::Tcp(addr) => Endpoint::from_shared(format!("http://{addr}"))?.connect().await?,
    };
    Ok(ProvingEngineClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES))
}
