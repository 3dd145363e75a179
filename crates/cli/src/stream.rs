//! The client side of the streaming protocols, as kubectl 1.33 speaks them:
//!
//! - exec/attach (and `cp`, which is tar over exec): a WebSocket upgrade offering
//!   `v5.channel.k8s.io` then `v4.channel.k8s.io`. Every binary message is one channel
//!   byte and data: 0 stdin, 1 stdout, 2 stderr, 3 error (a `Status` as JSON), 4 resize
//!   (`{"Width":…,"Height":…}`); with v5, `[255, 0]` closes stdin. Our API server answers
//!   v5 itself and translates it to SPDY towards the kubelet (upstream's
//!   `StreamTranslatorProxy`), so no SPDY client is needed here.
//! - port-forward: SPDY/3.1 tunnelled in WebSocket binary messages (subprotocol
//!   `SPDY/3.1+portforward.k8s.io`, upstream's `TunnelingHandler`), one connection for the
//!   whole command; each local connection opens an error stream and a data stream
//!   (`streamtype`, `port`, `requestid` headers) as client-go's `portforward` does. The
//!   SPDY framing is [`httpproxy::spdy`]'s.
//!
//! Upgrades go through the command's [`RestClient::upgrade`] (same TLS, credentials and
//! `-v` request log as every other request); the handshake is checked here (`101`,
//! `Sec-WebSocket-Accept`).

use std::collections::HashMap;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::error::{CliError, Result};
use crate::transport::{Request, RestClient};

/// The remote-command protocols offered, preferred first.
pub const REMOTE_COMMAND_PROTOCOLS: [&str; 2] = ["v5.channel.k8s.io", "v4.channel.k8s.io"];
/// The port-forward protocol tunnelled in WebSocket.
pub const PORT_FORWARD_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";

pub type Ws = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// Percent-encodes a query string from pairs (as Go's `url.Values.Encode`, in order).
pub fn query(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

/// Opens a WebSocket to `path` (path and query) offering `protocols`: the stream and the
/// subprotocol the server chose. A refusal is the server's `Status` as an error.
pub async fn ws_connect(
    client: &RestClient,
    path: &str,
    protocols: &[&str],
) -> Result<(Ws, Option<String>)> {
    let key = tokio_tungstenite::tungstenite::handshake::client::generate_key();
    let offered = protocols.join(", ");
    let (parts, upgraded) = client
        .upgrade(
            Request::get(path),
            &[
                ("Connection", "Upgrade"),
                ("Upgrade", "websocket"),
                ("Sec-WebSocket-Version", "13"),
                ("Sec-WebSocket-Key", &key),
                ("Sec-WebSocket-Protocol", &offered),
            ],
        )
        .await?;
    let header = |name: http::header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let expected = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    if header(http::header::SEC_WEBSOCKET_ACCEPT).as_deref() != Some(expected.as_str()) {
        return Err(CliError::msg(
            "unable to upgrade connection: the server's Sec-WebSocket-Accept does not match",
        ));
    }
    let chosen = header(http::header::SEC_WEBSOCKET_PROTOCOL).map(|p| p.trim().to_string());
    let upgraded = upgraded
        .ok_or_else(|| CliError::msg("unable to upgrade connection: no upgraded connection"))?;
    let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, None).await;
    Ok((ws, chosen))
}

// ---------------------------------------------------------------------------------------
// Remote commands (exec, attach).

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;
const CLOSE: u8 = 255;

/// How a remote command ended, from its error channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEnd {
    Success,
    /// The command exited with this non-zero code.
    ExitCode(i32),
    /// The runtime refused or failed (its message, printed as `error: …`).
    Failure(String),
}

