package guest

// The catalog: what a plugin offers besides tools (resources, resource
// templates, prompts and completions; MCP's other server features), and
// asking the user in the middle of a call. Declare them from an init
// function, as tools:
//
//	guest.RegisterResource(guest.Resource{
//		URI: "notes://today", Name: "today", MimeType: "text/plain",
//		Read: func(cx *guest.Context) (any, error) { return "Buy milk.", nil },
//	})
//	guest.RegisterPrompt(guest.Prompt{
//		Name: "review", Description: "Review a text.",
//		Arguments: []guest.PromptArgument{{Name: "text", Required: true}},
//		Get: func(cx *guest.Context, args map[string]string) (any, error) {
//			return "Review this: " + args["text"], nil
//		},
//	})
//
// Every request runs in a fresh instance, like a tool call. A plugin that
// declares nothing has an empty catalog.

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MaxCompletions is the most values a completion serves: the SDK cuts a
// longer list and says there are more.
const MaxCompletions = 100

// Resource is a resource at a fixed URI (MCP `Resource`).
type Resource struct {
	// Where it is; unique in the plugin. Use a scheme or prefix of your own
	// (`notes://today`): the operator sees clashes between plugins.
	URI string
	// A short name.
	Name string
	// A human-readable name; empty: none.
	Title string
	// What it holds; empty: none.
	Description string
	// Its MIME type; empty: unknown. Contents a read returns without a MIME
	// type get this one.
	MimeType string
	// Its size in bytes; nil: unknown.
	Size *uint64
	// Reads it: a string (text), []byte (bytes), a [Contents] or a
	// []Contents (the resource and sub-resources).
	Read func(cx *Context) (any, error)
}

// ResourceTemplate is a family of resources whose URIs follow an RFC 6570
// URI template (MCP `ResourceTemplate`): `{name}` matches one path segment,
// `{+name}` any text. The host matches a read's URI against it.
type ResourceTemplate struct {
	// The URI template, e.g. `notes://{day}`; unique in the plugin.
	URITemplate string
	// A short name.
	Name string
	// A human-readable name; empty: none.
	Title string
	// What its resources hold; empty: none.
	Description string
	// The MIME type of its resources, when they share one.
	MimeType string
	// Reads one of its resources: the URI read and the template's variables
	// (percent-decoded). Returns what [Resource.Read] does.
	Read func(cx *Context, uri string, variables map[string]string) (any, error)
	// Optional: suggests values for a variable (see [Completer]).
	Complete Completer
}

// Variables lists the template's variables, in order: `day` in `notes://{day}`.
func (t ResourceTemplate) Variables() []string {
	var names []string
	rest := t.URITemplate
	for {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			return names
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return names
		}
		names = append(names, strings.TrimPrefix(rest[open+1:open+end], "+"))
		rest = rest[open+end+1:]
	}
}

// PromptArgument is one argument of a prompt; prompt arguments are strings.
type PromptArgument struct {
	Name string
	// A human-readable name; empty: none.
	Title string
	// What it is; empty: none.
	Description string
	// Whether a get must give it (the host checks).
	Required bool
}

// Prompt is messages a user picks, filled in with arguments (MCP `Prompt`).
type Prompt struct {
	// 1 to 64 ASCII letters, digits, `_` or `-`; unique in the plugin.
	Name string
	// A human-readable name; empty: none.
	Title string
	// What it is for.
	Description string
	// The arguments it takes, in order.
	Arguments []PromptArgument
	// Fills it in: the arguments given (every required one is). Returns a
	// string (one user message), a [Message], a []Message or [Messages].
	Get func(cx *Context, arguments map[string]string) (any, error)
	// Optional: suggests values for an argument (see [Completer]).
	Complete Completer
}

// Completer suggests values for a prompt's argument or a template's
// variable: its name, what the user typed so far and the arguments already
// filled in. [Matching] builds the usual answer.
type Completer func(cx *Context, argument, value string, context map[string]string) (Completion, error)

// Completion is suggested values, best first. At most [MaxCompletions] are
// served: the SDK cuts a longer list and sets HasMore.
type Completion struct {
	Values []string
	// How many there are in all; nil: unknown.
	Total *uint32
	// Whether there are more than those returned.
	HasMore bool
}

