/* transport_http: MCP over Streamable HTTP with libmicrohttpd, in the loop. */
#define LOG_MODULE "http"
#include "transport_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <sodium.h>
#include <zmq.h>

#include "buf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mem.h"
#include "mhd_dl.h" /* last: it renames the MHD_* calls */

#define SESSION_ID_HEX 32                 /* 128 random bits */
#define STREAM_DROP_NOTIFY (4u << 20)     /* unsent bytes past which notifications are dropped */
#define KEEPALIVE_MS 15000                /* SSE comment on idle GET streams */
/* A POST stream whose call is in progress gets a comment after this much
 * silence: MHD notices a client that went away only when a write fails
 * (never while the connection is suspended), and the call must be released
 * promptly so that ctl wait from another session can collect its run. */
#define CALL_KEEPALIVE_MS 1000
#define SWEEP_MS 60000                    /* idle session expiry check */
#define MAX_ROUTES 8

typedef struct s_session s_session_t;
typedef struct s_stream s_stream_t;

/* An SSE stream: the answer to one POST, or a session's GET stream. */
struct s_stream {
    transport_http_t *t;
    s_session_t *sess;            /* borrowed; NULL once the session ended */
    struct MHD_Connection *conn;  /* borrowed from MHD */
    buf_t out;                    /* SSE text not yet handed to MHD */
    size_t out_off;
    buf_t final_json;             /* the response, kept in case it goes out as plain JSON */
    bool had_other;               /* something besides the response was sent */
    bool attached;                /* the SSE response is queued on the connection */
    bool suspended;               /* MHD connection suspended waiting for data */
    bool done;                    /* the response went out (POST) or the session ended */
    bool is_get;
    int64_t last_write_ms;
    unsigned long dropped;
    s_stream_t *next;             /* in transport->streams */
};

struct s_session {
    transport_http_t *t;
    char id[SESSION_ID_HEX + 1];
    mcp_session_t *mcp;           /* owned */
    s_stream_t *get;              /* the open GET stream, or NULL */
    unsigned long event_id;
    int64_t last_used_ms;
    s_session_t *next;
};

/* Per request state (MHD's con_cls). */
typedef struct {
    bool started;
    bool answered;                /* a response was queued early */
    buf_t body;                   /* counted in transport->body_bytes */
    bool too_big;
    bool busy;                    /* refused: all bodies together hit max_bodies */
    s_stream_t *stream;           /* POST that became SSE, or GET stream */
    char new_sid[SESSION_ID_HEX + 1]; /* the session this initialize created, or "" */
} s_req_t;

typedef struct {
    char prefix[64];
    http_route_fn *fn;
    void *ud;
} s_route_t;

struct transport_http {
    loop_t *loop;                 /* borrowed */
    mcp_server_t *server;         /* borrowed */
    struct MHD_Daemon *daemon;
    int epoll_watch;
    uint64_t mhd_timer, keepalive_timer, sweep_timer, run_timer;
    int port;
    bool loopback;                /* bound to a loopback address */
    char *token;                  /* owned */
    char **allow_origins;         /* owned */
    size_t max_body;
    size_t max_bodies;
    size_t body_bytes;            /* held in request bodies right now */
    unsigned max_sessions, nsessions;
    int session_idle_s;
    s_session_t *sessions;        /* owned list */
    s_stream_t *streams;          /* owned list of live streams */
    s_route_t routes[MAX_ROUTES];
    int nroutes;
};

static void s_schedule_run(transport_http_t *self);

/* ------------------------------------------------------------ helpers */

static const char *s_header(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static bool s_is_loopback_host(const char *h, size_t n)
{
    static const char *names[] = {"localhost", "127.0.0.1", "[::1]"};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(names[i]);
        if (n == l && strncasecmp(h, names[i], l) == 0)
            return true;
    }
    return false;
}

