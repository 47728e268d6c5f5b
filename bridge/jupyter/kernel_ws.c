/* kernel_ws: kernel_conn over a Jupyter Server WebSocket (see kernel_ws.h). */
#define LOG_MODULE "ws"
#include "kernel_ws.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>
#include <czmq.h>
#include <sodium.h>

#include "buf.h"
#include "gw_dl.h"
#include "log.h"
#include "mem.h"

#define WS_HANDSHAKE_MS 10000     /* connect + upgrade, per attempt */
#define WS_MAX_RESPONSE 16384     /* upgrade response headers */
#define WS_RETRY_FIRST_MS 100
#define WS_RETRY_MAX_MS 2000
#define WS_QUEUE_MAX 4096         /* messages kept to send: while disconnected, and in wslay's queue */
/* Bytes kept while disconnected. The count alone would allow 4096 messages
 * as big as a request body (4 MiB of code, TOOLS_MAX_CODE, before JSON
 * escaping): ~16 GiB. 64 MiB is thousands of ordinary requests (hundreds of
 * bytes to a few KiB) or about sixteen of the largest, the same budget the
 * HTTP transport gives all the POST bodies it receives at once; a backlog
 * past it is no blip in the link, and the caller is better told now. */
#define WS_QUEUE_MAX_BYTES ((size_t)64 << 20)
#define WS_SILENT_DROP_MS 20000   /* nothing received this long while pinging: reconnect */

typedef enum { WS_IDLE, WS_CONNECTING, WS_HANDSHAKE, WS_OPEN, WS_GONE } ws_state_t;

typedef struct {
    kernel_conn_t base;           /* must be first */
    loop_t *loop;                 /* borrowed */
    gateway_t *gw;                /* borrowed */
    char *kernel_id;
    char session[WIRE_ID_LEN + 1];
    ws_state_t st;
    int fd, watch;
    CURL *tls;                    /* https: libcurl's connection (owns fd), else NULL */
    buf_t hs_out;                 /* the upgrade request */
    size_t hs_sent;
    char accept[32];              /* the Sec-WebSocket-Accept its key asks for */
    buf_t in;                     /* the upgrade response; then bytes already read for wslay */
    size_t in_pos;
    wslay_event_context_ptr ctx;
    uint64_t hs_timer, retry_timer, hb_timer;
    int retry_ms;
    char **queue;                 /* JSON texts waiting for the connection */
    size_t nqueue, queue_bytes;   /* how many, and their lengths summed */
    wire_auth_t auth;             /* empty key: builds unsigned parts */
    wire_out_t out;
    buf_t msg;                    /* one outgoing JSON message */
    int hb_interval, hb_tolerance;
    int64_t hb_sent_us, last_rx_us;
    bool hb_ok;
    long hb_rtt_us;
    /* wslay answers every PING with a PONG it queues; a peer that floods
     * PINGs and never reads would grow that queue without end. Past
     * WS_QUEUE_MAX queued messages the connection is dropped (and made
     * again). */
    bool flooded;
    char *error;                  /* why KCONN_GONE */
    bool ever_open;
    kconn_stats_t stats;
} s_ws_t;

static void s_start(s_ws_t *self);
static void s_drop(s_ws_t *self, const char *why);

static void s_event(s_ws_t *self, kconn_event_t ev)
{
    if (self->base.on_event)
        self->base.on_event(self->base.ud, ev);
}

static void s_close_socket(s_ws_t *self)
{
    loop_unwatch(self->loop, self->watch);
    self->watch = 0;
    if (self->tls)
        gw_curl.easy_cleanup(self->tls); /* closes fd */
    else if (self->fd >= 0)
        close(self->fd);
    self->tls = NULL;
    self->fd = -1;
    self->flooded = false;
    if (self->ctx)
        gw_wslay.context_free(self->ctx);
    self->ctx = NULL;
    loop_timer_cancel(self->loop, self->hs_timer);
    self->hs_timer = 0;
    buf_reset(&self->in);
    buf_reset(&self->hs_out);
    self->in_pos = self->hs_sent = 0;
}

static void s_gone(s_ws_t *self, char *why /* consumed */)
{
    log_warn("%s", why);
    s_close_socket(self);
    loop_timer_cancel(self->loop, self->retry_timer);
    self->retry_timer = 0;
    self->st = WS_GONE;
    free(self->error);
    self->error = why;
    s_event(self, KCONN_GONE);
}

