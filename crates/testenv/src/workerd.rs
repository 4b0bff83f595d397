//! workerd, the behavioural peer: its config written from a description of
//! the Workers it serves, and `workerd serve` started as a [`Process`].
//!
//! The binary comes from the npm package `workerd` (`npm install` in the
//! folder that needs it). Each [`Service`] is one Worker with a socket of its
//! own on 127.0.0.1; the config is Cap'n Proto text, as workerd's own
//! `workerd.capnp` schema defines it.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::{Error, Process};

/// How workerd reads one module (the field of its `Worker.Module`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    EsModule,
    CommonJs,
    Text,
    Data,
    Wasm,
    Json,
}

impl ModuleKind {
    fn field(self) -> &'static str {
        match self {
            Self::EsModule => "esModule",
            Self::CommonJs => "commonJsModule",
            Self::Text => "text",
            Self::Data => "data",
            Self::Wasm => "wasm",
            Self::Json => "json",
        }
    }
}

/// A Worker's code: its modules (the first is the main one), or one
/// service-worker script. Each names a file relative to the config's folder.
#[derive(Debug, Clone)]
pub enum Code {
    Modules(Vec<(String, ModuleKind)>),
    ServiceWorker(String),
}

/// One Worker and the socket that serves it.
#[derive(Debug, Clone)]
pub struct Service {
    /// The service's name, also its socket's (for `--socket-addr name=…`).
    pub name: String,
    pub code: Code,
    /// Text bindings.
    pub bindings: Vec<(String, String)>,
    pub compatibility_date: String,
    pub compatibility_flags: Vec<String>,
    /// Subrequests may reach public, private and loopback addresses.
    pub network: bool,
    /// PEM certificates the network trusts for TLS besides the system's
    /// roots (its `tlsOptions.trustedCertificates`), with `network`.
    pub trusted_certificates: Vec<String>,
    /// Durable Object bindings: (binding name, class the Worker exports).
    pub durable_objects: Vec<(String, String)>,
    /// Service bindings to other services of the same config.
    pub services: Vec<ServiceBinding>,
    /// Where its objects are kept on disk (`durableObjectStorage`); `None`:
    /// in memory.
    pub object_storage: Option<std::path::PathBuf>,
    /// Its classes are SQLite-backed (`enableSql = true`: wrangler's
    /// `new_sqlite_classes`), with `ctx.storage.sql`.
    pub enable_sql: bool,
    pub address: SocketAddr,
    /// Serve HTTPS with this certificate and key on the socket (its
    /// `https.tlsOptions.keypair`) instead of plain HTTP.
    pub tls: Option<Keypair>,
}

/// A service binding: `env.<binding>` calls service `service` of the same
/// config (its `entrypoint`, a named export, when given), with `props`
/// (JSON text) as the called Worker's `ctx.props`.
#[derive(Debug, Clone)]
pub struct ServiceBinding {
    pub binding: String,
    pub service: String,
    pub entrypoint: Option<String>,
    pub props: Option<String>,
}

/// A certificate chain and its private key, PEM.
#[derive(Debug, Clone)]
pub struct Keypair {
    pub certificate_chain: String,
    pub private_key: String,
}

impl Service {
    /// An ES-module Worker of one file on `address`.
    pub fn module(name: &str, file: &str, date: &str, address: SocketAddr) -> Self {
        Self {
            name: name.to_owned(),
            code: Code::Modules(vec![(file.to_owned(), ModuleKind::EsModule)]),
            bindings: Vec::new(),
            compatibility_date: date.to_owned(),
            compatibility_flags: Vec::new(),
            network: false,
            trusted_certificates: Vec::new(),
            durable_objects: Vec::new(),
            services: Vec::new(),
            object_storage: None,
            enable_sql: false,
            address,
            tls: None,
        }
    }
}

/// The config of every service, as Cap'n Proto text.
pub fn render(services: &[Service]) -> String {
    let mut names = Vec::new();
    let mut sockets = Vec::new();
    let mut workers = String::new();
    for (i, service) in services.iter().enumerate() {
        names.push(format!("(name = {:?}, worker = .w{i})", service.name));
        if let Some(path) = &service.object_storage {
            names.push(format!(
                "(name = {:?}, disk = (path = {:?}, writable = true))",
                objects_service(service),
                path.display().to_string()
            ));
        }
        let protocol = match &service.tls {
            None => "http = ()".to_owned(),
            Some(pair) => format!(
                "https = (options = (), tlsOptions = (keypair = (privateKey = {:?}, certificateChain = {:?})))",
                pair.private_key, pair.certificate_chain
            ),
        };
        sockets.push(format!(
            "(name = {:?}, address = \"{}\", {protocol}, service = {:?})",
            service.name, service.address, service.name
        ));
        let _ = write!(
            workers,
            "const w{i} :Workerd.Worker = (\n{});\n",
            worker(service)
        );
    }
    if services.iter().any(|s| s.network) {
        let trusted: Vec<String> = services
            .iter()
            .flat_map(|s| &s.trusted_certificates)
            .map(|pem| format!("{pem:?}"))
            .collect();
        names.push(format!(
            r#"(name = "net", network = (allow = ["public", "private", "local"], tlsOptions = (trustedCertificates = [{}])))"#,
            trusted.join(", ")
        ));
    }
    format!(
        "using Workerd = import \"/workerd/workerd.capnp\";\n\
         const config :Workerd.Config = (\n  services = [\n    {}\n  ],\n  sockets = [\n    {}\n  ],\n);\n{workers}",
        names.join(",\n    "),
        sockets.join(",\n    ")
    )
}

