use super::*;

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("toolhost.toml"))
}

#[test]
fn limits_layer_defaults_global_and_per_plugin() {
    let config = parse(
        "[limits]\nfuel = 1000\ntimeout_ms = 500\n[plugin.codec.limits]\ntimeout_ms = 30000\n",
    )
    .unwrap();
    let codec = config.limits_for("codec");
    assert_eq!(codec.fuel, 1000);
    assert_eq!(codec.timeout, Duration::from_secs(30));
    let text = config.limits_for("text");
    assert_eq!(text.timeout, Duration::from_millis(500));
    assert_eq!(text.memory_bytes, Limits::default().memory_bytes);
}

#[test]
fn errors_name_the_file_the_key_and_the_reason() {
    let err = parse("[limits]\nfule = 3\n").unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("toolhost.toml"), "{text}");
    assert!(text.contains("fule") && text.contains("line 2"), "{text}");
    let err = parse("[plugin.codec.limits]\nmemory_mib = 0\n").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("plugin.codec.limits.memory_mib"));
    assert!(err.to_string().contains("greater than 0"), "{err}");
    let err = parse("[limits]\ntimeout_ms = \"soon\"\n").unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
    let err = parse("[aliases.tools]\n\"\" = \"word_count\"\n").unwrap_err();
    assert!(err.to_string().contains("must not be empty"), "{err}");
}

#[test]
fn the_compilation_is_one_of_three_names() {
    use crate::engine::Compilation;
    for (name, compilation) in [
        ("tiered", Compilation::Tiered),
        ("optimized", Compilation::Optimized),
        ("baseline", Compilation::Baseline),
    ] {
        let config = parse(&format!("[engine]\ncompilation = \"{name}\"\n")).unwrap();
        assert_eq!(config.engine.compilation, Some(compilation));
        assert_eq!(compilation.as_str(), name);
    }
    assert_eq!(parse("").unwrap().engine.compilation, None);
    let config = parse("[engine]\nmax_concurrent_instances = 64\n").unwrap();
    assert_eq!(config.engine.max_concurrent_instances, Some(64));
    assert_eq!(parse("").unwrap().engine.max_concurrent_instances, None);
    let err = parse("[engine]\ncompilation = \"fast\"\n").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("fast") && text.contains("tiered") && text.contains("line 2"),
        "{text}"
    );
}

#[test]
fn the_state_section_is_checked_and_keeps_passwords_out() {
    let config = parse(
        "[state]\nurl = \"redis://:hunter2@127.0.0.1:6379/0\"\nprefix = \"t:\"\nttl_secs = 60\ntimeout_ms = 500\n",
    )
    .unwrap();
    assert!(!format!("{config:?}").contains("hunter2"));
    let mut engine = EngineConfig::default();
    config.state.apply(&mut engine);
    assert_eq!(engine.state.prefix, "t:");
    assert_eq!(engine.state.ttl, Duration::from_secs(60));
    assert_eq!(engine.state.timeout, Duration::from_millis(500));
    let err = parse("[state]\nttl = 3\n").unwrap_err();
    assert!(err.to_string().contains("ttl"), "{err}");
    let err = parse("[state]\nttl_secs = 0\n").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("state.ttl_secs"));
    let err = parse("[state]\nurl = \"http://:hunter2@host\"\n").unwrap_err();
    assert_eq!(err.key.as_deref(), Some("state.url"));
    assert!(!err.to_string().contains("hunter2"), "{err}");
    // Unset, state stays in process.
    assert_eq!(parse("").unwrap().state.url, None);
}

#[test]
fn the_documented_example_parses() {
    let config = parse(
        r#"
plugins = "target/plugins"
[limits]
fuel = 2_000_000_000
memory_mib = 256
[plugin.codec.limits]
timeout_ms = 30_000
[load]
timeout_ms = 5_000
max_tools = 256
max_schema_bytes = 262_144
max_declaration_bytes = 4_194_304
[filter]
allow = ["*"]
deny = ["fail"]
[confirm]
tools = ["batch_digest"]
hint = "Run it?"
[aliases.tools]
wc = "word_count"
[aliases.arguments.word_count]
content = "text"
[state]
url = "redis://127.0.0.1:6379/0"
prefix = "toolhost:"
ttl_secs = 3600
timeout_ms = 2000
"#,
    )
    .unwrap();
    assert_eq!(config.filter.deny, ["fail"]);
    assert_eq!(config.aliases.tools["wc"], "word_count");
    assert_eq!(config.aliases.arguments["word_count"]["content"], "text");
    assert_eq!(config.confirm.tools, ["batch_digest"]);
    let mut engine = EngineConfig::default();
    config.load.apply(&mut engine);
    assert_eq!(engine.load.timeout, Duration::from_secs(5));
    assert_eq!(engine.load.max_schema_bytes, 262_144);
}
