//! Upstream's `StreamTranslatorProxy` (`k8s.io/apiserver/pkg/util/proxy/streamtranslator.go`):
//! kubectl ≥ 1.30 runs exec/attach over WebSocket with `v5.channel.k8s.io`, which
//! container runtimes' streaming servers do not speak; the API server accepts it and
//! talks SPDY (`v4.channel.k8s.io`) towards the kubelet. Each WebSocket binary message
//! is one channel byte and data: 0 stdin, 1 stdout, 2 stderr, 3 error (the v4 `Status`
//! JSON), 4 resize (terminal size JSON), and 255 `[255, channel]` closes that channel
//! (stdin's end). The SPDY side opens one stream per channel (`streamtype` header) and
//! waits for the runtime's `SYN_REPLY` before writing to it, as client-go does.

use std::collections::HashMap;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{spdy, ws};

/// The WebSocket subprotocol translated here.
pub const V5: &str = "v5.channel.k8s.io";
/// The SPDY remote-command protocol asked of the kubelet.
pub const V4: &str = "v4.channel.k8s.io";

const CLOSE: u8 = 255;

/// Which streams the session has (the exec/attach request's `stdin`, `stdout`,
/// `stderr`, `tty`; stderr is never opened with a tty, as the runtime expects).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl Streams {
    /// The SPDY streams to open in client-go's order: (stream id, stream type, channel).
    pub fn plan(&self) -> Vec<(u32, &'static str, u8)> {
        let mut out = vec![("error", 3u8)];
        if self.stdin {
            out.push(("stdin", 0));
        }
        if self.stdout {
            out.push(("stdout", 1));
        }
        if self.stderr && !self.tty {
            out.push(("stderr", 2));
        }
        if self.tty {
            out.push(("resize", 4));
        }
        out.into_iter()
            .enumerate()
            .map(|(i, (t, c))| (2 * i as u32 + 1, t, c))
            .collect()
    }
}

/// The translation state, pure: WebSocket messages and SPDY frames in, bytes to write
/// to either side out.
#[derive(Debug)]
pub struct Session {
    by_channel: HashMap<u8, u32>,
    by_stream: HashMap<u32, u8>,
    replied: HashMap<u32, bool>,
    /// Frames for streams the runtime has not accepted yet.
    pending: HashMap<u32, Vec<Vec<u8>>>,
    /// Output streams (and the error stream) still open on the runtime's side.
    open_outputs: usize,
    finished: HashMap<u32, bool>,
}

/// What to do after an input.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Out {
    pub to_backend: Vec<u8>,
    pub to_client: Vec<u8>,
    /// The session is over (the runtime went away or finished every stream).
    pub done: bool,
}

impl Session {
    /// A session for `streams`, and the `SYN_STREAM` frames that open it.
    pub fn open(streams: Streams) -> (Session, Vec<u8>) {
        let mut writer = spdy::Writer::default();
        let mut s = Session {
            by_channel: HashMap::new(),
            by_stream: HashMap::new(),
            replied: HashMap::new(),
            pending: HashMap::new(),
            open_outputs: 0,
            finished: HashMap::new(),
        };
        let mut frames = Vec::new();
        for (id, kind, channel) in streams.plan() {
            frames.extend_from_slice(&writer.syn_stream(id, &[("streamtype", kind)]));
            s.by_channel.insert(channel, id);
            s.by_stream.insert(id, channel);
            if matches!(channel, 1..=3) {
                s.open_outputs += 1;
            }
        }
        (s, frames)
    }

    /// Queues `frame` for `stream`, or returns it when the stream is accepted.
    fn send(&mut self, stream: u32, frame: Vec<u8>, out: &mut Out) {
        if self.replied.get(&stream).copied().unwrap_or(false) {
            out.to_backend.extend_from_slice(&frame);
        } else {
            self.pending.entry(stream).or_default().push(frame);
        }
    }

