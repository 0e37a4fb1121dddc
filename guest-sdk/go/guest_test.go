package guest

import (
	"encoding/json"
	"testing"
)

func init() {
	Register(
		Tool{
			Name: "double",
			Run: func(_ *Context, raw json.RawMessage) (any, error) {
				var args struct{ N int }
				if err := Decode(raw, &args); err != nil {
					return nil, err
				}
				if args.N < 0 {
					return nil, Invalid("`n` must not be negative, not %d", args.N)
				}
				return args.N * 2, nil
			},
		},
		Tool{
			Name: "lines",
			Stream: func(_ *Context, _ json.RawMessage, emit func(any)) error {
				emit("a\n")
				emit("b\n")
				return nil
			},
		},
		Tool{
			Name: "mixed",
			Stream: func(_ *Context, _ json.RawMessage, emit func(any)) error {
				emit("x")
				emit(map[string]int{"n": 1})
				return nil
			},
		},
		Tool{
			Name: "picture",
			Run: func(*Context, json.RawMessage) (any, error) {
				return Output{JSON: map[string]string{"a": "<b>"}, Parts: []Part{Blob(Image, "image/png", []byte{1}, "")}}, nil
			},
		},
		Tool{
			Name: "whoami",
			Run: func(cx *Context, _ json.RawMessage) (any, error) {
				return map[string]any{
					"caller": cx.Caller(),
					"reader": cx.Caller().HasScope("tools:read"),
					"email":  cx.Caller().Claim("email"),
				}, nil
			},
		},
		Tool{
			Name: "bug",
			Run: func(*Context, json.RawMessage) (any, error) {
				var m map[string]int
				m["boom"] = 1 // a nil map: a runtime panic
				return nil, nil
			},
		},
	)
}

func invoke(t *testing.T, tool, args string) (Result, error) {
	t.Helper()
	return Invoke(Call{CallID: "c", InvocationID: "i", Tool: tool, Arguments: args})
}

func TestCaller(t *testing.T) {
	result, err := invoke(t, "whoami", `{}`)
	if err != nil || *result.JSON != `{"caller":null,"email":null,"reader":false}` {
		t.Errorf("no caller: %v %v", result.JSON, err)
	}
	ana := &Caller{
		Issuer: "https://id.example.com", Subject: "ana", Scopes: []string{"tools:read"},
		Claims: map[string]any{"email": "ana@example.com"},
	}
	result, err = Invoke(Call{Tool: "whoami", Arguments: `{}`, Caller: ana})
	want := `{"caller":{"issuer":"https://id.example.com","subject":"ana","scopes":["tools:read"],` +
		`"claims":{"email":"ana@example.com"}},"email":"ana@example.com","reader":true}`
	if err != nil || *result.JSON != want {
		t.Errorf("ana: %v %v", *result.JSON, err)
	}
}

func TestDeclarations(t *testing.T) {
	byName := map[string]Declaration{}
	for _, d := range Declarations() {
		byName[d.Name] = d
	}
	if d := byName["double"]; d.InputSchema != `{"type":"object","properties":{},"additionalProperties":false}` || d.Streaming {
		t.Errorf("double: %+v", d)
	}
	if !byName["lines"].Streaming {
		t.Error("lines streams")
	}
}

func TestInvoke(t *testing.T) {
	out, err := invoke(t, "double", `{"n": 21}`)
	if err != nil || out.JSON == nil || *out.JSON != "42" {
		t.Fatalf("double: %v %v", out, err)
	}
	_, err = invoke(t, "double", `{"n": -1}`)
	if e, ok := err.(*ToolError); !ok || !e.InvalidArguments || e.Message != "`n` must not be negative, not -1" {
		t.Errorf("invalid: %#v", err)
	}
	if _, err := invoke(t, "nope", `{}`); err == nil {
		t.Error("an unknown tool is an error")
	} else if _, ok := err.(*UnknownTool); !ok {
		t.Errorf("unknown: %#v", err)
	}
	if _, err := invoke(t, "double", `[1]`); err == nil {
		t.Error("arguments that are not an object are an error")
	}
	out, err = invoke(t, "picture", ``)
	if err != nil || *out.JSON != `{"a":"<b>"}` || len(out.Parts) != 1 || out.Parts[0].Kind != BlobPart {
		t.Errorf("picture: %+v %v", out, err)
	}
}

