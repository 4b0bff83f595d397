//! The workspace's shape, read from its source: how long files and functions
//! are, which modules of a crate use which, and where a circle closes.
//!
//! The tests in `tests/shape.rs` hold the project to its rules with these
//! readers: no source file over 1,000 lines, few product functions of 60
//! lines or more, no import circle inside any crate or module, one implementation of
//! the helpers tests share. Rust is read with `syn`, not by scanning text.

mod circles;
mod crates_used;
mod error;
mod functions;
mod modules;
mod workspace;

pub use circles::circles;
pub use crates_used::crates_used;
pub use error::Error;
pub use functions::{Function, functions};
pub use modules::{Graph, child_graph, folder_modules, module_graph};
pub use workspace::{Member, Workspace, files_with, rust_files};
