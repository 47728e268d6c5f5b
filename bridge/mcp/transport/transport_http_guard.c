/* transport_http_guard: who may talk to the server: the user whose process
 * is on the other end (loopback without a token), the Host header (DNS
 * rebinding), the Origin allow-list and the bearer token, checked before a
 * request is read. */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

static bool s_is_loopback_host(const char *h, size_t n);
static bool s_host_ok(const char *host);
static bool s_token_eq(const transport_http_t *self, const char *given);
static bool s_token_ok(const transport_http_t *self, struct MHD_Connection *c, const char *url, const char *method);
static enum MHD_Result s_refuse_peer(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                     const http_conn_t *hc);
static bool s_same_origin(const char *origin, const char *host);

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
bool http_origin_ok(const transport_http_t *self, const char *origin)
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
static bool s_token_eq(const transport_http_t *self, const char *given)
{
    unsigned char a[crypto_generichash_BYTES], b[crypto_generichash_BYTES];
    crypto_generichash(a, sizeof a, (const unsigned char *)given, strlen(given), NULL, 0);
    crypto_generichash(b, sizeof b, (const unsigned char *)self->token, strlen(self->token), NULL, 0);
    return sodium_memcmp(a, b, sizeof a) == 0;
}

/* The bearer header; for a GET (or HEAD) of a GET route — the page,
 * /assets, /health: not /mcp, not a handler's path such as /api/contents —
 * also a `token` query argument, which is all a browser's link or <img>
 * can carry; an open route (public files) needs none. A query token is
 * never taken for a request that changes something, nor for the file API:
 * a URL with the token in it ends up in logs and histories, and must not
 * be enough to write files. */
static bool s_token_ok(const transport_http_t *self, struct MHD_Connection *c, const char *url, const char *method)
{
    if (!self->token)
        return true;
    const char *auth = http_header(c, MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth && strncasecmp(auth, "Bearer ", 7) == 0 && s_token_eq(self, auth + 7))
        return true;
    if (strcmp(url, "/mcp") == 0)
        return false;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    const char *q = get && http_find_handler(self, url) < 0
                        ? MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token")
                        : NULL;
    if (q && s_token_eq(self, q))
        return true;
    for (int i = 0; i < self->nroutes; i++)
        if (self->routes[i].open && strncmp(url, self->routes[i].prefix, strlen(self->routes[i].prefix)) == 0)
            return true;
    return false;
}

/* Origin "http(s)://HOST" where HOST is the request's own Host header: the
 * page rat-py served, calling /mcp from wherever the user reached it. */
static bool s_same_origin(const char *origin, const char *host)
{
    if (!host || !*host)
        return false;
    const char *p = strncmp(origin, "http://", 7) == 0 ? origin + 7 : strncmp(origin, "https://", 8) == 0 ? origin + 8 : NULL;
    return p && strcmp(p, host) == 0;
}

/* 403 for a connection from another user's process (or one whose user
 * cannot be told): a JSON-RPC error on /mcp, a line of text elsewhere. Any
 * answer at all tells that the server is up: liveness is all such a peer
 * learns. */
static enum MHD_Result s_refuse_peer(transport_http_t *self, struct MHD_Connection *c, const char *url,
                                     const http_conn_t *hc)
{
    char why[400];
    if (hc && hc->peer == HTTP_PEER_OTHER)
        snprintf(why, sizeof why,
                 "Forbidden: this rat-py serves only the user who started it (uid %u), and this connection comes "
                 "from another user's process (uid %u). A server that other users may reach needs a token "
                 "(--token-file FILE); see doc/security.md",
                 (unsigned)self->uid, (unsigned)hc->uid);
    else
        snprintf(why, sizeof why,
                 "Forbidden: this rat-py serves only the user who started it (uid %u), and the user of this "
                 "connection's process cannot be told (its socket is already closed, or the system does not "
                 "say)",
                 (unsigned)self->uid);
    if (strcmp(url, "/mcp") == 0)
        return http_error(self, c, MHD_HTTP_FORBIDDEN, -32000, why);
    char text[sizeof why + 8];
    int n = snprintf(text, sizeof text, "403 %s\n", why);
    struct MHD_Response *r = MHD_create_response_from_buffer((size_t)n, text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    return http_queue(self, c, MHD_HTTP_FORBIDDEN, r);
}

/* Checks that apply to every request: the peer's user (loopback without a
 * token), then Host/Origin (DNS rebinding), then the token. A CORS
 * preflight (preflight: an OPTIONS request) passes after Host and Origin,
 * before the token: browsers never send Authorization on one, so with a
 * token no cross-origin page could ever connect. Its answer
 * grants nothing but leave to send the real request, which needs the
 * token. */
enum MHD_Result http_guard(transport_http_t *self, struct MHD_Connection *c, const char *url, const char *method,
                           bool *refused)
{
    *refused = true;
    bool preflight = strcmp(method, "OPTIONS") == 0;
    /* Judged when the connection was accepted; no connection state at all
     * (cannot happen) is refused too. */
    if (self->peer_check) {
        const http_conn_t *hc = http_conn(c);
        if (!hc || hc->peer != HTTP_PEER_OWN)
            return s_refuse_peer(self, c, url, hc);
    }
    const char *origin = http_header(c, "Origin");
    /* With a token, a same-origin request (the page rat-py served, opened
     * under any name) is allowed too: the token stands in for the Host
     * check. Without one, Origin and Host must both be loopback. */
    if (origin && !http_origin_ok(self, origin) &&
        !(self->token && s_same_origin(origin, http_header(c, MHD_HTTP_HEADER_HOST))))
        return http_error(self, c, MHD_HTTP_FORBIDDEN, -32000, "Forbidden: Origin not allowed");
    /* With a token, a browser cannot forge requests (it lacks the token), so
     * Host is only checked in the token-less loopback setup. */
    if (!self->token && !s_host_ok(http_header(c, MHD_HTTP_HEADER_HOST)))
        return http_error(self, c, MHD_HTTP_FORBIDDEN, -32000, "Forbidden: Host not allowed");
    if (!preflight && !s_token_ok(self, c, url, method)) {
        /* A person who opened a page without the token reads why. */
        static const char why[] = "401 Unauthorized: this server needs its token. Open the URL rat-py printed at "
                                  "start (it ends in ?token=...), or send Authorization: Bearer TOKEN.\n";
        bool mcp = strcmp(url, "/mcp") == 0;
        struct MHD_Response *r = MHD_create_response_from_buffer(mcp ? 0 : sizeof why - 1, (void *)(mcp ? "" : why),
                                                                 MHD_RESPMEM_PERSISTENT);
        if (!mcp)
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        return http_queue(self, c, MHD_HTTP_UNAUTHORIZED, r);
    }
    *refused = false;
    return MHD_YES;
}
