// 40_workflow.js — Workflows (docs/workflows.md). The binding: the
// `Workflow` a workflow binding puts in `env` (`internal.workflowBinding`,
// called by the engine as it builds `env`) and its `WorkflowInstance`s. The
// run: `internal.runWorkflow(event, env, ctx)` (called by the engine's
// 19_worker.js for a 'workflow' event) makes the exported class's instance
// and calls its `run(event, step)`, replaying from the instance's step log:
// a step whose result is stored returns it without running again. A sleep,
// a wait for an event or a retry delay ends the run (recorded, with when to
// wake it); the runner (isolane-node's workflows.rs) runs it again then.
// Every store operation is one `host.workflowOp`, which scopes it to the
// Worker's own namespace (src/workflow.rs).
'use strict';

const kCreate = Symbol('create');
const STOPPED = 'the instance is ';
const MAX_NAME = 256;
const MAX_BATCH = 100;

async function workflowOp(binding, workflow, id, body) {
  return JSON.parse(await host.workflowOp(binding, workflow, id, JSON.stringify(body)));
}

// Cloudflare's durations: milliseconds, or "<n> <unit>" ("10 seconds").
const UNITS = {
  millisecond: 1, second: 1000, minute: 60000, hour: 3600000, day: 86400000,
  week: 604800000, month: 2592000000, year: 31536000000,
};
function durationMs(value, what) {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`${what}: a duration must be a number of milliseconds ≥ 0`);
    return value;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(millisecond|second|minute|hour|day|week|month|year)s?\s*$/i.exec(String(value));
  if (match === null) throw new TypeError(`${what}: invalid duration ${JSON.stringify(value)}; expected milliseconds or a string like "10 seconds"`);
  return Number(match[1]) * UNITS[match[2].toLowerCase()];
}

function jsonOf(value, what) {
  let text;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new TypeError(`${what} is not JSON-serialisable: ${e.message}`);
  }
  return text === undefined ? 'null' : text;
}

// A `NonRetryableError` (`cloudflare:workflows`): by its brand, or by its
// name as workerd knows it (a name kept only in the message, as across RPC).
const kNonRetryable = Symbol.for('isolane.workflows.nonRetryable');
function nonRetryable(e) {
  return e?.[kNonRetryable] === true || e?.name === 'NonRetryableError' ||
    String(e?.message).startsWith('NonRetryableError');
}

// What the instance's error is when `run()` lets a NonRetryableError out:
// Cloudflare's without workflows_preserve_non_retryable_error_message
// (docs/workflows.md).
const NON_RETRYABLE_FAILURE = 'The execution of the Workflow instance was terminated, as a step threw an NonRetryableError and it was not handled';

// An error's `{name, message}`; a NonRetryableError known only by its
// message (`NonRetryableError: …`) is named so, its message without it.
function nameAndMessage(e) {
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const message = typeof e?.message === 'string' ? e.message : String(e);
  if (nonRetryable(e) && e?.[kNonRetryable] !== true && name !== 'NonRetryableError') {
    return { name: 'NonRetryableError', message: message.replace(/^NonRetryableError:?\s*/, '') };
  }
  return { name, message };
}

function errorJson(e) {
  if (nonRetryable(e) && !host.workflowPreserveNonRetryable()) {
    return JSON.stringify({ name: 'WorkflowFatalError', message: NON_RETRYABLE_FAILURE });
  }
  return JSON.stringify(nameAndMessage(e));
}

// A step's stored failure (`{f: {name, message, fatal}}` in its step log,
// where a result is `{v}`), thrown again by each later run that reaches
// the step: a NonRetryableError (`fatal`) as one, any other as an Error.
function failureJson(e) {
  return JSON.stringify({ f: { ...nameAndMessage(e), fatal: nonRetryable(e) } });
}
function storedFailure({ name, message, fatal }) {
  const error = new Error(message);
  error.name = name;
  if (fatal) Object.defineProperty(error, kNonRetryable, { value: true });
  return error;
}

