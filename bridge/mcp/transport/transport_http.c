/* transport_http: MCP over Streamable HTTP with libmicrohttpd, in the loop:
 * the daemon, request routing (POST, GET, DELETE, extra routes) and the
 * public API. The pieces, sharing transport_http_internal.h:
 *   transport_http_guard.c    who may talk to us: the peer's user, Host, Origin, bearer token
 *   transport_http_conn.c     what is known of a connection (its peer's user, a %00 in a request)
 *   transport_http_tls.c      what HTTPS accepts; plain HTTP sent to it
 *   transport_http_modern.c   a 2026-07-28 sessionless POST, its headers checked against its body
 *   transport_http_session.c  sessions, and the SSE streams that carry their messages */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

static void s_cors(transport_http_t *self, struct MHD_Connection *c, struct MHD_Response *r);
static void s_body_drop(transport_http_t *self, http_req_t *req);
static bool s_accepts(const char *accept, const char *type);
static enum MHD_Result s_handle_post(transport_http_t *self, struct MHD_Connection *c, http_req_t *req);
static enum MHD_Result s_handle_get_mcp(transport_http_t *self, struct MHD_Connection *c, http_req_t *req);
static enum MHD_Result s_handle_delete(transport_http_t *self, struct MHD_Connection *c);
static enum MHD_Result s_handle_route(transport_http_t *self, struct MHD_Connection *c, const char *url);
static enum MHD_Result s_first_call(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                    const char *method, http_req_t *req);
static enum MHD_Result s_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload_data, size_t *upload_data_size,
                                void **con_cls);
static void s_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
static void s_on_mhd_timer(loop_t *loop, void *ud);
static void s_run(transport_http_t *self);
static void s_on_epoll(loop_t *loop, void *ud, int revents);
static void s_run_soon(loop_t *loop, void *ud);
static void s_mhd_log(void *cls, const char *fmt, va_list ap);
static int s_bind_addr(const char *host, int port, struct sockaddr_storage *ss, bool *loopback, char *err,
                       size_t errlen);

const char *http_header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static void s_cors(transport_http_t *self, struct MHD_Connection *c, struct MHD_Response *r)
{
    const char *origin = http_header(c, "Origin");
    if (!origin || !http_origin_ok(self, origin))
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "mcp-session-id, mcp-protocol-version");
}

enum MHD_Result http_queue(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                           struct MHD_Response *r)
{
    s_cors(self, c, r);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result http_send_body(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                               const char *ctype, const char *body, size_t len, const char *session_id)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    return http_queue(self, c, status, r);
}

/* An HTTP error with a JSON-RPC error body answering the request whose id
 * is `id` (NULL: id null). */
enum MHD_Result http_error_id(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                              json_object *id, int code, const char *msg)
{
    char *body = jsonrpc_error(id, code, msg, NULL);
    enum MHD_Result rc = http_send_body(self, c, status, "application/json", body, strlen(body), NULL);
    free(body);
    return rc;
}

/* A transport error (headers, session, size): id null, like the SDK server. */
enum MHD_Result http_error(transport_http_t *self, struct MHD_Connection *c, unsigned status, int code,
                           const char *msg)
{
    return http_error_id(self, c, status, NULL, code, msg);
}

/* Frees a request's body and gives its bytes back to the shared budget. */
static void s_body_drop(transport_http_t *self, http_req_t *req)
{
    self->body_bytes -= req->body.len;
    buf_free(&req->body);
}


static bool s_accepts(const char *accept, const char *type)
{
    if (!accept)
        return false;
    return strstr(accept, type) || strstr(accept, "*/*");
}

