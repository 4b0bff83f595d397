//! What every backend answers alike: a `list` page from a bucket's objects
//! and a multipart upload's part sizes checked (R2's rules).

use base64ct::Encoding;

use super::{R2Error, R2List, R2ListOptions, R2Object, limits};

/// `options`' limit (at most 100 when metadata is included) and the key
/// to list from after (`startAfter`, or the cursor when it is later).
pub(crate) fn bounds(options: &R2ListOptions) -> Result<(usize, Option<String>), R2Error> {
    let limit = match options.limit {
        None => limits::MAX_LIST,
        Some(n) if (1.0..=limits::MAX_LIST as f64).contains(&n) => n as usize,
        Some(_) => return Err(R2Error::InvalidMaxKeys),
    };
    let limit = if options.include.is_empty() {
        limit
    } else {
        limit.min(limits::MAX_LIST_WITH_METADATA)
    };
    let mut start_after = options.start_after.clone();
    if let Some(cursor) = &options.cursor {
        let decoded = base64ct::Base64::decode_vec(cursor)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or(R2Error::InvalidArgument)?;
        if start_after.as_ref().is_none_or(|s| decoded > *s) {
            start_after = Some(decoded);
        }
    }
    Ok((limit, start_after))
}

/// A page's rows: an object, or a delimited prefix (`Some`) with the last
/// key under it; at most `limit + 1` (one more says the page is truncated).
fn rows(
    objects: Vec<R2Object>,
    options: &R2ListOptions,
    prefix: &str,
    limit: usize,
) -> Vec<(Option<String>, R2Object)> {
    let http = options.include.iter().any(|i| i == "httpMetadata");
    let custom = options.include.iter().any(|i| i == "customMetadata");
    let delimiter = options.delimiter.as_deref().filter(|d| !d.is_empty());
    let mut rows: Vec<(Option<String>, R2Object)> = Vec::new();
    for mut object in objects {
        let group = delimiter.and_then(|d| {
            let rest = &object.key[prefix.len()..];
            rest.find(d)
                .map(|at| format!("{prefix}{}", &rest[..at + d.len()]))
        });
        if let (Some(group), Some((Some(last), row))) = (&group, rows.last_mut())
            && group == last
        {
            *row = object;
            continue;
        }
        if rows.len() > limit {
            break;
        }
        if !http {
            object.http_metadata.clear();
        }
        if !custom {
            object.custom_metadata.clear();
        }
        rows.push((group, object));
    }
    rows
}

/// The page of `objects` (any order) that `options` asks for, in key
/// order: at most `limit` objects and delimited prefixes together, from
/// after `startAfter` or the cursor (the last key of the page before).
pub(crate) fn page(mut objects: Vec<R2Object>, options: &R2ListOptions) -> Result<R2List, R2Error> {
    let (limit, start_after) = bounds(options)?;
    let prefix = options.prefix.clone().unwrap_or_default();
    objects
        .retain(|o| o.key.starts_with(&prefix) && start_after.as_ref().is_none_or(|s| o.key > *s));
    objects.sort_by(|a, b| a.key.cmp(&b.key));
    let mut rows = rows(objects, options, &prefix, limit);
    let truncated = rows.len() > limit;
    rows.truncate(limit);
    let cursor = truncated
        .then(|| {
            rows.last()
                .map(|(_, o)| base64ct::Base64::encode_string(o.key.as_bytes()))
        })
        .flatten();
    let mut page = R2List {
        truncated,
        cursor,
        ..R2List::default()
    };
    for (group, object) in rows {
        match group {
            Some(group) => page.delimited_prefixes.push(group),
            None => page.objects.push(object),
        }
    }
    Ok(page)
}

/// R2's rules for the parts a multipart upload is completed with (`(part
/// number, size)`, in the order given): every part but the last at least
/// 5 MiB, and, in part-number order, all but the last of one size and the
/// last no larger. Sorts `parts` by number.
pub(crate) fn check_part_sizes<T>(
    parts: &mut [(u32, T)],
    size: impl Fn(&T) -> u64,
) -> Result<(), R2Error> {
    let Some((_, but_last)) = parts.split_last() else {
        return Err(R2Error::BadUpload);
    };
    if but_last.iter().any(|(_, p)| size(p) < limits::MIN_PART) {
        return Err(R2Error::EntityTooSmall);
    }
    parts.sort_by_key(|(n, _)| *n);
    let Some(((_, last), but_last)) = parts.split_last() else {
        return Err(R2Error::BadUpload);
    };
    let mut part_size = None;
    for (_, part) in but_last {
        let first = *part_size.get_or_insert(size(part));
        if size(part) < limits::MIN_PART || size(part) != first {
            return Err(R2Error::BadUpload);
        }
    }
    if part_size.is_some_and(|first| size(last) > first) {
        return Err(R2Error::BadUpload);
    }
    Ok(())
}
