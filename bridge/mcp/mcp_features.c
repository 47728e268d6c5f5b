/* mcp_features: resources (static, templates, a dynamic provider,
 * subscriptions), prompts and completion for the MCP layer. */
#define LOG_MODULE "mcp"
#include "mcp_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"

#define LIST_PAGE 100
/* Per session: URIs a client may subscribe to, and how long each may be
 * (doc/security.md, "Bounds"). A session used to keep 256 URIs of any length
 * (up to a 4 MiB request each). */
#define MAX_SUBSCRIPTIONS 64
#define MAX_SUBSCRIPTION_URI 2048

static void s_entry_free(mcp_resource_entry_t *e)
{
    free(e->uri);
    free(e->name);
    free(e->title);
    free(e->description);
    free(e->mime);
}

void mcp_features_free(mcp_features_t *f)
{
    for (size_t i = 0; i < f->nresources; i++)
        s_entry_free(&f->resources[i]);
    for (size_t i = 0; i < f->ntemplates; i++)
        s_entry_free(&f->templates[i]);
    for (size_t i = 0; i < f->nui; i++)
        s_entry_free(&f->ui[i]);
    free(f->ui);
    free(f->resources);
    free(f->templates);
    for (size_t i = 0; i < f->nprompts; i++) {
        free(f->prompts[i].name);
        free(f->prompts[i].title);
        free(f->prompts[i].description);
        json_object_put(f->prompts[i].arguments);
    }
    free(f->prompts);
    memset(f, 0, sizeof *f);
}

void mcp_features_session_free(mcp_session_t *session)
{
    for (size_t i = 0; i < session->nsubscriptions; i++)
        free(session->subscriptions[i]);
    free(session->subscriptions);
    session->subscriptions = NULL;
    session->nsubscriptions = 0;
}

static mcp_resource_entry_t *s_add_entry(mcp_resource_entry_t **arr, size_t *n, const char *uri, const char *name,
                                         const char *title, const char *description, const char *mime,
                                         mcp_resource_fn *fn, void *ud)
{
    *arr = xrealloc(*arr, (*n + 1) * sizeof **arr);
    mcp_resource_entry_t *e = &(*arr)[(*n)++];
    e->uri = xstrdup(uri);
    e->name = xstrdup(name);
    e->title = xstrdup(title);
    e->description = xstrdup(description);
    e->mime = xstrdup(mime);
    e->fn = fn;
    e->ud = ud;
    return e;
}

void mcp_server_add_resource(mcp_server_t *self, const char *uri, const char *name, const char *title,
                             const char *description, const char *mime, mcp_resource_fn *fn, void *ud)
{
    mcp_features_t *f = &self->features;
    s_add_entry(&f->resources, &f->nresources, uri, name, title, description, mime, fn, ud);
}

void mcp_server_add_ui_resource(mcp_server_t *self, const char *uri, const char *name, const char *title,
                                const char *description, const char *mime, mcp_resource_fn *fn, void *ud)
{
    mcp_features_t *f = &self->features;
    s_add_entry(&f->ui, &f->nui, uri, name, title, description, mime, fn, ud);
}

void mcp_server_add_resource_template(mcp_server_t *self, const char *uri_template, const char *name,
                                      const char *title, const char *description, const char *mime,
                                      mcp_resource_fn *fn, void *ud)
{
    mcp_features_t *f = &self->features;
    s_add_entry(&f->templates, &f->ntemplates, uri_template, name, title, description, mime, fn, ud);
}

void mcp_server_set_resource_provider(mcp_server_t *self, mcp_resource_list_fn *list, mcp_resource_read_fn *read,
                                      void *ud)
{
    self->features.provider_list = list;
    self->features.provider_read = read;
    self->features.provider_ud = ud;
}

void mcp_server_add_prompt(mcp_server_t *self, const char *name, const char *title, const char *description,
                           const char *args_json, mcp_prompt_fn *fn, void *ud)
{
    mcp_features_t *f = &self->features;
    json_object *args = args_json ? json_tokener_parse(args_json) : json_object_new_array();
    if (!args || !json_object_is_type(args, json_type_array)) {
        log_error("prompt %s: arguments are not a JSON array", name);
        abort(); /* a programming error in the caller */
    }
    f->prompts = xrealloc(f->prompts, (f->nprompts + 1) * sizeof *f->prompts);
    mcp_prompt_entry_t *p = &f->prompts[f->nprompts++];
    p->name = xstrdup(name);
    p->title = xstrdup(title);
    p->description = xstrdup(description);
    p->arguments = args;
    p->fn = fn;
    p->ud = ud;
}

