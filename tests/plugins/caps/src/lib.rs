//! Test plugin `caps`: reaches for what it may not have, so the host can show
//! that every capability is denied unless granted.
//!
//! | tool | what it tries |
//! | --- | --- |
//! | `ok` | nothing: returns `{"ok": true}` |
//! | `read` | read a file at any path (`/etc/passwd`, `..`, a symlink) |
//! | `write` | create or overwrite a file at any path |
//! | `list` | list a directory |
//! | `env` | read one environment variable |
//! | `leak` | read environment variable `name` and try to leak its value: to stdout, the `log` import, and its error message |
//! | `environment` | list every environment variable name, the arguments and the working directory |
//! | `tcp_connect` | open a TCP connection to an IPv4 address (raw `wasi:sockets`), `attempts` times |
//! | `resolve` | look a host name up (`wasi:sockets/ip-name-lookup`) |
//! | `flood` | write `bytes` bytes of numbered lines to stdout (and a line to stderr) |
//!
//! Errors carry the operating system's or WASI's own reason.

use std::net::SocketAddrV4;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolhost_guest::{Context, Tool, ToolError, export_tools};
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{ErrorCode, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress};
use wasip2::sockets::tcp_create_socket::create_tcp_socket;

struct Behaved;

impl Tool for Behaved {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "ok";
    const DESCRIPTION: &'static str = "Behaves: returns {\"ok\": true}.";

    fn call((): (), _cx: &Context) -> Result<Value, ToolError> {
        Ok(json!({ "ok": true }))
    }
}

/// A path.
#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// Any path.
    path: String,
}

struct Read;

impl Tool for Read {
    type Args = PathArgs;
    type Output = String;
    const NAME: &'static str = "read";

    fn call(args: PathArgs, _cx: &Context) -> Result<String, ToolError> {
        std::fs::read_to_string(&args.path)
            .map_err(|e| ToolError::failed(format!("{}: {e}", args.path)))
    }
}

/// A path and a text.
#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// Any path.
    path: String,
    /// What to write.
    text: String,
}

struct Write;

impl Tool for Write {
    type Args = WriteArgs;
    type Output = Value;
    const NAME: &'static str = "write";

    fn call(args: WriteArgs, _cx: &Context) -> Result<Value, ToolError> {
        std::fs::write(&args.path, &args.text)
            .map_err(|e| ToolError::failed(format!("{}: {e}", args.path)))?;
        Ok(json!({ "written": args.text.len() }))
    }
}

struct List;

impl Tool for List {
    type Args = PathArgs;
    type Output = Vec<String>;
    const NAME: &'static str = "list";

