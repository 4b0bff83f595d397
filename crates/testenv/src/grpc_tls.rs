//! The router↔node gRPC test PKI, and the flags that hand it to a node or a
//! router started by a test.

use std::path::Path;

use crate::GrpcPkiFiles;

/// The router↔node test PKI of `dir` (in `<dir>/grpc-pki/`), written on
/// first use: every node and router started with the same `dir` share its CA.
///
/// # Panics
/// When the files cannot be written.
pub fn grpc_pki(dir: &Path) -> GrpcPkiFiles {
    let pki_dir = dir.join("grpc-pki");
    if let Err(error) = std::fs::create_dir_all(&pki_dir) {
        panic!("cannot create {}: {error}", pki_dir.display());
    }
    let written = crate::GrpcPkiFiles::in_dir(&pki_dir);
    if written.ca_cert.exists() {
        return written;
    }
    crate::write_grpc_pki(&pki_dir)
        .unwrap_or_else(|error| panic!("cannot write the gRPC test PKI: {error}"))
}

/// A node's `--grpc-tls-*` flags for the PKI of `dir` ([`grpc_pki`]).
pub fn node_tls_args(dir: &Path) -> Vec<String> {
    let pki = grpc_pki(dir);
    tls_args(&pki.node_cert, &pki.node_key, &pki.ca_cert)
}

/// The router's `--grpc-tls-*` flags for the PKI of `dir` ([`grpc_pki`]).
pub fn router_tls_args(dir: &Path) -> Vec<String> {
    let pki = grpc_pki(dir);
    tls_args(&pki.router_cert, &pki.router_key, &pki.ca_cert)
}

/// `--grpc-tls-cert/key/ca` flags for these files.
fn tls_args(cert: &Path, key: &Path, ca: &Path) -> Vec<String> {
    [
        ("--grpc-tls-cert", cert),
        ("--grpc-tls-key", key),
        ("--grpc-tls-ca", ca),
    ]
    .into_iter()
    .flat_map(|(flag, path)| [flag.to_owned(), path.display().to_string()])
    .collect()
}