static void s_retry_timer(loop_t *loop, void *ud)
{
    s_ws_t *self = ud;
    self->retry_timer = 0;
    s_start(self);
}

/* The link is down (or an attempt failed): try again later. */
static void s_drop(s_ws_t *self, const char *why)
{
    bool was_open = self->st == WS_OPEN;
    log_info("kernel WebSocket %s: %s; reconnecting in %d ms", was_open ? "lost" : "attempt failed", why,
             self->retry_ms);
    s_close_socket(self);
    self->st = WS_IDLE;
    self->hb_sent_us = 0;
    loop_timer_cancel(self->loop, self->retry_timer);
    self->retry_timer = loop_timer(self->loop, self->retry_ms, s_retry_timer, self);
    self->retry_ms = self->retry_ms * 2 > WS_RETRY_MAX_MS ? WS_RETRY_MAX_MS : self->retry_ms * 2;
    if (self->hb_ok) {
        self->hb_ok = false;
        s_event(self, KCONN_HB_LOST);
    }
}

static void s_update_watch(s_ws_t *self)
{
    int ev = 0;
    if (self->st == WS_CONNECTING)
        ev = ZMQ_POLLOUT;
    else if (self->st == WS_HANDSHAKE)
        ev = self->hs_sent < self->hs_out.len ? ZMQ_POLLOUT : ZMQ_POLLIN;
    else if (self->st == WS_OPEN)
        ev = (gw_wslay.want_read(self->ctx) ? ZMQ_POLLIN : 0) | (gw_wslay.want_write(self->ctx) ? ZMQ_POLLOUT : 0);
    loop_watch_set(self->loop, self->watch, ev);
}

/* ------------------------------------------------------------ bytes */

/* Through the socket, or libcurl's TLS connection on it. Return > 0, 0 at
 * EOF (recv), or -1 with errno (EAGAIN: nothing now). Callers read until
 * EAGAIN, so bytes TLS has already decrypted are never left waiting for a
 * poll that will not come. */
static ssize_t s_io_recv(s_ws_t *self, void *buf, size_t len)
{
    if (!self->tls)
        return recv(self->fd, buf, len, 0);
    size_t n = 0;
    CURLcode rc = gw_curl.easy_recv(self->tls, buf, len, &n);
    if (rc == CURLE_OK)
        return (ssize_t)n;
    errno = rc == CURLE_AGAIN ? EAGAIN : EIO;
    return -1;
}

