/* mgr_client: MCP over Streamable HTTP to a runtime's server (see
 * mgr_client.h). */
#include "mgr_client.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "gw_dl.h"
#include "mem.h"

struct mgr_client {
    char *url;
    char *session;        /* Mcp-Session-Id, or NULL */
    long next_id;
};

/* One POST in flight. */
typedef struct {
    CURL *easy;
    struct curl_slist *headers;
    long id;              /* the JSON-RPC id answered, 0 for a notification */
    bool sse;             /* the answer is text/event-stream */
    buf_t body;           /* JSON answer, or the SSE text not yet split into events */
    json_object *response;/* the JSON-RPC response with our id, once seen */
    mgr_note_fn *on_note;
    void *ud;
    bool too_big;
    mgr_client_t *client;
} s_req_t;

static void s_event(s_req_t *r, const char *ev, size_t n)
{
    /* The data lines of one SSE event, joined. */
    buf_t data;
    buf_init(&data, 0);
    for (size_t i = 0; i < n;) {
        const char *e = memchr(ev + i, '\n', n - i);
        size_t raw = e ? (size_t)(e - (ev + i)) : n - i, ln = raw;
        if (ln && ev[i + ln - 1] == '\r')
            ln--;
        if (ln >= 5 && memcmp(ev + i, "data:", 5) == 0) {
            size_t off = ln > 5 && ev[i + 5] == ' ' ? 6 : 5;
            if (data.len)
                buf_putc(&data, '\n');
            buf_append(&data, ev + i + off, ln - off);
        }
        i += raw + 1;
    }
    json_object *m = data.len ? json_tokener_parse(buf_str(&data)) : NULL;
    buf_free(&data);
    if (!m)
        return;
    json_object *method = NULL, *id = NULL, *params = NULL;
    if (json_object_object_get_ex(m, "method", &method) && json_object_is_type(method, json_type_string)) {
        if (!json_object_object_get_ex(m, "id", NULL) && r->on_note) {
            json_object_object_get_ex(m, "params", &params);
            r->on_note(r->ud, json_object_get_string(method), params);
        }
        json_object_put(m);
        return;
    }
    if (json_object_object_get_ex(m, "id", &id) && json_object_get_int64(id) == r->id && !r->response) {
        r->response = m;
        return;
    }
    json_object_put(m);
}

/* Splits off the complete events in r->body (a blank line ends one). */
static void s_drain(s_req_t *r)
{
    for (;;) {
        /* Bounded by the length, not a NUL: a NUL byte in the stream must
         * not hide the events after it. */
        const char *d = buf_str(&r->body);
        const char *e1 = memmem(d, r->body.len, "\n\n", 2), *e2 = memmem(d, r->body.len, "\r\n\r\n", 4);
        const char *e = e1 && (!e2 || e1 < e2) ? e1 : e2;
        if (!e)
            return;
        size_t n = (size_t)(e - d), skip = e == e1 ? 2 : 4;
        s_event(r, d, n);
        buf_consume(&r->body, n + skip);
    }
}

static size_t s_on_body(char *p, size_t size, size_t n, void *ud)
{
    s_req_t *r = ud;
    size_t len = size * n;
    if (r->body.len + len > MGR_CLIENT_MAX) {
        r->too_big = true;
        return 0;
    }
    buf_append(&r->body, p, len);
    if (r->sse)
        s_drain(r);
    return len;
}

int mgr_client_header_sse(const char *line, size_t len)
{
    if (len <= 13 || strncasecmp(line, "content-type:", 13) != 0)
        return -1;
    return memmem(line + 13, len - 13, "text/event-stream", 17) != NULL;
}

/* p is one header line of size * n bytes, not NUL-terminated (curl's
 * CURLOPT_HEADERFUNCTION contract): every read is bounded by that length. */
static size_t s_on_header(char *p, size_t size, size_t n, void *ud)
{
    s_req_t *r = ud;
    size_t len = size * n;
    if (len > 15 && strncasecmp(p, "mcp-session-id:", 15) == 0 && r->client) {
        const char *v = p + 15;
        size_t vl = len - 15;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl && vl < 256) {
            free(r->client->session);
            r->client->session = xstrndup(v, vl);
        }
    } else {
        int sse = mgr_client_header_sse(p, len);
        if (sse >= 0)
            r->sse = sse;
    }
    return len;
}