/// Reads the error channel's content as client-go's `errorDecoderV4`: a `Status`;
/// nothing at all (a v1-style stream that closed cleanly) is success.
pub fn decode_error_channel(bytes: &[u8]) -> ExecEnd {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return ExecEnd::Success;
    }
    let status: serde_json::Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return ExecEnd::Failure(format!(
                "error stream protocol error: {e} in {:?}",
                String::from_utf8_lossy(bytes)
            ));
        }
    };
    let message = status["message"].as_str().unwrap_or_default().to_string();
    match status["status"].as_str() {
        Some("Success") => ExecEnd::Success,
        Some("Failure") => {
            if status["reason"].as_str() == Some("NonZeroExitCode") {
                let causes = status["details"]["causes"].as_array().cloned();
                for cause in causes.unwrap_or_default() {
                    if cause["reason"].as_str() != Some("ExitCode") {
                        continue;
                    }
                    let text = cause["message"].as_str().unwrap_or_default();
                    return match text.parse::<i32>() {
                        Ok(code) => ExecEnd::ExitCode(code),
                        Err(e) => ExecEnd::Failure(format!(
                            "error stream protocol error: invalid exit code value {text:?}: {e}"
                        )),
                    };
                }
                return ExecEnd::Failure(format!(
                    "error stream protocol error: no exit code in {:?}",
                    String::from_utf8_lossy(bytes)
                ));
            }
            ExecEnd::Failure(message)
        }
        _ => ExecEnd::Failure("error stream protocol error: unknown error".into()),
    }
}

/// A sink for one output stream of a remote command.
pub type Sink<'a> = &'a mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send);

/// The local side of a remote command.
pub struct ExecIo<'a> {
    /// Input chunks (the channel's end is stdin's end); `None` when stdin is not sent.
    pub stdin: Option<mpsc::Receiver<Vec<u8>>>,
    pub stdout: Option<Sink<'a>>,
    pub stderr: Option<Sink<'a>>,
    /// Terminal sizes (width, height) for a TTY session.
    pub resize: Option<mpsc::Receiver<(u16, u16)>>,
}

/// The resize channel's message.
pub fn resize_message(width: u16, height: u16) -> Vec<u8> {
    let mut m = vec![RESIZE];
    m.extend_from_slice(
        serde_json::json!({"Width": width, "Height": height})
            .to_string()
            .as_bytes(),
    );
    m
}

/// Runs a remote command over the WebSocket `path` (an `exec` or `attach` URL with its
/// query) until the server closes it.
pub async fn remote_command(client: &RestClient, path: &str, io: ExecIo<'_>) -> Result<ExecEnd> {
    let (ws, protocol) = ws_connect(client, path, &REMOTE_COMMAND_PROTOCOLS).await?;
    let v5 = protocol.as_deref() == Some(REMOTE_COMMAND_PROTOCOLS[0]);
    let (mut sink, mut stream) = ws.split();
    let ExecIo {
        stdin,
        mut stdout,
        mut stderr,
        resize,
    } = io;
    // Input and resizes are written by their own task, so a slow reader of our output
    // never stops our input (and the other way round).
    let writer = tokio::spawn(async move {
        let mut stdin = stdin;
        let mut resize = resize;
        loop {
            tokio::select! {
                chunk = async { match stdin.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                    match chunk {
                        Some(data) => {
                            let mut m = Vec::with_capacity(data.len() + 1);
                            m.push(STDIN);
                            m.extend_from_slice(&data);
                            if sink.send(Message::Binary(Bytes::from(m))).await.is_err() {
                                return;
                            }
                        }
                        None => {
                            stdin = None;
                            if v5 && sink.send(Message::Binary(Bytes::from_static(&[CLOSE, STDIN]))).await.is_err() {
                                return;
                            }
                        }
                    }
                }
                size = async { match resize.as_mut() { Some(rx) => rx.recv().await, None => std::future::pending().await } } => {
                    match size {
                        Some((w, h)) => {
                            if sink.send(Message::Binary(Bytes::from(resize_message(w, h)))).await.is_err() {
                                return;
                            }
                        }
                        None => resize = None,
                    }
                }
            }
            if stdin.is_none() && resize.is_none() {
                // Keep the sink (dropping it would not close the socket, but be tidy).
                std::future::pending::<()>().await;
            }
        }
    });
    let mut error = Vec::new();
    let mut failure = None;
    while let Some(msg) = stream.next().await {
        let data = match msg {
            Ok(Message::Binary(b)) => b,
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(e) => {
                failure = Some(e.to_string());
                break;
            }
        };
        let Some((&channel, data)) = data.split_first() else {
            continue;
        };
        let sink = match channel {
            STDOUT => stdout.as_mut(),
            STDERR => stderr.as_mut(),
            ERROR => {
                error.extend_from_slice(data);
                continue;
            }
            _ => continue,
        };
        if let Some(sink) = sink
            && let Err(e) = sink(data)
        {
            writer.abort();
            return Err(e.into());
        }
    }
    writer.abort();
    if let Some(e) = failure
        && error.is_empty()
    {
        return Err(CliError::msg(format!("error reading the stream: {e}")));
    }
    Ok(decode_error_channel(&error))
}