void mcp_server_set_completion(mcp_server_t *self, mcp_complete_fn *fn, void *ud)
{
    self->features.complete = fn;
    self->features.complete_ud = ud;
}

void mcp_server_enable_subscriptions(mcp_server_t *self)
{
    self->features.subscriptions = true;
}

static bool s_subscribed(const mcp_session_t *s, const char *uri)
{
    for (size_t i = 0; i < s->nsubscriptions; i++)
        if (strcmp(s->subscriptions[i], uri) == 0)
            return true;
    return false;
}

void mcp_server_resource_updated(mcp_server_t *self, const char *uri)
{
    for (mcp_session_t *s = self->sessions; s; s = s->next_in_server) {
        if (!s_subscribed(s, uri))
            continue;
        json_object *p = json_object_new_object();
        json_object_object_add(p, "uri", json_object_new_string(uri));
        mcp_session_notify(s, "notifications/resources/updated", p);
    }
}

void mcp_server_each_subscriber(mcp_server_t *self, const char *uri, mcp_session_fn *fn, void *ud)
{
    for (mcp_session_t *s = self->sessions; s; s = s->next_in_server)
        if (s_subscribed(s, uri))
            fn(s, ud);
}

/* ------------------------------------------------------------ helpers */

static const char *s_param_str(json_object *params, const char *key)
{
    json_object *v = NULL;
    if (params && json_object_object_get_ex(params, key, &v) && json_object_is_type(v, json_type_string))
        return json_object_get_string(v);
    return NULL;
}

/* Pages an array: returns a result object with `key` and nextCursor, or NULL
 * (and sends -32602) for a bad cursor. Consumes arr. */
static json_object *s_page(mcp_call_t *call, json_object *params, const char *key, json_object *arr)
{
    size_t start = 0;
    json_object *cur = NULL;
    if (params && json_object_object_get_ex(params, "cursor", &cur) && cur &&
        !json_object_is_type(cur, json_type_null)) {
        /* Cursors are the offsets we hand out: plain decimal digits. strtoul
         * alone would take "-1" (as ULONG_MAX, and start + LIST_PAGE would
         * wrap), " 5" or "+5"; nine digits keep the sum far from overflow. */
        const char *c = json_object_is_type(cur, json_type_string) ? json_object_get_string(cur) : NULL;
        size_t len = c ? strlen(c) : 0;
        if (!c || len == 0 || len > 9 || strspn(c, "0123456789") != len) {
            json_object_put(arr);
            mcp_call_error(call, JSONRPC_INVALID_PARAMS, "invalid cursor");
            return NULL;
        }
        start = (size_t)strtoul(c, NULL, 10);
    }
    size_t n = json_object_array_length(arr);
    json_object *page = json_object_new_array();
    for (size_t i = start; i < n && i < start + LIST_PAGE; i++)
        json_object_array_add(page, json_object_get(json_object_array_get_idx(arr, i)));
    json_object *res = json_object_new_object();
    json_object_object_add(res, key, page);
    if (start + LIST_PAGE < n) {
        char next[32];
        snprintf(next, sizeof next, "%zu", start + LIST_PAGE);
        json_object_object_add(res, "nextCursor", json_object_new_string(next));
    }
    json_object_put(arr);
    return res;
}

static json_object *s_describe(const mcp_resource_entry_t *e, const char *uri_key)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, uri_key, json_object_new_string(e->uri));
    json_object_object_add(o, "name", json_object_new_string(e->name ? e->name : e->uri));
    if (e->title)
        json_object_object_add(o, "title", json_object_new_string(e->title));
    if (e->description)
        json_object_object_add(o, "description", json_object_new_string(e->description));
    if (e->mime)
        json_object_object_add(o, "mimeType", json_object_new_string(e->mime));
    return o;
}

/* RFC 6570 level-1 matching: literal text must match, each {var} matches a
 * non-empty run without '/'. Fills vars; returns false on no match. */
static bool s_template_match(const char *tmpl, const char *uri, json_object *vars)
{
    const char *t = tmpl, *u = uri;
    while (*t) {
        if (*t == '{') {
            const char *close = strchr(t, '}');
            if (!close)
                return false;
            char *name = xstrndup(t + 1, (size_t)(close - t - 1));
            const char *stop = close + 1;
            const char *end = u;
            while (*end && *end != '/' && (*stop == '\0' || *end != *stop))
                end++;
            if (end == u) {
                free(name);
                return false;
            }
            json_object_object_add(vars, name, json_object_new_string_len(u, (int)(end - u)));
            free(name);
            u = end;
            t = stop;
            continue;
        }
        if (*t != *u)
            return false;
        t++;
        u++;
    }
    return *u == '\0';
}

