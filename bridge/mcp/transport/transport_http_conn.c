/* transport_http_conn: the head deadline (see transport_http_internal.h).
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client that sends
 * one header byte every few seconds keeps its connection for ever, before
 * any token check, and enough of them fill the connection table (slowloris).
 * nginx bounds the time a request head may take (client_header_timeout);
 * this does the same: every connection is tracked from accept
 * (MHD_OPTION_NOTIFY_CONNECTION), and one that has not completed its
 * request head head_timeout_s after accept (or after its previous request
 * ended, on a kept-alive connection) is shut down. shutdown(2) on the socket
 * MHD owns makes MHD's next read see the end of the stream, and MHD then
 * closes the connection itself: the descriptor is never closed under it. */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

/* One connection MHD accepted (MHD's socket_context). */
struct http_conn {
    struct MHD_Connection *c; /* borrowed from MHD */
    int fd;                   /* MHD's; only shut down, never closed here */
    int64_t deadline_ms;      /* when the head must be complete; 0 while a request is being served */
    bool cut;                 /* shut down already */
    http_conn_t *prev, *next; /* in transport->conns */
};

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

static http_conn_t *s_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void http_conn_head_done(struct MHD_Connection *c)
{
    http_conn_t *k = s_of(c);
    if (k)
        k->deadline_ms = 0;
}

void http_conn_request_ended(transport_http_t *self, struct MHD_Connection *c)
{
    http_conn_t *k = s_of(c);
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
