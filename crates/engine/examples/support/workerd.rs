//! `workerd serve` beside an example, for same-run comparisons: writes a
//! config serving one ES module worker on a free 127.0.0.1 port and talks
//! HTTP/1.1 to it over a plain socket.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use isolane_testenv::{Process, free_port, workerd};

pub struct Workerd {
    _process: Process,
    dir: PathBuf,
    pub port: u16,
}

impl Workerd {
    /// Starts `bin serve` with `script`; waits until `ready_path` answers 200.
    pub fn start(bin: &Path, script: &str, ready_path: &str) -> Workerd {
        let dir = std::env::temp_dir().join(format!("isolane-workerd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("worker.js"), script).unwrap();
        // A port that was free a moment ago (workerd binds it itself).
        let port = free_port().unwrap();
        let address = ([127, 0, 0, 1], port).into();
        let service = workerd::Service::module("main", "worker.js", "2024-09-23", address);
        let config = workerd::write_config(&dir, "config.capnp", &[service]).unwrap();
        let process = workerd::serve(bin, &config, &[], &dir.join("workerd.log")).unwrap();
        let workerd = Workerd {
            _process: process,
            dir,
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while workerd.request("GET", ready_path, "").is_none() {
            assert!(Instant::now() < deadline, "workerd did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        workerd
    }

    /// One request over a fresh connection: the body of a 200 answer.
    pub fn request(&self, method: &str, path: &str, body: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: example\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        if !response.starts_with("HTTP/1.1 200") {
            return None;
        }
        let (head, rest) = response.split_once("\r\n\r\n")?;
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            return Some(dechunk(rest));
        }
        Some(rest.to_owned())
    }
}

impl Drop for Workerd {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].trim_start_matches("\r\n");
    }
    out
}