// Matching is the candidates that start with prefix (case-sensitive), in
// order, with their count as the total.
func Matching(candidates []string, prefix string) Completion {
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			values = append(values, c)
		}
	}
	total := uint32(len(values))
	return Completion{Values: values, Total: &total}
}

func (c Completion) capped() Completion {
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > MaxCompletions {
		c.Values, c.HasMore = c.Values[:MaxCompletions], true
	}
	return c
}

// Contents is one resource's content, as a read returns it or a prompt
// message embeds it: Text or Bytes (set Binary for bytes, even empty).
type Contents struct {
	// The URI it is of. Empty in a read's result: the URI read. A prompt
	// message that embeds contents needs one.
	URI string
	// Its MIME type. Empty in a read's result: the declared one, if any.
	MimeType string
	// Text, unless Binary.
	Text string
	// Bytes (base64 over MCP), if Binary.
	Bytes  []byte
	Binary bool
}

// TextContents is text contents of a URI (empty: the URI read).
func TextContents(uri, mimeType, text string) Contents {
	return Contents{URI: uri, MimeType: mimeType, Text: text}
}

// BytesContents is binary contents of a URI (empty: the URI read).
func BytesContents(uri, mimeType string, data []byte) Contents {
	return Contents{URI: uri, MimeType: mimeType, Bytes: data, Binary: true}
}

// Role is who says a prompt message.
type Role uint8

// The roles of the WIT `role` enum, in its order.
const (
	UserRole Role = iota
	AssistantRole
)

// Message is one message of a filled-in prompt: a [Part] (text, JSON or
// media), or an embedded resource (Resource set, with its URI).
type Message struct {
	Role     Role
	Part     Part
	Resource *Contents
}

// User is a message said by the user: a string, a [Part] or a [Contents]
// (an embedded resource, with its URI).
func User(content any) Message { return message(UserRole, content) }

// Assistant is a message said by the model; see [User].
func Assistant(content any) Message { return message(AssistantRole, content) }

func message(role Role, content any) Message {
	switch c := content.(type) {
	case string:
		return Message{Role: role, Part: Text(c)}
	case Part:
		return Message{Role: role, Part: c}
	case Contents:
		return Message{Role: role, Resource: &c}
	case *Contents:
		return Message{Role: role, Resource: c}
	}
	panic(fmt.Sprintf("a prompt message holds a string, Part or Contents, not %T", content))
}

// Messages is a filled-in prompt with a description of it.
type Messages struct {
	// A description of this filled-in prompt; empty: none.
	Description string
	Messages    []Message
}

// Answer is the user's answer to a question ([Context.Ask]).
type Answer struct {
	// What the user did: "accept", "decline" or "cancel" (MCP's actions).
	Action string
	// The form's content, if the user submitted it (Action "accept").
	Content map[string]any
}

// Accepted tells whether the user submitted the form.
func (a Answer) Accepted() bool { return a.Action == "accept" }

// AskReason is why a question got no answer.
type AskReason uint8

// The cases of the WIT `ask-error` variant, in its order.
const (
	// Nobody can be asked here (no client that supports it, no terminal):
	// decide without an answer.
	AskUnavailable AskReason = iota
	// The question breaks the rules: its form is not a flat JSON Schema
	// object, or it is too large.
	AskInvalid
	// This call asked as many questions as it may.
	AskTooMany
	// The user did not answer in time.
	AskTimeout
)

// AskError is why a question got no answer. Returned from a tool, it is a
// failure saying why.
type AskError struct {
	Reason AskReason
	Detail string
}

func (e *AskError) Error() string {
	switch e.Reason {
	case AskUnavailable:
		return "nobody can be asked: " + e.Detail
	case AskInvalid:
		return "invalid question: " + e.Detail
	case AskTooMany:
		return "too many questions: " + e.Detail
	}
	return "the user did not answer in time"
}

