//! The conversions a call makes: JSON arguments to `Val`s and back, results
//! to JSON, and what is refused, with its path.

use serde_json::{Value, json};
use wasmtime::component::Val;

use super::super::value::{self, Returned};
use super::{all_types, exported_tools, param, signature, tool};
use crate::schema::Schema;

/// Arguments for every function of `ALL_TYPES` that the conversion takes.
fn good_arguments() -> Vec<(&'static str, Value)> {
    vec![
        (
            "integers",
            json!({"a": 255, "b": 0, "c": 4_294_967_295_u32, "d": u64::MAX, "e": -128, "f": 2.0,
                   "g": -1, "h": i64::MIN}),
        ),
        ("floats", json!({"a": 1.5, "b": -1e300})),
        ("text", json!({"c": "é", "s": "hi", "on": true})),
        ("bytes", json!({"data": "AAEC/w=="})),
        (
            "points",
            json!({"items": [{"x": 1, "y": -2}, {"x": 0, "y": 0}]}),
        ),
        ("tuples", json!({"same": [1, 2], "mixed": [3, "four"]})),
        (
            "options",
            json!({"a": null, "b": {"some": null}, "c": "red", "d": {"circle": 1.0}}),
        ),
        (
            "options",
            json!({"a": "x", "b": {"some": 7}, "c": null, "d": "dot"}),
        ),
        (
            "options",
            json!({"a": "x", "b": null, "c": null, "d": null}),
        ),
        (
            "choose",
            json!({"hue": "blue", "access": ["write", "read"], "form": {"rect": [1.5, 2.0]}}),
        ),
        ("choose", json!({"hue": "red", "access": [], "form": "dot"})),
        ("results", json!({"r": {"ok": 1}, "unit": "err"})),
        ("results", json!({"r": {"err": "no"}, "unit": "ok"})),
        ("nothing", json!({})),
    ]
}

#[test]
fn arguments_convert_to_vals() {
    let component = all_types();
    let integers = signature(&component, "integers");
    let args = json!({"a": 255, "b": 0, "c": 7, "d": u64::MAX, "e": -128, "f": 2.0, "g": -1,
                      "h": i64::MIN});
    assert_eq!(
        value::arguments(&integers.params, &args).unwrap(),
        vec![
            Val::U8(255),
            Val::U16(0),
            Val::U32(7),
            Val::U64(u64::MAX),
            Val::S8(-128),
            Val::S16(2),
            Val::S32(-1),
            Val::S64(i64::MIN)
        ]
    );
    let options = signature(&component, "options");
    let args = json!({"a": null, "b": {"some": null}, "c": "red", "d": {"circle": 1.0}});
    assert_eq!(
        value::arguments(&options.params, &args).unwrap(),
        vec![
            Val::Option(None),
            Val::Option(Some(Box::new(Val::Option(None)))),
            Val::Option(Some(Box::new(Val::Enum("red".into())))),
            Val::Option(Some(Box::new(Val::Variant(
                "circle".into(),
                Some(Box::new(Val::Float64(1.0)))
            )))),
        ]
    );
    let bytes = signature(&component, "bytes");
    assert_eq!(
        value::arguments(&bytes.params, &json!({"data": "AAEC/w=="})).unwrap(),
        vec![Val::List(vec![
            Val::U8(0),
            Val::U8(1),
            Val::U8(2),
            Val::U8(255)
        ])]
    );
    let results = signature(&component, "results");
    assert_eq!(
        value::arguments(&results.params, &json!({"r": {"err": "no"}, "unit": "ok"})).unwrap(),
        vec![
            Val::Result(Err(Some(Box::new(Val::String("no".into()))))),
            Val::Result(Ok(None)),
        ]
    );
    let choose = signature(&component, "choose");
    // Flags are a set: a name given twice counts once.
    let args = json!({"hue": "blue", "access": ["write", "write"], "form": {"rect": [1.5, 2.0]}});
    assert_eq!(
        value::arguments(&choose.params, &args).unwrap()[1..],
        [
            Val::Flags(vec!["write".into()]),
            Val::Variant(
                "rect".into(),
                Some(Box::new(Val::Tuple(vec![
                    Val::Float32(1.5),
                    Val::Float32(2.0)
                ])))
            ),
        ]
    );
}

