//! The V8 code cache on disk: the bytecode V8 made for a big ES module or
//! classic (service-worker) script, so the next isolate to load it (another engine thread, or this
//! node after a restart) deserialises it instead of parsing and compiling
//! the source again.
//!
//! - One checked file per module source (`isolane-checkedfile`: magic
//!   `ISOLCODE`, `code-<key>.bin`), in the platform's folder
//!   ([`CodeCacheConfig::dir`]: the node's bundle cache folder, beside the
//!   bundles). The key hashes the source, V8's version and flags and V8's
//!   own cache tag ([`key_of`]): a Worker names no file, and a stale or
//!   foreign file is another key. A file that fails the checks is counted
//!   (`invalid`) and rewritten; one V8 itself refuses (`rejected`: V8's
//!   version, flags or the source's hash differ) is counted and rewritten.
//! - Only sources of at least [`MIN_SOURCE_BYTES`]: below that a compile is
//!   cheaper than a file read. A source compiled as a module and as a
//!   script are two keys ([`Compiled`]): V8's caches of the two differ.
//! - Made on the isolate's thread once the module's top-level code has run
//!   (so the functions it ran are compiled and in the cache), at most once
//!   per key per process; written by one writer thread, off the request
//!   path (the set of keys made is bounded: [`CLAIMED_KEYS`]). A full queue
//!   (8 caches, 64 MiB) drops the write, and the next isolate to load the
//!   module makes it again; a failed write is not retried before the
//!   process restarts.
//! - Nothing stays in memory: the bytes read are dropped after the compile,
//!   the bytes made after the write. The folder is bounded
//!   ([`CodeCacheConfig::max_bytes`], oldest files first).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};

use crate::checked_file::{self, Key, Kind};
use crate::observer::{CodeCacheEvent, EngineObserver};

pub(crate) mod owed;

/// What a source is compiled as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compiled {
    /// An ES module.
    Module,
    /// A classic (service-worker) script.
    Script,
}

const KIND: Kind = Kind {
    magic: b"ISOLCODE",
    prefix: "code-",
    what: "code cache",
};

/// Modules smaller than this are compiled without a cache file.
pub const MIN_SOURCE_BYTES: usize = 32 << 10;

/// Writes waiting for the writer thread at most.
const QUEUE: usize = 8;

/// Bytes of caches waiting for the writer thread at most: past it a cache
/// is dropped (the next load makes it again), so a burst of big modules
/// holds no more than this in memory.
const QUEUED_BYTES: usize = 64 << 20;

/// Keys remembered as made (or being made) by this process. Code loaded at
/// run time (Worker Loader bindings) can bring any number of distinct
/// sources; past this many the set is emptied, so a key is made at most once
/// more after that instead of the set growing for the life of the process.
const CLAIMED_KEYS: usize = 65_536;

/// Where code caches go, and how much of them is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeCacheConfig {
    /// The folder (made if missing); shared with other files, of which
    /// only `code-*.bin` are the code cache's.
    pub dir: PathBuf,
    /// At most this many bytes of code cache files; the oldest go first.
    pub max_bytes: u64,
}

impl CodeCacheConfig {
    /// `dir`, holding at most 256 MiB.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            max_bytes: 256 << 20,
        }
    }
}

/// What the code cache did since the engine started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CodeCacheStats {
    /// Compiles V8 made from a cache file it accepted.
    pub consumed: u64,
    /// Cache files V8 refused (another V8, other flags, another source).
    pub rejected: u64,
    /// Cache files that failed the file's own checks (corrupt, truncated,
    /// another key), never shown to V8.
    pub invalid: u64,
    /// Caches made from a compiled module.
    pub produced: u64,
    /// Cache files written.
    pub written: u64,
    /// Writes that failed or found the queue full.
    pub write_failures: u64,
}

/// The engine's code cache: shared by its threads.
pub(crate) struct CodeCache {
    dir: PathBuf,
    /// Keys made (or being made) by this process: each at most once.
    claimed: Mutex<HashSet<Key>>,
    writes: Mutex<mpsc::SyncSender<(Key, Vec<u8>)>>,
    /// Bytes handed to the writer and not yet written.
    queued_bytes: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stats: Counters,
    observer: std::sync::Arc<dyn EngineObserver>,
}

#[derive(Default)]
struct Counters {
    consumed: AtomicU64,
    rejected: AtomicU64,
    invalid: AtomicU64,
    produced: AtomicU64,
    written: AtomicU64,
    write_failures: AtomicU64,
}

