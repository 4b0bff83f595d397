//! A database's pages as its log keeps them: the WAL frames of one commit
//! read back after SQLite wrote them ([`read_wal`]), a record of changed
//! pages ([`SqlRecord`], one per flush: the commits of a turn merged), and
//! the file rebuilt from the records in order ([`rebuild`]).
//!
//! The WAL is checkpointed and truncated after each commit is read, so it
//! holds one commit at most: its frames are those after the 32-byte header
//! whose salts match the header's, up to the last commit frame (frames a
//! rolled-back transaction spilled carry no commit mark and are left out).

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

use super::SqlError;

/// What a record starts with.
const MAGIC: &[u8; 4] = b"ISQ1";
/// The record's header: magic, page size, pages in the database, count.
const HEADER: usize = 16;
/// A WAL file's header and a frame's.
const WAL_HEADER: usize = 32;
const FRAME_HEADER: usize = 24;

/// Pages of a database after a commit: `pages` (number → bytes) changed,
/// the database `db_pages` long.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqlRecord {
    pub page_size: u32,
    pub db_pages: u32,
    pub pages: BTreeMap<u32, Vec<u8>>,
}

fn be(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn le(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

impl SqlRecord {
    /// `later`'s pages over these (the commits of one turn as one).
    pub fn merge(&mut self, later: SqlRecord) {
        self.page_size = later.page_size;
        self.db_pages = later.db_pages;
        self.pages.extend(later.pages);
        self.pages.retain(|page, _| *page <= later.db_pages);
    }

    /// The record as the log stores it.
    pub fn encode(&self) -> Vec<u8> {
        let page = self.page_size as usize;
        let mut out = Vec::with_capacity(HEADER + self.pages.len() * (4 + page));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.page_size.to_le_bytes());
        out.extend_from_slice(&self.db_pages.to_le_bytes());
        let count = u32::try_from(self.pages.len()).unwrap_or(u32::MAX);
        out.extend_from_slice(&count.to_le_bytes());
        for (number, bytes) in &self.pages {
            out.extend_from_slice(&number.to_le_bytes());
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A stored record; [`SqlError::Corrupt`] for anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, SqlError> {
        if bytes.len() < HEADER || &bytes[..4] != MAGIC {
            return Err(SqlError::Corrupt);
        }
        let (page_size, db_pages, count) = (le(&bytes[4..]), le(&bytes[8..]), le(&bytes[12..]));
        let page = page_size as usize;
        let body = &bytes[HEADER..];
        if page < 512 || body.len() != count as usize * (4 + page) {
            return Err(SqlError::Corrupt);
        }
        let pages = body
            .chunks_exact(4 + page)
            .map(|chunk| (le(chunk), chunk[4..].to_vec()))
            .collect();
        Ok(Self {
            page_size,
            db_pages,
            pages,
        })
    }
}

/// The last commit in the WAL file at `path`, or `None` when it holds none.
pub(super) fn read_wal(path: &Path) -> Result<Option<SqlRecord>, SqlError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    if bytes.len() < WAL_HEADER {
        return Ok(None);
    }
    let page_size = be(&bytes[8..]);
    let salts = &bytes[16..24];
    let frame = FRAME_HEADER + page_size as usize;
    let mut record = None;
    let mut pending = Vec::new();
    for head in bytes[WAL_HEADER..].chunks_exact(frame) {
        if &head[8..16] != salts {
            break;
        }
        pending.push((be(head), &head[FRAME_HEADER..]));
        let commit = be(&head[4..]);
        if commit != 0 {
            let done = record.get_or_insert_with(|| SqlRecord {
                page_size,
                ..SqlRecord::default()
            });
            done.db_pages = commit;
            done.pages
                .extend(pending.drain(..).map(|(n, page)| (n, page.to_vec())));
        }
    }
    Ok(record)
}

/// The whole database file at `path` as one record (a snapshot).
pub(super) fn snapshot(path: &Path, page_size: u32) -> Result<SqlRecord, SqlError> {
    let bytes = std::fs::read(path)?;
    let pages: BTreeMap<u32, Vec<u8>> = bytes
        .chunks_exact(page_size as usize)
        .zip(1..)
        .map(|(page, number)| (number, page.to_vec()))
        .collect();
    Ok(SqlRecord {
        page_size,
        db_pages: u32::try_from(pages.len()).unwrap_or(u32::MAX),
        pages,
    })
}

/// Writes the database file at `path` from `records`, in order; the page
/// size of the records.
pub(super) fn rebuild(path: &Path, records: &[Vec<u8>]) -> Result<u32, SqlError> {
    let file = std::fs::File::create(path)?;
    let mut last = (0u32, 0u32);
    for bytes in records {
        let record = SqlRecord::decode(bytes)?;
        if last.0 != 0 && record.page_size != last.0 {
            return Err(SqlError::Corrupt);
        }
        for (number, page) in &record.pages {
            let at = u64::from(number.saturating_sub(1)) * u64::from(record.page_size);
            file.write_all_at(page, at)?;
        }
        last = (record.page_size, record.db_pages);
    }
    file.set_len(u64::from(last.1) * u64::from(last.0))?;
    Ok(last.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_comes_back_as_it_went_and_later_pages_win() {
        let page = |b: u8| vec![b; 512];
        let mut first = SqlRecord {
            page_size: 512,
            db_pages: 3,
            pages: [(1, page(1)), (3, page(3))].into(),
        };
        let later = SqlRecord {
            page_size: 512,
            db_pages: 2,
            pages: [(2, page(2)), (1, page(9))].into(),
        };
        first.merge(later);
        assert_eq!(first.db_pages, 2);
        assert_eq!(first.pages.keys().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(first.pages[&1], page(9));
        let decoded = SqlRecord::decode(&first.encode()).unwrap();
        assert_eq!(decoded, first);
        assert!(matches!(
            SqlRecord::decode(b"nonsense nonsense"),
            Err(SqlError::Corrupt)
        ));
    }
}
