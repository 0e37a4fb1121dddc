package guest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func init() {
	RegisterResource(Resource{
		URI: "notes://today", Name: "today", MimeType: "text/plain",
		Read: func(*Context) (any, error) { return "Buy milk.", nil },
	}, Resource{
		URI: "notes://logo", Name: "logo",
		Read: func(*Context) (any, error) {
			return []Contents{BytesContents("", "image/png", []byte{1, 2}), TextContents("notes://logo/alt", "", "a logo")}, nil
		},
	})
	RegisterTemplate(ResourceTemplate{
		URITemplate: "notes://{day}", Name: "day", MimeType: "text/markdown",
		Read: func(_ *Context, uri string, vars map[string]string) (any, error) {
			if vars["day"] == "never" {
				return nil, Fail("no notes for %s", vars["day"])
			}
			return "# " + vars["day"] + " (" + uri + ")", nil
		},
		Complete: func(_ *Context, _, value string, _ map[string]string) (Completion, error) {
			return Matching([]string{"monday", "tuesday", "wednesday"}, value), nil
		},
	})
	RegisterPrompt(Prompt{
		Name: "review", Description: "Review a text.",
		Arguments: []PromptArgument{{Name: "text", Required: true}, {Name: "tone"}},
		Get: func(_ *Context, args map[string]string) (any, error) {
			return Messages{Description: "a review", Messages: []Message{
				User("Review this: " + args["text"]),
				Assistant(TextContents("notes://today", "text/plain", "Buy milk.")),
			}}, nil
		},
		Complete: func(_ *Context, argument, value string, _ map[string]string) (Completion, error) {
			if argument != "tone" {
				return Completion{}, nil
			}
			many := make([]string, 150)
			for i := range many {
				many[i] = fmt.Sprintf("%s%d", value, i)
			}
			return Completion{Values: many}, nil
		},
	}, Prompt{
		Name: "plain", Description: "No completions.",
		Get: func(*Context, map[string]string) (any, error) { return "hi", nil },
	})
}

func TestDescribeListsTheCatalog(t *testing.T) {
	c := Describe()
	if len(c.Resources) != 2 || len(c.Templates) != 1 || len(c.Prompts) != 2 {
		t.Fatalf("catalog: %+v", c)
	}
	if got := c.Templates[0].Variables(); len(got) != 1 || got[0] != "day" {
		t.Fatalf("variables: %v", got)
	}
	if got := (ResourceTemplate{URITemplate: "files://{root}/{+path}"}).Variables(); strings.Join(got, ",") != "root,path" {
		t.Fatalf("variables: %v", got)
	}
}

func TestReadFillsInUriAndMimeType(t *testing.T) {
	got, err := ReadResource(Request{}, "notes://today", "", nil)
	if err != nil || len(got) != 1 || got[0].URI != "notes://today" || got[0].MimeType != "text/plain" || got[0].Text != "Buy milk." {
		t.Fatalf("read: %+v %v", got, err)
	}
	got, err = ReadResource(Request{}, "notes://logo", "", nil)
	if err != nil || len(got) != 2 || !got[0].Binary || got[0].URI != "notes://logo" || got[1].URI != "notes://logo/alt" {
		t.Fatalf("read: %+v %v", got, err)
	}
	got, err = ReadResource(Request{}, "notes://monday", "notes://{day}", map[string]string{"day": "monday"})
	if err != nil || got[0].Text != "# monday (notes://monday)" || got[0].MimeType != "text/markdown" {
		t.Fatalf("template read: %+v %v", got, err)
	}
}

func TestReadErrors(t *testing.T) {
	var unknown *UnknownTool
	if _, err := ReadResource(Request{}, "notes://nope", "", nil); !errors.As(err, &unknown) || unknown.Name != "notes://nope" {
		t.Fatalf("unknown URI: %v", err)
	}
	if _, err := ReadResource(Request{}, "x://1", "x://{n}", nil); !errors.As(err, &unknown) {
		t.Fatalf("unknown template: %v", err)
	}
	var failed *ToolError
	_, err := ReadResource(Request{}, "notes://never", "notes://{day}", map[string]string{"day": "never"})
	if !errors.As(err, &failed) || failed.Message != "no notes for never" {
		t.Fatalf("failure: %v", err)
	}
}