static ssize_t s_io_send(s_ws_t *self, const void *buf, size_t len, bool more)
{
    if (!self->tls)
        return send(self->fd, buf, len, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    size_t n = 0;
    CURLcode rc = gw_curl.easy_send(self->tls, buf, len, &n);
    if (rc == CURLE_OK)
        return (ssize_t)n;
    errno = rc == CURLE_AGAIN ? EAGAIN : EIO;
    return -1;
}

/* ------------------------------------------------------------ wslay callbacks */

static ssize_t s_wslay_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
    s_ws_t *self = ud;
    if (self->flooded) {
        /* Stop reading: s_pump drops the connection and says why. */
        gw_wslay.set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    if (self->in_pos < self->in.len) {
        size_t n = self->in.len - self->in_pos;
        if (n > len)
            n = len;
        memcpy(buf, self->in.data + self->in_pos, n);
        self->in_pos += n;
        return (ssize_t)n;
    }
    ssize_t r = s_io_recv(self, buf, len);
    if (r > 0) {
        self->last_rx_us = loop_now_us();
        return r;
    }
    if (r < 0 && errno == EAGAIN) {
        /* Drained: ACK at once. The server writes a reply as several small
         * frames; Nagle on its side holds the last one until our ACK, and a
         * delayed ACK adds 40 ms to every round trip (a Python client on
         * the same server pays them). Linux clears QUICKACK by itself, so
         * it is set again on every drain. */
        int one = 1;
        setsockopt(self->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
        errno = EAGAIN;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        gw_wslay.set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    else
        gw_wslay.set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static ssize_t s_wslay_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags, void *ud)
{
    s_ws_t *self = ud;
    ssize_t r = s_io_send(self, data, len, (flags & WSLAY_MSG_MORE) != 0);
    if (r >= 0)
        return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        gw_wslay.set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    else
        gw_wslay.set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
}

static int s_wslay_mask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
    randombytes_buf(buf, len);
    return 0;
}

static kchan_t s_channel(const char *name)
{
    for (int i = 0; i < KCHAN_COUNT; i++)
        if (strcmp(name, kernel_conn_channel_name((kchan_t)i)) == 0)
            return (kchan_t)i;
    return KCHAN_COUNT;
}

static void s_deliver(s_ws_t *self, const uint8_t *data, size_t len)
{
    char chname[WIRE_CHANNEL_MAX];
    wire_msg_t m;
    wire_err_t e = wire_from_json_text((const char *)data, len, chname, &m);
    kchan_t ch = e == WIRE_OK ? s_channel(chname) : KCHAN_COUNT;
    if (ch == KCHAN_COUNT) {
        self->stats.dropped++;
        log_warn("dropped a WebSocket message that is not a Jupyter message (%zu bytes)", len);
        wire_msg_free(&m);
        return;
    }
    self->stats.received++;
    log_debug("recv %s %s parent=%.8s", kernel_conn_channel_name(ch), m.msg_type, m.parent_id ? m.parent_id : "-");
    self->base.on_msg(self->base.ud, ch, &m);
    /* We go on after on_msg: owners never destroy a connection inside its
     * handlers (kernel_conn.h). */
    wire_msg_free(&m); /* before data, whose stream text it borrows, goes */
}

static void s_wslay_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg, void *ud)
{
    s_ws_t *self = ud;
    if (arg->opcode == WSLAY_TEXT_FRAME) {
        s_deliver(self, arg->msg, arg->msg_length);
    } else if (arg->opcode == WSLAY_PONG) {
        if (self->hb_sent_us) {
            self->hb_rtt_us = (long)(loop_now_us() - self->hb_sent_us);
            self->hb_sent_us = 0;
        }
    } else if (arg->opcode == WSLAY_BINARY_FRAME) {
        self->stats.dropped++; /* only the v1 subprotocol sends these, and we do not ask for it */
    } else if (arg->opcode == WSLAY_PING && gw_wslay.queued_count(ctx) > WS_QUEUE_MAX) {
        self->flooded = true; /* its PONG is queued already */
    }
}

static const struct wslay_event_callbacks s_callbacks = {
    .recv_callback = s_wslay_recv,
    .send_callback = s_wslay_send,
    .genmask_callback = s_wslay_mask,
    .on_msg_recv_callback = s_wslay_msg,
};

/* ------------------------------------------------------------ the socket */


static int s_queue_frame(s_ws_t *self, const char *text, size_t len)
{
    struct wslay_event_msg m = {.opcode = WSLAY_TEXT_FRAME, .msg = (const uint8_t *)text, .msg_length = len};
    return gw_wslay.queue_msg(self->ctx, &m) == 0 ? 0 : -1; /* wslay copies the text */
}

/* Reads and writes what can be, then decides what to wait for. */
static void s_pump(s_ws_t *self)
{
    if (gw_wslay.recv(self->ctx) != 0) {
        if (self->flooded) {
            char why[160];
            snprintf(why, sizeof why, "the server sends PINGs and does not read the PONGs (%zu messages waiting, at "
                                      "most %d)",
                     gw_wslay.queued_count(self->ctx), WS_QUEUE_MAX);
            s_drop(self, why);
            return;
        }
        s_drop(self, "the connection closed");
        return;
    }
    if (gw_wslay.send(self->ctx) != 0) {
        s_drop(self, "cannot write to the connection");
        return;
    }
    if (!gw_wslay.want_read(self->ctx) && !gw_wslay.want_write(self->ctx)) {
        s_drop(self, "the server closed the WebSocket");
        return;
    }
    s_update_watch(self);
}

static void s_opened(s_ws_t *self)
{
    if (gw_wslay.client_init(&self->ctx, &s_callbacks, self) != 0) {
        s_drop(self, "cannot set up WebSocket framing");
        return;
    }
    gw_wslay.set_max_recv_msg_length(self->ctx, WIRE_MAX_FRAME);
    loop_timer_cancel(self->loop, self->hs_timer);
    self->hs_timer = 0;
    self->st = WS_OPEN;
    self->retry_ms = WS_RETRY_FIRST_MS;
    self->last_rx_us = loop_now_us();
    log_info("kernel WebSocket %s to %s (kernel %s)", self->ever_open ? "reconnected" : "connected",
             gateway_url(self->gw), self->kernel_id);
    self->ever_open = true;
    for (size_t i = 0; i < self->nqueue; i++) {
        s_queue_frame(self, self->queue[i], strlen(self->queue[i]));
        free(self->queue[i]);
    }
    self->nqueue = self->queue_bytes = 0;
    if (!self->hb_ok) {
        self->hb_ok = true;
        s_event(self, KCONN_HB_OK);
    }
    s_event(self, KCONN_UP);
    if (self->st == WS_OPEN) /* the owner's handler may not destroy us, but a drop inside is possible */
        s_pump(self);
}

/* Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 4.2.2): the
 * Base64 of SHA-1(key + the protocol's GUID). */
static void s_accept_for(const char *key64, char out[32])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    zdigest_t *d = zdigest_new();
    zdigest_update(d, (const byte *)key64, strlen(key64));
    zdigest_update(d, (const byte *)guid, sizeof guid - 1);
    sodium_bin2base64(out, 32, zdigest_data(d), zdigest_size(d), sodium_base64_VARIANT_ORIGINAL);
    zdigest_destroy(&d);
}

