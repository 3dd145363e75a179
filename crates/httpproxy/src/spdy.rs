//! The client side of SPDY/3.1 framing, as much as a remote-command client needs
//! (`k8s.io/apimachinery/pkg/util/httpstream/spdy` over moby/spdystream): opening
//! streams with `SYN_STREAM`, sending data (with `FIN` to half-close), and reading the
//! server's frames. Header blocks we send are a zlib stream of stored (uncompressed)
//! deflate blocks — valid for any zlib reader, with or without the SPDY dictionary —
//! and header blocks we receive are skipped: a remote-command client needs no header
//! the server sends.

/// The zlib stream header we start our header-block stream with (deflate, 32 KiB
/// window, no preset dictionary, check bits valid).
const ZLIB_HEADER: [u8; 2] = [0x78, 0x01];

pub const FLAG_FIN: u8 = 0x01;

/// Control frame types.
pub const SYN_STREAM: u16 = 1;
pub const SYN_REPLY: u16 = 2;
pub const RST_STREAM: u16 = 3;
pub const PING: u16 = 6;
pub const GOAWAY: u16 = 7;

/// Frames larger than this are refused (SPDY's length field allows 16 MiB).
const MAX_FRAME: usize = 1 << 24;

/// One frame read from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Data {
        stream: u32,
        flags: u8,
        data: Vec<u8>,
    },
    Control {
        kind: u16,
        flags: u8,
        payload: Vec<u8>,
    },
}

impl Frame {
    /// The stream a control frame is about (`SYN_REPLY`, `RST_STREAM`, …): the first 31
    /// bits of its payload.
    pub fn control_stream(payload: &[u8]) -> Option<u32> {
        let b = payload.get(..4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7FFF_FFFF)
    }
}

/// Why the server's bytes are not SPDY.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("spdy: frame of {0} bytes is too large")]
    TooLarge(usize),
    #[error("spdy: unsupported version {0}")]
    Version(u16),
}

/// Decodes one frame from the start of `buf`: `Ok(None)` when more bytes are needed.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    let Some(head) = buf.get(..8) else {
        return Ok(None);
    };
    let flags = head[4];
    let len = (usize::from(head[5]) << 16) | (usize::from(head[6]) << 8) | usize::from(head[7]);
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge(len));
    }
    let Some(payload) = buf.get(8..8 + len) else {
        return Ok(None);
    };
    let frame = if head[0] & 0x80 != 0 {
        let version = u16::from_be_bytes([head[0] & 0x7F, head[1]]);
        if version != 3 {
            return Err(FrameError::Version(version));
        }
        Frame::Control {
            kind: u16::from_be_bytes([head[2], head[3]]),
            flags,
            payload: payload.to_vec(),
        }
    } else {
        Frame::Data {
            stream: u32::from_be_bytes([head[0], head[1], head[2], head[3]]),
            flags,
            data: payload.to_vec(),
        }
    };
    Ok(Some((frame, 8 + len)))
}

/// A data frame (`len` ≤ 16 MiB; callers send at most 32 KiB at a time).
pub fn data(stream: u32, flags: u8, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + data.len());
    out.extend_from_slice(&(stream & 0x7FFF_FFFF).to_be_bytes());
    out.push(flags);
    out.extend_from_slice(&u24(data.len()));
    out.extend_from_slice(data);
    out
}

fn u24(n: usize) -> [u8; 3] {
    [(n >> 16) as u8, (n >> 8) as u8, n as u8]
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&[0x80, 0x03]);
    out.extend_from_slice(&kind.to_be_bytes());
    out.push(flags);
    out.extend_from_slice(&u24(payload.len()));
    out.extend_from_slice(payload);
    out
}

/// The frames a client writes; keeps the header-compression stream's state.
#[derive(Debug, Default)]
pub struct Writer {
    started: bool,
}

impl Writer {
    /// The header block of `headers` (lowercase names) as the next piece of the zlib
    /// stream: non-final stored deflate blocks, then a sync flush.
    fn header_block(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        for (name, value) in headers {
            raw.extend_from_slice(&(name.len() as u32).to_be_bytes());
            raw.extend_from_slice(name.to_ascii_lowercase().as_bytes());
            raw.extend_from_slice(&(value.len() as u32).to_be_bytes());
            raw.extend_from_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(raw.len() + 16);
        if !self.started {
            out.extend_from_slice(&ZLIB_HEADER);
            self.started = true;
        }
        for chunk in raw.chunks(usize::from(u16::MAX)) {
            let len = chunk.len() as u16;
            out.push(0x00); // BFINAL=0, BTYPE=00 (stored), padded to the byte.
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&(!len).to_le_bytes());
            out.extend_from_slice(chunk);
        }
        // A sync flush (an empty stored block), as zlib's `Z_SYNC_FLUSH`: without it a
        // reader cannot hand out the block's bytes before seeing the next block's header,
        // which only the next frame brings.
        out.extend_from_slice(&[0x00, 0x00, 0x00, 0xFF, 0xFF]);
        out
    }

