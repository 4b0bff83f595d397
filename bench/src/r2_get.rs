//! The R2 row of section 17 (issue 58): a big object put through the
//! Worker's R2 binding, then read whole through router → node → Worker →
//! client, in turn with the same stored object read straight from the S3
//! server by a presigned `GET` (the node's layout, docs/r2.md: the S3
//! bucket `isolane-r2`, key `<namespace>/<bucket>/<escaped key>`). Each
//! body is compared byte for byte after its clock stopped; a wrong or short
//! body fails the step rather than counting as speed.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use isolane_testenv::{S3_ACCESS_KEY, S3_REGION, S3_SECRET_KEY};
use rusty_s3::S3Action as _;

use crate::report::{Table, Target, verdict};
use crate::servers::Server;
use crate::state::Client;
use crate::stats::{fmt_ratio, median, mib_per_s, ratio};

/// The one S3 bucket the node keeps every namespace's R2 buckets in (its
/// `--r2-s3-bucket` default).
const S3_BUCKET: &str = "isolane-r2";
/// The goal: the Worker's throughput ≥ this share of the S3 server's.
const GOAL: f64 = 0.8;

/// How big and how many.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The object's size, MiB.
    pub mib: usize,
    /// Whole reads per way per round.
    pub gets: usize,
    pub rounds: usize,
}

/// The object read both ways.
pub struct Object<'a> {
    pub bytes: Bytes,
    /// Its R2 key (the Worker's `/r2?key=`).
    pub key: &'a str,
    /// Its S3 key in [`S3_BUCKET`].
    pub stored_as: String,
}

/// MiB/s of each whole read, each way, in pairs (a Worker read, then one
/// from the S3 server).
#[derive(Debug, Default)]
pub struct Rates {
    pub worker: Vec<f64>,
    pub direct: Vec<f64>,
    /// The same bytes made in memory by the Worker (`/gen`): the streaming
    /// path alone, without the store.
    pub generated: Vec<f64>,
}

impl Rates {
    /// The median over pairs of the Worker's rate ÷ the S3 server's.
    pub fn ratio(&self) -> f64 {
        let pairs: Vec<f64> = self
            .worker
            .iter()
            .zip(&self.direct)
            .map(|(w, d)| ratio(*w, *d))
            .collect();
        median(&pairs)
    }
}

/// `len` bytes whose byte `i` is `i % 251` (no period a chunk size shares).
pub fn pattern(len: usize) -> Bytes {
    (0..len)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// `PUT path` with `body`, on a connection of its own: the answer's text;
/// fails unless it answers 200.
async fn put(server: &Server, path: &str, body: Bytes) -> anyhow::Result<String> {
    let tcp = tokio::net::TcpStream::connect(server.addr).await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(connection);
    let host = server
        .host
        .clone()
        .unwrap_or_else(|| server.addr.to_string());
    let request = http::Request::put(path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_LENGTH, body.len())
        .body(Full::new(body))?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let text = response.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&text).into_owned();
    anyhow::ensure!(
        status == http::StatusCode::OK,
        "PUT {path} answered {status}: {text}"
    );
    Ok(text)
}

/// A presigned `GET` of `key` on the S3 server at `endpoint`: its address
/// and the path and query to ask for.
fn presigned(endpoint: &str, key: &str) -> anyhow::Result<(SocketAddr, String)> {
    let url: url::Url = endpoint.parse().context("the S3 endpoint")?;
    let addr: SocketAddr = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port_or_known_default().unwrap_or(80)
    )
    .parse()
    .context("the S3 endpoint's address")?;
    let bucket = rusty_s3::Bucket::new(url, rusty_s3::UrlStyle::Path, S3_BUCKET, S3_REGION)?;
    let credentials = rusty_s3::Credentials::new(S3_ACCESS_KEY, S3_SECRET_KEY);
    let signed = bucket
        .get_object(Some(&credentials), key)
        .sign(Duration::from_secs(3600));
    Ok((addr, signed[url::Position::BeforePath..].to_owned()))
}

/// One whole read of `path`: MiB/s, the body checked to be `expected`.
async fn read(client: &mut Client, path: &str, expected: &Bytes) -> anyhow::Result<f64> {
    let started = Instant::now();
    let (took, body) = client.get_body(path).await?;
    anyhow::ensure!(
        body.len() == expected.len() && body == *expected,
        "GET {path}: {} bytes, not the {} put (or other bytes) after {:?}",
        body.len(),
        expected.len(),
        started.elapsed()
    );
    Ok(mib_per_s(body.len(), took))
}