/// A cache file read for a module about to be compiled.
pub(crate) struct Lookup {
    pub(crate) key: Key,
    /// The file's checked bytes, if there is one.
    pub(crate) bytes: Option<Vec<u8>>,
}

impl CodeCache {
    /// The cache in `config.dir`, with its writer thread.
    pub(crate) fn start(
        config: &CodeCacheConfig,
        observer: std::sync::Arc<dyn EngineObserver>,
    ) -> std::io::Result<std::sync::Arc<CodeCache>> {
        let (writes, queued) = mpsc::sync_channel::<(Key, Vec<u8>)>(QUEUE);
        let cache = std::sync::Arc::new(CodeCache {
            dir: config.dir.clone(),
            claimed: Mutex::new(HashSet::new()),
            writes: Mutex::new(writes),
            queued_bytes: Default::default(),
            stats: Counters::default(),
            observer,
        });
        let weak = std::sync::Arc::downgrade(&cache);
        let dir = config.dir.clone();
        let max_bytes = config.max_bytes;
        let queued_bytes = cache.queued_bytes.clone();
        std::thread::Builder::new()
            .name("isolane-code-cache".to_owned())
            .spawn(move || {
                // Ends when the cache (its sender) is dropped.
                for (key, bytes) in queued {
                    let result = checked_file::store(&dir, &KIND, &key, &bytes);
                    checked_file::trim(&dir, &KIND, max_bytes);
                    queued_bytes.fetch_sub(bytes.len(), Ordering::Relaxed);
                    let Some(cache) = weak.upgrade() else { break };
                    match result {
                        Ok(()) => {
                            cache.count(&cache.stats.written, CodeCacheEvent::Written);
                            tracing::debug!(bytes = bytes.len(), "code cache written");
                        }
                        Err(error) => {
                            cache.count(&cache.stats.write_failures, CodeCacheEvent::WriteFailed);
                            tracing::warn!(kind = error.kind(), %error, "code cache not written");
                        }
                    }
                }
            })?;
        Ok(cache)
    }

    /// The key and checked cache file for `source` compiled as
    /// `compiled`; `None` for a source too small to cache.
    pub(crate) fn lookup(&self, compiled: Compiled, source: &[u8]) -> Option<Lookup> {
        if source.len() < MIN_SOURCE_BYTES {
            return None;
        }
        let key = key_of(
            v8::V8::get_version(),
            crate::platform::FLAGS,
            v8::script_compiler::cached_data_version_tag(),
            compiled,
            source,
        );
        let bytes = match checked_file::load(&self.dir, &KIND, &key) {
            Ok(bytes) => bytes,
            Err(error) => {
                self.count(&self.stats.invalid, CodeCacheEvent::Invalid);
                tracing::warn!(kind = error.kind(), %error, "code cache file not used; remaking it");
                None
            }
        };
        Some(Lookup { key, bytes })
    }

    /// V8 compiled from the cache file (`rejected`: it refused it).
    pub(crate) fn consumed(&self, key: &Key, rejected: bool) {
        if rejected {
            self.count(&self.stats.rejected, CodeCacheEvent::Rejected);
            tracing::warn!(
                file = %key.file_name(&KIND),
                "V8 rejected a code cache file; remaking it"
            );
        } else {
            self.count(&self.stats.consumed, CodeCacheEvent::Consumed);
        }
    }

    /// Whether this caller makes `key`'s cache: the first to ask in this
    /// process (since the set was last emptied: see [`CLAIMED_KEYS`]).
    pub(crate) fn claim(&self, key: &Key) -> bool {
        match self.claimed.lock() {
            Ok(mut claimed) => {
                if claimed.len() >= CLAIMED_KEYS {
                    claimed.clear();
                }
                claimed.insert(*key)
            }
            Err(_) => false,
        }
    }

    /// Hands a made cache to the writer thread.
    pub(crate) fn produced(&self, key: Key, bytes: Vec<u8>) {
        self.stats.produced.fetch_add(1, Ordering::Relaxed);
        let len = bytes.len();
        let queued = self.queued_bytes.fetch_add(len, Ordering::Relaxed);
        let sent = queued.saturating_add(len) <= QUEUED_BYTES
            && match self.writes.lock() {
                Ok(writes) => writes.try_send((key, bytes)).is_ok(),
                Err(_) => false,
            };
        if !sent {
            self.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            // Another isolate may make it again later.
            if let Ok(mut claimed) = self.claimed.lock() {
                claimed.remove(&key);
            }
            tracing::warn!(
                bytes = len,
                "code cache not written: the writer's queue is full"
            );
        }
        if !sent {
            self.count(&self.stats.write_failures, CodeCacheEvent::WriteFailed);
        }
    }