/* The value of header `name` in the response head (status line, header
 * lines, the empty line), trimmed, into out; false when absent, repeated,
 * or too long for out. Names compare case-insensitively (RFC 9110 5.1). */
static bool s_header(const char *head, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    bool found = false;
    const char *p = memchr(head, '\n', len), *end = head + len;
    while (p && ++p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            break;
        if ((size_t)(eol - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
            const char *v = p + nl + 1, *ve = eol;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (found || (size_t)(ve - v) >= cap)
                return false;
            memcpy(out, v, (size_t)(ve - v));
            out[ve - v] = '\0';
            found = true;
        }
        p = eol;
    }
    return found;
}

/* Whether the comma-separated list holds token (case-insensitive). */
static bool s_has_token(const char *list, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - p) == tl && strncasecmp(p, token, tl) == 0)
            return true;
        p = e;
    }
    return false;
}

/* A 101 that is a WebSocket upgrade as RFC 6455 4.1 asks of a client:
 * Upgrade: websocket, Connection: Upgrade, the Sec-WebSocket-Accept our key
 * asks for, and no extension or subprotocol we did not offer. NULL, or why
 * not (a static sentence). */
static const char *s_upgrade_problem(const s_ws_t *self, const char *head, size_t len)
{
    char v[256];
    if (!s_header(head, len, "Upgrade", v, sizeof v) || strcasecmp(v, "websocket") != 0)
        return "the 101 response does not say Upgrade: websocket";
    if (!s_header(head, len, "Connection", v, sizeof v) || !s_has_token(v, "upgrade"))
        return "the 101 response does not say Connection: Upgrade";
    if (!s_header(head, len, "Sec-WebSocket-Accept", v, sizeof v) || strcmp(v, self->accept) != 0)
        return "the 101 response's Sec-WebSocket-Accept does not answer our key (a proxy that is not a WebSocket "
               "proxy?)";
    if (s_header(head, len, "Sec-WebSocket-Extensions", v, sizeof v) && v[0])
        return "the 101 response names a WebSocket extension rat-py did not offer";
    if (s_header(head, len, "Sec-WebSocket-Protocol", v, sizeof v) && v[0])
        return "the 101 response names a WebSocket subprotocol rat-py did not offer";
    return NULL;
}

/* The upgrade response's head is the first hdr_len bytes of self->in; what
 * follows it was read with it and belongs to the WebSocket stream. */