// ---------------------------------------------------------------------------------------
// Port-forward: SPDY streams tunnelled in WebSocket messages.

use httpproxy::spdy;

/// What a forwarded connection hears from the pod's side.
#[derive(Debug)]
pub enum PfEvent {
    Data(Vec<u8>),
    /// The data stream ended (FIN or reset).
    Fin,
    /// The error stream ended, with its message when it carried one.
    ErrorDone(Option<String>),
}

enum Cmd {
    Open {
        port: u16,
        events: mpsc::UnboundedSender<PfEvent>,
        reply: oneshot::Sender<(u32, u32)>,
    },
    Data(u32, Vec<u8>),
    Fin(u32),
    Reset(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Data,
    Error,
}

struct PfStream {
    kind: Kind,
    events: mpsc::UnboundedSender<PfEvent>,
    replied: bool,
    pending: Vec<Vec<u8>>,
    error: Vec<u8>,
}

/// The pure SPDY state of a port-forward connection: commands and server frames in,
/// bytes to send out.
struct PfSession {
    writer: spdy::Writer,
    next_id: u32,
    next_request: u32,
    streams: HashMap<u32, PfStream>,
}

/// A `RST_STREAM` with status CANCEL (5).
fn rst_stream(stream: u32) -> Vec<u8> {
    let mut f = vec![0x80, 0x03, 0x00, 0x03, 0x00, 0x00, 0x00, 0x08];
    f.extend_from_slice(&(stream & 0x7FFF_FFFF).to_be_bytes());
    f.extend_from_slice(&5u32.to_be_bytes());
    f
}

/// How much data one SPDY frame carries at most (as spdystream writes).
const MAX_DATA_FRAME: usize = 32 * 1024;

impl PfSession {
    fn new() -> Self {
        PfSession {
            writer: spdy::Writer::default(),
            next_id: 1,
            next_request: 0,
            streams: HashMap::new(),
        }
    }

    fn send(&mut self, id: u32, frame: Vec<u8>, out: &mut Vec<u8>) {
        match self.streams.get_mut(&id) {
            Some(s) if s.replied => out.extend_from_slice(&frame),
            Some(s) => s.pending.push(frame),
            None => {}
        }
    }

    /// Opens the error and data streams of one connection: their ids.
    fn open(
        &mut self,
        port: u16,
        events: mpsc::UnboundedSender<PfEvent>,
        out: &mut Vec<u8>,
    ) -> (u32, u32) {
        let request = self.next_request.to_string();
        self.next_request += 1;
        let port = port.to_string();
        let error_id = self.next_id;
        let data_id = self.next_id + 2;
        self.next_id += 4;
        for (id, kind) in [(error_id, Kind::Error), (data_id, Kind::Data)] {
            let name = if kind == Kind::Error { "error" } else { "data" };
            out.extend_from_slice(&self.writer.syn_stream(
                id,
                &[
                    ("streamtype", name),
                    ("port", &port),
                    ("requestid", &request),
                ],
            ));
            self.streams.insert(
                id,
                PfStream {
                    kind,
                    events: events.clone(),
                    replied: false,
                    pending: Vec::new(),
                    error: Vec::new(),
                },
            );
        }
        // The client never writes to the error stream: it half-closes it at once.
        self.send(error_id, spdy::data(error_id, spdy::FLAG_FIN, &[]), out);
        (error_id, data_id)
    }

