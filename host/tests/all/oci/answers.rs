//! A registry's error answers, said plainly: a missing tag (with the tags
//! there are), manifest, repository or blob, and credentials wanted, each
//! produced for real on a `docker-registry`, through the library and the CLI.

use toolhost::oci::{Auth, Client, ClientOptions, MAX_TAGS_SHOWN, OciError};

use super::{Registry, client, echo_bytes, files, one_line_error, pull, stderr, toolhost};

/// Pushes echo to `repository` at each of `tags`.
async fn push_tags(registry: &Registry, repository: &str, tags: &[String]) {
    let client = client(registry);
    for tag in tags {
        let reference = format!("{}/{repository}:{tag}", registry.address());
        client
            .push(&reference.parse().unwrap(), &echo_bytes())
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_tag_lists_the_tags_there_are() {
    let registry = Registry::start();
    let address = registry.address();
    push_tags(&registry, "tools/text", &["1.0".into(), "1.1".into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().to_str().unwrap();

    let missing = format!("{address}/tools/text:9.9");
    let err = one_line_error(&toolhost(&["pull", &missing, "--insecure", "--to", to]));
    assert!(
        err.contains(&format!(
            "pulling {missing}: no tag 9.9 in tools/text (tags: 1.0, 1.1); "
        )),
        "{err}"
    );
    // The registry's own words stay at the end.
    assert!(
        err.trim_end()
            .ends_with("the registry said: manifest unknown"),
        "{err}"
    );
    assert!(!err.contains("envelope"), "{err}");
    assert!(files(dir.path()).is_empty());

    match pull(&client(&registry), &missing).await.unwrap_err() {
        OciError::NoTag {
            tag,
            repository,
            tags,
            ..
        } => {
            assert_eq!((tag.as_str(), repository.as_str()), ("9.9", "tools/text"));
            let tags = tags.expect("the tags are listed");
            assert_eq!(tags.shown, ["1.0", "1.1"]);
            assert!(!tags.more);
        }
        other => panic!("{other}"),
    }
    // `resolve` (a HEAD request: no error body) says the same.
    let err = client(&registry)
        .resolve(&missing.parse().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::NoTag { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tags_listed_are_bounded() {
    let registry = Registry::start();
    let tags: Vec<String> = (0..=MAX_TAGS_SHOWN).map(|i| format!("1.{i}")).collect();
    push_tags(&registry, "tools/many", &tags).await;
    let missing = format!("{}/tools/many:9.9", registry.address());
    let err = pull(&client(&registry), &missing).await.unwrap_err();
    let OciError::NoTag {
        tags: Some(tags), ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(tags.shown.len(), MAX_TAGS_SHOWN, "{err}");
    assert!(tags.more, "{err}");
    assert!(err.to_string().contains(", …); the registry said"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_repository_or_digest_is_named() {
    let registry = Registry::start();
    let address = registry.address();
    push_tags(&registry, "tools/text", &["1.0".into()]).await;
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().to_str().unwrap();

    // The tag's manifest is unknown, and listing the tags shows the
    // repository is not there either.
    let nowhere = format!("{address}/tools/nope:1.0");
    let err = one_line_error(&toolhost(&["pull", &nowhere, "--insecure", "--to", to]));
    assert!(
        err.contains(&format!(
            "pulling {nowhere}: no repository tools/nope in {address}; "
        )),
        "{err}"
    );
    assert!(
        err.contains("the registry said: repository name not known to registry"),
        "{err}"
    );
    let err = pull(&client(&registry), &nowhere).await.unwrap_err();
    assert!(matches!(err, OciError::NoRepository { .. }), "{err}");

    let zeros = "0".repeat(64);
    let pinned = format!("{address}/tools/text@sha256:{zeros}");
    let err = one_line_error(&toolhost(&["pull", &pinned, "--insecure", "--to", to]));
    assert!(
        err.contains(&format!("no manifest sha256:{zeros} in tools/text; ")),
        "{err}"
    );
    assert!(files(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_wants_credentials_says_how_to_give_them() {
    let registry = Registry::start_wanting_credentials();
    let address = registry.address();
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().to_str().unwrap();
    let reference = format!("{address}/tools/text:1.0");
    let target = format!("oci://{reference}");
    // No Docker credentials of the user's may answer for the test.
    let no_docker = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .arg("--no-cache")
            .args(args)
            .env("DOCKER_CONFIG", no_docker.path())
            .env_remove("TOOLHOST_REGISTRY_TOKEN")
            .output()
            .unwrap()
    };

    for (args, action) in [
        (
            vec!["pull", &reference, "--insecure", "--to", to],
            "pulling",
        ),
        (
            vec!["push", toolhost_test_plugins::ECHO, &target, "--insecure"],
            "pushing to",
        ),
    ] {
        let err = one_line_error(&run(&args));
        assert!(
            err.contains(&format!(
                "{action} {reference}: {address} wants credentials and none were given"
            )),
            "{err}"
        );
        for how in [
            "--token-file",
            "TOOLHOST_REGISTRY_TOKEN",
            "docker login",
            "docs/oci.md",
        ] {
            assert!(err.contains(how), "{how}: {err}");
        }
    }
    let mut options = ClientOptions::default();
    options.plain_http.push(address.clone());
    let err = pull(&Client::new(&options).unwrap(), &reference)
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::NoCredentials { .. }), "{err}");

    // With a token the registry takes it, and the push goes through.
    let token = dir.path().join("token");
    std::fs::write(&token, "any-token").unwrap();
    let out = run(&[
        "push",
        toolhost_test_plugins::ECHO,
        &target,
        "--insecure",
        "--token-file",
        token.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    options.auth = Auth::Bearer("any-token".into());
    pull(&Client::new(&options).unwrap(), &reference)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blob_lost_from_the_registry_is_named() {
    let registry = Registry::start();
    let reference = format!("{}/tools/text:1.0", registry.address());
    let pushed = client(&registry)
        .push(&reference.parse().unwrap(), &echo_bytes())
        .await
        .unwrap();
    registry.lose_blob(&pushed.layer_digest);
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().to_str().unwrap();

    let err = one_line_error(&toolhost(&["pull", &reference, "--insecure", "--to", to]));
    assert!(
        err.contains(&format!(
            "pulling {reference}: the registry lacks the blob {} that its manifest names",
            pushed.layer_digest
        )),
        "{err}"
    );
    assert!(
        err.contains("the registry said: blob unknown to registry"),
        "{err}"
    );
    assert!(files(dir.path()).is_empty());
    match pull(&client(&registry), &reference).await.unwrap_err() {
        OciError::NoBlob { blob, .. } => assert_eq!(blob, Some(pushed.layer_digest)),
        other => panic!("{other}"),
    }
}
