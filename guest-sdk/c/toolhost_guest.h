/*
 * Write toolhost tools in C.
 *
 * A tool is a name, a description, a JSON Schema of its arguments (as text) and
 * a function. The function reads its arguments (a cJSON object, already checked
 * against the schema by the host), and returns a result through the call
 * context:
 *
 *     #include "toolhost_guest.h"
 *
 *     static th_status greet(th_cx *cx, const cJSON *args) {
 *         const char *name = th_arg_string(args, "name", "world");
 *         if (strlen(name) > 100) return th_invalid(cx, "`name` is too long");
 *         cJSON *out = cJSON_CreateObject();
 *         cJSON_AddStringToObject(out, "text", name);
 *         return th_return(cx, out);
 *     }
 *
 *     TOOLHOST_TOOLS(
 *         {.name = "greet",
 *          .description = "Greets someone.",
 *          .input_schema = TH_JSON({"type": "object",
 *                                   "properties": {"name": {"type": "string"}}}),
 *          .run = greet},
 *     )
 *
 * Failures the model can act on are `th_fail` and `th_invalid`. A bug traps
 * the guest (there are no exceptions to catch): call `th_panic` to give the
 * host a message first, as a Rust panic does.
 *
 * A streaming tool (`.streaming = true`) emits its chunks with `th_text`,
 * `th_json` and `th_blob`; the SDK runs the function to the end when the stream
 * starts and hands the chunks out one by one as the host pulls them.
 *
 * Besides tools, a plugin may offer resources, resource templates, prompts
 * and completions (`TOOLHOST_RESOURCES`, ...: see "the catalog" below).
 *
 * Build: `cargo xtask guests NAME` in this repository, or `./build.sh` in a
 * project from `toolhost new NAME --lang c` (clang for wasm32-wasi, cJSON from
 * `vendor/cjson`, the `wit-bindgen c` bindings in `gen/`, `wasm-tools
 * component embed`, the WASI reactor adapter).
 */
#ifndef TOOLHOST_GUEST_H
#define TOOLHOST_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cJSON.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The context of one call: its IDs and what the tool has produced so far. */
typedef struct th_cx th_cx;

/* How a tool function ended; return what `th_return`, `th_fail`... return. */
typedef enum {
    TH_OK = 0,
    TH_FAILED,
    TH_INVALID_ARGUMENTS,
} th_status;

/* A hint about a tool's behaviour: left out (the zero value), no or yes. */
typedef enum {
    TH_HINT_UNSET = 0,
    TH_HINT_NO,
    TH_HINT_YES,
} th_hint;

/* A tool: the function gets the arguments object (never NULL). */
typedef struct {
    /* 1 to 64 ASCII letters, digits, `_` or `-`; unique in the plugin. */
    const char *name;
    /* What the tool does, for the model. */
    const char *description;
    /* JSON Schema (draft 2020-12) of the arguments; the root is an object.
     * NULL means no arguments. Its objects that list "properties" are closed
     * ("additionalProperties": false is added where the schema says nothing
     * of other keys), so a misspelt key is an error the model can fix. */
    const char *input_schema;
    th_status (*run)(th_cx *cx, const cJSON *args);
    /* Optional JSON Schema of the JSON result; the host checks results. */
    const char *output_schema;
    /* The tool's result is a stream of chunks (see above). */
    bool streaming;
    /* The tool starts long work and may return a pending status. */
    bool long_running;
    /* Accept and ignore argument keys the schema does not list: the root gets
     * "additionalProperties": true and nothing is closed. */
    bool allow_unknown_args;
    /* Hints about the tool's behaviour, which MCP clients see as its
     * annotations; left out (NULL, TH_HINT_UNSET) they are not sent, and the
     * host enforces none: a short human-readable title, */
    const char *title;
    /* changes nothing in its environment (readOnlyHint), */
    th_hint read_only;
    /* may destroy or overwrite (destructiveHint), */
    th_hint destructive;
    /* the same arguments again have no further effect (idempotentHint), */
    th_hint idempotent;
    /* reaches systems outside the host, e.g. the web (openWorldHint). */
    th_hint open_world;
} th_tool;