static enum MHD_Result s_handle_post(transport_http_t *self, struct MHD_Connection *c, http_req_t *req)
{
    const char *sid = http_header(c, "Mcp-Session-Id");
    if (req->too_big)
        return http_error(self, c, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, "Request body is too large");
    if (req->busy) {
        char *body = jsonrpc_error(NULL, -32000, "Server busy: too much request data is arriving at once; retry", NULL);
        struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
        free(body);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        return http_queue(self, c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    }
    jsonrpc_msg_t m;
    jsonrpc_parse(buf_str(&req->body), req->body.len, &m);
    if (m.kind == JSONRPC_INVALID) {
        /* Not one JSON-RPC message: answered here, with the error it earns. */
        enum MHD_Result r = http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, m.err_code, m.err_msg);
        jsonrpc_msg_free(&m);
        return r;
    }
    /* By length too: "initialize\u0000x" names no method (mcp.c answers it
     * -32601, as over stdio), though strcmp would see "initialize". */
    bool is_init = m.kind == JSONRPC_REQUEST && m.method_len == strlen("initialize") &&
                   strcmp(m.method, "initialize") == 0;
    bool is_request = m.kind == JSONRPC_REQUEST;
    const char *method = m.method ? m.method : "";
    http_session_t *sess = NULL;
    enum MHD_Result rc;
    if (http_post_is_modern(c, &m, is_init, sid)) {
        rc = http_handle_modern_post(self, c, req, &m);
        jsonrpc_msg_free(&m);
        return rc;
    }
    const char *pv = http_header(c, "MCP-Protocol-Version");
    if (pv && !mcp_protocol_supported(pv)) { /* judged here, not at the headers (see s_first_call) */
        jsonrpc_msg_free(&m);
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: unsupported MCP-Protocol-Version");
    }
    if (!sid) {
        if (!is_init) {
            if (is_request && strcmp(method, "server/discover") == 0) {
                /* An MCP answer to a request that was read: its id, as over
                 * stdio (JSON-RPC wants null only for an unreadable id). */
                rc = http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, JSONRPC_METHOD_NOT_FOUND,
                                "Method not found: server/discover (this server speaks MCP 2025-11-25: send initialize)");
                jsonrpc_msg_free(&m);
                return rc;
            }
            jsonrpc_msg_free(&m);
            return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000,
                           "Bad Request: Mcp-Session-Id header is required (send initialize first)");
        }
        sess = http_session_new(self);
        if (!sess) {
            jsonrpc_msg_free(&m);
            return http_error(self, c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                           "Too many active sessions; end one with DELETE or try again later");
        }
        log_info("session %.8s started", sess->id);
    } else {
        sess = http_session_find(self, sid);
        if (!sess) {
            jsonrpc_msg_free(&m);
            return http_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
        }
        if (is_init) {
            /* The request and its id were read, so the error carries that id
             * (JSON-RPC 2.0: null only when the id could not be determined),
             * as the same initialize gets over stdio. */
            rc = http_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, JSONRPC_INVALID_REQUEST,
                            "Invalid Request: this session is already initialized");
            jsonrpc_msg_free(&m);
            return rc;
        }
    }
    jsonrpc_msg_free(&m);
    sess->last_used_ms = loop_now_ms();
    if (!is_request) {
        /* Notifications and responses: accepted, nothing to answer. */
        mcp_session_handle(sess->mcp, buf_str(&req->body), req->body.len, NULL);
        return http_send_body(self, c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
    }
    http_stream_t *s = http_stream_new(self, sess, c, false);
    req->stream = s;
    mcp_session_handle(sess->mcp, buf_str(&req->body), req->body.len, s);
    if (is_init && !mcp_session_initialized(sess->mcp)) {
        /* initialize failed (bad params): do not keep a session for it. */
        rc = http_send_body(self, c, MHD_HTTP_BAD_REQUEST, "application/json", buf_str(&s->final_json),
                         s->final_json.len, NULL);
        req->stream = NULL;
        s->done = true;
        http_stream_free(s);
        http_session_end(self, sess);
        return rc;
    }
    const char *hdr_sid = is_init ? sess->id : NULL;
    if (is_init)
        memcpy(req->new_sid, sess->id, sizeof req->new_sid);
    if (s->done && !s->had_other) {
        /* Answered at once and nothing else to say: plain JSON. */
        rc = http_send_body(self, c, MHD_HTTP_OK, "application/json", buf_str(&s->final_json), s->final_json.len,
                         hdr_sid);
        req->stream = NULL;
        http_stream_free(s);
        return rc;
    }
    return http_attach_sse(self, s, hdr_sid);
}

