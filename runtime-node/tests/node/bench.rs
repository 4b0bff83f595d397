//! Listener modes compared.
