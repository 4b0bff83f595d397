//! What a failed call's gRPC status says about the connection it took.

/// Whether the call failed because the node refused the connection (an
/// `io::Error` of kind `ConnectionRefused` in the status's source chain,
/// which tonic put there): the call was never sent.
pub fn connection_refused(status: &tonic::Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = error.source();
    }
    false
}
