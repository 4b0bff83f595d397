//! `list` on the S3 store: S3 lists the bucket's escaped keys in order
//! from a key on; a delimited prefix is grouped here (S3 would see the
//! delimiter escaped), and the listing then goes on after every key under
//! it (the group, then the last character there is).

use base64ct::Encoding;

use super::super::list::bounds;
use super::super::{R2Error, R2List, R2ListOptions, R2Object};
use super::http::Request;
use super::{S3Bucket, unquote, version};

/// What a cursor after a delimited prefix holds: the prefix then the
/// last character there is (every key under it sorts before).
const AFTER_ALL: char = char::MAX;

/// One row of a page: an object, or a delimited prefix.
enum Row {
    Object(R2Object),
    Prefix(String),
}

/// An object as S3's listing tells it (no metadata).
fn listed(
    key: String,
    content: &rusty_s3::actions::list_objects_v2::ListObjectsContent,
) -> R2Object {
    let etag = unquote(content.etag.as_deref().unwrap_or_default());
    let uploaded = content
        .last_modified
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(0, |t| u64::try_from(t.as_second()).unwrap_or(0) * 1000);
    R2Object {
        key,
        version: version(&etag, uploaded),
        size: content.size.unwrap_or(0),
        etag,
        uploaded,
        http_metadata: serde_json::Map::new(),
        custom_metadata: Default::default(),
        checksums: Default::default(),
        storage_class: "Standard".into(),
    }
}

/// Up to `want` of the bucket's S3 keys under `s3_prefix` after `after`:
/// `(R2 key, object)`, and whether S3 has more.
fn page(
    bucket: &S3Bucket,
    s3_prefix: &str,
    after: Option<&str>,
    want: usize,
) -> Result<(Vec<R2Object>, bool), R2Error> {
    let client = bucket.client();
    let mut action = client.bucket().list_objects_v2(Some(client.credentials()));
    action.with_prefix(s3_prefix);
    if let Some(after) = after {
        action.with_start_after(after);
    }
    action.with_max_keys(want.clamp(1, 1000));
    let answer = client.call(Request::new(&action))?.ok()?;
    let listed_page = rusty_s3::actions::ListObjectsV2::parse_response(&answer.text())
        .map_err(|e| R2Error::Internal(format!("S3's list: {e}")))?;
    let objects = listed_page
        .contents
        .iter()
        .filter_map(|c| bucket.r2_key(&c.key).map(|key| listed(key, c)))
        .collect();
    let more = listed_page.next_continuation_token.is_some();
    Ok((objects, more))
}

/// The rows `options` asks for, at most `limit + 1`.
fn rows(
    bucket: &S3Bucket,
    options: &R2ListOptions,
    limit: usize,
    start_after: Option<String>,
) -> Result<Vec<Row>, R2Error> {
    let prefix = options.prefix.clone().unwrap_or_default();
    let delimiter = options.delimiter.as_deref().filter(|d| !d.is_empty());
    let s3_prefix = bucket.s3_key(&prefix);
    let mut after = start_after.map(|s| bucket.s3_key(&s));
    let mut rows = Vec::new();
    'listing: while rows.len() <= limit {
        let want = limit + 1 - rows.len();
        let (objects, more) = page(bucket, &s3_prefix, after.as_deref(), want)?;
        let exhausted = objects.is_empty() || !more;
        for object in objects {
            let group = delimiter.and_then(|d| {
                let rest = &object.key[prefix.len()..];
                rest.find(d)
                    .map(|at| format!("{prefix}{}", &rest[..at + d.len()]))
            });
            after = Some(bucket.s3_key(&object.key));
            if let Some(group) = group {
                after = Some(format!("{}{AFTER_ALL}", bucket.s3_key(&group)));
                rows.push(Row::Prefix(group));
                continue 'listing;
            }
            rows.push(Row::Object(object));
            if rows.len() > limit {
                break 'listing;
            }
        }
        if exhausted {
            break;
        }
    }
    Ok(rows)
}

/// R2's `list` of `bucket`.
pub(super) fn list(bucket: &S3Bucket, options: &R2ListOptions) -> Result<R2List, R2Error> {
    let (limit, start_after) = bounds(options)?;
    let mut rows = rows(bucket, options, limit, start_after)?;
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let cursor = truncated
        .then(|| {
            rows.last().map(|row| match row {
                Row::Object(o) => o.key.clone(),
                Row::Prefix(p) => format!("{p}{AFTER_ALL}"),
            })
        })
        .flatten()
        .map(|key| base64ct::Base64::encode_string(key.as_bytes()));
    let http = options.include.iter().any(|i| i == "httpMetadata");
    let custom = options.include.iter().any(|i| i == "customMetadata");
    let mut page = R2List {
        truncated,
        cursor,
        ..R2List::default()
    };
    for row in rows {
        match row {
            Row::Prefix(prefix) => page.delimited_prefixes.push(prefix),
            Row::Object(object) if !(http || custom) => page.objects.push(object),
            Row::Object(object) => {
                // Metadata is in each object's head only.
                let Some(mut full) = bucket.head_object(&object.key)? else {
                    continue;
                };
                if !http {
                    full.http_metadata.clear();
                }
                if !custom {
                    full.custom_metadata.clear();
                }
                page.objects.push(full);
            }
        }
    }
    Ok(page)
}
