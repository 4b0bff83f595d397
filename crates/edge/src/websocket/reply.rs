//! The closing handshake when the peer closes first: the reply is the local
//! end's, not this loop's. tungstenite queues a reply with the peer's own
//! code as it reads a close and sends it on its next read or flush, and
//! refuses every write after it; so once the peer's close is read the
//! connection is never polled through tungstenite again, and the local
//! end's messages (data it still sends, then its close) are written here as
//! raw frames, formatted by tungstenite (masked when this side is the
//! client). The Worker's side decides the reply by its compatibility
//! settings: the engine answers at once with the peer's code
//! (`web_socket_auto_reply_to_close`), or the Worker's own `close()` does.
//!
//! Bounded: a local end that does not answer within [`CLOSE_REPLY_WAIT`]
//! has the connection ended without a close frame (the peer sees 1006), as
//! workerd ends a hibernatable socket whose object did not answer; the
//! peer leaving ends the wait at once.

use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{CloseCode, Data, OpCode};
use tokio_util::sync::CancellationToken;

use super::{Role, SERVICE_RESTART, Side, Whole, cancelled};

/// How long the local end may take to answer a peer's close (its data
/// first, then its close frame) before the connection is ended without one.
pub const CLOSE_REPLY_WAIT: Duration = Duration::from_secs(10);

/// What ended one wait of [`await_local`].
enum Next<M> {
    /// A message from the local end; `None` when it dropped its sender.
    Local(Option<M>),
    /// The peer's connection ended (or failed).
    PeerGone,
    /// [`CLOSE_REPLY_WAIT`] passed.
    TimedOut,
    /// The front end stops (1012).
    Closing,
}

