/* transport_http_conn: what is known of a connection from accept to close
 * (MHD's socket_context): whose process is on the other end, judged once
 * when the connection is accepted, and whether the request being read had
 * a NUL (%00) in its path or query. http_guard and s_first_call act on
 * both. */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

#include "peeruid.h"

http_conn_t *http_conn(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* The peer's uid, looked up once per connection (a sock_diag request:
 * about 10 us, peeruid.h), never per request. */
static void s_judge_peer(transport_http_t *self, struct MHD_Connection *c, http_conn_t *hc)
{
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    uid_t uid = 0;
    peeruid_result_t r = i ? peeruid_get(i->connect_fd, &uid) : PEERUID_UNKNOWN;
    if (r == PEERUID_FOUND && uid == self->uid) {
        hc->peer = HTTP_PEER_OWN;
        return;
    }
    hc->peer = r == PEERUID_FOUND ? HTTP_PEER_OTHER : HTTP_PEER_UNKNOWN;
    hc->uid = uid;
    /* Once as a warning (someone else tried), then quietly: a flood of
     * refused connections must not flood the log too. */
    if (self->peers_refused++ == 0)
        log_warn("refused a connection from %s: this server (no token, on loopback) serves only its own user (uid "
                 "%u); later refusals are logged at debug level",
                 r == PEERUID_FOUND ? "another user's process" : "a process whose user cannot be told",
                 (unsigned)self->uid);
    if (r == PEERUID_FOUND)
        log_debug("refused a connection from uid %u", (unsigned)uid);
    else
        log_debug("refused a connection: its peer's user cannot be told (%s)",
                  r == PEERUID_GONE ? "its socket is closed" : "the system does not say");
}

void http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    transport_http_t *self = cls;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        free(*socket_context);
        *socket_context = NULL;
        return;
    }
    http_conn_t *hc = xcalloc(1, sizeof *hc);
    *socket_context = hc;
    if (self->peer_check)
        s_judge_peer(self, c, hc);
    if (self->tls) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (i)
            http_tls_sniff(i->connect_fd);
    }
}

/* libmicrohttpd's own decoding, and a note when it produced a NUL: the path
 * (or a query value) would end there, and "a.txt%00/../../x" would name
 * a.txt. The request is then answered 400 (s_first_call), whatever it
 * asked. Called for the path and for each query key and value, before the
 * request's first call to the access handler. */
size_t http_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    size_t n = MHD_http_unescape(s);
    if (memchr(s, '\0', n)) {
        http_conn_t *hc = http_conn(c);
        if (hc)
            hc->nul = true;
    }
    return n;
}
