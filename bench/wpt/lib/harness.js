// The part of every generated WPT Worker that is ours (bench/wpt): it answers
// each request with the results of one WPT test file, run once per isolate.
// The generator appends `function __wptFile(__wptScope, __wptLocation,
// __wptReport) { … }` holding testharness.js, the META scripts and the test,
// all read from the WPT checkout at run time. Classic (service-worker) syntax
// on purpose: WPT files are sloppy-mode scripts, and an ES module is strict.
var __wptRun = null;

addEventListener("fetch", function (event) {
  event.respondWith(__wptAnswer());
});

function __wptAnswer() {
  if (!__wptRun) __wptRun = new Promise(__wptStart);
  return __wptRun.then(function (result) {
    return new Response(JSON.stringify(result), {
      headers: { "content-type": "application/json" },
    });
  });
}

function __wptStart(resolve) {
  var STATUS = ["PASS", "FAIL", "TIMEOUT", "NOTRUN", "PRECONDITION_FAILED"];
  var HARNESS = ["OK", "ERROR", "TIMEOUT", "PRECONDITION_FAILED"];
  var seen = [];
  var uncaught = null;
  var finished = false;
  var started = Date.now();

  function entry(test) {
    // A test still running (no result yet) when we answer counts as TIMEOUT.
    var done = test.phase >= 2 && test.status !== null && test.status !== undefined;
    return {
      name: String(test.name),
      status: done ? STATUS[test.status] || String(test.status) : "TIMEOUT",
      message: test.message ? String(test.message).slice(0, 240) : null,
    };
  }

  function finish(tests, harness) {
    if (finished) return;
    finished = true;
    resolve({ harness: harness, tests: tests.map(entry), ms: Date.now() - started });
  }

  var hooks = {
    seen: function (test) {
      if (seen.indexOf(test) < 0) seen.push(test);
    },
    complete: function (tests, status) {
      finish(tests, uncaught || {
        status: HARNESS[status.status] || String(status.status),
        message: status.message ? String(status.message).slice(0, 240) : null,
      });
    },
  };

  setTimeout(function () {
    finish(seen, { status: "TIMEOUT", message: "per-file deadline (" + __WPT.deadlineMs + " ms)" });
  }, __WPT.deadlineMs);

  var location = new URL(__WPT.testUrl);
  var hidden = Object.create(null);
  [
    "document",
    "DedicatedWorkerGlobalScope",
    "SharedWorkerGlobalScope",
    "ServiceWorkerGlobalScope",
    "WorkerGlobalScope",
  ].forEach(function (name) {
    hidden[name] = true;
  });
  // testharness.js sees the global through this: no worker-scope class (so it
  // picks its shell environment, which needs no postMessage client) and our
  // `location`, the same on both runtimes.
  var scope = new Proxy(globalThis, {
    has: function (target, key) {
      if (key === "location") return true;
      return hidden[key] ? false : Reflect.has(target, key);
    },
    get: function (target, key) {
      if (key === "location") return location;
      return hidden[key] ? undefined : Reflect.get(target, key);
    },
    set: function (target, key, value) {
      return Reflect.set(target, key, value);
    },
  });
  try {
    __wptFile(scope, location, hooks);
  } catch (error) {
    // As on a WPT page: the file's tests registered so far still run.
    uncaught = { status: "ERROR", message: "uncaught: " + String((error && error.stack) || error).slice(0, 240) };
    if (typeof globalThis.done !== "function") return finish(seen, uncaught);
    try {
      globalThis.done();
    } catch (ignored) {
      finish(seen, uncaught);
    }
  }
}
