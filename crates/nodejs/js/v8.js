// node:v8 — importable only (workerd's stub, on from 2026-03-17): heap
// statistics answer zeros, serialization, snapshots, coverage and flags are
// "not implemented". Runs as function (host, internal, require, module,
// exports).

const { stubClass, stubs } = require('node:internal/errors');

const zeros = (names) => Object.fromEntries(names.map((n) => [n, 0]));
const HEAP = ['total_heap_size', 'total_heap_size_executable', 'total_physical_size', 'total_available_size',
  'used_heap_size', 'heap_size_limit', 'malloced_memory', 'peak_malloced_memory', 'does_zap_garbage',
  'number_of_native_contexts', 'number_of_detached_contexts', 'total_global_handles_size',
  'used_global_handles_size', 'external_memory'];

module.exports = {
  cachedDataVersionTag: () => 0,
  getHeapStatistics: () => zeros(HEAP),
  getHeapSpaceStatistics: () => [],
  getHeapCodeStatistics: () => zeros(['code_and_metadata_size', 'bytecode_and_metadata_size', 'external_script_source_size', 'cpu_profiler_metadata_size']),
  getCppHeapStatistics: () => ({ committed_size_bytes: 0, resident_size_bytes: 0, used_size_bytes: 0, space_statistics: [], type_names: [], detail_level: 'brief' }),
  isStringOneByteRepresentation: (content) => !/[^\0-\xFF]/.test(String(content)),
  ...stubs('v8', ['deserialize', 'serialize', 'getHeapSnapshot', 'writeHeapSnapshot', 'setFlagsFromString',
    'setHeapSnapshotNearHeapLimit', 'queryObjects', 'stopCoverage', 'takeCoverage']),
  Serializer: stubClass('v8.Serializer'),
  Deserializer: stubClass('v8.Deserializer'),
  DefaultSerializer: stubClass('v8.DefaultSerializer'),
  DefaultDeserializer: stubClass('v8.DefaultDeserializer'),
  GCProfiler: stubClass('v8.GCProfiler'),
  promiseHooks: stubs('v8.promiseHooks', ['createHook', 'onInit', 'onBefore', 'onAfter', 'onSettled']),
  startupSnapshot: {
    ...stubs('v8.startupSnapshot', ['addSerializeCallback', 'addDeserializeCallback', 'setDeserializeMainFunction']),
    isBuildingSnapshot: () => false,
  },
};
