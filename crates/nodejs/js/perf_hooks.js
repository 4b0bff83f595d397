// node:perf_hooks (workerd's, on from 2026-03-17): the runtime's
// `performance`; the entry classes Isolane has no timeline for, histograms
// and event-loop delay monitoring are "not implemented". Runs as function
// (host, internal, require, module, exports).

const { stubClass, stubs } = require('node:internal/errors');

const entries = ['PerformanceEntry', 'PerformanceMark', 'PerformanceMeasure', 'PerformanceObserver',
  'PerformanceObserverEntryList', 'PerformanceResourceTiming'];

// Node's constants (perf_hooks.constants), as Node and workerd give them.
const constants = {
  NODE_PERFORMANCE_GC_MAJOR: 4, NODE_PERFORMANCE_GC_MINOR: 1, NODE_PERFORMANCE_GC_INCREMENTAL: 8,
  NODE_PERFORMANCE_GC_WEAKCB: 16, NODE_PERFORMANCE_GC_FLAGS_NO: 0, NODE_PERFORMANCE_GC_FLAGS_CONSTRUCT_RETAINED: 2,
  NODE_PERFORMANCE_GC_FLAGS_FORCED: 4, NODE_PERFORMANCE_GC_FLAGS_SYNCHRONOUS_PHANTOM_PROCESSING: 8,
  NODE_PERFORMANCE_GC_FLAGS_ALL_AVAILABLE_GARBAGE: 16, NODE_PERFORMANCE_GC_FLAGS_ALL_EXTERNAL_MEMORY: 32,
  NODE_PERFORMANCE_GC_FLAGS_SCHEDULE_IDLE: 64, NODE_PERFORMANCE_ENTRY_TYPE_GC: 0, NODE_PERFORMANCE_ENTRY_TYPE_HTTP: 1,
  NODE_PERFORMANCE_ENTRY_TYPE_HTTP2: 2, NODE_PERFORMANCE_ENTRY_TYPE_NET: 3, NODE_PERFORMANCE_ENTRY_TYPE_DNS: 4,
  NODE_PERFORMANCE_MILESTONE_TIME_ORIGIN_TIMESTAMP: 0, NODE_PERFORMANCE_MILESTONE_TIME_ORIGIN: 1,
  NODE_PERFORMANCE_MILESTONE_ENVIRONMENT: 2, NODE_PERFORMANCE_MILESTONE_NODE_START: 3,
  NODE_PERFORMANCE_MILESTONE_V8_START: 4, NODE_PERFORMANCE_MILESTONE_LOOP_START: 5,
  NODE_PERFORMANCE_MILESTONE_LOOP_EXIT: 6, NODE_PERFORMANCE_MILESTONE_BOOTSTRAP_COMPLETE: 7,
};

module.exports = {
  performance: globalThis.performance,
  Performance: globalThis.Performance,
  ...Object.fromEntries(entries.map((n) => [n, globalThis[n] ?? stubClass(`perf_hooks.${n}`)])),
  constants,
  eventLoopUtilization: () => ({ idle: 0, active: 0, utilization: 0 }),
  timerify: (fn) => fn,
  ...stubs('perf_hooks', ['createHistogram', 'monitorEventLoopDelay']),
};
