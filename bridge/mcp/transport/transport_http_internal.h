/* transport_http_internal: the state the transport_http*.c files share (see
 * transport_http.c). Not a public header: only those files include it. */
#ifndef RAT_TRANSPORT_HTTP_INTERNAL_H
#define RAT_TRANSPORT_HTTP_INTERNAL_H

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
#include "heaptrim.h"
#include "log.h"
#include "outq.h"
#include "mem.h"
#include "mhd_dl.h" /* last: it renames the MHD_* calls */

#define SESSION_ID_HEX 32                 /* 128 random bits */
#define STREAM_DROP_NOTIFY (4u << 20)     /* unsent bytes past which notifications are dropped */
#define UNSENT_MAX_DEFAULT (64u << 20)    /* all streams' unsent bytes together (outq group budget) */
/* A drained queue that had held this much asks for freed heap to go back
 * to the system (heaptrim). */
#define TRIM_AFTER_BYTES (1u << 20)
#define KEEPALIVE_MS 15000                /* SSE comment on idle GET streams */
/* A stream whose write buffer saw no new data for this long gives that
 * buffer's pages back to the kernel (see s_stream_release). */
#define RELEASE_QUIET_MS 1000
/* A POST stream whose call is in progress gets a comment after this much
 * silence: MHD notices a client that went away only when a write fails
 * (never while the connection is suspended), and the call must be released
 * promptly so that ctl wait from another session can collect its run. */
#define CALL_KEEPALIVE_MS 1000
#define SWEEP_MS 60000                    /* idle session expiry check */
#define MAX_ROUTES 8
/* Slowloris (doc/security.md, "Connection limits"): a request head must be
 * complete this long after accept, as nginx's client_header_timeout (60 s
 * there; a head is a few hundred bytes sent at once by every real client). */
#define HTTP_HEAD_TIMEOUT_S 15
/* One peer address holds at most 1/HTTP_PER_IP_SHARE of the connection
 * table (libmicrohttpd's per-IP limit): 256 of the default 2048. On loopback
 * every client is 127.0.0.1: a browser keeps at most 6 connections per host
 * plus its event streams, an MCP session one GET stream plus one per call in
 * flight, rat a few; 256 leaves room for dozens of each, while one address
 * can no longer take the whole table. */
#define HTTP_PER_IP_SHARE 8
/* Server->client requests tied to no call wait for the session's GET
 * stream (the SDK client opens it only after notifications/initialized,
 * which is when roots/list is asked): at most this many, this many bytes. */
#define BACKLOG_MAX 8
#define BACKLOG_BYTES (64u << 10)

typedef struct http_session http_session_t;
typedef struct http_stream http_stream_t;
typedef struct http_conn http_conn_t;

/* An SSE stream: the answer to one POST, or a session's GET stream. */
struct http_stream {
    transport_http_t *t;
    http_session_t *sess;            /* borrowed; NULL once the session ended */
    struct MHD_Connection *conn;  /* borrowed from MHD */
    outq_t *out;                  /* owned: SSE text not yet handed to MHD, in transport->unsent */
    size_t out_peak;              /* most unsent bytes since the queue was last empty */
    buf_t final_json;             /* the response, kept in case it goes out as plain JSON */
    bool had_other;               /* something besides the response was sent */
    bool attached;                /* the SSE response is queued on the connection */
    bool suspended;               /* MHD connection suspended waiting for data */
    bool done;                    /* the response went out (POST) or the session ended */
    bool is_get;
    int64_t last_write_ms;
    int64_t dirty_ms;             /* when data last went past the first page of MHD's write buffer */
    bool scratch_dirty;           /* ... since s_stream_release last gave those pages back */
    unsigned long dropped;
    http_stream_t *next;             /* in transport->streams */
};

struct http_session {
    transport_http_t *t;
    char id[SESSION_ID_HEX + 1];
    mcp_session_t *mcp;           /* owned */
    http_stream_t *get;              /* the open GET stream, or NULL */
    buf_t backlog;                /* requests for the GET stream not open yet: JSON texts, NUL after each */
    unsigned nbacklog;
    unsigned long event_id;
    int64_t last_used_ms;
    http_session_t *next;
};

/* Per request state (MHD's con_cls). */
typedef struct {
    bool started;
    bool answered;                /* a response was queued early */
    buf_t body;                   /* counted in transport->body_bytes */
    bool too_big;
    bool busy;                    /* refused: all bodies together hit max_bodies */
    http_stream_t *stream;           /* POST that became SSE, or GET stream */
    char new_sid[SESSION_ID_HEX + 1]; /* the session this initialize created, or "" */
    int handler;                  /* index in transport->handlers, or -1 */
} http_req_t;

/* Per connection state (MHD's socket_context), from accept to close
 * (transport_http_conn.c). */
typedef enum {
    HTTP_PEER_UNCHECKED, /* no check: a token decides, or not a loopback bind */
    HTTP_PEER_OWN,       /* the peer's socket is the server's own user's */
    HTTP_PEER_OTHER,     /* another user's (uid) */
    HTTP_PEER_UNKNOWN,   /* cannot tell (the peer's socket is closed, or the system would not say) */
} http_peer_t;

struct http_conn {
    http_peer_t peer;             /* decided once, when the connection is accepted */
    uid_t uid;                    /* HTTP_PEER_OTHER: whose */
    bool nul;                     /* the request being read has a %00 in its path or query */
    struct MHD_Connection *c;     /* borrowed from MHD */
    int fd;                       /* MHD's; only shut down, never closed here */
    int64_t deadline_ms;          /* when the head must be complete; 0 while a request is being served */
    bool cut;                     /* shut down already */
    http_conn_t *prev, *next;     /* in transport->conns */
};

