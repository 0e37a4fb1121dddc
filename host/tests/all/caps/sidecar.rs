//! A plugin's sidecar policy `NAME.policy.toml`: it grants when the
//! configuration does not, the configuration wins over it, a bad one names
//! its file, key and reason, and a change to it reloads the plugin.

use super::*;

#[tokio::test]
async fn a_sidecar_policy_grants_and_the_configuration_wins_over_it() {
    let tree = tree();
    let plugins = tempfile::tempdir().unwrap();
    let wasm = plugins.path().join("caps.wasm");
    std::fs::copy(CAPS, &wasm).unwrap();
    std::fs::write(
        plugins.path().join("caps.policy.toml"),
        format!(
            "[[dirs]]\nhost = {:?}\nguest = \"/data\"\n",
            tree.grant.display().to_string()
        ),
    )
    .unwrap();
    let caps = Plugin::load(engine(), &wasm, &PluginOptions::default())
        .await
        .unwrap();
    assert_eq!(caps.grants().dirs().len(), 1);
    let out = call(&caps, "read", json!({"path": "/data/inside.txt"}))
        .await
        .unwrap();
    assert_eq!(result(out), INSIDE_TEXT);
    // Grants given by the configuration (here: none but an env var) win whole.
    let mut grants = Grants::default();
    grants.env("ONLY", "this");
    let caps = Plugin::load(engine(), &wasm, &options(grants))
        .await
        .unwrap();
    assert!(caps.grants().dirs().is_empty());
    failure(call(&caps, "read", json!({"path": "/data/inside.txt"})).await);
    // Sidecars can be turned off.
    let mut off = PluginOptions::default();
    off.sidecar_policy(false);
    let caps = Plugin::load(engine(), &wasm, &off).await.unwrap();
    assert!(caps.grants().is_empty());
}

#[tokio::test]
async fn an_invalid_sidecar_policy_names_the_file_the_key_and_the_reason() {
    let plugins = tempfile::tempdir().unwrap();
    let wasm = plugins.path().join("caps.wasm");
    std::fs::copy(CAPS, &wasm).unwrap();
    let cases = [
        (
            "[[dirs]]\nhost = \".\"\nguest = \"data\"\n",
            "dirs[0].guest",
        ),
        (
            "[[dirs]]\nhost = \"missing\"\nguest = \"/d\"\n",
            "dirs[0].host",
        ),
        ("[network]\nhttp = [\"ftp://x.com\"]\n", "network.http[0]"),
        (
            "[env_vars]\nX = { value = \"1\", from_env = \"Y\" }\n",
            "env_vars.X",
        ),
    ];
    for (text, key) in cases {
        std::fs::write(plugins.path().join("caps.policy.toml"), text).unwrap();
        let err = Plugin::load(engine(), &wasm, &PluginOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, toolhost::LoadError::Policy { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("caps.policy.toml") && text.contains(key),
            "{text}"
        );
    }
    std::fs::write(
        plugins.path().join("caps.policy.toml"),
        "[network]\nhtps = []\n",
    )
    .unwrap();
    let err = Plugin::load(engine(), &wasm, &PluginOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 2") && err.contains("unknown field"),
        "{err}"
    );
}

/// Polls until `done` holds (bounds a test that would otherwise hang; no timing is asserted).
async fn eventually(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done().await {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_sidecar_policy_change_reloads_the_plugin() {
    use toolhost::toolset::LoadState;
    use toolhost::{Context, PluginDir, ToolsetExt};
    let (a, b) = (tree(), tree());
    std::fs::write(b.grant.join("inside.txt"), "the other grant").unwrap();
    let plugins = tempfile::tempdir().unwrap();
    std::fs::copy(CAPS, plugins.path().join("caps.wasm")).unwrap();
    let sidecar = plugins.path().join("caps.policy.toml");
    let grant = |dir: &Path| {
        format!(
            "[[dirs]]\nhost = {:?}\nguest = \"/data\"\n",
            dir.display().to_string()
        )
    };
    std::fs::write(&sidecar, grant(&a.grant)).unwrap();
    let set = PluginDir::open(engine(), plugins.path(), PluginOptions::default())
        .await
        .unwrap();
    let read = async |set: &PluginDir| {
        set.invoke(&Context::new(), "read", json!({"path": "/data/inside.txt"}))
            .await
    };
    assert_eq!(result(read(&set).await.unwrap()), INSIDE_TEXT);

    // reload_now picks a policy change up, although the .wasm did not change.
    std::fs::write(&sidecar, grant(&b.grant)).unwrap();
    set.reload_now().await.unwrap();
    assert_eq!(result(read(&set).await.unwrap()), "the other grant");

    // An invalid policy keeps the previous version serving and says why.
    std::fs::write(&sidecar, "[[dirs]]\nhost = \"/nope\"\nguest = \"/data\"\n").unwrap();
    set.reload_now().await.unwrap();
    let status = set.status();
    match &status[0].state {
        LoadState::Failed {
            error,
            serving_previous,
        } => {
            assert!(*serving_previous);
            assert!(
                error.contains("caps.policy.toml") && error.contains("dirs[0].host"),
                "{error}"
            );
        }
        other => panic!("expected a failed reload, got {other:?}"),
    }
    assert_eq!(result(read(&set).await.unwrap()), "the other grant");

    // The watcher follows sidecar changes too; removing the policy revokes the grant.
    set.watch().unwrap();
    std::fs::remove_file(&sidecar).unwrap();
    eventually("the grant to be revoked", async || {
        read(&set).await.is_err()
    })
    .await;
    let err = failure(read(&set).await);
    assert!(err.starts_with("/data/inside.txt: "), "{err}");
}
