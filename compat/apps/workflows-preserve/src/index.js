// compat/apps/workflows under workflows_preserve_non_retryable_error_message
// (this folder's wrangler.toml): the same probe, compared the same way.
export * from '../../workflows/src/index.js';
export { default } from '../../workflows/src/index.js';
