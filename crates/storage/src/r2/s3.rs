//! A cluster's buckets: objects in one bucket of an S3-compatible store
//! (docs/r2.md, "On a cluster"), signed with SigV4 (`rusty-s3`) and sent on
//! hyper's client from a small runtime of the store's own.
//!
//! Layout: every R2 bucket of every Kubernetes namespace lives in the one
//! S3 bucket [`S3Settings::bucket`], under `<prefix><namespace>/<bucket>/`
//! (the names are checked: a namespace is a DNS label, a bucket R2's
//! pattern, neither has a `/`). An R2 key is stored escaped after that
//! prefix ([`escape`]: no `/` of the key is left), so no key (`..`, `/x`, `a//b`, a
//! NUL) means a path to the store and none leaves its prefix; the escape
//! keeps byte order and prefixes, so a `list` by prefix and from a key is
//! one ranged S3 listing. S3 keys are at most 1024 bytes: a key whose
//! escape does not fit after the prefix is refused as too long. R2's metadata
//! (`httpMetadata`, `customMetadata`, checksums, storage class) is one
//! `x-amz-meta-r2` header, base64 of JSON (R2's keys are case-sensitive
//! and may hold any character; S3's metadata names do not); `Content-Type`
//! and the other `Content-*` are also set as S3's own headers.
//!
//! Bodies stream: a put sends the node's temporary file ([`R2Upload`]) as
//! one S3 put (R2's largest object, 5 GiB less 5 MiB, is within S3's
//! single put), a part as one `UploadPart`; a read is one ranged GET read a
//! chunk at a time, pinned to the object's etag (`If-Match`), so a put
//! meanwhile ends the read rather than mixing two objects.
//!
//! What S3 cannot say atomically is checked before: a conditional put
//! (`onlyIf`) reads the object's head first, so two puts racing may both
//! pass. An object's `version` is derived from its etag and upload time
//! (seconds: S3's `Last-Modified`).

#[cfg(feature = "cli")]
mod args;
mod http;
mod list;
mod read;

#[cfg(feature = "cli")]
pub use args::R2S3Args;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use base64ct::Encoding;
use md5::Digest;
use serde::{Deserialize, Serialize};

use super::upload::{discard, prepare_put};
use super::{
    R2Bucket, R2Conditional, R2Error, R2List, R2ListOptions, R2Object, R2PutOptions, R2Read,
    R2Upload, check_key, check_metadata, limits, random_id,
};
use http::{Request, S3Client};

/// Where a cluster's buckets are (the node's `--r2-s3-*` flags).
#[derive(Clone, Debug)]
pub struct S3Settings {
    /// `http(s)://host:port` of the S3 API.
    pub endpoint: String,
    pub region: String,
    /// The one S3 bucket holding every namespace's R2 buckets.
    pub bucket: String,
    /// Put before `<namespace>/<bucket>/` (empty, or ending in `/`).
    pub prefix: String,
    pub access_key: String,
    pub secret_key: String,
    /// Where bodies being written wait (a local folder of the node's).
    pub temp_dir: PathBuf,
}

/// The S3 store of a [`crate::Store`]: one client, shared by its buckets.
#[derive(Debug)]
pub struct S3Store {
    client: S3Client,
    settings: S3Settings,
    /// Set once the S3 bucket was found or made.
    bucket_ready: OnceLock<()>,
}

impl S3Store {
    pub fn new(settings: S3Settings) -> Result<Self, R2Error> {
        if !(settings.prefix.is_empty() || settings.prefix.ends_with('/')) {
            return Err(R2Error::Internal(format!(
                "the S3 prefix must be empty or end in '/': {:?}",
                settings.prefix
            )));
        }
        std::fs::create_dir_all(&settings.temp_dir)?;
        Ok(Self {
            client: S3Client::new(&settings)?,
            settings,
            bucket_ready: OnceLock::new(),
        })
    }

