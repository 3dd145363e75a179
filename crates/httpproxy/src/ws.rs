//! The server side of RFC 6455 WebSocket, as far as a proxy hop needs it: the handshake
//! answer, subprotocol lists, a frame codec (client frames masked, server frames not;
//! fragments joined; ping answered; close echoed), and [`tunnel`] — upstream's
//! `TunnelingHandler` (`k8s.io/apiserver/pkg/util/proxy/streamtunnel.go`) as used by
//! `kubectl port-forward` ≥ 1.30: the client speaks SPDY inside binary WebSocket
//! messages (subprotocol `SPDY/3.1+portforward.k8s.io`), the backend speaks SPDY on a
//! plain upgraded connection, and the hop moves the bytes between the two framings
//! without reading the SPDY inside.

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The GUID of RFC 6455 §1.3.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// Frames larger than this are refused (the tunnel's client writes at most 32 KiB).
pub const MAX_FRAME: u64 = 16 << 20;

/// The prefix of the port-forward tunnelling subprotocols (`SPDY/3.1+portforward.k8s.io`).
pub const SPDY_TUNNEL_PREFIX: &str = "SPDY/3.1+";

/// `Sec-WebSocket-Accept` for a client's `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.trim().as_bytes());
    ctx.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(ctx.finish().as_ref())
}

/// Whether a request is a WebSocket upgrade (`Upgrade: websocket`, any case).
pub fn is_websocket(headers: &http::HeaderMap) -> bool {
    crate::is_upgrade(headers)
        && headers
            .get(http::header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(',')
                    .any(|t| t.trim().eq_ignore_ascii_case("websocket"))
            })
}

/// The subprotocols a client offers (`Sec-WebSocket-Protocol`, comma separated, every
/// header line), in order.
pub fn subprotocols(headers: &http::HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The SPDY protocols a port-forward tunnel request asks for: its subprotocols of the
/// form `SPDY/3.1+<name>.k8s.io`, prefix removed (upstream's
/// `spdyProtocolsFromWebsocketProtocols`).
pub fn tunnel_protocols(headers: &http::HeaderMap) -> Vec<String> {
    subprotocols(headers)
        .into_iter()
        .filter(|p| p.ends_with(".k8s.io"))
        .filter_map(|p| p.strip_prefix(SPDY_TUNNEL_PREFIX).map(str::to_string))
        .collect()
}

/// Frame opcodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(b: u8) -> Option<Opcode> {
        Some(match b {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// One decoded frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub fin: bool,
    pub opcode: Opcode,
    pub payload: Vec<u8>,
}

/// Why a frame could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("websocket: unknown opcode {0:#x}")]
    Opcode(u8),
    #[error("websocket: reserved bits set")]
    Reserved,
    #[error("websocket: frame of {0} bytes is too large")]
    TooLarge(u64),
    #[error("websocket: invalid control frame")]
    Control,
}

/// Decodes one frame from the start of `buf`: `Ok(None)` when more bytes are needed,
/// else the frame (unmasked) and how many bytes it used.
pub fn decode_frame(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    if buf.len() < 2 {
        return Ok(None);
    }
    let (b0, b1) = (buf[0], buf[1]);
    if b0 & 0x70 != 0 {
        return Err(FrameError::Reserved);
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(FrameError::Opcode(b0 & 0x0F))?;
    let fin = b0 & 0x80 != 0;
    let masked = b1 & 0x80 != 0;
    let mut pos = 2;
    let len = match b1 & 0x7F {
        126 => {
            let Some(b) = buf.get(2..4) else {
                return Ok(None);
            };
            pos = 4;
            u64::from(u16::from_be_bytes([b[0], b[1]]))
        }
        127 => {
            let Some(b) = buf.get(2..10) else {
                return Ok(None);
            };
            pos = 10;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_be_bytes(a)
        }
        n => u64::from(n),
    };
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    if opcode.is_control() && (len > 125 || !fin) {
        return Err(FrameError::Control);
    }
    let mask = if masked {
        let Some(m) = buf.get(pos..pos + 4) else {
            return Ok(None);
        };
        pos += 4;
        Some([m[0], m[1], m[2], m[3]])
    } else {
        None
    };
    let len = usize::try_from(len).map_err(|_| FrameError::TooLarge(len))?;
    let Some(data) = buf.get(pos..pos + len) else {
        return Ok(None);
    };
    let mut payload = data.to_vec();
    if let Some(m) = mask {
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= m[i % 4];
        }
    }
    Ok(Some((
        Frame {
            fin,
            opcode,
            payload,
        },
        pos + len,
    )))
}

/// Encodes one unmasked (server) frame with FIN set.
pub fn encode_frame(opcode: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x80 | opcode.bits());
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= usize::from(u16::MAX) => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

/// A close frame's payload: the status code and reason.
pub fn close_payload(code: u16, reason: &str) -> Vec<u8> {
    let mut p = code.to_be_bytes().to_vec();
    p.extend_from_slice(reason.as_bytes());
    p
}

/// What the reader of a client's frames hands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A complete data message (fragments joined).
    Message { binary: bool, data: Vec<u8> },
    /// A control frame the server must answer with this frame (pong for ping, the
    /// echoed close).
    Reply(Vec<u8>),
    /// The client closed the connection (after the echoed close is sent).
    Closed,
}

