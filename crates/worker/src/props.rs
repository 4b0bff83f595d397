//! A service binding's `props` (`service: {name, props: {…}}`, wrangler's
//! `services[].props`): a JSON object the called Worker reads as
//! `this.ctx.props` (or `ctx.props`), fixed by the binding, so the callee
//! learns who calls it without trusting the caller's arguments.

use std::cmp::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The largest `props`, as compact JSON text.
pub const MAX_PROPS_BYTES: usize = 65536;

/// A JSON object, ordered (bindings are sorted into a bundle) by its
/// compact JSON text.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(transparent)]
pub struct Props(pub serde_json::Map<String, serde_json::Value>);

impl Props {
    /// The object as compact JSON text, as the engine hands it on.
    pub fn to_json(&self) -> String {
        serde_json::Value::Object(self.0.clone()).to_string()
    }
}

impl PartialOrd for Props {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Props {
    fn cmp(&self, other: &Self) -> Ordering {
        self.to_json().cmp(&other.to_json())
    }
}

impl JsonSchema for Props {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Props".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A JSON object the called Worker reads as `this.ctx.props` (wrangler's `props`): set by the binding, not by the caller's code. At most 64 KiB as compact JSON.",
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_are_an_object_ordered_by_their_text() {
        let a: Props = serde_json::from_str(r#"{"role":"admin","n":1}"#).unwrap();
        let b: Props = serde_json::from_str(r#"{"role":"user"}"#).unwrap();
        assert!(a < b);
        assert_eq!(serde_json::from_str::<Props>(&a.to_json()).unwrap(), a);
        assert!(serde_json::from_str::<Props>("[1]").is_err());
    }
}