// One run of an instance: its step names (a name used again is another
// step: `name#n`), and the promise that settles once the run stopped early.
class Run {
  counts = new Map();
  stopped = false;
  #stop;
  suspended = new Promise((resolve) => { this.#stop = resolve; });

  constructor(workflow, id) {
    this.workflow = workflow;
    this.id = id;
  }

  key(name) {
    if (typeof name !== 'string' || name.length === 0 || name.length > MAX_NAME) {
      throw new TypeError(`A step's name must be a string of 1 to ${MAX_NAME} characters`);
    }
    const n = this.counts.get(name) ?? 0;
    this.counts.set(name, n + 1);
    return `${name}#${n}`;
  }

  async op(body) {
    if (this.stopped) return this.halt();
    try {
      return await workflowOp('', this.workflow, this.id, body);
    } catch (e) {
      // Paused, terminated or finished since: the run stops here.
      if (typeof e?.message === 'string' && e.message.startsWith(STOPPED)) return this.halt();
      throw e;
    }
  }

  // Stops the run; a promise that never settles, for the step that asked.
  halt() {
    this.stopped = true;
    this.#stop();
    return new Promise(() => {});
  }

  // Records how the run ends for now (a wait, a retry) and stops it.
  async suspend(end) {
    await this.op({ op: 'end', ...end });
    return this.halt();
  }
}

function withTimeout(promise, ms, name) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`step "${name}" timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

class WorkflowStep {
  #run;

  constructor(key, run) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#run = run;
  }

  async do(name, config, callback) {
    if (typeof config === 'function') {
      callback = config;
      config = undefined;
    }
    if (typeof callback !== 'function') throw new TypeError('step.do(name, [config], callback): callback must be a function');
    const run = this.#run;
    const key = run.key(name);
    const retries = { limit: 5, delay: 10000, backoff: 'exponential', ...(config?.retries ?? {}) };
    const limit = Number(retries.limit);
    if (!Number.isInteger(limit) || limit < 0) throw new TypeError('step.do: retries.limit must be a whole number ≥ 0');
    if (!['constant', 'linear', 'exponential'].includes(retries.backoff)) {
      throw new TypeError('step.do: retries.backoff must be "constant", "linear" or "exponential"');
    }
    const delayMs = durationMs(retries.delay, 'step.do: retries.delay');
    const timeout = durationMs(config?.timeout ?? '10 minutes', 'step.do: timeout');
    const before = await run.op({ op: 'step', key, kind: 'do', delayMs, backoff: retries.backoff });
    if ('result' in before) {
      const stored = JSON.parse(before.result);
      if ('f' in stored) throw storedFailure(stored.f);
      return stored.v;
    }
    if (before.attempts > limit + 1) {
      // The last attempt ended its run (a limit): no retry is left.
      throw new Error(`step "${name}" ran out of retries (${limit}); its last attempt ended the run: ${before.lastFailure ?? 'unknown'}`);
    }
    let value;
    try {
      value = await withTimeout(Promise.resolve().then(callback), timeout, name);
    } catch (e) {
      // A NonRetryableError fails the step at once, whatever its retries;
      // a failed step is stored, never run again (its error thrown again).
      if (before.attempts > limit || nonRetryable(e)) {
        await run.op({ op: 'stepDone', key, result: failureJson(e) });
        throw e;
      }
      return run.suspend({ end: 'retry', delayMs: before.retryDelayMs });
    }
    const text = jsonOf({ v: value }, `The result of step "${name}"`);
    await run.op({ op: 'stepDone', key, result: text });
    return JSON.parse(text).v;
  }

  async sleep(name, duration) {
    const ms = durationMs(duration, 'step.sleep');
    return this.#sleep(name, (startedAt) => startedAt + ms);
  }

  async sleepUntil(name, timestamp) {
    const at = timestamp instanceof Date ? timestamp.getTime() : Number(timestamp);
    if (!Number.isFinite(at)) throw new TypeError('step.sleepUntil(name, timestamp): a Date or milliseconds since the epoch');
    return this.#sleep(name, () => at);
  }

  async #sleep(name, wakeAt) {
    const run = this.#run;
    const key = run.key(name);
    const before = await run.op({ op: 'step', key, kind: 'sleep' });
    if ('result' in before) return;
    const wake = wakeAt(before.startedAt);
    if (before.now >= wake) {
      await run.op({ op: 'stepDone', key, result: '{}' });
      return;
    }
    return run.suspend({ end: 'waiting', wakeAt: Math.ceil(wake), waitingFor: null });
  }

  async waitForEvent(name, options) {
    const run = this.#run;
    const type = options?.type;
    if (typeof type !== 'string' || type.length === 0) throw new TypeError('step.waitForEvent(name, {type, timeout}): type must be a string');
    const timeout = durationMs(options.timeout ?? '24 hours', 'step.waitForEvent: timeout');
    const key = run.key(name);
    const before = await run.op({ op: 'step', key, kind: 'event', type });
    if ('result' in before) {
      const event = JSON.parse(before.result);
      return { payload: event.payload, timestamp: new Date(event.timestamp), type: event.type };
    }
    const deadline = before.startedAt + timeout;
    if (before.now >= deadline) throw new Error(`waitForEvent "${name}" timed out after ${timeout} ms waiting for an event of type "${type}"`);
    return run.suspend({ end: 'waiting', wakeAt: Math.ceil(deadline), waitingFor: type });
  }
}
internal.enumerableMembers(WorkflowStep, ['do', 'sleep', 'sleepUntil', 'waitForEvent']);
internal.setToStringTag(WorkflowStep.prototype, 'WorkflowStep');

// The run of one instance: a 200 once it recorded how it ended, or stopped.
internal.runWorkflow = (event, env, ctx) => {
  const Class = internal.moduleNamespace?.[event.className];
  if (typeof Class !== 'function' || typeof Class.prototype?.run !== 'function') {
    throw new TypeError(`The Worker exports no WorkflowEntrypoint class ${event.className} with a run() method.`);
  }
  const run = new Run(event.workflow, event.instanceId);
  const payload = JSON.parse(event.payload);
  const workflowEvent = Object.freeze({ payload, timestamp: new Date(event.timestamp), instanceId: event.instanceId });
  const finished = (async () => {
    let end;
    try {
      const output = await new Class(ctx, env).run(workflowEvent, new WorkflowStep(kCreate, run));
      end = { end: 'complete', output: jsonOf(output, "The workflow's output") };
    } catch (e) {
      end = { end: 'errored', error: errorJson(e) };
    }
    if (!run.stopped) await run.op({ op: 'end', ...end });
  })();
  return Promise.race([finished, run.suspended]).then(() => [200, null]);
};

// ---- the binding ----

class WorkflowInstance {
  #binding;
  #id;

  constructor(key, binding, id) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
    this.#id = id;
  }

  get id() { return this.#id; }

  #op(body) { return workflowOp(this.#binding, '', this.#id, body); }

  async status() { return this.#op({ op: 'status' }); }
  async pause() { await this.#op({ op: 'pause' }); }
  async resume() { await this.#op({ op: 'resume' }); }
  async terminate() { await this.#op({ op: 'terminate' }); }
  async restart() { await this.#op({ op: 'restart' }); }

  async sendEvent(event) {
    const type = event?.type;
    if (typeof type !== 'string' || type.length === 0 || type.length > 100) {
      throw new TypeError('sendEvent({type, payload}): type must be a string of 1 to 100 characters');
    }
    await this.#op({ op: 'sendEvent', type, payload: jsonOf(event.payload ?? null, "The event's payload") });
  }
}
internal.enumerableMembers(WorkflowInstance, ['id', 'status', 'pause', 'resume', 'terminate', 'restart', 'sendEvent']);
internal.setToStringTag(WorkflowInstance.prototype, 'WorkflowInstance');

class Workflow {
  #binding;

  constructor(key, binding) {
    if (key !== kCreate) internal.illegalConstructor();
    this.#binding = binding;
  }

  async create(options = undefined) {
    const id = options?.id;
    if (id !== undefined && typeof id !== 'string') throw new TypeError('create({id, params}): id must be a string');
    const payload = jsonOf(options?.params ?? {}, "The instance's params");
    const made = await workflowOp(this.#binding, '', id ?? '', { op: 'create', payload });
    return new WorkflowInstance(kCreate, this.#binding, made.id);
  }

  async createBatch(batch) {
    const list = Array.from(batch ?? []);
    if (list.length === 0 || list.length > MAX_BATCH) throw new TypeError(`createBatch() takes 1 to ${MAX_BATCH} instances`);
    const made = [];
    for (const options of list) made.push(await this.create(options));
    return made;
  }

  async get(id) {
    if (typeof id !== 'string') throw new TypeError('get(id): id must be a string');
    await workflowOp(this.#binding, '', id, { op: 'status' });
    return new WorkflowInstance(kCreate, this.#binding, id);
  }
}
internal.enumerableMembers(Workflow, ['create', 'createBatch', 'get']);
internal.setToStringTag(Workflow.prototype, 'Workflow');

internal.workflowBinding = (binding) => new Workflow(kCreate, binding);