    /// A data message from the WebSocket client.
    pub fn client_message(&mut self, msg: &[u8]) -> Out {
        let mut out = Out::default();
        let Some((&channel, data)) = msg.split_first() else {
            return out;
        };
        if channel == CLOSE {
            if let Some(&target) = data.first()
                && let Some(&stream) = self.by_channel.get(&target)
                && target == 0
            {
                self.send(stream, spdy::data(stream, spdy::FLAG_FIN, &[]), &mut out);
            }
            return out;
        }
        // Only stdin and resize flow towards the runtime.
        if !matches!(channel, 0 | 4) {
            return out;
        }
        if let Some(&stream) = self.by_channel.get(&channel) {
            for chunk in data.chunks(32 * 1024) {
                self.send(stream, spdy::data(stream, 0, chunk), &mut out);
            }
        }
        out
    }

    fn finish(&mut self, stream: u32, out: &mut Out) {
        let Some(&channel) = self.by_stream.get(&stream) else {
            return;
        };
        if matches!(channel, 1..=3) && !self.finished.insert(stream, true).unwrap_or(false) {
            self.open_outputs = self.open_outputs.saturating_sub(1);
            if self.open_outputs == 0 {
                out.done = true;
            }
        }
    }

    /// A frame from the runtime.
    pub fn backend_frame(&mut self, frame: spdy::Frame) -> Out {
        let mut out = Out::default();
        match frame {
            spdy::Frame::Data {
                stream,
                flags,
                data,
            } => {
                if let Some(&channel) = self.by_stream.get(&stream)
                    && matches!(channel, 1..=3)
                    && !data.is_empty()
                {
                    let mut msg = Vec::with_capacity(data.len() + 1);
                    msg.push(channel);
                    msg.extend_from_slice(&data);
                    out.to_client
                        .extend_from_slice(&ws::encode_frame(ws::Opcode::Binary, &msg));
                }
                if flags & spdy::FLAG_FIN != 0 {
                    self.finish(stream, &mut out);
                }
            }
            spdy::Frame::Control {
                kind,
                flags,
                payload,
            } => match kind {
                spdy::SYN_REPLY => {
                    if let Some(stream) = spdy::Frame::control_stream(&payload) {
                        self.replied.insert(stream, true);
                        for f in self.pending.remove(&stream).unwrap_or_default() {
                            out.to_backend.extend_from_slice(&f);
                        }
                        if flags & spdy::FLAG_FIN != 0 {
                            self.finish(stream, &mut out);
                        }
                    }
                }
                spdy::RST_STREAM => {
                    if let Some(stream) = spdy::Frame::control_stream(&payload) {
                        self.finish(stream, &mut out);
                    }
                }
                // Pings of the server's (even ids) are answered.
                spdy::PING if payload.get(3).is_some_and(|b| b & 1 == 0) => {
                    out.to_backend
                        .extend_from_slice(&spdy::ping_reply(&payload));
                }
                spdy::GOAWAY => out.done = true,
                _ => {}
            },
        }
        out
    }
}

/// Bytes queued towards one side, written by its own task: whoever queues waits while
/// more than [`QUEUE_LIMIT`] bytes are unwritten, so a slow side slows down only the
/// direction feeding it and the two directions never wait on each other.
#[derive(Clone)]
struct Queue {
    tx: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    drained: std::sync::Arc<tokio::sync::Notify>,
}

const QUEUE_LIMIT: usize = 1 << 20;

impl Queue {
    /// A queue and its writer task over `w`; the task ends (shutting `w` down) when every
    /// sender is gone, or on a write error (then `failed` is told).
    fn spawn<W>(mut w: W, failed: std::sync::Arc<tokio::sync::Notify>) -> Queue
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let q = Queue {
            tx,
            queued: Default::default(),
            drained: Default::default(),
        };
        let (queued, drained) = (q.queued.clone(), q.drained.clone());
        tokio::spawn(async move {
            while let Some(bytes) = rx.recv().await {
                let ok = w.write_all(&bytes).await.is_ok();
                queued.fetch_sub(bytes.len(), std::sync::atomic::Ordering::SeqCst);
                drained.notify_one();
                if !ok {
                    failed.notify_one();
                    return;
                }
            }
            let _ = w.shutdown().await;
        });
        q
    }

    fn push(&self, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        self.queued
            .fetch_add(bytes.len(), std::sync::atomic::Ordering::SeqCst);
        let _ = self.tx.send(bytes);
    }

    async fn wait_room(&self) {
        while self.queued.load(std::sync::atomic::Ordering::SeqCst) > QUEUE_LIMIT {
            self.drained.notified().await;
        }
    }
}

