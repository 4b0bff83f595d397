//! A Worker's script and env with every reference resolved: one pure
//! function, used by the operator (the references read from the API
//! server) and by `isolane dev` (from the Worker folder's files).

use std::collections::BTreeMap;

use crate::WorkerSpec;

/// The kind of object a reference names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    ConfigMap,
    Secret,
}

/// One key of one object in the Worker's namespace, as its spec names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyReference<'a> {
    pub kind: ObjectKind,
    pub name: &'a str,
    pub key: &'a str,
}

/// A Worker's script and env with every reference resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The script source.
    pub script: String,
    /// The env bindings, by name.
    pub env: BTreeMap<String, String>,
    /// The JSON bindings (`json`), by name, as compact JSON text.
    pub json: BTreeMap<String, String>,
}

/// Resolves `spec` with `lookup`. The first reference `lookup` refuses, in
/// spec order (the script, then the env), is the error.
///
/// A `valueFrom` wins over a literal `value`: the API server refuses a
/// binding with both (a CEL rule), and `isolane dev`, which has no API
/// server, reads such a binding as the operator would. A binding with
/// neither, and a Worker with no script at all (also refused by the API),
/// resolve to empty text.
pub fn resolve<E>(
    spec: &WorkerSpec,
    mut lookup: impl FnMut(KeyReference<'_>) -> Result<String, E>,
) -> Result<Resolved, E> {
    let script = match (&spec.script, &spec.script_from) {
        (Some(script), _) => script.clone(),
        (None, Some(from)) => lookup(KeyReference {
            kind: ObjectKind::ConfigMap,
            name: &from.config_map_key_ref.name,
            key: &from.config_map_key_ref.key,
        })?,
        (None, None) => String::new(),
    };
    let mut env = BTreeMap::new();
    let mut json = BTreeMap::new();
    for var in &spec.env {
        if let (Some(value), None, None) = (&var.json, &var.value, &var.value_from) {
            json.insert(var.name.clone(), value.to_string());
            continue;
        }
        let from = var.value_from.as_ref();
        let reference =
            from.and_then(
                |from| match (&from.secret_key_ref, &from.config_map_key_ref) {
                    (Some(secret), _) => Some(KeyReference {
                        kind: ObjectKind::Secret,
                        name: &secret.name,
                        key: &secret.key,
                    }),
                    (None, Some(map)) => Some(KeyReference {
                        kind: ObjectKind::ConfigMap,
                        name: &map.name,
                        key: &map.key,
                    }),
                    (None, None) => None,
                },
            );
        let value = match (reference, &var.value) {
            (Some(reference), _) => lookup(reference)?,
            (None, _) if from.is_some() => String::new(),
            (None, Some(value)) => value.clone(),
            (None, None) => String::new(),
        };
        env.insert(var.name.clone(), value);
    }
    Ok(Resolved { script, env, json })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> WorkerSpec {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn references_are_read_in_spec_order_and_value_from_wins() {
        let spec = spec(
            "scriptFrom: { configMapKeyRef: { name: code, key: main.js } }\n\
             routes: [{ host: a.example }]\n\
             env:\n\
             - { name: PLAIN, value: p }\n\
             - { name: BOTH, value: literal, valueFrom: { secretKeyRef: { name: s, key: k } } }\n\
             - { name: NONE }\n",
        );
        let mut asked = Vec::new();
        let resolved = resolve(&spec, |r| {
            asked.push(format!("{:?} {} {}", r.kind, r.name, r.key));
            Ok::<_, ()>(format!("{}/{}", r.name, r.key))
        })
        .unwrap();
        assert_eq!(asked, ["ConfigMap code main.js", "Secret s k"]);
        assert_eq!(resolved.script, "code/main.js");
        assert_eq!(resolved.env["PLAIN"], "p");
        assert_eq!(
            resolved.env["BOTH"], "s/k",
            "valueFrom wins, as in the operator"
        );
        assert_eq!(resolved.env["NONE"], "");
        assert!(resolved.json.is_empty());
    }

    #[test]
    fn json_bindings_resolve_to_compact_json_text() {
        let spec = spec(
            "script: x\nroutes: [{ host: a.example }]\n\
             env:\n\
             - { name: CONFIG, json: { a: [1, true], b: null } }\n\
             - { name: N, json: 3 }\n\
             - { name: S, value: '{\"a\":1}' }\n",
        );
        let resolved = resolve(&spec, |_| Err::<String, _>(())).unwrap();
        assert_eq!(resolved.json["CONFIG"], r#"{"a":[1,true],"b":null}"#);
        assert_eq!(resolved.json["N"], "3");
        assert_eq!(resolved.env["S"], r#"{"a":1}"#, "a string stays text");
        assert!(!resolved.env.contains_key("CONFIG"));
    }

    #[test]
    fn the_first_refused_reference_is_the_error() {
        let spec = spec(
            "script: x\nroutes: [{ host: a.example }]\n\
             env: [{ name: A, valueFrom: { configMapKeyRef: { name: m, key: a } } }]\n",
        );
        let refused = resolve(&spec, |r| Err(r.key.to_owned()));
        assert_eq!(refused, Err("a".to_owned()));
    }
}