    /// `SYN_STREAM` opening `stream` with `headers`.
    pub fn syn_stream(&mut self, stream: u32, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut payload = Vec::new();
        payload.extend_from_slice(&(stream & 0x7FFF_FFFF).to_be_bytes());
        payload.extend_from_slice(&0u32.to_be_bytes()); // associated stream
        payload.extend_from_slice(&[0, 0]); // priority, slot
        payload.extend_from_slice(&self.header_block(headers));
        control(SYN_STREAM, 0, &payload)
    }
}

/// The answer to a server's `PING` (the same frame back).
pub fn ping_reply(payload: &[u8]) -> Vec<u8> {
    control(PING, 0, payload)
}

/// A `GOAWAY` with status OK.
pub fn goaway() -> Vec<u8> {
    control(GOAWAY, 0, &[0, 0, 0, 0, 0, 0, 0, 0])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use std::io::Read;

    #[test]
    fn data_frames_round_trip() {
        let f = data(5, FLAG_FIN, b"hello");
        assert_eq!(&f[..8], &[0, 0, 0, 5, 1, 0, 0, 5]);
        let (frame, used) = decode(&f).unwrap().unwrap();
        assert_eq!(used, f.len());
        assert_eq!(
            frame,
            Frame::Data {
                stream: 5,
                flags: FLAG_FIN,
                data: b"hello".to_vec()
            }
        );
        assert_eq!(decode(&f[..7]).unwrap(), None);
        assert_eq!(decode(&f[..12]).unwrap(), None);
    }

    #[test]
    fn control_frames_decode() {
        let ping = ping_reply(&[0, 0, 0, 2]);
        assert_eq!(&ping[..8], &[0x80, 3, 0, 6, 0, 0, 0, 4]);
        let (frame, _) = decode(&ping).unwrap().unwrap();
        assert_eq!(
            frame,
            Frame::Control {
                kind: PING,
                flags: 0,
                payload: vec![0, 0, 0, 2]
            }
        );
        let mut v2 = ping.clone();
        v2[1] = 2;
        assert_eq!(decode(&v2), Err(FrameError::Version(2)));
        assert_eq!(Frame::control_stream(&[0x80, 0, 0, 7, 9]), Some(7));
    }

    /// The header blocks of successive SYN_STREAMs form one zlib stream that a standard
    /// inflater reads back (with a sync point after each frame).
    #[test]
    fn header_blocks_are_one_zlib_stream() {
        let mut w = Writer::default();
        let a = w.syn_stream(1, &[("streamType", "error")]);
        let b = w.syn_stream(3, &[("streamtype", "stdout"), ("x", "")]);
        let block = |f: &[u8]| {
            let (frame, _) = decode(f).unwrap().unwrap();
            let Frame::Control { kind, payload, .. } = frame else {
                panic!("not control")
            };
            assert_eq!(kind, SYN_STREAM);
            assert_eq!(
                Frame::control_stream(&payload),
                Some(if f == a { 1 } else { 3 })
            );
            payload[10..].to_vec()
        };
        let mut stream = block(&a);
        stream.extend_from_slice(&block(&b));
        // Terminate the stream for the test's reader: a final empty stored block and the
        // Adler-32 of everything (flate2 checks it).
        stream.extend_from_slice(&[0x01, 0, 0, 0xFF, 0xFF]);
        let mut expected = Vec::new();
        for hs in [
            vec![("streamtype", "error")],
            vec![("streamtype", "stdout"), ("x", "")],
        ] {
            expected.extend_from_slice(&(hs.len() as u32).to_be_bytes());
            for (n, v) in hs {
                expected.extend_from_slice(&(n.len() as u32).to_be_bytes());
                expected.extend_from_slice(n.as_bytes());
                expected.extend_from_slice(&(v.len() as u32).to_be_bytes());
                expected.extend_from_slice(v.as_bytes());
            }
        }
        let mut adler = (1u32, 0u32);
        for byte in &expected {
            adler.0 = (adler.0 + u32::from(*byte)) % 65521;
            adler.1 = (adler.1 + adler.0) % 65521;
        }
        stream.extend_from_slice(&((adler.1 << 16) | adler.0).to_be_bytes());
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(&stream[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, expected);
    }
}
