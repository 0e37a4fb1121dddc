use super::*;
use rmcp::model::RequestMetaObject;

fn answer(line: &str) -> Value {
    match check_line(line.as_bytes()) {
        Verdict::Answer(answer) => answer,
        other => panic!("{line}: expected an answer, got {other:?}"),
    }
}

fn code_and_id(answer: &Value) -> (i64, Value) {
    (
        answer["error"]["code"].as_i64().unwrap_or_default(),
        answer["id"].clone(),
    )
}

#[test]
fn bad_lines_are_answered_with_the_right_code_and_id() {
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{{\"name\":\"x\",\"arguments\":{{\"a\":{}1{}}}}}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let cases: Vec<(String, i64, Value)> = vec![
        ("not json".into(), -32700, Value::Null),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,".into(), -32700, Value::Null),
        ("[]".into(), -32600, Value::Null),
        ("42".into(), -32600, Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":[]}"#.into(),
            -32602,
            json!(3),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":5}"#.into(),
            -32600,
            json!(4),
        ),
        (
            r#"{"jsonrpc":"2.0","method":5}"#.into(),
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#.into(),
            -32600,
            json!("a"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#.into(),
            -32600,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":6}"#.into(), -32600, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#.into(),
            -32602,
            json!(7),
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}"#
                .into(),
            -32602,
            json!(8),
        ),
        (deep, -32600, json!(9)),
    ];
    for (line, code, id) in cases {
        let got = answer(&line);
        assert_eq!(
            code_and_id(&got),
            (code, id),
            "{}",
            &line[..line.len().min(80)]
        );
        assert_eq!(got["jsonrpc"], "2.0");
    }
}

#[test]
fn tools_calls_read_directly_are_what_rmcp_reads() {
    for line in [
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,{"b":null}]}}}"#,
        r#"{"jsonrpc":"2.0","id":"x-1","method":"tools/call","params":{"name":"echo"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"p","dev.toolhost/invocation":"run-1"},"name":"add","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":null,"name":"add","requestState":"s","inputResponses":{}}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","extra":1}}"#,
    ] {
        let Verdict::Deliver(ours) = check_line(line.as_bytes()) else {
            panic!("{line}: not delivered");
        };
        let rmcp: ClientJsonRpcMessage = serde_json::from_str(line).unwrap();
        let (JsonRpcMessage::Request(ours), JsonRpcMessage::Request(theirs)) = (&*ours, &rmcp)
        else {
            panic!("{line}: not a request");
        };
        assert!(
            matches!(&ours.request, ClientRequest::CallToolRequest(_)),
            "{line}"
        );
        assert_eq!(ours.id, theirs.id, "{line}");
        assert_eq!(
            serde_json::to_value(&ours.request).unwrap(),
            serde_json::to_value(&theirs.request).unwrap(),
            "{line}"
        );
        let meta = |r: &ClientRequest| match r {
            ClientRequest::CallToolRequest(r) => r.extensions.get::<RequestMetaObject>().cloned(),
            _ => None,
        };
        assert_eq!(meta(&ours.request), meta(&theirs.request), "{line}");
    }
    // Params that do not fit are answered, as before; an odd `_meta` is
    // left to rmcp's reading.
    for (line, code) in [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5}}"#,
            -32602,
        ),
        (r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#, -32602),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","arguments":[]}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","_meta":5}}"#,
            -32602,
        ),
    ] {
        assert_eq!(code_and_id(&answer(line)), (code, json!(7)), "{line}");
    }
}

#[test]
fn batches_are_refused_per_request() {
    let got = answer(
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]"#,
    );
    let ids: Vec<_> = got
        .as_array()
        .map(|a| a.iter().map(code_and_id).collect())
        .unwrap_or_default();
    assert_eq!(ids, [(-32600, json!(1)), (-32600, json!("b"))]);
}

#[test]
fn good_messages_pass_and_notifications_are_never_answered() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"vendor/thing","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
    ] {
        assert!(
            matches!(check_line(line.as_bytes()), Verdict::Deliver(_)),
            "{line}"
        );
    }
    for line in [
        "",
        "  \r",
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}"#,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
    ] {
        assert!(
            matches!(check_line(line.as_bytes()), Verdict::Skip),
            "{line}"
        );
    }
}

#[test]
fn the_known_methods_are_rmcps_requests() {
    for method in [
        "ping",
        "initialize",
        "tools/call",
        "tools/list",
        "resources/read",
        "resources/templates/list",
        "prompts/get",
        "completion/complete",
        "subscriptions/listen",
        "tasks/get",
    ] {
        assert!(is_known_method(method), "{method}");
    }
    for method in ["notifications/cancelled", "tools/frobnicate", ""] {
        assert!(!is_known_method(method), "{method}");
    }
    // A known method with params that do not fit is −32602, an unknown one
    // goes on to rmcp (which answers −32601).
    let bad = r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":5}}"#;
    assert_eq!(code_and_id(&answer(bad)), (-32602, json!(1)));
    let unknown = r#"{"jsonrpc":"2.0","id":2,"method":"x/y","params":{"uri":5}}"#;
    assert!(matches!(
        check_line(unknown.as_bytes()),
        Verdict::Deliver(_)
    ));
}

#[test]
fn an_over_long_lines_id_is_read_from_its_head() {
    let big = "x".repeat(100);
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"xx"#.to_owned(),
            json!(7),
        ),
        (
            r#" { "id" : "call-1" , "jsonrpc":"2.0""#.to_owned(),
            json!("call-1"),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"tools/call","id":-3}"#.to_owned(),
            json!(-3),
        ),
        // Behind a member cut short: not read.
        (
            format!(r#"{{"jsonrpc":"2.0","params":{{"a":"{big}"#),
            Value::Null,
        ),
        // Possibly cut itself (12 of 123?): not guessed.
        (r#"{"jsonrpc":"2.0","id":12"#.to_owned(), Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x""#.to_owned(),
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":null,"#.to_owned(), Value::Null),
        (r#"[{"id":1},"#.to_owned(), Value::Null),
        ("not json at all".to_owned(), Value::Null),
        (String::new(), Value::Null),
    ];
    for (head, id) in cases {
        assert_eq!(id_in_head(head.as_bytes()), id, "{head}");
    }
}