func TestGetPrompt(t *testing.T) {
	got, err := GetPrompt(Request{}, "review", map[string]string{"text": "essay"})
	if err != nil || got.Description != "a review" || len(got.Messages) != 2 {
		t.Fatalf("get: %+v %v", got, err)
	}
	if m := got.Messages[0]; m.Role != UserRole || m.Part.Text != "Review this: essay" {
		t.Fatalf("first: %+v", m)
	}
	if m := got.Messages[1]; m.Role != AssistantRole || m.Resource == nil || m.Resource.URI != "notes://today" {
		t.Fatalf("second: %+v", m)
	}
	plain, err := GetPrompt(Request{}, "plain", nil)
	if err != nil || len(plain.Messages) != 1 || plain.Messages[0].Part.Text != "hi" {
		t.Fatalf("plain: %+v %v", plain, err)
	}
	var invalid *ToolError
	if _, err := GetPrompt(Request{}, "review", nil); !errors.As(err, &invalid) || !invalid.InvalidArguments {
		t.Fatalf("missing argument: %v", err)
	}
	var unknown *UnknownTool
	if _, err := GetPrompt(Request{}, "nope", nil); !errors.As(err, &unknown) {
		t.Fatalf("unknown prompt: %v", err)
	}
}

func TestComplete(t *testing.T) {
	got, err := CompleteArgument(Request{}, true, "notes://{day}", "day", "t", nil)
	if err != nil || strings.Join(got.Values, ",") != "tuesday" || got.Total == nil || *got.Total != 1 {
		t.Fatalf("template: %+v %v", got, err)
	}
	got, err = CompleteArgument(Request{}, false, "review", "tone", "x", nil)
	if err != nil || len(got.Values) != MaxCompletions || !got.HasMore {
		t.Fatalf("capped: %d %v %v", len(got.Values), got.HasMore, err)
	}
	got, err = CompleteArgument(Request{}, false, "plain", "any", "", nil)
	if err != nil || got.Values == nil || len(got.Values) != 0 {
		t.Fatalf("no completer: %+v %v", got, err)
	}
	var unknown *UnknownTool
	if _, err := CompleteArgument(Request{}, false, "nope", "a", "", nil); !errors.As(err, &unknown) {
		t.Fatalf("unknown target: %v", err)
	}
	if _, err := CompleteArgument(Request{}, true, "review", "a", "", nil); !errors.As(err, &unknown) {
		t.Fatalf("a prompt is not a template: %v", err)
	}
}

func TestAsk(t *testing.T) {
	saved := host
	defer func() { host = saved }()
	var asked string
	SetHost(Host{
		Log: saved.Log, Panicked: saved.Panicked,
		Ask: func(message, schema string) (string, string, error) {
			asked = message + " " + schema
			return "accept", `{"name":"Ada"}`, nil
		},
	})
	answer, err := (&Context{}).Ask("Who?", map[string]any{"type": "object"})
	if err != nil || !answer.Accepted() || answer.Content["name"] != "Ada" || asked != `Who? {"type":"object"}` {
		t.Fatalf("ask: %+v %v %q", answer, err, asked)
	}
	host.Ask = func(string, string) (string, string, error) {
		return "", "", &AskError{Reason: AskUnavailable, Detail: "no client"}
	}
	_, err = (&Context{}).Ask("Who?", `{"type":"object"}`)
	if err == nil || err.Error() != "nobody can be asked: no client" {
		t.Fatalf("unavailable: %v", err)
	}
	// Returned from a tool, it is a failure saying why.
	_, err = run(&Context{}, func() (any, error) { return nil, err })
	var failed *ToolError
	if !errors.As(err, &failed) || failed.InvalidArguments || failed.Message != "nobody can be asked: no client" {
		t.Fatalf("as a tool error: %v", err)
	}
	if (&AskError{Reason: AskTimeout}).Error() != "the user did not answer in time" {
		t.Fatal("timeout message")
	}
}

func TestResourceUpdated(t *testing.T) {
	saved := host
	defer func() { host = saved }()
	var updated string
	SetHost(Host{ResourceUpdated: func(uri string) { updated = uri }})
	(&Context{}).ResourceUpdated("notes://today")
	if updated != "notes://today" {
		t.Fatalf("updated %q", updated)
	}
}
