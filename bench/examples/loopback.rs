//! The floor under any hop between two processes on this machine: one byte
//! sent over loopback TCP to another process and echoed back, with both
//! processes waking for it, timed 20,000 times (docs/benchmark-history.md,
//! section 2). No TLS, no framing, no runtime: whatever the router → node
//! hop adds to a request is above this.
//!
//! ```text
//! hack/cargo.sh run --release -p isolane-bench --example loopback
//! ```

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Instant;

const ROUNDS: usize = 20_000;

fn echo(port: u16) -> std::io::Result<()> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_nodelay(true)?;
    let mut byte = [0u8; 1];
    while stream.read(&mut byte)? == 1 {
        stream.write_all(&byte)?;
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, port] = args.as_slice()
        && flag == "--echo"
    {
        let port = port.parse().map_err(std::io::Error::other)?;
        return echo(port);
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--echo", &port.to_string()])
        .stdin(Stdio::null())
        .spawn()?;
    let (mut stream, _) = listener.accept()?;
    stream.set_nodelay(true)?;
    let mut byte = [b'x'; 1];
    let mut micros = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        stream.write_all(&byte)?;
        stream.read_exact(&mut byte)?;
        micros.push(start.elapsed().as_secs_f64() * 1e6);
    }
    drop(stream);
    child.wait()?;
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)];
    println!(
        "loopback round trip between two processes ({ROUNDS} rounds): p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
        at(0.5),
        at(0.9),
        at(0.99)
    );
    Ok(())
}
