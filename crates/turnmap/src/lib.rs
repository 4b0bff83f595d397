//! The turn map: a small file, mapped into the node's memory, with one slot
//! per engine thread saying which Worker is in a JavaScript turn there.
//!
//! The engine (`isolane_engine::TurnMap`) writes it: a slot gets the Worker's
//! id and `in_turn = 1` when a turn starts, `in_turn = 0` when it ends, and
//! the header says [`STATE_CLEAN`] once the node has stopped in order. The
//! file is shared memory backed by a file, so what the process stored is in
//! the page cache even when the process is killed mid-turn (SIGKILL, an
//! OOM kill, an abort). The next process on the same state directory reads
//! it with [`parse`] before writing its own: a run that did not end clean
//! is a crash, and the slots still set name the Workers that were in a turn
//! when it ended. The node publishes that on its Lease and the router uses
//! it to tell the Worker that kills nodes from the bystanders that were
//! merely in flight (`router/src/losses.rs`).
//!
//! This crate is the layout and the reader only (no `unsafe`, no mapping),
//! so tests can read a live node's map too.
//!
//! Layout (version 1, little-endian), [`HEADER_LEN`] bytes then `slots`
//! slots of [`SLOT_LEN`] bytes:
//!
//! | offset | size | header field |
//! | --- | --- | --- |
//! | 0 | 8 | [`MAGIC`] |
//! | 8 | 4 | [`VERSION`] |
//! | 12 | 4 | slot count |
//! | 16 | 4 | [`SLOT_LEN`] |
//! | 20 | 4 | state: [`STATE_RUNNING`] or [`STATE_CLEAN`] |
//! | 24 | 8 | when the run started, Unix milliseconds |
//! | 32 | 8 | the process id |
//!
//! | offset in slot | size | slot field |
//! | --- | --- | --- |
//! | 0 | 4 | `in_turn`: 0 or 1 |
//! | 4 | 4 | length of the Worker id |
//! | 8 | up to [`MAX_ID`] | the Worker id, UTF-8 |
//!
//! Anything else (a torn or truncated file, garbage, another version or
//! slot size) is refused by [`parse`] with a [`FormatError`], or for one
//! slot counted in [`PreviousRun::unreadable`]; never a panic.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// The first bytes of every map.
pub const MAGIC: [u8; 8] = *b"ISLTURNS";
/// The layout's version.
pub const VERSION: u32 = 1;
/// Bytes before the first slot.
pub const HEADER_LEN: usize = 64;
/// Bytes per slot.
pub const SLOT_LEN: usize = 512;
/// Where a slot's Worker id starts.
pub const ID_OFFSET: usize = 8;
/// The longest Worker id a slot holds (a Kubernetes namespace and name are
/// at most 63 + 1 + 253 bytes).
pub const MAX_ID: usize = SLOT_LEN - ID_OFFSET;
/// Where the header's state is.
pub const STATE_OFFSET: usize = 20;
/// The header's state while the process runs.
pub const STATE_RUNNING: u32 = 1;
/// The header's state once the process stopped in order.
pub const STATE_CLEAN: u32 = 2;
/// The most slots a map may have (the engine's thread count is far below).
pub const MAX_SLOTS: u32 = 4096;

/// The file's length for `slots` slots.
pub fn file_len(slots: u32) -> usize {
    HEADER_LEN + slots as usize * SLOT_LEN
}

/// Where a node named `node` keeps its map in `dir`. The node's name is
/// reduced to `[A-Za-z0-9_-]` so it cannot leave the directory.
pub fn path_in(dir: &Path, node: &str) -> PathBuf {
    let name: String = node
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    dir.join(format!("turns-{name}.map"))
}

/// A fresh header: version 1, `slots` slots, running.
pub fn header(slots: u32, started_ms: u64, pid: u32) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[0..8].copy_from_slice(&MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[12..16].copy_from_slice(&slots.to_le_bytes());
    header[16..20].copy_from_slice(&(SLOT_LEN as u32).to_le_bytes());
    header[STATE_OFFSET..STATE_OFFSET + 4].copy_from_slice(&STATE_RUNNING.to_le_bytes());
    header[24..32].copy_from_slice(&started_ms.to_le_bytes());
    header[32..40].copy_from_slice(&u64::from(pid).to_le_bytes());
    header
}

