/*
 * What the two halves of the C guest SDK share: `toolhost_guest.c` (tools,
 * results, the host imports) and `toolhost_catalog.c` (resources, templates,
 * prompts, completions). Not for plugins: they include `toolhost_guest.h`.
 *
 * The helpers are `static inline`, so each half has its own copy and no name
 * here can clash with a plugin's; the few larger functions are `th_internal_*`.
 */
#ifndef TOOLHOST_INTERNAL_H
#define TOOLHOST_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_plugin.h"
#include "toolhost_guest.h"

typedef toolhost_plugin_types_part_t part_t;
typedef exports_toolhost_plugin_tools_tool_error_t tool_error_t;

/* What a context serves: a tool call or one of the catalog's requests. What
 * the results functions add goes where that request's result is. */
typedef enum { TH_FOR_CALL, TH_FOR_READ, TH_FOR_PROMPT, TH_FOR_COMPLETION } th_for;

struct th_cx {
    th_for serves;
    char *call_id;
    char *invocation_id;
    /* The tool; for the catalog, the URI read, the prompt or the target. */
    char *tool;
    /* The caller as a JSON object (see `th_caller`); NULL if none. */
    cJSON *caller;
    /* The JSON result set by `th_return`, as text; NULL if none. */
    char *json;
    /* The parts added so far (the chunks, for a streaming tool). */
    part_t *parts;
    size_t parts_len;
    size_t parts_cap;
    /* The error of `th_fail` / `th_invalid`. */
    uint8_t error_tag;
    char *error;
    /* A read's contents. */
    toolhost_plugin_types_resource_contents_t *contents;
    size_t contents_len;
    size_t contents_cap;
    /* A prompt's messages, the role of those to come, its description. */
    toolhost_plugin_types_prompt_message_t *messages;
    size_t messages_len;
    size_t messages_cap;
    th_role role;
    char *description;
    /* A completion's values, its total (when known) and whether there are more. */
    catalog_plugin_string_t *values;
    size_t values_len;
    size_t values_cap;
    bool has_total;
    uint32_t total;
    bool has_more;
};

static inline void *checked(void *ptr) {
    if (ptr == NULL) th_panic("out of memory");
    return ptr;
}

/* `items`, an array of `len` items of `size` bytes (`*cap` allocated), with
 * room for one more: `a = grow(a, a_len, &a_cap, sizeof *a); a[a_len++] = x;` */
static inline void *grow(void *items, size_t len, size_t *cap, size_t size) {
    if (len < *cap) return items;
    *cap = *cap ? *cap * 2 : 4;
    return checked(realloc(items, *cap * size));
}

static inline char *copy_string(const catalog_plugin_string_t *s) {
    char *out = checked(malloc(s->len + 1));
    memcpy(out, s->ptr, s->len);
    out[s->len] = '\0';
    return out;
}

static inline bool equals(const catalog_plugin_string_t *s, const char *text) {
    return s->len == strlen(text) && memcmp(s->ptr, text, s->len) == 0;
}

/* A malloc'd string from a printf format. */
static inline char *vformat(const char *format, va_list args) {
    va_list again;
    va_copy(again, args);
    int len = vsnprintf(NULL, 0, format, args);
    char *out = checked(malloc(len < 0 ? 1 : (size_t)len + 1));
    vsnprintf(out, len < 0 ? 1 : (size_t)len + 1, format, again);
    va_end(again);
    return out;
}

/* A WIT string that takes over `text` (malloc'd). */
static inline catalog_plugin_string_t take_string(char *text) {
    return (catalog_plugin_string_t){.ptr = (uint8_t *)text, .len = strlen(text)};
}

static inline catalog_plugin_string_t dup_string(const char *text) {
    catalog_plugin_string_t out;
    catalog_plugin_string_dup(&out, text);
    return out;
}

/* An optional WIT string: NULL is `none`. */
static inline catalog_plugin_option_string_t optional_string(const char *text) {
    catalog_plugin_option_string_t out = {.is_some = text != NULL};
    if (text != NULL) out.val = dup_string(text);
    return out;
}

static inline void set_error(tool_error_t *err, uint8_t tag, char *message) {
    err->tag = tag;
    /* Every case of `tool-error` carries a string in the same place. */
    err->val.failed = take_string(message);
}

static inline char *json_text(cJSON *value) {
    char *text = checked(cJSON_PrintUnformatted(value));
    cJSON_Delete(value);
    return text;
}

/* The WIT caller as the JSON object `th_caller` gives; NULL for none. */
cJSON *th_internal_caller_json(const toolhost_plugin_types_option_caller_t *caller);

/* How a request ended, from the status its function returned: true if it
 * succeeded, else false with `err` set (from `th_fail` / `th_invalid`, or a
 * message of its own). */
bool th_internal_outcome(th_cx *cx, th_status status, tool_error_t *err);

/* Adds a message said by `cx->role` to a prompt being filled in. */
void th_internal_add_message(th_cx *cx, toolhost_plugin_types_message_content_t content);

#endif
