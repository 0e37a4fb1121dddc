//! Push and pull against a real registry: Debian's `docker-registry`
//! (CNCF distribution), started per test on a free loopback port with its
//! storage in a scratch directory. `cargo xtask test` installs it; without
//! it these tests fail, they do not skip.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use oci_client::client::{ClientConfig, ClientProtocol, Config as BlobConfig, ImageLayer};
use oci_client::secrets::RegistryAuth;
use serde_json::Value;
use toolhost::oci::{
    Client, ClientOptions, ComponentError, Digest, OciError, Pulled, Reference,
    WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
use toolhost_test_plugins::ECHO;

mod answers;

/// The port a starting `docker-registry` says it listens on (its log line
/// `listening on 127.0.0.1:PORT`); the rest of its log is read and dropped
/// from a thread, so the registry never blocks on a full pipe.
fn listening_port(log: std::process::ChildStderr) -> u16 {
    use std::io::BufRead as _;
    let mut lines = std::io::BufReader::new(log).lines();
    let mut seen = Vec::new();
    let port = loop {
        let Some(Ok(line)) = lines.next() else {
            panic!(
                "docker-registry ended before it listened:\n{}",
                seen.join("\n")
            );
        };
        let port = line
            .split_once("listening on 127.0.0.1:")
            .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|port| port.parse().ok());
        if let Some(port) = port {
            break port;
        }
        seen.push(line);
    };
    std::thread::spawn(move || lines.for_each(drop));
    port
}

/// A `docker-registry` of this test alone; killed when dropped (also when
/// the test fails).
pub(crate) struct Registry {
    port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Registry {
    pub(crate) fn start() -> Self {
        Self::start_with("")
    }

    /// A registry that wants credentials: distribution's `silly` access
    /// controller answers 401 to a request without an `Authorization`
    /// header, and takes any that has one.
    pub(crate) fn start_wanting_credentials() -> Self {
        Self::start_with("auth:\n  silly:\n    realm: toolhost-test\n    service: toolhost-test\n")
    }

    /// A registry with `extra` added to its configuration.
    fn start_with(extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config.yml");
        // Port 0: the registry binds a free port itself and says which, so no
        // other process can take it between our choosing and its binding.
        std::fs::write(
            &config,
            format!(
                "version: 0.1\n\
                 log:\n  level: info\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n\
                 http:\n  addr: 127.0.0.1:0\n{extra}",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let mut child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run docker-registry ({e}); these tests need it: `cargo xtask test` \
                     installs it (Debian: apt-get install docker-registry)"
                )
            });
        let log = child.stderr.take().expect("piped");
        let port = listening_port(log);
        let registry = Self {
            port,
            dir,
            child: Some(child),
        };
        let start = Instant::now();
        while !registry.answers() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "docker-registry did not answer on port {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        registry
    }

    /// `127.0.0.1:PORT`.
    pub(crate) fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Changes one byte in the middle of the stored blob `digest` (its
    /// length stays): a registry whose storage was tampered with, or that
    /// lies.
    pub(crate) fn tamper_blob(&self, digest: &Digest) {
        let hex = digest.hex();
        let file = self
            .dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data");
        let mut bytes = std::fs::read(&file).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&file, bytes).unwrap();
    }

    /// Removes the stored blob `digest`, as a registry whose storage lost
    /// it (its manifest still names it).
    pub(crate) fn lose_blob(&self, digest: &Digest) {
        let hex = digest.hex();
        let file = self
            .dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data");
        std::fs::remove_file(file).unwrap();
    }