    fn count(&self, counter: &AtomicU64, event: CodeCacheEvent) {
        counter.fetch_add(1, Ordering::Relaxed);
        self.observer.code_cache(event);
    }

    pub(crate) fn stats(&self) -> CodeCacheStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let stats = &self.stats;
        CodeCacheStats {
            consumed: read(&stats.consumed),
            rejected: read(&stats.rejected),
            invalid: read(&stats.invalid),
            produced: read(&stats.produced),
            written: read(&stats.written),
            write_failures: read(&stats.write_failures),
        }
    }
}

/// The key of a module's cache: everything V8's cache depends on.
fn key_of(
    v8_version: &str,
    flags: &str,
    version_tag: u32,
    compiled: Compiled,
    source: &[u8],
) -> Key {
    Key::of([
        match compiled {
            Compiled::Module => &b"module code"[..],
            Compiled::Script => &b"script code"[..],
        },
        v8_version.as_bytes(),
        flags.as_bytes(),
        &version_tag.to_le_bytes(),
        source,
    ])
}

/// The file name of the cache for `source` compiled as an ES module (tests:
/// to find and spoil it). Call after `Engine::start` (V8's flags are part
/// of the key).
pub fn code_cache_file_name(source: &[u8]) -> String {
    key_of(
        v8::V8::get_version(),
        crate::platform::FLAGS,
        v8::script_compiler::cached_data_version_tag(),
        Compiled::Module,
        source,
    )
    .file_name(&KIND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_claimed_stay_bounded_and_a_key_is_claimed_once_until_then() {
        let dir = tempfile::tempdir().unwrap();
        let observer = std::sync::Arc::new(crate::observer::NoopObserver);
        let cache = CodeCache::start(&CodeCacheConfig::new(dir.path()), observer).unwrap();
        let key = |i: usize| key_of("13.0", "--flag", 7, Compiled::Module, &i.to_le_bytes());
        assert!(cache.claim(&key(0)));
        assert!(!cache.claim(&key(0)), "claimed once");
        for i in 1..CLAIMED_KEYS * 2 {
            cache.claim(&key(i));
            assert!(cache.claimed.lock().unwrap().len() <= CLAIMED_KEYS);
        }
    }

    #[test]
    fn a_burst_past_the_queued_bytes_is_dropped_not_held() {
        let dir = tempfile::tempdir().unwrap();
        let observer = std::sync::Arc::new(crate::observer::NoopObserver);
        let cache = CodeCache::start(&CodeCacheConfig::new(dir.path()), observer).unwrap();
        let key = key_of("13.0", "--flag", 7, Compiled::Module, b"source");
        cache.produced(key, vec![0; QUEUED_BYTES + 1]);
        let stats = cache.stats();
        assert_eq!((stats.produced, stats.write_failures), (1, 1));
        assert_eq!(cache.queued_bytes.load(Ordering::Relaxed), 0);
        assert!(cache.claim(&key), "given up, so made again by the next");
        // One that fits is written.
        cache.produced(key, vec![1; 1000]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while cache.stats().written == 0 {
            assert!(std::time::Instant::now() < deadline, "never written");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            checked_file::load(dir.path(), &KIND, &key).unwrap(),
            Some(vec![1; 1000])
        );
    }

    #[test]
    fn another_source_v8_flag_or_compile_is_another_key() {
        let key = |v8, flags, tag, source: &[u8]| key_of(v8, flags, tag, Compiled::Module, source);
        let base = key("13.0", "--flag", 7, b"export default 1;");
        assert_ne!(base, key("13.0", "--flag", 7, b"export default 2;"));
        assert_ne!(base, key("13.1", "--flag", 7, b"export default 1;"));
        assert_ne!(base, key("13.0", "--other", 7, b"export default 1;"));
        assert_ne!(base, key("13.0", "--flag", 8, b"export default 1;"));
        assert_eq!(base, key("13.0", "--flag", 7, b"export default 1;"));
        let script = key_of("13.0", "--flag", 7, Compiled::Script, b"export default 1;");
        assert_ne!(base, script);
    }
}
