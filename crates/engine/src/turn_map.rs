//! [`TurnMap`]: which Worker is in a JavaScript turn on each engine thread,
//! kept in a file mapped into memory (layout: the `isolane-turnmap` crate),
//! so that the next process on the same state directory can tell, after a
//! crash, which Workers were in a turn when the process ended.
//!
//! Each engine thread owns one slot ([`TurnSlot`]). `WorkerIsolate::turn`
//! writes the Worker's id and `in_turn = 1` before entering JavaScript and
//! `in_turn = 0` after it: a few stores per turn, no system call, no lock.
//! The mapping is `MAP_SHARED` on a regular file, so what was stored is in
//! the page cache when the process dies however it dies; only a machine
//! crash loses it (and the state directory with it, on an `emptyDir`).
//!
//! Expected flow: [`TurnMap::open`] takes the file's lock, reads the
//! previous run ([`PreviousRun`]), writes a fresh map for this run; threads
//! claim their slots; [`TurnMap::close_clean`] marks an orderly stop.
//! Guarantees: a slot names a Worker only between the start and end of one
//! of its turns (the id is written before the flag, the flag cleared
//! first); a file another live process holds is never read or written.
//! Caveats: work a Worker causes off its thread (crypto on the crypto pool)
//! is not in a turn of that thread; a process killed while no turn runs
//! leaves every slot idle, which is the truth.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering, compiler_fence};

use isolane_turnmap::{
    FormatError, HEADER_LEN, ID_OFFSET, MAX_ID, PreviousRun, SLOT_LEN, STATE_CLEAN, STATE_OFFSET,
};
use memmap2::{MmapOptions, MmapRaw};

/// Why the turn map could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum TurnMapError {
    /// Reading, writing or mapping the file failed.
    #[error("turn map {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another live process holds the file (two nodes given one name and
    /// one state directory).
    #[error("turn map {path} is held by another process")]
    Locked { path: PathBuf },
    /// More slots than the layout allows.
    #[error("a turn map has at most {max} slots, not {slots}")]
    TooManySlots { slots: usize, max: u32 },
}

/// What the previous process left in the file.
#[derive(Debug)]
pub enum Previous {
    /// No file, or an empty one: no previous run here.
    None,
    /// A map this version reads.
    Run(PreviousRun),
    /// A file that is not one (garbage, torn, another version): ignored.
    Unreadable(FormatError),
}

/// The map of this process's turns, one slot per engine thread.
pub struct TurnMap {
    map: MmapRaw,
    slots: usize,
    claimed: Vec<AtomicBool>,
    path: PathBuf,
    /// Open, so its lock is held as long as the map is.
    _file: File,
}

impl std::fmt::Debug for TurnMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnMap")
            .field("path", &self.path)
            .field("slots", &self.slots)
            .finish_non_exhaustive()
    }
}

// === impl TurnMap ===

impl TurnMap {
    /// Opens the map at `path` for `slots` engine threads: takes the file's
    /// lock, reads what the previous run left, then writes a fresh map for
    /// this run (every slot idle) stamped `started_ms` and this process's id.
    pub fn open(
        path: &Path,
        slots: usize,
        started_ms: u64,
    ) -> Result<(Arc<Self>, Previous), TurnMapError> {
        let io = |source| TurnMapError::Io {
            path: path.to_owned(),
            source,
        };
        let count = u32::try_from(slots)
            .ok()
            .filter(|s| *s <= isolane_turnmap::MAX_SLOTS)
            .ok_or(TurnMapError::TooManySlots {
                slots,
                max: isolane_turnmap::MAX_SLOTS,
            })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(TurnMapError::Locked {
                    path: path.to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(source)) => return Err(io(source)),
        }
        let previous = read_previous(&mut file).map_err(io)?;
        let len = isolane_turnmap::file_len(count);
        let header = isolane_turnmap::header(count, started_ms, std::process::id());
        file.set_len(0).map_err(io)?;
        file.set_len(len as u64).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&header).map_err(io)?;
        file.sync_all().map_err(io)?;
        let map = MmapOptions::new().len(len).map_raw(&file).map_err(io)?;
        let map = Arc::new(Self {
            map,
            slots,
            claimed: (0..slots).map(|_| AtomicBool::new(false)).collect(),
            path: path.to_owned(),
            _file: file,
        });
        Ok((map, previous))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Thread `index`'s slot, once: `None` when out of range or taken.
    pub(crate) fn slot(self: &Arc<Self>, index: usize) -> Option<TurnSlot> {
        let claimed = self.claimed.get(index)?;
        if claimed.swap(true, Ordering::AcqRel) {
            return None;
        }
        let at = HEADER_LEN + index * SLOT_LEN;
        // SAFETY: `at + SLOT_LEN <= file_len(slots)`, the mapping's length
        // (index < slots), so the pointer stays inside the mapping, which
        // lives as long as the `Arc` the slot holds.
        let base = unsafe { self.map.as_mut_ptr().add(at) };
        Some(TurnSlot {
            _map: self.clone(),
            base,
        })
    }