/* ------------------------------------------------------------ methods */

static void s_resources_list(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_features_t *f = ud;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < f->nresources; i++)
        json_object_array_add(arr, s_describe(&f->resources[i], "uri"));
    /* Before the assets, which come and go: a page of the list keeps them. */
    for (size_t i = 0; i < f->nui && mcp_call_client_ui(call); i++)
        json_object_array_add(arr, s_describe(&f->ui[i], "uri"));
    if (f->provider_list)
        f->provider_list(arr, f->provider_ud);
    json_object *res = s_page(call, params, "resources", arr);
    if (res)
        mcp_call_reply(call, res);
}

static void s_templates_list(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_features_t *f = ud;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < f->ntemplates; i++)
        json_object_array_add(arr, s_describe(&f->templates[i], "uriTemplate"));
    json_object *res = s_page(call, params, "resourceTemplates", arr);
    if (res)
        mcp_call_reply(call, res);
}

static void s_resources_read(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_features_t *f = ud;
    const char *uri = s_param_str(params, "uri");
    if (!uri) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "resources/read: params.uri (string) is required");
        return;
    }
    for (size_t i = 0; i < f->nresources; i++) {
        if (strcmp(f->resources[i].uri, uri) == 0) {
            f->resources[i].fn(call, uri, NULL, f->resources[i].ud);
            return;
        }
    }
    for (size_t i = 0; i < f->nui && mcp_call_client_ui(call); i++) {
        if (strcmp(f->ui[i].uri, uri) == 0) {
            f->ui[i].fn(call, uri, NULL, f->ui[i].ud);
            return;
        }
    }
    for (size_t i = 0; i < f->ntemplates; i++) {
        json_object *vars = json_object_new_object();
        if (s_template_match(f->templates[i].uri, uri, vars)) {
            f->templates[i].fn(call, uri, vars, f->templates[i].ud);
            json_object_put(vars);
            return;
        }
        json_object_put(vars);
    }
    if (f->provider_read && f->provider_read(call, uri, f->provider_ud))
        return;
    char msg[300];
    snprintf(msg, sizeof msg, "Resource not found: %.200s", uri);
    if (mcp_call_modern(call)) {
        /* 2026-07-28 (SEP-2164): Invalid params, with the URI in data. */
        json_object *data = json_object_new_object();
        json_object_object_add(data, "uri", json_object_new_string(uri));
        mcp_call_error_data(call, JSONRPC_INVALID_PARAMS, msg, data);
        return;
    }
    mcp_call_error(call, MCP_ERR_RESOURCE_NOT_FOUND, msg);
}

static void s_subscribe(mcp_call_t *call, json_object *params, mcp_features_t *f, bool on)
{
    mcp_session_t *s = mcp_call_session(call);
    const char *uri = s_param_str(params, "uri");
    if (!f->subscriptions) {
        mcp_call_error(call, JSONRPC_METHOD_NOT_FOUND, "Resource subscriptions are not supported");
        return;
    }
    if (!uri) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "params.uri (string) is required");
        return;
    }
    if (on && strlen(uri) > MAX_SUBSCRIPTION_URI) {
        char msg[128];
        snprintf(msg, sizeof msg, "params.uri is longer than %d bytes: no resource here has such a URI",
                 MAX_SUBSCRIPTION_URI);
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, msg);
        return;
    }
    if (on && !s_subscribed(s, uri)) {
        if (s->nsubscriptions >= MAX_SUBSCRIPTIONS) {
            char msg[160];
            snprintf(msg, sizeof msg, "too many subscriptions in this session (at most %d): unsubscribe from one "
                                      "first", MAX_SUBSCRIPTIONS);
            mcp_call_error(call, JSONRPC_INVALID_PARAMS, msg);
            return;
        }
        s->subscriptions = xrealloc(s->subscriptions, (s->nsubscriptions + 1) * sizeof *s->subscriptions);
        s->subscriptions[s->nsubscriptions++] = xstrdup(uri);
    } else if (!on) {
        for (size_t i = 0; i < s->nsubscriptions; i++) {
            if (strcmp(s->subscriptions[i], uri) == 0) {
                free(s->subscriptions[i]);
                s->subscriptions[i] = s->subscriptions[--s->nsubscriptions];
                break;
            }
        }
    }
    mcp_call_reply(call, json_object_new_object());
}

static mcp_prompt_entry_t *s_find_prompt(mcp_features_t *f, const char *name)
{
    for (size_t i = 0; name && i < f->nprompts; i++)
        if (strcmp(f->prompts[i].name, name) == 0)
            return &f->prompts[i];
    return NULL;
}

