//! `toolhost new`: names, every language's files, the Rust lock.

use super::*;

#[test]
fn names_are_checked() {
    for good in ["weather", "weather-tools", "a1"] {
        check_name(good).unwrap();
    }
    for bad in [
        "",
        "Weather",
        "1abc",
        "-x",
        "x-",
        "a_b",
        "a.b",
        "a/b",
        &"a".repeat(65),
    ] {
        assert!(check_name(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn go_package_names_are_mapped_or_refused() {
    assert_eq!(go_package("weather-tools").unwrap(), "weathertools");
    assert_eq!(go_package("time").unwrap(), "time");
    for bad in ["go", "func", "ma-p", "main"] {
        let err = go_package(bad).unwrap_err().to_string();
        assert!(err.contains("reserves"), "{bad}: {err}");
    }
    let scratch = std::env::temp_dir().join(format!("toolhost-new-go-{}", std::process::id()));
    assert!(create("map", Lang::Go, &scratch).is_err());
    assert!(!scratch.join("map").exists(), "a refused name wrote files");
    // Rust, Python, JavaScript and C do not use the name as a Go identifier.
    create("map", Lang::C, &scratch).unwrap();
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn the_rust_project_vendors_every_file_of_the_sdk() {
    // A file of guest-sdk/src the project lacks breaks its build (`mod x;`).
    let sdk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk/src");
    let vendored: Vec<&str> = files(Lang::Rust)
        .unwrap()
        .iter()
        .map(|file| file.path)
        .collect();
    let mut dirs = vec![sdk.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let inside = path.strip_prefix(&sdk).unwrap().to_string_lossy();
            let wanted = format!("toolhost-guest/src/{inside}");
            assert!(
                vendored.contains(&wanted.as_str()),
                "{wanted} is not vendored"
            );
        }
    }
    // And the WIT its bindings are generated from.
    for wit in ["wit/plugin.wit", "wit/trace/trace.wit"] {
        assert!(vendored.contains(&wit), "{wit} is not vendored");
    }
}

#[test]
fn every_language_writes_a_filled_in_project() {
    let scratch = std::env::temp_dir().join(format!("toolhost-new-{}", std::process::id()));
    for lang in Lang::value_variants().iter().copied() {
        let root = create("my-tools", lang, &scratch.join(format!("{lang:?}"))).unwrap();
        for file in files(lang).unwrap() {
            if let Contents::Binary(_) = file.contents {
                let written = std::fs::read(root.join(file.path)).unwrap();
                assert_eq!(written, ADAPTER, "{lang:?} {}", file.path);
                // The build needs it: git must not ignore it as an output.
                let ignore = std::fs::read_to_string(root.join(".gitignore")).unwrap();
                assert!(!ignore.lines().any(|l| l == "*.wasm"), "{lang:?}: {ignore}");
                continue;
            }
            let text = std::fs::read_to_string(root.join(file.path)).unwrap();
            for placeholder in [
                "{{name}}",
                "{{crate_name}}",
                "{{go_package}}",
                "{{go_module}}",
            ] {
                assert!(
                    !text.contains(placeholder),
                    "{lang:?} {}: {placeholder}",
                    file.path
                );
            }
        }
        let build = std::fs::read_to_string(root.join("build.sh")).unwrap();
        assert!(build.contains("my-tools.wasm"), "{build}");
        // A second `new` into the same place is refused, and changes nothing.
        let err = create("my-tools", lang, &scratch.join(format!("{lang:?}"))).unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
    }
    let lock = std::fs::read_to_string(scratch.join("Js/my-tools/package-lock.json")).unwrap();
    let lock: Value = serde_json::from_str(&lock).unwrap();
    assert_eq!(lock["packages"][""]["name"], "my-tools");
    let cargo = std::fs::read_to_string(scratch.join("Rust/my-tools/Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"my-tools\""), "{cargo}");
    // A runtime's imports (componentize-py's sockets) are explained where
    // `list` is first suggested, so `tcp!` does not read as the plugin's fault.
    let readme = std::fs::read_to_string(scratch.join("Python/my-tools/README.md")).unwrap();
    assert!(
        readme.contains("sockets in Python") && readme.contains("needs no grant"),
        "{readme}"
    );
    let go = std::fs::read_to_string(scratch.join("Go/my-tools/tools.go")).unwrap();
    assert!(go.contains("\npackage mytools\n"), "{go}");
    let bindings =
        std::fs::read_to_string(scratch.join("Go/my-tools/toolhost-guest/bindings/go.mod"))
            .unwrap();
    assert!(
        bindings.contains("replace toolhost.local/my-tools => ../..\n"),
        "{bindings}"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// The Rust project's lock is complete and current for its manifest
/// (`cargo metadata --locked --offline`: cargo would neither change it nor
/// fetch anything to resolve it), wherever the project's name sorts, and
/// pins the versions the workspace builds the SDK with.
#[test]
fn the_rust_project_ships_a_current_cargo_lock() {
    let scratch = std::env::temp_dir().join(format!("toolhost-new-lock-{}", std::process::id()));
    let workspace_lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"))
            .unwrap();
    for name in ["aaa", "my-tools", "zzz"] {
        let root = create(name, Lang::Rust, &scratch).unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let checked = std::process::Command::new(cargo)
            .args(["metadata", "--locked", "--offline", "--format-version", "1"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            checked.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&checked.stderr)
        );
        let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
        assert!(lock.contains(&format!("name = \"{name}\"")), "{lock}");
        for block in lock.split("\n\n").filter(|b| b.contains("source = ")) {
            let pinned = block.lines().take(3).collect::<Vec<_>>().join("\n");
            assert!(
                workspace_lock.contains(&pinned),
                "the workspace does not build {pinned}: refresh templates/rust/Cargo.lock \
                 (see `cargo_lock`)"
            );
        }
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}
