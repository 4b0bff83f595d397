//! `node:crypto`'s `X509Certificate`: a certificate (PEM or DER) read by the
//! `x509-parser` crate and described as Node prints it (OpenSSL's
//! formats: `C=US\nCN=name` subjects with RFC 2253 escapes, `DNS:a, IP
//! Address:1.2.3.4` alternative names, `Nov 24 21:05:40 2026 GMT` times,
//! and its `checkHost`/`checkEmail`/`checkIP` with OpenSSL's matching rules
//! (`X509_check_host` and friends). The signature is checked, and the
//! fingerprints hashed, in JavaScript by `crypto.verify` and
//! `crypto.createHash` over the parts this returns, so signatures and hashes
//! have one implementation each.

use std::fmt::Write as _;
use std::net::IpAddr;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;
use x509_parser::x509::{AttributeTypeAndValue, X509Name};

use isolane_engine::api::HostResult;
use isolane_engine::api::{js_string, u8_array};
use isolane_web::crypto::error::{CryptoError, Result};
use isolane_web::crypto::subtle::bytes_arg;

/// Largest certificate read (a certificate of an RSA-4096 key with many
/// names is a few KiB; chains are read one certificate at a time).
pub(super) const MAX_CERTIFICATE: usize = 256 * 1024;

/// Short names OpenSSL prints for attribute types (`XN_FLAG_FN_SN`); any
/// other type is printed as its dotted OID.
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.4", "SN"),
    ("2.5.4.5", "serialNumber"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "street"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.12", "title"),
    ("2.5.4.13", "description"),
    ("2.5.4.15", "businessCategory"),
    ("2.5.4.17", "postalCode"),
    ("2.5.4.41", "name"),
    ("2.5.4.42", "GN"),
    ("2.5.4.43", "initials"),
    ("2.5.4.44", "generationQualifier"),
    ("2.5.4.46", "dnQualifier"),
    ("2.5.4.65", "pseudonym"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("1.2.840.113549.1.9.1", "emailAddress"),
    ("1.3.6.1.4.1.311.60.2.1.3", "jurisdictionC"),
    ("1.3.6.1.4.1.311.60.2.1.2", "jurisdictionST"),
    ("1.3.6.1.4.1.311.60.2.1.1", "jurisdictionL"),
];

const CN: &str = "2.5.4.3";
const EMAIL: &str = "1.2.840.113549.1.9.1";
const OCSP: &str = "1.3.6.1.5.5.7.48.1";
const CA_ISSUERS: &str = "1.3.6.1.5.5.7.48.2";
const EXTENDED_KEY_USAGE: &str = "2.5.29.37";

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The certificate's DER: `data` itself, or the first `CERTIFICATE` block
/// of PEM text.
pub(super) fn der_of(data: &[u8]) -> Result<Vec<u8>> {
    if data.len() > MAX_CERTIFICATE {
        return Err(CryptoError::data("The certificate is too large"));
    }
    if data.first() == Some(&0x30) {
        return Ok(data.to_vec());
    }
    let text = std::str::from_utf8(data)
        .map_err(|_| CryptoError::data("Invalid certificate: neither DER nor PEM"))?;
    let start = text
        .find("-----BEGIN CERTIFICATE-----")
        .ok_or_else(|| CryptoError::data("Invalid certificate: no PEM start line"))?;
    let end_marker = "-----END CERTIFICATE-----";
    let end = text[start..]
        .find(end_marker)
        .map(|at| start + at + end_marker.len())
        .ok_or_else(|| CryptoError::data("Invalid certificate: no PEM end line"))?;
    let (label, der) = pem_rfc7468::decode_vec(&text.as_bytes()[start..end])
        .map_err(|e| CryptoError::data(format!("Invalid certificate PEM: {e}")))?;
    if label != "CERTIFICATE" {
        return Err(CryptoError::data("Invalid certificate PEM"));
    }
    Ok(der)
}

/// A parsed certificate, borrowed from its DER.
pub(super) fn parse(der: &[u8]) -> Result<X509Certificate<'_>> {
    match X509Certificate::from_der(der) {
        Ok(([], cert)) => Ok(cert),
        Ok(_) => Err(CryptoError::data(
            "Invalid certificate: bytes after its end",
        )),
        Err(e) => Err(CryptoError::data(format!("Invalid certificate: {e}"))),
    }
}