    /// The S3 bucket, made when it is not there yet.
    pub fn ensure_bucket(&self) -> Result<(), R2Error> {
        if self.bucket_ready.get().is_some() {
            return Ok(());
        }
        let head = self
            .client
            .bucket()
            .head_bucket(Some(self.client.credentials()));
        let found = self.client.call(Request::new(&head))?;
        if found.status == 404 {
            let create = self
                .client
                .bucket()
                .create_bucket(self.client.credentials());
            self.client.call(Request::new(&create))?.ok()?;
        } else {
            found.ok()?;
        }
        let _ = self.bucket_ready.set(());
        Ok(())
    }
}

/// `true` for a DNS label or R2 bucket name (lowercase letters, digits,
/// `-`): one path component.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The escape of a key's bytes below `0`: `!`, then the byte plus `0x30`.
const ESCAPE: char = '!';
/// Stored keys are cut into segments of about this many bytes (`+/`
/// between): stores on a file system (SeaweedFS's filer, MinIO) take at
/// most 255 bytes between two `/`.
const SEGMENT: usize = 200;
/// What ends every segment but the last.
const CUT: &str = "+/";

/// `key` as it is stored after its bucket's prefix: every byte below `0`
/// (`/`, `.`, `-`, space, controls, `!` itself …) as `!` and the byte plus
/// 0x30, `[` and `\\` as `[0` and `[1`, the others as they are, and `+/` once a segment has
/// [`SEGMENT`] bytes (`+` and `/` are otherwise always escaped). So no key
/// is a path to the store (`..`, `a//b`), a segment is never empty, `.`
/// or `..`, and a file's name is never a folder's (`a` and `a/b` are both
/// keys); and the order and prefixes of keys are kept (an escaped byte
/// sorts below every kept one, as it did; cuts depend on what comes before
/// only), so S3 lists the keys in R2's order from any key on.
fn escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 8);
    let mut segment = 0;
    for c in key.chars() {
        if segment >= SEGMENT {
            out.push_str(CUT);
            segment = 0;
        }
        match u8::try_from(c) {
            Ok(b) if b < b'0' => {
                out.push(ESCAPE);
                out.push(char::from(b + b'0'));
                segment += 2;
            }
            // A store may read `\\` as `/` (SeaweedFS does): `[` and `\\`
            // are `[0` and `[1`, in their order still.
            Ok(b @ (b'[' | b'\\')) => {
                out.push('[');
                out.push(if b == b'[' { '0' } else { '1' });
                segment += 2;
            }
            _ => {
                out.push(c);
                segment += c.len_utf8();
            }
        }
    }
    out
}