static enum MHD_Result s_handle_get_mcp(transport_http_t *self, struct MHD_Connection *c, http_req_t *req)
{
    if (!s_accepts(http_header(c, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
        return http_error(self, c, MHD_HTTP_NOT_ACCEPTABLE, -32000, "Not Acceptable: GET needs Accept: text/event-stream");
    const char *sid = http_header(c, "Mcp-Session-Id");
    if (!sid)
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: Mcp-Session-Id header is required");
    http_session_t *sess = http_session_find(self, sid);
    if (!sess)
        return http_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
    if (sess->get)
        return http_error(self, c, MHD_HTTP_CONFLICT, -32000, "Conflict: this session already has a GET stream");
    sess->last_used_ms = loop_now_ms();
    http_stream_t *s = http_stream_new(self, sess, c, true);
    sess->get = s;
    req->stream = s;
    enum MHD_Result rc = http_attach_sse(self, s, NULL);
    http_session_flush_backlog(sess);
    return rc;
}

static enum MHD_Result s_handle_delete(transport_http_t *self, struct MHD_Connection *c)
{
    const char *sid = http_header(c, "Mcp-Session-Id");
    if (!sid)
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: Mcp-Session-Id header is required");
    http_session_t *sess = http_session_find(self, sid);
    if (!sess)
        return http_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
    http_session_end(self, sess);
    return http_send_body(self, c, MHD_HTTP_OK, NULL, "", 0, NULL);
}

/* Sends what a route or handler answered (rep's body or fd is handed over). */
static enum MHD_Result s_send_reply(transport_http_t *self, struct MHD_Connection *c, http_reply_t *rep)
{
    struct MHD_Response *resp;
    if (rep->fd >= 0) {
        /* MHD owns (and closes) the fd only once the response exists. */
        resp = MHD_create_response_from_fd(rep->fd_size, rep->fd);
        if (!resp)
            close(rep->fd);
        free(rep->body);
    } else if (rep->body) {
        /* Handed over, not copied: a file of the contents API may be tens
         * of MiB. MHD frees it with free(). */
        resp = MHD_create_response_from_buffer(rep->len, rep->body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(rep->body);
    } else {
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    rep->body = NULL;
    if (!resp)
        return MHD_NO;
    if (rep->content_type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (rep->sandbox)
        MHD_add_response_header(resp, "Content-Security-Policy", "sandbox");
    else if (rep->csp)
        MHD_add_response_header(resp, "Content-Security-Policy", rep->csp);
    return http_queue(self, c, (unsigned)rep->status, resp);
}

/* Whether a route or handler left the reply as it came: "not mine". A
 * route that left the reply alone does not know the path (/health under
 * /healthz): it goes on, in the end to the JSON-RPC 404 of any unknown
 * path. That reply used to go out as it stood, an empty body labelled
 * application/json, which clients fail to parse. */
static bool s_untouched(const http_reply_t *rep)
{
    return rep->status == MHD_HTTP_NOT_FOUND && !rep->body && rep->fd < 0;
}

static enum MHD_Result s_handle_route(transport_http_t *self, struct MHD_Connection *c, const char *url)
{
    for (int i = 0; i < self->nroutes; i++) {
        http_route_t *r = &self->routes[i];
        if (strncmp(url, r->prefix, strlen(r->prefix)) != 0)
            continue;
        http_reply_t rep = {.status = MHD_HTTP_NOT_FOUND, .content_type = "application/json", .fd = -1};
        r->fn(r->ud, url, &rep);
        if (s_untouched(&rep))
            continue;
        return s_send_reply(self, c, &rep);
    }
    return http_error(self, c, MHD_HTTP_NOT_FOUND, -32000, "Not found");
}

/* The handler whose prefix url starts with, or -1. */
int http_find_handler(const transport_http_t *self, const char *url)
{
    for (int i = 0; i < self->nhandlers; i++)
        if (strncmp(url, self->handlers[i].prefix, strlen(self->handlers[i].prefix)) == 0)
            return i;
    return -1;
}

/* A request under a handler's prefix: the handler answers it, or (not
 * mine) a GET goes on to the GET routes. */
static enum MHD_Result s_handle_handler(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                        const char *method, http_req_t *req)
{
    http_handler_t *h = &self->handlers[req->handler];
    http_request_t rq = {.method = method, .path = url, .body = buf_str(&req->body), .len = req->body.len,
                         .too_big = req->too_big, .conn = c};
    http_reply_t rep = {.status = MHD_HTTP_NOT_FOUND, .content_type = "application/json", .fd = -1};
    h->fn(h->ud, &rq, &rep);
    s_body_drop(self, req);
    if (!s_untouched(&rep))
        return s_send_reply(self, c, &rep);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return http_error(self, c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000, "Method not allowed");
    return s_handle_route(self, c, url);
}

static enum MHD_Result s_first_call(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                    const char *method, http_req_t *req)
{
    /* Read (and cleared) for every request, whatever answers it. */
    http_conn_t *hc = http_conn(c);
    bool nul = hc && hc->nul;
    if (hc)
        hc->nul = false;
    bool refused = false;
    enum MHD_Result rc = http_guard(self, c, url, method, &refused);
    if (refused) {
        req->answered = true;
        return rc;
    }
    if (nul) {
        req->answered = true;
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000,
                          "Bad Request: the path or query holds a NUL byte (%00), which would cut it short");
    }
    bool is_mcp = strcmp(url, "/mcp") == 0;
    if (strcmp(method, "OPTIONS") == 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        /* PUT and PATCH, If-Match and If-None-Match: the file API's saves
         * and renames (bridge/app/contents.c), for a page on an allowed
         * origin. */
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, "
                                "last-event-id, mcp-method, mcp-name, if-match, if-none-match");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        req->answered = true;
        return http_queue(self, c, MHD_HTTP_NO_CONTENT, r);
    }
    if (!is_mcp) {
        /* Routes answer on the final call; a handler's body has its own
         * bound. Too large: read and discard it, then the handler says so. */
        req->handler = http_find_handler(self, url);
        if (req->handler >= 0) {
            size_t max = self->handlers[req->handler].max_body;
            req->body.max = max ? max : self->max_body;
            const char *cl = http_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (cl && strtoull(cl, NULL, 10) > req->body.max)
                req->too_big = true;
        }
        return MHD_YES;
    }
    if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE");
        req->answered = true;
        return http_queue(self, c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    }
    /* A POST whose version is not a legacy one is judged with its body:
     * modern, or an unsupported version the modern error names (-32022). */
    const char *pv = http_header(c, "MCP-Protocol-Version");
    bool judge_later = strcmp(method, "POST") == 0 && (mcp_protocol_modern(pv) || !http_header(c, "Mcp-Session-Id"));
    if (pv && !mcp_protocol_supported(pv) && !judge_later) {
        req->answered = true;
        return http_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: unsupported MCP-Protocol-Version");
    }
    if (strcmp(method, "POST") == 0) {
        const char *ct = http_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
            req->answered = true;
            return http_error(self, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, -32000,
                           "Unsupported Media Type: Content-Type must be application/json");
        }
        const char *acc = http_header(c, MHD_HTTP_HEADER_ACCEPT);
        if (!s_accepts(acc, "application/json") || !s_accepts(acc, "text/event-stream")) {
            req->answered = true;
            return http_error(self, c, MHD_HTTP_NOT_ACCEPTABLE, -32000,
                           "Not Acceptable: Accept must list application/json and text/event-stream");
        }
        /* Too large: read and discard the body, then answer 413 (answering
         * at once would make most clients fail with EPIPE, not see 413). */
        const char *cl = http_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > self->max_body) {
            req->too_big = true;
            s_body_drop(self, req);
        }
    }
    return MHD_YES;
}

static enum MHD_Result s_access(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                const char *version, const char *upload_data, size_t *upload_data_size,
                                void **con_cls)
{
    transport_http_t *self = cls;
    http_req_t *req = *con_cls;
    if (!req) {
        req = xcalloc(1, sizeof *req);
        buf_init(&req->body, self->max_body);
        req->handler = -1;
        *con_cls = req;
        req->started = true;
        http_conn_head_done(c);
        return s_first_call(self, c, url, method, req);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        if (!req->answered && !req->too_big && !req->busy) {
            if (req->body.len + n > req->body.max) {
                req->too_big = true;
                s_body_drop(self, req);
            } else if (self->body_bytes + n > self->max_bodies) {
                /* Each body is bounded, and so are all of them together:
                 * otherwise 2048 connections each sending 4 MiB slowly
                 * would hold 8 GiB. The rest of this one is discarded as it
                 * arrives, then it gets 503. */
                req->busy = true;
                s_body_drop(self, req);
            } else if (buf_append(&req->body, upload_data, n) == 0) {
                self->body_bytes += n;
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->answered)
        return MHD_YES;
    req->answered = true;
    if (strcmp(url, "/mcp") != 0) {
        if (req->busy) {
            struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
            if (!r)
                return MHD_NO;
            MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
            return http_queue(self, c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
        }
        if (req->handler >= 0)
            return s_handle_handler(self, c, url, method, req);
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return http_error(self, c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000, "Method not allowed");
        return s_handle_route(self, c, url);
    }
    if (strcmp(method, "POST") == 0) {
        enum MHD_Result rc = s_handle_post(self, c, req);
        /* Handled: the body's budget is free again, though an SSE answer may
         * keep the connection (and req) for the whole run. */
        s_body_drop(self, req);
        return rc;
    }
    if (strcmp(method, "GET") == 0)
        return s_handle_get_mcp(self, c, req);
    return s_handle_delete(self, c);
}

static void s_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    transport_http_t *self = cls;
    http_conn_request_ended(self, c);
    http_req_t *req = *con_cls;
    if (!req)
        return;
    if (req->stream) {
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
            log_debug("stream closed early (code %d)", (int)toe);
        http_stream_free(req->stream);
    }
    if (req->new_sid[0] && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        /* The client never got the response that names its session (it
         * left, or MHD could not build the headers: a request header that
         * filled the connection's memory), so nobody can use or DELETE the
         * session: end it now rather than at its idle expiry. */
        http_session_t *sess = http_session_find(self, req->new_sid);
        if (sess) {
            log_info("session %.8s ended: its initialize response was not delivered", sess->id);
            http_session_end(self, sess);
        }
    }
    s_body_drop(self, req);
    free(req);
    *con_cls = NULL;
}



static void s_on_mhd_timer(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->mhd_timer = 0;
    s_run(self);
}

/* Lets MHD do its work, then re-arms the timer for its next timeout. */
static void s_run(transport_http_t *self)
{
    MHD_run(self->daemon);
    loop_timer_cancel(self->loop, self->mhd_timer);
    self->mhd_timer = 0;
    MHD_UNSIGNED_LONG_LONG ms = 0;
    if (MHD_get_timeout(self->daemon, &ms) == MHD_YES)
        self->mhd_timer = loop_timer(self->loop, (int64_t)(ms > 60000 ? 60000 : ms), s_on_mhd_timer, self);
}

static void s_on_epoll(loop_t *loop, void *ud, int revents)
{
    s_run(ud);
}

static void s_run_soon(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->run_timer = 0;
    s_run(self);
}

void http_schedule_run(transport_http_t *self)
{
    if (!self->run_timer)
        self->run_timer = loop_timer(self->loop, 0, s_run_soon, self);
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    transport_http_t *self = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    snprintf(self->mhd_said, sizeof self->mhd_said, "%s", line);
    log_debug("microhttpd: %s", line);
}

static void s_wipe(char **p)
{
    if (*p) {
        sodium_memzero(*p, strlen(*p));
        free(*p);
        *p = NULL;
    }
}


static int s_bind_addr(const char *host, int port, struct sockaddr_storage *ss, bool *loopback, char *err,
                       size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_flags = AI_NUMERICHOST | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    const char *h = host;
    if (strcmp(host, "localhost") == 0)
        h = "127.0.0.1";
    int rc = getaddrinfo(h, NULL, &hints, &ai);
    if (rc != 0 || !ai) {
        snprintf(err, errlen, "--host %s: not a numeric IP address (%s)", host, gai_strerror(rc));
        return -1;
    }
    memset(ss, 0, sizeof *ss);
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_port = htons((uint16_t)port);
        *loopback = (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_port = htons((uint16_t)port);
        *loopback = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
    }
    freeaddrinfo(ai);
    return 0;
}

transport_http_t *transport_http_new(loop_t *loop, mcp_server_t *server, const transport_http_opts_t *o, char *err,
                                     size_t errlen)
{
    const char *host = o->host ? o->host : "127.0.0.1";
    struct sockaddr_storage ss;
    bool loopback = false;
    if (s_bind_addr(host, o->port, &ss, &loopback, err, errlen) < 0)
        return NULL;
    if (!loopback && !o->token && !o->allow_insecure_remote) {
        snprintf(err, errlen,
                 "refusing to serve on %s without --token: anyone who can reach that address could run code as "
                 "you. Give --token SECRET (clients send Authorization: Bearer SECRET), bind 127.0.0.1, or pass "
                 "--insecure-no-token if you accept that risk",
                 host);
        return NULL;
    }
    if (mhd_dl_load(err, errlen) < 0)
        return NULL;
    bool tls = o->tls_cert_pem && o->tls_key_pem;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, errlen, "this libmicrohttpd was built without TLS support: it cannot serve HTTPS (--tls-cert, "
                              "--tls-key); install Debian's libmicrohttpd12, which has it (GnuTLS)");
        return NULL;
    }
    transport_http_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->server = server;
    self->loopback = loopback;
    self->token = o->token && *o->token ? xstrdup(o->token) : NULL;
    self->peer_check = loopback && !self->token;
    self->tls = tls;
    self->uid = geteuid();
    self->allow_origins = strv_dup(o->allow_origins);
    self->max_body = o->max_body ? o->max_body : (4u << 20);
    self->max_bodies = o->max_bodies ? o->max_bodies : (64u << 20);
    self->max_sessions = o->max_sessions ? o->max_sessions : 256;
    self->session_idle_s = o->session_idle_s > 0 ? o->session_idle_s : 3600;
    self->unsent = outq_group_new(o->max_unsent ? o->max_unsent : UNSENT_MAX_DEFAULT);
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* The TLS options go last: MHD_OPTION_END ends the list early without
     * them (an option given a NULL key would be an error). */
    if (tls) {
        flags |= MHD_USE_TLS;
        self->tls_cert = xstrdup(o->tls_cert_pem);
        self->tls_key = xstrdup(o->tls_key_pem);
    }
    unsigned max_conn = o->max_connections ? o->max_connections : 2048;
    self->head_timeout_s = o->head_timeout_s > 0 ? o->head_timeout_s : HTTP_HEAD_TIMEOUT_S;
    errno = 0;
    self->daemon = MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, s_access, self,
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, max_conn,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, max_conn / HTTP_PER_IP_SHARE,
        MHD_OPTION_NOTIFY_CONNECTION, http_conn_notify, self,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)(o->connection_timeout_s > 0 ? o->connection_timeout_s : 30),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_UNESCAPE_CALLBACK, http_unescape, self,
        tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, self->tls_cert,
        MHD_OPTION_HTTPS_MEM_KEY, self->tls_key,
        MHD_OPTION_HTTPS_PRIORITIES, http_tls_priorities,
        MHD_OPTION_END);
    if (!self->daemon) {
        if (tls && self->mhd_said[0] && (strstr(self->mhd_said, "certificate") || strstr(self->mhd_said, "key") ||
                                         strstr(self->mhd_said, "TLS") || strstr(self->mhd_said, "x509")))
            snprintf(err, errlen, "cannot serve HTTPS with this certificate and key (libmicrohttpd: %s): is the key "
                                  "the certificate's own, and are both well-formed PEM?",
                     self->mhd_said);
        else
            snprintf(err, errlen, "cannot listen on %s port %d: %s", host, o->port,
                     errno ? strerror(errno) : self->mhd_said[0] ? self->mhd_said : "libmicrohttpd refused to start");
        transport_http_destroy(&self);
        return NULL;
    }
    if (tls)
        http_tls_listen_setup(self);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : o->port;
    info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info || info->epoll_fd < 0) {
        /* The loop polls MHD's epoll descriptor; without one nothing would
         * ever be served (a libmicrohttpd built without epoll). */
        snprintf(err, errlen, "libmicrohttpd gave no epoll descriptor to wait on (is it built without epoll "
                              "support?); the HTTP transport needs one");
        transport_http_destroy(&self);
        return NULL;
    }
    self->epoll_watch = loop_watch_fd(loop, info->epoll_fd, ZMQ_POLLIN, s_on_epoll, self);
    self->keepalive_timer = loop_timer(loop, CALL_KEEPALIVE_MS, http_keepalive, self);
    self->sweep_timer = loop_timer(loop, SWEEP_MS, http_sweep, self);
    self->stateless = http_session_new_stateless(self);
    s_run(self);
    return self;
}