static void s_prompts_list(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_features_t *f = ud;
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < f->nprompts; i++) {
        mcp_prompt_entry_t *p = &f->prompts[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(p->name));
        if (p->title)
            json_object_object_add(o, "title", json_object_new_string(p->title));
        json_object_object_add(o, "description", json_object_new_string(p->description ? p->description : ""));
        json_object_object_add(o, "arguments", json_object_get(p->arguments));
        json_object_array_add(arr, o);
    }
    json_object *res = s_page(call, params, "prompts", arr);
    if (res)
        mcp_call_reply(call, res);
}

static void s_prompts_get(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_prompt_entry_t *p = s_find_prompt(ud, s_param_str(params, "name"));
    if (!p) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "Unknown prompt");
        return;
    }
    json_object *args = NULL;
    if (params)
        json_object_object_get_ex(params, "arguments", &args);
    if (args && json_object_is_type(args, json_type_null))
        args = NULL;
    if (args && !json_object_is_type(args, json_type_object)) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "prompts/get: arguments must be an object");
        return;
    }
    for (size_t i = 0; i < json_object_array_length(p->arguments); i++) {
        json_object *a = json_object_array_get_idx(p->arguments, i), *req = NULL, *v = NULL;
        const char *name = s_param_str(a, "name");
        bool required = json_object_object_get_ex(a, "required", &req) && json_object_get_boolean(req);
        bool present = args && name && json_object_object_get_ex(args, name, &v) && json_object_is_type(v, json_type_string);
        if (required && !present) {
            char msg[200];
            snprintf(msg, sizeof msg, "prompts/get: missing required argument '%.100s'", name ? name : "?");
            mcp_call_error(call, JSONRPC_INVALID_PARAMS, msg);
            return;
        }
    }
    json_object *owned = args ? json_object_get(args) : json_object_new_object();
    p->fn(call, owned, p->ud);
    json_object_put(owned);
}

static void s_complete(mcp_call_t *call, json_object *params, void *ud)
{
    mcp_features_t *f = ud;
    if (!f->complete) {
        mcp_call_error(call, JSONRPC_METHOD_NOT_FOUND, "Completion is not supported");
        return;
    }
    json_object *ref = NULL, *arg = NULL, *ctx = NULL;
    if (!params || !json_object_object_get_ex(params, "ref", &ref) ||
        !json_object_object_get_ex(params, "argument", &arg) || !json_object_is_type(arg, json_type_object)) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "completion/complete: ref and argument are required");
        return;
    }
    const char *type = s_param_str(ref, "type");
    bool known = false;
    if (type && strcmp(type, "ref/prompt") == 0) {
        known = s_find_prompt(f, s_param_str(ref, "name")) != NULL;
    } else if (type && strcmp(type, "ref/resource") == 0) {
        const char *uri = s_param_str(ref, "uri");
        for (size_t i = 0; uri && i < f->ntemplates && !known; i++)
            known = strcmp(f->templates[i].uri, uri) == 0;
        for (size_t i = 0; uri && i < f->nresources && !known; i++)
            known = strcmp(f->resources[i].uri, uri) == 0;
    }
    if (!known) {
        mcp_call_error(call, JSONRPC_INVALID_PARAMS, "completion/complete: unknown ref");
        return;
    }
    const char *name = s_param_str(arg, "name");
    const char *value = s_param_str(arg, "value");
    json_object_object_get_ex(params, "context", &ctx);
    f->complete(call, ref, name ? name : "", value ? value : "", ctx, f->complete_ud);
}

static void s_subscribe_on(mcp_call_t *call, json_object *params, void *ud)
{
    s_subscribe(call, params, ud, true);
}

static void s_subscribe_off(mcp_call_t *call, json_object *params, void *ud)
{
    s_subscribe(call, params, ud, false);
}

void mcp_features_register(mcp_server_t *srv, mcp_features_t *f)
{
    /* Always answered, with empty lists when nothing is registered (mcp2cli
     * asks for them whatever the capabilities say). */
    static const struct {
        const char *method;
        mcp_method_fn *fn;
    } methods[] = {
        {"resources/list", s_resources_list},       {"resources/templates/list", s_templates_list},
        {"resources/read", s_resources_read},       {"resources/subscribe", s_subscribe_on},
        {"resources/unsubscribe", s_subscribe_off}, {"prompts/list", s_prompts_list},
        {"prompts/get", s_prompts_get},             {"completion/complete", s_complete},
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        mcp_server_add_method(srv, methods[i].method, methods[i].fn, f);
}