/// What `X509Certificate` shows of a certificate, as JSON (the bytes go
/// apart: see the host function).
pub(super) fn describe(cert: &X509Certificate<'_>) -> serde_json::Value {
    let validity = cert.validity();
    let (hash, key) = signature_algorithm(cert);
    serde_json::json!({
        "subject": name_lines(cert.subject()),
        "issuer": name_lines(cert.issuer()),
        "subjectAltName": subject_alt_name(cert),
        "infoAccess": info_access(cert),
        "validFrom": openssl_time(&validity.not_before),
        "validTo": openssl_time(&validity.not_after),
        "validFromMs": validity.not_before.timestamp().saturating_mul(1000),
        "validToMs": validity.not_after.timestamp().saturating_mul(1000),
        "serialNumber": serial_hex(cert.raw_serial()),
        "ca": cert.is_ca(),
        "keyUsage": extended_key_usage(cert),
        "signatureHash": hash,
        "signatureKey": key,
    })
}

/// The issuer/subject link of `cert` to `issuer` (`X509_check_issued`):
/// names equal, the authority key identifier (when both have one) equal,
/// and the issuer's key usage (when it has one) allows signing certificates.
pub(super) fn issued_by(cert: &X509Certificate<'_>, issuer: &X509Certificate<'_>) -> bool {
    if cert.issuer().as_raw() != issuer.subject().as_raw() {
        return false;
    }
    let mut authority = None;
    let mut subject_key = None;
    for ext in cert.extensions() {
        if let ParsedExtension::AuthorityKeyIdentifier(aki) = ext.parsed_extension() {
            authority = aki.key_identifier.as_ref().map(|k| k.0);
        }
    }
    for ext in issuer.extensions() {
        if let ParsedExtension::SubjectKeyIdentifier(ski) = ext.parsed_extension() {
            subject_key = Some(ski.0);
        }
    }
    if let (Some(a), Some(s)) = (authority, subject_key)
        && a != s
    {
        return false;
    }
    match issuer.key_usage() {
        Ok(Some(usage)) => usage.value.key_cert_sign(),
        Ok(None) => true,
        Err(_) => false,
    }
}

/// The hash (Node's name) and key type of the signature's algorithm;
/// `None` for one `verify` cannot check (RSA-PSS with parameters, ...).
fn signature_algorithm(cert: &X509Certificate<'_>) -> (Option<&'static str>, Option<&'static str>) {
    match cert.signature_algorithm.algorithm.to_id_string().as_str() {
        "1.2.840.113549.1.1.5" => (Some("sha1"), Some("rsa")),
        "1.2.840.113549.1.1.11" => (Some("sha256"), Some("rsa")),
        "1.2.840.113549.1.1.12" => (Some("sha384"), Some("rsa")),
        "1.2.840.113549.1.1.13" => (Some("sha512"), Some("rsa")),
        "1.2.840.10045.4.1" => (Some("sha1"), Some("ec")),
        "1.2.840.10045.4.3.2" => (Some("sha256"), Some("ec")),
        "1.2.840.10045.4.3.3" => (Some("sha384"), Some("ec")),
        "1.2.840.10045.4.3.4" => (Some("sha512"), Some("ec")),
        "1.3.101.112" => (None, Some("ed25519")),
        _ => (None, None),
    }
}

