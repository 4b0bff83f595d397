//! Free local TCP ports for the processes a test starts.
//!
//! A port is found by binding it and letting it go, so the process it is
//! meant for can bind it next. In that gap another socket may take it. The
//! kernel gives out ports for `bind(0)` and for every outgoing connection
//! from its ephemeral range (`ip_local_port_range`), which the tests' own
//! clients use by the thousand; a port picked from there could be taken by
//! any connect in between (seen as a node exiting at start-up with
//! `EADDRINUSE`). So ports are picked at random *below* that range, where
//! nothing is handed out by the kernel, and each is handed out once per test
//! process.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::{Mutex, PoisonError};

/// The lowest port picked: above the well-known and most registered
/// service ports.
const LOWEST: u16 = 20_000;
/// Used when the ephemeral range cannot be read (Linux's default start).
const DEFAULT_EPHEMERAL_START: u16 = 32_768;
/// Random ports tried before falling back to the kernel's choice.
const ATTEMPTS: usize = 256;

/// Ports this process has handed out already.
static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A free local TCP port.
pub fn free_port() -> std::io::Result<u16> {
    free_ports::<1>().map(|[port]| port)
}

/// Distinct free ports on 127.0.0.1, none handed out before by this process.
pub(crate) fn free_ports<const N: usize>() -> std::io::Result<[u16; N]> {
    let mut ports = [0; N];
    for port in &mut ports {
        *port = pick()?;
    }
    Ok(ports)
}

/// One port below the ephemeral range that binds now and was not handed out
/// before; the kernel's choice if none is found.
fn pick() -> std::io::Result<u16> {
    let ceiling = ephemeral_start().max(LOWEST + 1);
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(PoisonError::into_inner);
    let handed_out = handed_out.get_or_insert_with(HashSet::new);
    for _ in 0..ATTEMPTS {
        let port = fastrand::u16(LOWEST..ceiling);
        if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.insert(port);
            return Ok(port);
        }
    }
    let port = TcpListener::bind(("127.0.0.1", 0))?.local_addr()?.port();
    handed_out.insert(port);
    Ok(port)
}

/// The first port of the kernel's ephemeral range.
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_START)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_below_the_ephemeral_range_and_bindable() {
        let ports = free_ports::<64>().expect("free ports");
        let distinct: HashSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), ports.len(), "a port was handed out twice");
        for port in ports {
            assert!(port < ephemeral_start(), "{port} is in the ephemeral range");
            TcpListener::bind(("127.0.0.1", port)).expect("the port binds");
        }
    }
}
