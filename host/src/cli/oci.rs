//! `toolhost push`, `toolhost pull` and `toolhost sign`: components to and
//! from OCI registries, and their signatures (see `docs/oci.md`).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use toolhost::Config;
use toolhost::oci::{
    Client, OciError, PublicKeys, Reference, SigningKey, check_component, insecure_allowed,
    registry_auth, write_atomically,
};

/// The flags push and pull share: how to reach the registry.
#[derive(clap::Args, Debug)]
pub(super) struct RegistryArgs {
    /// Plain HTTP instead of HTTPS: only for registries on loopback
    /// (localhost, 127.0.0.0/8, ::1) or listed in `[oci] insecure_registries`.
    #[arg(long)]
    insecure: bool,
    /// A file holding a bearer token for the registry [default:
    /// $TOOLHOST_REGISTRY_TOKEN, else the registry's entry in the Docker
    /// config.json, else anonymous].
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
}

fn client(
    args: &RegistryArgs,
    config: &Config,
    reference: &Reference,
    max_bytes: Option<u64>,
) -> Result<Client> {
    let mut options = config.oci_client_options();
    options.auth = registry_auth(args.token_file.as_deref(), reference.registry())?;
    if args.insecure {
        options.plain_http.push(reference.registry().to_owned());
    }
    if let Some(max) = max_bytes {
        options.max_bytes = max;
    }
    Ok(Client::new(&options)?)
}

/// A progress display on stderr when it is a terminal; hidden otherwise.
fn progress_bar(message: String) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(message);
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// `error`, with a hint when a TLS handshake failed on a loopback registry
/// reached without `--insecure`: most likely it speaks plain HTTP.
fn plain_http_hint(error: OciError, args: &RegistryArgs, reference: &Reference) -> anyhow::Error {
    let handshake = matches!(&error, OciError::Registry { message, .. }
        if message.contains("InvalidContentType") || message.contains("corrupt message"));
    if handshake && !args.insecure && insecure_allowed(reference.registry(), &[]) {
        return anyhow::Error::new(error)
            .context("the TLS handshake failed: for a plain-HTTP registry, add --insecure");
    }
    error.into()
}

/// `toolhost push FILE REF`.
pub(super) async fn push(
    file: &Path,
    reference: &str,
    args: &RegistryArgs,
    config: &Config,
) -> Result<()> {
    let reference: Reference = reference.parse()?;
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    // Refused before any connection is made.
    check_component(&bytes).with_context(|| format!("{} cannot be pushed", file.display()))?;
    let client = client(args, config, &reference, None)?;
    let bar = progress_bar(format!("pushing {} ({} bytes)", reference, bytes.len()));
    let pushed = client.push(&reference, &bytes).await;
    bar.finish_and_clear();
    let pushed = pushed.map_err(|e| plain_http_hint(e, args, &reference))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "pushed:  {}", pushed.reference)?;
    writeln!(
        out,
        "sha256:  {}  {}",
        pushed.layer_digest.hex(),
        file.display()
    )?;
    Ok(())
}

/// `toolhost pull REF [--to DIR]`: the component verified, then written as
/// DIR/NAME.wasm through a temporary file and a rename, so a `toolhost serve`
/// watching DIR never loads half a file.
pub(super) async fn pull(
    reference: &str,
    dir: &Path,
    max_bytes: Option<u64>,
    keys: &[PathBuf],
    args: &RegistryArgs,
    config: &Config,
) -> Result<()> {
    let mut reference: Reference = reference.parse()?;
    let client = client(args, config, &reference, max_bytes)?;
    // The digest whose signature verified is the one pulled.
    let verified = if keys.is_empty() {
        None
    } else {
        let keys = PublicKeys::read(keys)?;
        if reference.digest().is_none() {
            let digest = client
                .resolve(&reference)
                .await
                .map_err(|e| plain_http_hint(e, args, &reference))?;
            reference = reference.pinned(&digest);
        }
        let verified = client
            .verify_signature(&reference, &keys)
            .await
            .map_err(|e| plain_http_hint(e, args, &reference))?;
        Some(verified)
    };
    let bar = if std::io::stderr().is_terminal() {
        let bar = ProgressBar::new(0).with_message(format!("pulling {reference}"));
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}",
            )
            .expect("the template is valid"),
        );
        bar
    } else {
        ProgressBar::hidden()
    };
    let shown = bar.clone();
    let pulled = client
        .pull(&reference, &mut move |done, total| {
            shown.set_length(total);
            shown.set_position(done);
        })
        .await;
    bar.finish_and_clear();
    let pulled = pulled.map_err(|e| plain_http_hint(e, args, &reference))?;

    let file = dir.join(format!("{}.wasm", reference.name()));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write_atomically(dir, &file, &pulled.bytes)
        .with_context(|| format!("writing {}", file.display()))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "pulled:  {}", pulled.reference)?;
    writeln!(
        out,
        "sha256:  {}  {}",
        pulled.layer_digest.hex(),
        file.display()
    )?;
    if let Some(verified) = verified {
        writeln!(out, "signed:  with {}", verified.key.display())?;
    }
    Ok(())
}

/// `toolhost sign REF --key FILE`: the key's password, if it is encrypted,
/// comes from `$COSIGN_PASSWORD` (as for cosign).
pub(super) async fn sign(
    reference: &str,
    key: &Path,
    args: &RegistryArgs,
    config: &Config,
) -> Result<()> {
    let reference: Reference = reference.parse()?;
    let password = zeroize::Zeroizing::new(std::env::var("COSIGN_PASSWORD").unwrap_or_default());
    let key = SigningKey::read(key, password.as_bytes())?;
    let client = client(args, config, &reference, None)?;
    let signed = client
        .sign(&reference, &key)
        .await
        .map_err(|e| plain_http_hint(e, args, &reference))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "signed:  {}", signed.reference)?;
    writeln!(
        out,
        "in:      {} ({} signature(s))",
        signed.signatures_at, signed.signatures
    )?;
    Ok(())
}

/// `toolhost keygen [PREFIX]`: PREFIX.key (mode 0600, encrypted with
/// `$COSIGN_PASSWORD`) and PREFIX.pub, neither overwriting a file.
pub(super) fn keygen(prefix: &Path) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let with = |extension: &str| {
        let mut name = prefix.as_os_str().to_owned();
        name.push(extension);
        PathBuf::from(name)
    };
    let (private_file, public_file) = (with(".key"), with(".pub"));
    for file in [&private_file, &public_file] {
        if file.exists() {
            bail!("{} exists: not overwritten", file.display());
        }
    }
    let password = zeroize::Zeroizing::new(std::env::var("COSIGN_PASSWORD").unwrap_or_default());
    let (private, public) = toolhost::oci::generate_key_pair(password.as_bytes())?;
    let create = |file: &Path, mode: u32, text: &str| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(file)
            .and_then(|mut out| out.write_all(text.as_bytes()))
            .with_context(|| format!("writing {}", file.display()))
    };
    create(&private_file, 0o600, &private)?;
    create(&public_file, 0o644, &public)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "private key: {}", private_file.display())?;
    writeln!(out, "public key:  {}", public_file.display())?;
    Ok(())
}
