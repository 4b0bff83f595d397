//! How a node-to-node `Execute` call names its Durable Object: the gRPC
//! metadata entry [`OBJECT_METADATA`], a JSON array `[class, id, method]`
//! (`method` null for `stub.fetch`). gRPC metadata, not an HTTP header of
//! the request: the router never sends it (a client's headers travel in
//! the request head), and a node's service takes it only from a peer
//! node's certificate (`service.rs`).

use isolane_engine::ObjectCall;
use tonic::metadata::{MetadataMap, MetadataValue};

/// The metadata key (binary: names may be any UTF-8).
pub const OBJECT_METADATA: &str = "isolane-object-bin";

/// The longest class or method name taken.
const MAX_NAME: usize = 1024;

/// Names `object` in `metadata`.
pub(super) fn name_object(metadata: &mut MetadataMap, object: &ObjectCall) {
    let value = serde_json::json!([object.class, object.id, object.method]);
    let bytes = value.to_string().into_bytes();
    metadata.insert_bin(OBJECT_METADATA, MetadataValue::from_bytes(&bytes));
}

/// The object a call names, if it names one; why not, when its entry is
/// not one.
pub fn object_of(metadata: &MetadataMap) -> Result<Option<ObjectCall>, String> {
    let Some(value) = metadata.get_bin(OBJECT_METADATA) else {
        return Ok(None);
    };
    let bytes = value
        .to_bytes()
        .map_err(|_| format!("{OBJECT_METADATA} is not base64"))?;
    let (class, id, method): (String, String, Option<String>) = serde_json::from_slice(&bytes)
        .map_err(|_| format!("{OBJECT_METADATA} is not [class, id, method]"))?;
    let name_ok = |name: &str| !name.is_empty() && name.len() <= MAX_NAME;
    if !name_ok(&class) || !method.as_deref().is_none_or(name_ok) {
        return Err(format!("{OBJECT_METADATA}: bad class or method name"));
    }
    if class == isolane_bindings::D1_CLASS {
        // A D1 database's call: its id is the database's name.
        if !isolane_worker::d1::is_database_name(&id) {
            return Err(format!("{OBJECT_METADATA}: not a D1 database name"));
        }
    } else if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("{OBJECT_METADATA}: an id is 64 hex digits"));
    }
    Ok(Some(ObjectCall { class, id, method }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_round_trips_and_bad_entries_are_refused() {
        let object = ObjectCall {
            class: "Counter".to_owned(),
            id: "ab".repeat(32),
            method: Some("incrément".to_owned()),
        };
        let mut metadata = MetadataMap::new();
        assert_eq!(object_of(&metadata), Ok(None));
        name_object(&mut metadata, &object);
        assert_eq!(object_of(&metadata), Ok(Some(object)));
        let database = ObjectCall {
            class: isolane_bindings::D1_CLASS.to_owned(),
            id: "orders".to_owned(),
            method: Some("query".to_owned()),
        };
        name_object(&mut metadata, &database);
        assert_eq!(object_of(&metadata), Ok(Some(database)));
        for bad in [
            r#"["Counter","xyz",null]"#,
            r##"["#d1","a/b","query"]"##,
            r##"["#d1","abababababababababababababababababababababababababababababababab/x",null]"##,
            r#"["","abababababababababababababababababababababababababababababababab",null]"#,
            r#"{"class":"Counter"}"#,
            "not json",
        ] {
            let mut metadata = MetadataMap::new();
            metadata.insert_bin(OBJECT_METADATA, MetadataValue::from_bytes(bad.as_bytes()));
            assert!(object_of(&metadata).is_err(), "{bad}");
        }
    }
}
