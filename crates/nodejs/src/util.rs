//! `node:util`'s host functions: what JavaScript cannot see from inside
//! (a promise's state and result, whether an object is a Proxy), for
//! `util.inspect` and `util.types`.

host_fn! {
/// `utilPromiseState(value)` → -1 when not a promise, else 0 pending,
/// 1 fulfilled, 2 rejected.
pub(super) fn promise_state<'s>(_scope, value: v8::Local<'s, v8::Value>) -> f64 {
    match v8::Local::<v8::Promise>::try_from(value) {
        Err(_) => -1.0,
        Ok(promise) => match promise.state() {
            v8::PromiseState::Pending => 0.0,
            v8::PromiseState::Fulfilled => 1.0,
            v8::PromiseState::Rejected => 2.0,
        },
    }
}
}

host_fn! {
/// `utilPromiseResult(promise)` → its value or reason once settled.
pub(super) fn promise_result<'s>(scope, value: v8::Local<'s, v8::Value>) -> Option<v8::Local<'s, v8::Value>> {
    let promise = v8::Local::<v8::Promise>::try_from(value).ok()?;
    (promise.state() != v8::PromiseState::Pending).then(|| promise.result(scope))
}
}

host_fn! {
/// `utilIsProxy(value)` → whether the value is a Proxy.
pub(super) fn is_proxy<'s>(_scope, value: v8::Local<'s, v8::Value>) -> bool {
    value.is_proxy()
}
}

host_fn! {
/// `utilProxyDetails(proxy)` → `[target, handler]`, for `showProxy`.
pub(super) fn proxy_details<'s>(scope, value: v8::Local<'s, v8::Value>) -> Option<v8::Local<'s, v8::Array>> {
    let proxy = v8::Local::<v8::Proxy>::try_from(value).ok()?;
    let parts = [proxy.get_target(scope), proxy.get_handler(scope)];
    Some(v8::Array::new_with_elements(scope, &parts))
}
}

host_fn! {
/// `utilFunctionKind(fn)` → 1 for an async function, 2 for a generator
/// function, 3 for both, 0 otherwise (what the function is, whatever its
/// prototype says).
pub(super) fn function_kind<'s>(_scope, value: v8::Local<'s, v8::Value>) -> f64 {
    let asynchronous = if value.is_async_function() { 1.0 } else { 0.0 };
    let generator = if value.is_generator_function() { 2.0 } else { 0.0 };
    asynchronous + generator
}
}
