//! The `cloudflare:sockets` unit: `connect()`, outbound TCP from a Worker
//! (js/cloudflare/sockets.js builds workerd's `Socket` on these host
//! functions; `node:net` and `node:tls` build on that).
//!
//! A socket is a [`Conn`] in the isolate's [`TcpSockets`], owned by the
//! request that opened it, and counted as the Worker's other outbound
//! connections are: one of the request's `subrequests`, a place among the
//! Worker's sockets on this thread (`max_sockets_per_worker`, shared with
//! its WebSockets, the core's `host/socket_count.rs`: `HostState::socket_slot`), the egress checks of a fetch
//! hop (`host/tcp/dial.rs`). It ends with its request, however that ends
//! (`TcpSockets::drop_for`, a `RequestResources` the core calls when the request ends): a limit that
//! stops the Worker closes its sockets with it, and a socket never outlives
//! the request's wall time.
//!
//! Reads are pulled: one `socketRead` at a time takes at most
//! [`READ_CHUNK`] bytes off the connection, so nothing piles up on the host
//! side when the Worker does not read (the peer meets TCP back-pressure).
//! A write holds its copy of the bytes, charged to the Worker's memory
//! budget, until the kernel took them; one write at a time.

mod dial;

use std::cell::{Cell, OnceCell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, ReadHalf, WriteHalf};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use isolane_engine::api::net::{Refused, Slot};
use isolane_engine::api::service::CallOutbound;
use isolane_engine::api::{HostError, HostResult, IdMap, Reservation, too_many};
use isolane_engine::api::{HostState, Settle, Settlement, begin_op, holder, js_string, set};
use isolane_engine::api::{RequestResources, Unit};

use self::dial::{DialError, Dialed, Io, Target};

/// `cloudflare:sockets`, loaded like the Node built-ins (lazily, outside
/// the snapshot) whatever the compatibility settings, as in workerd.
pub(crate) fn unit() -> Unit {
    Unit::new("cloudflare:sockets")
        .node_module(
            "cloudflare:sockets",
            include_str!("../js/cloudflare/sockets.js"),
        )
        .function("socketConnect", socket_connect)
        .function("socketRead", socket_read)
        .function("socketWrite", socket_write)
        .function("socketShutdown", socket_shutdown)
        .function("socketStartTls", socket_start_tls)
        .function("socketClose", socket_close)
        .request_state::<TcpSockets>()
}

/// The most one read takes off a connection.
const READ_CHUNK: usize = 64 * 1024;

/// One open socket.
struct Conn {
    ctx: u32,
    /// `None` while a read holds it.
    read: Option<ReadHalf<Io>>,
    /// `None` while a write or the shutdown holds it.
    write: Option<WriteHalf<Io>>,
    /// The ops holding a half: aborted when the socket is closed.
    busy: Vec<(u32, AbortHandle)>,
    /// Tells a pending read to give its half back unread (`startTls`).
    cancel_read: Rc<Notify>,
    /// A half came back (what `startTls` waits for).
    returned: Rc<Notify>,
    /// `startTls` has it: it is no longer the Worker's to close.
    upgrading: bool,
    remote: SocketAddr,
    local: SocketAddr,
    /// Its place in the Worker's count of sockets.
    slot: Slot,
}

/// A socket that opened: what `socketConnect` and `socketStartTls` resolve
/// with.
pub(crate) struct Opened {
    id: u32,
    remote: SocketAddr,
    local: SocketAddr,
}

/// The isolate's open sockets (the unit's state).
#[derive(Default)]
pub(crate) struct TcpSockets {
    open: RefCell<IdMap<Conn>>,
    next: Cell<u32>,
    /// Made on the first TLS socket.
    tls: OnceCell<Option<Arc<rustls::ClientConfig>>>,
}

impl TcpSockets {
    fn insert(&self, conn: Conn) -> u32 {
        let id = self.next.get().wrapping_add(1).max(1);
        self.next.set(id);
        self.open.borrow_mut().insert(id, conn);
        id
    }