void transport_http_destroy(transport_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    transport_http_t *self = *self_p;
    while (self->sessions)
        http_session_end(self, self->sessions);
    if (self->stateless)
        http_session_end(self, self->stateless);
    self->stateless = NULL;
    /* MHD must not be stopped with suspended connections: end every stream
     * and let MHD finish them first. */
    for (http_stream_t *s = self->streams; s; s = s->next) {
        s->done = true;
        http_stream_wake(s);
    }
    if (self->daemon) {
        MHD_run(self->daemon);
        MHD_stop_daemon(self->daemon);
    }
    http_conn_destroy_all(self);
    while (self->streams)
        http_stream_free(self->streams);
    outq_group_destroy(&self->unsent);
    loop_unwatch(self->loop, self->epoll_watch);
    loop_timer_cancel(self->loop, self->mhd_timer);
    loop_timer_cancel(self->loop, self->keepalive_timer);
    loop_timer_cancel(self->loop, self->sweep_timer);
    loop_timer_cancel(self->loop, self->run_timer);
    s_wipe(&self->token);
    s_wipe(&self->tls_key);
    free(self->tls_cert);
    strv_free(self->allow_origins);
    free(self);
    *self_p = NULL;
}

int transport_http_port(const transport_http_t *self)
{
    return self->port;
}

