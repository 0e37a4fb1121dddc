package conformance

// The conformance plugin's catalog in Go, the same as every language's:
// resources (text, bytes, several contents, the request's IDs, a failure),
// templates (`{name}` and `{+name}`), prompts (arguments, roles, an embedded
// resource, an image, JSON, a description, a refusal) and completions (by
// prefix, from the context, past the cap). `host/tests/all/conformance/catalog.rs`
// states what each must do; `tests/plugins/conformance-c/catalog.c` is the C one.

import (
	"encoding/json"
	"fmt"

	"toolhost/guest"
)

func size(n int) *uint64 {
	bytes := uint64(n)
	return &bytes
}

func request(cx *guest.Context) (any, error) {
	out := map[string]any{
		"call_id":       cx.CallID,
		"invocation_id": cx.InvocationID,
		"uri":           cx.Tool,
		"caller":        nil,
	}
	if caller := cx.Caller(); caller != nil {
		out["caller"] = caller.Subject
	}
	text, err := json.Marshal(out)
	return string(text), err
}

func words(_ *guest.Context, argument, value string, _ map[string]string) (guest.Completion, error) {
	if argument != "word" {
		return guest.Completion{}, guest.Invalid("no variable `%s`", argument)
	}
	return guest.Matching([]string{"alpha", "beta", "bravo"}, value), nil
}

func greetPrompt(_ *guest.Context, args map[string]string) (any, error) {
	name := args["name"]
	messages := []guest.Message{guest.User(fmt.Sprintf("Greet %s.", name))}
	if style, ok := args["style"]; ok {
		messages = append(messages, guest.Assistant(fmt.Sprintf("In a %s style.", style)))
	}
	return guest.Messages{Description: "A greeting for " + name, Messages: messages}, nil
}

func greetCompletions(_ *guest.Context, argument, value string, context map[string]string) (guest.Completion, error) {
	switch {
	case argument == "style":
		return guest.Matching([]string{"formal", "friendly", "funny"}, value), nil
	case context["style"] == "formal":
		return guest.Completion{Values: []string{"Dr. Ada"}}, nil
	}
	return guest.Completion{Values: []string{"Ada"}}, nil
}

func show(_ *guest.Context, _ map[string]string) (any, error) {
	shown, err := guest.JSON(map[string]int{"shown": 2})
	if err != nil {
		return nil, err
	}
	return []guest.Message{
		guest.User(guest.TextContents("conformance://greeting", "text/plain", "Hello there!")),
		guest.Assistant(guest.Blob(guest.Image, "image/png", pixelPNG, "")),
		guest.Assistant(shown),
	}, nil
}

func manyCompletions(_ *guest.Context, _, _ string, _ map[string]string) (guest.Completion, error) {
	values := make([]string, 150)
	for i := range values {
		values[i] = fmt.Sprintf("v%03d", i)
	}
	return guest.Completion{Values: values}, nil
}

func init() {
	guest.RegisterResource(
		guest.Resource{
			URI: "conformance://greeting", Name: "greeting", Title: "A greeting",
			Description: "Says hello.", MimeType: "text/plain", Size: size(12),
			// No MIME type: the declared one.
			Read: func(*guest.Context) (any, error) { return "Hello there!", nil },
		},
		guest.Resource{
			URI: "conformance://pixel", Name: "pixel", MimeType: "image/png", Size: size(len(pixelPNG)),
			Read: func(*guest.Context) (any, error) { return pixelPNG, nil },
		},
		guest.Resource{
			URI: "conformance://bundle", Name: "bundle", MimeType: "text/plain",
			// The resource read, then a sub-resource with a type of its own.
			Read: func(*guest.Context) (any, error) {
				return []guest.Contents{
					guest.TextContents("", "", "the bundle"),
					guest.TextContents("conformance://bundle/part", "application/json", `{"part": 1}`),
				}, nil
			},
		},
		guest.Resource{
			URI: "conformance://request", Name: "request", MimeType: "application/json", Read: request,
		},
		guest.Resource{
			URI: "conformance://broken", Name: "broken",
			Read: func(*guest.Context) (any, error) { return nil, guest.Fail("the resource is broken") },
		},
	)
	guest.RegisterTemplate(
		guest.ResourceTemplate{
			URITemplate: "conformance://words/{word}", Name: "words",
			Description: "A word, and where it was read.", MimeType: "text/plain",
			Read: func(_ *guest.Context, uri string, variables map[string]string) (any, error) {
				return fmt.Sprintf("%s at %s", variables["word"], uri), nil
			},
			Complete: words,
		},
		guest.ResourceTemplate{
			URITemplate: "conformance://files/{+path}", Name: "files",
			// A MIME type of its own, where the template declares none.
			Read: func(_ *guest.Context, _ string, variables map[string]string) (any, error) {
				return guest.TextContents("", "text/markdown", variables["path"]), nil
			},
		},
	)
	guest.RegisterPrompt(
		guest.Prompt{
			Name: "greet", Title: "Greeting", Description: "Greets someone, in a style if given.",
			Arguments: []guest.PromptArgument{
				{Name: "name", Description: "Who to greet.", Required: true},
				{Name: "style", Title: "Style", Description: "How to greet."},
			},
			Get:      greetPrompt,
			Complete: greetCompletions,
		},
		guest.Prompt{Name: "show", Description: "Shows a resource and an image.", Get: show},
		guest.Prompt{
			Name: "many", Description: "Offers more values than a completion serves.",
			Arguments: []guest.PromptArgument{{Name: "value"}},
			Get: func(_ *guest.Context, args map[string]string) (any, error) {
				return fmt.Sprintf("Pick %s.", args["value"]), nil
			},
			Complete: manyCompletions,
		},
		guest.Prompt{
			Name: "refuse", Description: "Always refuses.",
			Get: func(*guest.Context, map[string]string) (any, error) {
				return nil, guest.Invalid("no prompt today")
			},
		},
	)
}