static void s_handshake_response(s_ws_t *self, size_t hdr_len)
{
    int status = 0;
    char line[64];
    size_t n = hdr_len < sizeof line - 1 ? hdr_len : sizeof line - 1;
    memcpy(line, self->in.data, n);
    line[n] = '\0';
    /* RFC 9112 4: "HTTP/1.x" SP three digits, then SP or the line's end;
     * anything else (a longer number, letters after the digits) is no
     * status at all, whatever it starts with. */
    if (strncmp(line, "HTTP/1.", 7) == 0 && isdigit((unsigned char)line[7]) && line[8] == ' ' &&
        isdigit((unsigned char)line[9]) && isdigit((unsigned char)line[10]) && isdigit((unsigned char)line[11]) &&
        (line[12] == ' ' || line[12] == '\r' || line[12] == '\n'))
        status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (status == 101) {
        const char *bad = s_upgrade_problem(self, self->in.data, hdr_len);
        if (bad) {
            s_drop(self, bad);
            return;
        }
        self->in_pos = hdr_len;
        s_opened(self);
        return;
    }
    const char *what = status == 404   ? "is gone from the gateway (deleted, culled by the gateway's idle culler, or "
                                         "the gateway restarted)"
                       : status == 401 ? "cannot be reached: the gateway refused the token (HTTP 401 Unauthorized)"
                       : status == 403 ? "cannot be reached: the gateway refused the token (HTTP 403 Forbidden)"
                                       : NULL;
    if (what) {
        s_gone(self, xasprintf("the kernel %s %s", self->kernel_id, what));
        return;
    }
    char why[64];
    snprintf(why, sizeof why, "the upgrade was answered with HTTP %d", status);
    s_drop(self, why);
}

static void s_on_io(loop_t *loop, void *ud, int revents)
{
    s_ws_t *self = ud;
    if (self->st == WS_CONNECTING) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(self->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            s_drop(self, strerror(soerr ? soerr : errno));
            return;
        }
        self->st = WS_HANDSHAKE;
    }
    if (self->st == WS_HANDSHAKE) {
        while (self->hs_sent < self->hs_out.len) {
            ssize_t r = s_io_send(self, self->hs_out.data + self->hs_sent, self->hs_out.len - self->hs_sent, false);
            if (r < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                    break;
                s_drop(self, strerror(errno));
                return;
            }
            self->hs_sent += (size_t)r;
        }
        while (self->hs_sent == self->hs_out.len) {
            char tmp[4096];
            ssize_t r = s_io_recv(self, tmp, sizeof tmp);
            if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                break;
            if (r <= 0) {
                s_drop(self, r == 0 ? "the server closed the connection during the upgrade" : strerror(errno));
                return;
            }
            /* The end of the head may straddle two reads: look from 3
             * bytes before the new ones. An offset, never a pointer kept
             * across a call that may move the buffer (a pointer into it
             * taken before a reallocation lost the frames read with the 101,
             * or handed wslay the middle of one). */
            size_t from = self->in.len > 3 ? self->in.len - 3 : 0;
            buf_append(&self->in, tmp, (size_t)r);
            const char *end = memmem(self->in.data + from, self->in.len - from, "\r\n\r\n", 4);
            /* The head must end within WS_MAX_RESPONSE bytes, however the
             * reads cut it (a head found in a long read is not let through
             * where one cut shorter would be refused). */
            if (end && (size_t)(end - self->in.data) + 4 <= WS_MAX_RESPONSE) {
                s_handshake_response(self, (size_t)(end - self->in.data) + 4);
                return;
            }
            if (end || self->in.len > WS_MAX_RESPONSE) {
                s_drop(self, "the upgrade response is too long");
                return;
            }
        }
        s_update_watch(self);
        return;
    }
    if (self->st == WS_OPEN)
        s_pump(self);
}

static void s_hs_timeout(loop_t *loop, void *ud)
{
    s_ws_t *self = ud;
    self->hs_timer = 0;
    s_drop(self, "no WebSocket upgrade within 10 s");
}

/* The upgrade request, into hs_out. No subprotocol is offered: the server
 * then speaks the JSON form every Jupyter Server knows. */