/// Joins fragments and turns control frames into [`Event`]s.
#[derive(Debug, Default)]
pub struct Assembler {
    partial: Option<(bool, Vec<u8>)>,
}

impl Assembler {
    /// Feeds one frame; returns the events it completes.
    pub fn push(&mut self, frame: Frame) -> Result<Vec<Event>, FrameError> {
        let mut out = Vec::new();
        match frame.opcode {
            Opcode::Ping => out.push(Event::Reply(encode_frame(Opcode::Pong, &frame.payload))),
            Opcode::Pong => {}
            Opcode::Close => {
                let code = frame.payload.get(..2).unwrap_or(&[0x03, 0xE8]).to_vec();
                out.push(Event::Reply(encode_frame(Opcode::Close, &code)));
                out.push(Event::Closed);
            }
            Opcode::Text | Opcode::Binary => {
                if self.partial.is_some() {
                    return Err(FrameError::Control);
                }
                let binary = frame.opcode == Opcode::Binary;
                if frame.fin {
                    out.push(Event::Message {
                        binary,
                        data: frame.payload,
                    });
                } else {
                    self.partial = Some((binary, frame.payload));
                }
            }
            Opcode::Continuation => {
                let Some((binary, mut data)) = self.partial.take() else {
                    return Err(FrameError::Control);
                };
                data.extend_from_slice(&frame.payload);
                if data.len() as u64 > MAX_FRAME {
                    return Err(FrameError::TooLarge(data.len() as u64));
                }
                if frame.fin {
                    out.push(Event::Message { binary, data });
                } else {
                    self.partial = Some((binary, data));
                }
            }
        }
        Ok(out)
    }
}

