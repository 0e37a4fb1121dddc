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
 * A value that is not an object is wrapped by the host as {"result": value}. */
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
 * value (ownership taken), or bytes with a MIME type (copied; `name` may be NULL). */
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
