/*
 * The C guest SDK's catalog: implements the WIT `catalog` interface over the
 * resources, templates and prompts declared with `TOOLHOST_RESOURCES`,
 * `TOOLHOST_RESOURCE_TEMPLATES` and `TOOLHOST_PROMPTS` (an empty catalog for a
 * plugin that declares none), and the functions that fill in a read, a get
 * or a completion. See `toolhost_guest.h`; memory as in `toolhost_guest.c`.
 */
#include "toolhost_internal.h"

typedef toolhost_plugin_types_resource_contents_t contents_t;
typedef toolhost_plugin_types_prompt_message_t message_t;
typedef exports_toolhost_plugin_catalog_tool_error_t catalog_error_t;

/* A plugin that declares none of a kind has none (the macros define these). */
__attribute__((weak)) const th_resource *th_resources(size_t *count) {
    *count = 0;
    return NULL;
}

__attribute__((weak)) const th_resource_template *th_resource_templates(size_t *count) {
    *count = 0;
    return NULL;
}

__attribute__((weak)) const th_prompt *th_prompts(size_t *count) {
    *count = 0;
    return NULL;
}

/* --- filling in a read, a get, a completion ---------------------------------- */

static void add_contents(th_cx *cx, const char *uri, const char *mime_type,
                         toolhost_plugin_types_body_t body) {
    if (cx->serves != TH_FOR_READ && cx->serves != TH_FOR_PROMPT) {
        th_panic("th_contents_text and th_contents_bytes add to a read's result or a prompt's "
                 "messages");
    }
    if (uri == NULL && cx->serves == TH_FOR_PROMPT) {
        th_panic("a prompt message embeds a resource: give th_contents_* its URI");
    }
    contents_t contents = {
        .uri = dup_string(uri != NULL ? uri : cx->tool),
        .mime_type = optional_string(mime_type),
        .body = body,
    };
    if (cx->serves == TH_FOR_PROMPT) {
        th_internal_add_message(
            cx, (toolhost_plugin_types_message_content_t){
                    .tag = TOOLHOST_PLUGIN_TYPES_MESSAGE_CONTENT_RESOURCE,
                    .val.resource = contents});
        return;
    }
    cx->contents = grow(cx->contents, cx->contents_len, &cx->contents_cap, sizeof *cx->contents);
    cx->contents[cx->contents_len++] = contents;
}

void th_contents_text(th_cx *cx, const char *uri, const char *mime_type, const char *text) {
    add_contents(cx, uri, mime_type,
                 (toolhost_plugin_types_body_t){.tag = TOOLHOST_PLUGIN_TYPES_BODY_TEXT,
                                                .val.text = dup_string(text)});
}

void th_contents_bytes(th_cx *cx, const char *uri, const char *mime_type, const uint8_t *data,
                       size_t len) {
    toolhost_plugin_types_body_t body = {.tag = TOOLHOST_PLUGIN_TYPES_BODY_BYTES};
    body.val.bytes.ptr = checked(malloc(len ? len : 1));
    if (len) memcpy(body.val.bytes.ptr, data, len);
    body.val.bytes.len = len;
    add_contents(cx, uri, mime_type, body);
}

void th_internal_add_message(th_cx *cx, toolhost_plugin_types_message_content_t content) {
    cx->messages = grow(cx->messages, cx->messages_len, &cx->messages_cap, sizeof *cx->messages);
    cx->messages[cx->messages_len++] = (message_t){
        .role = cx->role == TH_ASSISTANT ? TOOLHOST_PLUGIN_TYPES_ROLE_ASSISTANT
                                         : TOOLHOST_PLUGIN_TYPES_ROLE_USER,
        .content = content,
    };
}

static void in_prompt(const th_cx *cx, const char *what) {
    if (cx->serves != TH_FOR_PROMPT) th_panic("%s is for a prompt's get", what);
}

void th_message(th_cx *cx, th_role role, const char *format, ...) {
    in_prompt(cx, "th_message");
    cx->role = role;
    va_list args;
    va_start(args, format);
    char *text = vformat(format, args);
    va_end(args);
    th_internal_add_message(
        cx, (toolhost_plugin_types_message_content_t){
                .tag = TOOLHOST_PLUGIN_TYPES_MESSAGE_CONTENT_PART,
                .val.part = {.tag = TOOLHOST_PLUGIN_TYPES_PART_TEXT, .val.text = take_string(text)}});
}