    /// The process stops in order: every slot idle, the state clean, so the
    /// next run reports no crash. Call once the engine threads have stopped.
    pub fn close_clean(&self) {
        let base = self.map.as_mut_ptr();
        for index in 0..self.slots {
            // SAFETY: inside the mapping (as in `slot`); the engine threads
            // that wrote these slots have stopped, and a stray write from
            // one still running is a 4-byte store to its own slot.
            unsafe {
                base.add(HEADER_LEN + index * SLOT_LEN)
                    .cast::<u32>()
                    .write_volatile(0)
            };
        }
        compiler_fence(Ordering::SeqCst);
        // SAFETY: the state word is inside the header, 4-byte aligned (the
        // mapping is page-aligned); only this call writes it after `open`.
        unsafe {
            base.add(STATE_OFFSET)
                .cast::<u32>()
                .write_volatile(STATE_CLEAN.to_le())
        };
        if let Err(error) = self.map.flush() {
            tracing::warn!(path = %self.path.display(), %error, "turn map flush failed");
        }
    }
}

/// The whole file as the previous run left it.
fn read_previous(file: &mut File) -> std::io::Result<Previous> {
    let mut bytes = Vec::new();
    // A map is small; a huge file is not one, and is not read whole.
    let limit = isolane_turnmap::file_len(isolane_turnmap::MAX_SLOTS) as u64 + 1;
    file.seek(SeekFrom::Start(0))?;
    file.take(limit).read_to_end(&mut bytes)?;
    if bytes.is_empty() {
        return Ok(Previous::None);
    }
    Ok(match isolane_turnmap::parse(&bytes) {
        Ok(run) => Previous::Run(run),
        Err(error) => Previous::Unreadable(error),
    })
}

/// One engine thread's slot. Thread affinity: made for one thread, used by
/// it alone (not `Send`: it holds a raw pointer).
pub(crate) struct TurnSlot {
    _map: Arc<TurnMap>,
    base: *mut u8,
}

impl TurnSlot {
    /// A turn of `worker_id` starts: the id, then the flag (none for a blank
    /// isolate's turn, which runs no Worker's code). An id longer
    /// than a slot (never a Kubernetes one) is cut at a character boundary.
    pub(crate) fn enter(&self, worker_id: &str) {
        // A blank isolate's turns (a spare warming up) run no Worker's code.
        if worker_id.is_empty() {
            return;
        }
        let mut len = worker_id.len().min(MAX_ID);
        while !worker_id.is_char_boundary(len) {
            len -= 1;
        }
        // SAFETY: the slot is `SLOT_LEN` bytes inside the live mapping and
        // only this thread writes it; the id fits (`len <= MAX_ID`); the
        // words are 4-byte aligned (page-aligned mapping, 64-byte header,
        // 512-byte slots). Volatile, with a fence before the flag, so the id
        // is stored before the flag says it is there.
        unsafe {
            std::ptr::copy_nonoverlapping(worker_id.as_ptr(), self.base.add(ID_OFFSET), len);
            self.base
                .add(4)
                .cast::<u32>()
                .write_volatile((len as u32).to_le());
            compiler_fence(Ordering::SeqCst);
            self.base.cast::<u32>().write_volatile(1u32.to_le());
        }
    }

    /// The turn ended.
    pub(crate) fn leave(&self) {
        // SAFETY: as in `enter`.
        unsafe { self.base.cast::<u32>().write_volatile(0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> PreviousRun {
        isolane_turnmap::parse(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn a_run_killed_in_a_turn_is_reported_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/turns.map");
        let (map, previous) = TurnMap::open(&path, 3, 1000).unwrap();
        assert!(matches!(previous, Previous::None));
        let slots: Vec<_> = (0..3).map(|i| map.slot(i).unwrap()).collect();
        assert!(map.slot(0).is_none(), "a slot is claimed once");
        assert!(map.slot(3).is_none());
        slots[0].enter("ns/a-much-longer-worker-name");
        slots[0].leave();
        slots[0].enter("ns/poison");
        slots[2].enter("ns/other");
        slots[2].leave();
        // What a reader sees while it runs (the file, not the mapping).
        let live = read(&path);
        assert!(live.crashed());
        assert_eq!(live.in_turn, ["ns/poison"]);
        // The lock keeps a second process (here: a second open) out.
        assert!(matches!(
            TurnMap::open(&path, 3, 2000),
            Err(TurnMapError::Locked { .. })
        ));
        // Killed: nothing ran `close_clean`.
        drop(slots);
        drop(map);
        let (map, previous) = TurnMap::open(&path, 2, 2000).unwrap();
        let Previous::Run(run) = previous else {
            panic!("{previous:?}")
        };
        assert!(run.crashed());
        assert_eq!(run.started_ms, 1000);
        assert_eq!(run.in_turn, ["ns/poison"]);
        // The new run starts idle, with its own size.
        let fresh = read(&path);
        assert!(fresh.in_turn.is_empty());
        assert_eq!(fresh.started_ms, 2000);
        map.close_clean();
        drop(map);
        let (_map, previous) = TurnMap::open(&path, 2, 3000).unwrap();
        assert!(matches!(previous, Previous::Run(run) if !run.crashed()));
    }

    #[test]
    fn garbage_in_the_file_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.map");
        std::fs::write(
            &path,
            b"not a turn map at all, but long enough to be read as one, maybe?",
        )
        .unwrap();
        let (map, previous) = TurnMap::open(&path, 1, 5).unwrap();
        assert!(matches!(previous, Previous::Unreadable(FormatError::Magic)));
        map.slot(0).unwrap().enter("ns/w");
        assert_eq!(read(&path).in_turn, ["ns/w"]);
    }
}
