// 18_structured_clone.js — structuredClone over host.structuredClone (V8's
// ValueSerializer round trip).
'use strict';

// The runtime's own classes keep their state in private fields, which V8's
// serializer cannot see (it would clone them as empty objects). Refuse them
// at the top level, as a browser or workerd does.
function platformName(v) {
  const checks = [
    ['Headers', internal.isHeaders], ['Request', internal.isRequest], ['Response', internal.isResponse],
    ['URL', internal.isURL], ['URLSearchParams', internal.isURLSearchParams],
    ['ReadableStream', internal.isReadableStream], ['WritableStream', internal.isWritableStream],
    ['TransformStream', internal.isTransformStream], ['AbortSignal', internal.isAbortSignal],
    ['Event', internal.isEvent], ['EventTarget', internal.isEventTarget], ['Blob', internal.isBlob],
  ];
  // isBlob is isolane-web's (09_blob.js): absent when the engine runs without it
  for (const [name, check] of checks) if (check !== undefined && check(v)) return name;
  return null;
}

function structuredClone(value, options = undefined) {
  internal.requireArgs(arguments.length, 1, "Failed to execute 'structuredClone'");
  const opts = internal.toDictionary(options, 'StructuredSerializeOptions');
  let transfer = [];
  if (opts.transfer !== undefined) {
    if (!internal.isObject(opts.transfer) || typeof opts.transfer[Symbol.iterator] !== 'function') {
      throw new TypeError("Failed to execute 'structuredClone': The provided value cannot be converted to a sequence.");
    }
    transfer = [...opts.transfer];
    for (const t of transfer) {
      if (!(t instanceof internal.NativeArrayBuffer)) {
        throw new internal.DOMException('Value not transferable', 'DataCloneError');
      }
      if (t.detached === true) {
        throw new internal.DOMException('An ArrayBuffer is detached and could not be cloned.', 'DataCloneError');
      }
    }
    if (new Set(transfer).size !== transfer.length) {
      throw new internal.DOMException('ArrayBuffer at index 1 is a duplicate of an earlier ArrayBuffer.', 'DataCloneError');
    }
  }
  if (internal.isObject(value)) {
    const name = platformName(value);
    if (name !== null) throw new internal.DOMException(`${name} object could not be cloned.`, 'DataCloneError');
  }
  // Throws a DOMException named DataCloneError for what V8 cannot clone.
  const result = host.structuredClone(value);
  // A resizable buffer in the copy reserved address space of its own.
  internal.reserveCloned(result);
  // the copy is taken; detach the transferred buffers as a transfer would
  for (const t of transfer) if (typeof t.transfer === 'function') t.transfer();
  return result;
}

internal.structuredClone = structuredClone;
internal.defineGlobal('structuredClone', structuredClone);
