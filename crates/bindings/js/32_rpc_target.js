// 32_rpc_target.js — the called Worker's side of a service call
// (`internal.serviceCallHandler(event)` for a fetch,
// `internal.serviceRpcCall` for a JS RPC call, taken by the engine's
// 19_worker.js for a `serviceCall` event): `ctx.props` is the binding's
// props (`{}` without), and an RPC call's payload is answered with bytes,
// as 31_rpc.js reads them.
//
// What an RPC call reaches, as in workerd: a default export (or the
// binding's `entrypoint`) that extends WorkerEntrypoint gets a new
// instance per call, made with `(ctx, env)`, whose class's methods (on its
// prototype chain, not Object.prototype's, not the instance's own
// properties) are callable; a plain object's own functions are callable
// as handlers `(arg, env, ctx)` with exactly one argument. `fetch`,
// `connect`, `constructor` and the names Durable Objects reserve are not.
'use strict';

// The statuses of an RPC call's answer (src/service_call.rs).
const RETURNED = 200;
const THREW = 500;

const RESERVED = new Set(['fetch', 'connect', 'alarm', 'webSocketMessage', 'webSocketClose', 'webSocketError', 'dup', 'constructor']);

function isEntrypointClass(value) {
  return typeof value === 'function' && internal.WorkerEntrypoint !== undefined &&
    value.prototype instanceof internal.WorkerEntrypoint;
}

// The object a call reaches, and whether its own properties count.
function receiver(entrypoint, env, ctx) {
  const exported = internal.moduleNamespace?.[entrypoint ?? 'default'];
  if (isEntrypointClass(exported)) return { self: new exported(ctx, env), plain: false };
  if (internal.isObject(exported) && typeof exported !== 'function') return { self: exported, plain: true };
  if (entrypoint !== null) throw new TypeError(`Worker does not export an entrypoint named "${entrypoint}".`);
  throw new TypeError("The called Worker's default export does not support RPC: it is not an object, nor a class that extends WorkerEntrypoint (from \"cloudflare:workers\").");
}

function notImplemented(name) {
  return new TypeError(`The RPC receiver does not implement the method "${name}".`);
}

// Property `name` of the receiver, as an RPC call may reach it.
function member(self, plain, name) {
  if (RESERVED.has(name)) throw new TypeError(`'${name}' is a reserved method and cannot be called over RPC.`);
  if (plain) {
    if (!Object.hasOwn(self, name)) throw notImplemented(name);
    return self[name];
  }
  if (Object.hasOwn(self, name)) throw notImplemented(name);
  const value = self[name];
  if (value === Object.prototype[name]) throw notImplemented(name);
  return value;
}

// A plain object's function is a handler: `(arg, env, ctx)`, one argument
// from the caller (workerd's rule, and its words).
function callHandler(fn, self, name, args, env, ctx) {
  const arity = Math.max(Number(fn.length), 3);
  if (!(arity < 256)) throw new TypeError(`RPC function has unreasonable length attribute: ${fn.length}`);
  if (arity !== 3) {
    throw new TypeError(`Cannot call handler function "${name}" over RPC because it has the wrong number of arguments. ` +
      'A simple function handler can only be called over RPC if it has exactly the arguments (arg, env, ctx), ' +
      'where only the first argument comes from the client. To support multi-argument RPC functions, use ' +
      'class-based syntax (extending WorkerEntrypoint) instead.');
  }
  if (args.length !== 1) {
    throw new TypeError(`Attempted to call RPC function "${name}" with the wrong number of arguments. ` +
      'When calling a top-level handler function that is not declared as part of a class, you must always ' +
      'send exactly one argument. In order to support variable numbers of arguments, the server must use ' +
      'class-based syntax (extending WorkerEntrypoint) instead.');
  }
  return fn.call(self, args[0], env, ctx);
}

// A JS RPC call (`event.payload` its serialized arguments, 31_rpc.js):
// `[status, bytes]` of the result or of what the method threw, as the
// engine's runCall (19_worker.js) sends them.
internal.serviceRpcCall = async (event, env, ctx) => {
  const { encode, decode, encodeError } = internal.rpcWire;
  const held = [];
  try {
    setProps(ctx, event.props === null ? {} : JSON.parse(event.props));
    const name = event.rpcMethod;
    const args = decode(event.payload, held, false);
    const { self, plain } = receiver(event.entrypoint, env, ctx);
    const value = member(self, plain, name);
    let result = value;
    if (args !== undefined) {
      if (typeof value !== 'function') throw new TypeError(`"${name}" is not a function.`);
      result = plain ? callHandler(value, self, name, args, env, ctx) : value.apply(self, args);
    }
    const { bytes, exports } = await encode([await result]);
    // What the result passed by reference keeps this request open until
    // the caller disposes it (31_rpc_stub.js).
    if (exports.length > 0) ctx.waitUntil(internal.rpcRefs.untilReleased(exports));
    return [RETURNED, bytes];
  } catch (e) {
    return [THREW, encodeError(e)];
  } finally {
    // The stubs the arguments held are the call's (workerd's rule).
    for (const state of held) state.disposed = true;
  }
};

internal.rpcMember = member;

function setProps(ctx, props) {
  Object.defineProperty(ctx, 'props', { value: props, enumerable: true });
}

// A `fetch` through the binding: the entrypoint's fetch handler, with
// `ctx.props`.
internal.serviceCallHandler = (event) => {
  const props = event.props === null ? {} : JSON.parse(event.props);
  const handler = internal.serviceHandler(event.entrypoint);
  return {
    fetch(request, env, ctx) {
      setProps(ctx, props);
      return handler.fetch(request, env, ctx);
    },
  };
};
