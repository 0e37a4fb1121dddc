//go:build wasip1

// The WIT `catalog` exports over the Go SDK (package toolhost/guest): the
// resources, templates and prompts registered with guest.RegisterResource,
// guest.RegisterTemplate and guest.RegisterPrompt; none for a plugin that
// registers none. `cargo xtask guests` (and `toolhost new --lang go`) copies
// this file into the package the bindings import for the export
// (`bindings/export_toolhost_plugin_catalog`), which `wit-bindgen go` leaves
// for us to write. The build tag keeps it out of native builds of the SDK.
package export_toolhost_plugin_catalog

import (
	witTypes "go.bytecodealliance.org/pkg/wit/types"
	"toolhost/guest"
	"wit_component/export_toolhost_plugin_tools"
	types "wit_component/toolhost_plugin_types"
)

// Describe lists the registered resources, templates and prompts.
func Describe() types.Catalog {
	declared := guest.Describe()
	out := types.Catalog{
		Resources: []types.ResourceInfo{},
		Templates: []types.ResourceTemplateInfo{},
		Prompts:   []types.PromptInfo{},
	}
	for _, r := range declared.Resources {
		size := witTypes.None[uint64]()
		if r.Size != nil {
			size = witTypes.Some(*r.Size)
		}
		out.Resources = append(out.Resources, types.ResourceInfo{
			Uri: r.URI, Name: r.Name, Title: text(r.Title), Description: text(r.Description),
			MimeType: text(r.MimeType), Size: size,
		})
	}
	for _, t := range declared.Templates {
		out.Templates = append(out.Templates, types.ResourceTemplateInfo{
			UriTemplate: t.URITemplate, Name: t.Name, Title: text(t.Title),
			Description: text(t.Description), MimeType: text(t.MimeType),
		})
	}
	for _, p := range declared.Prompts {
		arguments := []types.PromptArgument{}
		for _, a := range p.Arguments {
			arguments = append(arguments, types.PromptArgument{
				Name: a.Name, Title: text(a.Title), Description: text(a.Description),
				Required: a.Required,
			})
		}
		out.Prompts = append(out.Prompts, types.PromptInfo{
			Name: p.Name, Title: text(p.Title), Description: p.Description, Arguments: arguments,
		})
	}
	return out
}

// ReadResource reads a listed resource or one of a template's URIs.
func ReadResource(read types.Read) witTypes.Result[[]types.ResourceContents, types.ToolError] {
	template := ""
	if read.Template.IsSome() {
		template = read.Template.Some()
	}
	contents, err := guest.ReadResource(request(read.Request), read.Uri, template, pairs(read.Variables))
	if err != nil {
		return witTypes.Err[[]types.ResourceContents](export_toolhost_plugin_tools.IntoError(err))
	}
	out := make([]types.ResourceContents, 0, len(contents))
	for _, c := range contents {
		out = append(out, intoContents(c))
	}
	return witTypes.Ok[[]types.ResourceContents, types.ToolError](out)
}

// GetPrompt fills in a prompt.
func GetPrompt(get types.Get) witTypes.Result[types.PromptMessages, types.ToolError] {
	messages, err := guest.GetPrompt(request(get.Request), get.Name, pairs(get.Arguments))
	if err != nil {
		return witTypes.Err[types.PromptMessages](export_toolhost_plugin_tools.IntoError(err))
	}
	out := types.PromptMessages{Description: text(messages.Description), Messages: []types.PromptMessage{}}
	for _, m := range messages.Messages {
		var content types.MessageContent
		if m.Resource != nil {
			content = types.MakeMessageContentResource(intoContents(*m.Resource))
		} else {
			content = types.MakeMessageContentPart(export_toolhost_plugin_tools.IntoParts([]guest.Part{m.Part})[0])
		}
		out.Messages = append(out.Messages, types.PromptMessage{Role: types.Role(m.Role), Content: content})
	}
	return witTypes.Ok[types.PromptMessages, types.ToolError](out)
}

// Complete suggests values for a prompt's argument or a template's variable.
func Complete(req types.CompletionRequest) witTypes.Result[types.Completion, types.ToolError] {
	template := req.Target.Tag() == types.CompletionTarget_Template
	var target string
	if template {
		target = req.Target.Template()
	} else {
		target = req.Target.Prompt()
	}
	completion, err := guest.CompleteArgument(
		request(req.Request), template, target, req.Argument, req.Value, pairs(req.Context),
	)
	if err != nil {
		return witTypes.Err[types.Completion](export_toolhost_plugin_tools.IntoError(err))
	}
	total := witTypes.None[uint32]()
	if completion.Total != nil {
		total = witTypes.Some(*completion.Total)
	}
	return witTypes.Ok[types.Completion, types.ToolError](types.Completion{
		Values: completion.Values, Total: total, HasMore: completion.HasMore,
	})
}

func request(r types.Request) guest.Request {
	return guest.Request{
		CallID: r.CallId, InvocationID: r.InvocationId,
		Caller: export_toolhost_plugin_tools.CallerFromWit(r.Caller),
	}
}

func pairs(list []witTypes.Tuple2[string, string]) map[string]string {
	out := make(map[string]string, len(list))
	for _, pair := range list {
		out[pair.F0] = pair.F1
	}
	return out
}

// text is an optional string: empty is `none`.
func text(s string) witTypes.Option[string] {
	if s == "" {
		return witTypes.None[string]()
	}
	return witTypes.Some(s)
}

func intoContents(c guest.Contents) types.ResourceContents {
	body := types.MakeBodyText(c.Text)
	if c.Binary {
		data := c.Bytes
		if data == nil {
			data = []byte{}
		}
		body = types.MakeBodyBytes(data)
	}
	return types.ResourceContents{Uri: c.URI, MimeType: text(c.MimeType), Body: body}
}