/* Declares the plugin's tools: `TOOLHOST_TOOLS({...}, {...})`, once per plugin. */
#define TOOLHOST_TOOLS(...)                                                   \
    static const th_tool th_tools_declared_[] = {__VA_ARGS__};               \
    const th_tool *th_tools(size_t *count) {                                 \
        *count = sizeof th_tools_declared_ / sizeof th_tools_declared_[0];   \
        return th_tools_declared_;                                           \
    }

/* JSON text from JSON written as C tokens, for schemas without escaping:
 * `TH_JSON({"type": "object", "properties": {}})`. The preprocessor keeps the
 * string literals and collapses whitespace. */
#define TH_JSON(...) #__VA_ARGS__

/* Defined by `TOOLHOST_TOOLS`. */
const th_tool *th_tools(size_t *count);

/* --- results -------------------------------------------------------------- */

/* Sets the JSON result (the SDK takes ownership of `value`); returns TH_OK.
 * A value that is not an object is wrapped by the host as {"result": value}.
 * For tools only (the catalog's requests have their own results, below). */
th_status th_return(th_cx *cx, cJSON *value);

/* The tool failed; the message (printf-style) says why. */
th_status th_fail(th_cx *cx, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* The arguments are wrong in a way the schema cannot say; tell the model how. */
th_status th_invalid(th_cx *cx, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* What kind of media a blob holds. */
typedef enum { TH_IMAGE, TH_AUDIO, TH_VIDEO, TH_FILE } th_media;

/* Adds a part to the result (a chunk, for a streaming tool): text, a JSON
 * value (ownership taken), or bytes with a MIME type (copied; `name` may be NULL).
 * In a prompt's get, each adds a message (see `th_message`); a read or a
 * completion has no parts. */
void th_text(th_cx *cx, const char *text);
void th_json(th_cx *cx, cJSON *value);
void th_blob(th_cx *cx, th_media kind, const char *mime_type, const uint8_t *data,
             size_t len, const char *name);

/* Reports `format` to the host as a panic message, then traps. */
_Noreturn void th_panic(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* --- the call ------------------------------------------------------------- */

/* The call's ID (the model's tool-call ID), its invocation's ID, the tool. */
const char *th_call_id(const th_cx *cx);
const char *th_invocation_id(const th_cx *cx);
const char *th_tool_name(const th_cx *cx);

/* Who is calling, as the host authenticated them (MCP over HTTP with OAuth or
 * a static token; never their credentials), or NULL when nobody did (stdio,
 * the CLI, a server without authentication). A JSON object owned by the call:
 * {"issuer": "...", "subject": "...", "scopes": ["..."], "claims": {...}},
 * `claims` holding only the token claims the operator lets this plugin see
 * (its `caller_claims` grant). */
const cJSON *th_caller(const th_cx *cx);

/* Whether there is a caller and its credentials grant `scope`. */
bool th_caller_has_scope(const th_cx *cx, const char *scope);

/* Log severity. */
typedef enum { TH_TRACE, TH_DEBUG, TH_INFO, TH_WARN, TH_ERROR } th_level;

/* Writes a line (printf-style) to the host's log. */
void th_log(th_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* The invocation's scratch state: a malloc'd copy of the value (free it), or NULL. */
char *th_state_get(const char *key);
void th_state_set(const char *key, const char *value);
void th_state_delete(const char *key);

/* --- asking the user, changed resources ------------------------------------ */

/* What the user did with a question (MCP's elicitation actions). */
typedef enum { TH_ACCEPT, TH_DECLINE, TH_CANCEL } th_action;

/* Asks the user a question in the middle of a call and waits for the answer
 * (MCP elicitation, or a terminal prompt on the CLI). `schema` is the form: a
 * flat JSON Schema object, as JSON text. On an answer: true, `*action` set and,
 * if the user accepted, `*content` the form's content (a JSON object; free it
 * with cJSON_Delete; NULL otherwise). Without one: false and `*error` a
 * malloc'd message saying why (free it): "nobody can be asked: ..." (decide
 * without an answer), "invalid question: ...", "too many questions: ..." or
 * "the user did not answer in time". `content` and `error` may be NULL. */
bool th_ask(const char *message, const char *schema, th_action *action, cJSON **content,
            char **error);

/* Tells the host that a resource this plugin offers (`uri`) has changed:
 * clients that subscribed to it are told. */
void th_resource_updated(const char *uri);

/* --- the catalog: resources, templates, prompts, completions --------------- */

/*
 * Besides tools, a plugin can offer MCP's other server features: resources
 * (data at a URI), resource templates (a family of URIs), prompts (messages a
 * user picks, filled in with arguments) and completions of their arguments.
 * Declare each kind once per plugin, as the tools; a plugin that declares none
 * offers none (and one may declare only these, without tools):
 *
 *     static th_status today(th_cx *cx) {
 *         th_contents_text(cx, NULL, NULL, "Buy milk.");
 *         return TH_OK;
 *     }
 *
 *     static th_status summarize(th_cx *cx, const cJSON *args) {
 *         th_message(cx, TH_USER, "Summarize the notes of %s.",
 *                    th_arg_string(args, "day", "today"));
 *         return TH_OK;
 *     }
 *
 *     TOOLHOST_RESOURCES(
 *         {.uri = "notes://today", .name = "today", .mime_type = "text/plain",
 *          .read = today},
 *     )
 *     TOOLHOST_PROMPTS(
 *         {.name = "summarize", .description = "Summarizes a day's notes.",
 *          TH_ARGUMENTS({.name = "day", .description = "Which day.", .required = true}),
 *          .get = summarize},
 *     )
 *
 * Every read, get and completion runs in a fresh instance, as a call does,
 * with a `th_cx`: th_call_id, th_invocation_id, th_caller, th_log and the
 * state work as in a tool, th_tool_name is the URI read, the prompt's name or
 * what is completed, and th_fail / th_invalid fail it. An unknown URI or
 * prompt is `unknown-tool` (MCP "resource not found"). The host checks the
 * declarations when it loads the plugin (URIs with a scheme, names, no
 * duplicates) and refuses it saying why.
 */

/* A resource at a fixed URI (MCP `Resource`). */
typedef struct {
    /* Where it is; unique in the plugin. Use a scheme or prefix of your own
     * (`notes://today`): the operator sees clashes between plugins. */
    const char *uri;
    /* A short name. */
    const char *name;
    /* A human-readable name, what it holds, its MIME type: NULL for none. */
    const char *title;
    const char *description;
    const char *mime_type;
    /* Its size in bytes; 0: unknown. */
    uint64_t size;
    /* Reads it: adds its contents with `th_contents_text` / `th_contents_bytes`. */
    th_status (*read)(th_cx *cx);
} th_resource;

/* Suggests values for an argument of a prompt or a variable of a template:
 * `argument` is its name, `value` what the user typed so far, `context` the
 * arguments already filled in (a JSON object of strings, never NULL). Adds
 * the values with `th_suggest` or `th_suggest_matching`. */
typedef th_status (*th_completer)(th_cx *cx, const char *argument, const char *value,
                                  const cJSON *context);

/* A family of resources whose URIs follow an RFC 6570 URI template (MCP
 * `ResourceTemplate`): `{name}` matches one path segment (no `/`, `?`, `#`),
 * `{+name}` any text. The host matches a read's URI against it. */
typedef struct {
    /* The URI template, e.g. `notes://day/{day}`; unique in the plugin. */
    const char *uri_template;
    /* A short name. */
    const char *name;
    /* A human-readable name, what its resources hold, their MIME type (when
     * they share one): NULL for none. */
    const char *title;
    const char *description;
    const char *mime_type;
    /* Reads one of its resources: `uri` is the URI read, `variables` the
     * template's variables (a JSON object of strings, percent-decoded, never
     * NULL: `th_arg_string(variables, "day", "")`). */
    th_status (*read)(th_cx *cx, const char *uri, const cJSON *variables);
    /* Optional: suggests values for a variable. */
    th_completer complete;
} th_resource_template;

/* One argument of a prompt; prompt arguments are strings. */
typedef struct {
    const char *name;
    /* A human-readable name, what it is: NULL for none. */
    const char *title;
    const char *description;
    /* A get must give it (the host checks). */
    bool required;
} th_prompt_argument;

/* A prompt: messages a user picks, filled in with arguments (MCP `Prompt`). */
typedef struct {
    /* 1 to 64 ASCII letters, digits, `_` or `-`; unique in the plugin. */
    const char *name;
    /* A human-readable name (NULL for none); what it is for. */
    const char *title;
    const char *description;
    /* The arguments it takes, in order: set both with `TH_ARGUMENTS(...)`. */
    const th_prompt_argument *arguments;
    size_t argument_count;
    /* Fills it in: `arguments` is a JSON object of strings (every required
     * one is there; never NULL). Adds messages with `th_message`, or `th_text`,
     * `th_json`, `th_blob` and `th_contents_*` (see below). */
    th_status (*get)(th_cx *cx, const cJSON *arguments);
    /* Optional: suggests values for an argument. */
    th_completer complete;
} th_prompt;

/* A prompt's arguments, in a `th_prompt` initializer:
 * `TH_ARGUMENTS({.name = "day", .required = true}, {.name = "style"})`. */
#define TH_ARGUMENTS(...)                                                     \
    .arguments = (const th_prompt_argument[]){__VA_ARGS__},                   \
    .argument_count = sizeof((const th_prompt_argument[]){__VA_ARGS__}) /     \
                      sizeof(th_prompt_argument)

/* Declare the plugin's resources, templates and prompts, each once per plugin
 * (like `TOOLHOST_TOOLS`); each is optional. */
#define TOOLHOST_RESOURCES(...)                                               \
    static const th_resource th_resources_declared_[] = {__VA_ARGS__};       \
    const th_resource *th_resources(size_t *count) {                         \
        *count = sizeof th_resources_declared_ / sizeof th_resources_declared_[0]; \
        return th_resources_declared_;                                       \
    }
#define TOOLHOST_RESOURCE_TEMPLATES(...)                                      \
    static const th_resource_template th_templates_declared_[] = {__VA_ARGS__}; \
    const th_resource_template *th_resource_templates(size_t *count) {       \
        *count = sizeof th_templates_declared_ / sizeof th_templates_declared_[0]; \
        return th_templates_declared_;                                       \
    }
#define TOOLHOST_PROMPTS(...)                                                 \
    static const th_prompt th_prompts_declared_[] = {__VA_ARGS__};           \
    const th_prompt *th_prompts(size_t *count) {                             \
        *count = sizeof th_prompts_declared_ / sizeof th_prompts_declared_[0]; \
        return th_prompts_declared_;                                         \
    }

/* Defined by the macros above; the SDK's defaults declare none. */
const th_resource *th_resources(size_t *count);
const th_resource_template *th_resource_templates(size_t *count);
const th_prompt *th_prompts(size_t *count);

/* Adds contents to a read's result: text, or bytes (copied). `uri` NULL is
 * the URI read (a read may also return sub-resources, with their URIs);
 * `mime_type` NULL is the declared one for the URI read, else none. In a
 * prompt's get, adds a message that embeds the resource (`uri` required). */
void th_contents_text(th_cx *cx, const char *uri, const char *mime_type, const char *text);
void th_contents_bytes(th_cx *cx, const char *uri, const char *mime_type, const uint8_t *data,
                       size_t len);

/* Who says a prompt message. */
typedef enum { TH_USER, TH_ASSISTANT } th_role;

/* Adds a text message (printf-style) said by `role` to a prompt's get. The
 * messages that `th_text`, `th_json`, `th_blob` and `th_contents_*` add (one
 * each) are said by the role of the last `th_message` or `th_set_role`: the
 * user's at first. */
void th_message(th_cx *cx, th_role role, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
void th_set_role(th_cx *cx, th_role role);

/* Describes a filled-in prompt (printf-style); without it, it has none. */
void th_prompt_description(th_cx *cx, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* The most values a completion serves: the SDK cuts a longer list and says
 * there are more. */
#define TH_MAX_COMPLETIONS 100

/* Adds a value (copied) to a completion, best first. */
void th_suggest(th_cx *cx, const char *value);

/* Adds the `candidates` (a NULL-terminated array) that start with `prefix`,
 * in order, and says how many there are in all. */
void th_suggest_matching(th_cx *cx, const char *const *candidates, const char *prefix);

/* Says how many values there are in all, and whether there are more than
 * those added; without it, the total is unknown. */
void th_suggest_total(th_cx *cx, uint32_t total, bool has_more);

/* --- arguments -------------------------------------------------------------- */

/* An argument by name, or `fallback` if it is missing or null. */
const char *th_arg_string(const cJSON *args, const char *name, const char *fallback);
int64_t th_arg_int(const cJSON *args, const char *name, int64_t fallback);
double th_arg_number(const cJSON *args, const char *name, double fallback);
bool th_arg_bool(const cJSON *args, const char *name, bool fallback);

#ifdef __cplusplus
}
#endif

#endif
