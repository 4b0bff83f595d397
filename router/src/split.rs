//! A Worker's traffic split as the router applies it: which revision a
//! request runs. The shares come from `status.traffic` (the operator
//! resolved `spec.traffic`); the bucket rule is `isolane_worker::traffic`'s,
//! so every router replica sends a key to the same revision.
//!
//! In order:
//! 1. when the Worker allows overrides, a request's `x-isolane-revision`
//!    header picks a revision (its hex digits, a tag, or `latest`) among
//!    those the Worker keeps; an unknown one is a 404;
//! 2. a request with the Worker's affinity key (header or cookie) lands in
//!    that key's bucket;
//! 3. any other request lands in a random bucket.

use std::sync::Arc;

use http::HeaderMap;
use http::header::COOKIE;
use isolane_crds::Worker;
use isolane_worker::VersionAffinity;
use isolane_worker::traffic::{self, BUCKETS, LATEST, REVISION_HEADER};

/// A revision's name, cheap to clone into every request.
pub type Revision = Arc<str>;

/// One share of the traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Share {
    /// The revision (shared: every request that runs it holds a reference).
    pub revision: Revision,
    /// Its percentage, 0 to 100.
    pub percent: i32,
    /// Its tag in `spec.traffic`.
    pub tag: Option<String>,
}

/// Where the affinity key is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// A request header (lower case).
    Header(http::HeaderName),
    /// A cookie.
    Cookie(String),
}

/// A Worker's split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    shares: Vec<Share>,
    /// The latest revision (`status.revision`).
    latest: Revision,
    /// Every revision the Worker keeps and nodes can run (`status.revisions`).
    kept: Vec<Revision>,
    affinity: Option<Affinity>,
    allow_override: bool,
}

/// Why a request's revision could not be chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRevision(pub String);

impl Split {
    /// Every request on `revision`.
    pub fn single(revision: &str) -> Self {
        let revision: Revision = Arc::from(revision);
        Self {
            shares: vec![Share {
                revision: revision.clone(),
                percent: 100,
                tag: None,
            }],
            kept: vec![revision.clone()],
            latest: revision,
            affinity: None,
            allow_override: false,
        }
    }

    /// The split of `worker`'s status and spec; `None` when it has no
    /// revision to run.
    pub fn from_worker(worker: &Worker) -> Option<Self> {
        let status = worker.status.as_ref()?;
        let latest: Revision = Arc::from(status.revision.as_deref().filter(|r| !r.is_empty())?);
        let mut shares: Vec<Share> = status
            .traffic
            .iter()
            .map(|t| Share {
                revision: Arc::from(t.revision.as_str()),
                percent: t.percent,
                tag: t.tag.clone(),
            })
            .collect();
        // A status from an operator before traffic splitting: all latest.
        if shares.iter().map(|s| s.percent).sum::<i32>() != 100 {
            shares = vec![Share {
                revision: latest.clone(),
                percent: 100,
                tag: None,
            }];
        }
        let mut kept: Vec<Revision> = status
            .revisions
            .iter()
            .filter(|r| r.ready)
            .map(|r| Arc::from(r.revision.as_str()))
            .collect();
        for revision in shares.iter().map(|s| &s.revision).chain([&latest]) {
            if !kept.contains(revision) {
                kept.push(revision.clone());
            }
        }
        let affinity = worker.spec.version_affinity.as_ref().and_then(affinity_of);
        Some(Self {
            shares,
            latest,
            kept,
            affinity,
            allow_override: worker.spec.allow_revision_override,
        })
    }

    /// The shares, in bucket order.
    pub fn shares(&self) -> &[Share] {
        &self.shares
    }

    /// Whether requests may run `revision`: it has a share or is kept.
    pub fn keeps(&self, revision: &str) -> bool {
        self.kept.iter().any(|k| &**k == revision)
            || self.shares.iter().any(|s| &*s.revision == revision)
    }

    /// The revisions that take some traffic.
    pub fn serving(&self) -> impl Iterator<Item = &str> {
        self.shares
            .iter()
            .filter(|s| s.percent > 0)
            .map(|s| &*s.revision)
    }

    /// The revision with the largest share (the first of equals): what a
    /// cron tick runs.
    pub fn main_revision(&self) -> &str {
        self.shares
            .iter()
            .rev()
            .max_by_key(|s| s.percent)
            .map_or(&*self.latest, |s| &*s.revision)
    }

    /// The same split with `other`'s shares (a split held while its new
    /// revisions are prewarmed).
    pub fn with_shares_of(&self, other: &Split) -> Self {
        let mut held = self.clone();
        held.shares = other.shares.clone();
        for revision in other.serving() {
            if !held.kept.iter().any(|k| &**k == revision) {
                held.kept.push(Arc::from(revision));
            }
        }
        held
    }

    /// The revision for a request with `headers` to worker `worker_id`.
    pub fn choose(
        &self,
        worker_id: &str,
        headers: &HeaderMap,
    ) -> Result<&Revision, UnknownRevision> {
        if let [only] = self.shares.as_slice()
            && self.affinity.is_none()
            && !self.allow_override
        {
            return Ok(&only.revision);
        }
        if self.allow_override
            && let Some(asked) = headers.get(REVISION_HEADER)
        {
            let asked = asked.to_str().unwrap_or_default().trim();
            return self
                .named(asked)
                .ok_or_else(|| UnknownRevision(asked.to_owned()));
        }
        let bucket = match self.affinity_key(headers) {
            Some(key) => traffic::affinity_bucket(worker_id, key),
            None => fastrand::u32(..BUCKETS),
        };
        let index = traffic::share_for(self.shares.iter().map(|s| s.percent), bucket);
        Ok(index
            .and_then(|i| self.shares.get(i))
            .map_or(&self.latest, |s| &s.revision))
    }

