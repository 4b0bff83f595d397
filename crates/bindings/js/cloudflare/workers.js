// `cloudflare:workers` (workerd's module of the same name): the base
// classes a Worker extends. A default export that extends
// `WorkerEntrypoint` is a class-based Worker: each request gets a new
// instance, made with `(ctx, env)` (its `this.ctx`, `this.env`), whose
// `fetch(request)` or `scheduled(controller)` answers (19_worker.js).
// `DurableObject` is the base of Durable Object classes: an object is made
// with `(state, env)` (28_durable_object.js); RPC calls reach the methods
// of its own classes, never this base's.

class WorkerEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

class DurableObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

class WorkflowEntrypoint {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
  }
}

// Objects of a class extending `RpcTarget` are passed by reference over
// RPC, as functions are (the bindings' js/31_rpc_stub.js).
class RpcTarget {}
internal.RpcTarget = RpcTarget;

internal.WorkerEntrypoint = WorkerEntrypoint;
internal.DurableObjectBase = DurableObject;

// `env`: the Worker's bindings as a module export (workerd's `import { env }
// from 'cloudflare:workers'`, which Astro's image endpoint reads), read
// through to the `env` the isolate's handlers get (19_worker.js keeps it as
// `internal.workerEnv` for each event). The engine makes that object after
// the Worker's module is evaluated: top-level code sees it empty.
function workerEnv() {
  const current = internal.workerEnv;
  return internal.isObject(current) ? current : {};
}
const env = new Proxy({}, {
  get(_target, key) { return Reflect.get(workerEnv(), key); },
  has(_target, key) { return Reflect.has(workerEnv(), key); },
  ownKeys() { return Reflect.ownKeys(workerEnv()); },
  getOwnPropertyDescriptor(_target, key) {
    const descriptor = Reflect.getOwnPropertyDescriptor(workerEnv(), key);
    return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
  },
  set() { return false; },
  defineProperty() { return false; },
  deleteProperty() { return false; },
});

module.exports = { WorkerEntrypoint, DurableObject, WorkflowEntrypoint, RpcTarget, env };