/// Moves bytes between a WebSocket client (binary messages) and a backend byte stream
/// until either side ends: each client message's payload is written to the backend as
/// is, each read from the backend becomes one binary message; the backend's end becomes
/// a normal close (1000), the client's close the backend's write shutdown.
pub async fn tunnel<C, B>(client: C, backend: B)
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut client_rd, client_wr) = tokio::io::split(client);
    let (mut backend_rd, mut backend_wr) = tokio::io::split(backend);
    let client_wr = std::sync::Arc::new(tokio::sync::Mutex::new(client_wr));

    let replies = std::sync::Arc::clone(&client_wr);
    let upstream = async move {
        let mut buf = Vec::with_capacity(64 * 1024);
        let mut chunk = vec![0u8; 32 * 1024];
        let mut assembler = Assembler::default();
        loop {
            loop {
                match decode_frame(&buf) {
                    Ok(Some((frame, used))) => {
                        buf.drain(..used);
                        let events = match assembler.push(frame) {
                            Ok(e) => e,
                            Err(e) => {
                                tracing::debug!(error = %e, "websocket tunnel: bad frame");
                                return;
                            }
                        };
                        for ev in events {
                            match ev {
                                Event::Message { data, .. } => {
                                    if backend_wr.write_all(&data).await.is_err() {
                                        return;
                                    }
                                }
                                Event::Reply(frame) => {
                                    let _ = replies.lock().await.write_all(&frame).await;
                                }
                                Event::Closed => {
                                    let _ = backend_wr.shutdown().await;
                                    return;
                                }
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "websocket tunnel: bad frame");
                        return;
                    }
                }
            }
            match client_rd.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let _ = backend_wr.shutdown().await;
                    return;
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let downstream = async move {
        let mut chunk = vec![0u8; 32 * 1024];
        loop {
            match backend_rd.read(&mut chunk).await {
                Ok(0) | Err(_) => {
                    let mut w = client_wr.lock().await;
                    let close = encode_frame(Opcode::Close, &close_payload(1000, ""));
                    let _ = w.write_all(&close).await;
                    let _ = w.shutdown().await;
                    return;
                }
                Ok(n) => {
                    let frame = encode_frame(Opcode::Binary, &chunk[..n]);
                    if client_wr.lock().await.write_all(&frame).await.is_err() {
                        return;
                    }
                }
            }
        }
    };
    // Either direction ending ends the tunnel (upstream closes both connections).
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// A client frame: masked, as browsers and gorilla/websocket send them.
    fn masked(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
        let mask = [0x12, 0x34, 0x56, 0x78];
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n if n <= 65535 => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    #[test]
    fn accept_key_of_rfc6455() {
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    #[test]
    fn protocols_from_headers() {
        let mut h = http::HeaderMap::new();
        h.insert("connection", "Upgrade".parse().unwrap());
        h.insert("upgrade", "WebSocket".parse().unwrap());
        h.append(
            "sec-websocket-protocol",
            "SPDY/3.1+portforward.k8s.io, v4.channel.k8s.io"
                .parse()
                .unwrap(),
        );
        h.append("sec-websocket-protocol", "other".parse().unwrap());
        assert!(is_websocket(&h));
        assert_eq!(
            subprotocols(&h),
            ["SPDY/3.1+portforward.k8s.io", "v4.channel.k8s.io", "other"]
        );
        assert_eq!(tunnel_protocols(&h), ["portforward.k8s.io"]);
        h.insert("upgrade", "SPDY/3.1".parse().unwrap());
        assert!(!is_websocket(&h));
    }

    #[test]
    fn decodes_masked_frames_of_every_length() {
        for len in [0usize, 5, 125, 126, 65535, 65536, 100_000] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let wire = masked(0x2, true, &payload);
            // Every prefix is incomplete.
            for cut in [0, 1, wire.len() / 2, wire.len() - 1] {
                assert_eq!(decode_frame(&wire[..cut]).unwrap(), None, "len {len}");
            }
            let (f, used) = decode_frame(&wire).unwrap().unwrap();
            assert_eq!(used, wire.len());
            assert_eq!(f.opcode, Opcode::Binary);
            assert!(f.fin);
            assert_eq!(f.payload, payload);
            // Our own (unmasked) encoding decodes to the same frame.
            let ours = encode_frame(Opcode::Binary, &payload);
            assert_eq!(decode_frame(&ours).unwrap().unwrap().0, f);
        }
    }

    #[test]
    fn rejects_bad_frames() {
        assert_eq!(decode_frame(&[0x83, 0]), Err(FrameError::Opcode(3)));
        assert_eq!(decode_frame(&[0xC2, 0]), Err(FrameError::Reserved));
        // A fragmented ping.
        assert_eq!(decode_frame(&[0x09, 0]), Err(FrameError::Control));
        let mut huge = vec![0x82, 127];
        huge.extend_from_slice(&(MAX_FRAME + 1).to_be_bytes());
        assert_eq!(
            decode_frame(&huge),
            Err(FrameError::TooLarge(MAX_FRAME + 1))
        );
    }

    #[test]
    fn assembles_fragments_and_answers_control_frames() {
        let mut a = Assembler::default();
        let frag = |wire: Vec<u8>| decode_frame(&wire).unwrap().unwrap().0;
        assert!(a.push(frag(masked(0x2, false, b"ab"))).unwrap().is_empty());
        // A ping between fragments is answered at once.
        assert_eq!(
            a.push(frag(masked(0x9, true, b"p"))).unwrap(),
            [Event::Reply(encode_frame(Opcode::Pong, b"p"))]
        );
        assert_eq!(
            a.push(frag(masked(0x0, true, b"cd"))).unwrap(),
            [Event::Message {
                binary: true,
                data: b"abcd".to_vec()
            }]
        );
        // A continuation without a start is a protocol error.
        assert!(a.push(frag(masked(0x0, true, b"x"))).is_err());
        let close = a
            .push(frag(masked(0x8, true, &close_payload(1000, "bye"))))
            .unwrap();
        assert_eq!(
            close,
            [
                Event::Reply(encode_frame(Opcode::Close, &[0x03, 0xE8])),
                Event::Closed
            ]
        );
    }

    #[tokio::test]
    async fn tunnels_bytes_both_ways() {
        let (client, mut client_peer) = tokio::io::duplex(1 << 20);
        let (backend, mut backend_peer) = tokio::io::duplex(1 << 20);
        let task = tokio::spawn(tunnel(client, backend));
        // Client → backend: two messages, the second fragmented.
        client_peer
            .write_all(&masked(0x2, true, b"hello "))
            .await
            .unwrap();
        client_peer
            .write_all(&masked(0x2, false, b"wor"))
            .await
            .unwrap();
        client_peer
            .write_all(&masked(0x0, true, b"ld"))
            .await
            .unwrap();
        let mut got = [0u8; 11];
        backend_peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello world");
        // Backend → client: a binary message.
        backend_peer.write_all(b"spdy-bytes").await.unwrap();
        let mut buf = Vec::new();
        let frame = loop {
            let mut chunk = [0u8; 64];
            let n = client_peer.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            if let Some((f, _)) = decode_frame(&buf).unwrap() {
                break f;
            }
        };
        assert_eq!(frame.opcode, Opcode::Binary);
        assert_eq!(frame.payload, b"spdy-bytes");
        // The backend ends: the client gets a normal close and the tunnel ends.
        drop(backend_peer);
        let mut rest = Vec::new();
        client_peer.read_to_end(&mut rest).await.unwrap();
        let (close, _) = decode_frame(&rest).unwrap().unwrap();
        assert_eq!(close.opcode, Opcode::Close);
        assert_eq!(close.payload, close_payload(1000, ""));
        task.await.unwrap();
    }
}