static s_req_t *s_req_new(mgr_client_t *c, const char *method, const char *body, long id, int timeout_ms)
{
    s_req_t *r = xcalloc(1, sizeof *r);
    r->client = c;
    r->id = id;
    buf_init(&r->body, 0);
    r->easy = gw_curl.easy_init();
    if (!r->easy) {
        free(r);
        return NULL;
    }
    r->headers = gw_curl.slist_append(NULL, "Content-Type: application/json");
    r->headers = gw_curl.slist_append(r->headers, "Accept: application/json, text/event-stream");
    if (c->session) {
        char *h = xasprintf("Mcp-Session-Id: %s", c->session);
        r->headers = gw_curl.slist_append(r->headers, h);
        free(h);
    }
    CURL *e = r->easy;
    gw_curl.easy_setopt(e, CURLOPT_URL, c->url);
    gw_curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        gw_curl.easy_setopt(e, CURLOPT_POSTFIELDS, body);
        gw_curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    gw_curl.easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    gw_curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, s_on_body);
    gw_curl.easy_setopt(e, CURLOPT_WRITEDATA, r);
    gw_curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, s_on_header);
    gw_curl.easy_setopt(e, CURLOPT_HEADERDATA, r);
    gw_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    gw_curl.easy_setopt(e, CURLOPT_NOPROXY, "*");
    gw_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    if (timeout_ms > 0)
        gw_curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    return r;
}

static void s_req_free(s_req_t *r)
{
    if (!r)
        return;
    gw_curl.easy_cleanup(r->easy);
    gw_curl.slist_free_all(r->headers);
    buf_free(&r->body);
    json_object_put(r->response);
    free(r);
}

/* The JSON-RPC message text for method/params with id (0: a notification).
 * Caller owns it. */
static char *s_message(const char *method, json_object *params, long id)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
    if (id)
        json_object_object_add(m, "id", json_object_new_int64(id));
    json_object_object_add(m, "method", json_object_new_string(method));
    if (params)
        json_object_object_add(m, "params", json_object_get(params));
    char *s = xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(m);
    return s;
}

/* Runs req (and, when interrupt is set during it, one ctl cancel beside
 * it) to its end. Returns 0 with the HTTP status in *status, or -1 with
 * err. */
static int s_perform(mgr_client_t *c, s_req_t *req, volatile sig_atomic_t *interrupt, long *status, char *err,
                     size_t errlen)
{
    CURLM *m = gw_curl.multi_init();
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gw_curl.multi_add_handle(m, req->easy);
    s_req_t *cancel = NULL;
    int rc = -1;
    bool done = false;
    while (!done) {
        int running = 0;
        gw_curl.multi_perform(m, &running);
        CURLMsg *msg;
        int left = 0;
        while ((msg = gw_curl.multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            if (msg->easy_handle == req->easy) {
                done = true;
                if (msg->data.result != CURLE_OK) {
                    snprintf(err, errlen, "%s", req->too_big ? "the answer is too large"
                                                             : gw_curl.easy_strerror(msg->data.result));
                } else {
                    gw_curl.easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, status);
                    rc = 0;
                }
            }
        }
        if (done)
            break;
        if (interrupt && *interrupt && !cancel) {
            json_object *params = json_object_new_object(), *args = json_object_new_object();
            json_object_object_add(args, "op", json_object_new_string("cancel"));
            json_object_object_add(params, "name", json_object_new_string("ctl"));
            json_object_object_add(params, "arguments", args);
            char *body = s_message("tools/call", params, ++c->next_id);
            json_object_put(params);
            cancel = s_req_new(c, "POST", body, c->next_id, 10000);
            if (cancel) {
                /* POSTFIELDS is not copied: keep body alive with the request. */
                gw_curl.easy_setopt(cancel->easy, CURLOPT_COPYPOSTFIELDS, body);
                gw_curl.multi_add_handle(m, cancel->easy);
            }
            free(body);
        }
        gw_curl.multi_poll(m, NULL, 0, 100, NULL);
    }
    gw_curl.multi_remove_handle(m, req->easy);
    if (cancel) {
        gw_curl.multi_remove_handle(m, cancel->easy);
        s_req_free(cancel);
    }
    gw_curl.multi_cleanup(m);
    return rc;
}