void th_set_role(th_cx *cx, th_role role) {
    in_prompt(cx, "th_set_role");
    cx->role = role;
}

void th_prompt_description(th_cx *cx, const char *format, ...) {
    in_prompt(cx, "th_prompt_description");
    va_list args;
    va_start(args, format);
    free(cx->description);
    cx->description = vformat(format, args);
    va_end(args);
}

void th_suggest(th_cx *cx, const char *value) {
    if (cx->serves != TH_FOR_COMPLETION) th_panic("th_suggest is for a completion");
    cx->values = grow(cx->values, cx->values_len, &cx->values_cap, sizeof *cx->values);
    cx->values[cx->values_len++] = dup_string(value);
}

void th_suggest_matching(th_cx *cx, const char *const *candidates, const char *prefix) {
    uint32_t matching = 0;
    size_t n = strlen(prefix);
    for (; candidates != NULL && *candidates != NULL; candidates++) {
        if (strncmp(*candidates, prefix, n) == 0) {
            th_suggest(cx, *candidates);
            matching++;
        }
    }
    th_suggest_total(cx, matching, false);
}

void th_suggest_total(th_cx *cx, uint32_t total, bool has_more) {
    if (cx->serves != TH_FOR_COMPLETION) th_panic("th_suggest_total is for a completion");
    cx->has_total = true;
    cx->total = total;
    cx->has_more = has_more;
}

/* --- requests ---------------------------------------------------------------- */

/* A context for a catalog request: `what` (malloc'd) is what th_tool_name says. */
static th_cx begin(th_for serves, const toolhost_plugin_types_request_t *request, char *what) {
    return (th_cx){
        .serves = serves,
        .call_id = copy_string(&request->call_id),
        .invocation_id = copy_string(&request->invocation_id),
        .tool = what,
        .caller = th_internal_caller_json(&request->caller),
    };
}

/* Frees what a request's context still holds (what was not handed over). */
static void end(th_cx *cx) {
    free(cx->call_id);
    free(cx->invocation_id);
    free(cx->tool);
    cJSON_Delete(cx->caller);
    free(cx->json);
    free(cx->error);
    free(cx->description);
    for (size_t i = 0; i < cx->parts_len; i++) toolhost_plugin_types_part_free(&cx->parts[i]);
    free(cx->parts);
    for (size_t i = 0; i < cx->contents_len; i++) {
        toolhost_plugin_types_resource_contents_free(&cx->contents[i]);
    }
    free(cx->contents);
    for (size_t i = 0; i < cx->messages_len; i++) {
        toolhost_plugin_types_prompt_message_free(&cx->messages[i]);
    }
    free(cx->messages);
    for (size_t i = 0; i < cx->values_len; i++) catalog_plugin_string_free(&cx->values[i]);
    free(cx->values);
}

/* Name-value pairs (variables, arguments, context) as a JSON object of strings. */
static cJSON *pairs_json(const catalog_plugin_list_tuple2_string_string_t *pairs) {
    cJSON *out = checked(cJSON_CreateObject());
    for (size_t i = 0; i < pairs->len; i++) {
        char *name = copy_string(&pairs->ptr[i].f0);
        char *value = copy_string(&pairs->ptr[i].f1);
        cJSON_AddItemToObject(out, name, checked(cJSON_CreateString(value)));
        free(name);
        free(value);
    }
    return out;
}

static void unknown(catalog_error_t *err, const char *what) {
    set_error(err, TOOLHOST_PLUGIN_TYPES_TOOL_ERROR_UNKNOWN_TOOL, checked(strdup(what)));
}

static const char *or_empty(const char *text) { return text != NULL ? text : ""; }