// Ask asks the user a question in the middle of a call and waits for the
// answer (MCP elicitation, or a terminal prompt on the CLI). schema is the
// form: a flat JSON Schema object, as JSON text or a value to encode (a
// map). The error is an *[AskError]; a tool that cannot go on without an
// answer returns it.
func (cx *Context) Ask(message string, schema any) (Answer, error) {
	text, ok := schema.(string)
	if !ok {
		encoded, err := encode(schema)
		if err != nil {
			return Answer{}, &AskError{Reason: AskInvalid, Detail: err.Error()}
		}
		text = encoded
	}
	action, content, err := host.Ask(message, text)
	if err != nil {
		return Answer{}, err
	}
	answer := Answer{Action: action}
	if action == "accept" {
		if err := json.Unmarshal([]byte(content), &answer.Content); err != nil || answer.Content == nil {
			return Answer{}, &AskError{Reason: AskInvalid, Detail: "the answer is not a JSON object"}
		}
	}
	return answer, nil
}

// ResourceUpdated tells the host that a resource this plugin offers has
// changed: clients that subscribed to it are told. A URI the plugin does
// not offer is ignored (and logged).
func (cx *Context) ResourceUpdated(uri string) { host.ResourceUpdated(uri) }

var (
	resources []Resource
	templates []ResourceTemplate
	prompts   []Prompt
)

// RegisterResource declares resources; call it from an init function. It
// panics on an empty or duplicate URI, or a resource without Read.
func RegisterResource(rs ...Resource) {
	for _, r := range rs {
		if r.URI == "" {
			panic(fmt.Sprintf("resource %q: the URI is empty", r.Name))
		}
		if findResource(r.URI) != nil {
			panic(fmt.Sprintf("two resources have the URI %q", r.URI))
		}
		if r.Read == nil {
			panic(fmt.Sprintf("resource %q: set Read", r.URI))
		}
		resources = append(resources, r)
	}
}

// RegisterTemplate declares resource templates; call it from an init
// function. It panics on a duplicate template, one without a variable, or
// one without Read.
func RegisterTemplate(ts ...ResourceTemplate) {
	for _, t := range ts {
		if findTemplate(t.URITemplate) != nil {
			panic(fmt.Sprintf("two resource templates are %q", t.URITemplate))
		}
		if len(t.Variables()) == 0 {
			panic(fmt.Sprintf("resource template %q: no {variable} (use RegisterResource)", t.URITemplate))
		}
		if t.Read == nil {
			panic(fmt.Sprintf("resource template %q: set Read", t.URITemplate))
		}
		templates = append(templates, t)
	}
}

// RegisterPrompt declares prompts; call it from an init function. It panics
// on a bad or duplicate name, or a prompt without Get.
func RegisterPrompt(ps ...Prompt) {
	for _, p := range ps {
		if !validName(p.Name) {
			panic(fmt.Sprintf("prompt name %q: use 1 to 64 ASCII letters, digits, '_' or '-'", p.Name))
		}
		if findPrompt(p.Name) != nil {
			panic(fmt.Sprintf("two prompts are named %q", p.Name))
		}
		if p.Get == nil {
			panic(fmt.Sprintf("prompt %q: set Get", p.Name))
		}
		prompts = append(prompts, p)
	}
}

func findResource(uri string) *Resource {
	for i := range resources {
		if resources[i].URI == uri {
			return &resources[i]
		}
	}
	return nil
}

func findTemplate(uriTemplate string) *ResourceTemplate {
	for i := range templates {
		if templates[i].URITemplate == uriTemplate {
			return &templates[i]
		}
	}
	return nil
}

func findPrompt(name string) *Prompt {
	for i := range prompts {
		if prompts[i].Name == name {
			return &prompts[i]
		}
	}
	return nil
}

// Catalog is everything a plugin offers besides tools, as declared.
type Catalog struct {
	Resources []Resource
	Templates []ResourceTemplate
	Prompts   []Prompt
}

// Describe lists the declared resources, templates and prompts.
func Describe() Catalog {
	return Catalog{Resources: resources, Templates: templates, Prompts: prompts}
}

// Request is who asks, and for which invocation: what every catalog request
// carries.
type Request struct {
	CallID, InvocationID string
	// Nil when nobody authenticated the caller.
	Caller *Caller
}

func (r Request) context(what string) *Context {
	return &Context{CallID: r.CallID, InvocationID: r.InvocationID, Tool: what, caller: r.Caller}
}