    /// Whether `GET /v2/` answers 200 or 401 (the distribution API's version check).
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut head = [0; 12];
        stream
            .write_all(b"GET /v2/ HTTP/1.0\r\nHost: localhost\r\n\r\n")
            .is_ok()
            && stream.read_exact(&mut head).is_ok()
            && (head.ends_with(b" 200") || head.ends_with(b" 401"))
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn echo_bytes() -> Vec<u8> {
    std::fs::read(ECHO).unwrap()
}

/// A library client that reaches `registry` over plain HTTP.
pub(crate) fn client(registry: &Registry) -> Client {
    let mut options = ClientOptions::default();
    options.plain_http.push(registry.address());
    Client::new(&options).unwrap()
}

pub(crate) async fn pull(client: &Client, reference: &str) -> Result<Pulled, OciError> {
    client
        .pull(&reference.parse().unwrap(), &mut |_, _| {})
        .await
}

pub(crate) fn toolhost(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("--no-cache")
        .args(args)
        .output()
        .unwrap()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The value after `label:` on stdout.
pub(crate) fn field(out: &Output, label: &str) -> String {
    stdout(out)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{label}:")))
        .unwrap_or_else(|| panic!("no `{label}:` in {}", stdout(out)))
        .trim()
        .to_owned()
}

/// A failed command: non-zero, one `error:` line on stderr, returned.
pub(crate) fn one_line_error(out: &Output) -> String {
    assert!(!out.status.success(), "succeeded: {}", stdout(out));
    let err = stderr(out);
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

pub(crate) fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn push_then_pull_through_the_cli_by_tag_and_by_digest_and_the_plugin_answers() {
    let registry = Registry::start();
    let tagged = format!("{}/tools/echo:1.0", registry.address());
    let out = toolhost(&["push", ECHO, &format!("oci://{tagged}"), "--insecure"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let pinned = field(&out, "pushed");
    assert!(
        pinned.starts_with(&format!("{}/tools/echo@sha256:", registry.address())),
        "{pinned}"
    );
    let file_digest = Digest::of(&echo_bytes());
    assert!(field(&out, "sha256").starts_with(file_digest.hex()));

    // By tag, into the plugins directory (no --to).
    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path().to_str().unwrap();
    let start = Instant::now();
    let out = toolhost(&["--plugins", dir, "pull", &tagged, "--insecure"]);
    let took = start.elapsed();
    assert!(out.status.success(), "{}", stderr(&out));
    eprintln!("pull of echo ({} bytes) took {took:?}", echo_bytes().len());
    assert_eq!(field(&out, "pulled"), pinned);
    assert!(field(&out, "sha256").starts_with(file_digest.hex()));
    assert_eq!(
        files(plugins.path()),
        ["echo.wasm"],
        "no temporary file left"
    );
    assert_eq!(
        std::fs::read(plugins.path().join("echo.wasm")).unwrap(),
        echo_bytes()
    );

    // By digest, with --to.
    let other = tempfile::tempdir().unwrap();
    let to = other.path().join("new");
    let out = toolhost(&["pull", &pinned, "--insecure", "--to", to.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(field(&out, "pulled"), pinned);
    assert_eq!(std::fs::read(to.join("echo.wasm")).unwrap(), echo_bytes());

    // The pulled plugin loads and answers.
    let out = toolhost(&["--plugins", dir, "call", "add", r#"{"a": 2, "b": 40}"#]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result, serde_json::json!({"result": 42}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_round_trip_writes_the_wasm_artifact_layout() {
    let registry = Registry::start();
    let client = client(&registry);
    let bytes = echo_bytes();
    let reference: Reference = format!("{}/echo:v1", registry.address()).parse().unwrap();
    let pushed = client.push(&reference, &bytes).await.unwrap();
    assert_eq!(pushed.layer_digest, Digest::of(&bytes));
    assert_eq!(pushed.reference.digest(), Some(&pushed.manifest_digest));

    let mut seen = Vec::new();
    let pulled = client
        .pull(&reference, &mut |done, total| seen.push((done, total)))
        .await
        .unwrap();
    assert_eq!(pulled.bytes, bytes);
    assert_eq!(pulled.layer_digest, Digest::of(&bytes));
    assert_eq!(pulled.manifest_digest, pushed.manifest_digest);
    assert_eq!(pulled.reference, pushed.reference);
    let size = bytes.len() as u64;
    assert_eq!(seen.first(), Some(&(0, size)));
    assert_eq!(seen.last(), Some(&(size, size)));
    let by_digest = client
        .pull(&pushed.reference, &mut |_, _| {})
        .await
        .unwrap();
    assert_eq!(by_digest.bytes, bytes);

    // The layout, as another client reads it.
    let raw = raw_client();
    let target = oci_client::Reference::with_digest(
        registry.address(),
        "echo".to_owned(),
        pushed.manifest_digest.to_string(),
    );
    let (manifest, _) = raw
        .pull_manifest_raw(
            &target,
            &RegistryAuth::Anonymous,
            &["application/vnd.oci.image.manifest.v1+json"],
        )
        .await
        .unwrap();
    let manifest: Value = serde_json::from_slice(&manifest).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(manifest["config"]["mediaType"], WASM_CONFIG_MEDIA_TYPE);
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    assert_eq!(layers[0]["mediaType"], WASM_LAYER_MEDIA_TYPE);
    assert_eq!(layers[0]["digest"], Digest::of(&bytes).to_string());
    let mut config = Vec::new();
    let descriptor: oci_client::manifest::OciDescriptor =
        serde_json::from_value(manifest["config"].clone()).unwrap();
    raw.pull_blob(&target, &descriptor, &mut config)
        .await
        .unwrap();
    let config: Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["layerDigests"][0], Digest::of(&bytes).to_string());
    assert!(
        config["component"]["exports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.as_str().unwrap().starts_with("toolhost:plugin/")),
        "{config}"
    );
}

/// An oci-client of its own, to push what toolhost would refuse to.
pub(crate) fn raw_client() -> oci_client::Client {
    // toolhost's client installs the TLS provider reqwest needs, even for
    // plain HTTP.
    Client::new(&ClientOptions::default()).unwrap();
    oci_client::Client::try_from(ClientConfig {
        protocol: ClientProtocol::Http,
        ..ClientConfig::default()
    })
    .unwrap()
}

/// Pushes `bytes` as the one layer of a Wasm artifact, unchecked.
pub(crate) async fn push_raw(
    registry: &Registry,
    repository: &str,
    bytes: &[u8],
    layer_type: &str,
) {
    let target =
        oci_client::Reference::with_tag(registry.address(), repository.to_owned(), "1".to_owned());
    let layer = ImageLayer::new(bytes.to_vec(), layer_type.to_owned(), None);
    let config = BlobConfig::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.to_owned(), None);
    raw_client()
        .push(&target, &[layer], config, &RegistryAuth::Anonymous, None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_that_are_not_components_are_refused() {
    let registry = Registry::start();
    let client = client(&registry);
    let address = registry.address();
    push_raw(&registry, "core", b"\0asm\x01\0\0\0", WASM_LAYER_MEDIA_TYPE).await;
    push_raw(
        &registry,
        "junk",
        b"#!/bin/sh\necho hi\n",
        WASM_LAYER_MEDIA_TYPE,
    )
    .await;
    push_raw(
        &registry,
        "tar",
        &echo_bytes(),
        "application/vnd.oci.image.layer.v1.tar",
    )
    .await;

    let err = pull(&client, &format!("{address}/core:1"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            OciError::NotComponent {
                source: ComponentError::CoreModule,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("core WebAssembly module"), "{err}");
    let err = pull(&client, &format!("{address}/junk:1"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            OciError::NotComponent {
                source: ComponentError::NotWasm,
                ..
            }
        ),
        "{err}"
    );
    let err = pull(&client, &format!("{address}/tar:1"))
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::NotWasmArtifact { .. }), "{err}");
    assert!(err.to_string().contains("application/wasm"), "{err}");

    // Through the CLI: a clear line, no file.
    let dir = tempfile::tempdir().unwrap();
    let out = toolhost(&[
        "pull",
        &format!("{address}/core:1"),
        "--insecure",
        "--to",
        dir.path().to_str().unwrap(),
    ]);
    let err = one_line_error(&out);
    assert!(err.contains("core WebAssembly module"), "{err}");
    assert!(files(dir.path()).is_empty());
}

#[test]
fn push_refuses_a_file_that_is_not_a_component() {
    // No registry: the file is refused before any connection.
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("module.wasm");
    std::fs::write(&module, b"\0asm\x01\0\0\0").unwrap();
    let text = dir.path().join("notes.wasm");
    std::fs::write(&text, b"hello").unwrap();
    let reference = "127.0.0.1:9/tools/echo:1";
    let err = one_line_error(&toolhost(&[
        "push",
        module.to_str().unwrap(),
        reference,
        "--insecure",
    ]));
    assert!(err.contains("module.wasm cannot be pushed"), "{err}");
    assert!(err.contains("core WebAssembly module"), "{err}");
    let err = one_line_error(&toolhost(&[
        "push",
        text.to_str().unwrap(),
        reference,
        "--insecure",
    ]));
    assert!(err.contains("not WebAssembly"), "{err}");
}

#[test]
fn insecure_is_refused_for_a_registry_not_on_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let err = one_line_error(&toolhost(&[
        "push",
        ECHO,
        "registry.example.com:5000/echo:1",
        "--insecure",
    ]));
    assert!(
        err.contains("plain HTTP (--insecure) to `registry.example.com:5000` is refused"),
        "{err}"
    );
    let err = one_line_error(&toolhost(&[
        "pull",
        "10.1.2.3:5000/echo:1",
        "--insecure",
        "--to",
        dir.path().to_str().unwrap(),
    ]));
    assert!(err.contains("is refused"), "{err}");
    assert!(err.contains("insecure_registries"), "{err}");
    // A bad reference is a clear error too.
    let err = one_line_error(&toolhost(&["pull", "acme/echo:1"]));
    assert!(err.contains("names no registry"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_registry_and_a_wrong_pin_fail_clearly_and_write_nothing() {
    let mut registry = Registry::start();
    let address = registry.address();
    let pushed = client(&registry)
        .push(&format!("{address}/echo:1").parse().unwrap(), &echo_bytes())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().to_str().unwrap();

    // HTTPS to a plain-HTTP registry: a hint.
    let tagged = format!("{address}/echo:1");
    let err = one_line_error(&toolhost(&["pull", &tagged, "--to", to]));
    assert!(err.contains("add --insecure"), "{err}");

    // A pin that is not the artifact's.
    let wrong = format!("{address}/echo@sha256:{}", "0".repeat(64));
    let err = one_line_error(&toolhost(&["pull", &wrong, "--insecure", "--to", to]));
    assert!(err.contains(&format!("pulling {wrong}")), "{err}");
    let err = pull(&client(&registry), &wrong).await.unwrap_err();
    assert!(matches!(err, OciError::NoManifest { .. }), "{err}");
    assert!(files(dir.path()).is_empty());

    registry.stop();
    let pinned = pushed.reference.to_string();
    let out = toolhost(&["pull", &pinned, "--insecure", "--to", to]);
    let err = one_line_error(&out);
    assert!(err.contains(&format!("pulling {pinned}")), "{err}");
    assert!(err.to_lowercase().contains("connect"), "{err}");
    assert!(files(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_over_the_size_limit_is_refused() {
    let registry = Registry::start();
    let address = registry.address();
    client(&registry)
        .push(&format!("{address}/echo:1").parse().unwrap(), &echo_bytes())
        .await
        .unwrap();
    let mut options = ClientOptions::default();
    options.plain_http.push(address.clone());
    options.max_bytes = 1000;
    let small = Client::new(&options).unwrap();
    let err = pull(&small, &format!("{address}/echo:1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, OciError::TooLarge { max: 1000, size, .. } if size == echo_bytes().len() as u64),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let err = one_line_error(&toolhost(&[
        "pull",
        &format!("{address}/echo:1"),
        "--insecure",
        "--max-bytes",
        "1000",
        "--to",
        dir.path().to_str().unwrap(),
    ]));
    assert!(err.contains("more than the 1000 allowed"), "{err}");
    assert!(files(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_layer_is_refused_and_nothing_written() {
    let registry = Registry::start();
    let address = registry.address();
    let pushed = client(&registry)
        .push(&format!("{address}/echo:1").parse().unwrap(), &echo_bytes())
        .await
        .unwrap();
    registry.tamper_blob(&pushed.layer_digest);
    let dir = tempfile::tempdir().unwrap();
    let tagged = format!("{address}/echo:1");
    let out = toolhost(&[
        "pull",
        &tagged,
        "--insecure",
        "--to",
        dir.path().to_str().unwrap(),
    ]);
    let err = one_line_error(&out);
    assert!(
        err.contains(&format!("the layer of {tagged} has digest sha256:"))
            && err.contains(&format!("expected {}: refused", pushed.layer_digest)),
        "{err}"
    );
    assert!(files(dir.path()).is_empty());
    let err = pull(&client(&registry), &tagged).await.unwrap_err();
    assert!(
        matches!(
            err,
            OciError::DigestMismatch {
                what: "the layer",
                ..
            }
        ),
        "{err}"
    );
}