void exports_toolhost_plugin_catalog_describe(exports_toolhost_plugin_catalog_catalog_t *ret) {
    size_t count;
    const th_resource *resources = th_resources(&count);
    ret->resources.len = count;
    ret->resources.ptr = checked(calloc(count ? count : 1, sizeof *ret->resources.ptr));
    for (size_t i = 0; i < count; i++) {
        const th_resource *r = &resources[i];
        if (r->read == NULL) th_panic("resource `%s`: set .read", or_empty(r->uri));
        toolhost_plugin_types_resource_info_t *info = &ret->resources.ptr[i];
        info->uri = dup_string(or_empty(r->uri));
        info->name = dup_string(r->name != NULL ? r->name : or_empty(r->uri));
        info->title = optional_string(r->title);
        info->description = optional_string(r->description);
        info->mime_type = optional_string(r->mime_type);
        info->size.is_some = r->size != 0;
        info->size.val = r->size;
    }
    const th_resource_template *templates = th_resource_templates(&count);
    ret->templates.len = count;
    ret->templates.ptr = checked(calloc(count ? count : 1, sizeof *ret->templates.ptr));
    for (size_t i = 0; i < count; i++) {
        const th_resource_template *t = &templates[i];
        if (t->read == NULL) th_panic("resource template `%s`: set .read", or_empty(t->uri_template));
        toolhost_plugin_types_resource_template_info_t *info = &ret->templates.ptr[i];
        info->uri_template = dup_string(or_empty(t->uri_template));
        info->name = dup_string(t->name != NULL ? t->name : or_empty(t->uri_template));
        info->title = optional_string(t->title);
        info->description = optional_string(t->description);
        info->mime_type = optional_string(t->mime_type);
    }
    const th_prompt *prompts = th_prompts(&count);
    ret->prompts.len = count;
    ret->prompts.ptr = checked(calloc(count ? count : 1, sizeof *ret->prompts.ptr));
    for (size_t i = 0; i < count; i++) {
        const th_prompt *p = &prompts[i];
        if (p->get == NULL) th_panic("prompt `%s`: set .get", or_empty(p->name));
        toolhost_plugin_types_prompt_info_t *info = &ret->prompts.ptr[i];
        info->name = dup_string(or_empty(p->name));
        info->title = optional_string(p->title);
        info->description = dup_string(or_empty(p->description));
        size_t n = p->arguments != NULL ? p->argument_count : 0;
        info->arguments.len = n;
        info->arguments.ptr = checked(calloc(n ? n : 1, sizeof *info->arguments.ptr));
        for (size_t j = 0; j < n; j++) {
            const th_prompt_argument *a = &p->arguments[j];
            info->arguments.ptr[j] = (toolhost_plugin_types_prompt_argument_t){
                .name = dup_string(or_empty(a->name)),
                .title = optional_string(a->title),
                .description = optional_string(a->description),
                .required = a->required,
            };
        }
    }
}

static const th_resource_template *find_template(const catalog_plugin_string_t *uri_template) {
    size_t count;
    const th_resource_template *templates = th_resource_templates(&count);
    for (size_t i = 0; i < count; i++) {
        if (equals(uri_template, or_empty(templates[i].uri_template))) return &templates[i];
    }
    return NULL;
}

static const th_prompt *find_prompt(const catalog_plugin_string_t *name) {
    size_t count;
    const th_prompt *prompts = th_prompts(&count);
    for (size_t i = 0; i < count; i++) {
        if (equals(name, or_empty(prompts[i].name))) return &prompts[i];
    }
    return NULL;
}

bool exports_toolhost_plugin_catalog_read_resource(
    exports_toolhost_plugin_catalog_read_t *read,
    exports_toolhost_plugin_catalog_list_resource_contents_t *ret, catalog_error_t *err) {
    th_cx cx = begin(TH_FOR_READ, &read->request, copy_string(&read->uri));
    const th_resource *resource = NULL;
    const th_resource_template *template = NULL;
    if (read->template_.is_some) {
        template = find_template(&read->template_.val);
    } else {
        size_t count;
        const th_resource *resources = th_resources(&count);
        for (size_t i = 0; i < count && resource == NULL; i++) {
            if (equals(&read->uri, or_empty(resources[i].uri))) resource = &resources[i];
        }
    }
    if (resource == NULL && template == NULL) {
        exports_toolhost_plugin_catalog_read_free(read);
        unknown(err, cx.tool);
        end(&cx);
        return false;
    }
    th_status status;
    if (template != NULL) {
        cJSON *variables = pairs_json(&read->variables);
        exports_toolhost_plugin_catalog_read_free(read);
        status = template->read(&cx, cx.tool, variables);
        cJSON_Delete(variables);
    } else {
        exports_toolhost_plugin_catalog_read_free(read);
        status = resource->read(&cx);
    }
    bool ok = th_internal_outcome(&cx, status, err);
    if (ok) {
        /* The URI read's contents without a MIME type have the declared one. */
        const char *declared = template != NULL ? template->mime_type : resource->mime_type;
        for (size_t i = 0; i < cx.contents_len; i++) {
            contents_t *c = &cx.contents[i];
            if (declared != NULL && !c->mime_type.is_some && equals(&c->uri, cx.tool)) {
                c->mime_type = optional_string(declared);
            }
        }
        ret->len = cx.contents_len;
        ret->ptr = cx.contents != NULL ? cx.contents : checked(calloc(1, sizeof *ret->ptr));
        cx.contents = NULL;
        cx.contents_len = 0;
    }
    end(&cx);
    return ok;
}