/// The key [`escape`] made `stored` from, if it made it.
fn unescape(stored: &str) -> Option<String> {
    let joined = stored.replace(CUT, "");
    let mut out = String::with_capacity(joined.len());
    let mut chars = joined.chars();
    while let Some(c) = chars.next() {
        if c == ESCAPE {
            let b = u8::try_from(chars.next()?).ok()?.checked_sub(b'0')?;
            (b < b'0').then_some(())?;
            out.push(char::from(b));
        } else if c == '[' {
            out.push(match chars.next()? {
                '0' => '[',
                '1' => '\\',
                _ => return None,
            });
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// One R2 bucket of one Kubernetes namespace, in the S3 store.
#[derive(Debug)]
pub struct S3Bucket {
    store: Arc<S3Store>,
    /// `<prefix><namespace>/<bucket>/`.
    prefix: String,
}

/// R2's metadata, kept in `x-amz-meta-r2`.
#[derive(Serialize, Deserialize, Default)]
struct Meta {
    #[serde(default)]
    http: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    custom: BTreeMap<String, String>,
    #[serde(default)]
    checksums: BTreeMap<String, String>,
    #[serde(default)]
    class: Option<String>,
}

const META_HEADER: &str = "x-amz-meta-r2";

/// `httpMetadata`'s fields S3 keeps as its own headers.
const CONTENT_HEADERS: [(&str, &str); 5] = [
    ("contentType", "content-type"),
    ("contentLanguage", "content-language"),
    ("contentDisposition", "content-disposition"),
    ("contentEncoding", "content-encoding"),
    ("cacheControl", "cache-control"),
];

impl Meta {
    fn of(options: &R2PutOptions, checksums: BTreeMap<String, String>) -> Self {
        Self {
            http: options.http_metadata.clone(),
            custom: options.custom_metadata.clone(),
            checksums,
            class: options.storage_class.clone(),
        }
    }

    /// The headers a put or a new multipart upload sends.
    fn headers(&self) -> Result<Vec<(String, String)>, R2Error> {
        let json = serde_json::to_vec(self).map_err(|e| R2Error::Internal(e.to_string()))?;
        let mut headers = vec![(
            META_HEADER.to_owned(),
            base64ct::Base64::encode_string(&json),
        )];
        for (field, header) in CONTENT_HEADERS {
            if let Some(value) = self.http.get(field).and_then(|v| v.as_str())
                && ::http::HeaderValue::from_str(value).is_ok()
            {
                headers.push((header.to_owned(), value.to_owned()));
            }
        }
        Ok(headers)
    }

    fn parse(header: Option<&str>) -> Self {
        header
            .and_then(|h| base64ct::Base64::decode_vec(h).ok())
            .and_then(|json| serde_json::from_slice(&json).ok())
            .unwrap_or_default()
    }
}

/// An object's `version`: from its etag and upload time, so a head and a
/// list tell the same one.
fn version(etag: &str, uploaded: u64) -> String {
    let digest = md5::Md5::digest(format!("{etag}/{uploaded}").as_bytes());
    hex::encode(digest)
}

/// `etag` without its quotes.
fn unquote(etag: &str) -> String {
    etag.trim_matches('"').to_owned()
}

impl S3Bucket {
    /// Bucket `bucket` of Kubernetes namespace `namespace` in `store`.
    pub fn new(store: Arc<S3Store>, namespace: &str, bucket: &str) -> Result<Self, R2Error> {
        if !is_name(namespace) || !is_name(bucket) {
            return Err(R2Error::Internal(format!(
                "not a bucket of a namespace: {namespace}/{bucket}"
            )));
        }
        store.ensure_bucket()?;
        let prefix = format!("{}{namespace}/{bucket}/", store.settings.prefix);
        Ok(Self { store, prefix })
    }

    fn client(&self) -> &S3Client {
        &self.store.client
    }

    /// `key`'s S3 key: the bucket's prefix, then the key escaped
    /// ([`escape`]).
    fn s3_key(&self, key: &str) -> String {
        format!("{}{}", self.prefix, escape(key))
    }

    /// The R2 key of S3 key `s3_key`, when it is one of this bucket's.
    fn r2_key(&self, s3_key: &str) -> Option<String> {
        unescape(s3_key.strip_prefix(&self.prefix)?)
    }

    /// The object's head, or `None`.
    fn head_object(&self, key: &str) -> Result<Option<R2Object>, R2Error> {
        let client = self.client();
        let s3_key = self.s3_key(key);
        let action = client
            .bucket()
            .head_object(Some(client.credentials()), &s3_key);
        let answer = client.call(Request::new(&action))?;
        if answer.status == 404 {
            return Ok(None);
        }
        let answer = answer.ok()?;
        let header = |name: &str| answer.headers.get(name).and_then(|v| v.to_str().ok());
        let etag = unquote(header("etag").unwrap_or_default());
        let uploaded = header("last-modified")
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs() * 1000);
        let size = header("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let meta = Meta::parse(header(META_HEADER));
        Ok(Some(R2Object {
            key: key.to_owned(),
            version: version(&etag, uploaded),
            size,
            etag,
            uploaded,
            http_metadata: meta.http,
            custom_metadata: meta.custom,
            checksums: meta.checksums,
            storage_class: meta.class.unwrap_or_else(|| "Standard".into()),
        }))
    }

    /// The head of `key`, which was just written (S3's answer to the write
    /// has no `Last-Modified`).
    fn written(&self, key: &str) -> Result<R2Object, R2Error> {
        self.head_object(key)?
            .ok_or_else(|| R2Error::Internal(format!("{key:?} is gone right after its write")))
    }

    /// The parts of `upload` S3 has: `(number, etag, size)`.
    fn parts(&self, s3_key: &str, upload: &str) -> Result<Vec<(u32, String, u64)>, R2Error> {
        let client = self.client();
        let mut parts = Vec::new();
        let mut marker = None;
        loop {
            let mut action = client
                .bucket()
                .list_parts(Some(client.credentials()), s3_key, upload);
            if let Some(marker) = marker {
                action.set_part_number_marker(marker);
            }
            let answer = client.call(Request::new(&action))?.ok()?;
            let page = rusty_s3::actions::ListParts::parse_response(&answer.text())
                .map_err(|e| R2Error::Internal(format!("S3's list of parts: {e}")))?;
            for part in &page.parts {
                parts.push((u32::from(part.number), unquote(&part.etag), part.size));
            }
            match page.next_part_number_marker {
                Some(next) if page.parts.len() == usize::from(page.max_parts) => {
                    marker = Some(next);
                }
                _ => return Ok(parts),
            }
        }
    }
}

impl R2Bucket for S3Bucket {
    fn head(&self, key: &str) -> Result<Option<R2Object>, R2Error> {
        check_key(key)?;
        self.head_object(key)
    }

    fn get(
        &self,
        key: &str,
        only_if: Option<&R2Conditional>,
    ) -> Result<Option<(R2Object, Option<Box<dyn R2Read>>)>, R2Error> {
        check_key(key)?;
        let Some(object) = self.head_object(key)? else {
            return Ok(None);
        };
        if only_if.is_some_and(|c| !c.holds(Some(&object))) {
            return Ok(Some((object, None)));
        }
        let read = read::S3Read::new(
            self.store.clone(),
            self.s3_key(key),
            object.etag.clone(),
            object.size,
        );
        Ok(Some((object, Some(Box::new(read) as Box<dyn R2Read>))))
    }

    fn new_body(&self, digests: &[String]) -> Result<R2Upload, R2Error> {
        R2Upload::create(self.store.settings.temp_dir.join(random_id()?), digests)
    }

    fn put(
        &self,
        key: &str,
        body: R2Upload,
        options: &R2PutOptions,
    ) -> Result<Option<R2Object>, R2Error> {
        let (body, checksums) = prepare_put(key, body, options)?;
        let stored = (|| {
            if let Some(condition) = &options.only_if
                && !condition.holds(self.head_object(key)?.as_ref())
            {
                return Ok(None);
            }
            let client = self.client();
            let s3_key = self.s3_key(key);
            let mut action = client
                .bucket()
                .put_object(Some(client.credentials()), &s3_key);
            let headers = Meta::of(options, checksums).headers()?;
            let request = Request::with_headers(&mut action, headers)
                .file(&body.path, body.size, &body.md5)?;
            client.call(request)?.ok()?;
            self.written(key).map(Some)
        })();
        discard(&body.path);
        stored
    }

    fn delete(&self, keys: &[String]) -> Result<(), R2Error> {
        for key in keys {
            check_key(key)?;
        }
        let client = self.client();
        for key in keys {
            let s3_key = self.s3_key(key);
            let action = client
                .bucket()
                .delete_object(Some(client.credentials()), &s3_key);
            let answer = client.call(Request::new(&action))?;
            if answer.status != 404 {
                answer.ok()?;
            }
        }
        Ok(())
    }

    fn list(&self, options: &R2ListOptions) -> Result<R2List, R2Error> {
        list::list(self, options)
    }

    fn create_upload(&self, key: &str, options: &R2PutOptions) -> Result<String, R2Error> {
        check_key(key)?;
        check_metadata(&options.custom_metadata)?;
        let client = self.client();
        let s3_key = self.s3_key(key);
        let mut action = client
            .bucket()
            .create_multipart_upload(Some(client.credentials()), &s3_key);
        let headers = Meta::of(options, BTreeMap::new()).headers()?;
        let answer = client
            .call(Request::with_headers(&mut action, headers))?
            .ok()?;
        let created = rusty_s3::actions::CreateMultipartUpload::parse_response(&answer.text())
            .map_err(|e| R2Error::Internal(format!("S3's new upload: {e}")))?;
        Ok(created.upload_id().to_owned())
    }

    fn upload_part(
        &self,
        key: &str,
        upload: &str,
        number: u32,
        body: R2Upload,
    ) -> Result<String, R2Error> {
        check_key(key)?;
        if !(1..=limits::MAX_PARTS).contains(&number) {
            return Err(R2Error::InvalidPart);
        }
        let body = body.finish()?;
        let stored = (|| {
            let client = self.client();
            let s3_key = self.s3_key(key);
            let number = u16::try_from(number).map_err(|_| R2Error::InvalidPart)?;
            let action =
                client
                    .bucket()
                    .upload_part(Some(client.credentials()), &s3_key, number, upload);
            let request = Request::new(&action).file(&body.path, body.size, &body.md5)?;
            let answer = client.call(request)?.ok()?;
            let etag = answer
                .headers
                .get("etag")
                .and_then(|v| v.to_str().ok())
                .map(unquote)
                .unwrap_or_else(|| body.md5.clone());
            Ok(etag)
        })();
        discard(&body.path);
        stored
    }

    fn complete_upload(
        &self,
        key: &str,
        upload: &str,
        parts: &[(u32, String)],
    ) -> Result<R2Object, R2Error> {
        check_key(key)?;
        let s3_key = self.s3_key(key);
        let stored = self.parts(&s3_key, upload)?;
        let mut chosen: Vec<(u32, (String, u64))> = Vec::with_capacity(parts.len());
        for (number, etag) in parts {
            if chosen.iter().any(|(n, _)| n == number) {
                return Err(R2Error::Internal("a part is listed twice".into()));
            }
            match stored.iter().find(|(n, _, _)| n == number) {
                Some((_, stored_etag, size)) if stored_etag == etag => {
                    chosen.push((*number, (etag.clone(), *size)));
                }
                _ => return Err(R2Error::InvalidPart),
            }
        }
        super::list::check_part_sizes(&mut chosen, |(_, size)| *size)?;
        let client = self.client();
        let action = client.bucket().complete_multipart_upload(
            Some(client.credentials()),
            &s3_key,
            upload,
            std::iter::empty(),
        );
        let mut xml = String::from("<CompleteMultipartUpload>");
        for (number, (etag, _)) in &chosen {
            xml.push_str(&format!(
                "<Part><PartNumber>{number}</PartNumber><ETag>{}</ETag></Part>",
                http::xml_escape(etag)
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let request = Request::new(&action).xml(xml);
        client.call(request)?.ok()?;
        self.written(key)
    }

    fn abort_upload(&self, key: &str, upload: &str) -> Result<(), R2Error> {
        check_key(key)?;
        let client = self.client();
        let s3_key = self.s3_key(key);
        let action =
            client
                .bucket()
                .abort_multipart_upload(Some(client.credentials()), &s3_key, upload);
        let answer = client.call(Request::new(&action))?;
        match answer.ok() {
            Ok(_) | Err(R2Error::NoSuchUpload) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

#[cfg(test)]
mod tests;
