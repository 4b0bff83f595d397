//! A minimal HTTP/1.1 GET for admin endpoints (/readyz, /metrics): enough to
//! probe a process under test without pulling a client library into the tests.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response: status code and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

/// `GET path` on `addr` with `Connection: close`; `None` when the connection
/// fails or times out (the process may not listen yet).
pub async fn get(addr: SocketAddr, path: &str) -> Option<Response> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.ok()?;
        parse(&raw)
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .ok()
        .flatten()
}

fn parse(raw: &[u8]) -> Option<Response> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head
        .lines()
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let chunked = head.lines().any(|line| {
        line.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_owned()
    };
    Some(Response { status, body })
}

fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size + 2..)?;
    }
}

/// The value of the sample `series` (name with labels, exactly as exposed, e.g.
/// `isolane_operator_workers{condition="Ready",status="True"}`) in a Prometheus
/// text exposition.
pub fn metric(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// The sum of the series of metric `name` on the admin server at `admin`
/// whose label text contains every comma-separated part of `label`.
pub async fn metric_sum(admin: SocketAddr, name: &str, label: &str) -> Option<f64> {
    let response = get(admin, "/metrics").await?;
    (response.status == 200).then(|| {
        let matching: String = response
            .body
            .lines()
            .filter(|line| {
                line.starts_with(name) && label.split(',').all(|part| line.contains(part))
            })
            .map(|line| format!("{line}\n"))
            .collect();
        sum_series(&matching, name)
    })
}

/// The sum of every series of metric `name` (all label values) in an exposition.
pub fn sum_series(exposition: &str, name: &str) -> f64 {
    exposition
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.split_once("} ")?.1,
                None => rest.strip_prefix(' ')?,
            };
            value.trim().parse::<f64>().ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked() {
        let plain =
            parse(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 3\r\n\r\nno\n").unwrap();
        assert_eq!(plain.status, 503);
        assert_eq!(plain.body, "no\n");
        let chunked =
            parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
                .unwrap();
        assert_eq!(chunked.body, "abcde");
    }

    #[test]
    fn sums_a_metric_over_its_labels() {
        let text = "# TYPE x gauge\nx{thread=\"0\"} 2\nx{thread=\"1\"} 3\nx_other 7\ny 1\n";
        assert!((sum_series(text, "x") - 5.0).abs() < f64::EPSILON);
        assert!((sum_series(text, "x_other") - 7.0).abs() < f64::EPSILON);
    }

    #[test]
    fn reads_a_metric() {
        let text = "# HELP x y\nx_total{result=\"ready\"} 3\nx_total{result=\"error\"} 0\n";
        assert_eq!(metric(text, "x_total{result=\"ready\"}"), Some(3.0));
        assert_eq!(metric(text, "x_total{result=\"none\"}"), None);
    }
}
