// Package conformance is the conformance plugin in Go: the tool set every
// guest language implements. `host/tests/all/conformance.rs` states what each
// tool must do.
package conformance

import (
	"encoding/json"
	"fmt"
	"strings"

	"toolhost/guest"
)

// A 1x1 red RGBA PNG (the same bytes as the Rust conformance plugin's).
var pixelPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
	0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7, 0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
	0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
}

var sizesML = map[string]int{"small": 250, "medium": 350, "large": 500}

type inner struct {
	Depth int64 `json:"depth"`
}

type nested struct {
	Label string   `json:"label"`
	Tags  []string `json:"tags"`
	Inner *inner   `json:"inner"`
}

type echoArgs struct {
	Message string  `json:"message"`
	Nested  *nested `json:"nested"`
}

func echo(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args echoArgs
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	if args.Nested != nil && args.Nested.Tags == nil {
		args.Nested.Tags = []string{} // the default
	}
	return args, nil
}

func greet(_ *guest.Context, raw json.RawMessage) (any, error) {
	args := struct {
		Name     string `json:"name"`
		Greeting string `json:"greeting"`
		Times    int    `json:"times"`
	}{Greeting: "Hello", Times: 1}
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	if args.Times < 1 || args.Times > 5 {
		return nil, guest.Invalid("`times` must be from 1 to 5")
	}
	one := fmt.Sprintf("%s, %s!", args.Greeting, args.Name)
	return map[string]string{"text": strings.TrimSpace(strings.Repeat(one+" ", args.Times))}, nil
}

func add(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct{ A, B int64 }
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	return args.A + args.B, nil // a bare number: the host wraps it
}

func order(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct{ Item, Size string }
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	return map[string]any{"item": args.Item, "size": args.Size, "ml": sizesML[args.Size]}, nil
}

func fail(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct {
		Message string
		Invalid bool
	}
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	if args.Invalid {
		return nil, guest.Invalid("%s", args.Message)
	}
	return nil, guest.Fail("%s", args.Message)
}

func countdown(_ *guest.Context, raw json.RawMessage, emit func(any)) error {
	var args struct{ Start int }
	if err := guest.Decode(raw, &args); err != nil {
		return err
	}
	for i := args.Start; i >= 0; i-- {
		emit(fmt.Sprintf("%d\n", i))
	}
	return nil
}

func pixel(_ *guest.Context, _ json.RawMessage) (any, error) {
	return guest.Output{Parts: []guest.Part{
		guest.Text("a 1x1 red pixel"),
		guest.Blob(guest.Image, "image/png", pixelPNG, ""),
	}}, nil
}

func remember(cx *guest.Context, raw json.RawMessage) (any, error) {
	var args struct {
		Key   string
		Value *string
	}
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	if args.Value == nil {
		value, ok := cx.StateGet(args.Key)
		if !ok {
			return map[string]any{"value": nil}, nil
		}
		return map[string]any{"value": value}, nil
	}
	cx.StateSet(args.Key, *args.Value)
	return map[string]any{"stored": args.Key}, nil
}

func whoami(cx *guest.Context, _ json.RawMessage) (any, error) {
	cx.Log(guest.Info, "whoami called")
	out := map[string]any{"call_id": cx.CallID, "invocation_id": cx.InvocationID}
	if caller := cx.Caller(); caller != nil {
		out["caller"] = caller
	}
	return out, nil
}

func crash(_ *guest.Context, raw json.RawMessage) (any, error) {
	var args struct{ Divisor int }
	if err := guest.Decode(raw, &args); err != nil {
		return nil, err
	}
	// Fixed-point division: an integer division by zero panics (the bug).
	millionths := 1_000_000 / args.Divisor
	return float64(millionths) / 1e6, nil
}

