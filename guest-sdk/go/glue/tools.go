//go:build wasip1

// The WIT `tools` exports over the Go SDK (package toolhost/guest). `cargo
// xtask guests` (and `toolhost new --lang go`) copies this file into the
// package that `wit-bindgen go` generates for the export
// (`bindings/export_toolhost_plugin_tools`), which is where the bindings
// expect the exported functions and the `chunks` resource type.
// The build tag keeps it out of native builds of the SDK.
package export_toolhost_plugin_tools

import (
	"encoding/json"
	"runtime"

	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"toolhost/guest"
	"wit_component/toolhost_plugin_host"
	"wit_component/toolhost_plugin_types"
)

type (
	declaration = toolhost_plugin_types.Declaration
	call        = toolhost_plugin_types.Call
	part        = toolhost_plugin_types.Part
	output      = toolhost_plugin_types.Output
	toolError   = toolhost_plugin_types.ToolError
)

func init() {
	guest.SetHost(guest.Host{
		Log: func(level guest.Level, message string) {
			toolhost_plugin_host.Log(toolhost_plugin_host.Level(level), message)
		},
		Panicked: toolhost_plugin_host.Panicked,
		StateGet: func(key string) (string, bool) {
			value := toolhost_plugin_host.StateGet(key)
			return value.SomeOr(""), value.IsSome()
		},
		StateSet:        toolhost_plugin_host.StateSet,
		StateDelete:     toolhost_plugin_host.StateDelete,
		ResourceUpdated: toolhost_plugin_host.ResourceUpdated,
		Ask:             ask,
	})
}

// ask asks the host; see guest.Host.Ask.
func ask(message, schema string) (string, string, error) {
	result := toolhost_plugin_host.Ask(toolhost_plugin_types.Question{Message: message, Schema: schema})
	if result.IsErr() {
		e := result.Err()
		switch e.Tag() {
		case toolhost_plugin_types.AskError_Unavailable:
			return "", "", &guest.AskError{Reason: guest.AskUnavailable, Detail: e.Unavailable()}
		case toolhost_plugin_types.AskError_Invalid:
			return "", "", &guest.AskError{Reason: guest.AskInvalid, Detail: e.Invalid()}
		case toolhost_plugin_types.AskError_TooMany:
			return "", "", &guest.AskError{Reason: guest.AskTooMany, Detail: e.TooMany()}
		}
		return "", "", &guest.AskError{Reason: guest.AskTimeout}
	}
	answer := result.Ok()
	switch answer.Tag() {
	case toolhost_plugin_types.Answer_Accept:
		return "accept", answer.Accept(), nil
	case toolhost_plugin_types.Answer_Decline:
		return "decline", "", nil
	}
	return "cancel", "", nil
}

// Chunks is the state of one stream: its chunks, handed out in order.
type Chunks struct {
	handle int32
	pinner runtime.Pinner
	parts  []part
}

// OnDrop is called when the host drops the stream.
func (c *Chunks) OnDrop() { c.parts = nil }

// Next hands out the next chunk; none at the end.
func (c *Chunks) Next() witTypes.Result[witTypes.Option[part], toolError] {
	if len(c.parts) == 0 {
		return witTypes.Ok[witTypes.Option[part], toolError](witTypes.None[part]())
	}
	next := c.parts[0]
	c.parts = c.parts[1:]
	return witTypes.Ok[witTypes.Option[part], toolError](witTypes.Some(next))
}

// Declarations lists the tools registered with guest.Register.
func Declarations() []declaration {
	var out []declaration
	for _, d := range guest.Declarations() {
		output := witTypes.None[string]()
		if d.OutputSchema != "" {
			output = witTypes.Some(d.OutputSchema)
		}
		out = append(out, declaration{
			Info: toolhost_plugin_types.ToolInfo{
				Name: d.Name, Description: d.Description, LongRunning: d.LongRunning,
				Hints: hints(d.Hints),
			},
			InputSchema:  d.InputSchema,
			OutputSchema: output,
			Streaming:    d.Streaming,
		})
	}
	return out
}