    /// The revision a name stands for: `latest`, a tag, or a kept revision.
    fn named(&self, name: &str) -> Option<&Revision> {
        if name == LATEST {
            return Some(&self.latest);
        }
        if let Some(share) = self.shares.iter().find(|s| s.tag.as_deref() == Some(name)) {
            return Some(&share.revision);
        }
        self.kept.iter().find(|k| &***k == name)
    }

    fn affinity_key<'a>(&self, headers: &'a HeaderMap) -> Option<&'a [u8]> {
        match self.affinity.as_ref()? {
            Affinity::Header(name) => headers
                .get(name)
                .map(|v| v.as_bytes())
                .filter(|v| !v.is_empty()),
            Affinity::Cookie(name) => headers
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(cookie::Cookie::split_parse)
                .filter_map(Result::ok)
                .find(|c| c.name() == name)
                .and_then(|c| c.value_raw())
                .map(str::as_bytes)
                .filter(|v| !v.is_empty()),
        }
    }
}

fn affinity_of(affinity: &VersionAffinity) -> Option<Affinity> {
    if let Some(header) = &affinity.header {
        return http::HeaderName::from_bytes(header.to_ascii_lowercase().as_bytes())
            .ok()
            .map(Affinity::Header);
    }
    affinity.cookie.clone().map(Affinity::Cookie)
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use isolane_crds::{RevisionStatus, WorkerSpec};
    use isolane_worker::TrafficStatus;

    use super::*;

    fn worker(affinity: Option<VersionAffinity>, allow_override: bool) -> Worker {
        let spec: WorkerSpec = serde_json::from_value(serde_json::json!({
            "script": "export default {}",
        }))
        .unwrap();
        let mut worker = Worker::new("w", spec);
        worker.spec.version_affinity = affinity;
        worker.spec.allow_revision_override = allow_override;
        worker.status = Some(isolane_crds::WorkerStatus {
            revision: Some("bbbb".into()),
            traffic: vec![
                TrafficStatus {
                    revision: "bbbb".into(),
                    percent: 10,
                    tag: Some("canary".into()),
                    latest: true,
                },
                TrafficStatus {
                    revision: "aaaa".into(),
                    percent: 90,
                    tag: Some("stable".into()),
                    latest: false,
                },
            ],
            revisions: ["bbbb", "aaaa", "cccc"]
                .into_iter()
                .map(|r| RevisionStatus {
                    revision: r.into(),
                    created: None,
                    percent: 0,
                    ready: true,
                })
                .collect(),
            ..Default::default()
        });
        worker
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn random_requests_follow_the_percentages() {
        let split = Split::from_worker(&worker(None, false)).unwrap();
        let none = HeaderMap::new();
        let canary = (0..20_000)
            .filter(|_| &**split.choose("ns/w", &none).unwrap() == "bbbb")
            .count();
        // 10 % of 20000 = 2000; the binomial spread is about ±42.
        assert!((1700..2300).contains(&canary), "{canary}");
        assert_eq!(split.main_revision(), "aaaa");
    }

    #[test]
    fn a_key_keeps_its_revision_by_header_or_cookie() {
        for affinity in [
            VersionAffinity {
                header: Some("X-User".into()),
                cookie: None,
            },
            VersionAffinity {
                header: None,
                cookie: Some("session".into()),
            },
        ] {
            let by_cookie = affinity.cookie.is_some();
            let split = Split::from_worker(&worker(Some(affinity), false)).unwrap();
            let mut on_canary = 0;
            for key in 0..500 {
                let value = format!("user-{key}");
                let cookie = format!("theme=dark; session={value}");
                let request = if by_cookie {
                    headers(&[("cookie", &cookie)])
                } else {
                    headers(&[("x-user", &value)])
                };
                let first = split.choose("ns/w", &request).unwrap().to_string();
                for _ in 0..5 {
                    assert_eq!(&**split.choose("ns/w", &request).unwrap(), first);
                }
                on_canary += usize::from(first == "bbbb");
            }
            assert!((20..80).contains(&on_canary), "{on_canary} of 500");
        }
    }

    #[test]
    fn an_override_names_a_revision_a_tag_or_latest_only_when_allowed() {
        let allowed = Split::from_worker(&worker(None, true)).unwrap();
        for (asked, revision) in [
            ("latest", "bbbb"),
            ("stable", "aaaa"),
            ("canary", "bbbb"),
            ("cccc", "cccc"),
        ] {
            let request = headers(&[(REVISION_HEADER, asked)]);
            assert_eq!(&**allowed.choose("ns/w", &request).unwrap(), revision);
        }
        let unknown = headers(&[(REVISION_HEADER, "dddd")]);
        assert_eq!(
            allowed.choose("ns/w", &unknown).unwrap_err(),
            UnknownRevision("dddd".into())
        );
        // Not allowed: the header is ignored, the split decides.
        let refused = Split::from_worker(&worker(None, false)).unwrap();
        let request = headers(&[(REVISION_HEADER, "cccc")]);
        assert!(
            (0..200).all(|_| &**refused.choose("ns/w", &request).unwrap() != "cccc"),
            "the override was honoured though not allowed"
        );
    }

    #[test]
    fn a_status_without_traffic_is_all_latest() {
        let mut old = worker(None, false);
        if let Some(status) = old.status.as_mut() {
            status.traffic.clear();
        }
        let split = Split::from_worker(&old).unwrap();
        assert_eq!(split.shares(), Split::single("bbbb").shares());
        assert_eq!(split.serving().collect::<Vec<_>>(), ["bbbb"]);
    }
}