/// What a map says about the run that wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousRun {
    /// When that run started, Unix milliseconds.
    pub started_ms: u64,
    /// Its process id.
    pub pid: u64,
    /// It stopped in order (nothing to report).
    pub clean: bool,
    /// The Workers in a turn when it ended, sorted, each once.
    pub in_turn: Vec<String>,
    /// Slots that were neither idle nor a readable Worker id (a torn write).
    pub unreadable: usize,
}

impl PreviousRun {
    /// Whether the run ended without stopping in order.
    pub fn crashed(&self) -> bool {
        !self.clean
    }
}

/// Why a file is not a map this version can read.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum FormatError {
    /// Shorter than a header.
    #[error("the turn map has {len} bytes, less than a header")]
    TooShort { len: usize },
    /// Not a turn map.
    #[error("the file is not a turn map")]
    Magic,
    /// Another version.
    #[error("the turn map is version {found}, not {VERSION}")]
    Version { found: u32 },
    /// Another slot size, or more slots than any engine has.
    #[error("the turn map's layout ({slots} slots of {slot_len} bytes) is not this version's")]
    Layout { slots: u32, slot_len: u32 },
    /// The length does not match the header (truncated or grown).
    #[error("the turn map has {found} bytes; its header says {expected}")]
    Length { expected: usize, found: usize },
    /// The state is neither running nor clean.
    #[error("the turn map's state {found} is unknown")]
    State { found: u32 },
}

impl FormatError {
    /// A bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::TooShort { .. } => "too_short",
            Self::Magic => "magic",
            Self::Version { .. } => "version",
            Self::Layout { .. } => "layout",
            Self::Length { .. } => "length",
            Self::State { .. } => "state",
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// Reads a map's bytes.
pub fn parse(bytes: &[u8]) -> Result<PreviousRun, FormatError> {
    if bytes.len() < HEADER_LEN {
        return Err(FormatError::TooShort { len: bytes.len() });
    }
    if bytes[0..8] != MAGIC {
        return Err(FormatError::Magic);
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(FormatError::Version { found: version });
    }
    let (slots, slot_len) = (u32_at(bytes, 12), u32_at(bytes, 16));
    if slot_len as usize != SLOT_LEN || slots > MAX_SLOTS {
        return Err(FormatError::Layout { slots, slot_len });
    }
    let expected = file_len(slots);
    if bytes.len() != expected {
        return Err(FormatError::Length {
            expected,
            found: bytes.len(),
        });
    }
    let clean = match u32_at(bytes, STATE_OFFSET) {
        STATE_RUNNING => false,
        STATE_CLEAN => true,
        found => return Err(FormatError::State { found }),
    };
    let mut in_turn = Vec::new();
    let mut unreadable = 0;
    for slot in bytes[HEADER_LEN..].chunks_exact(SLOT_LEN) {
        match read_slot(slot) {
            Slot::Idle => {}
            Slot::InTurn(id) => in_turn.push(id.to_owned()),
            Slot::Unreadable => unreadable += 1,
        }
    }
    in_turn.sort_unstable();
    in_turn.dedup();
    Ok(PreviousRun {
        started_ms: u64_at(bytes, 24),
        pid: u64_at(bytes, 32),
        clean,
        in_turn,
        unreadable,
    })
}

enum Slot<'a> {
    Idle,
    InTurn(&'a str),
    Unreadable,
}

fn read_slot(slot: &[u8]) -> Slot<'_> {
    match u32_at(slot, 0) {
        0 => Slot::Idle,
        1 => {
            let len = u32_at(slot, 4) as usize;
            if len == 0 || len > MAX_ID {
                return Slot::Unreadable;
            }
            match std::str::from_utf8(&slot[ID_OFFSET..ID_OFFSET + len]) {
                Ok(id) => Slot::InTurn(id),
                Err(_) => Slot::Unreadable,
            }
        }
        _ => Slot::Unreadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(slots: u32) -> Vec<u8> {
        let mut bytes = vec![0u8; file_len(slots)];
        bytes[..HEADER_LEN].copy_from_slice(&header(slots, 1_700_000_000_000, 42));
        bytes
    }

    fn set(bytes: &mut [u8], slot: usize, id: &str) {
        let at = HEADER_LEN + slot * SLOT_LEN;
        bytes[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&(id.len() as u32).to_le_bytes());
        bytes[at + ID_OFFSET..at + ID_OFFSET + id.len()].copy_from_slice(id.as_bytes());
    }

    #[test]
    fn a_crashed_run_names_the_workers_in_a_turn() {
        let mut bytes = map(4);
        set(&mut bytes, 1, "ns/poison");
        set(&mut bytes, 3, "ns/poison");
        set(&mut bytes, 2, "other/busy");
        let run = parse(&bytes).unwrap();
        assert!(run.crashed());
        assert_eq!(run.in_turn, ["ns/poison", "other/busy"]);
        assert_eq!(
            (run.started_ms, run.pid, run.unreadable),
            (1_700_000_000_000, 42, 0)
        );
        // An idle map of a crashed run: nobody was in a turn.
        let run = parse(&map(2)).unwrap();
        assert!(run.crashed() && run.in_turn.is_empty());
    }

    #[test]
    fn a_clean_run_is_not_a_crash() {
        let mut bytes = map(1);
        bytes[STATE_OFFSET..STATE_OFFSET + 4].copy_from_slice(&STATE_CLEAN.to_le_bytes());
        assert!(!parse(&bytes).unwrap().crashed());
    }

    #[test]
    fn wrong_files_are_refused() {
        assert_eq!(parse(&[]), Err(FormatError::TooShort { len: 0 }));
        let mut bytes = map(2);
        bytes[0] = b'X';
        assert_eq!(parse(&bytes), Err(FormatError::Magic));
        let mut bytes = map(2);
        bytes[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(parse(&bytes), Err(FormatError::Version { found: 2 }));
        let mut bytes = map(2);
        bytes[16..20].copy_from_slice(&256u32.to_le_bytes());
        assert_eq!(parse(&bytes).unwrap_err().kind(), "layout");
        let mut bytes = map(2);
        bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&bytes).unwrap_err().kind(), "layout");
        // Truncated, and grown.
        let bytes = map(2);
        assert_eq!(
            parse(&bytes[..bytes.len() - 1]).unwrap_err().kind(),
            "length"
        );
        let mut grown = map(2);
        grown.push(0);
        assert_eq!(parse(&grown).unwrap_err().kind(), "length");
        let mut bytes = map(2);
        bytes[STATE_OFFSET] = 9;
        assert_eq!(parse(&bytes), Err(FormatError::State { found: 9 }));
    }