/* A request and its JSON-RPC result (caller owns), or NULL with err. */
static json_object *s_rpc(mgr_client_t *c, const char *method, json_object *params, int timeout_ms,
                          mgr_note_fn *on_note, void *ud, volatile sig_atomic_t *interrupt, char *err, size_t errlen)
{
    long id = ++c->next_id;
    char *body = s_message(method, params, id);
    s_req_t *r = s_req_new(c, "POST", body, id, timeout_ms);
    if (!r) {
        free(body);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->on_note = on_note;
    r->ud = ud;
    long status = 0;
    json_object *result = NULL;
    if (s_perform(c, r, interrupt, &status, err, errlen) == 0) {
        if (!r->sse && r->body.len)
            r->response = json_tokener_parse(buf_str(&r->body));
        else if (r->sse && r->body.len)
            s_event(r, r->body.data, r->body.len); /* a last event without its blank line */
        json_object *res = NULL, *e = NULL, *msg = NULL;
        if (status < 200 || status >= 300) {
            snprintf(err, errlen, "HTTP %ld from %s: %.200s", status, c->url, r->sse ? "" : buf_str(&r->body));
        } else if (!r->response) {
            snprintf(err, errlen, "no answer to %s from %s", method, c->url);
        } else if (json_object_object_get_ex(r->response, "error", &e)) {
            snprintf(err, errlen, "%s", json_object_object_get_ex(e, "message", &msg) ? json_object_get_string(msg)
                                                                                      : "JSON-RPC error");
        } else if (json_object_object_get_ex(r->response, "result", &res)) {
            result = json_object_get(res);
        } else {
            snprintf(err, errlen, "an answer to %s without a result", method);
        }
    }
    s_req_free(r);
    free(body);
    return result;
}

mgr_client_t *mgr_client_new(long port, const char *client_name, int timeout_ms, char *err, size_t errlen)
{
    if (gw_dl_load_curl("rat (the runtime manager)", err, errlen) < 0)
        return NULL;
    mgr_client_t *c = xcalloc(1, sizeof *c);
    c->url = xasprintf("http://127.0.0.1:%ld/mcp", port);
    json_object *p = json_object_new_object(), *info = json_object_new_object();
    json_object_object_add(p, "protocolVersion", json_object_new_string("2025-03-26"));
    json_object_object_add(p, "capabilities", json_object_new_object());
    json_object_object_add(info, "name", json_object_new_string(client_name));
    json_object_object_add(info, "version", json_object_new_string(RAT_VERSION));
    json_object_object_add(p, "clientInfo", info);
    json_object *r = s_rpc(c, "initialize", p, timeout_ms, NULL, NULL, NULL, err, errlen);
    json_object_put(p);
    if (!r) {
        mgr_client_destroy(&c);
        return NULL;
    }
    json_object_put(r);
    char *note = s_message("notifications/initialized", NULL, 0);
    s_req_t *n = s_req_new(c, "POST", note, 0, timeout_ms);
    long status = 0;
    char nerr[256];
    if (n)
        s_perform(c, n, NULL, &status, nerr, sizeof nerr);
    s_req_free(n);
    free(note);
    return c;
}

void mgr_client_destroy(mgr_client_t **self_p)
{
    mgr_client_t *c = *self_p;
    if (!c)
        return;
    if (c->session) {
        s_req_t *r = s_req_new(c, "DELETE", NULL, 0, 2000);
        long status = 0;
        char err[256];
        if (r)
            s_perform(c, r, NULL, &status, err, sizeof err);
        s_req_free(r);
    }
    free(c->url);
    free(c->session);
    free(c);
    *self_p = NULL;
}

json_object *mgr_client_call(mgr_client_t *self, const char *tool, json_object *args, int timeout_ms,
                             mgr_note_fn *on_note, void *ud, volatile sig_atomic_t *interrupt, char *err,
                             size_t errlen)
{
    json_object *p = json_object_new_object();
    json_object_object_add(p, "name", json_object_new_string(tool));
    json_object_object_add(p, "arguments", args ? json_object_get(args) : json_object_new_object());
    json_object *r = s_rpc(self, "tools/call", p, timeout_ms, on_note, ud, interrupt, err, errlen);
    json_object_put(p);
    return r;
}

char *mgr_client_text(json_object *result)
{
    buf_t b;
    buf_init(&b, 0);
    json_object *content = NULL;
    if (json_object_object_get_ex(result, "content", &content) && json_object_is_type(content, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(content); i++) {
            json_object *it = json_object_array_get_idx(content, i), *t = NULL, *tx = NULL;
            if (json_object_object_get_ex(it, "type", &t) && !strcmp(json_object_get_string(t), "text") &&
                json_object_object_get_ex(it, "text", &tx)) {
                if (b.len)
                    buf_putc(&b, '\n');
                buf_puts(&b, json_object_get_string(tx));
            }
        }
    }
    return buf_take(&b);
}

int mgr_client_is_error(json_object *result)
{
    json_object *e = NULL;
    return json_object_object_get_ex(result, "isError", &e) && json_object_get_boolean(e);
}