/// What the conversion takes, the schema takes, and it comes back as it
/// went (a float written as an integer aside).
#[test]
fn good_arguments_pass_the_schema_and_round_trip() {
    let component = all_types();
    let exported = exported_tools(&component, &Default::default());
    for (function, args) in good_arguments() {
        let schema = &tool(&exported.tools, &format!("types__{function}")).input_schema;
        let problems = Schema::input_value(schema.clone()).unwrap().problems(&args);
        assert!(problems.is_empty(), "{function}: {problems:?}");
        let signature = signature(&component, function);
        let vals = value::arguments(&signature.params, &args).unwrap();
        for ((name, ty), val) in signature.params.iter().zip(&vals) {
            let back = value::to_json(ty, val, "", 0).unwrap();
            let sent = &args[name];
            match sent.as_f64() {
                Some(x) if sent.is_f64() => assert_eq!(back.as_f64(), Some(x), "{function}.{name}"),
                _ => assert_eq!(&back, sent, "{function}.{name}"),
            }
        }
    }
}

#[track_caller]
fn refused(function: &str, args: Value, path: &str, problem: &str) {
    let component = all_types();
    let signature = signature(&component, function);
    let err = value::arguments(&signature.params, &args).unwrap_err();
    assert_eq!(err.path, path, "{err}");
    assert!(err.problem.contains(problem), "{err}");
}

#[test]
fn bad_arguments_are_refused_with_their_path() {
    let ints = |key: &str, value: Value| {
        let mut args = json!({"a": 0, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0});
        args[key] = value;
        args
    };
    refused(
        "integers",
        ints("a", json!(256)),
        "/a",
        "out of range: 0 to 255",
    );
    refused(
        "integers",
        ints("e", json!(-129)),
        "/e",
        "out of range: -128 to 127",
    );
    refused("integers", ints("c", json!(-1)), "/c", "out of range");
    refused("integers", ints("h", json!(u64::MAX)), "/h", "out of range");
    refused("integers", ints("d", json!(1.5)), "/d", "not an integer");
    refused("integers", ints("d", json!(1e19)), "/d", "past ±2^53");
    refused(
        "integers",
        ints("g", json!("1")),
        "/g",
        "expected an integer, got a string",
    );
    refused(
        "floats",
        json!({"a": 1e39, "b": 0}),
        "/a",
        "out of range for an f32",
    );
    refused(
        "text",
        json!({"c": "ab", "s": "", "on": true}),
        "/c",
        "exactly one character",
    );
    refused("bytes", json!({"data": "AAE"}), "/data", "not base64");
    refused(
        "points",
        json!({"items": [{"x": 1, "y": 2, "z": 3}]}),
        "/items/0/z",
        "unknown key",
    );
    refused(
        "points",
        json!({"items": [{"x": 1}]}),
        "/items/0/y",
        "missing",
    );
    refused("points", json!({}), "/items", "missing");
    refused("nothing", json!({"extra": 1}), "/extra", "unknown key");
    refused("nothing", json!([]), "", "expected an object");
    refused(
        "tuples",
        json!({"same": [1, 2], "mixed": ["3", "four"]}),
        "/mixed/0",
        "integer",
    );
    refused(
        "tuples",
        json!({"same": [1], "mixed": [3, "four"]}),
        "/same",
        "expected 2 items",
    );
    refused(
        "choose",
        json!({"hue": "pink", "access": [], "form": "dot"}),
        "/hue",
        "`pink` is not one of",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": ["sudo"], "form": "dot"}),
        "/access/0",
        "expected one of",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": [], "form": "square"}),
        "/form",
        "`square` is not one of",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": [], "form": "circle"}),
        "/form",
        "takes a value",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": [], "form": {"dot": 1}}),
        "/form/dot",
        "takes no value",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": [], "form": {"circle": "big"}}),
        "/form/circle",
        "expected a number",
    );
    refused(
        "choose",
        json!({"hue": "red", "access": [], "form": {"circle": 1, "dot": 2}}),
        "/form",
        "expected one of",
    );
    refused(
        "options",
        json!({"a": null, "b": 7, "c": null, "d": null}),
        "/b",
        "{\"some\": value}",
    );
    refused(
        "options",
        json!({"a": null, "b": {"some": -1}, "c": null, "d": null}),
        "/b/some",
        "out of range",
    );
    refused(
        "results",
        json!({"r": {"fine": 1}, "unit": "ok"}),
        "/r/fine",
        "not one of `ok`, `err`",
    );
}

