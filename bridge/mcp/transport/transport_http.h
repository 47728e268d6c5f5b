/* transport_http: MCP over Streamable HTTP (MCP 2025-11-25) with libmicrohttpd.
 *
 * One endpoint, /mcp: POST carries one JSON-RPC message and is answered with
 * application/json when the response is ready at once, or with an SSE stream
 * that carries the request's notifications and then its response; GET opens
 * the session's stream for server-initiated messages; DELETE ends a session.
 * Sessions have secure random ids (Mcp-Session-Id) and share the MCP server
 * (and so, in rat-py, one kernel).
 *
 * Security: on a loopback address without a token only the server's own
 * user may connect (the peer socket's owner, looked up once per connection:
 * 403 to others), Host and Origin are checked against DNS rebinding (403), a
 * bearer token can be required (401, compared in constant time), CORS
 * headers go to allowed browser origins only; a %00 in a URL is 400; HTTPS
 * is TLS 1.2/1.3 with AEAD suites. Bounded: request bodies, headers (per
 * connection memory), connections, sessions (idle ones expire and the oldest
 * idle one is evicted when the table is full), queued stream output.
 *
 * Runs inside the loop: MHD in external-select epoll mode, its epoll fd in
 * the loop's poll, no extra thread. Extra GET routes (/health, /assets/...) are
 * plugged in by the application, so this file knows nothing about kernels. */
#ifndef RAT_TRANSPORT_HTTP_H
#define RAT_TRANSPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "loop.h"
#include "mcp.h"

typedef struct transport_http transport_http_t;

typedef struct {
    const char *host;            /* address to bind; default 127.0.0.1 */
    int port;                    /* 0: any free port */
    const char *token;           /* require "Authorization: Bearer TOKEN"; NULL: none */
    char *const *allow_origins;  /* extra allowed Origin values, NULL-terminated (may be NULL) */
    bool allow_insecure_remote;  /* bind a non-loopback address without a token */
    size_t max_body;             /* bytes of one POST body; default 4 MiB */
    size_t max_bodies;           /* bytes of all POST bodies being received at once; default 64 MiB */
    unsigned max_sessions;       /* default 256 */
    /* Bytes all streams together may hold unsent (default 64 MiB): past it
     * the stream with the most unsent loses its oldest notifications
     * first (outq.h); each stream also keeps at most 4 MiB of them. */
    size_t max_unsent;
    int session_idle_s;          /* idle sessions expire; default 3600 */
    unsigned max_connections;    /* default 2048 */
    int connection_timeout_s;    /* idle/slow connections are closed; default 30 */
    int head_timeout_s;          /* a request head must be complete this long after accept; default 15 */
    /* HTTPS: the certificate (chain) and its unencrypted private key, PEM
     * text (copied; the key is wiped when the transport goes); both or
     * neither. Needs a libmicrohttpd built with TLS (Debian's: GnuTLS). */
    const char *tls_cert_pem;
    const char *tls_key_pem;
} transport_http_opts_t;

/* What a route answers. Exactly one of body or fd is used. */
typedef struct {
    int status;                  /* HTTP status */
    const char *content_type;    /* static string */
    char *body;                  /* malloc'd, freed by the transport */
    size_t len;
    int fd;                      /* file to send (closed by the transport), -1 if none */
    size_t fd_size;
    bool sandbox;                /* add Content-Security-Policy: sandbox (untrusted HTML/SVG) */
    const char *csp;             /* a Content-Security-Policy to send (static string), NULL: none */
} http_reply_t;

/* Answers a GET under a registered prefix. path is the full request path.
 * Leaving out as it came (404, no body, no fd) means "not mine": the path
 * goes on to the next route, then to the transport's own 404. */
typedef void (http_route_fn)(void *ud, const char *path, http_reply_t *out);

struct MHD_Connection;
/* A request to a handler (transport_http_handler): any method, with its
 * body. Everything in it is borrowed for the handler's call only. */
typedef struct {
    const char *method;          /* "GET", "PUT", "POST", "PATCH", "DELETE", "HEAD" */
    const char *path;            /* percent-decoded by libmicrohttpd */
    const char *body;            /* NUL-terminated ("" when none) */
    size_t len;
    bool too_big;                /* the body was over the handler's max_body: dropped, len 0 */
    struct MHD_Connection *conn; /* for transport_http_header / transport_http_arg */
} http_request_t;

/* Answers a request under a registered prefix, as http_route_fn does (the
 * same "not mine" rule). Runs in the loop: it must not block for long. */
typedef void (http_handler_fn)(void *ud, const http_request_t *req, http_reply_t *out);

/* Starts listening. Returns NULL with err filled (e.g. refusing a
 * non-loopback address without a token, or a port in use). */
transport_http_t *transport_http_new(loop_t *loop, mcp_server_t *server, const transport_http_opts_t *opts,
                                     char *err, size_t errlen);
/* Ends every session and stream, stops listening, frees. */
void transport_http_destroy(transport_http_t **self_p);
/* The bound port (useful with port 0). */
int transport_http_port(const transport_http_t *self);
/* Whether it listens on a loopback address only. */
bool transport_http_loopback(const transport_http_t *self);
/* Adds a GET route: requests whose path starts with prefix go to fn. With a
 * token, a GET route takes it as a bearer header or, since a browser cannot
 * add headers to a link or an <img>, as a `token` query argument (as
 * Jupyter does). */
void transport_http_route(transport_http_t *self, const char *prefix, http_route_fn *fn, void *ud);
/* The same, for files that are public and need no token (the notebook
 * page's own scripts and styles, identical in every copy of rat-py): the
 * Host/Origin checks still apply. */
void transport_http_route_open(transport_http_t *self, const char *prefix, http_route_fn *fn, void *ud);
/* Adds a handler for every method under prefix (before the GET routes),
 * with the same token, Host and Origin rules as a GET route, except that
 * the token must come in the Authorization header: a `token` query argument
 * is not taken (a URL that holds it must not be enough to write files). Its request bodies
 * may be up to max_body bytes (0: the transport's max_body), still counted
 * in the transport's max_bodies. */
void transport_http_handler(transport_http_t *self, const char *prefix, size_t max_body, http_handler_fn *fn,
                            void *ud);
/* A request header, or the value of a query argument (NULL: absent). */
const char *transport_http_header(const http_request_t *req, const char *name);
const char *transport_http_arg(const http_request_t *req, const char *name);
size_t transport_http_sessions(const transport_http_t *self);
/* Serves fd, a connected stream socket (e.g. one end of a socketpair), as a
 * client accepted on the listening socket: same limits, same handling. The
 * transport owns fd from then on, also when it refuses it (-1, errno set).
 * For the fuzz harness: a socketpair costs a fraction of a loopback TCP
 * connection. */
int transport_http_adopt(transport_http_t *self, int fd);
/* Open HTTP connections, suspended ones (held streams) included. Lets tests
 * and the fuzz harness check that nothing is left behind once every client
 * has gone and every session has ended. */
size_t transport_http_connections(const transport_http_t *self);

#endif
