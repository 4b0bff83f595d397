//! What the operator checks in a pulled bundle before a revision of it is
//! written: each CompiledWasm module validates (wasmparser, the validator
//! the engine loads modules with, default features) and declares no shared
//! or 64-bit memory or table (the engine refuses those: no
//! SharedArrayBuffer, and its rewrite handles 32-bit ones only). The engine
//! checks again at load; this check is what lets the Worker report the
//! reason before any node tries.

use isolane_worker::{ModuleKind, Modules};
use wasmparser::{Parser, Payload, Validator};

use crate::Error;

/// Refuses a bundle with a Wasm module the engine would refuse.
pub fn check_wasm(reference: &str, modules: &Modules) -> Result<(), Error> {
    for module in modules.iter() {
        if module.kind != ModuleKind::CompiledWasm {
            continue;
        }
        let refuse = |why: String| {
            Error::malformed(
                reference,
                format!("WebAssembly module {:?}: {why}", module.name),
            )
        };
        Validator::new()
            .validate_all(&module.content)
            .map_err(|error| refuse(error.to_string()))?;
        for payload in Parser::new(0).parse_all(&module.content) {
            let shared = match payload.map_err(|error| refuse(error.to_string()))? {
                Payload::MemorySection(memories) => memories
                    .into_iter()
                    .any(|memory| memory.is_ok_and(|memory| memory.shared || memory.memory64)),
                Payload::TableSection(tables) => tables
                    .into_iter()
                    .any(|table| table.is_ok_and(|table| table.ty.shared || table.ty.table64)),
                Payload::ImportSection(imports) => imports.into_imports().any(|import| {
                    import.is_ok_and(|import| match import.ty {
                        wasmparser::TypeRef::Memory(memory) => memory.shared || memory.memory64,
                        wasmparser::TypeRef::Table(table) => table.shared || table.table64,
                        _ => false,
                    })
                }),
                _ => false,
            };
            if shared {
                return Err(refuse(
                    "a shared or 64-bit memory or table is refused".to_owned(),
                ));
            }
        }
    }
    Ok(())
}