/// A name as Node's `subject`: one `type=value` a line, in the
/// certificate's order; the values of a multi-valued RDN joined by ` + `.
fn name_lines(name: &X509Name<'_>) -> String {
    name.iter_rdn()
        .map(|rdn| {
            rdn.iter()
                .map(|attr| format!("{}={}", short_name(attr), escape_2253(&attr_text(attr))))
                .collect::<Vec<_>>()
                .join(" + ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn short_name(attr: &AttributeTypeAndValue<'_>) -> String {
    let oid = attr.attr_type().to_id_string();
    SHORT_NAMES
        .iter()
        .find(|(id, _)| *id == oid)
        .map_or(oid, |(_, short)| (*short).to_owned())
}

/// An attribute's value as text: UTF-8 from the string types (BMPString
/// from UTF-16, T61String read as Latin-1), else the bytes read lossily.
fn attr_text(attr: &AttributeTypeAndValue<'_>) -> String {
    use x509_parser::asn1_rs::Tag;
    let bytes = attr.as_slice();
    match attr.attr_value().tag() {
        Tag::BmpString => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            String::from_utf16_lossy(&units)
        }
        Tag::T61String => bytes.iter().map(|&b| char::from(b)).collect(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// RFC 2253's escapes as OpenSSL writes them (`ASN1_STRFLGS_ESC_2253 |
/// ASN1_STRFLGS_ESC_CTRL`): `,+"\<>;` after a backslash, a leading `#` or
/// space and a trailing space too; control characters as `\XX`.
fn escape_2253(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let last = value.chars().count().saturating_sub(1);
    for (i, c) in value.chars().enumerate() {
        match c {
            ',' | '+' | '"' | '\\' | '<' | '>' | ';' => {
                out.push('\\');
                out.push(c);
            }
            '#' if i == 0 => out.push_str("\\#"),
            ' ' if i == 0 || i == last => out.push_str("\\ "),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// One general name as Node prints it (`DNS:`, `IP Address:`, `email:`,
/// `URI:`); a name with a character that would make the list ambiguous is
/// written as a JSON string, as Node does since its CVE-2021-44532 fix.
fn general_name(name: &GeneralName<'_>) -> String {
    let safe = |prefix: &str, value: &str| {
        let unsafe_char = value
            .chars()
            .any(|c| matches!(c, ',' | '"' | '\\' | '\'') || (c as u32) < 0x20 || c as u32 == 0x7f);
        if unsafe_char {
            format!("{prefix}:{}", serde_json::Value::from(value))
        } else {
            format!("{prefix}:{value}")
        }
    };
    match name {
        GeneralName::DNSName(v) => safe("DNS", v),
        GeneralName::RFC822Name(v) => safe("email", v),
        GeneralName::URI(v) => safe("URI", v),
        GeneralName::IPAddress(bytes) => format!("IP Address:{}", ip_text(bytes)),
        GeneralName::DirectoryName(n) => safe("DirName", &name_lines(n).replace('\n', ",")),
        GeneralName::RegisteredID(oid) => format!("Registered ID:{}", oid.to_id_string()),
        _ => "othername:<unsupported>".to_owned(),
    }
}

/// An IP address as OpenSSL prints it: IPv6 as eight uncompressed groups
/// of uppercase hex.
fn ip_text(bytes: &[u8]) -> String {
    match bytes.len() {
        4 => format!("{}.{}.{}.{}", bytes[0], bytes[1], bytes[2], bytes[3]),
        16 => bytes
            .chunks_exact(2)
            .map(|pair| format!("{:X}", u16::from_be_bytes([pair[0], pair[1]])))
            .collect::<Vec<_>>()
            .join(":"),
        _ => "<invalid>".to_owned(),
    }
}

fn alt_names<'a>(cert: &'a X509Certificate<'_>) -> Vec<&'a GeneralName<'a>> {
    match cert.subject_alternative_name() {
        Ok(Some(san)) => san.value.general_names.iter().collect(),
        _ => Vec::new(),
    }
}

fn subject_alt_name(cert: &X509Certificate<'_>) -> Option<String> {
    let names = alt_names(cert);
    (!names.is_empty()).then(|| {
        names
            .into_iter()
            .map(general_name)
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn info_access(cert: &X509Certificate<'_>) -> Option<String> {
    let lines: Vec<String> = cert
        .extensions()
        .iter()
        .filter_map(|ext| match ext.parsed_extension() {
            ParsedExtension::AuthorityInfoAccess(aia) => Some(aia),
            _ => None,
        })
        .flat_map(|aia| aia.iter())
        .map(|desc| {
            let method = desc.access_method.to_id_string();
            let method = match method.as_str() {
                OCSP => "OCSP".to_owned(),
                CA_ISSUERS => "CA Issuers".to_owned(),
                _ => method,
            };
            format!("{method} - {}", general_name(&desc.access_location))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The extended key usages' OIDs, in the certificate's order (Node's
/// `keyUsage`).
fn extended_key_usage(cert: &X509Certificate<'_>) -> Option<Vec<String>> {
    use x509_parser::asn1_rs::{FromDer as _, Oid};
    let ext = cert
        .extensions()
        .iter()
        .find(|ext| ext.oid.to_id_string() == EXTENDED_KEY_USAGE)?;
    let (_, oids) = <Vec<Oid<'_>>>::from_der(ext.value).ok()?;
    Some(oids.iter().map(Oid::to_id_string).collect())
}

/// `Nov 24 21:05:40 2026 GMT` (OpenSSL's `ASN1_TIME_print`; the day padded
/// with a space).
fn openssl_time(time: &x509_parser::time::ASN1Time) -> String {
    let time = time.to_datetime();
    let month = MONTHS
        .get(usize::from(u8::from(time.month())).saturating_sub(1))
        .copied()
        .unwrap_or("???");
    format!(
        "{month} {:2} {:02}:{:02}:{:02} {} GMT",
        time.day(),
        time.hour(),
        time.minute(),
        time.second(),
        time.year()
    )
}

/// The serial number in uppercase hex without leading zero bytes
/// (`BN_bn2hex`).
fn serial_hex(raw: &[u8]) -> String {
    let start = raw.iter().position(|&b| b != 0).unwrap_or(raw.len());
    let hex = hex::encode_upper(&raw[start..]);
    if hex.is_empty() { "0".to_owned() } else { hex }
}

// === checkHost, checkEmail, checkIP ===

/// When the subject's names count (`options.subject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Subject {
    /// Only when the certificate has no alternative name of the kind.
    Default,
    Always,
    Never,
}

/// `checkHost`'s options (OpenSSL's `X509_CHECK_FLAG_*`).
#[derive(Clone, Copy, Debug)]
pub(super) struct HostRules {
    pub subject: Subject,
    pub wildcards: bool,
    pub partial_wildcards: bool,
    pub multi_label_wildcards: bool,
    pub single_label_subdomains: bool,
}

fn subject_values(cert: &X509Certificate<'_>, oid: &str) -> Vec<String> {
    cert.subject()
        .iter_attributes()
        .filter(|attr| attr.attr_type().to_id_string() == oid)
        .map(attr_text)
        .collect()
}

/// The certificate's name that `host` matches (a DNS alternative name, or
/// the subject's common name as `rules.subject` says), or `None`.
pub(super) fn check_host(
    cert: &X509Certificate<'_>,
    host: &str,
    rules: HostRules,
) -> Option<String> {
    let dns: Vec<&str> = alt_names(cert)
        .into_iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(v) => Some(*v),
            _ => None,
        })
        .collect();
    if let Some(found) = dns
        .iter()
        .find(|pattern| host_matches(pattern, host, rules))
    {
        return Some((*found).to_owned());
    }
    let use_subject = match rules.subject {
        Subject::Always => true,
        Subject::Never => false,
        Subject::Default => dns.is_empty(),
    };
    if !use_subject {
        return None;
    }
    subject_values(cert, CN)
        .into_iter()
        .find(|cn| host_matches(cn, host, rules))
}

/// OpenSSL's host match: ASCII case-insensitive; a wildcard only in the
/// leftmost label of a name of at least three labels, standing for one
/// label (several with `multi_label_wildcards`), alone in its label unless
/// `partial_wildcards`, and never in an IDNA label.
fn host_matches(pattern: &str, host: &str, rules: HostRules) -> bool {
    if pattern.eq_ignore_ascii_case(host) {
        return true;
    }
    if rules.single_label_subdomains
        && let Some(rest) = pattern.strip_prefix('.')
        && host.len() > rest.len()
        && host
            .to_ascii_lowercase()
            .ends_with(&format!(".{}", rest.to_ascii_lowercase()))
    {
        return true;
    }
    if !rules.wildcards {
        return false;
    }
    let Some((first, rest)) = pattern.split_once('.') else {
        return false;
    };
    let Some(star) = first.find('*') else {
        return false;
    };
    if first.matches('*').count() != 1
        || rest.contains('*')
        || rest.split('.').count() < 2
        || (first != "*"
            && (!rules.partial_wildcards || first.to_ascii_lowercase().starts_with("xn--")))
    {
        return false;
    }
    let (prefix, suffix) = (&first[..star], &first[star + 1..]);
    let Some((head, host_rest)) = split_host(host, rest, rules.multi_label_wildcards) else {
        return false;
    };
    if !host_rest.eq_ignore_ascii_case(rest) || head.is_empty() {
        return false;
    }
    let lower = head.to_ascii_lowercase();
    if prefix.is_empty() && suffix.is_empty() && lower.starts_with("xn--") {
        return false;
    }
    lower.len() >= prefix.len() + suffix.len()
        && lower.starts_with(&prefix.to_ascii_lowercase())
        && lower.ends_with(&suffix.to_ascii_lowercase())
}

/// `host` as the labels a wildcard stands for and the rest, which must be
/// as long as `rest` (one label, or several when `multi`).
fn split_host<'h>(host: &'h str, rest: &str, multi: bool) -> Option<(&'h str, &'h str)> {
    if multi {
        let cut = host.len().checked_sub(rest.len() + 1)?;
        let (head, tail) = (host.get(..cut)?, host.get(cut..)?);
        Some((head, tail.strip_prefix('.')?))
    } else {
        let (head, tail) = host.split_once('.')?;
        (!head.is_empty()).then_some((head, tail))
    }
}

/// Whether `email` is one of the certificate's (an `email:` alternative
/// name, or the subject's `emailAddress` as `subject` says): the local part
/// exactly, the domain in any case.
pub(super) fn check_email(cert: &X509Certificate<'_>, email: &str, subject: Subject) -> bool {
    let emails: Vec<&str> = alt_names(cert)
        .into_iter()
        .filter_map(|name| match name {
            GeneralName::RFC822Name(v) => Some(*v),
            _ => None,
        })
        .collect();
    if emails.iter().any(|e| email_matches(e, email)) {
        return true;
    }
    let use_subject = match subject {
        Subject::Always => true,
        Subject::Never => false,
        Subject::Default => emails.is_empty(),
    };
    use_subject
        && subject_values(cert, EMAIL)
            .iter()
            .any(|e| email_matches(e, email))
}

fn email_matches(theirs: &str, ours: &str) -> bool {
    match (theirs.rsplit_once('@'), ours.rsplit_once('@')) {
        (Some((tl, td)), Some((ol, od))) => tl == ol && td.eq_ignore_ascii_case(od),
        _ => false,
    }
}

/// Whether `ip` is one of the certificate's IP alternative names. `None`
/// when `ip` is no IP address.
pub(super) fn check_ip(cert: &X509Certificate<'_>, ip: &str) -> Option<bool> {
    let ip: IpAddr = ip.parse().ok()?;
    let bytes = match ip {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    };
    Some(
        alt_names(cert).into_iter().any(
            |name| matches!(name, GeneralName::IPAddress(theirs) if *theirs == bytes.as_slice()),
        ),
    )
}

// === host functions ===

type Answer<'s> = HostResult<Option<v8::Local<'s, v8::Value>>>;

host_fn! {
/// `nodeX509Parse(data)` → `[description, raw, spki, tbs, signature]`:
/// `data` a certificate in PEM or DER (Uint8Array); `description` what
/// `describe` writes (V8's JSON parser reads it: nothing a Worker patched);
/// the DER of the certificate, of its public key, of the signed part, and
/// the signature's bytes, each a Uint8Array charged to the Worker's memory.
/// Throws a DataError for anything that is not one certificate.
pub(super) fn x509_parse<'s>(
    scope,
    data: v8::Local<'s, v8::Value>,
) -> Answer<'s> {
    let der = der_of(&bytes_arg(data, "certificate")?)?;
    let cert = parse(&der)?;
    let description = describe(&cert).to_string();
    let parts = [
        cert.public_key().raw.to_vec(),
        cert.tbs_certificate.as_ref().to_vec(),
        cert.signature_value.data.to_vec(),
    ];
    let Some(text) = v8::String::new(scope, &description) else {
        return Ok(None);
    };
    let Some(description) = v8::json::parse(scope, text) else {
        return Ok(None);
    };
    let mut values = vec![description];
    for bytes in std::iter::once(der.clone()).chain(parts) {
        let Some(array) = u8_array(scope, bytes) else {
            return Ok(None);
        };
        values.push(array.into());
    }
    Ok(Some(v8::Array::new_with_elements(scope, &values).into()))
}
}

host_fn! {
/// `nodeX509Check(raw, kind, name, subject, flags)`: `kind` `host` → the
/// certificate's name that `name` matched, or undefined; `email` and `ip`
/// → whether it matched (`ip`: undefined when `name` is no IP address).
/// `subject` `default`, `always` or `never`; `flags` bits 1 wildcards, 2
/// partial wildcards, 4 multi-label wildcards, 8 single-label subdomains.
pub(super) fn x509_check<'s>(
    scope,
    raw: v8::Local<'s, v8::Value>,
    kind: String,
    name: String,
    subject: String,
    flags: u32,
) -> Answer<'s> {
    let der = bytes_arg(raw, "certificate")?;
    let cert = parse(&der)?;
    let subject = match subject.as_str() {
        "always" => Subject::Always,
        "never" => Subject::Never,
        _ => Subject::Default,
    };
    let answer = match kind.as_str() {
        "host" => {
            let rules = HostRules {
                subject,
                wildcards: flags & 1 != 0,
                partial_wildcards: flags & 2 != 0,
                multi_label_wildcards: flags & 4 != 0,
                single_label_subdomains: flags & 8 != 0,
            };
            return Ok(match check_host(&cert, &name, rules) {
                Some(found) => js_string(scope, &found),
                None => Some(v8::undefined(scope).into()),
            });
        }
        "email" => Some(check_email(&cert, &name, subject)),
        _ => check_ip(&cert, &name),
    };
    Ok(Some(match answer {
        Some(matched) => v8::Boolean::new(scope, matched).into(),
        None => v8::undefined(scope).into(),
    }))
}
}

host_fn! {
/// `nodeX509Issued(raw, issuerRaw)` → whether the second certificate
/// issued the first (`X509Certificate.checkIssued`).
pub(super) fn x509_issued<'s>(
    scope,
    raw: v8::Local<'s, v8::Value>,
    issuer: v8::Local<'s, v8::Value>,
) -> Answer<'s> {
    let (der, issuer_der) = (bytes_arg(raw, "certificate")?, bytes_arg(issuer, "issuer")?);
    let issued = issued_by(&parse(&der)?, &parse(&issuer_der)?);
    Ok(Some(v8::Boolean::new(scope, issued).into()))
}
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: HostRules = HostRules {
        subject: Subject::Default,
        wildcards: true,
        partial_wildcards: true,
        multi_label_wildcards: false,
        single_label_subdomains: false,
    };

    #[test]
    fn wildcards_stand_for_one_leftmost_label() {
        assert!(host_matches(
            "*.api.example.com",
            "x.api.example.com",
            RULES
        ));
        assert!(host_matches(
            "*.api.example.com",
            "X.API.example.com",
            RULES
        ));
        assert!(!host_matches(
            "*.api.example.com",
            "a.b.api.example.com",
            RULES
        ));
        assert!(!host_matches("*.api.example.com", "api.example.com", RULES));
        assert!(!host_matches("*.com", "example.com", RULES));
        assert!(host_matches("f*.example.com", "foo.example.com", RULES));
        assert!(!host_matches("f*.example.com", "bar.example.com", RULES));
        let strict = HostRules {
            partial_wildcards: false,
            ..RULES
        };
        assert!(!host_matches("f*.example.com", "foo.example.com", strict));
        let multi = HostRules {
            multi_label_wildcards: true,
            ..RULES
        };
        assert!(host_matches(
            "*.api.example.com",
            "a.b.api.example.com",
            multi
        ));
        let none = HostRules {
            wildcards: false,
            ..RULES
        };
        assert!(!host_matches(
            "*.api.example.com",
            "x.api.example.com",
            none
        ));
    }

    #[test]
    fn names_escape_as_rfc_2253() {
        assert_eq!(escape_2253("Isolane Test, Inc."), "Isolane Test\\, Inc.");
        assert_eq!(escape_2253(" #a+b "), "\\ #a\\+b\\ ");
        assert_eq!(escape_2253("#x"), "\\#x");
        assert_eq!(escape_2253("a\nb"), "a\\0Ab");
    }

    #[test]
    fn serials_and_addresses_print_as_openssl() {
        assert_eq!(serial_hex(&[0x00, 0xAB, 0x01]), "AB01");
        assert_eq!(serial_hex(&[0x01, 0x02]), "0102");
        assert_eq!(serial_hex(&[0x00]), "0");
        let mut v6 = [0u8; 16];
        v6[15] = 1;
        assert_eq!(ip_text(&v6), "0:0:0:0:0:0:0:1");
    }
}
