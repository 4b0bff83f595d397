// 31_rpc.js — JS RPC over a service binding, the caller's side and the
// wire both sides share. `env.SVC.method(...args)` (30_service.js's
// Fetcher) hands the serialized arguments to host.serviceRpc with the
// method's name: the engine runs the call on this thread in the called
// Worker's isolate (src/host/service.rs, src/rpc.rs), whose handler
// (32_rpc_target.js) answers with the serialized result or what it threw.
// No Request or Response is made on either side.
//
// The wire is V8's serializer (host.serialize, the structured clone
// algorithm: Map, Set, Date, RegExp, typed arrays, Errors of the standard
// classes, cycles...), in the sender's isolate, read back in the
// receiver's. A ReadableStream (an argument, or the result) is read whole
// and sent as its bytes, and is a stream again on the other side: not yet
// streamed. Functions and RpcTargets go by reference (31_rpc_stub.js).
//
// A call's payload is the serialized `{values, streams}` (`streams` the
// indexes of `values` that were streams) or `{get: true}` for a property's
// read (`await env.SVC.prop`), with `refs` when it passes references; the
// answer the result as `{values:
// [result], streams}`, or the serialized `{error}` the method threw (a
// DOMException as `{dom: [message, name]}`, which V8 cannot clone).
'use strict';

// The runtime's own classes keep their state in private fields, which V8's
// serializer cannot see: refused at the top level, as structuredClone
// refuses them (18_structured_clone.js), rather than sent as `{}`.
function refuseUncloneable(value) {
  if (!internal.isObject(value)) return;
  const checks = [
    ['Request', internal.isRequest], ['Response', internal.isResponse], ['Headers', internal.isHeaders],
    ['URL', internal.isURL], ['URLSearchParams', internal.isURLSearchParams],
    ['WritableStream', internal.isWritableStream], ['TransformStream', internal.isTransformStream],
    ['AbortSignal', internal.isAbortSignal], ['Event', internal.isEvent], ['EventTarget', internal.isEventTarget],
    ['Blob', internal.isBlob],
  ];
  for (const [name, check] of checks) {
    if (check(value)) throw new internal.DOMException(`${name} object could not be cloned.`, 'DataCloneError');
  }
}

// `values` serialized, their streams read into bytes first, the functions
// and RpcTargets among them passed by reference (31_rpc_stub.js):
// `{bytes, exports}`, `exports` what this isolate exported for them.
async function encode(values) {
  const out = [];
  const streams = [];
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (internal.isReadableStream(value)) {
      out.push(new Uint8Array(await new Response(value).arrayBuffer()));
      streams.push(i);
    } else {
      refuseUncloneable(value);
      out.push(value);
    }
  }
  const { values: sent, refs, exports } = internal.rpcRefs.outgoing(out);
  const payload = refs === undefined ? { values: sent, streams } : { values: sent, streams, refs };
  try {
    return { bytes: host.serialize(payload), exports };
  } catch (e) {
    internal.rpcRefs.release(exports);
    throw e;
  }
}

// What encode() sent: the values (their references as stubs, pushed on
// `held`; `notify`: a result's, whose disposal its exporter hears), or
// `undefined` for a property's read.
function decode(bytes, held, notify) {
  const payload = host.deserialize(bytes);
  if (payload.get === true) return undefined;
  const { values, streams, refs } = payload;
  for (const i of streams) values[i] = new Response(values[i]).body;
  if (refs !== undefined) internal.rpcRefs.incoming(values, refs, held, notify);
  return values;
}

// What a thrown value is sent as; one that cannot be cloned goes as an
// Error of its message.
function encodeError(error) {
  try {
    if (error instanceof internal.DOMException) return host.serialize({ dom: [error.message, error.name] });
    return host.serialize({ error });
  } catch {
    return host.serialize({ error: new Error(String(error?.message ?? error)) });
  }
}

function decodeError(bytes) {
  const { error, dom } = host.deserialize(bytes);
  return dom === undefined ? error : new internal.DOMException(dom[0], dom[1]);
}

// The result of a call `start()` began (host.serviceRpc, host.stubCall),
// its stubs held by this request; then what its arguments exported is
// released.
async function settle(start, exports) {
  let bytes;
  try {
    bytes = await start();
  } catch (e) {
    throw e instanceof Uint8Array ? decodeError(e) : e;
  } finally {
    internal.rpcRefs.release(exports);
  }
  return decode(bytes, internal.rpcRefs.heldHere(), true)[0];
}

internal.rpcWire = { encode, decode, encodeError, settle };

// `call`, after a Worker Loader stub's code is loaded (39_loader.js).
const loaded = (to, call) =>
  to?.load === undefined ? call : async () => { await to.load(); return call(); };

// `env.SVC.name`: called, an RPC call of method `name`; awaited, a read of
// property `name` (as workerd's JsRpcProperty).
// `to`: a dispatch stub's Worker and limits (30_service.js).
internal.rpcProperty = (binding, name, to = undefined) => {
  const target = internal.serviceTarget(to);
  const property = async (...args) => {
    const { bytes, exports } = await encode(args);
    return settle(loaded(to, () => host.serviceRpc(binding, name, bytes, ...target)), exports);
  };
  const get = loaded(to, () => host.serviceRpc(binding, name, host.serialize({ get: true }), ...target));
  property.then = (resolve, reject) => settle(get, []).then(resolve, reject);
  return property;
};