/// The fields of one `Workerd.Worker`.
fn worker(service: &Service) -> String {
    let mut fields = String::new();
    match &service.code {
        Code::Modules(modules) => {
            let list: Vec<String> = modules
                .iter()
                .map(|(file, kind)| format!("(name = {file:?}, {} = embed {file:?})", kind.field()))
                .collect();
            let _ = writeln!(fields, "  modules = [{}],", list.join(", "));
        }
        Code::ServiceWorker(file) => {
            let _ = writeln!(fields, "  serviceWorkerScript = embed {file:?},");
        }
    }
    let mut bindings: Vec<String> = service
        .bindings
        .iter()
        .map(|(name, value)| format!("(name = {name:?}, text = {value:?})"))
        .collect();
    if !service.durable_objects.is_empty() {
        let classes: Vec<String> = service
            .durable_objects
            .iter()
            .map(|(_, class)| {
                format!(
                    "(className = {class:?}, uniqueKey = {:?}{})",
                    format!("{}-{class}", service.name),
                    if service.enable_sql {
                        ", enableSql = true"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        let _ = writeln!(
            fields,
            "  durableObjectNamespaces = [{}],",
            classes.join(", ")
        );
        match &service.object_storage {
            Some(_) => {
                let _ = writeln!(
                    fields,
                    "  durableObjectStorage = (localDisk = {:?}),",
                    objects_service(service)
                );
            }
            None => {
                let _ = writeln!(fields, "  durableObjectStorage = (inMemory = void),");
            }
        }
        bindings.extend(
            service.durable_objects.iter().map(|(name, class)| {
                format!("(name = {name:?}, durableObjectNamespace = {class:?})")
            }),
        );
    }
    bindings.extend(service.services.iter().map(service_binding));
    let _ = writeln!(fields, "  bindings = [{}],", bindings.join(", "));
    let _ = writeln!(
        fields,
        "  compatibilityDate = {:?},",
        service.compatibility_date
    );
    let flags: Vec<String> = service
        .compatibility_flags
        .iter()
        .map(|f| format!("{f:?}"))
        .collect();
    let _ = writeln!(fields, "  compatibilityFlags = [{}],", flags.join(", "));
    if service.network {
        let _ = writeln!(fields, "  globalOutbound = \"net\",");
    }
    fields
}

/// A service binding as workerd's config has it (a `ServiceDesignator`).
fn service_binding(binding: &ServiceBinding) -> String {
    let mut designator = format!("name = {:?}", binding.service);
    if let Some(entrypoint) = &binding.entrypoint {
        let _ = write!(designator, ", entrypoint = {entrypoint:?}");
    }
    if let Some(props) = &binding.props {
        let _ = write!(designator, ", props = (json = {props:?})");
    }
    format!("(name = {:?}, service = ({designator}))", binding.binding)
}

/// The disk service that keeps `service`'s objects.
fn objects_service(service: &Service) -> String {
    format!("{}-objects", service.name)
}

/// Writes the config to `dir/name` (module files are named relative to
/// `dir`) and returns its path.
pub fn write_config(dir: &Path, name: &str, services: &[Service]) -> Result<PathBuf, Error> {
    let path = dir.join(name);
    std::fs::write(&path, render(services)).map_err(|source| Error::WriteFile {
        path: path.clone(),
        source,
    })?;
    Ok(path)
}

/// The config of workerd serving the files of `folder` read-only with its
/// own `disk` service straight on a socket at `address`: workerd's native
/// file server, no Worker in front (no isolate entered). It answers `GET`
/// and `HEAD` with the file's bytes and `Last-Modified`; it sends no `ETag`
/// and answers no conditional request.
pub fn render_disk_server(folder: &Path, address: SocketAddr) -> String {
    format!(
        "using Workerd = import \"/workerd/workerd.capnp\";\n\
         const config :Workerd.Config = (\n\
         \x20 services = [(name = \"files\", disk = (path = {:?}, writable = false))],\n\
         \x20 sockets = [(name = \"http\", address = \"{address}\", http = (), service = \"files\")],\n\
         );\n",
        folder.display().to_string()
    )
}

/// Writes [`render_disk_server`]'s config to `dir/name` and returns its path.
pub fn write_disk_server_config(
    dir: &Path,
    name: &str,
    folder: &Path,
    address: SocketAddr,
) -> Result<PathBuf, Error> {
    let path = dir.join(name);
    std::fs::write(&path, render_disk_server(folder, address)).map_err(|source| {
        Error::WriteFile {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

/// The native binary the npm package `workerd` installed under `npm_dir`.
pub fn binary(npm_dir: &Path) -> PathBuf {
    let arch = match std::env::consts::ARCH {
        "aarch64" => "arm64",
        _ => "64",
    };
    npm_dir.join(format!(
        "node_modules/@cloudflare/workerd-linux-{arch}/bin/workerd"
    ))
}

/// `workerd serve <config> <extra…>`, its output in `log`; `extra` may move
/// a socket (`--socket-addr name=127.0.0.1:port`).
pub fn serve(bin: &Path, config: &Path, extra: &[OsString], log: &Path) -> Result<Process, Error> {
    let mut args: Vec<OsString> = vec!["serve".into(), config.into()];
    args.extend(extra.iter().cloned());
    Process::spawn("workerd", bin, &args, &[], log)
}
