/*
 * Conformance plugin in C: the tool set every guest language implements.
 * `host/tests/all/conformance.rs` states what each tool must do. Its catalog
 * (resources, templates, prompts, completions) is in `catalog.c`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost_guest.h"

/* A 1x1 red RGBA PNG (the same bytes as the Rust conformance plugin's); the
 * catalog serves it too. */
const uint8_t PIXEL_PNG[70] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
    0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
    0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78,
    0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x56, 0xc7,
    0x2f, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

/* A copy of `value`, or JSON null if it is missing. */
static cJSON *copy_or_null(const cJSON *value) {
    return value && !cJSON_IsNull(value) ? cJSON_Duplicate(value, true) : cJSON_CreateNull();
}

static th_status echo(th_cx *cx, const cJSON *args) {
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "message", th_arg_string(args, "message", ""));
    const cJSON *nested = cJSON_GetObjectItemCaseSensitive(args, "nested");
    if (cJSON_IsObject(nested)) {
        /* Fill the defaults: `tags` is [] and `inner` null when missing. */
        cJSON *filled = cJSON_AddObjectToObject(out, "nested");
        cJSON_AddStringToObject(filled, "label", th_arg_string(nested, "label", ""));
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(nested, "tags");
        cJSON_AddItemToObject(filled, "tags",
                              cJSON_IsArray(tags) ? cJSON_Duplicate(tags, true)
                                                  : cJSON_CreateArray());
        cJSON_AddItemToObject(filled, "inner",
                              copy_or_null(cJSON_GetObjectItemCaseSensitive(nested, "inner")));
    } else {
        cJSON_AddNullToObject(out, "nested");
    }
    return th_return(cx, out);
}

static th_status greet(th_cx *cx, const cJSON *args) {
    const char *name = th_arg_string(args, "name", "");
    const char *greeting = th_arg_string(args, "greeting", "Hello");
    int64_t times = th_arg_int(args, "times", 1);
    if (times < 1 || times > 5) return th_invalid(cx, "`times` must be from 1 to 5");
    size_t one = strlen(greeting) + strlen(name) + 4; /* "G, N! " */
    char *text = calloc((size_t)times, one + 1);
    for (int64_t i = 0; i < times; i++) {
        if (i > 0) strcat(text, " ");
        strcat(text, greeting);
        strcat(text, ", ");
        strcat(text, name);
        strcat(text, "!");
    }
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "text", text);
    free(text);
    return th_return(cx, out);
}

static th_status add(th_cx *cx, const cJSON *args) {
    /* A bare number: the host wraps it as {"result": n}. */
    return th_return(cx, cJSON_CreateNumber((double)(th_arg_int(args, "a", 0) +
                                                     th_arg_int(args, "b", 0))));
}

static th_status order(th_cx *cx, const cJSON *args) {
    const char *size = th_arg_string(args, "size", "");
    int ml = strcmp(size, "small") == 0 ? 250 : strcmp(size, "medium") == 0 ? 350 : 500;
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "item", th_arg_string(args, "item", ""));
    cJSON_AddStringToObject(out, "size", size);
    cJSON_AddNumberToObject(out, "ml", ml);
    return th_return(cx, out);
}

static th_status fail(th_cx *cx, const cJSON *args) {
    const char *message = th_arg_string(args, "message", "");
    if (th_arg_bool(args, "invalid", false)) return th_invalid(cx, "%s", message);
    return th_fail(cx, "%s", message);
}

static th_status countdown(th_cx *cx, const cJSON *args) {
    char line[24];
    for (int64_t i = th_arg_int(args, "start", 0); i >= 0; i--) {
        snprintf(line, sizeof line, "%lld\n", (long long)i);
        th_text(cx, line);
    }
    return TH_OK;
}

static th_status pixel(th_cx *cx, const cJSON *args) {
    (void)args;
    th_text(cx, "a 1x1 red pixel");
    th_blob(cx, TH_IMAGE, "image/png", PIXEL_PNG, sizeof PIXEL_PNG, NULL);
    return TH_OK;
}

