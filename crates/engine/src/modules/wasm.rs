//! A bundle's WebAssembly, made to grow only through the runtime.
//!
//! V8 grows a Wasm memory from Wasm code (`memory.grow`) without calling
//! the engine's allocator or any hook, so its pages would escape the
//! worker's memory limit. Before V8 sees a module, [`prepare`] validates it
//! (wasmparser) and rewrites it (wasm-encoder's reencoder):
//! - every memory the module defines becomes an import from
//!   `isolane:memory` (`memory<i>`), so the runtime makes it, through the
//!   same checked path as `new WebAssembly.Memory` (js/25_wasm.js);
//! - every `memory.grow` becomes a call to an imported function
//!   (`isolane:memory` `grow<i>`, one per memory) that checks the worker's
//!   budget before it grows the memory. Function indices shift by the
//!   number of these imports.
//!
//! - every `table.grow` first calls `isolane:memory` `table<i>` with its
//!   delta, which answers the delta, or -1 (past any maximum, so V8 grows
//!   nothing) when the table's new size would not fit the worker's budget;
//! - every `array.new`/`array.new_default` (WasmGC) of more than 1 MiB
//!   first calls `isolane:memory` `array<bytes>` with its length, which
//!   answers the length, or 0 when the array would not fit. V8 makes and
//!   fills such an array in one step it does not interrupt, so it must be
//!   refused before, not stopped after (a 1 GiB array under a 64 MiB
//!   limit took the thread for seconds).
//!
//! What instantiation makes before any code runs, the defined tables'
//! initial entries and the arrays of constant expressions (globals, table
//! initializers, element segments), is described ([`Prepared`]) so that
//! the runtime checks it before it instantiates.
//!
//! Memory indices do not change: imported memories come first in the index
//! space, and the defined ones, appended as imports after every other
//! import, keep their order. A module that has no memory, grows no table
//! and makes no array in its code is left as it is.
//!
//! Refused at load, with the reason: shared memories (no SharedArrayBuffer
//! here, see `platform.rs`), 64-bit memories and custom page sizes, 64-bit
//! or shared tables (not yet supported by the rewrite), and a constant
//! expression that makes an array of a computed length.

use wasm_encoder::reencode::Reencode;
use wasmparser::{Parser, Validator};

mod layout;
mod rewrite;

use layout::Layout;
use rewrite::Rewriter;

/// The import module the runtime answers for.
pub(crate) const RUNTIME_IMPORTS: &str = "isolane:memory";

/// One memory of a prepared module, in index order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryInfo {
    /// The user's import (`module`, `name`), or `None` for a memory the
    /// module defines (the runtime makes it).
    pub import: Option<(String, String)>,
    pub initial: u64,
    pub maximum: Option<u64>,
}

/// One table of a prepared module, in index order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableInfo {
    /// The user's import (`module`, `name`), or `None` for a table the
    /// module defines (V8 makes it at instantiation).
    pub import: Option<(String, String)>,
    pub initial: u64,
    pub maximum: Option<u64>,
}

/// A module ready for V8: its rewritten bytes and what the runtime must
/// give it and check when it is instantiated.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub bytes: Vec<u8>,
    pub memories: Vec<MemoryInfo>,
    pub tables: Vec<TableInfo>,
    /// Its code grows tables: it imports `table<i>` for every table.
    pub grows_tables: bool,
    /// Its code makes arrays: it imports `array<bytes>`.
    pub makes_arrays: bool,
    /// Bytes of the arrays its constant expressions make at instantiation.
    pub const_array_bytes: u64,
}

/// Why a Wasm module of the bundle cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WasmError {
    #[error("not valid WebAssembly: {0}")]
    Invalid(#[from] wasmparser::BinaryReaderError),
    #[error("memory {index} is shared; shared memories are refused")]
    SharedMemory { index: usize },
    #[error("memory {index} is 64-bit or has a custom page size, which is not supported")]
    UnsupportedMemory { index: usize },
    #[error("table {index} is 64-bit or shared, which is not supported")]
    UnsupportedTable { index: usize },
    #[error(
        "a constant expression makes an array whose length is computed; only a constant length is supported"
    )]
    ComputedArrayLength,
    #[error("could not rewrite the module: {0}")]
    Rewrite(String),
}

