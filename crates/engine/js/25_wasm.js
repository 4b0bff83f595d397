// 25_wasm.js — WebAssembly, with its memories held to the worker's memory
// limit (docs/engine.md, "WebAssembly").
//
// - Wasm is compiled only from the bundle's CompiledWasm modules, by the
//   engine (src/modules.rs); compiling from bytes at run time
//   (`WebAssembly.compile`, `new WebAssembly.Module(bytes)`,
//   `WebAssembly.instantiate(bytes)`) is refused by V8 on the engine's word
//   (isolate.rs), as on Cloudflare.
// - The engine rewrites each module (src/modules/wasm.rs) so that the
//   memories it defines are imported from `isolane:memory` and each
//   `memory.grow` calls `isolane:memory` `grow<i>`: `wasmModule` below
//   records, per module, what to give it. `Instance` and `instantiate`
//   supply those imports; every memory is made by `checkedMemory` and
//   grows only through `checkedGrow`, which asks the host first
//   (`host.memoryCheck`: V8's own figure of what the isolate holds, Wasm
//   memories included, plus the growth must fit the limit, or the request
//   ends `memory_limit` before the memory grows).
// - Tables and WasmGC arrays are V8 heap objects that Wasm makes in one
//   step V8 does not interrupt (`table.grow`, a table declared large, a
//   huge `array.new`), many of them in a straight line of code: the
//   rewrite makes each `table.grow` call `isolane:memory` `table<i>` and
//   each large `array.new` call `array<bytes>` first, and the runtime asks
//   `host.memoryCheckNow` (the heap measured now) before it lets them happen;
//   an instance's defined tables and the arrays of its constant
//   expressions are checked before it is made.
// - A memory's maximum is capped at the limit, so that V8 reserves no more
//   address space than the limit for it.
// - Shared and 64-bit memories are refused; `toResizableBuffer` (whose
//   `resize` would grow a memory behind the check) is removed.
'use strict';