    fn call(args: PathArgs, _cx: &Context) -> Result<Vec<String>, ToolError> {
        let entries = std::fs::read_dir(&args.path)
            .map_err(|e| ToolError::failed(format!("{}: {e}", args.path)))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

/// A variable name.
#[derive(Deserialize, JsonSchema)]
struct EnvArgs {
    /// The variable.
    name: String,
}

struct Env;

impl Tool for Env {
    type Args = EnvArgs;
    type Output = String;
    const NAME: &'static str = "env";

    fn call(args: EnvArgs, _cx: &Context) -> Result<String, ToolError> {
        std::env::var(&args.name)
            .map_err(|e| ToolError::failed(format!("environment variable `{}`: {e}", args.name)))
    }
}

struct Leak;

impl Tool for Leak {
    type Args = EnvArgs;
    type Output = ();
    const NAME: &'static str = "leak";

    fn call(args: EnvArgs, cx: &Context) -> Result<(), ToolError> {
        let value = std::env::var(&args.name).unwrap_or_default();
        println!("stdout: {value}");
        cx.info(&format!("log: {value}"));
        Err(ToolError::failed(format!("error: {value}")))
    }
}

struct Environment;

impl Tool for Environment {
    type Args = ();
    type Output = Value;
    const NAME: &'static str = "environment";

    fn call((): (), _cx: &Context) -> Result<Value, ToolError> {
        let mut names: Vec<String> = std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        names.sort();
        let args: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .map_err(|e| e.to_string());
        Ok(json!({ "env": names, "args": args, "cwd": format!("{cwd:?}") }))
    }
}

/// An IPv4 socket address.
#[derive(Deserialize, JsonSchema)]
struct ConnectArgs {
    /// `a.b.c.d:port`.
    addr: String,
    /// How many times to try (default 1), as a guest that retries a refused
    /// connection in a loop would; the last outcome is returned.
    #[serde(default)]
    attempts: Option<u32>,
}

fn socket_error(what: &str, code: ErrorCode) -> ToolError {
    ToolError::failed(format!("{what}: {code:?}"))
}

struct TcpConnect;

impl Tool for TcpConnect {
    type Args = ConnectArgs;
    type Output = Value;
    const NAME: &'static str = "tcp_connect";

    fn call(args: ConnectArgs, _cx: &Context) -> Result<Value, ToolError> {
        let addr: SocketAddrV4 = args
            .addr
            .parse()
            .map_err(|e| ToolError::invalid_arguments(format!("{}: {e}", args.addr)))?;
        let mut outcome = connect(addr);
        for _ in 1..args.attempts.unwrap_or(1) {
            outcome = connect(addr);
        }
        outcome
    }
}

fn connect(addr: SocketAddrV4) -> Result<Value, ToolError> {
    let socket = create_tcp_socket(IpAddressFamily::Ipv4)
        .map_err(|e| socket_error("create-tcp-socket", e))?;
    let network = instance_network();
    let [a, b, c, d] = addr.ip().octets();
    let remote = IpSocketAddress::Ipv4(Ipv4SocketAddress {
        port: addr.port(),
        address: (a, b, c, d),
    });
    socket
        .start_connect(&network, remote)
        .map_err(|e| socket_error("connect", e))?;
    loop {
        match socket.finish_connect() {
            Ok((input, output)) => {
                drop(input);
                drop(output);
                return Ok(json!({ "connected": addr.to_string() }));
            }
            Err(ErrorCode::WouldBlock) => socket.subscribe().block(),
            Err(e) => return Err(socket_error("connect", e)),
        }
    }
}

/// A host name.
#[derive(Deserialize, JsonSchema)]
struct ResolveArgs {
    /// The name to look up.
    host: String,
}

struct Resolve;

impl Tool for Resolve {
    type Args = ResolveArgs;
    type Output = Vec<String>;
    const NAME: &'static str = "resolve";

    fn call(args: ResolveArgs, _cx: &Context) -> Result<Vec<String>, ToolError> {
        let network = instance_network();
        let stream = resolve_addresses(&network, &args.host)
            .map_err(|e| socket_error("resolve-addresses", e))?;
        let mut found = Vec::new();
        loop {
            match stream.resolve_next_address() {
                Ok(Some(address)) => found.push(format!("{address:?}")),
                Ok(None) => return Ok(found),
                Err(ErrorCode::WouldBlock) => stream.subscribe().block(),
                Err(e) => return Err(socket_error("resolve-next-address", e)),
            }
        }
    }
}

/// How much to write.
#[derive(Deserialize, JsonSchema)]
struct FloodArgs {
    /// Bytes of stdout to write.
    bytes: u64,
}

struct Flood;

impl Tool for Flood {
    type Args = FloodArgs;
    type Output = Value;
    const NAME: &'static str = "flood";

    fn call(args: FloodArgs, _cx: &Context) -> Result<Value, ToolError> {
        use std::io::Write as _;
        eprintln!("flood: starting");
        let mut out = std::io::stdout().lock();
        let mut written = 0_u64;
        let mut n = 0_u64;
        while written < args.bytes {
            let line = format!("flood line {n:08}\n");
            out.write_all(line.as_bytes())
                .map_err(|e| ToolError::failed(format!("stdout: {e}")))?;
            written += line.len() as u64;
            n += 1;
        }
        out.flush()
            .map_err(|e| ToolError::failed(format!("stdout: {e}")))?;
        Ok(json!({ "written": written, "lines": n }))
    }
}

export_tools! {
    tools: [Behaved, Read, Write, List, Env, Leak, Environment, TcpConnect, Resolve, Flood],
}
