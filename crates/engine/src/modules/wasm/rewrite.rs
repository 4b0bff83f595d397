//! The rewrite itself (wasm-encoder's reencoder): the runtime's imports
//! appended, defined memories made imports, and a call to the runtime
//! before each `memory.grow`, `table.grow`, and each `array.new` that could
//! be large (see the parent module's docs).

use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{
    BlockType, EntityType, ImportSection, Instruction, MemorySection, SectionId, ValType,
};
use wasmparser::types::TypesRef;
use wasmparser::{FunctionBody, Operator};

use super::RUNTIME_IMPORTS;
use super::layout::{ARRAY_ELEMENT_SIZES, Layout, element_size};

/// Arrays of up to this many bytes are made without asking the runtime:
/// V8's heap limit bounds them (it stops the loop that makes many of them),
/// and a call per small array would slow GC-language code. Larger ones, which
/// V8 makes and fills in one step it cannot interrupt, are checked first.
const ARRAY_CHECKED_BYTES: u32 = 1 << 20;

pub(super) struct Rewriter<'l> {
    pub layout: &'l Layout,
    pub types: TypesRef<'l>,
    pub types_done: bool,
    pub imports_done: bool,
    /// Defined functions rewritten so far (the next one's index).
    pub functions_done: usize,
}

type ReencodeResult<T> = Result<T, reencode::Error<std::convert::Infallible>>;

impl Rewriter<'_> {
    fn append_type(&mut self, types: &mut wasm_encoder::TypeSection) {
        types.ty().function([ValType::I32], [ValType::I32]);
        self.types_done = true;
    }

    /// The runtime's imports: the defined memories, then the memories'
    /// grows, the tables' grow checks and the array checks.
    fn append_imports(&self, imports: &mut ImportSection) {
        let layout = self.layout;
        for (index, memory) in layout.memories.iter().enumerate() {
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
        let check = EntityType::Function(layout.types);
        for index in 0..layout.memories.len() {
            imports.import(RUNTIME_IMPORTS, &format!("grow{index}"), check);
        }
        if layout.grows_tables {
            for index in 0..layout.tables.len() {
                imports.import(RUNTIME_IMPORTS, &format!("table{index}"), check);
            }
        }
        if layout.makes_arrays {
            for bytes in ARRAY_ELEMENT_SIZES {
                imports.import(RUNTIME_IMPORTS, &format!("array{bytes}"), check);
            }
        }
    }

    /// Before `array.new`/`array.new_default` of `array_type`, whose length
    /// is on top of the stack: when it is more than [`ARRAY_CHECKED_BYTES`],
    /// the length goes through the runtime's check (which answers 0 when
    /// the array would not fit, so nothing large is made while the isolate
    /// stops).
    fn check_array(&self, f: &mut wasm_encoder::Function, scratch: u32, array_type: u32) {
        let bytes = element_size(self.types, array_type);
        let most = i32::try_from(ARRAY_CHECKED_BYTES / bytes).unwrap_or(i32::MAX);
        f.instruction(&Instruction::LocalTee(scratch));
        f.instruction(&Instruction::I32Const(most));
        f.instruction(&Instruction::I32GtU);
        f.instruction(&Instruction::If(BlockType::Result(ValType::I32)));
        f.instruction(&Instruction::LocalGet(scratch));
        f.instruction(&Instruction::Call(self.layout.array_check(bytes)));
        f.instruction(&Instruction::Else);
        f.instruction(&Instruction::LocalGet(scratch));
        f.instruction(&Instruction::End);
    }
}

impl Reencode for Rewriter<'_> {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> ReencodeResult<u32> {
        Ok(if func < self.layout.imported_functions {
            func
        } else {
            func + self.layout.added_functions()
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

    /// A function body, with a scratch `i32` local (the array length being
    /// checked) when the module makes arrays, and the checks before
    /// `table.grow` and `array.new`.
    fn parse_function_body(
        &mut self,
        code: &mut wasm_encoder::CodeSection,
        func: FunctionBody<'_>,
    ) -> ReencodeResult<()> {
        let mut locals = Vec::new();
        let mut scratch = self
            .layout
            .params
            .get(self.functions_done)
            .copied()
            .unwrap_or(0);
        for pair in func.get_locals_reader()? {
            let (count, ty) = pair?;
            scratch = scratch.saturating_add(count);
            locals.push((count, self.val_type(ty)?));
        }
        self.functions_done += 1;
        if self.layout.makes_arrays {
            locals.push((1, ValType::I32));
        }
        let mut f = wasm_encoder::Function::new(locals);
        let mut reader = func.get_operators_reader()?;
        while !reader.eof() {
            let op = reader.read()?;
            match op {
                Operator::TableGrow { table } => {
                    f.instruction(&Instruction::Call(self.layout.table_check(table)));
                }
                Operator::ArrayNew { array_type_index }
                | Operator::ArrayNewDefault { array_type_index } => {
                    self.check_array(&mut f, scratch, array_type_index);
                }
                _ => {}
            }
            f.instruction(&self.instruction(op)?);
        }
        code.function(&f);
        Ok(())
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
        self.append_imports(imports);
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
            self.append_imports(&mut imports);
            self.imports_done = true;
            module.section(&imports);
        }
        Ok(())
    }
}
