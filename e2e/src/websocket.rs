//! A WebSocket client through the router, for the WebSocket e2e tests.

use std::net::{Ipv4Addr, SocketAddr};

use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;

/// A client's socket.
pub type Socket = WebSocketStream<TcpStream>;

/// A socket to `host`'s Worker through the router at `ingress`, from the
/// loopback address `from` (a client of its own), and the node that serves
/// it (`x-isolane-node`).
pub async fn connect_from(
    ingress: SocketAddr,
    host: &str,
    from: [u8; 4],
) -> Result<(Socket, String), String> {
    let tcp = TcpSocket::new_v4().map_err(|e| e.to_string())?;
    tcp.bind((Ipv4Addr::from(from), 0).into())
        .map_err(|e| e.to_string())?;
    let tcp = tcp.connect(ingress).await.map_err(|e| e.to_string())?;
    let (socket, response) = tokio_tungstenite::client_async(format!("ws://{host}/"), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let node = response
        .headers()
        .get("x-isolane-node")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    Ok((socket, node))
}