/* "host[:port]" whose host part is a loopback name. */
static bool s_host_ok(const char *host)
{
    if (!host || !*host)
        return false;
    const char *end = host + strlen(host);
    const char *colon = NULL;
    if (host[0] == '[') {
        const char *rb = strchr(host, ']');
        if (!rb)
            return false;
        colon = rb[1] == ':' ? rb + 1 : NULL;
        if (rb[1] && !colon)
            return false;
    } else {
        colon = strchr(host, ':');
    }
    size_t n = colon ? (size_t)(colon - host) : (size_t)(end - host);
    if (colon) {
        for (const char *p = colon + 1; *p; p++)
            if (*p < '0' || *p > '9')
                return false;
    }
    return s_is_loopback_host(host, n);
}

/* Origin "scheme://host[:port]" on a loopback host, or explicitly allowed. */
static bool s_origin_ok(const transport_http_t *self, const char *origin)
{
    for (size_t i = 0; self->allow_origins && self->allow_origins[i]; i++)
        if (strcmp(origin, self->allow_origins[i]) == 0)
            return true;
    const char *p = NULL;
    if (strncmp(origin, "http://", 7) == 0)
        p = origin + 7;
    else if (strncmp(origin, "https://", 8) == 0)
        p = origin + 8;
    return p && !strchr(p, '/') && s_host_ok(p);
}

/* Constant-time token check: compares hashes, so neither the content nor
 * the length of the token leaks through timing. */
static bool s_token_ok(const transport_http_t *self, struct MHD_Connection *c)
{
    if (!self->token)
        return true;
    const char *auth = s_header(c, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    unsigned char a[crypto_generichash_BYTES], b[crypto_generichash_BYTES];
    crypto_generichash(a, sizeof a, (const unsigned char *)auth + 7, strlen(auth + 7), NULL, 0);
    crypto_generichash(b, sizeof b, (const unsigned char *)self->token, strlen(self->token), NULL, 0);
    return sodium_memcmp(a, b, sizeof a) == 0;
}

static void s_cors(transport_http_t *self, struct MHD_Connection *c, struct MHD_Response *r)
{
    const char *origin = s_header(c, "Origin");
    if (!origin || !s_origin_ok(self, origin))
        return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
    MHD_add_response_header(r, "Access-Control-Expose-Headers", "mcp-session-id, mcp-protocol-version");
}

static enum MHD_Result s_queue(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                               struct MHD_Response *r)
{
    s_cors(self, c, r);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result s_send_body(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                                   const char *ctype, const char *body, size_t len, const char *session_id)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    if (ctype)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    return s_queue(self, c, status, r);
}

/* An HTTP error with a JSON-RPC error body answering the request whose id
 * is `id` (NULL: id null). */
static enum MHD_Result s_error_id(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                                  json_object *id, int code, const char *msg)
{
    char *body = jsonrpc_error(id, code, msg, NULL);
    enum MHD_Result rc = s_send_body(self, c, status, "application/json", body, strlen(body), NULL);
    free(body);
    return rc;
}

/* A transport error (headers, session, size): id null, like the SDK server. */
static enum MHD_Result s_error(transport_http_t *self, struct MHD_Connection *c, unsigned status, int code,
                              const char *msg)
{
    return s_error_id(self, c, status, NULL, code, msg);
}

/* Frees a request's body and gives its bytes back to the shared budget. */
static void s_body_drop(transport_http_t *self, s_req_t *req)
{
    self->body_bytes -= req->body.len;
    buf_free(&req->body);
}

/* ------------------------------------------------------------ streams */

static s_stream_t *s_stream_new(transport_http_t *self, s_session_t *sess, struct MHD_Connection *c, bool is_get)
{
    s_stream_t *s = xcalloc(1, sizeof *s);
    s->t = self;
    s->sess = sess;
    s->conn = c;
    s->is_get = is_get;
    s->last_write_ms = loop_now_ms();
    buf_init(&s->out, 0);
    buf_init(&s->final_json, 0);
    s->next = self->streams;
    self->streams = s;
    return s;
}

static void s_stream_free(s_stream_t *s)
{
    transport_http_t *self = s->t;
    for (s_stream_t **pp = &self->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->sess) {
        if (s->sess->get == s)
            s->sess->get = NULL;
        else if (!s->done)
            mcp_session_forget_origin(s->sess->mcp, s);
    }
    buf_free(&s->out);
    buf_free(&s->final_json);
    free(s);
}

static void s_stream_wake(s_stream_t *s)
{
    if (s->attached && s->suspended) {
        s->suspended = false;
        MHD_resume_connection(s->conn);
        s_schedule_run(s->t);
    }
}

static void s_stream_event(s_stream_t *s, const char *json, size_t len)
{
    s_session_t *sess = s->sess;
    unsigned long id = sess ? ++sess->event_id : 0;
    buf_printf(&s->out, "event: message\nid: %lu\ndata: ", id);
    buf_append(&s->out, json, len);
    buf_puts(&s->out, "\n\n");
    s->last_write_ms = loop_now_ms();
}

/* MHD pulls SSE bytes here. No data yet: suspend until s_stream_wake. */
static ssize_t s_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    s_stream_t *s = cls;
    size_t avail = s->out.len - s->out_off;
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy(buf, s->out.data + s->out_off, n);
        s->out_off += n;
        if (s->out_off == s->out.len) {
            if (s->out.cap > (256u << 10)) { /* drained after a slow reader: give it back */
                size_t keep_max = s->out.max;
                buf_free(&s->out);
                buf_init(&s->out, keep_max);
            }
            buf_reset(&s->out);
            s->out_off = 0;
        }
        return (ssize_t)n;
    }
    if (s->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    s->suspended = true;
    MHD_suspend_connection(s->conn);
    return 0;
}