    #[test]
    fn torn_slots_are_counted_not_read() {
        let mut bytes = map(4);
        set(&mut bytes, 0, "ns/ok");
        // A flag that is neither 0 nor 1.
        bytes[HEADER_LEN + SLOT_LEN] = 7;
        // A length past the slot.
        set(&mut bytes, 2, "ns/x");
        let at = HEADER_LEN + 2 * SLOT_LEN + 4;
        bytes[at..at + 4].copy_from_slice(&(MAX_ID as u32 + 1).to_le_bytes());
        // Bytes that are not UTF-8.
        set(&mut bytes, 3, "ns/y");
        bytes[HEADER_LEN + 3 * SLOT_LEN + ID_OFFSET] = 0xff;
        let run = parse(&bytes).unwrap();
        assert_eq!(run.in_turn, ["ns/ok"]);
        assert_eq!(run.unreadable, 3);
    }

    #[test]
    fn garbage_never_panics() {
        // Every length around the header and a few slots, filled with a
        // pattern, and a valid header over garbage slots.
        let mut state = 0x9e37_79b9_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        };
        for len in 0..file_len(3) + 2 {
            let bytes: Vec<u8> = (0..len).map(|_| next()).collect();
            let _ = parse(&bytes);
            let mut framed = map(3);
            for b in &mut framed[HEADER_LEN..] {
                *b = next();
            }
            let _ = parse(&framed);
        }
    }

    #[test]
    fn node_names_stay_in_the_directory() {
        let dir = Path::new("/state");
        assert_eq!(path_in(dir, "node-a"), Path::new("/state/turns-node-a.map"));
        assert_eq!(path_in(dir, "../x"), Path::new("/state/turns-___x.map"));
    }
}
