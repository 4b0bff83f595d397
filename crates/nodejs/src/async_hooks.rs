//! `node:async_hooks`' one native part: the current AsyncLocalStorage frame
//! is V8's continuation-preserved embedder data, which V8 carries into
//! every promise reaction, as workerd does (not promise hooks).

host_fn! {
/// `asyncContextGet()`: the current frame (undefined when none).
pub(super) fn context_get<'s>(scope) -> v8::Local<'s, v8::Value> {
    scope.get_continuation_preserved_embedder_data()
}
}

host_fn! {
/// `asyncContextSet(frame)`: makes `frame` current.
pub(super) fn context_set<'s>(scope, frame: v8::Local<'s, v8::Value>) {
    scope.set_continuation_preserved_embedder_data(frame);
}
}
