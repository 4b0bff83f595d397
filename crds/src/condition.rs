//! The condition types a Worker reports, and their status values.

use std::fmt;

/// A condition type in `Worker.status.conditions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionType {
    /// The Worker's bundle is written and it can serve requests.
    Ready,
    /// The script was resolved and parses.
    ScriptValid,
    /// Every route of the Worker is admitted (none conflicts with an older Worker).
    RoutesAdmitted,
    /// Every service binding names a Worker that exists in the Worker's
    /// namespace (a binding to one not made yet is admitted and reported here).
    ServicesBound,
}

impl ConditionType {
    /// Every condition type, in the order they are reported.
    pub const ALL: [ConditionType; Self::COUNT] = [
        Self::Ready,
        Self::ScriptValid,
        Self::RoutesAdmitted,
        Self::ServicesBound,
    ];

    /// How many condition types there are.
    pub const COUNT: usize = 4;

    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "Ready",
            Self::ScriptValid => "ScriptValid",
            Self::RoutesAdmitted => "RoutesAdmitted",
            Self::ServicesBound => "ServicesBound",
        }
    }
}

impl fmt::Display for ConditionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The status of a condition, as Kubernetes spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold; `reason` and `message` say why.
    False,
    /// Not known yet.
    Unknown,
}

impl ConditionStatus {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> Self {
        if value { Self::True } else { Self::False }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