typedef struct {
    char prefix[64];
    http_route_fn *fn;
    void *ud;
    bool open;                    /* served without the token */
} http_route_t;

typedef struct {
    char prefix[64];
    http_handler_fn *fn;
    void *ud;
    size_t max_body;
} http_handler_t;

struct transport_http {
    loop_t *loop;                 /* borrowed */
    mcp_server_t *server;         /* borrowed */
    struct MHD_Daemon *daemon;
    int epoll_watch;
    uint64_t mhd_timer, keepalive_timer, sweep_timer, run_timer;
    int port;
    bool loopback;                /* bound to a loopback address */
    /* Loopback without a token: only the server's own user may talk
     * (doc/security.md, "Who may connect"); the peer's uid is looked up once
     * per connection. */
    bool peer_check;
    bool tls;
    uid_t uid;                    /* geteuid() at start */
    unsigned long peers_refused;  /* connections from other users: the first is logged as a warning */
    char *token;                  /* owned */
    char *tls_cert, *tls_key;     /* owned PEM text (MHD reads them while it starts); the key wiped at the end */
    char mhd_said[512];           /* libmicrohttpd's last log line (why a start failed) */
    char **allow_origins;         /* owned */
    size_t max_body;
    size_t max_bodies;
    size_t body_bytes;            /* held in request bodies right now */
    unsigned max_sessions, nsessions;
    int session_idle_s;
    http_session_t *sessions;        /* owned list */
    http_session_t *stateless;       /* owned: serves modern (2026-07-28) requests, in no list */
    http_stream_t *streams;          /* owned list of live streams */
    outq_group_t *unsent;            /* owned: the budget of every stream's unsent bytes */
    http_route_t routes[MAX_ROUTES];
    int nroutes;
    http_handler_t handlers[MAX_ROUTES];
    int nhandlers;
    http_conn_t *conns;              /* owned list: every connection MHD holds (transport_http_conn.c) */
    int head_timeout_s;              /* from accept (or the previous request's end) to a complete head */
    uint64_t head_timer;
    unsigned long head_cuts;         /* connections shut down for a slow head */
};

/* transport_http.c */
const char *http_header(struct MHD_Connection *c, const char *name);
enum MHD_Result http_queue(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                           struct MHD_Response *r);
enum MHD_Result http_error(transport_http_t *self, struct MHD_Connection *c, unsigned status, int code,
                           const char *msg);
/* A body (copied) with its Content-Type and, when given, Mcp-Session-Id. */
enum MHD_Result http_send_body(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                               const char *ctype, const char *body, size_t len, const char *session_id);
/* An HTTP error with a JSON-RPC error body answering the request whose id
 * is id (NULL: id null). */
enum MHD_Result http_error_id(transport_http_t *self, struct MHD_Connection *c, unsigned status,
                              json_object *id, int code, const char *msg);
void http_schedule_run(transport_http_t *self);

int http_find_handler(const transport_http_t *self, const char *url);

/* transport_http_modern.c */
/* Whether a POST is in the 2026-07-28 sessionless form. */
bool http_post_is_modern(struct MHD_Connection *c, jsonrpc_msg_t *m, bool is_init, const char *sid);
/* Answers it (its headers checked against its body first); m is borrowed. */
enum MHD_Result http_handle_modern_post(transport_http_t *self, struct MHD_Connection *c, http_req_t *req,
                                        jsonrpc_msg_t *m);

/* transport_http_guard.c */
bool http_origin_ok(const transport_http_t *self, const char *origin);
enum MHD_Result http_guard(transport_http_t *self, struct MHD_Connection *c, const char *url, const char *method,
                           bool *refused);

/* transport_http_conn.c */
http_conn_t *http_conn(struct MHD_Connection *c);
size_t http_unescape(void *cls, struct MHD_Connection *c, char *s);
/* MHD's NOTIFY_CONNECTION callback (cls: the transport) tracks each
 * connection (its peer judged, its head deadline); head_done when its
 * request head is complete (the access handler's first call); request_ended
 * when a request ends (the next head's deadline starts). */
void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code);
void http_conn_head_done(struct MHD_Connection *c);
void http_conn_request_ended(transport_http_t *self, struct MHD_Connection *c);
/* After MHD_stop_daemon: frees what is left, cancels the timer. */
void http_conn_destroy_all(transport_http_t *self);

/* transport_http_tls.c */
extern const char http_tls_priorities[];
void http_tls_listen_setup(transport_http_t *self);
void http_tls_sniff(int fd);

/* transport_http_session.c */
http_stream_t *http_stream_new(transport_http_t *self, http_session_t *sess, struct MHD_Connection *c, bool is_get);
void http_stream_free(http_stream_t *s);
void http_stream_wake(http_stream_t *s);
enum MHD_Result http_attach_sse(transport_http_t *self, http_stream_t *s, const char *session_id);
http_session_t *http_session_find(transport_http_t *self, const char *id);
void http_session_end(transport_http_t *self, http_session_t *sess);
http_session_t *http_session_new(transport_http_t *self);
http_session_t *http_session_new_stateless(transport_http_t *self);
/* Hands the requests kept for the session's GET stream to it (just opened). */
void http_session_flush_backlog(http_session_t *sess);
void http_sweep(loop_t *loop, void *ud);
void http_keepalive(loop_t *loop, void *ud);

#endif