#[test]
fn results_convert_to_json() {
    let component = all_types();
    let returned = |function: &str, val: Val| {
        let signature = signature(&component, function);
        value::returned(signature.result.as_ref(), Some(&val))
    };
    let point = Val::Record(vec![("x".into(), Val::S32(1)), ("y".into(), Val::S32(-2))]);
    assert_eq!(
        returned("integers", Val::U64(u64::MAX)).unwrap(),
        Returned::Ok(Some(json!({"result": u64::MAX})))
    );
    assert_eq!(
        returned("points", point.clone()).unwrap(),
        Returned::Ok(Some(json!({"x": 1, "y": -2})))
    );
    assert_eq!(
        returned("bytes", Val::List(vec![Val::U8(0), Val::U8(255)])).unwrap(),
        Returned::Ok(Some(json!({"result": "AP8="})))
    );
    assert_eq!(
        returned(
            "tuples",
            Val::Tuple(vec![Val::String("a".into()), Val::Bool(false)])
        )
        .unwrap(),
        Returned::Ok(Some(json!({"result": ["a", false]})))
    );
    // A variant's JSON may be an object; it is wrapped all the same.
    let circle = Val::Variant("circle".into(), Some(Box::new(Val::Float64(2.5))));
    assert_eq!(
        returned("choose", circle).unwrap(),
        Returned::Ok(Some(json!({"result": {"circle": 2.5}})))
    );
    assert_eq!(
        returned("options", Val::Option(None)).unwrap(),
        Returned::Ok(Some(json!({"result": null})))
    );
    assert_eq!(
        returned("results", Val::Result(Ok(Some(Box::new(point))))).unwrap(),
        Returned::Ok(Some(json!({"x": 1, "y": -2})))
    );
    assert_eq!(
        returned(
            "results",
            Val::Result(Err(Some(Box::new(Val::String("nope".into())))))
        )
        .unwrap(),
        Returned::Err(Some(json!("nope")))
    );
    assert_eq!(
        returned("fallible", Val::Result(Ok(None))).unwrap(),
        Returned::Ok(None)
    );
    assert_eq!(
        returned(
            "fallible",
            Val::Result(Err(Some(Box::new(Val::Enum("red".into())))))
        )
        .unwrap(),
        Returned::Err(Some(json!("red")))
    );
    let nothing = signature(&component, "nothing");
    assert_eq!(
        value::returned(nothing.result.as_ref(), None).unwrap(),
        Returned::Ok(None)
    );
    // No JSON for NaN; a value of another type is an error, not a panic.
    let err = returned("floats", Val::Float64(f64::NAN)).unwrap_err();
    assert_eq!(err.path, "");
    assert!(err.problem.contains("no JSON form"), "{err}");
    let err = returned("points", Val::String("x".into())).unwrap_err();
    assert!(err.problem.contains("does not match"), "{err}");
    let nested = signature(&component, "options");
    let ty = param(&nested, "b");
    let some_none = Val::Option(Some(Box::new(Val::Option(None))));
    assert_eq!(
        value::to_json(&ty, &some_none, "", 0).unwrap(),
        json!({"some": null})
    );
}