    fn command(&mut self, cmd: Cmd, out: &mut Vec<u8>) {
        match cmd {
            Cmd::Open {
                port,
                events,
                reply,
            } => {
                let ids = self.open(port, events, out);
                let _ = reply.send(ids);
            }
            Cmd::Data(id, data) => {
                for chunk in data.chunks(MAX_DATA_FRAME) {
                    self.send(id, spdy::data(id, 0, chunk), out);
                }
            }
            Cmd::Fin(id) => self.send(id, spdy::data(id, spdy::FLAG_FIN, &[]), out),
            Cmd::Reset(id) => {
                if self.streams.remove(&id).is_some() {
                    out.extend_from_slice(&rst_stream(id));
                }
            }
        }
    }

    fn finish(&mut self, id: u32) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        match s.kind {
            Kind::Data => {
                let _ = s.events.send(PfEvent::Fin);
            }
            Kind::Error => {
                let text = String::from_utf8_lossy(&s.error).trim().to_string();
                let _ = s
                    .events
                    .send(PfEvent::ErrorDone((!text.is_empty()).then_some(text)));
                s.error.clear();
            }
        }
    }

    /// A frame from the server; false when the session is over (`GOAWAY`).
    fn frame(&mut self, frame: spdy::Frame, out: &mut Vec<u8>) -> bool {
        match frame {
            spdy::Frame::Data {
                stream,
                flags,
                data,
            } => {
                if let Some(s) = self.streams.get_mut(&stream) {
                    match s.kind {
                        Kind::Data if !data.is_empty() => {
                            let _ = s.events.send(PfEvent::Data(data));
                        }
                        Kind::Error => s.error.extend_from_slice(&data),
                        _ => {}
                    }
                }
                if flags & spdy::FLAG_FIN != 0 {
                    self.finish(stream);
                }
            }
            spdy::Frame::Control {
                kind,
                flags,
                payload,
            } => match kind {
                spdy::SYN_REPLY => {
                    if let Some(id) = spdy::Frame::control_stream(&payload) {
                        if let Some(s) = self.streams.get_mut(&id) {
                            s.replied = true;
                            for f in std::mem::take(&mut s.pending) {
                                out.extend_from_slice(&f);
                            }
                        }
                        if flags & spdy::FLAG_FIN != 0 {
                            self.finish(id);
                        }
                    }
                }
                spdy::RST_STREAM => {
                    if let Some(id) = spdy::Frame::control_stream(&payload) {
                        self.finish(id);
                        self.streams.remove(&id);
                    }
                }
                spdy::PING if payload.get(3).is_some_and(|b| b & 1 == 0) => {
                    out.extend_from_slice(&spdy::ping_reply(&payload));
                }
                spdy::GOAWAY => return false,
                _ => {}
            },
        }
        true
    }
}

/// One port-forward connection to a pod (the tunnel), shared by every local connection.
#[derive(Clone)]
pub struct PortForwarder {
    cmds: mpsc::UnboundedSender<Cmd>,
}

/// The local side of one forwarded connection: its streams and what the pod sends.
pub struct PfConn {
    forwarder: PortForwarder,
    pub error_id: u32,
    pub data_id: u32,
    pub events: mpsc::UnboundedReceiver<PfEvent>,
}

impl PfConn {
    pub fn send(&self, data: Vec<u8>) {
        let _ = self.forwarder.cmds.send(Cmd::Data(self.data_id, data));
    }

    /// No more data from the local side.
    pub fn close_write(&self) {
        let _ = self.forwarder.cmds.send(Cmd::Fin(self.data_id));
    }

    /// Forgets both streams (the server gets `RST_STREAM`s).
    pub fn remove(&self) {
        let _ = self.forwarder.cmds.send(Cmd::Reset(self.data_id));
        let _ = self.forwarder.cmds.send(Cmd::Reset(self.error_id));
    }
}