static void s_request(s_ws_t *self)
{
    unsigned char key[16];
    char key64[32];
    randombytes_buf(key, sizeof key);
    sodium_bin2base64(key64, sizeof key64, key, sizeof key, sodium_base64_VARIANT_ORIGINAL);
    s_accept_for(key64, self->accept);
    const char *host = gateway_host(self->gw);
    bool v6 = strchr(host, ':') != NULL;
    buf_printf(&self->hs_out,
               "GET %s/api/kernels/%s/channels?session_id=%s HTTP/1.1\r\n"
               "Host: %s%s%s:%d\r\n"
               "Upgrade: websocket\r\n"
               "Connection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n"
               "User-Agent: rat-py/" RAT_VERSION "\r\n",
               gateway_base(self->gw), self->kernel_id, self->session, v6 ? "[" : "", host, v6 ? "]" : "",
               gateway_port(self->gw), key64);
    if (gateway_token(self->gw))
        buf_printf(&self->hs_out, "Authorization: token %s\r\n", gateway_token(self->gw));
    buf_puts(&self->hs_out, "\r\n");
}

/* https: libcurl makes the TCP and TLS connection (verified as the REST
 * calls are: the system's CAs or --gateway-ca, unless --gateway-insecure)
 * and hands us its socket. This blocks the loop for the connect and the TLS
 * handshake, at most WS_HANDSHAKE_MS (milliseconds on a near gateway).
 * Returns 0, or -1 after s_drop. */
static int s_tls_connect(s_ws_t *self)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *e = gw_curl.easy_init();
    if (!e) {
        s_drop(self, "libcurl cannot make a connection");
        return -1;
    }
    char *url = xasprintf("%s/", gateway_url(self->gw));
    gw_curl.easy_setopt(e, CURLOPT_URL, url);
    free(url);
    gw_curl.easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    gw_curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    gw_curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    gw_curl.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)WS_HANDSHAKE_MS);
    gw_curl.easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    if (gateway_ca_file(self->gw))
        gw_curl.easy_setopt(e, CURLOPT_CAINFO, gateway_ca_file(self->gw));
    if (gateway_insecure(self->gw)) {
        gw_curl.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        gw_curl.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    CURLcode rc = gw_curl.easy_perform(e);
    curl_socket_t fd = CURL_SOCKET_BAD;
    if (rc == CURLE_OK)
        gw_curl.easy_getinfo(e, CURLINFO_ACTIVESOCKET, &fd);
    if (rc != CURLE_OK || fd == CURL_SOCKET_BAD) {
        char why[CURL_ERROR_SIZE + 64];
        snprintf(why, sizeof why, "TLS connection: %s", errbuf[0] ? errbuf : gw_curl.easy_strerror(rc));
        gw_curl.easy_cleanup(e);
        s_drop(self, why);
        return -1;
    }
    gw_curl.easy_setopt(e, CURLOPT_ERRORBUFFER, NULL); /* errbuf is about to go */
    self->tls = e;
    self->fd = fd;
    return 0;
}