bool transport_http_loopback(const transport_http_t *self)
{
    return self->loopback;
}

void transport_http_route(transport_http_t *self, const char *prefix, http_route_fn *fn, void *ud)
{
    if (self->nroutes >= MAX_ROUTES)
        return;
    http_route_t *r = &self->routes[self->nroutes++];
    snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
    r->fn = fn;
    r->ud = ud;
    r->open = false;
}

void transport_http_route_open(transport_http_t *self, const char *prefix, http_route_fn *fn, void *ud)
{
    int n = self->nroutes;
    transport_http_route(self, prefix, fn, ud);
    if (self->nroutes > n)
        self->routes[n].open = true;
}

void transport_http_handler(transport_http_t *self, const char *prefix, size_t max_body, http_handler_fn *fn,
                            void *ud)
{
    if (self->nhandlers >= MAX_ROUTES)
        return;
    http_handler_t *h = &self->handlers[self->nhandlers++];
    snprintf(h->prefix, sizeof h->prefix, "%s", prefix);
    h->fn = fn;
    h->ud = ud;
    h->max_body = max_body;
}

const char *transport_http_header(const http_request_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *transport_http_arg(const http_request_t *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

size_t transport_http_sessions(const transport_http_t *self)
{
    return self->nsessions;
}

int transport_http_adopt(transport_http_t *self, int fd)
{
    struct sockaddr_un peer = {.sun_family = AF_UNIX};
    if (MHD_add_connection(self->daemon, fd, (struct sockaddr *)&peer, sizeof peer) != MHD_YES)
        return -1; /* MHD closed fd */
    http_schedule_run(self);
    return 0;
}

size_t transport_http_connections(const transport_http_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}