{
  const PAGE = 65536;
  const MAX_PAGES = 65536;
  const { apply, construct, setPrototypeOf, ownKeys } = Reflect;
  const { trunc, min, max } = Math;
  const RUNTIME = 'isolane:memory';

  // V8's largest table, in entries (`--wasm-max-table-size`'s default).
  const MAX_TABLE = 10000000;
  // What V8 takes per table entry while a funcref table grows, at most: the
  // entries (8 bytes, no pointer compression here) and their dispatch
  // entries, the new arrays made before the old ones are collected.
  const TABLE_ENTRY = 64;
  // Work below this many bytes is left to V8's heap limit (see
  // src/modules/wasm/rewrite.rs, which checks arrays from the same size).
  const CHECKED = 1 << 20;
  // A delta `table.grow` refuses whatever the table (past every maximum).
  const REFUSED_DELTA = -1;

  // Module → what the engine described when it compiled a bundle module
  // (src/modules/wasm_load.rs): {memories, tables, growsTables,
  // makesArrays, constArrayBytes}, each memory and table [importModule,
  // importName, initial, maximum], the import undefined for one the module
  // defines.
  const described = new WeakMap();
  internal.wasmModule = function wasmModule(module, description) {
    described.set(module, description);
  };

  function toPages(value, what) {
    const number = trunc(+value);
    if (!(number >= 0 && number <= MAX_PAGES)) {
      throw new TypeError(`WebAssembly.Memory(): Property '${what}': value ${value} is not a valid number of pages`);
    }
    return number;
  }

  let installed = false;

  // V8 adds `WebAssembly` to each context made from the snapshot: the
  // engine calls this once per new context, before any worker code.
  internal.installWebAssembly = function installWebAssembly() {
    const wasm = globalThis.WebAssembly;
    if (installed || !internal.isObject(wasm)) return;
    installed = true;
    const NativeMemory = wasm.Memory;
    const NativeInstance = wasm.Instance;
    const NativeModule = wasm.Module;
    const nativeGrow = NativeMemory.prototype.grow;
    const nativeInstantiate = wasm.instantiate;
    const nativeImports = NativeModule.imports;
    const tableLength = Object.getOwnPropertyDescriptor(wasm.Table.prototype, 'length').get;

    // A new memory of `initial` pages, its maximum capped at the limit.
    function checkedMemory(initial, maximum) {
      if (initial > 0) host.memoryCheck(initial * PAGE);
      const limitPages = trunc(host.memoryLimit() / PAGE);
      const cap = min(maximum === undefined ? MAX_PAGES : maximum, max(initial, limitPages));
      return new NativeMemory({ initial, maximum: cap });
    }

    // Grows `memory` by `pages` once the host agreed (past the limit the
    // request ends there); V8's own refusal (past the maximum) throws.
    function checkedGrow(memory, pages) {
      if (pages > 0) host.memoryCheck(pages * PAGE);
      return apply(nativeGrow, memory, [pages]);
    }

    const MemoryConstructor = internal.proxy(NativeMemory, {
      construct(target, args, newTarget) {
        const descriptor = args[0];
        if (!internal.isObject(descriptor)) {
          throw new TypeError('WebAssembly.Memory(): Argument 0 must be a memory descriptor');
        }
        const address = descriptor.address;
        if (address !== undefined && `${address}` !== 'i32') {
          throw new TypeError('WebAssembly.Memory(): 64-bit memories are not supported on Isolane');
        }
        const initialValue = descriptor.initial;
        const initial = toPages(initialValue === undefined ? descriptor.minimum : initialValue, 'initial');
        const maximumValue = descriptor.maximum;
        const maximum = maximumValue === undefined ? undefined : toPages(maximumValue, 'maximum');
        if (descriptor.shared) {
          throw new TypeError('WebAssembly.Memory(): shared memories are not available on Isolane');
        }
        if (maximum !== undefined && maximum < initial) {
          throw new RangeError('WebAssembly.Memory(): Property \'maximum\': value is below \'initial\'');
        }
        const memory = checkedMemory(initial, maximum);
        const proto = newTarget === MemoryConstructor ? undefined : newTarget.prototype;
        if (internal.isObject(proto)) setPrototypeOf(memory, proto);
        return memory;
      },
    });

    // Tables made and grown through the JS API are checked like those of
    // Wasm code: 40 `new WebAssembly.Table({ initial: 1e7 })` in a row took
    // the process 230 MiB past a 64 MiB limit before V8 stopped them.
    // The descriptor is read once, and what was checked is what is made.
    const NativeTable = wasm.Table;
    const nativeTableGrow = NativeTable.prototype.grow;
    function tableEntries(value) {
      const number = +value;
      return number >= 0 && number <= MAX_TABLE ? trunc(number) : 0;
    }
    const TableConstructor = internal.proxy(NativeTable, {
      construct(target, args, newTarget) {
        const descriptor = args[0];
        if (!internal.isObject(descriptor)) return construct(target, args, newTarget === TableConstructor ? target : newTarget);
        const read = { __proto__: null };
        for (const key of ['element', 'initial', 'minimum', 'maximum', 'address']) {
          const value = descriptor[key];
          if (value !== undefined) read[key] = value;
        }
        const initial = tableEntries(read.initial === undefined ? read.minimum : read.initial);
        if (!fitsNow(initial * TABLE_ENTRY)) {
          throw new RangeError('WebAssembly.Table(): memory limit exceeded');
        }
        const rest = args.length > 1 ? [args[1]] : [];
        const table = construct(target, [read, ...rest], target);
        const proto = newTarget === TableConstructor ? undefined : newTarget.prototype;
        if (internal.isObject(proto)) setPrototypeOf(table, proto);
        return table;
      },
    });
    const tableProto = NativeTable.prototype;
    Object.defineProperty(tableProto, 'grow', {
      value: {
        grow(delta, ...value) {
          const entries = tableEntries(delta);
          const next = apply(tableLength, this, []) + entries;
          if (next <= MAX_TABLE && !fitsNow(next * TABLE_ENTRY)) {
            throw new RangeError('WebAssembly.Table.grow(): memory limit exceeded');
          }
          return apply(nativeTableGrow, this, [delta, ...value]);
        },
      }.grow,
      writable: true, enumerable: false, configurable: true,
    });

    const memoryProto = NativeMemory.prototype;
    Object.defineProperty(memoryProto, 'grow', {
      value: {
        grow(delta) {
          const pages = toPages(delta, 'delta');
          return checkedGrow(this, pages);
        },
      }.grow,
      writable: true, enumerable: false, configurable: true,
    });
    delete memoryProto.toResizableBuffer;

    // Asks the host whether `bytes` more fit, the heap measured now; past
    // the limit the request ends there (the isolate is being terminated).
    function fitsNow(bytes) {
      if (bytes <= CHECKED) return true;
      try {
        host.memoryCheckNow(bytes);
        return true;
      } catch (error) {
        if (error instanceof RangeError) return false;
        throw error;
      }
    }

    // `table.grow` of table `[importModule, importName, initial, maximum]`
    // in Wasm: answers the delta to grow by, or one V8 refuses. The table's
    // size is read from the worker's table when it is imported, and
    // counted from its declared size when the module defines it.
    function tableGrower(table, imports) {
      const [importModule, importName, initial, maximum] = table;
      let own;
      if (importModule !== undefined) {
        const namespace = imports === undefined ? undefined : imports[importModule];
        own = internal.isObject(namespace) ? namespace[importName] : undefined;
      }
      let size = initial;
      const most = min(maximum === undefined ? MAX_TABLE : maximum, MAX_TABLE);
      return (delta) => {
        const entries = delta >>> 0;
        if (own !== undefined) {
          try { size = apply(tableLength, own, []); } catch { /* V8 checks it */ }
        }
        const next = size + entries;
        // Nothing to grow, or V8 refuses it itself (-1, nothing made).
        if (entries === 0 || next > most) return delta;
        if (!fitsNow(next * TABLE_ENTRY)) return REFUSED_DELTA;
        size = next;
        return delta;
      };
    }

    // `array.new` of `length` elements of `bytes` each, over CHECKED: the
    // length, or 0 when it does not fit (the request is ending).
    function arrayChecker(bytes) {
      return (length) => (fitsNow((length >>> 0) * bytes) ? length : 0);
    }

    // `memory.grow` of `memory` in Wasm: the old size in pages, or -1.
    function memoryGrower(memory) {
      return (delta) => {
        const pages = delta >>> 0;
        if (pages > MAX_PAGES) return -1;
        try {
          return checkedGrow(memory, pages);
        } catch (error) {
          if (error instanceof RangeError) return -1;
          throw error;
        }
      };
    }

    // What an instance of `module` makes before any of its code runs:
    // defined tables and the arrays of constant expressions.
    function upfrontBytes(description) {
      let bytes = description.constArrayBytes;
      for (const [importModule, , initial] of description.tables) {
        if (importModule === undefined) bytes += initial * TABLE_ENTRY;
      }
      return bytes;
    }

    // The worker's imports plus the runtime's for `module`.
    function withRuntimeImports(module, imports) {
      const description = described.get(module);
      if (description === undefined) {
        throw new TypeError('WebAssembly.Instance(): only modules of the worker\'s bundle can be instantiated');
      }
      if (!fitsNow(upfrontBytes(description))) {
        throw new RangeError('WebAssembly.Instance(): memory limit exceeded');
      }
      const { memories, tables, growsTables, makesArrays } = description;
      const rewritten = memories.length > 0 || growsTables || makesArrays;
      if (!rewritten || (imports !== undefined && !internal.isObject(imports))) return imports;
      const own = { __proto__: null };
      for (let i = 0; i < memories.length; i++) {
        const [importModule, importName, initial, maximum] = memories[i];
        let memory;
        if (importModule === undefined) {
          memory = checkedMemory(initial, maximum);
          own[`memory${i}`] = memory;
        } else {
          const namespace = imports === undefined ? undefined : imports[importModule];
          memory = internal.isObject(namespace) ? namespace[importName] : undefined;
        }
        own[`grow${i}`] = memoryGrower(memory);
      }
      if (growsTables) {
        for (let i = 0; i < tables.length; i++) own[`table${i}`] = tableGrower(tables[i], imports);
      }
      if (makesArrays) {
        for (const bytes of [1, 2, 4, 8, 16]) own[`array${bytes}`] = arrayChecker(bytes);
      }
      const merged = { __proto__: null };
      if (imports !== undefined) {
        for (const key of ownKeys(imports)) merged[key] = imports[key];
      }
      merged[RUNTIME] = own;
      return merged;
    }

    const InstanceConstructor = internal.proxy(NativeInstance, {
      construct(target, args, newTarget) {
        const module = args[0];
        const imports = withRuntimeImports(module, args[1]);
        return construct(target, [module, imports], newTarget === InstanceConstructor ? target : newTarget);
      },
    });

    function isModule(value) {
      return internal.isObject(value) && described.has(value);
    }

    const instantiate = {
      instantiate(source, imports) {
        // From bytes: V8 refuses (code generation is the engine's alone).
        if (!isModule(source)) return apply(nativeInstantiate, wasm, [source, imports]);
        try {
          return Promise.resolve(new InstanceConstructor(source, imports));
        } catch (error) {
          return Promise.reject(error);
        }
      },
    }.instantiate;

    const imports = {
      imports(module) {
        const list = apply(nativeImports, NativeModule, [module]);
        return list.filter((entry) => entry.module !== RUNTIME);
      },
    }.imports;

    const define = (target, name, value) => Object.defineProperty(target, name, {
      value, writable: true, enumerable: false, configurable: true,
    });
    define(wasm, 'Memory', MemoryConstructor);
    define(wasm, 'Table', TableConstructor);
    define(tableProto, 'constructor', TableConstructor);
    define(memoryProto, 'constructor', MemoryConstructor);
    define(wasm, 'Instance', InstanceConstructor);
    define(NativeInstance.prototype, 'constructor', InstanceConstructor);
    define(wasm, 'instantiate', instantiate);
    define(NativeModule, 'imports', imports);
  };
}
