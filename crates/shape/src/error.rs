use std::path::PathBuf;

/// Why the workspace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse { path: PathBuf, source: syn::Error },
    #[error("running cargo metadata: {0}")]
    Metadata(String),
}
