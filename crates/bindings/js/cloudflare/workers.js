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

module.exports = { WorkerEntrypoint, DurableObject, WorkflowEntrypoint, RpcTarget };