    fn tls(&self, host: &HostState) -> Option<Arc<rustls::ClientConfig>> {
        self.tls
            .get_or_init(|| dial::client_config(host.tls_roots().clone()))
            .clone()
    }

    /// Takes the read half of socket `id` and what cancels its read:
    /// `Ok(None)` when the socket is gone or being upgraded (it reads as
    /// ended), `Err` when a read is already under way.
    fn take_read(&self, id: u32) -> Result<Option<Reading>, &'static str> {
        let mut open = self.open.borrow_mut();
        let Some(conn) = open.get_mut(&id).filter(|c| !c.upgrading) else {
            return Ok(None);
        };
        let read = conn
            .read
            .take()
            .ok_or("a read of this socket is already under way")?;
        Ok(Some((read, conn.cancel_read.clone())))
    }

    fn take_write(&self, id: u32) -> Result<WriteHalf<Io>, &'static str> {
        let mut open = self.open.borrow_mut();
        let conn = open.get_mut(&id).ok_or("the socket is closed")?;
        conn.write
            .take()
            .ok_or("a write of this socket is already under way")
    }

    fn mark_busy(&self, id: u32, op: u32, task: AbortHandle) {
        if let Some(conn) = self.open.borrow_mut().get_mut(&id) {
            conn.busy.push((op, task));
        }
    }

    /// Puts a half back after its op (unless the socket went meanwhile).
    fn give_back(&self, id: u32, op: u32, half: Half) {
        if let Some(conn) = self.open.borrow_mut().get_mut(&id) {
            conn.busy.retain(|(o, _)| *o != op);
            match half {
                Half::Read(read) => conn.read = Some(read),
                Half::Write(write) => conn.write = Some(write),
            }
            conn.returned.notify_one();
        }
    }

    /// Closes socket `id`: its ops stop and its connection is dropped
    /// (unless `startTls` took it: it belongs to the new socket).
    fn close(&self, host: &HostState, id: u32) {
        let mut open = self.open.borrow_mut();
        if open.get(&id).is_some_and(|c| c.upgrading) {
            return;
        }
        let conn = open.remove(&id);
        drop(open);
        if let Some(conn) = conn {
            end(host, conn);
        }
    }

    /// Marks socket `id` as `startTls`'s: a pending read is told to give
    /// its half back unread. What `startTls` waits on for the halves.
    fn begin_upgrade(&self, id: u32) -> Result<(u32, Rc<Notify>), &'static str> {
        let mut open = self.open.borrow_mut();
        let conn = open.get_mut(&id).ok_or("the socket is closed")?;
        if conn.upgrading {
            return Err("startTls can only be called once");
        }
        conn.upgrading = true;
        if conn.read.is_none() {
            conn.cancel_read.notify_one();
        }
        Ok((conn.ctx, conn.returned.clone()))
    }

    /// Socket `id` whole, once no op holds a half of it.
    fn take_for_upgrade(&self, id: u32) -> Upgrade {
        let mut open = self.open.borrow_mut();
        match open.get(&id) {
            None => Upgrade::Gone,
            Some(c) if c.read.is_none() || c.write.is_none() => Upgrade::Busy,
            Some(_) => open.remove(&id).map_or(Upgrade::Gone, Upgrade::Ready),
        }
    }

    /// Drops every socket of request `ctx` (all when `None`): the request
    /// ended, so its connections close.
    pub(crate) fn drop_for(&self, ctx: Option<u32>) {
        self.open
            .borrow_mut()
            .retain(|_, conn| ctx.is_some_and(|c| c != conn.ctx));
    }
}

/// A read half taken for one read, and what cancels that read.
type Reading = (ReadHalf<Io>, Rc<Notify>);

enum Half {
    Read(ReadHalf<Io>),
    Write(WriteHalf<Io>),
}

