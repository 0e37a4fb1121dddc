//! `toolhost serve`: the plugins directory, layered as configured, over MCP
//! on stdio or HTTP, following changes.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use toolhost::config::{AuthConfig, ServeConfig, UnmatchedName};
use toolhost::mcp::{ApprovalKeys, HttpOptions, OAuth, OAuthOptions};
use toolhost::state::StateOptions;
use toolhost::toolset::LoadState;
use toolhost::{Config, Engine, McpServer, PluginDir};

use super::{Cli, layered, options, unmatched, warn_unmatched};

/// `toolhost serve`: the plugins directory, layered as configured, over MCP.
/// This replica's name: `$TOOLHOST_REPLICA`, else `[serve] replica_name`;
/// trimmed, and none when blank.
pub(super) fn replica_name(settings: &ServeConfig) -> Option<String> {
    std::env::var("TOOLHOST_REPLICA")
        .ok()
        .filter(|name| !name.trim().is_empty())
        .or_else(|| settings.replica_name.clone())
        .map(|name| name.trim().to_owned())
}

pub(super) async fn serve(
    cli: &Cli,
    config: &Config,
    settings: &ServeConfig,
    engine: &Engine,
    http: Option<&str>,
    watch: bool,
) -> Result<()> {
    let dir = super::plugins::checked(cli, config, super::Takes::Dir("serve"))?;
    // The server answers at once; each plugin joins as it loads (a slow or
    // failing one delays no other), and `tools/list` waits for the first load.
    let plugins =
        std::sync::Arc::new(PluginDir::start_configured(engine, &dir, options(cli, config)).await?);
    // Sources are checked at once, then their tags every poll interval; each
    // lives until the server stops.
    let sources = super::sources::open(config, engine)?;
    let first_sources = sources.as_ref().map(|sources| sources.follow(&plugins));
    let (loaded, ready) = tokio::sync::watch::channel(false);
    let first_load = plugins.when_loaded();
    let loading = std::sync::Arc::clone(&plugins);
    // Each plugin's compile and load is logged as it happens (target
    // `toolhost::load`, at info by default for `serve`); a first load that
    // brings no plugin is said once, as the server starts.
    tokio::spawn(async move {
        first_load.await;
        if let Some(first_sources) = first_sources {
            first_sources.await;
        }
        let failed = loading
            .status()
            .iter()
            .filter(|s| matches!(s.state, LoadState::Failed { .. }))
            .count();
        if let Some(why) = super::plugins::emptiness(loading.dir(), loading.plugins().len(), failed)
        {
            let until = if watch { " until plugins arrive" } else { "" };
            tracing::warn!(target: "toolhost::serve", "{why}; serving no tools{until}");
        }
        let _ = loaded.send(true);
    });
    follow_unmatched(config, &plugins, ready.clone());
    if watch {
        plugins
            .watch()
            .with_context(|| format!("cannot watch {}", dir.display()))?;
    }
    let rescan = settings.rescan_secs.unwrap_or(DEFAULT_RESCAN_SECS);
    if watch && rescan > 0 {
        rescan_every(&plugins, Duration::from_secs(rescan));
    }
    let changes = plugins.subscribe();
    let tools = layered(plugins, config, engine)?;
    let mut server = McpServer::new(tools)
        .with_changes(changes)
        .with_engine(engine)
        .with_ready(ready);
    if let Some(ms) = settings.progress_interval_ms {
        server = server.with_progress_interval(Duration::from_millis(ms));
    }
    if let Some(keys) = approval_keys(settings)? {
        server = server.with_approval_keys(keys);
    }
    if let Some(secs) = settings.approval_ttl_secs {
        server = server.with_approval_ttl(Duration::from_secs(secs));
    }
    let replica = replica_name(settings);
    if let Some(audit) = &config.audit {
        let options = audit.options(replica.as_deref());
        let log = toolhost::audit::AuditLog::open(&options).context("[audit]")?;
        server = server.with_observer(std::sync::Arc::new(log));
    }
    if let Some(enabled) = settings.tasks {
        server = server.with_tasks(enabled);
    }
    if let Some(enabled) = settings.result_text {
        server = server.with_result_text(enabled);
    }
    if let Some(secs) = settings.task_ttl_secs {
        if secs == 0 {
            bail!("[serve] task_ttl_secs must be at least 1");
        }
        server = server.with_task_ttl(Duration::from_secs(secs));
    }
    // A used approval is remembered for the state TTL: one that outlives it
    // could be replayed once its record has expired.
    let approval_ttl = settings
        .approval_ttl_secs
        .map_or(McpServer::DEFAULT_APPROVAL_TTL, Duration::from_secs);
    let state_ttl = config
        .state
        .ttl_secs
        .map_or(StateOptions::default().ttl, Duration::from_secs);
    if approval_ttl > state_ttl {
        bail!(
            "[serve] approval_ttl_secs ({} s) is longer than [state] ttl_secs ({} s), how long a \
             used approval is remembered: an approval could then be replayed; lower the first or \
             raise the second",
            approval_ttl.as_secs(),
            state_ttl.as_secs()
        );
    }
    let Some(addr) = http else {
        server.serve_stdio().await?;
        drop(sources);
        return Ok(());
    };
    let mut options = HttpOptions::default();
    for host in &config.serve.allowed_hosts {
        options.allow_host(host.clone());
    }
    for origin in &config.serve.allowed_origins {
        options.allow_origin(origin.clone());
    }
    if let Some(max) = settings.max_connections {
        options.max_connections(max);
    }
    if let Some(max) = settings.max_connections_per_peer {
        options.max_connections_per_peer(max);
    }
    if let Some(ms) = settings.header_read_timeout_ms {
        options.header_read_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.idle_timeout_ms {
        options.idle_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.session_idle_timeout_ms {
        options.session_idle_timeout(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.stream_resume_ms {
        options.stream_resume(Duration::from_millis(ms));
    }
    if let Some(ms) = settings.stream_close_after_ms {
        options.stream_close_after(Some(Duration::from_millis(ms)));
    }
    if let Some(replica) = &replica {
        options.replica_name(replica);
    }
    if let Some(ms) = settings.drain_timeout_ms {
        options.drain_timeout(Duration::from_millis(ms));
    }
    let token = match (
        std::env::var("TOOLHOST_MCP_TOKEN"),
        &config.serve.token_file,
    ) {
        (Ok(token), _) if !token.trim().is_empty() => Some(token.trim().to_owned()),
        (_, Some(file)) => {
            let token = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the token file {}", file.display()))?;
            if token.trim().is_empty() {
                bail!("the token file {} is empty", file.display());
            }
            Some(token.trim().to_owned())
        }
        _ => None,
    };
    match (token, &settings.auth) {
        (Some(_), Some(_)) => bail!(
            "$TOOLHOST_MCP_TOKEN is set and [serve.auth] is configured: choose one (a shared token, or OAuth)"
        ),
        (Some(token), None) => {
            options.bearer_token(token);
        }
        (None, Some(auth)) => {
            options.authenticator(oauth(auth)?);
        }
        (None, None) => {}
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback()
        && std::env::var("TOOLHOST_MCP_TOKEN").is_err()
        && config.serve.token_file.is_none()
        && settings.auth.is_none()
    {
        eprintln!(
            "warning: serving on {local}, which is not a loopback address, without a bearer token (set TOOLHOST_MCP_TOKEN or [serve] token_file)"
        );
    }
    // Ctrl-C (SIGINT) or SIGTERM (what orchestrators send) stops accepting,
    // lets running calls finish (drain_timeout_ms), cuts the calls left
    // (guests stopped, each answered with an error saying so), ends the
    // sessions, lets connections close (bounded) and exits 0.
    // Registered before the address is announced, so an early SIGTERM is not
    // the default kill.
    #[cfg(unix)]
    let mut terminate =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    // One write: whoever reads the log as it grows sees the line whole.
    let line = format!("toolhost: serving MCP at http://{local}/mcp\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    let shutdown = async move {
        #[cfg(unix)]
        let signal = async {
            match terminate.as_mut() {
                Some(terminate) => {
                    terminate.recv().await;
                    "SIGTERM"
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let signal = std::future::pending::<&str>();
        let why = tokio::select! {
            _ = tokio::signal::ctrl_c() => "Ctrl-C",
            why = signal => why,
        };
        eprintln!("toolhost: {why}: stopping (running calls may finish first: drain_timeout_ms)");
    };
    server.serve_http(listener, options, shutdown).await?;
    drop(sources);
    Ok(())
}

/// The OAuth resource server `[serve.auth]` describes.
fn oauth(auth: &AuthConfig) -> Result<OAuth> {
    let mut options = OAuthOptions::new(auth.resource.trim());
    for issuer in &auth.issuers {
        match &issuer.jwks_uri {
            Some(jwks) => options.issuer_with_jwks(issuer.issuer.trim(), jwks.trim()),
            None => options.issuer(issuer.issuer.trim()),
        };
    }
    options
        .require_scopes(auth.scopes.iter().cloned())
        .scopes_supported(auth.scopes_supported.iter().cloned());
    if let Some(claim) = &auth.roles_claim {
        options.roles_claim(claim.clone());
    }
    if let Some(secs) = auth.leeway_secs {
        options.leeway(Duration::from_secs(secs));
    }
    if let Some(secs) = auth.jwks_cache_secs {
        options.jwks_cache(Duration::from_secs(secs));
    }
    if let Some(secs) = auth.jwks_refresh_min_secs {
        options.jwks_min_refresh(Duration::from_secs(secs));
    }
    if let Some(ms) = auth.fetch_timeout_ms {
        options.fetch_timeout(Duration::from_millis(ms));
    }
    OAuth::new(options).context("[serve.auth]")
}

/// The default of `[serve] rescan_secs`.
const DEFAULT_RESCAN_SECS: u64 = 30;

/// Rescans the plugins directory every `interval`, for file systems whose
/// changes the watcher never hears of; a rescan that finds nothing changed
/// costs a directory read and a `stat` per file. Stops with the server.
fn rescan_every(plugins: &std::sync::Arc<PluginDir>, interval: Duration) {
    let plugins = std::sync::Arc::downgrade(plugins);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let Some(plugins) = plugins.upgrade() else {
                return;
            };
            match plugins.reload_now().await {
                Ok(change) if !change.is_empty() => {
                    tracing::info!(target: "toolhost::load", "the periodic rescan found changes the watcher missed");
                }
                Ok(_) => {}
                Err(err) => tracing::warn!(%err, "periodic rescan of the plugins directory failed"),
            }
        }
    });
}

/// The approval keys: `$TOOLHOST_STATE_KEYS`, else `[serve] state_key_file`,
/// else none (the server makes a key for this process).
fn approval_keys(settings: &ServeConfig) -> Result<Option<ApprovalKeys>> {
    if let Ok(text) = std::env::var("TOOLHOST_STATE_KEYS")
        && !text.trim().is_empty()
    {
        return ApprovalKeys::parse(&text)
            .map(Some)
            .context("$TOOLHOST_STATE_KEYS");
    }
    let Some(file) = &settings.state_key_file else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the state key file {}", file.display()))?;
    ApprovalKeys::parse(&text)
        .map(Some)
        .with_context(|| format!("the state key file {}", file.display()))
}

/// Follows the names of `config` that match nothing in `plugins`: warns about
/// each once its first load is done, then, after each reload, about those that
/// newly match nothing (and notes those that match again), so a reload loop
/// repeats nothing.
fn follow_unmatched(
    config: &Config,
    plugins: &std::sync::Arc<PluginDir>,
    mut ready: tokio::sync::watch::Receiver<bool>,
) {
    let config = config.clone();
    let mut changes = plugins.subscribe();
    let plugins = std::sync::Arc::downgrade(plugins);
    tokio::spawn(async move {
        // The first load of the directory and the first check of every source.
        let _ = ready.wait_for(|ready| *ready).await;
        let mut reported: std::collections::BTreeMap<_, UnmatchedName> = Default::default();
        loop {
            let Some(dir) = plugins.upgrade() else { return };
            let files: Vec<String> = dir.status().into_iter().map(|s| s.plugin).collect();
            let now: std::collections::BTreeMap<_, _> = unmatched(&config, &files, &*dir)
                .into_iter()
                .map(|name| ((name.source.clone(), name.name.clone()), name))
                .collect();
            drop(dir);
            for (key, name) in &now {
                if !reported.contains_key(key) {
                    warn_unmatched(name);
                }
            }
            for (key, name) in &reported {
                if !now.contains_key(key) {
                    tracing::info!(
                        "configuration: {}: `{}` matches again",
                        name.place(),
                        name.name
                    );
                }
            }
            reported = now;
            match changes.recv().await {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}
