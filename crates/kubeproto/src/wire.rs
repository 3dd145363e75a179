//! The protobuf wire format, read without trusting a single length: every length is checked
//! against the bytes left before anything is sliced, and nothing is allocated from a length
//! read off the wire.

/// A wire-level fault, with the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WireError(pub &'static str);

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
pub(crate) const START_GROUP: u8 = 3;
pub(crate) const END_GROUP: u8 = 4;
pub(crate) const FIXED32: u8 = 5;

/// Groups nested deeper than this in skipped (unknown) fields are refused.
const MAX_GROUP_DEPTH: usize = 64;

/// One field's value as found on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl Raw<'_> {
    pub(crate) fn wire_type(&self) -> u8 {
        match self {
            Raw::Varint(_) => VARINT,
            Raw::Fixed64(_) => FIXED64,
            Raw::Fixed32(_) => FIXED32,
            Raw::Bytes(_) => LEN,
        }
    }
}

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for (i, &b) in self.buf.iter().enumerate().take(10) {
            if i == 9 && b > 1 {
                return Err(WireError("varint overflows 64 bits"));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                self.buf = self.buf.get(i + 1..).unwrap_or_default();
                return Ok(value);
            }
        }
        if self.buf.len() >= 10 {
            Err(WireError("varint overflows 64 bits"))
        } else {
            Err(WireError("unexpected end of data in a varint"))
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.buf.len() {
            return Err(WireError("unexpected end of data"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    pub(crate) fn fixed32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    pub(crate) fn length_delimited(&mut self) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| WireError("length out of range"))?;
        if len > self.buf.len() {
            return Err(WireError("length exceeds the data left"));
        }
        self.take(len)
    }

    /// The next field's number and value; `None` at the end. Groups (deprecated, never used
    /// by Kubernetes) are skipped, as upstream's decoders skip them, and reported as `None`
    /// values.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, Option<Raw<'a>>)>, WireError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire_type = (key & 7) as u8;
        let number = key >> 3;
        if number == 0 {
            return Err(WireError("illegal field number 0"));
        }
        let number = u32::try_from(number)
            .ok()
            .filter(|n| *n < (1 << 29))
            .ok_or(WireError("field number out of range"))?;
        let raw = match wire_type {
            VARINT => Raw::Varint(self.varint()?),
            FIXED64 => Raw::Fixed64(self.fixed64()?),
            LEN => Raw::Bytes(self.length_delimited()?),
            FIXED32 => Raw::Fixed32(self.fixed32()?),
            START_GROUP => {
                self.skip_group()?;
                return Ok(Some((number, None)));
            }
            END_GROUP => return Err(WireError("unexpected end of group")),
            _ => return Err(WireError("illegal wire type")),
        };
        Ok(Some((number, Some(raw))))
    }

    fn skip_group(&mut self) -> Result<(), WireError> {
        let mut depth = 1usize;
        while depth > 0 {
            if self.buf.is_empty() {
                return Err(WireError("unexpected end of data in a group"));
            }
            let key = self.varint()?;
            match (key & 7) as u8 {
                VARINT => {
                    self.varint()?;
                }
                FIXED64 => {
                    self.fixed64()?;
                }
                LEN => {
                    self.length_delimited()?;
                }
                FIXED32 => {
                    self.fixed32()?;
                }
                START_GROUP => {
                    depth += 1;
                    if depth > MAX_GROUP_DEPTH {
                        return Err(WireError("groups nested too deeply"));
                    }
                }
                END_GROUP => depth -= 1,
                _ => return Err(WireError("illegal wire type")),
            }
        }
        Ok(())
    }
}

/// Appends a varint.
#[cfg(test)]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
#[cfg(test)]
pub(crate) fn put_key(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field.
#[cfg(test)]
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.varint().unwrap(), v);
            assert!(r.is_empty());
        }
        assert!(Reader::new(&[0x80; 11]).varint().is_err());
        assert!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .varint()
                .is_err()
        );
        assert!(Reader::new(&[0x80]).varint().is_err());
    }

    #[test]
    fn absurd_lengths_are_refused() {
        let mut b = Vec::new();
        put_key(&mut b, 1, LEN);
        put_varint(&mut b, u64::MAX);
        assert!(Reader::new(&b).field().is_err());
    }

    #[test]
    fn groups_are_skipped() {
        let mut b = Vec::new();
        put_key(&mut b, 5, START_GROUP);
        put_key(&mut b, 1, VARINT);
        put_varint(&mut b, 7);
        put_key(&mut b, 5, END_GROUP);
        put_key(&mut b, 2, VARINT);
        put_varint(&mut b, 9);
        let mut r = Reader::new(&b);
        assert_eq!(r.field().unwrap(), Some((5, None)));
        assert_eq!(r.field().unwrap(), Some((2, Some(Raw::Varint(9)))));
        assert_eq!(r.field().unwrap(), None);
    }
}
