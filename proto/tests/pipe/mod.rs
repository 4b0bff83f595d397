//! A tonic client connected to a `Runtime` server through an in-memory
//! duplex pipe (no socket), for the tests of this crate.

use isolane_proto::runtime::v1::runtime_client::RuntimeClient;
use isolane_proto::runtime::v1::runtime_server::{Runtime, RuntimeServer};
use tonic::transport::{Channel, Endpoint, Server, Uri};

/// A client of `service` through a pipe buffering `pipe_bytes` each way.
pub async fn connect<S: Runtime>(service: S, pipe_bytes: usize) -> RuntimeClient<Channel> {
    let (client_io, server_io) = tokio::io::duplex(pipe_bytes);
    tokio::spawn(
        Server::builder()
            .add_service(RuntimeServer::new(service))
            .serve_with_incoming(tokio_stream::once(Ok::<_, std::io::Error>(server_io))),
    );
    let mut client_io = Some(client_io);
    let channel = Endpoint::from_static("http://in-memory")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let io = client_io.take();
            async move {
                io.map(hyper_util::rt::TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("the in-memory pipe connects once"))
            }
        }))
        .await
        .expect("the in-memory channel connects");
    RuntimeClient::new(channel)
}
