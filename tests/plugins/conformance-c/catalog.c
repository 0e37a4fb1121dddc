/*
 * The conformance plugin's catalog in C: resources (text, bytes, several
 * contents, the request's IDs, a failure), templates (`{name}` and `{+name}`),
 * prompts (arguments, roles, an embedded resource, an image, JSON, a
 * description, a refusal) and completions (by prefix, from the context, past
 * the cap). `host/tests/all/conformance/catalog.rs` states what each must do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost_guest.h"

extern const uint8_t PIXEL_PNG[70];

static th_status greeting(th_cx *cx) {
    /* No MIME type: the declared one. */
    th_contents_text(cx, NULL, NULL, "Hello there!");
    return TH_OK;
}

static th_status pixel(th_cx *cx) {
    th_contents_bytes(cx, NULL, NULL, PIXEL_PNG, sizeof PIXEL_PNG);
    return TH_OK;
}

static th_status bundle(th_cx *cx) {
    /* The resource read, then a sub-resource with a type of its own. */
    th_contents_text(cx, NULL, NULL, "the bundle");
    th_contents_text(cx, "conformance://bundle/part", "application/json", "{\"part\": 1}");
    return TH_OK;
}

static th_status request(th_cx *cx) {
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "call_id", th_call_id(cx));
    cJSON_AddStringToObject(out, "invocation_id", th_invocation_id(cx));
    cJSON_AddStringToObject(out, "uri", th_tool_name(cx));
    const cJSON *subject = cJSON_GetObjectItemCaseSensitive(th_caller(cx), "subject");
    cJSON_AddItemToObject(out, "caller", cJSON_IsString(subject)
                                              ? cJSON_CreateString(subject->valuestring)
                                              : cJSON_CreateNull());
    char *text = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    th_contents_text(cx, NULL, NULL, text);
    free(text);
    return TH_OK;
}

static th_status broken(th_cx *cx) { return th_fail(cx, "the resource is broken"); }

TOOLHOST_RESOURCES(
    {.uri = "conformance://greeting",
     .name = "greeting",
     .title = "A greeting",
     .description = "Says hello.",
     .mime_type = "text/plain",
     .size = 12,
     .read = greeting},
    {.uri = "conformance://pixel", .name = "pixel", .mime_type = "image/png",
     .size = sizeof PIXEL_PNG, .read = pixel},
    {.uri = "conformance://bundle", .name = "bundle", .mime_type = "text/plain", .read = bundle},
    {.uri = "conformance://request", .name = "request", .mime_type = "application/json",
     .read = request},
    {.uri = "conformance://broken", .name = "broken", .read = broken},
)

static th_status word(th_cx *cx, const char *uri, const cJSON *variables) {
    char text[256];
    snprintf(text, sizeof text, "%s at %s", th_arg_string(variables, "word", "?"), uri);
    th_contents_text(cx, NULL, NULL, text);
    return TH_OK;
}

static th_status words(th_cx *cx, const char *argument, const char *value,
                       const cJSON *context) {
    (void)context;
    if (strcmp(argument, "word") != 0) return th_invalid(cx, "no variable `%s`", argument);
    th_suggest_matching(cx, (const char *const[]){"alpha", "beta", "bravo", NULL}, value);
    return TH_OK;
}

static th_status file(th_cx *cx, const char *uri, const cJSON *variables) {
    (void)uri;
    /* A MIME type of its own, where the template declares none. */
    th_contents_text(cx, NULL, "text/markdown", th_arg_string(variables, "path", "?"));
    return TH_OK;
}

TOOLHOST_RESOURCE_TEMPLATES(
    {.uri_template = "conformance://words/{word}",
     .name = "words",
     .description = "A word, and where it was read.",
     .mime_type = "text/plain",
     .read = word,
     .complete = words},
    {.uri_template = "conformance://files/{+path}", .name = "files", .read = file},
)

static th_status greet(th_cx *cx, const cJSON *arguments) {
    const char *name = th_arg_string(arguments, "name", "?");
    const char *style = th_arg_string(arguments, "style", NULL);
    th_prompt_description(cx, "A greeting for %s", name);
    th_message(cx, TH_USER, "Greet %s.", name);
    if (style != NULL) th_message(cx, TH_ASSISTANT, "In a %s style.", style);
    return TH_OK;
}

static th_status greet_completions(th_cx *cx, const char *argument, const char *value,
                                   const cJSON *context) {
    if (strcmp(argument, "style") == 0) {
        th_suggest_matching(cx, (const char *const[]){"formal", "friendly", "funny", NULL},
                            value);
    } else if (strcmp(th_arg_string(context, "style", ""), "formal") == 0) {
        th_suggest(cx, "Dr. Ada");
    } else {
        th_suggest(cx, "Ada");
    }
    return TH_OK;
}

static th_status show(th_cx *cx, const cJSON *arguments) {
    (void)arguments;
    th_contents_text(cx, "conformance://greeting", "text/plain", "Hello there!");
    th_set_role(cx, TH_ASSISTANT);
    th_blob(cx, TH_IMAGE, "image/png", PIXEL_PNG, sizeof PIXEL_PNG, NULL);
    cJSON *shown = cJSON_CreateObject();
    cJSON_AddNumberToObject(shown, "shown", 2);
    th_json(cx, shown);
    return TH_OK;
}

static th_status many(th_cx *cx, const cJSON *arguments) {
    th_message(cx, TH_USER, "Pick %s.", th_arg_string(arguments, "value", "?"));
    return TH_OK;
}

static th_status many_completions(th_cx *cx, const char *argument, const char *value,
                                  const cJSON *context) {
    (void)argument, (void)value, (void)context;
    char text[8];
    for (int i = 0; i < 150; i++) {
        snprintf(text, sizeof text, "v%03d", i);
        th_suggest(cx, text);
    }
    return TH_OK;
}

static th_status refuse(th_cx *cx, const cJSON *arguments) {
    (void)arguments;
    return th_invalid(cx, "no prompt today");
}

TOOLHOST_PROMPTS(
    {.name = "greet",
     .title = "Greeting",
     .description = "Greets someone, in a style if given.",
     TH_ARGUMENTS({.name = "name", .description = "Who to greet.", .required = true},
                  {.name = "style", .title = "Style", .description = "How to greet."}),
     .get = greet,
     .complete = greet_completions},
    {.name = "show",
     .description = "Shows a resource and an image.",
     .get = show},
    {.name = "many",
     .description = "Offers more values than a completion serves.",
     TH_ARGUMENTS({.name = "value"}),
     .get = many,
     .complete = many_completions},
    {.name = "refuse", .description = "Always refuses.", .get = refuse},
)
