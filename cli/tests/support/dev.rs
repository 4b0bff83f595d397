//! `isolane dev` as a test starts it: the real binary on a free port, its
//! log in a directory of its own, killed on drop (shared by the dev tests).
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use isolane_testenv::Process;
use nix::sys::signal::Signal;
use tempfile::TempDir;

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use isolane_testenv::wait_until;

pub const DEADLINE: Duration = Duration::from_secs(60);

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub use isolane_testenv::free_port;

/// The running server (killed on drop), its log in a directory of its own.
pub struct Dev {
    pub process: Process,
    _logs: TempDir,
}

impl Dev {
    /// `isolane dev <args…> --threads 1`; arguments that name a file or folder
    /// of the repository are passed as absolute paths, and the state goes
    /// in a folder of the test's own unless `--state` is given; one engine
    /// thread unless `--threads` is given.
    pub fn start(args: &[&str]) -> Self {
        Self::start_in(args, None)
    }

    /// `isolane dev --workers <dir> --port <port> <extra…>`: the Worker
    /// YAML files of folder `dir`, served on `port`.
    pub fn workers(dir: &Path, port: u16, extra: &[&str]) -> Self {
        let dir = dir.to_str().expect("a test's folder is UTF-8");
        let port = port.to_string();
        let mut args = vec!["--workers", dir, "--port", &port];
        args.extend_from_slice(extra);
        Self::start(&args)
    }

    /// [`Dev::start`] in the working folder `dir`.
    pub fn start_in(args: &[&str], dir: Option<&Path>) -> Self {
        Self::start_with(args, dir, &[])
    }

    /// [`Dev::start_in`] with environment variables `envs`.
    pub fn start_with(
        args: &[&str],
        dir: Option<&Path>,
        envs: &[(&str, &std::ffi::OsStr)],
    ) -> Self {
        let mut argv: Vec<OsString> = vec!["dev".into()];
        argv.extend(args.iter().map(|arg| {
            let path = repo().join(arg);
            if path.exists() {
                path.into_os_string()
            } else {
                OsString::from(arg)
            }
        }));
        if !args.contains(&"--threads") {
            argv.extend(["--threads".into(), "1".into()]);
        }
        let logs = tempfile::tempdir().unwrap();
        // Its state in the test's own folder, not in the crate's source
        // tree (the working folder cargo runs tests in).
        if !args.contains(&"--state") {
            argv.extend(["--state".into(), logs.path().join("state").into_os_string()]);
        }
        let process = Process::spawn_in(
            "isolane dev",
            Path::new(env!("CARGO_BIN_EXE_isolane")),
            &argv,
            envs,
            &logs.path().join("dev.log"),
            dir,
        )
        .unwrap();
        Dev {
            process,
            _logs: logs,
        }
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._logs.path().join("dev.log")).unwrap_or_default()
    }

    /// SIGINT, then the exit status within the deadline.
    pub fn interrupt(mut self) -> std::process::ExitStatus {
        self.process.signal(Signal::SIGINT).unwrap();
        self.process
            .wait_exit(DEADLINE)
            .expect("isolane dev exits on SIGINT")
    }
}

pub type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub async fn request(
    client: &HttpClient,
    port: u16,
    host: &str,
    path: &str,
) -> Result<(u16, String), String> {
    let request = http::Request::builder()
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header(http::header::HOST, host)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// Retries until the server answers (it is starting), within the deadline.
pub async fn when_ready(
    client: &HttpClient,
    dev: &mut Dev,
    port: u16,
    host: &str,
    path: &str,
) -> (u16, String) {
    wait_until("isolane dev to answer", DEADLINE, || {
        let exited = dev.process.try_exit();
        async move {
            assert!(exited.is_none(), "isolane dev exited early: {exited:?}");
            request(client, port, host, path).await
        }
    })
    .await
}

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// A Worker YAML document: `name` in `namespace`, `spec` (indented spec
/// lines) and `script` inline.
pub fn worker_yaml(namespace: &str, name: &str, spec: &str, script: &str) -> String {
    let script: String = script.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: {{ name: {name}, namespace: {namespace} }}\nspec:\n{spec}  script: |\n{script}"
    )
}

/// `isolane dev` serving Worker `app` of namespaces `team-a` (host
/// `a.test`) and `team-b` (`b.test`), each with the spec lines `spec(host)`
/// gives, and a neighbour Worker (`neighbour.test`, answering `neighbour
/// ok`) on the same thread; returned once the neighbour answers, with the
/// folder of its Worker files (kept while the test runs) and its port.
pub async fn two_teams_and_a_neighbour(
    client: &HttpClient,
    spec: impl Fn(&str) -> String,
    app: &str,
) -> (TempDir, Dev, u16) {
    const NEIGHBOUR: &str =
        "export default { fetch() { return new Response('neighbour ok'); } };\n";
    let dir = tempfile::tempdir().unwrap();
    let documents = [
        worker_yaml("team-a", "app", &spec("a.test"), app),
        worker_yaml("team-b", "app", &spec("b.test"), app),
        worker_yaml(
            "neighbours",
            "neighbour",
            "  routes: [{ host: neighbour.test }]\n",
            NEIGHBOUR,
        ),
    ];
    std::fs::write(dir.path().join("workers.yaml"), documents.join("---\n")).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &[]);
    let ok = (200, "neighbour ok".to_owned());
    assert_eq!(
        when_ready(client, &mut dev, port, "neighbour.test", "/").await,
        ok
    );
    (dir, dev, port)
}

/// The YAML of the neighbour [`serve_with_neighbour`] waits for: Worker
/// `neighbour` of namespace `neighbours`, on host `neighbour.test`,
/// answering `neighbour ok`.
pub fn neighbour_yaml() -> String {
    worker_yaml(
        "neighbours",
        "neighbour",
        "  routes: [{ host: neighbour.test }]\n",
        "export default { fetch() { return new Response('neighbour ok'); } };\n",
    )
}

/// `isolane dev` serving the Worker YAML documents `yaml` (one of them a
/// Worker answering `neighbour ok` on host `neighbour.test`), returned
/// once the neighbour answers, with its port, a client and the folder of
/// the documents (kept while the test runs).
pub async fn serve_with_neighbour(yaml: &str) -> (Dev, u16, HttpClient, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("workers.yaml"), yaml).unwrap();
    let port = free_port().unwrap();
    let mut dev = Dev::workers(dir.path(), port, &[]);
    let client = client();
    assert_eq!(
        when_ready(&client, &mut dev, port, "neighbour.test", "/").await,
        (200, "neighbour ok".to_owned())
    );
    (dev, port, client, dir)
}

/// The sum of every series of metric `name` in a `/metrics` text.
pub fn metric_sum(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}