/// Where a socket `startTls` waits for stands.
enum Upgrade {
    Ready(Conn),
    Busy,
    Gone,
}

/// Stops a socket's ops (their promises are dropped: the Worker closed it)
/// and drops it.
fn end(host: &HostState, conn: Conn) {
    for (op, task) in conn.busy {
        task.abort();
        let _ = host.take_op(op);
    }
}

fn sockets(host: &HostState) -> HostResult<&TcpSockets> {
    host.state::<TcpSockets>()
        .ok_or_else(|| HostError::type_error("Sockets are not available"))
}

host_fn! {
/// `socketConnect(hostname, port, tls)` → Promise of `{id, remoteAddress,
/// localAddress}`. Throws TypeError for an address workerd refuses and
/// outside a request; the promise rejects when a limit or the egress policy
/// refuses, or the connection fails.
fn socket_connect<'s>(
    scope,
    host: Rc<HostState>,
    hostname: String,
    port: f64,
    tls: bool,
) -> HostResult<Option<v8::Local<'s, v8::Promise>>> {
    let target = Target::parse(&hostname, port).map_err(HostError::type_error)?;
    let ctx = host.current();
    if !host.request_live(ctx) {
        return Err(HostError::type_error(
            "connect() can only be called while handling a request",
        ));
    }
    let sockets = sockets(&host)?;
    let tls = if tls {
        Some(sockets.tls(&host).ok_or_else(|| HostError::type_error("TLS is not available"))?)
    } else {
        None
    };
    let early = admit(&host, ctx, &target).map_err(HostError::type_error);
    let (resolver, promise, slot) = match begin_op(scope, early) {
        Some(Ok(begun)) => begun,
        Some(Err(promise)) => return Ok(Some(promise)),
        None => return Ok(None),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let policy = host.egress().clone();
    let task = tokio::task::spawn_local(async move {
        let dialed = dial::dial(&policy, &target, tls).await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let host = isolate.host();
        let settlement = match dialed {
            Ok(dialed) => opened(host, ctx, dialed, slot),
            Err(error) => failed(host, &error),
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    Ok(Some(promise))
}
}

/// The counts a new socket passes before it connects: a subrequest of the
/// request, the Worker's `egress.allowedHosts`, a place among its sockets.
fn admit(host: &HostState, ctx: u32, target: &Target) -> Result<Slot, String> {
    if host.call_outbound(ctx).is_some() {
        return Err(CallOutbound::refusal("connect", &target.host));
    }
    let limit = host.worker().map_or(0, |w| w.limits.subrequests);
    host.take_subrequest(ctx, limit).map_err(too_many)?;
    if let Some(worker) = host.worker().filter(|w| !w.may_fetch(&target.host)) {
        return Err(worker.egress_refusal("connect", &target.host));
    }
    host.socket_slot().map_err(
        |(Refused::Worker { limit } | Refused::Client { limit })| {
            format!(
                "connect() refused: this Worker already has {limit} sockets open (its limit per engine thread, WebSockets included)"
            )
        },
    )
}

/// A connection made for request `ctx`: a socket, unless the request ended
/// meanwhile (the connection is dropped then).
fn opened(host: &HostState, ctx: u32, dialed: Dialed, slot: Slot) -> Settlement {
    let Ok(sockets) = sockets(host) else {
        return Settlement::Undefined;
    };
    if !host.request_live(ctx) {
        return Settlement::Undefined;
    }
    let (read, write) = tokio::io::split(dialed.io);
    let id = sockets.insert(Conn {
        ctx,
        read: Some(read),
        write: Some(write),
        busy: Vec::new(),
        cancel_read: Rc::new(Notify::new()),
        returned: Rc::new(Notify::new()),
        upgrading: false,
        remote: dialed.remote,
        local: dialed.local,
        slot,
    });
    Settlement::custom(Opened {
        id,
        remote: dialed.remote,
        local: dialed.local,
    })
}

fn failed(host: &HostState, error: &DialError) -> Settlement {
    if let Some(refused) = error.refusal() {
        host.egress_refused(refused.reason);
    }
    Settlement::TypeError(error.to_string())
}

host_fn! {
/// `socketRead(id)` → Promise of `{chunk}` (at most 64 KiB), or null at
/// the end of the stream (and for a closed socket).
fn socket_read<'s>(scope, host: Rc<HostState>, id: u32) -> Option<v8::Local<'s, v8::Promise>> {
    let read = sockets(&host)
        .map_err(|e| e.to_string())
        .and_then(|s| s.take_read(id).map_err(str::to_owned))
        .map_err(HostError::type_error);
    let (resolver, promise, (mut read, cancel)) = match begin_op(scope, read)? {
        Ok((resolver, promise, Some(taken))) => (resolver, promise, taken),
        Ok((resolver, promise, None)) => {
            let null = v8::null(scope).into();
            resolver.resolve(scope, null);
            return Some(promise);
        }
        Err(promise) => return Some(promise),
    };
    // The buffer a read fills is the Worker's memory while it waits.
    let Ok(charge) = Reservation::new(host.memory(), READ_CHUNK) else {
        return None;
    };
    let resolver = v8::Global::new(scope, resolver);
    let ctx = host.current();
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let mut buffer = vec![0; READ_CHUNK];
        // A read canceled for `startTls` reads as the end of this socket:
        // its connection goes on in the new one.
        let result = tokio::select! {
            result = read.read(&mut buffer) => result,
            () = cancel.notified() => Ok(0),
        };
        drop(charge);
        let Some(isolate) = me.upgrade() else {
            return;
        };
        if let Ok(sockets) = sockets(isolate.host()) {
            sockets.give_back(id, op, Half::Read(read));
        }
        let settlement = match result {
            Ok(0) => Settlement::Null,
            Ok(n) => {
                buffer.truncate(n);
                Settlement::Chunk(buffer)
            }
            Err(error) => Settlement::TypeError(format!("socket read failed: {error}")),
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    if let Ok(sockets) = sockets(&host) {
        sockets.mark_busy(id, op, task.abort_handle());
    }
    Some(promise)
}
}

host_fn! {
/// `socketWrite(id, u8)` → Promise, settled when the bytes were written.
fn socket_write<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    bytes: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let bytes = bytes.unwrap_or_default();
    // Charged while the host holds the copy; over the limit the isolate is
    // being terminated.
    let charge = Reservation::new(host.memory(), bytes.len()).ok()?;
    write_op(scope, &host, id, move |mut write| async move {
        let result = write.write_all(&bytes).await;
        drop(charge);
        (write, result)
    })
}
}

host_fn! {
/// `socketShutdown(id)` → Promise: the Worker closed its writable side
/// (the peer reads the end of the stream; reading goes on).
fn socket_shutdown<'s>(scope, host: Rc<HostState>, id: u32) -> Option<v8::Local<'s, v8::Promise>> {
    write_op(scope, &host, id, |mut write| async move {
        let result = write.shutdown().await;
        (write, result)
    })
}
}

/// An op on the write half of socket `id`: `work` gets it and gives it
/// back with its result.
fn write_op<'s, F, Fut>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    id: u32,
    work: F,
) -> Option<v8::Local<'s, v8::Promise>>
where
    F: FnOnce(WriteHalf<Io>) -> Fut + 'static,
    Fut: std::future::Future<Output = (WriteHalf<Io>, std::io::Result<()>)> + 'static,
{
    let write = sockets(host)
        .map_err(|e| e.to_string())
        .and_then(|s| s.take_write(id).map_err(str::to_owned))
        .map_err(HostError::type_error);
    let (resolver, promise, write) = match begin_op(scope, write)? {
        Ok(begun) => begun,
        Err(promise) => return Some(promise),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(host.current(), resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let (write, result) = work(write).await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        if let Ok(sockets) = sockets(isolate.host()) {
            sockets.give_back(id, op, Half::Write(write));
        }
        let settlement = match result {
            Ok(()) => Settlement::Undefined,
            Err(error) => Settlement::TypeError(format!("socket write failed: {error}")),
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    if let Ok(sockets) = sockets(host) {
        sockets.mark_busy(id, op, task.abort_handle());
    }
    Some(promise)
}

host_fn! {
/// `socketStartTls(id, serverName)` → Promise of `{id, remoteAddress,
/// localAddress}`: a new socket, TLS over socket `id`'s connection, whose
/// certificate must name `serverName`. Socket `id` is the new one's at
/// once: a pending read of it ends (as the end of its stream), and the
/// handshake starts when its pending write is done.
fn socket_start_tls<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    server_name: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let begun = sockets(&host)
        .map_err(|e| e.to_string())
        .and_then(|sockets| {
            let config = sockets.tls(&host).ok_or("TLS is not available")?;
            let (ctx, returned) = sockets.begin_upgrade(id)?;
            Ok((config, ctx, returned))
        })
        .map_err(HostError::type_error);
    let (resolver, promise, (config, ctx, returned)) = match begin_op(scope, begun)? {
        Ok(begun) => begun,
        Err(promise) => return Some(promise),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let conn = loop {
            let taken = match me.upgrade() {
                Some(isolate) => match sockets(isolate.host()) {
                    Ok(sockets) => sockets.take_for_upgrade(id),
                    Err(_) => Upgrade::Gone,
                },
                None => return,
            };
            match taken {
                Upgrade::Ready(conn) => break Some(conn),
                Upgrade::Busy => returned.notified().await,
                Upgrade::Gone => break None,
            }
        };
        let settlement = match conn {
            Some(conn) => upgrade(conn, config, server_name).await,
            None => Err(Settlement::TypeError("the socket is closed".to_owned())),
        };
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let settlement = match settlement {
            Ok((dialed, slot)) => opened(isolate.host(), ctx, dialed, slot),
            Err(settlement) => settlement,
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// The TLS handshake over `conn`'s connection (its halves back together).
async fn upgrade(
    conn: Conn,
    config: Arc<rustls::ClientConfig>,
    server_name: String,
) -> Result<(Dialed, Slot), Settlement> {
    let (Some(read), Some(write)) = (conn.read, conn.write) else {
        return Err(Settlement::TypeError("the socket is closed".to_owned()));
    };
    let (remote, local) = (conn.remote, conn.local);
    let target = Target {
        host: server_name.clone(),
        port: remote.port(),
    };
    match dial::handshake(read.unsplit(write), config, &server_name, &target).await {
        Ok(io) => Ok((Dialed { io, remote, local }, conn.slot)),
        Err(error) => Err(Settlement::TypeError(error.to_string())),
    }
}

host_fn! {
/// `socketClose(id)`: the connection is dropped; pending reads and writes
/// of it never settle (the Worker's streams are closed already).
fn socket_close<'s>(_scope, host: Rc<HostState>, id: u32) {
    if let Ok(sockets) = sockets(&host) {
        sockets.close(&host, id);
    }
}
}

/// `{id, remoteAddress, localAddress}` (no prototype, see `holder`).
pub(crate) fn opened_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    opened: Opened,
) -> v8::Local<'s, v8::Value> {
    let object = holder(scope);
    let id = v8::Integer::new_from_unsigned(scope, opened.id).into();
    set(scope, object, "id", Some(id));
    for (key, address) in [
        ("remoteAddress", opened.remote),
        ("localAddress", opened.local),
    ] {
        let text = js_string(scope, &address.to_string());
        set(scope, object, key, text);
    }
    object.into()
}

impl RequestResources for TcpSockets {
    fn drop_for(&self, ctx: Option<u32>) {
        TcpSockets::drop_for(self, ctx);
    }
}

impl Settle for Opened {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        Ok(opened_js(scope, *self))
    }
}