// ReadResource reads the listed resource at uri, or (template not empty)
// one of that template's URIs with its variables. Contents without a URI
// are the read's; those get the declared MIME type unless they name one.
// The error is an *[UnknownTool] for a URI or template not declared, or a
// *[ToolError].
func ReadResource(req Request, uri, template string, variables map[string]string) ([]Contents, error) {
	cx := req.context(uri)
	var read func() (any, error)
	var mimeType string
	if template != "" {
		t := findTemplate(template)
		if t == nil {
			return nil, &UnknownTool{Name: uri}
		}
		if variables == nil {
			variables = map[string]string{}
		}
		read, mimeType = func() (any, error) { return t.Read(cx, uri, variables) }, t.MimeType
	} else {
		r := findResource(uri)
		if r == nil {
			return nil, &UnknownTool{Name: uri}
		}
		read, mimeType = func() (any, error) { return r.Read(cx) }, r.MimeType
	}
	value, err := run(cx, read)
	if err != nil {
		return nil, err
	}
	contents, err := intoContents(value)
	if err != nil {
		return nil, err
	}
	for i := range contents {
		if contents[i].URI == "" {
			contents[i].URI = uri
		}
		if contents[i].URI == uri && contents[i].MimeType == "" {
			contents[i].MimeType = mimeType
		}
	}
	return contents, nil
}

func intoContents(value any) ([]Contents, error) {
	switch v := value.(type) {
	case string:
		return []Contents{{Text: v}}, nil
	case []byte:
		return []Contents{{Bytes: v, Binary: true}}, nil
	case Contents:
		return []Contents{v}, nil
	case *Contents:
		return []Contents{*v}, nil
	case []Contents:
		return append([]Contents{}, v...), nil
	}
	return nil, Fail("a read returns a string, []byte, Contents or []Contents, not %T", value)
}

// GetPrompt fills in the prompt name with arguments. The error is an
// *[UnknownTool] for a prompt not declared, or a *[ToolError] (invalid
// arguments for a required one missing).
func GetPrompt(req Request, name string, arguments map[string]string) (Messages, error) {
	p := findPrompt(name)
	if p == nil {
		return Messages{}, &UnknownTool{Name: name}
	}
	if arguments == nil {
		arguments = map[string]string{}
	}
	// The host checks first; this covers native calls.
	for _, a := range p.Arguments {
		if _, ok := arguments[a.Name]; a.Required && !ok {
			return Messages{}, Invalid("`%s` is missing", a.Name)
		}
	}
	cx := req.context(name)
	value, err := run(cx, func() (any, error) { return p.Get(cx, arguments) })
	if err != nil {
		return Messages{}, err
	}
	return intoMessages(value)
}

func intoMessages(value any) (Messages, error) {
	var out Messages
	switch v := value.(type) {
	case string:
		out.Messages = []Message{User(v)}
	case Message:
		out.Messages = []Message{v}
	case []Message:
		out.Messages = v
	case Messages:
		out = v
	case *Messages:
		out = *v
	default:
		return Messages{}, Fail("a prompt returns a string, Message, []Message or Messages, not %T", value)
	}
	for _, m := range out.Messages {
		if m.Resource != nil && m.Resource.URI == "" {
			return Messages{}, Fail("a prompt message embeds a resource without a URI")
		}
	}
	return out, nil
}

// CompleteArgument suggests values for argument of the prompt named target,
// or (template) of the template whose URI template is target. A declared
// target without a completer completes nothing. The error is an
// *[UnknownTool] for a target not declared, or a *[ToolError].
func CompleteArgument(req Request, template bool, target, argument, value string, context map[string]string) (Completion, error) {
	var complete Completer
	if template {
		t := findTemplate(target)
		if t == nil {
			return Completion{}, &UnknownTool{Name: target}
		}
		complete = t.Complete
	} else {
		p := findPrompt(target)
		if p == nil {
			return Completion{}, &UnknownTool{Name: target}
		}
		complete = p.Complete
	}
	if complete == nil {
		return Completion{Values: []string{}}, nil
	}
	if context == nil {
		context = map[string]string{}
	}
	cx := req.context(target)
	var completion Completion
	_, err := run(cx, func() (any, error) {
		var err error
		completion, err = complete(cx, argument, value, context)
		return nil, err
	})
	if err != nil {
		return Completion{}, err
	}
	return completion.capped(), nil
}
