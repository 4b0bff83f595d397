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
//! Memory indices do not change: imported memories come first in the index
//! space, and the defined ones, appended as imports after every other
//! import, keep their order. A module with no memory is left as it is.
//!
//! Refused at load, with the reason: shared memories (no SharedArrayBuffer
//! here, see `platform.rs`), 64-bit memories and custom page sizes (not
//! yet supported by the rewrite).

use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{EntityType, ImportSection, Instruction, MemorySection, SectionId, ValType};
use wasmparser::{Operator, Parser, Payload, TypeRef, Validator};

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

/// A module ready for V8: its rewritten bytes and its memories.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub bytes: Vec<u8>,
    pub memories: Vec<MemoryInfo>,
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
    #[error("could not rewrite the module: {0}")]
    Rewrite(String),
}

/// Validates `bytes` and rewrites them (see the module docs).
pub(crate) fn prepare(bytes: &[u8]) -> Result<Prepared, WasmError> {
    let types = Validator::new().validate_all(bytes)?;
    let layout = Layout::read(bytes, types.as_ref().core_type_count_in_module())?;
    if layout.memories.is_empty() {
        return Ok(Prepared {
            bytes: bytes.to_vec(),
            memories: Vec::new(),
        });
    }
    let mut rewriter = Rewriter {
        layout: &layout,
        types_done: false,
        imports_done: false,
    };
    let mut module = wasm_encoder::Module::new();
    rewriter
        .parse_core_module(&mut module, Parser::new(0), bytes)
        .map_err(|e| WasmError::Rewrite(format!("{e:?}")))?;
    Ok(Prepared {
        bytes: module.finish(),
        memories: layout.memories,
    })
}

/// What the rewrite needs to know of a module.
struct Layout {
    /// Imported functions (their indices do not move).
    imported_functions: u32,
    /// Types the module has (the grow function's type comes next).
    types: u32,
    memories: Vec<MemoryInfo>,
}

impl Layout {
    fn read(bytes: &[u8], types: u32) -> Result<Self, WasmError> {
        let mut layout = Layout {
            imported_functions: 0,
            types,
            memories: Vec::new(),
        };
        for payload in Parser::new(0).parse_all(bytes) {
            match payload? {
                Payload::ImportSection(section) => {
                    for import in section.into_imports() {
                        let import = import?;
                        match import.ty {
                            TypeRef::Func(_) | TypeRef::FuncExact(_) => {
                                layout.imported_functions += 1;
                            }
                            TypeRef::Memory(ty) => layout.add(
                                ty,
                                Some((import.module.to_owned(), import.name.to_owned())),
                            )?,
                            _ => {}
                        }
                    }
                }
                Payload::MemorySection(section) => {
                    for ty in section {
                        layout.add(ty?, None)?;
                    }
                }
                _ => {}
            }
        }
        Ok(layout)
    }

    fn add(
        &mut self,
        ty: wasmparser::MemoryType,
        import: Option<(String, String)>,
    ) -> Result<(), WasmError> {
        let index = self.memories.len();
        if ty.shared {
            return Err(WasmError::SharedMemory { index });
        }
        if ty.memory64 || ty.page_size_log2.is_some() {
            return Err(WasmError::UnsupportedMemory { index });
        }
        self.memories.push(MemoryInfo {
            import,
            initial: ty.initial,
            maximum: ty.maximum,
        });
        Ok(())
    }

    /// The grow functions, one per memory, appended to the imports.
    fn grow_functions(&self) -> u32 {
        u32::try_from(self.memories.len()).unwrap_or(u32::MAX)
    }

    /// The runtime's imports: the defined memories, then the grow functions.
    fn append_imports(&self, imports: &mut ImportSection) {
        for (index, memory) in self.memories.iter().enumerate() {
            if memory.import.is_none() {
                let ty = wasm_encoder::MemoryType {
                    minimum: memory.initial,
                    maximum: memory.maximum,
                    memory64: false,
                    shared: false,
                    page_size_log2: None,
                };
                imports.import(RUNTIME_IMPORTS, &format!("memory{index}"), ty);
            }
        }
        for index in 0..self.memories.len() {
            imports.import(
                RUNTIME_IMPORTS,
                &format!("grow{index}"),
                EntityType::Function(self.types),
            );
        }
    }
}

struct Rewriter<'l> {
    layout: &'l Layout,
    types_done: bool,
    imports_done: bool,
}

type ReencodeResult<T> = Result<T, reencode::Error<std::convert::Infallible>>;

impl Rewriter<'_> {
    fn append_type(&mut self, types: &mut wasm_encoder::TypeSection) {
        types.ty().function([ValType::I32], [ValType::I32]);
        self.types_done = true;
    }
}

impl Reencode for Rewriter<'_> {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> ReencodeResult<u32> {
        Ok(if func < self.layout.imported_functions {
            func
        } else {
            func + self.layout.grow_functions()
        })
    }

    fn instruction<'a>(&mut self, op: Operator<'a>) -> ReencodeResult<Instruction<'a>> {
        match op {
            Operator::MemoryGrow { mem } => {
                Ok(Instruction::Call(self.layout.imported_functions + mem))
            }
            other => reencode::utils::instruction(self, other),
        }
    }

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> ReencodeResult<()> {
        reencode::utils::parse_type_section(self, types, section)?;
        self.append_type(types);
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> ReencodeResult<()> {
        reencode::utils::parse_import_section(self, imports, section)?;
        self.layout.append_imports(imports);
        self.imports_done = true;
        Ok(())
    }

    /// Defined memories became imports: the section is left empty.
    fn parse_memory_section(
        &mut self,
        _memories: &mut MemorySection,
        _section: wasmparser::MemorySectionReader<'_>,
    ) -> ReencodeResult<()> {
        Ok(())
    }

    /// Adds the type and import sections a module without them now needs,
    /// where they belong (before every other section).
    fn intersperse_section_hook(
        &mut self,
        module: &mut wasm_encoder::Module,
        _after: Option<SectionId>,
        before: Option<SectionId>,
    ) -> ReencodeResult<()> {
        if !self.types_done && before != Some(SectionId::Type) {
            let mut types = wasm_encoder::TypeSection::new();
            self.append_type(&mut types);
            module.section(&types);
        }
        if !self.imports_done
            && before != Some(SectionId::Type)
            && before != Some(SectionId::Import)
        {
            let mut imports = ImportSection::new();
            self.layout.append_imports(&mut imports);
            self.imports_done = true;
            module.section(&imports);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
