//! A Worker's key: its namespace and name, the one way every part names a
//! Worker (`namespace/name` when printed).

use std::fmt;

/// A Worker by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkerKey {
    /// The Worker's namespace.
    pub namespace: String,
    /// The Worker's name.
    pub name: String,
}

impl WorkerKey {
    /// A key from its parts.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for WorkerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}
