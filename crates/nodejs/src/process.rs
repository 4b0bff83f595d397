//! `node:process`' one host function: the `env` it starts with.

use std::rc::Rc;

use isolane_engine::api::HostResult;
use isolane_engine::api::HostState;

host_fn! {
/// `processEnv()` → a fresh object of the Worker's text bindings when its
/// settings populate `process.env`, else an empty one.
pub(super) fn process_env<'s>(scope, host: Rc<HostState>) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let env = v8::Object::new(scope);
    let Some(bundle) = host.worker().filter(|b| b.compat.process_env) else {
        return Ok(Some(env));
    };
    for (key, value) in &bundle.env {
        let (Some(key), Some(value)) = (v8::String::new(scope, key), v8::String::new(scope, value)) else {
            return Ok(None);
        };
        if env.set(scope, key.into(), value.into()).is_none() {
            return Ok(None);
        }
    }
    Ok(Some(env))
}
}