static enum MHD_Result s_attach_sse(transport_http_t *self, s_stream_t *s, const char *session_id)
{
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, s_stream_read, s, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    s->attached = true;
    return s_queue(self, s->conn, MHD_HTTP_OK, r);
}

/* mcp_send_fn: the MCP layer delivers a message for a session. */
static void s_mcp_send(void *transport, void *origin, const char *json, size_t len, bool final)
{
    s_session_t *sess = transport;
    s_stream_t *s = origin ? origin : sess->get;
    if (!s || s->done) {
        log_debug("session %.8s: no stream for a server message; dropped", sess->id);
        return;
    }
    bool is_notification = !final && strncmp(json, "{\"jsonrpc\":\"2.0\",\"method\"", 25) == 0;
    if (is_notification && s->out.len - s->out_off > STREAM_DROP_NOTIFY) {
        if (s->dropped++ == 0)
            log_warn("session %.8s: client is not reading; dropping notifications", sess->id);
        return;
    }
    if (final && !s->is_get) {
        if (!s->attached)
            buf_append(&s->final_json, json, len);
        s->done = true;
    } else {
        s->had_other = true;
    }
    s_stream_event(s, json, len);
    s_stream_wake(s);
}

/* ------------------------------------------------------------ sessions */

static s_session_t *s_session_find(transport_http_t *self, const char *id)
{
    for (s_session_t *s = self->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static void s_session_end(transport_http_t *self, s_session_t *sess)
{
    for (s_session_t **pp = &self->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == sess) {
            *pp = sess->next;
            self->nsessions--;
            break;
        }
    }
    /* Streams of this session end; in-flight calls are cancelled as "gone"
     * by mcp_session_destroy (runs keep going; ctl wait can collect them). */
    for (s_stream_t *s = self->streams; s; s = s->next) {
        if (s->sess == sess) {
            s->sess = NULL;
            s->done = true;
            s_stream_wake(s);
        }
    }
    mcp_session_destroy(&sess->mcp);
    log_info("session %.8s ended", sess->id);
    free(sess);
}

static bool s_session_idle(const s_session_t *sess)
{
    if (mcp_session_calls(sess->mcp) || sess->get)
        return false;
    for (s_stream_t *s = sess->t->streams; s; s = s->next)
        if (s->sess == sess)
            return false;
    return true;
}

static s_session_t *s_session_new(transport_http_t *self)
{
    if (self->nsessions >= self->max_sessions) {
        /* Evict the least recently used idle session. */
        s_session_t *oldest = NULL;
        for (s_session_t *s = self->sessions; s; s = s->next)
            if (s_session_idle(s) && (!oldest || s->last_used_ms < oldest->last_used_ms))
                oldest = s;
        if (!oldest)
            return NULL;
        log_info("session table full: evicting idle session %.8s", oldest->id);
        s_session_end(self, oldest);
    }
    s_session_t *sess = xcalloc(1, sizeof *sess);
    sess->t = self;
    unsigned char raw[SESSION_ID_HEX / 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(sess->id, sizeof sess->id, raw, sizeof raw);
    sess->mcp = mcp_session_new(self->server, s_mcp_send, sess);
    sess->last_used_ms = loop_now_ms();
    sess->next = self->sessions;
    self->sessions = sess;
    self->nsessions++;
    return sess;
}

static void s_sweep(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->sweep_timer = loop_timer(loop, SWEEP_MS, s_sweep, self);
    int64_t now = loop_now_ms();
    s_session_t *s = self->sessions;
    while (s) {
        s_session_t *next = s->next;
        if (s_session_idle(s) && now - s->last_used_ms > (int64_t)self->session_idle_s * 1000) {
            log_info("session %.8s expired after %d s idle", s->id, self->session_idle_s);
            s_session_end(self, s);
        }
        s = next;
    }
}

static void s_keepalive(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->keepalive_timer = loop_timer(loop, CALL_KEEPALIVE_MS, s_keepalive, self);
    int64_t now = loop_now_ms();
    /* A comment line keeps proxies from closing idle streams and lets MHD
     * notice clients that went away (it cannot while a stream is suspended). */
    for (s_stream_t *s = self->streams; s; s = s->next) {
        if (s->attached && !s->done && !s->is_get && s->sess && !mcp_session_origin_pending(s->sess->mcp, s)) {
            /* Its call was dropped (notifications/cancelled): no response
             * will come, so the stream ends now instead of idling open. */
            s->done = true;
            s_stream_wake(s);
            continue;
        }
        int64_t every = s->is_get ? KEEPALIVE_MS : CALL_KEEPALIVE_MS;
        if (s->attached && !s->done && now - s->last_write_ms >= every) {
            buf_puts(&s->out, ": keepalive\n\n");
            s->last_write_ms = now;
            s_stream_wake(s);
        }
    }
}

/* ------------------------------------------------------------ requests */

static bool s_accepts(const char *accept, const char *type)
{
    if (!accept)
        return false;
    return strstr(accept, type) || strstr(accept, "*/*");
}

static enum MHD_Result s_handle_post(transport_http_t *self, struct MHD_Connection *c, s_req_t *req)
{
    const char *sid = s_header(c, "Mcp-Session-Id");
    if (req->too_big)
        return s_error(self, c, MHD_HTTP_CONTENT_TOO_LARGE, JSONRPC_INVALID_REQUEST, "Request body is too large");
    if (req->busy) {
        char *body = jsonrpc_error(NULL, -32000, "Server busy: too much request data is arriving at once; retry", NULL);
        struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
        free(body);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
        return s_queue(self, c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
    }
    jsonrpc_msg_t m;
    jsonrpc_parse(buf_str(&req->body), req->body.len, &m);
    if (m.kind == JSONRPC_INVALID) {
        /* Not one JSON-RPC message: answered here, with the error it earns. */
        enum MHD_Result r = s_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, m.err_code, m.err_msg);
        jsonrpc_msg_free(&m);
        return r;
    }
    /* By length too: "initialize\u0000x" names no method (mcp.c answers it
     * -32601, as over stdio), though strcmp would see "initialize". */
    bool is_init = m.kind == JSONRPC_REQUEST && m.method_len == strlen("initialize") &&
                   strcmp(m.method, "initialize") == 0;
    bool is_request = m.kind == JSONRPC_REQUEST;
    const char *method = m.method ? m.method : "";
    s_session_t *sess = NULL;
    enum MHD_Result rc;
    if (!sid) {
        if (!is_init) {
            if (is_request && strcmp(method, "server/discover") == 0) {
                /* An MCP answer to a request that was read: its id, as over
                 * stdio (JSON-RPC wants null only for an unreadable id). */
                rc = s_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, JSONRPC_METHOD_NOT_FOUND,
                                "Method not found: server/discover (this server speaks MCP 2025-11-25: send initialize)");
                jsonrpc_msg_free(&m);
                return rc;
            }
            jsonrpc_msg_free(&m);
            return s_error(self, c, MHD_HTTP_BAD_REQUEST, -32000,
                           "Bad Request: Mcp-Session-Id header is required (send initialize first)");
        }
        sess = s_session_new(self);
        if (!sess) {
            jsonrpc_msg_free(&m);
            return s_error(self, c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                           "Too many active sessions; end one with DELETE or try again later");
        }
        log_info("session %.8s started", sess->id);
    } else {
        sess = s_session_find(self, sid);
        if (!sess) {
            jsonrpc_msg_free(&m);
            return s_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
        }
        if (is_init) {
            /* The request and its id were read, so the error carries that id
             * (JSON-RPC 2.0: null only when the id could not be determined),
             * as the same initialize gets over stdio. */
            rc = s_error_id(self, c, MHD_HTTP_BAD_REQUEST, m.id, JSONRPC_INVALID_REQUEST,
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
        return s_send_body(self, c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
    }
    s_stream_t *s = s_stream_new(self, sess, c, false);
    req->stream = s;
    mcp_session_handle(sess->mcp, buf_str(&req->body), req->body.len, s);
    if (is_init && !mcp_session_initialized(sess->mcp)) {
        /* initialize failed (bad params): do not keep a session for it. */
        rc = s_send_body(self, c, MHD_HTTP_BAD_REQUEST, "application/json", buf_str(&s->final_json),
                         s->final_json.len, NULL);
        req->stream = NULL;
        s->done = true;
        s_stream_free(s);
        s_session_end(self, sess);
        return rc;
    }
    const char *hdr_sid = is_init ? sess->id : NULL;
    if (is_init)
        memcpy(req->new_sid, sess->id, sizeof req->new_sid);
    if (s->done && !s->had_other) {
        /* Answered at once and nothing else to say: plain JSON. */
        rc = s_send_body(self, c, MHD_HTTP_OK, "application/json", buf_str(&s->final_json), s->final_json.len,
                         hdr_sid);
        req->stream = NULL;
        s_stream_free(s);
        return rc;
    }
    return s_attach_sse(self, s, hdr_sid);
}

static enum MHD_Result s_handle_get_mcp(transport_http_t *self, struct MHD_Connection *c, s_req_t *req)
{
    if (!s_accepts(s_header(c, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
        return s_error(self, c, MHD_HTTP_NOT_ACCEPTABLE, -32000, "Not Acceptable: GET needs Accept: text/event-stream");
    const char *sid = s_header(c, "Mcp-Session-Id");
    if (!sid)
        return s_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: Mcp-Session-Id header is required");
    s_session_t *sess = s_session_find(self, sid);
    if (!sess)
        return s_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
    if (sess->get)
        return s_error(self, c, MHD_HTTP_CONFLICT, -32000, "Conflict: this session already has a GET stream");
    sess->last_used_ms = loop_now_ms();
    s_stream_t *s = s_stream_new(self, sess, c, true);
    sess->get = s;
    req->stream = s;
    return s_attach_sse(self, s, NULL);
}

static enum MHD_Result s_handle_delete(transport_http_t *self, struct MHD_Connection *c)
{
    const char *sid = s_header(c, "Mcp-Session-Id");
    if (!sid)
        return s_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: Mcp-Session-Id header is required");
    s_session_t *sess = s_session_find(self, sid);
    if (!sess)
        return s_error(self, c, MHD_HTTP_NOT_FOUND, -32001, "Session not found");
    s_session_end(self, sess);
    return s_send_body(self, c, MHD_HTTP_OK, NULL, "", 0, NULL);
}

static enum MHD_Result s_handle_route(transport_http_t *self, struct MHD_Connection *c, const char *url)
{
    for (int i = 0; i < self->nroutes; i++) {
        s_route_t *r = &self->routes[i];
        if (strncmp(url, r->prefix, strlen(r->prefix)) != 0)
            continue;
        http_reply_t rep = {.status = MHD_HTTP_NOT_FOUND, .content_type = "application/json", .fd = -1};
        r->fn(r->ud, url, &rep);
        /* A route that left the reply alone does not know the path (/health
         * under /healthz): pass it on, in the end to the JSON-RPC 404 of any
         * unknown path. That reply used to go out as it stood, an empty body
         * labelled application/json, which clients fail to parse. */
        if (rep.status == MHD_HTTP_NOT_FOUND && !rep.body && rep.fd < 0)
            continue;
        struct MHD_Response *resp;
        if (rep.fd >= 0) {
            /* MHD owns (and closes) the fd only once the response exists. */
            resp = MHD_create_response_from_fd(rep.fd_size, rep.fd);
            if (!resp)
                close(rep.fd);
        } else {
            resp = MHD_create_response_from_buffer(rep.len, rep.body ? rep.body : (char *)"", MHD_RESPMEM_MUST_COPY);
        }
        free(rep.body);
        if (!resp)
            return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep.content_type);
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        if (rep.sandbox)
            MHD_add_response_header(resp, "Content-Security-Policy", "sandbox");
        return s_queue(self, c, (unsigned)rep.status, resp);
    }
    return s_error(self, c, MHD_HTTP_NOT_FOUND, -32000, "Not found");
}

/* Checks that apply to every request: Host/Origin (DNS rebinding), token. */
static enum MHD_Result s_guard(transport_http_t *self, struct MHD_Connection *c, bool *refused)
{
    *refused = true;
    const char *origin = s_header(c, "Origin");
    if (origin && !s_origin_ok(self, origin))
        return s_error(self, c, MHD_HTTP_FORBIDDEN, -32000, "Forbidden: Origin not allowed");
    /* With a token, a browser cannot forge requests (it lacks the token), so
     * Host is only checked in the token-less loopback setup. */
    if (!self->token && !s_host_ok(s_header(c, MHD_HTTP_HEADER_HOST)))
        return s_error(self, c, MHD_HTTP_FORBIDDEN, -32000, "Forbidden: Host not allowed");
    if (!s_token_ok(self, c)) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        return s_queue(self, c, MHD_HTTP_UNAUTHORIZED, r);
    }
    *refused = false;
    return MHD_YES;
}

static enum MHD_Result s_first_call(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                    const char *method, s_req_t *req)
{
    bool refused = false;
    enum MHD_Result rc = s_guard(self, c, &refused);
    if (refused) {
        req->answered = true;
        return rc;
    }
    bool is_mcp = strcmp(url, "/mcp") == 0;
    if (strcmp(method, "OPTIONS") == 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
        MHD_add_response_header(r, "Access-Control-Allow-Headers",
                                "content-type, accept, authorization, mcp-session-id, mcp-protocol-version, "
                                "last-event-id");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
        req->answered = true;
        return s_queue(self, c, MHD_HTTP_NO_CONTENT, r);
    }
    if (!is_mcp)
        return MHD_YES; /* routes answer on the final call */
    if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, POST, DELETE");
        req->answered = true;
        return s_queue(self, c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    }
    const char *pv = s_header(c, "MCP-Protocol-Version");
    if (pv && !mcp_protocol_supported(pv)) {
        req->answered = true;
        return s_error(self, c, MHD_HTTP_BAD_REQUEST, -32000, "Bad Request: unsupported MCP-Protocol-Version");
    }
    if (strcmp(method, "POST") == 0) {
        const char *ct = s_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
            req->answered = true;
            return s_error(self, c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, -32000,
                           "Unsupported Media Type: Content-Type must be application/json");
        }
        const char *acc = s_header(c, MHD_HTTP_HEADER_ACCEPT);
        if (!s_accepts(acc, "application/json") || !s_accepts(acc, "text/event-stream")) {
            req->answered = true;
            return s_error(self, c, MHD_HTTP_NOT_ACCEPTABLE, -32000,
                           "Not Acceptable: Accept must list application/json and text/event-stream");
        }
        /* Too large: read and discard the body, then answer 413 (answering
         * at once would make most clients fail with EPIPE, not see 413). */
        const char *cl = s_header(c, MHD_HTTP_HEADER_CONTENT_LENGTH);
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
    s_req_t *req = *con_cls;
    if (!req) {
        req = xcalloc(1, sizeof *req);
        buf_init(&req->body, self->max_body);
        *con_cls = req;
        req->started = true;
        return s_first_call(self, c, url, method, req);
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        if (!req->answered && !req->too_big && !req->busy) {
            if (req->body.len + n > self->max_body) {
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
        if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
            return s_error(self, c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000, "Method not allowed");
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
    s_req_t *req = *con_cls;
    if (!req)
        return;
    if (req->stream) {
        if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
            log_debug("stream closed early (code %d)", (int)toe);
        s_stream_free(req->stream);
    }
    if (req->new_sid[0] && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        /* The client never got the response that names its session (it
         * left, or MHD could not build the headers: a request header that
         * filled the connection's memory), so nobody can use or DELETE the
         * session: end it now rather than at its idle expiry. */
        s_session_t *sess = s_session_find(self, req->new_sid);
        if (sess) {
            log_info("session %.8s ended: its initialize response was not delivered", sess->id);
            s_session_end(self, sess);
        }
    }
    s_body_drop(self, req);
    free(req);
    *con_cls = NULL;
}

/* ------------------------------------------------------------ the daemon in the loop */

static void s_run(transport_http_t *self);

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

static void s_schedule_run(transport_http_t *self)
{
    if (!self->run_timer)
        self->run_timer = loop_timer(self->loop, 0, s_run_soon, self);
}

static void s_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    log_debug("microhttpd: %s", line);
}

/* ------------------------------------------------------------ public API */

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
    transport_http_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->server = server;
    self->loopback = loopback;
    self->token = o->token && *o->token ? xstrdup(o->token) : NULL;
    self->allow_origins = strv_dup(o->allow_origins);
    self->max_body = o->max_body ? o->max_body : (4u << 20);
    self->max_bodies = o->max_bodies ? o->max_bodies : (64u << 20);
    self->max_sessions = o->max_sessions ? o->max_sessions : 256;
    self->session_idle_s = o->session_idle_s > 0 ? o->session_idle_s : 3600;
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    self->daemon = MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, s_access, self,
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, self,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)(o->max_connections ? o->max_connections : 2048),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)(o->connection_timeout_s > 0 ? o->connection_timeout_s : 30),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_END);
    if (!self->daemon) {
        snprintf(err, errlen, "cannot listen on %s port %d: %s", host, o->port,
                 errno ? strerror(errno) : "libmicrohttpd refused to start");
        transport_http_destroy(&self);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : o->port;
    info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    self->epoll_watch = loop_watch_fd(loop, info->epoll_fd, ZMQ_POLLIN, s_on_epoll, self);
    self->keepalive_timer = loop_timer(loop, CALL_KEEPALIVE_MS, s_keepalive, self);
    self->sweep_timer = loop_timer(loop, SWEEP_MS, s_sweep, self);
    s_run(self);
    return self;
}

void transport_http_destroy(transport_http_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    transport_http_t *self = *self_p;
    while (self->sessions)
        s_session_end(self, self->sessions);
    /* MHD must not be stopped with suspended connections: end every stream
     * and let MHD finish them first. */
    for (s_stream_t *s = self->streams; s; s = s->next) {
        s->done = true;
        s_stream_wake(s);
    }
    if (self->daemon) {
        MHD_run(self->daemon);
        MHD_stop_daemon(self->daemon);
    }
    while (self->streams)
        s_stream_free(self->streams);
    loop_unwatch(self->loop, self->epoll_watch);
    loop_timer_cancel(self->loop, self->mhd_timer);
    loop_timer_cancel(self->loop, self->keepalive_timer);
    loop_timer_cancel(self->loop, self->sweep_timer);
    loop_timer_cancel(self->loop, self->run_timer);
    if (self->token) {
        sodium_memzero(self->token, strlen(self->token));
        free(self->token);
    }
    strv_free(self->allow_origins);
    free(self);
    *self_p = NULL;
}

int transport_http_port(const transport_http_t *self)
{
    return self->port;
}

void transport_http_route(transport_http_t *self, const char *prefix, http_route_fn *fn, void *ud)
{
    if (self->nroutes >= MAX_ROUTES)
        return;
    s_route_t *r = &self->routes[self->nroutes++];
    snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
    r->fn = fn;
    r->ud = ud;
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
    s_schedule_run(self);
    return 0;
}

size_t transport_http_connections(const transport_http_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}
