// `cloudflare:workflows` (workerd's module of the same name):
// `NonRetryableError`, which a `step.do` callback throws to fail its step
// at once, without the retries its config allows (40_workflow.js). Its
// name may be given; the step knows it by its brand, or by the name
// `NonRetryableError` (docs/workflows.md).

const kNonRetryable = Symbol.for('isolane.workflows.nonRetryable');

class NonRetryableError extends Error {
  constructor(message, name = 'NonRetryableError') {
    super(message);
    this.name = name;
    Object.defineProperty(this, kNonRetryable, { value: true });
  }
}

module.exports = { NonRetryableError };