func TestStreams(t *testing.T) {
	out, err := invoke(t, "lines", `{}`)
	if err != nil || *out.JSON != `"a\nb\n"` || len(out.Parts) != 1 || out.Parts[0].Text != "a\nb\n" {
		t.Errorf("collected: %+v %v", out, err)
	}
	out, err = invoke(t, "mixed", `{}`)
	if err != nil || out.JSON != nil || len(out.Parts) != 2 || out.Parts[1].Text != `{"n":1}` {
		t.Errorf("mixed: %+v %v", out, err)
	}
	chunks, err := InvokeStream(Call{Tool: "lines", Arguments: `{}`})
	if err != nil || len(chunks) != 2 || chunks[1].Text != "b\n" {
		t.Errorf("streamed: %+v %v", chunks, err)
	}
	chunks, err = InvokeStream(Call{Tool: "double", Arguments: `{"n": 1}`})
	if err != nil || len(chunks) != 1 || chunks[0].Kind != JSONPart || chunks[0].Text != "2" {
		t.Errorf("a result as a stream: %+v %v", chunks, err)
	}
}

func TestPanicsReachTheHost(t *testing.T) {
	var reported string
	saved := host
	defer func() { host = saved }()
	SetHost(Host{Panicked: func(message string) { reported = message }})
	defer func() {
		if recover() == nil {
			t.Error("the panic goes on after it is reported")
		}
		if reported != "assignment to entry in nil map" {
			t.Errorf("reported %q", reported)
		}
	}()
	_, _ = invoke(t, "bug", `{}`)
}

func TestObjectSchemasAreClosedUnlessTheToolAllowsUnknownArgs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "description": "<who>"}}}`,
			`{"type":"object","required":["name"],"properties":{"name":{"type":"string","description":"<who>"}},"additionalProperties":false}`},
		// Nested objects in properties, items and $defs are closed; maps and combinations are not.
		{`{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"integer","minimum":1.5}}},` +
			`"l":{"type":"array","items":{"type":"object","properties":{}}},"m":{"type":"object","additionalProperties":{"type":"string"}},` +
			`"u":{"anyOf":[{"type":"object","properties":{"a":{}}}]}},"$defs":{"D":{"properties":{"x":{}}}}}`,
			`{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"integer","minimum":1.5}},"additionalProperties":false},` +
				`"l":{"type":"array","items":{"type":"object","properties":{},"additionalProperties":false}},"m":{"type":"object","additionalProperties":{"type":"string"}},` +
				`"u":{"anyOf":[{"type":"object","properties":{"a":{}}}]}},"$defs":{"D":{"properties":{"x":{}},"additionalProperties":false}},"additionalProperties":false}`},
		// A schema that already says what it wants keeps it.
		{`{"type":"object","properties":{},"additionalProperties":true}`, `{"type":"object","properties":{},"additionalProperties":true}`},
	} {
		got, err := closeObjects(c.in, false)
		if err != nil || got != c.want {
			t.Errorf("closeObjects(%s)\n got %s (%v)\nwant %s", c.in, got, err, c.want)
		}
	}
	got, err := closeObjects(`{"type":"object","properties":{"p":{"type":"object","properties":{}}}}`, true)
	want := `{"type":"object","properties":{"p":{"type":"object","properties":{}}},"additionalProperties":true}`
	if err != nil || got != want {
		t.Errorf("allowUnknown: got %s (%v), want %s", got, err, want)
	}
	if got, _ := closeObjects(`{}`, true); got != `{"additionalProperties":true}` {
		t.Errorf("allowUnknown on {}: got %s", got)
	}
}

// Optional means nullable: a model in OpenAI strict mode sends null for an
// argument it leaves out, and Decode keeps the prefilled default for it.
func TestDecodeKeepsDefaultsForNull(t *testing.T) {
	args := struct {
		Part       string `json:"part"`
		Descending bool   `json:"descending"`
		Width      int    `json:"width"`
	}{Part: "patch", Descending: true, Width: 72}
	if err := Decode(json.RawMessage(`{"part": null, "descending": null, "width": null}`), &args); err != nil {
		t.Fatal(err)
	}
	if args.Part != "patch" || !args.Descending || args.Width != 72 {
		t.Fatalf("null replaced a default: %+v", args)
	}
}