bool exports_toolhost_plugin_catalog_get_prompt(exports_toolhost_plugin_catalog_get_t *get,
                                                exports_toolhost_plugin_catalog_prompt_messages_t *ret,
                                                catalog_error_t *err) {
    th_cx cx = begin(TH_FOR_PROMPT, &get->request, copy_string(&get->name));
    const th_prompt *prompt = find_prompt(&get->name);
    cJSON *arguments = pairs_json(&get->arguments);
    exports_toolhost_plugin_catalog_get_free(get);
    if (prompt == NULL) {
        cJSON_Delete(arguments);
        unknown(err, cx.tool);
        end(&cx);
        return false;
    }
    th_status status = TH_OK;
    /* The host checks first; this covers a host that does not. */
    for (size_t i = 0; prompt->arguments != NULL && i < prompt->argument_count; i++) {
        const th_prompt_argument *a = &prompt->arguments[i];
        if (a->required && !cJSON_HasObjectItem(arguments, or_empty(a->name))) {
            status = th_invalid(&cx, "`%s` is missing", or_empty(a->name));
            break;
        }
    }
    if (status == TH_OK) status = prompt->get(&cx, arguments);
    cJSON_Delete(arguments);
    bool ok = th_internal_outcome(&cx, status, err);
    if (ok) {
        ret->description.is_some = cx.description != NULL;
        if (cx.description != NULL) ret->description.val = take_string(cx.description);
        cx.description = NULL;
        ret->messages.len = cx.messages_len;
        ret->messages.ptr =
            cx.messages != NULL ? cx.messages : checked(calloc(1, sizeof *ret->messages.ptr));
        cx.messages = NULL;
        cx.messages_len = 0;
    }
    end(&cx);
    return ok;
}

bool exports_toolhost_plugin_catalog_complete(
    exports_toolhost_plugin_catalog_completion_request_t *request,
    exports_toolhost_plugin_catalog_completion_t *ret, catalog_error_t *err) {
    const toolhost_plugin_types_completion_target_t *target = &request->target;
    bool of_template = target->tag == TOOLHOST_PLUGIN_TYPES_COMPLETION_TARGET_TEMPLATE;
    const catalog_plugin_string_t *name = of_template ? &target->val.template_ : &target->val.prompt;
    th_cx cx = begin(TH_FOR_COMPLETION, &request->request, copy_string(name));
    bool found;
    th_completer complete = NULL;
    if (of_template) {
        const th_resource_template *template = find_template(name);
        found = template != NULL;
        if (found) complete = template->complete;
    } else {
        const th_prompt *prompt = find_prompt(name);
        found = prompt != NULL;
        if (found) complete = prompt->complete;
    }
    th_status status = TH_OK;
    if (found && complete != NULL) {
        char *argument = copy_string(&request->argument);
        char *value = copy_string(&request->value);
        cJSON *context = pairs_json(&request->context);
        exports_toolhost_plugin_catalog_completion_request_free(request);
        status = complete(&cx, argument, value, context);
        free(argument);
        free(value);
        cJSON_Delete(context);
    } else {
        exports_toolhost_plugin_catalog_completion_request_free(request);
    }
    if (!found) {
        unknown(err, cx.tool);
        end(&cx);
        return false;
    }
    bool ok = th_internal_outcome(&cx, status, err);
    if (ok) {
        /* At most TH_MAX_COMPLETIONS are served; a longer list is cut. */
        while (cx.values_len > TH_MAX_COMPLETIONS) {
            catalog_plugin_string_free(&cx.values[--cx.values_len]);
            cx.has_more = true;
        }
        ret->values.len = cx.values_len;
        ret->values.ptr =
            cx.values != NULL ? cx.values : checked(calloc(1, sizeof *ret->values.ptr));
        cx.values = NULL;
        cx.values_len = 0;
        ret->total.is_some = cx.has_total;
        ret->total.val = cx.total;
        ret->has_more = cx.has_more;
    }
    end(&cx);
    return ok;
}
