// node:test — importable only, as in workerd: the mock classes exist, a
// Worker runs no test runner. Runs as function (host, internal, require,
// module, exports).

const { stubClass } = require('node:internal/errors');

module.exports = {
  MockFunctionContext: stubClass('test.MockFunctionContext'),
  MockTracker: stubClass('test.MockTracker'),
  mock: {},
};