func init() {
	guest.Register(
		guest.Tool{
			Name:        "echo",
			Description: "Echoes its arguments back as a JSON object.",
			InputSchema: `{
				"type": "object",
				"required": ["message"],
				"properties": {
					"message": {"type": "string", "description": "The message to echo."},
					"nested": {
						"type": ["object", "null"],
						"description": "Optional structured data, echoed as given.",
						"required": ["label"],
						"properties": {
							"label": {"type": "string", "description": "A label."},
							"tags": {"type": "array", "items": {"type": "string"},
								"default": [], "description": "Any tags."},
							"inner": {
								"type": ["object", "null"],
								"description": "A deeper level.",
								"required": ["depth"],
								"properties": {
									"depth": {"type": "integer", "description": "How deep this is."}
								}
							}
						}
					}
				}
			}`,
			Run: echo,
		},
		guest.Tool{
			Name:        "greet",
			Description: "Greets someone, optionally several times.",
			InputSchema: `{
				"type": "object",
				"required": ["name"],
				"properties": {
					"name": {"type": "string", "description": "Who to greet."},
					"greeting": {"type": "string", "default": "Hello",
						"description": "The word of greeting."},
					"times": {"type": "integer", "default": 1,
						"description": "How many greetings, from 1 to 5."}
				}
			}`,
			Run: greet,
		},
		guest.Tool{
			Name:        "add",
			Description: `Adds two integers; the host wraps the bare number as {"result": n}.`,
			InputSchema: `{
				"type": "object",
				"required": ["a", "b"],
				"properties": {
					"a": {"type": "integer", "description": "The first term."},
					"b": {"type": "integer", "description": "The second term."}
				}
			}`,
			Hints: guest.Hints{
				Title: "Add", ReadOnly: guest.Hint(true), Idempotent: guest.Hint(true),
				OpenWorld: guest.Hint(false),
			},
			Run: add,
		},
		guest.Tool{
			Name:        "order",
			Description: "Orders a drink in one of three sizes.",
			InputSchema: `{
				"type": "object",
				"required": ["item", "size"],
				"properties": {
					"item": {"type": "string", "description": "What to order."},
					"size": {"type": "string", "enum": ["small", "medium", "large"],
						"description": "The size."}
				}
			}`,
			Run: order,
		},
		guest.Tool{
			Name:        "fail",
			Description: "Always fails with the given message.",
			InputSchema: `{
				"type": "object",
				"required": ["message"],
				"properties": {
					"message": {"type": "string", "description": "The failure message."},
					"invalid": {"type": "boolean", "default": false,
						"description": "Report invalid arguments instead of a failure."}
				}
			}`,
			Run: fail,
		},
		guest.Tool{
			Name:        "countdown",
			Description: "Counts down to zero, one line per number, as a stream.",
			InputSchema: `{
				"type": "object",
				"required": ["start"],
				"properties": {"start": {"type": "integer", "description": "Where to start."}}
			}`,
			Stream: countdown,
		},
		guest.Tool{
			Name:        "pixel",
			Description: "Returns a caption and a 1x1 red PNG image.",
			InputSchema: `{"type": "object", "properties": {}}`,
			Run:         pixel,
		},
		guest.Tool{
			Name:        "remember",
			Description: "Stores a value in the invocation's scratch state, or reads it back.",
			InputSchema: `{
				"type": "object",
				"required": ["key"],
				"properties": {
					"key": {"type": "string", "description": "The key."},
					"value": {"type": ["string", "null"],
						"description": "The value to store; omit it to read the key instead."}
				}
			}`,
			Run: remember,
		},
		guest.Tool{
			Name:        "whoami",
			Description: "Tells the caller the IDs of this call.",
			InputSchema: `{"type": "object", "properties": {}}`,
			Run:         whoami,
		},
		guest.Tool{
			Name:        "crash",
			Description: "Divides one by the divisor: a bug when it is zero.",
			InputSchema: `{
				"type": "object",
				"properties": {
					"divisor": {"type": "integer", "default": 0, "description": "The divisor."}
				}
			}`,
			Run: crash,
		},
	)
}