/// Runs a session between an upgraded WebSocket client (`v5.channel.k8s.io`) and an
/// upgraded SPDY connection to the kubelet until either ends; the client then gets a
/// normal close and the kubelet a `GOAWAY`.
pub async fn run<C, B>(client: C, backend: B, streams: Streams)
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut client_rd, client_wr) = tokio::io::split(client);
    let (mut backend_rd, backend_wr) = tokio::io::split(backend);
    let failed = std::sync::Arc::new(tokio::sync::Notify::new());
    let to_client = Queue::spawn(client_wr, failed.clone());
    let to_backend = Queue::spawn(backend_wr, failed.clone());
    let (session, opening) = Session::open(streams);
    let session = std::sync::Arc::new(std::sync::Mutex::new(session));
    to_backend.push(opening);
    // Outputs are queued while the session is locked, so frames leave in the order the
    // session produced them.
    let apply = |session: &std::sync::Mutex<Session>,
                 f: &dyn Fn(&mut Session) -> Out,
                 to_client: &Queue,
                 to_backend: &Queue|
     -> bool {
        let Ok(mut s) = session.lock() else {
            return true;
        };
        let out = f(&mut s);
        to_client.push(out.to_client);
        to_backend.push(out.to_backend);
        out.done
    };

    let upstream = {
        let (session, to_client, to_backend) =
            (session.clone(), to_client.clone(), to_backend.clone());
        async move {
            let mut buf = Vec::new();
            let mut chunk = vec![0u8; 32 * 1024];
            let mut assembler = ws::Assembler::default();
            loop {
                to_backend.wait_room().await;
                let n = match client_rd.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                loop {
                    let (frame, used) = match ws::decode_frame(&buf) {
                        Ok(Some(f)) => f,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::debug!(error = %e, "exec translation: bad websocket frame");
                            return;
                        }
                    };
                    buf.drain(..used);
                    let Ok(events) = assembler.push(frame) else {
                        return;
                    };
                    for ev in events {
                        match ev {
                            ws::Event::Message { data, .. } => {
                                let done = apply(
                                    &session,
                                    &|s: &mut Session| s.client_message(&data),
                                    &to_client,
                                    &to_backend,
                                );
                                if done {
                                    return;
                                }
                            }
                            ws::Event::Reply(f) => to_client.push(f),
                            ws::Event::Closed => return,
                        }
                    }
                }
            }
        }
    };
    let downstream = {
        let (session, to_client, to_backend) =
            (session.clone(), to_client.clone(), to_backend.clone());
        async move {
            let mut buf = Vec::new();
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                to_client.wait_room().await;
                let n = match backend_rd.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                loop {
                    let (frame, used) = match spdy::decode(&buf) {
                        Ok(Some(f)) => f,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::debug!(error = %e, "exec translation: bad spdy frame");
                            return;
                        }
                    };
                    buf.drain(..used);
                    let frame = std::cell::Cell::new(Some(frame));
                    let done = apply(
                        &session,
                        &|s: &mut Session| match frame.take() {
                            Some(f) => s.backend_frame(f),
                            None => Out::default(),
                        },
                        &to_client,
                        &to_backend,
                    );
                    if done {
                        return;
                    }
                }
            }
        }
    };
    tokio::select! {
        _ = upstream => {}
        _ = downstream => {}
        _ = failed.notified() => {}
    }
    to_client.push(ws::encode_frame(
        ws::Opcode::Close,
        &ws::close_payload(1000, ""),
    ));
    to_backend.push(spdy::goaway());
    // Dropping the last senders lets both writers flush and shut their sides down.
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn reply(stream: u32) -> spdy::Frame {
        let mut payload = stream.to_be_bytes().to_vec();
        payload.extend_from_slice(&[0x78, 0x01]);
        spdy::Frame::Control {
            kind: spdy::SYN_REPLY,
            flags: 0,
            payload,
        }
    }

    fn frames(mut bytes: &[u8]) -> Vec<spdy::Frame> {
        let mut out = Vec::new();
        while let Some((f, used)) = spdy::decode(bytes).unwrap() {
            out.push(f);
            bytes = &bytes[used..];
        }
        assert!(bytes.is_empty());
        out
    }

    #[test]
    fn streams_planned_as_client_go() {
        let all = Streams {
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false,
        };
        assert_eq!(
            all.plan(),
            [
                (1, "error", 3),
                (3, "stdin", 0),
                (5, "stdout", 1),
                (7, "stderr", 2)
            ]
        );
        let tty = Streams {
            stderr: true,
            tty: true,
            ..all
        };
        assert_eq!(
            tty.plan(),
            [
                (1, "error", 3),
                (3, "stdin", 0),
                (5, "stdout", 1),
                (7, "resize", 4)
            ]
        );
    }

    #[test]
    fn stdin_waits_for_the_reply_then_closes_with_fin() {
        let streams = Streams {
            stdin: true,
            stdout: true,
            ..Default::default()
        };
        let (mut s, opening) = Session::open(streams);
        assert_eq!(frames(&opening).len(), 3);
        // Before stdin's stream is accepted, its data waits.
        let o = s.client_message(b"\x00hello");
        assert!(o.to_backend.is_empty());
        let o = s.client_message(&[CLOSE, 0]);
        assert!(o.to_backend.is_empty());
        let o = s.backend_frame(reply(3));
        assert_eq!(
            frames(&o.to_backend),
            [
                spdy::Frame::Data {
                    stream: 3,
                    flags: 0,
                    data: b"hello".to_vec()
                },
                spdy::Frame::Data {
                    stream: 3,
                    flags: spdy::FLAG_FIN,
                    data: vec![]
                }
            ]
        );
        // Afterwards data flows at once; output channels never go to the runtime.
        assert!(!s.client_message(b"\x00more").to_backend.is_empty());
        assert!(s.client_message(b"\x01nope").to_backend.is_empty());
    }

    #[test]
    fn output_and_status_reach_the_client_then_the_session_ends() {
        let (mut s, _) = Session::open(Streams {
            stdout: true,
            stderr: true,
            ..Default::default()
        });
        let o = s.backend_frame(spdy::Frame::Data {
            stream: 3,
            flags: 0,
            data: b"out".to_vec(),
        });
        let (f, _) = ws::decode_frame(&o.to_client).unwrap().unwrap();
        assert_eq!(f.payload, b"\x01out");
        let status = br#"{"metadata":{},"status":"Success"}"#;
        let o = s.backend_frame(spdy::Frame::Data {
            stream: 1,
            flags: spdy::FLAG_FIN,
            data: status.to_vec(),
        });
        let (f, _) = ws::decode_frame(&o.to_client).unwrap().unwrap();
        assert_eq!(f.payload[0], 3);
        assert_eq!(&f.payload[1..], status);
        assert!(!o.done);
        // stdout ends with FIN, stderr with a reset: every output is over.
        assert!(
            !s.backend_frame(spdy::Frame::Data {
                stream: 3,
                flags: spdy::FLAG_FIN,
                data: vec![]
            })
            .done
        );
        let o = s.backend_frame(spdy::Frame::Control {
            kind: spdy::RST_STREAM,
            flags: 0,
            payload: vec![0, 0, 0, 5, 0, 0, 0, 5],
        });
        assert!(o.done);
    }

    /// A client frame (masked).
    fn client_frame(payload: &[u8]) -> Vec<u8> {
        let mut out = vec![0x82];
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
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(payload);
        out
    }

    /// A runtime that accepts every stream, echoes stdin to stdout, and at stdin's end
    /// writes the success status and goes away. Megabytes pass through small pipes in
    /// both directions at once without the translator stalling either.
    #[tokio::test]
    async fn echoes_megabytes_both_ways_then_ends() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, mut client_peer) = tokio::io::duplex(16 * 1024);
        let (backend, backend_peer) = tokio::io::duplex(16 * 1024);
        let streams = Streams {
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false,
        };
        let session = tokio::spawn(run(client, backend, streams));
        let runtime = tokio::spawn(async move {
            let (mut rd, mut wr) = tokio::io::split(backend_peer);
            let mut buf = Vec::new();
            let mut chunk = vec![0u8; 8192];
            let mut syns = 0;
            loop {
                let n = rd.read(&mut chunk).await.unwrap();
                if n == 0 {
                    return syns;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Some((frame, used)) = spdy::decode(&buf).unwrap() {
                    buf.drain(..used);
                    match frame {
                        spdy::Frame::Control {
                            kind: spdy::SYN_STREAM,
                            payload,
                            ..
                        } => {
                            syns += 1;
                            let id = spdy::Frame::control_stream(&payload).unwrap();
                            let mut reply = id.to_be_bytes().to_vec();
                            reply.extend_from_slice(&[0x78, 0x01, 0, 0, 0, 0xFF, 0xFF]);
                            let mut f = vec![0x80, 3, 0, 2, 0, 0, 0, reply.len() as u8];
                            f.extend_from_slice(&reply);
                            wr.write_all(&f).await.unwrap();
                        }
                        spdy::Frame::Data {
                            stream: 3,
                            flags,
                            data,
                        } => {
                            if !data.is_empty() {
                                wr.write_all(&spdy::data(5, 0, &data)).await.unwrap();
                            }
                            if flags & spdy::FLAG_FIN != 0 {
                                let ok = br#"{"metadata":{},"status":"Success"}"#;
                                wr.write_all(&spdy::data(1, spdy::FLAG_FIN, ok))
                                    .await
                                    .unwrap();
                                wr.write_all(&spdy::goaway()).await.unwrap();
                            }
                        }
                        spdy::Frame::Control {
                            kind: spdy::GOAWAY, ..
                        } => {}
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
        });
        let input: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
        let (mut crd, mut cwr) = tokio::io::split(&mut client_peer);
        let sender = async {
            for chunk in input.chunks(30_000) {
                let mut msg = vec![0u8];
                msg.extend_from_slice(chunk);
                cwr.write_all(&client_frame(&msg)).await.unwrap();
            }
            cwr.write_all(&client_frame(&[CLOSE, 0])).await.unwrap();
        };
        let receiver = async {
            let mut raw = Vec::new();
            crd.read_to_end(&mut raw).await.unwrap();
            raw
        };
        let ((), raw) = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            futures::future::join(sender, receiver),
        )
        .await
        .expect("the translation stalled");
        let mut rest = &raw[..];
        let mut stdout = Vec::new();
        let mut status = Vec::new();
        let mut closed = false;
        while let Some((f, used)) = ws::decode_frame(rest).unwrap() {
            rest = &rest[used..];
            match (f.opcode, f.payload.first()) {
                (ws::Opcode::Binary, Some(1)) => stdout.extend_from_slice(&f.payload[1..]),
                (ws::Opcode::Binary, Some(3)) => status.extend_from_slice(&f.payload[1..]),
                (ws::Opcode::Close, _) => closed = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(stdout == input, "stdout differs ({} bytes)", stdout.len());
        assert_eq!(status, br#"{"metadata":{},"status":"Success"}"#);
        assert!(closed);
        session.await.unwrap();
        assert_eq!(runtime.await.unwrap(), 4);
    }

    #[test]
    fn pings_answered_and_goaway_ends() {
        let (mut s, _) = Session::open(Streams::default());
        let o = s.backend_frame(spdy::Frame::Control {
            kind: spdy::PING,
            flags: 0,
            payload: vec![0, 0, 0, 2],
        });
        assert_eq!(o.to_backend, spdy::ping_reply(&[0, 0, 0, 2]));
        let o = s.backend_frame(spdy::Frame::Control {
            kind: spdy::GOAWAY,
            flags: 0,
            payload: vec![0; 8],
        });
        assert!(o.done);
    }
}