// hints converts a tool's hints: a nil or empty hint is `none`.
func hints(h guest.Hints) toolhost_plugin_types.ToolHints {
	flag := func(b *bool) witTypes.Option[bool] {
		if b == nil {
			return witTypes.None[bool]()
		}
		return witTypes.Some(*b)
	}
	title := witTypes.None[string]()
	if h.Title != "" {
		title = witTypes.Some(h.Title)
	}
	return toolhost_plugin_types.ToolHints{
		Title:       title,
		ReadOnly:    flag(h.ReadOnly),
		Destructive: flag(h.Destructive),
		Idempotent:  flag(h.Idempotent),
		OpenWorld:   flag(h.OpenWorld),
	}
}

// Invoke runs a tool to completion.
func Invoke(c call) witTypes.Result[output, toolError] {
	result, err := guest.Invoke(fromWit(c))
	if err != nil {
		return witTypes.Err[output](IntoError(err))
	}
	json := witTypes.None[string]()
	if result.JSON != nil {
		json = witTypes.Some(*result.JSON)
	}
	return witTypes.Ok[output, toolError](output{Json: json, Parts: IntoParts(result.Parts)})
}

// InvokeStream starts a tool and returns its chunks as a `chunks` resource.
func InvokeStream(c call) witTypes.Result[*Chunks, toolError] {
	parts, err := guest.InvokeStream(fromWit(c))
	if err != nil {
		return witTypes.Err[*Chunks](IntoError(err))
	}
	return witTypes.Ok[*Chunks, toolError](&Chunks{parts: IntoParts(parts)})
}

func fromWit(c call) guest.Call {
	return guest.Call{
		CallID: c.CallId, InvocationID: c.InvocationId, Tool: c.Tool, Arguments: c.Arguments,
		Caller: CallerFromWit(c.Caller),
	}
}

// CallerFromWit converts a caller (for the catalog's glue too): the claims arrive as a JSON object text (`{}` for none).
func CallerFromWit(c witTypes.Option[toolhost_plugin_types.Caller]) *guest.Caller {
	if c.IsNone() {
		return nil
	}
	wit := c.Some()
	claims := map[string]any{}
	if err := json.Unmarshal([]byte(wit.Claims), &claims); err != nil || claims == nil {
		claims = map[string]any{}
	}
	scopes := append([]string{}, wit.Scopes...)
	return &guest.Caller{Issuer: wit.Issuer, Subject: wit.Subject, Scopes: scopes, Claims: claims}
}

// IntoError converts an SDK error (for the catalog's glue too).
func IntoError(err error) toolError {
	switch e := err.(type) {
	case *guest.UnknownTool:
		return toolhost_plugin_types.MakeToolErrorUnknownTool(e.Name)
	case *guest.ToolError:
		if e.InvalidArguments {
			return toolhost_plugin_types.MakeToolErrorInvalidArguments(e.Message)
		}
	}
	return toolhost_plugin_types.MakeToolErrorFailed(err.Error())
}

// IntoParts converts parts (for the catalog's glue too).
func IntoParts(parts []guest.Part) []part {
	out := make([]part, 0, len(parts))
	for _, p := range parts {
		switch p.Kind {
		case guest.TextPart:
			out = append(out, toolhost_plugin_types.MakePartText(p.Text))
		case guest.JSONPart:
			out = append(out, toolhost_plugin_types.MakePartJson(p.Text))
		case guest.BlobPart:
			name := witTypes.None[string]()
			if p.Name != "" {
				name = witTypes.Some(p.Name)
			}
			out = append(out, toolhost_plugin_types.MakePartBlob(toolhost_plugin_types.Blob{
				Kind: uint8(p.Media), MimeType: p.MimeType, Name: name, Data: p.Data,
			}))
		}
	}
	return out
}
