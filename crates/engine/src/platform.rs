//! The V8 platform: initialised exactly once per process.
//!
//! Thread affinity: V8 must be initialised on the main thread before any
//! engine thread is spawned. With memory protection keys, V8 guards its
//! pointer tables with a key whose access lives in the per-thread PKRU
//! register, and a thread inherits that access only when it is created — so
//! only threads descended from the initialising one may run JavaScript.
//! `Engine::start` calls [`init`] before it spawns anything.

use std::sync::Once;

static INIT: Once = Once::new();

/// V8 flags for every isolate of the process (part of the snapshot cache's
/// key: a flag can change what a blob holds).
pub(crate) const FLAGS: &str =
    "--enable-sharedarraybuffer-per-context --no-concurrent-array-buffer-sweeping";

/// Initialises V8 (idempotent). Must run before engine threads exist.
pub fn init() {
    INIT.call_once(|| {
        // Flags are read once, at initialisation (V8 freezes them after), so
        // they are set here, before anything else touches V8.
        // `--enable-sharedarraybuffer-per-context` with no per-context
        // callback: no context gets a `SharedArrayBuffer` global, including
        // the snapshot's and every context deserialised from it (without the
        // flag V8 installs it again on each). Atomics.wait/waitAsync are
        // removed by the runtime's 99_finalize.js and refused by the isolate
        // (`allow_atomics_wait(false)`). V8's stack limit (~1 MiB) fits the
        // engine threads' 8 MiB stacks; code generation from strings is
        // disabled per context.
        // `--no-concurrent-array-buffer-sweeping`: a collection frees the
        // dead ArrayBuffers' memory on the engine thread, and takes them
        // off V8's external-memory figure in the same step. Swept on a
        // background thread, they reached the allocator's `free` (and left
        // the isolate's charge) while that figure still counted them until
        // V8 merged the sweep, so `Memory::measure_external` took them for
        // memory V8 held without the allocator and charged them twice: a
        // Worker that dropped its buffers could end at its limit.
        v8::V8::set_flags_from_string(FLAGS);
        let platform = v8::new_default_platform(0, false).make_shared();
        v8::V8::initialize_platform(platform);
        v8::V8::initialize();
    });
}
