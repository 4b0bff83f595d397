//! A service call's own description (`isolane-calltree`'s `call`).
pub use isolane_calltree::call::*;