/// Validates `bytes` and rewrites them (see the module docs).
pub(crate) fn prepare(bytes: &[u8]) -> Result<Prepared, WasmError> {
    let types = Validator::new().validate_all(bytes)?;
    let layout = Layout::read(bytes, types.as_ref())?;
    let bytes = if layout.unchanged() {
        bytes.to_vec()
    } else {
        let mut rewriter = Rewriter {
            layout: &layout,
            types: types.as_ref(),
            types_done: false,
            imports_done: false,
            functions_done: 0,
        };
        let mut module = wasm_encoder::Module::new();
        rewriter
            .parse_core_module(&mut module, Parser::new(0), bytes)
            .map_err(|e| WasmError::Rewrite(format!("{e:?}")))?;
        module.finish()
    };
    Ok(Prepared {
        bytes,
        memories: layout.memories,
        tables: layout.tables,
        grows_tables: layout.grows_tables,
        makes_arrays: layout.makes_arrays,
        const_array_bytes: layout.const_array_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmparser::{Operator, Payload, TypeRef};

    fn wasm(text: &str) -> Vec<u8> {
        wat::parse_str(text).expect("valid wat")
    }

    #[test]
    fn defined_memories_become_imports_and_grows_become_calls() {
        let bytes = wasm(
            r#"(module
                (import "env" "log" (func $log (param i32)))
                (memory (export "memory") 1 10)
                (func $grow (export "grow") (param i32) (result i32)
                    local.get 0
                    memory.grow)
                (func (export "twice") (param i32) (result i32)
                    local.get 0
                    call $grow
                    drop
                    local.get 0
                    call $grow)
                (data (i32.const 0) "hi"))"#,
        );
        let prepared = prepare(&bytes).expect("prepares");
        assert_eq!(
            prepared.memories,
            [MemoryInfo {
                import: None,
                initial: 1,
                maximum: Some(10)
            }]
        );
        Validator::new()
            .validate_all(&prepared.bytes)
            .expect("the rewrite is valid");
        let text = wasmprinter(&prepared.bytes);
        assert!(
            text.contains(r#"(import "isolane:memory" "memory0" (memory"#),
            "{text}"
        );
        assert!(
            text.contains(r#"(import "isolane:memory" "grow0" (func"#),
            "{text}"
        );
        assert!(!text.contains("memory.grow"), "{text}");
        // $grow moved from 1 to 2: the call in "twice" follows it.
        assert!(text.contains("call 2"), "{text}");
        assert!(text.contains("call 1"), "{text}");
    }

    #[test]
    fn modules_without_sections_or_memory_still_work() {
        let none = wasm(r#"(module (func (export "f") (result i32) i32.const 42))"#);
        assert_eq!(prepare(&none).expect("prepares").bytes, none);
        // A memory and no type or import section of its own.
        let bare = wasm(r#"(module (memory 1))"#);
        let prepared = prepare(&bare).expect("prepares");
        Validator::new()
            .validate_all(&prepared.bytes)
            .expect("the rewrite is valid");
    }

    #[test]
    fn imported_memories_keep_their_names() {
        let bytes = wasm(
            r#"(module (import "env" "memory" (memory 2))
                (func (export "g") (result i32) i32.const 1 memory.grow))"#,
        );
        let prepared = prepare(&bytes).expect("prepares");
        assert_eq!(
            prepared.memories[0].import,
            Some(("env".to_owned(), "memory".to_owned()))
        );
        Validator::new()
            .validate_all(&prepared.bytes)
            .expect("valid");
    }

    #[test]
    fn malformed_and_shared_modules_are_refused() {
        assert!(matches!(
            prepare(b"\0asm\x01\0\0\0garbage"),
            Err(WasmError::Invalid(_))
        ));
        assert!(matches!(prepare(b"not wasm"), Err(WasmError::Invalid(_))));
        let shared = wasm(r#"(module (memory 1 2 shared))"#);
        assert!(matches!(
            prepare(&shared),
            Err(WasmError::SharedMemory { index: 0 })
        ));
        let wide = wasm(r#"(module (memory i64 1))"#);
        assert!(matches!(
            prepare(&wide),
            Err(WasmError::UnsupportedMemory { index: 0 })
        ));
    }

    #[test]
    fn table_grows_and_large_arrays_ask_the_runtime_first() {
        let bytes = wasm(
            r#"(module
                (type $bytes (array (mut i8)))
                (import "env" "log" (func $log (param i32)))
                (table $t 1 funcref)
                (memory 1)
                (func $make (param $n i32) (result i32)
                    (local $keep i32)
                    (drop (table.grow $t (ref.null func) (local.get $n)))
                    (array.len (array.new_default $bytes (local.get $n))))
                (func (export "run") (result i32) (call $make (i32.const 3))))"#,
        );
        let prepared = prepare(&bytes).expect("prepares");
        assert!(prepared.grows_tables && prepared.makes_arrays);
        assert_eq!(prepared.tables.len(), 1);
        Validator::new()
            .validate_all(&prepared.bytes)
            .expect("the rewrite is valid");
        let text = wasmprinter(&prepared.bytes);
        for import in ["memory0", "grow0", "table0", "array1", "array16"] {
            assert!(
                text.contains(&format!(r#"(import "isolane:memory" "{import}""#)),
                "{text}"
            );
        }
        // log (0), memory grow (1), table check (2), arrays (3..8); $make
        // moved from 1 to 8 and "run" calls it there. The table check runs
        // before the grow, the array check (array1, index 3) before the new.
        assert!(text.contains("call 8"), "{text}");
        assert!(text.contains("call 2\ntable.grow"), "{text}");
        assert!(text.contains("call 3\narray.new"), "{text}");
    }

    #[test]
    fn what_instantiation_makes_is_described() {
        let bytes = wasm(
            r#"(module
                (type $a (array (mut i16)))
                (import "env" "t" (table 5 funcref))
                (table 1000 funcref)
                (global (ref $a) (array.new_default $a (i32.const 100)))
                (global (ref $a) (array.new $a (i32.const 7) (i32.const 50))))"#,
        );
        let prepared = prepare(&bytes).expect("prepares");
        assert_eq!(prepared.const_array_bytes, 300);
        assert!(!prepared.grows_tables && !prepared.makes_arrays);
        // Nothing in its code to rewrite: V8 gets the module as it was.
        assert_eq!(prepared.bytes, bytes);
        assert_eq!(
            prepared.tables,
            [
                TableInfo {
                    import: Some(("env".to_owned(), "t".to_owned())),
                    initial: 5,
                    maximum: None
                },
                TableInfo {
                    import: None,
                    initial: 1000,
                    maximum: None
                }
            ]
        );
    }

    #[test]
    fn computed_array_lengths_and_wide_tables_are_refused() {
        let computed = wasm(
            r#"(module
                (type $a (array (mut i8)))
                (import "env" "n" (global $n i32))
                (global (ref $a) (array.new_default $a (global.get $n))))"#,
        );
        assert!(matches!(
            prepare(&computed),
            Err(WasmError::ComputedArrayLength)
        ));
        let wide = wasm(r#"(module (table i64 1 funcref))"#);
        assert!(matches!(
            prepare(&wide),
            Err(WasmError::UnsupportedTable { index: 0 })
        ));
    }

    /// The module as text, for the assertions (the `wat` crate's printer
    /// is not a dependency: a crude listing of imports and calls does).
    fn wasmprinter(bytes: &[u8]) -> String {
        let mut out = String::new();
        for payload in Parser::new(0).parse_all(bytes) {
            match payload.expect("parses") {
                Payload::ImportSection(section) => {
                    for import in section.into_imports() {
                        let import = import.expect("import");
                        let kind = match import.ty {
                            TypeRef::Memory(_) => "memory",
                            TypeRef::Func(_) => "func",
                            _ => "other",
                        };
                        out.push_str(&format!(
                            "(import {:?} {:?} ({kind}\n",
                            import.module, import.name
                        ));
                    }
                }
                Payload::CodeSectionEntry(body) => {
                    let mut ops = body.get_operators_reader().expect("ops");
                    while !ops.eof() {
                        match ops.read().expect("op") {
                            Operator::Call { function_index } => {
                                out.push_str(&format!("call {function_index}\n"));
                            }
                            Operator::MemoryGrow { .. } => out.push_str("memory.grow\n"),
                            Operator::TableGrow { .. } => out.push_str("table.grow\n"),
                            Operator::ArrayNewDefault { .. } => out.push_str("array.new\n"),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }
}