/* One connection attempt. */
static void s_start(s_ws_t *self)
{
    if (self->st == WS_GONE)
        return;
    if (gateway_tls(self->gw)) {
        if (s_tls_connect(self) < 0)
            return;
        int one = 1;
        setsockopt(self->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s_request(self);
        self->st = WS_HANDSHAKE;
        self->watch = loop_watch_fd(self->loop, self->fd, ZMQ_POLLOUT, s_on_io, self);
        self->hs_timer = loop_timer(self->loop, WS_HANDSHAKE_MS, s_hs_timeout, self);
        return;
    }
    char port[16];
    snprintf(port, sizeof port, "%d", gateway_port(self->gw));
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    /* getaddrinfo blocks on DNS; a gateway is named once per attempt and
     * the resolver's own timeouts bound it. */
    int rc = getaddrinfo(gateway_host(self->gw), port, &hints, &ai);
    if (rc != 0 || !ai) {
        char why[256];
        snprintf(why, sizeof why, "cannot resolve %s: %s", gateway_host(self->gw), gai_strerror(rc));
        self->st = WS_IDLE;
        s_drop(self, why);
        return;
    }
    self->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int e = 0;
    if (self->fd < 0 || (connect(self->fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS))
        e = errno;
    freeaddrinfo(ai);
    if (e) {
        s_drop(self, strerror(e));
        return;
    }
    /* One small frame per request: Nagle with delayed ACKs would add 40 ms
     * to every round trip. */
    int one = 1;
    setsockopt(self->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s_request(self);
    self->st = WS_CONNECTING;
    self->watch = loop_watch_fd(self->loop, self->fd, ZMQ_POLLOUT, s_on_io, self);
    self->hs_timer = loop_timer(self->loop, WS_HANDSHAKE_MS, s_hs_timeout, self);
}

/* ------------------------------------------------------------ kernel_conn ops */

static int s_send(kernel_conn_t *base, kchan_t ch, const char *msg_type, const char *content, json_object *parent,
                  char id_out[WIRE_ID_LEN + 1])
{
    s_ws_t *self = (s_ws_t *)base;
    if (ch >= KCHAN_COUNT || ch == KCHAN_IOPUB || self->st == WS_GONE)
        return -1;
    const char *ptext = parent ? json_object_to_json_string_ext(parent, JSON_C_TO_STRING_PLAIN) : NULL;
    wire_encode(&self->out, &self->auth, self->session, msg_type, ptext, content);
    buf_reset(&self->msg);
    buf_puts(&self->msg, "{\"header\":");
    buf_append(&self->msg, wire_out_part(&self->out, 0), self->out.len[0]);
    buf_puts(&self->msg, ",\"parent_header\":");
    buf_append(&self->msg, wire_out_part(&self->out, 1), self->out.len[1]);
    buf_puts(&self->msg, ",\"metadata\":{},\"content\":");
    buf_append(&self->msg, wire_out_part(&self->out, 3), self->out.len[3]);
    buf_printf(&self->msg, ",\"buffers\":[],\"channel\":\"%s\"}", kernel_conn_channel_name(ch));
    if (self->st == WS_OPEN) {
        /* The same bounds as while disconnected, on what wslay holds for a
         * server that does not read. */
        size_t qn = gw_wslay.queued_count(self->ctx), qb = gw_wslay.queued_length(self->ctx);
        if (qn >= WS_QUEUE_MAX || self->msg.len > WS_QUEUE_MAX_BYTES - (qb < WS_QUEUE_MAX_BYTES ? qb : WS_QUEUE_MAX_BYTES)) {
            log_warn("%s: cannot send %s (%zu bytes): %zu messages (%zu bytes) are already waiting for the server "
                     "to read them (at most %d, %zu bytes)",
                     kernel_conn_channel_name(ch), msg_type, self->msg.len, qn, qb, WS_QUEUE_MAX, WS_QUEUE_MAX_BYTES);
            return -1;
        }
        if (s_queue_frame(self, self->msg.data, self->msg.len) < 0)
            return -1;
        /* Written from the loop: wslay_event_send may not run inside its
         * own callbacks, and this may be called from one (on_msg). */
        loop_watch_set(self->loop, self->watch, ZMQ_POLLIN | ZMQ_POLLOUT);
    } else {
        /* Over either bound: refused, never dropped later. The caller sees
         * -1 (an execute_request fails its run with "could not send the
         * code to the kernel"); what is queued stays queued. */
        if (self->nqueue >= WS_QUEUE_MAX) {
            log_warn("%s: cannot send %s: %d messages are already waiting for the connection",
                     kernel_conn_channel_name(ch), msg_type, WS_QUEUE_MAX);
            return -1;
        }
        if (self->msg.len > WS_QUEUE_MAX_BYTES - self->queue_bytes) {
            log_warn("%s: cannot send %s (%zu bytes): %zu bytes are already waiting for the connection (at most %zu)",
                     kernel_conn_channel_name(ch), msg_type, self->msg.len, self->queue_bytes, WS_QUEUE_MAX_BYTES);
            return -1;
        }
        self->queue = xrealloc(self->queue, (self->nqueue + 1) * sizeof *self->queue);
        self->queue[self->nqueue++] = xstrndup(self->msg.data, self->msg.len);
        self->queue_bytes += self->msg.len;
    }
    self->stats.sent++;
    log_debug("sent %s %s id=%.8s", kernel_conn_channel_name(ch), msg_type, self->out.msg_id);
    if (id_out)
        memcpy(id_out, self->out.msg_id, WIRE_ID_LEN + 1);
    return 0;
}

static void s_hb_tick(loop_t *loop, void *ud)
{
    s_ws_t *self = ud;
    self->hb_timer = 0;
    if (!self->hb_interval)
        return;
    int64_t now = loop_now_us();
    if (self->st == WS_OPEN) {
        /* Any byte received proves the link; a flood can hold a pong back. */
        int64_t silent = now - self->last_rx_us;
        if (self->hb_sent_us && silent > (int64_t)self->hb_tolerance * 1000 && self->hb_ok) {
            self->hb_ok = false;
            s_event(self, KCONN_HB_LOST);
        } else if (!self->hb_ok && silent < (int64_t)self->hb_tolerance * 1000) {
            self->hb_ok = true;
            s_event(self, KCONN_HB_OK);
        }
        if (self->st == WS_OPEN && silent > (int64_t)WS_SILENT_DROP_MS * 1000) {
            s_drop(self, "nothing received for 20 s");
        } else if (self->st == WS_OPEN && !self->hb_sent_us) {
            struct wslay_event_msg m = {.opcode = WSLAY_PING, .msg = (const uint8_t *)"rat", .msg_length = 3};
            if (gw_wslay.queue_msg(self->ctx, &m) == 0) {
                self->hb_sent_us = now;
                loop_watch_set(self->loop, self->watch, ZMQ_POLLIN | ZMQ_POLLOUT);
            }
        } else if (self->st == WS_OPEN && self->hb_sent_us && now - self->hb_sent_us > (int64_t)self->hb_tolerance * 1000) {
            self->hb_sent_us = 0; /* ping again */
        }
    }
    if (self->hb_interval)
        self->hb_timer = loop_timer(self->loop, self->hb_interval, s_hb_tick, self);
}

static void s_heartbeat(kernel_conn_t *base, int interval_ms, int tolerance_ms)
{
    s_ws_t *self = (s_ws_t *)base;
    loop_timer_cancel(self->loop, self->hb_timer);
    self->hb_timer = 0;
    self->hb_interval = interval_ms;
    self->hb_tolerance = tolerance_ms;
    if (interval_ms > 0)
        self->hb_timer = loop_timer(self->loop, interval_ms, s_hb_tick, self);
}

static void s_stats(const kernel_conn_t *base, kconn_stats_t *out)
{
    const s_ws_t *self = (const s_ws_t *)base;
    *out = self->stats;
    out->hb_ok = self->hb_ok;
    out->hb_rtt_us = self->hb_rtt_us;
}

static const char *s_error(const kernel_conn_t *base)
{
    return ((const s_ws_t *)base)->error;
}

static void s_destroy(kernel_conn_t *base)
{
    s_ws_t *self = (s_ws_t *)base;
    s_close_socket(self);
    loop_timer_cancel(self->loop, self->retry_timer);
    loop_timer_cancel(self->loop, self->hb_timer);
    for (size_t i = 0; i < self->nqueue; i++)
        free(self->queue[i]);
    free(self->queue);
    buf_free(&self->in);
    buf_free(&self->hs_out);
    buf_free(&self->msg);
    wire_out_free(&self->out);
    wire_auth_free(&self->auth);
    free(self->kernel_id);
    free(self->error);
    free(self);
}

static const kernel_conn_ops_t s_ops = {
    .send = s_send,
    .heartbeat = s_heartbeat,
    .stats = s_stats,
    .destroy = s_destroy,
    .error = s_error,
};

static void s_first(loop_t *loop, void *ud)
{
    s_ws_t *self = ud;
    self->retry_timer = 0;
    s_start(self);
}

kernel_conn_t *kernel_ws_new(loop_t *loop, gateway_t *gw, const char *kernel_id, kernel_conn_msg_fn *on_msg,
                             kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen)
{
    s_ws_t *self = xcalloc(1, sizeof *self);
    self->base.ops = &s_ops;
    self->base.on_msg = on_msg;
    self->base.on_event = on_event;
    self->base.ud = ud;
    self->loop = loop;
    self->gw = gw;
    self->kernel_id = xstrdup(kernel_id);
    self->fd = -1;
    self->hb_ok = true;
    self->hb_rtt_us = -1;
    self->retry_ms = WS_RETRY_FIRST_MS;
    wire_new_id(self->session);
    wire_auth_init(&self->auth, "", 0);
    wire_out_init(&self->out);
    buf_init(&self->in, 0);
    buf_init(&self->hs_out, 0);
    buf_init(&self->msg, 0);
    /* Connect from the loop: events never come from inside this call. */
    self->retry_timer = loop_timer(loop, 0, s_first, self);
    return &self->base;
}