impl PortForwarder {
    /// Opens the tunnel to `path` (`…/pods/<name>/portforward`); `lost` fires when it
    /// ends.
    pub async fn connect(
        client: &RestClient,
        path: &str,
    ) -> Result<(PortForwarder, oneshot::Receiver<()>)> {
        let (ws, protocol) = ws_connect(client, path, &[PORT_FORWARD_TUNNEL]).await?;
        if protocol.as_deref() != Some(PORT_FORWARD_TUNNEL) {
            return Err(CliError::msg(format!(
                "unable to upgrade connection: the server chose the subprotocol {:?}",
                protocol.unwrap_or_default()
            )));
        }
        let (cmds, mut rx) = mpsc::unbounded_channel::<Cmd>();
        let (lost_tx, lost) = oneshot::channel();
        let (mut sink, mut stream) = ws.split();
        let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        tokio::spawn(async move {
            while let Some(bytes) = out_rx.recv().await {
                if sink
                    .send(Message::Binary(Bytes::from(bytes)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            let _ = sink.close().await;
        });
        tokio::spawn(async move {
            let mut session = PfSession::new();
            let mut buf: Vec<u8> = Vec::new();
            'session: loop {
                let mut out = Vec::new();
                tokio::select! {
                    cmd = rx.recv() => match cmd {
                        Some(cmd) => session.command(cmd, &mut out),
                        None => break 'session,
                    },
                    msg = stream.next() => match msg {
                        Some(Ok(Message::Binary(b))) => {
                            buf.extend_from_slice(&b);
                            loop {
                                match spdy::decode(&buf) {
                                    Ok(Some((frame, used))) => {
                                        buf.drain(..used);
                                        if !session.frame(frame, &mut out) {
                                            break 'session;
                                        }
                                    }
                                    Ok(None) => break,
                                    Err(e) => {
                                        tracing::debug!(error = %e, "port-forward: bad SPDY frame");
                                        break 'session;
                                    }
                                }
                            }
                        }
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break 'session,
                        Some(Ok(_)) => {}
                    },
                }
                if !out.is_empty() && out_tx.send(out).is_err() {
                    break;
                }
            }
            let _ = lost_tx.send(());
        });
        Ok((PortForwarder { cmds }, lost))
    }

    /// Opens the streams for a new local connection to the pod's `port`.
    pub async fn open(&self, port: u16) -> Result<PfConn> {
        let (events_tx, events) = mpsc::unbounded_channel();
        let (reply, ids) = oneshot::channel();
        self.cmds
            .send(Cmd::Open {
                port,
                events: events_tx,
                reply,
            })
            .map_err(|_| CliError::msg("lost connection to pod"))?;
        let (error_id, data_id) = ids
            .await
            .map_err(|_| CliError::msg("lost connection to pod"))?;
        Ok(PfConn {
            forwarder: self.clone(),
            error_id,
            data_id,
            events,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn error_channel_statuses() {
        assert_eq!(decode_error_channel(b""), ExecEnd::Success);
        assert_eq!(
            decode_error_channel(br#"{"metadata":{},"status":"Success"}"#),
            ExecEnd::Success
        );
        let exit = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(decode_error_channel(exit), ExecEnd::ExitCode(3));
        let failed = br#"{"metadata":{},"status":"Failure","message":"OCI runtime exec failed: exec: \"nope\": executable file not found in $PATH"}"#;
        assert_eq!(
            decode_error_channel(failed),
            ExecEnd::Failure(
                "OCI runtime exec failed: exec: \"nope\": executable file not found in $PATH"
                    .into()
            )
        );
        assert!(matches!(
            decode_error_channel(b"garbage"),
            ExecEnd::Failure(m) if m.starts_with("error stream protocol error:")
        ));
    }

    #[test]
    fn query_encodes_like_go() {
        assert_eq!(
            query(&[
                ("command", "sh"),
                ("command", "echo a&b=c /x"),
                ("stdout", "true")
            ]),
            "command=sh&command=echo+a%26b%3Dc+%2Fx&stdout=true"
        );
    }

    #[test]
    fn resize_is_json_on_channel_4() {
        let m = resize_message(80, 24);
        assert_eq!(m[0], 4);
        assert_eq!(&m[1..], br#"{"Height":24,"Width":80}"#);
    }

    fn frames(bytes: &[u8]) -> Vec<spdy::Frame> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some((f, used)) = spdy::decode(rest).unwrap() {
            out.push(f);
            rest = &rest[used..];
        }
        assert!(rest.is_empty());
        out
    }

    fn syn_reply(id: u32) -> spdy::Frame {
        let mut payload = id.to_be_bytes().to_vec();
        payload.extend_from_slice(&[0, 0]);
        spdy::Frame::Control {
            kind: spdy::SYN_REPLY,
            flags: 0,
            payload,
        }
    }

    /// A connection opens an error and a data stream; data waits for the server's reply;
    /// the error stream's text arrives at its end.
    #[test]
    fn port_forward_session_streams() {
        let mut s = PfSession::new();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut out = Vec::new();
        let (e, d) = s.open(80, tx, &mut out);
        assert_eq!((e, d), (1, 3));
        let opened = frames(&out);
        assert_eq!(opened.len(), 2);
        assert!(
            opened.iter().all(
                |f| matches!(f, spdy::Frame::Control { kind, .. } if *kind == spdy::SYN_STREAM)
            )
        );
        out.clear();
        s.command(Cmd::Data(d, b"GET /".to_vec()), &mut out);
        assert!(out.is_empty(), "data before the reply is queued");
        assert!(s.frame(syn_reply(e), &mut out));
        assert_eq!(
            frames(&out),
            [spdy::Frame::Data {
                stream: 1,
                flags: spdy::FLAG_FIN,
                data: vec![]
            }]
        );
        out.clear();
        assert!(s.frame(syn_reply(d), &mut out));
        assert_eq!(
            frames(&out),
            [spdy::Frame::Data {
                stream: 3,
                flags: 0,
                data: b"GET /".to_vec()
            }]
        );
        out.clear();
        s.frame(
            spdy::Frame::Data {
                stream: 3,
                flags: 0,
                data: b"HTTP/1.1 200".to_vec(),
            },
            &mut out,
        );
        s.frame(
            spdy::Frame::Data {
                stream: 1,
                flags: 0,
                data: b"boom".to_vec(),
            },
            &mut out,
        );
        s.frame(
            spdy::Frame::Data {
                stream: 1,
                flags: spdy::FLAG_FIN,
                data: vec![],
            },
            &mut out,
        );
        s.frame(
            spdy::Frame::Data {
                stream: 3,
                flags: spdy::FLAG_FIN,
                data: vec![],
            },
            &mut out,
        );
        assert!(matches!(rx.try_recv().unwrap(), PfEvent::Data(d) if d == b"HTTP/1.1 200"));
        assert!(matches!(rx.try_recv().unwrap(), PfEvent::ErrorDone(Some(m)) if m == "boom"));
        assert!(matches!(rx.try_recv().unwrap(), PfEvent::Fin));
        // The next connection gets the next stream ids and request id.
        let (tx2, _rx2) = mpsc::unbounded_channel();
        let mut out = Vec::new();
        assert_eq!(s.open(80, tx2, &mut out), (5, 7));
        s.command(Cmd::Reset(5), &mut out);
        let last = frames(&out).pop().unwrap();
        assert!(matches!(last, spdy::Frame::Control { kind, .. } if kind == spdy::RST_STREAM));
        // A server ping is answered; GOAWAY ends the session.
        let mut out = Vec::new();
        assert!(s.frame(
            spdy::Frame::Control {
                kind: spdy::PING,
                flags: 0,
                payload: vec![0, 0, 0, 2]
            },
            &mut out
        ));
        assert!(!out.is_empty());
        assert!(!s.frame(
            spdy::Frame::Control {
                kind: spdy::GOAWAY,
                flags: 0,
                payload: vec![0; 8]
            },
            &mut out
        ));
    }
}
