/* transport_http_conn: what is known of a connection from accept to close
 * (MHD's socket_context, tracked through MHD_OPTION_NOTIFY_CONNECTION):
 *
 * - whose process is on the other end, judged once when the connection is
 *   accepted, and whether the request being read had a NUL (%00) in its
 *   path or query; http_guard and s_first_call act on both;
 * - the head deadline. libmicrohttpd's connection timeout is an idle
 *   timeout: a client that sends one header byte every few seconds keeps
 *   its connection for ever, before any token check, and enough of them
 *   fill the connection table (slowloris). nginx bounds the time a request
 *   head may take (client_header_timeout); this does the same: a connection
 *   that has not completed its request head head_timeout_s after accept (or
 *   after its previous request ended, on a kept-alive connection) is shut
 *   down. shutdown(2) on the socket MHD owns makes MHD's next read see the
 *   end of the stream, and MHD then closes the connection itself: the
 *   descriptor is never closed under it. */
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

#define HEAD_CHECK_MS 500 /* granularity of the deadline */

static void s_check(loop_t *loop, void *ud);

static void s_arm(transport_http_t *self)
{
    if (!self->head_timer)
        self->head_timer = loop_timer(self->loop, HEAD_CHECK_MS, s_check, self);
}

static void s_check(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->head_timer = 0;
    int64_t now = loop_now_ms();
    bool pending = false, cut = false;
    for (http_conn_t *k = self->conns; k; k = k->next) {
        if (!k->deadline_ms || k->cut)
            continue;
        if (now >= k->deadline_ms) {
            k->cut = true;
            cut = true;
            self->head_cuts++;
            log_debug("connection closed: no complete request head within %d s", self->head_timeout_s);
            shutdown(k->fd, SHUT_RDWR);
        } else {
            pending = true;
        }
    }
    if (cut)
        http_schedule_run(self);
    if (pending)
        s_arm(self);
}

void http_conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    transport_http_t *self = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        http_conn_t *k = xcalloc(1, sizeof *k);
        k->c = c;
        k->fd = info ? info->connect_fd : -1;
        k->deadline_ms = k->fd >= 0 ? loop_now_ms() + (int64_t)self->head_timeout_s * 1000 : 0;
        k->next = self->conns;
        if (self->conns)
            self->conns->prev = k;
        self->conns = k;
        *socket_context = k;
        if (k->deadline_ms)
            s_arm(self);
        if (self->peer_check)
            s_judge_peer(self, c, k);
        if (self->tls && k->fd >= 0)
            http_tls_sniff(k->fd);
        return;
    }
    http_conn_t *k = *socket_context;
    if (!k)
        return;
    if (k->prev)
        k->prev->next = k->next;
    else
        self->conns = k->next;
    if (k->next)
        k->next->prev = k->prev;
    free(k);
    *socket_context = NULL;
}

void http_conn_head_done(struct MHD_Connection *c)
{
    http_conn_t *k = http_conn(c);
    if (k)
        k->deadline_ms = 0;
}

void http_conn_request_ended(transport_http_t *self, struct MHD_Connection *c)
{
    http_conn_t *k = http_conn(c);
    if (k && !k->cut && k->fd >= 0) {
        k->deadline_ms = loop_now_ms() + (int64_t)self->head_timeout_s * 1000;
        s_arm(self);
    }
}

void http_conn_destroy_all(transport_http_t *self)
{
    loop_timer_cancel(self->loop, self->head_timer);
    self->head_timer = 0;
    /* MHD_stop_daemon told us of every close; anything left is freed. */
    while (self->conns) {
        http_conn_t *k = self->conns;
        self->conns = k->next;
        free(k);
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