static th_status remember(th_cx *cx, const cJSON *args) {
    const char *key = th_arg_string(args, "key", "");
    const char *value = th_arg_string(args, "value", NULL);
    cJSON *out = cJSON_CreateObject();
    if (value == NULL) {
        char *stored = th_state_get(key);
        cJSON_AddItemToObject(out, "value",
                              stored ? cJSON_CreateString(stored) : cJSON_CreateNull());
        free(stored);
    } else {
        th_state_set(key, value);
        cJSON_AddStringToObject(out, "stored", key);
    }
    return th_return(cx, out);
}

static th_status whoami(th_cx *cx, const cJSON *args) {
    (void)args;
    th_log(TH_INFO, "whoami called");
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "call_id", th_call_id(cx));
    cJSON_AddStringToObject(out, "invocation_id", th_invocation_id(cx));
    if (th_caller(cx) != NULL) {
        cJSON_AddItemToObject(out, "caller", cJSON_Duplicate(th_caller(cx), true));
    }
    return th_return(cx, out);
}

static th_status crash(th_cx *cx, const cJSON *args) {
    /* Fixed-point division: an integer division by zero traps (the bug). */
    int32_t divisor = (int32_t)th_arg_int(args, "divisor", 0);
    int32_t millionths = 1000000 / divisor;
    return th_return(cx, cJSON_CreateNumber(millionths / 1e6));
}

TOOLHOST_TOOLS(
    {.name = "echo",
     .description = "Echoes its arguments back as a JSON object.",
     .input_schema = TH_JSON({
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
     }),
     .run = echo},
    {.name = "greet",
     .description = "Greets someone, optionally several times.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["name"],
         "properties": {
             "name": {"type": "string", "description": "Who to greet."},
             "greeting": {"type": "string", "default": "Hello",
                          "description": "The word of greeting."},
             "times": {"type": "integer", "default": 1,
                       "description": "How many greetings, from 1 to 5."}
         }
     }),
     .run = greet},
    {.name = "add",
     .description = "Adds two integers; the host wraps the bare number as {\"result\": n}.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["a", "b"],
         "properties": {
             "a": {"type": "integer", "description": "The first term."},
             "b": {"type": "integer", "description": "The second term."}
         }
     }),
     .run = add,
     .title = "Add",
     .read_only = TH_HINT_YES,
     .idempotent = TH_HINT_YES,
     .open_world = TH_HINT_NO},
    {.name = "order",
     .description = "Orders a drink in one of three sizes.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["item", "size"],
         "properties": {
             "item": {"type": "string", "description": "What to order."},
             "size": {"type": "string", "enum": ["small", "medium", "large"],
                      "description": "The size."}
         }
     }),
     .run = order},
    {.name = "fail",
     .description = "Always fails with the given message.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["message"],
         "properties": {
             "message": {"type": "string", "description": "The failure message."},
             "invalid": {"type": "boolean", "default": false,
                         "description": "Report invalid arguments instead of a failure."}
         }
     }),
     .run = fail},
    {.name = "countdown",
     .description = "Counts down to zero, one line per number, as a stream.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["start"],
         "properties": {"start": {"type": "integer", "description": "Where to start."}}
     }),
     .run = countdown,
     .streaming = true},
    {.name = "pixel",
     .description = "Returns a caption and a 1x1 red PNG image.",
     .input_schema = TH_JSON({"type": "object", "properties": {}}),
     .run = pixel},
    {.name = "remember",
     .description = "Stores a value in the invocation's scratch state, or reads it back.",
     .input_schema = TH_JSON({
         "type": "object",
         "required": ["key"],
         "properties": {
             "key": {"type": "string", "description": "The key."},
             "value": {"type": ["string", "null"],
                       "description": "The value to store; omit it to read the key instead."}
         }
     }),
     .run = remember},
    {.name = "whoami",
     .description = "Tells the caller the IDs of this call.",
     .input_schema = TH_JSON({"type": "object", "properties": {}}),
     .run = whoami},
    {.name = "crash",
     .description = "Divides one by the divisor: a bug when it is zero.",
     .input_schema = TH_JSON({
         "type": "object",
         "properties": {
             "divisor": {"type": "integer", "default": 0, "description": "The divisor."}
         }
     }),
     .run = crash},
)
