//! The shapes of Kubernetes' DNS names (RFC 1123), which Worker, namespace
//! and queue names take: one definition of a label, used by each.

/// An RFC 1123 label of any length: lowercase letters, digits and `-`,
/// not empty, starting and ending with a letter or digit.
fn is_label_shaped(label: &str) -> bool {
    let bytes = label.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first() != Some(&b'-')
        && bytes.last() != Some(&b'-')
}

/// An RFC 1123 label (a namespace's or a queue's name): at most 63
/// characters.
pub fn is_dns_label(name: &str) -> bool {
    name.len() <= 63 && is_label_shaped(name)
}

/// An RFC 1123 subdomain (a Kubernetes object's name): dot-separated
/// labels, at most 253 characters in all.
pub fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_label_shaped)
}