/// Waits for the local end's reply to the peer's close and writes it, with
/// whatever the local end sends before it; returns when the reply went, the
/// local end or the peer went, [`CLOSE_REPLY_WAIT`] passed, or `closing`
/// was cancelled (1012 to the peer).
pub(super) async fn await_local<S, D>(
    ws: &mut WebSocketStream<S>,
    role: Role,
    from_local: &mut mpsc::Receiver<D::Message>,
    write_timeout: Duration,
    closing: Option<&CancellationToken>,
    side: &D,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    D: Side,
{
    let deadline = tokio::time::sleep(CLOSE_REPLY_WAIT);
    tokio::pin!(deadline);
    // The peer sends nothing after its close: bytes read here are only
    // watched for the connection's end.
    let mut scratch = [0_u8; 256];
    loop {
        let next = tokio::select! {
            () = &mut deadline => Next::TimedOut,
            () = cancelled(closing) => Next::Closing,
            read = ws.get_mut().read(&mut scratch) => match read {
                Ok(0) | Err(_) => Next::PeerGone,
                Ok(_) => continue,
            },
            message = from_local.recv() => Next::Local(message),
        };
        let whole = match next {
            Next::Local(Some(message)) => {
                side.outbound(&message);
                D::to_whole(message)
            }
            Next::Closing => {
                let (code, reason) = SERVICE_RESTART;
                side.closed(code);
                Whole::Close(Some((code, reason.to_owned())))
            }
            Next::Local(None) | Next::PeerGone | Next::TimedOut => return,
        };
        let last = matches!(whole, Whole::Close(_));
        let bytes = raw_frame(whole, role);
        let io = ws.get_mut();
        let written = tokio::time::timeout(write_timeout, async {
            io.write_all(&bytes).await?;
            io.flush().await
        })
        .await;
        if last || !matches!(written, Ok(Ok(()))) {
            return;
        }
    }
}

/// `whole` as one frame's bytes on the wire, masked when `role` is the
/// client's (RFC 6455 §5.3).
fn raw_frame(whole: Whole, role: Role) -> Vec<u8> {
    let mut frame = match whole {
        Whole::Text(text) => Frame::message(Bytes::from(text), OpCode::Data(Data::Text), true),
        Whole::Binary(bytes) => Frame::message(bytes, OpCode::Data(Data::Binary), true),
        Whole::Close(close) => Frame::close(close.map(|(code, reason)| CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        })),
    };
    if matches!(role, Role::Client) {
        let mut mask = [0_u8; 4];
        // A mask only has to be unpredictable to scripts on the path; a
        // failing source leaves zeros, still a valid frame.
        let _ = getrandom::fill(&mut mask);
        frame.header_mut().mask = Some(mask);
    }
    let mut bytes = Vec::with_capacity(frame.len());
    // Into a Vec: cannot fail.
    let _ = frame.format(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use futures::{SinkExt as _, StreamExt as _};
    use tokio_tungstenite::tungstenite::Message;

    use super::super::{Ends, pump};
    use super::*;

    /// The local end's messages are the pump's own.
    struct Plain;

    impl Side for Plain {
        type Message = Whole;
        fn to_whole(message: Whole) -> Whole {
            message
        }
        fn from_whole(whole: Whole) -> Whole {
            whole
        }
    }

    /// A client's socket to a pump serving as the server, and the local
    /// end's channels.
    async fn served() -> (
        WebSocketStream<tokio::io::DuplexStream>,
        mpsc::Receiver<Whole>,
        mpsc::Sender<Whole>,
    ) {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (to_local, from_peer) = mpsc::channel(4);
        let (to_peer, from_local) = mpsc::channel(4);
        let ends = Ends {
            to_local,
            from_local,
            max_message_bytes: 1 << 16,
            write_timeout: Duration::from_secs(5),
        };
        tokio::spawn(async move { pump(server, Role::Server, ends, None, &Plain).await });
        let client = WebSocketStream::from_raw_socket(client, Role::Client, None).await;
        (client, from_peer, to_peer)
    }

    fn close(code: u16, reason: &str) -> Message {
        Message::Close(Some(CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        }))
    }

    #[tokio::test]
    async fn a_peers_close_is_answered_by_the_local_end_not_the_loop() {
        let (mut client, mut from_peer, to_peer) = served().await;
        client.send(close(4001, "client bye")).await.unwrap();
        assert_eq!(
            from_peer.recv().await,
            Some(Whole::Close(Some((4001, "client bye".to_owned()))))
        );
        // Still half open: the local end's data, then its close.
        to_peer.send(Whole::Text("late".to_owned())).await.unwrap();
        to_peer
            .send(Whole::Close(Some((4002, "local reply".to_owned()))))
            .await
            .unwrap();
        assert_eq!(client.next().await.unwrap().unwrap(), Message::text("late"));
        assert_eq!(
            client.next().await.unwrap().unwrap(),
            close(4002, "local reply")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_local_end_that_never_answers_is_waited_for_only_so_long() {
        let (mut client, mut from_peer, _to_peer) = served().await;
        client.send(close(4001, "client bye")).await.unwrap();
        assert!(matches!(from_peer.recv().await, Some(Whole::Close(_))));
        let started = tokio::time::Instant::now();
        // The connection ends without a close frame (paused time runs on
        // to the bound).
        let end = client.next().await;
        assert!(!matches!(end, Some(Ok(Message::Close(_)))), "{end:?}");
        assert_eq!(started.elapsed(), CLOSE_REPLY_WAIT);
    }

    #[test]
    fn a_servers_close_frame_is_unmasked_and_a_clients_masked() {
        let close = || Whole::Close(Some((4002, "bye".to_owned())));
        let server = raw_frame(close(), Role::Server);
        assert_eq!(server, [0x88, 5, 0x0f, 0xa2, b'b', b'y', b'e']);
        let client = raw_frame(close(), Role::Client);
        assert_eq!(client[0], 0x88);
        assert_eq!(client[1], 0x80 | 5);
        let mask = &client[2..6];
        let payload: Vec<u8> = client[6..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(payload, [0x0f, 0xa2, b'b', b'y', b'e']);
        assert_eq!(
            raw_frame(Whole::Text("hi".to_owned()), Role::Server),
            [0x81, 2, b'h', b'i']
        );
        assert_eq!(raw_frame(Whole::Close(None), Role::Server), [0x88, 0]);
    }
}
