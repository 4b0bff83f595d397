//! The gzip member framing (RFC 1952) around a raw deflate stream: the
//! header [`Compressor`](super::flate::Compressor) writes, and the header
//! parser and trailer check [`Decompressor`](super::flate::Decompressor)
//! runs. flate2's low-level API (the only one that lets the caller bound
//! the output of each step) speaks zlib and raw deflate only, with the
//! pure-Rust backend this workspace builds.

use flate2::Crc;

use super::flate::CodecError;

/// The header written before compressed data: no name, no time, "Unix"
/// (what zlib writes on the platforms workerd runs on).
pub(super) const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const RESERVED: u8 = 0xe0;

/// The 8-byte trailer for `crc` (CRC-32 and length mod 2³² of the data).
pub(super) fn trailer(crc: &Crc) -> [u8; 8] {
    let mut out = [0; 8];
    out[..4].copy_from_slice(&crc.sum().to_le_bytes());
    out[4..].copy_from_slice(&crc.amount().to_le_bytes());
    out
}

/// Checks a received trailer against what was decompressed.
pub(super) fn check_trailer(bytes: &[u8; 8], crc: &Crc) -> Result<(), CodecError> {
    if bytes[..4] != crc.sum().to_le_bytes() {
        return Err(CodecError::Corrupt("gzip CRC-32 mismatch"));
    }
    if bytes[4..] != crc.amount().to_le_bytes() {
        return Err(CodecError::Corrupt("gzip length mismatch"));
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Part {
    Fixed,
    ExtraLen,
    Extra,
    Name,
    Comment,
    HeaderCrc,
    Done,
}

/// Parses a gzip header fed in pieces of any size; keeps only counters and
/// the header's running CRC (a name or comment of any length costs nothing).
#[derive(Debug)]
pub(super) struct HeaderParser {
    part: Part,
    flags: u8,
    /// Bytes of the current part seen so far (or, for `Extra`, left).
    seen: usize,
    extra_len: usize,
    stored_crc: u16,
    crc: Crc,
}

impl Default for HeaderParser {
    fn default() -> Self {
        Self {
            part: Part::Fixed,
            flags: 0,
            seen: 0,
            extra_len: 0,
            stored_crc: 0,
            crc: Crc::new(),
        }
    }
}

impl HeaderParser {
    pub(super) fn done(&self) -> bool {
        self.part == Part::Done
    }

    /// Consumes header bytes from `input`; returns how many it took (all of
    /// `input` unless the header ended inside it).
    pub(super) fn feed(&mut self, input: &[u8]) -> Result<usize, CodecError> {
        let mut used = 0;
        while used < input.len() && self.part != Part::Done {
            let byte = input[used];
            used += 1;
            if self.part != Part::HeaderCrc {
                self.crc.update(&[byte]);
            }
            self.byte(byte)?;
        }
        Ok(used)
    }

    fn byte(&mut self, byte: u8) -> Result<(), CodecError> {
        match self.part {
            Part::Fixed => {
                let ok = match self.seen {
                    0 => byte == 0x1f,
                    1 => byte == 0x8b,
                    2 => byte == 8,
                    3 => {
                        self.flags = byte;
                        byte & RESERVED == 0
                    }
                    _ => true,
                };
                if !ok {
                    return Err(CodecError::Corrupt("invalid gzip header"));
                }
                self.seen += 1;
                if self.seen == HEADER.len() {
                    self.next_after(Part::Fixed);
                }
            }
            Part::ExtraLen => {
                self.extra_len |= usize::from(byte) << (8 * self.seen);
                self.seen += 1;
                if self.seen == 2 {
                    self.seen = 0;
                    if self.extra_len == 0 {
                        self.next_after(Part::Extra);
                    } else {
                        self.part = Part::Extra;
                    }
                }
            }
            Part::Extra => {
                self.seen += 1;
                if self.seen == self.extra_len {
                    self.next_after(Part::Extra);
                }
            }
            Part::Name | Part::Comment => {
                if byte == 0 {
                    self.next_after(self.part);
                }
            }
            Part::HeaderCrc => {
                self.stored_crc |= u16::from(byte) << (8 * self.seen);
                self.seen += 1;
                if self.seen == 2 {
                    // The low 16 bits of the CRC-32 of the header before it.
                    if (self.crc.sum() & 0xffff) as u16 != self.stored_crc {
                        return Err(CodecError::Corrupt("gzip header CRC mismatch"));
                    }
                    self.part = Part::Done;
                }
            }
            Part::Done => {}
        }
        Ok(())
    }

    /// Moves to the first optional part after `after` that the flags ask for.
    fn next_after(&mut self, after: Part) {
        let order = [
            (Part::ExtraLen, FEXTRA),
            (Part::Name, FNAME),
            (Part::Comment, FCOMMENT),
            (Part::HeaderCrc, FHCRC),
        ];
        let rank = |p: Part| match p {
            Part::Fixed => 0,
            Part::ExtraLen | Part::Extra => 1,
            Part::Name => 2,
            Part::Comment => 3,
            Part::HeaderCrc => 4,
            Part::Done => 5,
        };
        self.seen = 0;
        self.part = order
            .iter()
            .find(|(p, flag)| rank(*p) > rank(after) && self.flags & flag != 0)
            .map_or(Part::Done, |(p, _)| *p);
    }
}
