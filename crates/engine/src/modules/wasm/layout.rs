//! What the rewrite needs to know of a module, read in one pass before it:
//! its memories and tables, whether its code grows tables or makes arrays,
//! and the arrays its constant expressions make at instantiation.

use wasmparser::{
    CompositeInnerType, ConstExpr, ElementItems, Operator, Parser, Payload, StorageType, TableInit,
    TypeRef, ValType, types::TypesRef,
};

use super::{MemoryInfo, TableInfo, WasmError};

/// The element sizes an array import exists for (`isolane:memory`
/// `array<bytes>`): every storage type's size in this V8 (no pointer
/// compression, so a reference is 8 bytes).
pub(super) const ARRAY_ELEMENT_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

/// A module's layout (see the module docs).
pub(super) struct Layout {
    /// Imported functions (their indices do not move).
    pub imported_functions: u32,
    /// Types the module has (the runtime's function type comes next).
    pub types: u32,
    pub memories: Vec<MemoryInfo>,
    pub tables: Vec<TableInfo>,
    /// Some function runs `table.grow`: every table gets its check import.
    pub grows_tables: bool,
    /// Some function runs `array.new` or `array.new_default`.
    pub makes_arrays: bool,
    /// Bytes of the arrays constant expressions make at instantiation.
    pub const_array_bytes: u64,
    /// Each defined function's parameter count, in order (where a
    /// function's scratch local goes).
    pub params: Vec<u32>,
}

impl Layout {
    pub(super) fn read(bytes: &[u8], types: TypesRef<'_>) -> Result<Self, WasmError> {
        let mut layout = Layout {
            imported_functions: 0,
            types: types.core_type_count_in_module(),
            memories: Vec::new(),
            tables: Vec::new(),
            grows_tables: false,
            makes_arrays: false,
            const_array_bytes: 0,
            params: Vec::new(),
        };
        for payload in Parser::new(0).parse_all(bytes) {
            layout.payload(payload?, types)?;
        }
        let defined = types
            .function_count()
            .saturating_sub(layout.imported_functions);
        layout.params = (0..defined)
            .map(|i| {
                let ty = types.core_function_at(layout.imported_functions + i);
                u32::try_from(types[ty].unwrap_func().params().len()).unwrap_or(u32::MAX)
            })
            .collect();
        Ok(layout)
    }

    fn payload(&mut self, payload: Payload<'_>, types: TypesRef<'_>) -> Result<(), WasmError> {
        match payload {
            Payload::ImportSection(section) => {
                for import in section.into_imports() {
                    let import = import?;
                    let name = Some((import.module.to_owned(), import.name.to_owned()));
                    match import.ty {
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => self.imported_functions += 1,
                        TypeRef::Memory(ty) => self.add_memory(ty, name)?,
                        TypeRef::Table(ty) => self.add_table(ty, name)?,
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(section) => {
                for ty in section {
                    self.add_memory(ty?, None)?;
                }
            }
            Payload::TableSection(section) => {
                for table in section {
                    let table = table?;
                    self.add_table(table.ty, None)?;
                    if let TableInit::Expr(expr) = table.init {
                        self.const_expr(&expr, types)?;
                    }
                }
            }
            Payload::GlobalSection(section) => {
                for global in section {
                    self.const_expr(&global?.init_expr, types)?;
                }
            }
            Payload::ElementSection(section) => {
                for element in section {
                    if let ElementItems::Expressions(_, exprs) = element?.items {
                        for expr in exprs {
                            self.const_expr(&expr?, types)?;
                        }
                    }
                }
            }
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader()?;
                while !ops.eof() {
                    match ops.read()? {
                        Operator::TableGrow { .. } => self.grows_tables = true,
                        Operator::ArrayNew { .. } | Operator::ArrayNewDefault { .. } => {
                            self.makes_arrays = true;
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn add_memory(
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

    fn add_table(
        &mut self,
        ty: wasmparser::TableType,
        import: Option<(String, String)>,
    ) -> Result<(), WasmError> {
        let index = self.tables.len();
        if ty.table64 || ty.shared {
            return Err(WasmError::UnsupportedTable { index });
        }
        self.tables.push(TableInfo {
            import,
            initial: ty.initial,
            maximum: ty.maximum,
        });
        Ok(())
    }

    /// Adds the arrays `expr` makes (when the module is instantiated) to
    /// `const_array_bytes`. Their length must be a constant right before
    /// them: one read from an imported global would be the embedder's to
    /// choose at instantiation, unchecked.
    fn const_expr(&mut self, expr: &ConstExpr<'_>, types: TypesRef<'_>) -> Result<(), WasmError> {
        let mut ops = expr.get_operators_reader();
        let mut last_constant = None;
        while !ops.eof() {
            let op = ops.read()?;
            let array_type = match op {
                Operator::ArrayNew { array_type_index }
                | Operator::ArrayNewDefault { array_type_index } => array_type_index,
                Operator::I32Const { value } => {
                    last_constant = Some(u64::from(value.cast_unsigned()));
                    continue;
                }
                _ => {
                    last_constant = None;
                    continue;
                }
            };
            let length = last_constant.take().ok_or(WasmError::ComputedArrayLength)?;
            let element = element_size(types, array_type);
            self.const_array_bytes = self
                .const_array_bytes
                .saturating_add(length.saturating_mul(u64::from(element)));
        }
        Ok(())
    }

    /// The function imports the rewrite adds, in order: memory grows, table
    /// grows, array checks.
    pub(super) fn added_functions(&self) -> u32 {
        let memories = self.memories.len();
        let tables = if self.grows_tables {
            self.tables.len()
        } else {
            0
        };
        let arrays = if self.makes_arrays {
            ARRAY_ELEMENT_SIZES.len()
        } else {
            0
        };
        u32::try_from(memories + tables + arrays).unwrap_or(u32::MAX)
    }

    /// The index of table `table`'s grow check.
    pub(super) fn table_check(&self, table: u32) -> u32 {
        self.imported_functions + u32::try_from(self.memories.len()).unwrap_or(0) + table
    }

    /// The index of the array check for elements of `bytes`.
    pub(super) fn array_check(&self, bytes: u32) -> u32 {
        let tables = if self.grows_tables {
            self.tables.len()
        } else {
            0
        };
        let slot = ARRAY_ELEMENT_SIZES
            .iter()
            .position(|&size| size == bytes)
            .unwrap_or(ARRAY_ELEMENT_SIZES.len() - 1);
        self.imported_functions + u32::try_from(self.memories.len() + tables + slot).unwrap_or(0)
    }

    /// Whether the module is loaded as it is.
    pub(super) fn unchanged(&self) -> bool {
        self.memories.is_empty() && !self.grows_tables && !self.makes_arrays
    }
}

/// Bytes per element of array type `index`.
pub(super) fn element_size(types: TypesRef<'_>, index: u32) -> u32 {
    let id = types.core_type_at_in_module(index);
    let CompositeInnerType::Array(array) = &types[id].composite_type.inner else {
        return 8;
    };
    match array.0.element_type {
        StorageType::I8 => 1,
        StorageType::I16 => 2,
        StorageType::Val(ValType::I32 | ValType::F32) => 4,
        StorageType::Val(ValType::V128) => 16,
        StorageType::Val(_) => 8,
    }
}