/// Puts `object` through the Worker on `router`, then reads it whole both
/// ways in turn.
pub async fn measure(
    router: &Server,
    endpoint: &str,
    object: &Object<'_>,
    plan: &Plan,
) -> anyhow::Result<Rates> {
    let path = format!("/r2?key={}", object.key);
    let size = put(router, &path, object.bytes.clone()).await?;
    anyhow::ensure!(
        size == object.bytes.len().to_string(),
        "the put answered size {size}, not {}",
        object.bytes.len()
    );
    let (addr, direct_path) = presigned(endpoint, &object.stored_as)?;
    let direct = Server {
        name: "S3 server",
        addr,
        host: None,
        process: None,
        helpers: Vec::new(),
    };
    let mut rates = Rates::default();
    for _ in 0..plan.rounds {
        let mut worker = Client::connect(router).await?;
        let mut store = Client::connect(&direct).await?;
        for _ in 0..plan.gets {
            rates
                .worker
                .push(read(&mut worker, &path, &object.bytes).await?);
            rates
                .direct
                .push(read(&mut store, &direct_path, &object.bytes).await?);
            let generated = format!("/gen?mib={}", plan.mib);
            rates
                .generated
                .push(read(&mut worker, &generated, &object.bytes).await?);
        }
    }
    Ok(rates)
}

fn fmt_rate(values: &[f64]) -> String {
    format!("{:.0} MiB/s", median(values))
}

fn slowest(values: &[f64]) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    if min.is_finite() {
        format!("{min:.0} MiB/s")
    } else {
        "–".to_owned()
    }
}

pub fn render(plan: &Plan, rates: &Rates) -> String {
    let mut table = Table::new(&[
        "what",
        ">median",
        ">slowest",
        ">÷ S3 server (median of pairs)",
        "goal",
        "result",
    ]);
    let ratio = rates.ratio();
    table.row(vec![
        format!("R2 {} MiB get, Worker → client (router + node)", plan.mib),
        fmt_rate(&rates.worker),
        slowest(&rates.worker),
        fmt_ratio(ratio),
        format!("≥ {GOAL}× the S3 server's"),
        verdict(ratio >= GOAL),
    ]);
    table.row(vec![
        format!(
            "{} MiB made in memory by the Worker (1 MiB chunks), Worker → client",
            plan.mib
        ),
        fmt_rate(&rates.generated),
        slowest(&rates.generated),
        fmt_ratio(median(&rates.generated) / median(&rates.direct)),
        String::new(),
        String::new(),
    ]);
    table.row(vec![
        "the same object from the S3 server (SeaweedFS), presigned GET".to_owned(),
        fmt_rate(&rates.direct),
        slowest(&rates.direct),
        "1.00×".to_owned(),
        String::new(),
        String::new(),
    ]);
    format!(
        "R2: a {} MiB object put through the Worker (`B.put(key, request.body)`), then read \
         whole by the client, `new Response((await B.get(key)).body)` through router → node → \
         Worker, in turn with the same stored object read straight from SeaweedFS's S3 gateway \
         (a presigned `GET` of its key in the node's layout); {} rounds of {} reads each way, \
         a keep-alive connection each way per round, every body compared byte for byte. The \
         same bytes made in memory by the Worker (`/gen`, a stream of 1 MiB chunks) separate \
         the streaming path from the store.\n\n{}\n",
        plan.mib,
        plan.rounds,
        plan.gets,
        table.render()
    )
}

pub fn target(plan: &Plan, rates: &Rates) -> Target {
    let ratio = rates.ratio();
    Target::new(
        format!(
            "R2 {} MiB get, Worker → client, ≥ {GOAL}× the S3 server's throughput read directly \
             (issue 58)",
            plan.mib
        ),
        format!(
            "{} ({} vs {})",
            fmt_ratio(ratio),
            fmt_rate(&rates.worker),
            fmt_rate(&rates.direct)
        ),
        ratio >= GOAL,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_has_no_short_period() {
        let bytes = pattern(1000);
        assert_eq!(bytes.len(), 1000);
        assert_eq!(bytes[250], 250);
        assert_eq!(bytes[251], 0);
        assert_ne!(bytes[..256], bytes[256..512]);
    }

    #[test]
    fn the_ratio_is_the_median_of_pairs() {
        let rates = Rates {
            worker: vec![80.0, 90.0, 10.0],
            direct: vec![100.0, 100.0, 100.0],
            generated: Vec::new(),
        };
        assert!((rates.ratio() - 0.8).abs() < 1e-9);
        assert!(Rates::default().ratio().is_nan());
    }

    #[test]
    fn a_presigned_get_names_the_bucket_and_key_and_signs_the_host() {
        let (addr, path) = presigned("http://127.0.0.1:8333", "bench/files/big").unwrap();
        assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], 8333)));
        assert!(path.starts_with("/isolane-r2/bench/files/big?"), "{path}");
        assert!(path.contains("X-Amz-Signature="), "{path}");
        assert!(path.contains("X-Amz-SignedHeaders=host"), "{path}");
    }
}
