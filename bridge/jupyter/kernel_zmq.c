/* kernel_zmq: kernel_conn over ZeroMQ. */
#define LOG_MODULE "zmq"
#include "kernel_zmq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "buf.h"
#include "log.h"
#include "mem.h"

#define MAX_FRAMES 32              /* identities + delimiter + 5 + a few buffers */
#define DRAIN_BUDGET 256           /* messages read per wake-up per socket */

typedef struct s_zconn s_zconn_t;

typedef struct {
    s_zconn_t *conn;
    kchan_t ch;
    void *sock;
    int watch;
    void *mon;        /* PAIR receiving this socket's monitor events, or NULL */
    int mon_watch;
    bool up;          /* ZMTP handshake done: the kernel can route to us */
} s_chan_t;

struct s_zconn {
    kernel_conn_t base;            /* must be first */
    loop_t *loop;                  /* borrowed */
    s_chan_t chans[KCHAN_COUNT];
    void *hb;                      /* REQ socket */
    int hb_watch;
    uint64_t hb_timer;
    int hb_interval, hb_tolerance; /* ms; 0 = off */
    int64_t hb_sent_us;            /* when the unanswered ping went out, 0 if none */
    bool hb_ok;
    long hb_rtt_us;
    char session[WIRE_ID_LEN + 1]; /* our session id, also the DEALER routing id */
    wire_auth_t auth;
    wire_replay_t *replay;
    wire_out_t out;                /* reused for every outgoing message */
    bool all_up;                   /* KCONN_UP was reported */
    kconn_stats_t stats;
};

const char *kernel_conn_channel_name(kchan_t ch)
{
    static const char *names[] = {"shell", "control", "stdin", "iopub"};
    return ch < KCHAN_COUNT ? names[ch] : "?";
}

static void s_recv_all(s_zconn_t *self, s_chan_t *c)
{
    for (int budget = 0; budget < DRAIN_BUDGET; budget++) {
        zmq_msg_t frames[MAX_FRAMES];
        size_t n = 0;
        bool overflow = false;
        for (;;) {
            zmq_msg_t extra;
            zmq_msg_t *f = n < MAX_FRAMES ? &frames[n] : &extra;
            zmq_msg_init(f);
            /* Only the first frame may be absent; the rest of a multipart
             * message arrives atomically with it. */
            if (zmq_msg_recv(f, c->sock, (n == 0 && !overflow) ? ZMQ_DONTWAIT : 0) < 0) {
                zmq_msg_close(f);
                if (n == 0 && !overflow)
                    return; /* EAGAIN: drained */
                overflow = true;
                break;
            }
            int more = zmq_msg_more(f);
            if (f == &extra) {
                zmq_msg_close(&extra);
                overflow = true;
            } else {
                n++;
            }
            if (!more)
                break;
        }
        if (overflow) {
            self->stats.dropped++;
            log_warn("%s: dropped a message with too many frames", kernel_conn_channel_name(c->ch));
        } else {
            const void *ptrs[MAX_FRAMES];
            size_t lens[MAX_FRAMES];
            for (size_t i = 0; i < n; i++) {
                ptrs[i] = zmq_msg_data(&frames[i]);
                lens[i] = zmq_msg_size(&frames[i]);
            }
            wire_msg_t m;
            wire_err_t e = wire_decode(&self->auth, self->replay, ptrs, lens, n, &m);
            if (e != WIRE_OK) {
                self->stats.dropped++;
                if (e == WIRE_ERR_SIGNATURE || e == WIRE_ERR_UNSIGNED)
                    self->stats.bad_sig++;
                if (e == WIRE_ERR_REPLAY)
                    self->stats.replayed++;
                log_warn("%s: dropped a message: %s", kernel_conn_channel_name(c->ch), wire_strerror(e));
            } else {
                self->stats.received++;
                log_debug("recv %s %s parent=%.8s", kernel_conn_channel_name(c->ch), m.msg_type,
                          m.parent_id ? m.parent_id : "-");
                self->base.on_msg(self->base.ud, c->ch, &m);
                wire_msg_free(&m);
            }
        }
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&frames[i]);
        /* We go on using self and c after on_msg: owners never destroy a
         * connection from inside its handlers (kernel_conn.h); kernel.c
         * frees a kernel destroyed there, and this connection, from the
         * loop. */
    }
}

static void s_on_readable(loop_t *loop, void *ud, int revents)
{
    s_chan_t *c = ud;
    s_recv_all(c->conn, c);
}

/* Ends the monitors once all three handshakes are done: nothing reads their
 * events after the kernel is ready (kernel.c waits for KCONN_UP while
 * starting only; a restart makes a new connection), and each monitor is an
 * inproc PAIR with its pipes: ~125 KB of an idle rat-py's live heap for
 * the three (massif).
 * Safe inside a monitor's own callback: the loop skips an unwatched watch,
 * and no other code holds these sockets. */
static void s_monitors_end(s_zconn_t *self)
{
    for (int i = 0; i < KCHAN_COUNT; i++) {
        s_chan_t *c = &self->chans[i];
        if (!c->mon)
            continue;
        loop_unwatch(self->loop, c->mon_watch);
        c->mon_watch = 0;
        zmq_socket_monitor(c->sock, NULL, 0);
        zmq_close(c->mon);
        c->mon = NULL;
    }
}

/* A kernel's ROUTER silently drops messages for a peer whose handshake has
 * not finished, so an input_request sent to a stdin DEALER that is still
 * (re)connecting is lost and the kernel waits forever. The monitor tells us
 * when each DEALER's handshake is done; the kernel is not ready before. */
static void s_on_monitor(loop_t *loop, void *ud, int revents)
{
    s_chan_t *c = ud;
    s_zconn_t *self = c->conn;
    for (;;) {
        zmq_msg_t ev, addr;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            break;
        }
        uint16_t id = 0;
        if (zmq_msg_size(&ev) >= 2)
            memcpy(&id, zmq_msg_data(&ev), sizeof id);
        bool more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) {
            zmq_msg_init(&addr);
            zmq_msg_recv(&addr, c->mon, 0);
            zmq_msg_close(&addr);
        }
        if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            c->up = true;
        else if (id == ZMQ_EVENT_DISCONNECTED)
            c->up = false;
    }
    bool all = self->chans[KCHAN_SHELL].up && self->chans[KCHAN_CONTROL].up && self->chans[KCHAN_STDIN].up;
    if (all && !self->all_up) {
        self->all_up = true;
        s_monitors_end(self);
        if (self->base.on_event)
            self->base.on_event(self->base.ud, KCONN_UP);
    }
}

static int s_send(kernel_conn_t *base, kchan_t ch, const char *msg_type, const char *content, json_object *parent,
                  char id_out[WIRE_ID_LEN + 1])
{
    s_zconn_t *self = (s_zconn_t *)base;
    if (ch >= KCHAN_COUNT || ch == KCHAN_IOPUB)
        return -1;
    const char *ptext = parent ? json_object_to_json_string_ext(parent, JSON_C_TO_STRING_PLAIN) : NULL;
    wire_encode(&self->out, &self->auth, self->session, msg_type, ptext, content);
    const char *id = self->out.msg_id;
    void *s = self->chans[ch].sock;
    if (strcmp(msg_type, "shutdown_request") == 0) {
        /* The connection is closed right after (kernel_destroy does not wait
         * for a replaced R kernel): libzmq's I/O thread still delivers this
         * after zmq_close, for at most this long, which zmq_ctx_term may then
         * wait at exit. Everything else is dropped at close (linger 0). */
        int linger = 200;
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    }
    int rc = 0;
    rc |= zmq_send(s, WIRE_DELIM, sizeof WIRE_DELIM - 1, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0;
    rc |= zmq_send(s, self->out.sig, strlen(self->out.sig), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0;
    for (int i = 0; i < 4 && !rc; i++)
        rc |= zmq_send(s, wire_out_part(&self->out, i), self->out.len[i], (i < 3 ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0;
    loop_watch_kick(self->loop, self->chans[ch].watch); /* a send can eat the recv signal */
    if (rc) {
        log_warn("%s: cannot send %s: %s", kernel_conn_channel_name(ch), msg_type, zmq_strerror(errno));
        return -1;
    }
    self->stats.sent++;
    log_debug("sent %s %s id=%.8s", kernel_conn_channel_name(ch), msg_type, id);
    if (id_out)
        memcpy(id_out, id, WIRE_ID_LEN + 1);
    return 0;
}

static void s_hb_readable(loop_t *loop, void *ud, int revents)
{
    s_zconn_t *self = ud;
    char buf[64];
    while (zmq_recv(self->hb, buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
        if (self->hb_sent_us) {
            self->hb_rtt_us = (long)(loop_now_us() - self->hb_sent_us);
            self->hb_sent_us = 0;
        }
        if (!self->hb_ok) {
            self->hb_ok = true;
            if (self->base.on_event)
                self->base.on_event(self->base.ud, KCONN_HB_OK);
        }
    }
}

static void s_hb_tick(loop_t *loop, void *ud)
{
    s_zconn_t *self = ud;
    self->hb_timer = 0;
    if (!self->hb_interval)
        return;
    int64_t now = loop_now_us();
    if (self->hb_sent_us && now - self->hb_sent_us > (int64_t)self->hb_tolerance * 1000) {
        if (self->hb_ok) {
            self->hb_ok = false;
            if (self->base.on_event)
                self->base.on_event(self->base.ud, KCONN_HB_LOST);
        }
        self->hb_sent_us = 0; /* REQ_RELAXED lets us ping again */
    }
    if (!self->hb_sent_us) {
        if (zmq_send(self->hb, "ping", 4, ZMQ_DONTWAIT) == 4)
            self->hb_sent_us = now;
        loop_watch_kick(self->loop, self->hb_watch);
    }
    self->hb_timer = loop_timer(self->loop, self->hb_interval, s_hb_tick, self);
}

static void s_heartbeat(kernel_conn_t *base, int interval_ms, int tolerance_ms)
{
    s_zconn_t *self = (s_zconn_t *)base;
    loop_timer_cancel(self->loop, self->hb_timer);
    self->hb_timer = 0;
    self->hb_interval = interval_ms;
    self->hb_tolerance = tolerance_ms;
    if (interval_ms > 0)
        self->hb_timer = loop_timer(self->loop, 0, s_hb_tick, self);
}

static void s_stats(const kernel_conn_t *base, kconn_stats_t *out)
{
    const s_zconn_t *self = (const s_zconn_t *)base;
    *out = self->stats;
    out->hb_ok = self->hb_ok;
    out->hb_rtt_us = self->hb_rtt_us;
}

static void s_destroy(kernel_conn_t *base)
{
    s_zconn_t *self = (s_zconn_t *)base;
    loop_timer_cancel(self->loop, self->hb_timer);
    for (int i = 0; i < KCHAN_COUNT; i++) {
        s_chan_t *c = &self->chans[i];
        loop_unwatch(self->loop, c->watch);
        loop_unwatch(self->loop, c->mon_watch);
        if (c->sock) {
            zmq_socket_monitor(c->sock, NULL, 0);
            zmq_close(c->sock);
        }
        if (c->mon)
            zmq_close(c->mon);
    }
    loop_unwatch(self->loop, self->hb_watch);
    if (self->hb)
        zmq_close(self->hb);
    wire_auth_free(&self->auth);
    wire_replay_destroy(&self->replay);
    wire_out_free(&self->out);
    free(self);
}

static const kernel_conn_ops_t s_ops = {
    .send = s_send,
    .heartbeat = s_heartbeat,
    .stats = s_stats,
    .destroy = s_destroy,
};

int kernel_zmq_test_connect_delay_ms;

/* A socket with our options, not connected yet (see s_connect_to). */
static void *s_socket(void *zctx, int type, const char *identity, char *err, size_t errlen)
{
    void *s = zmq_socket(zctx, type);
    if (!s) {
        snprintf(err, errlen, "zmq_socket: %s", zmq_strerror(errno));
        return NULL;
    }
    int zero = 0, hwm = 10000, ivl = 10, ivl_max = 0;
    int64_t maxmsg = 256LL << 20;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    /* The kernel binds while we are already connecting: retry every 10 ms
     * (plus libzmq's jitter, up to another 10) and never back off. libzmq's
     * default is 100 ms; a backoff (we had one up to 500 ms) made half of all
     * cold starts wait up to that long after a kernel had bound its ports.
     * A refused loopback connect costs microseconds, so retrying five sockets
     * every 10 ms while a kernel is down is cheap. */
    zmq_setsockopt(s, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(s, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (identity)
        zmq_setsockopt(s, ZMQ_ROUTING_ID, identity, strlen(identity));
    if (type == ZMQ_SUB)
        zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
    if (type == ZMQ_REQ) {
        int one = 1;
        zmq_setsockopt(s, ZMQ_REQ_RELAXED, &one, sizeof one);
        zmq_setsockopt(s, ZMQ_REQ_CORRELATE, &one, sizeof one);
    }
    return s;
}

static int s_connect_to(void *s, const connfile_t *ci, int which, char *err, size_t errlen)
{
    char ep[300];
    connfile_endpoint(ci, which, ep, sizeof ep);
    if (zmq_connect(s, ep) < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", ep, zmq_strerror(errno));
        return -1;
    }
    if (kernel_zmq_test_connect_delay_ms > 0) {
        struct timespec ts = {.tv_sec = kernel_zmq_test_connect_delay_ms / 1000,
                              .tv_nsec = (long)(kernel_zmq_test_connect_delay_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

kernel_conn_t *kernel_zmq_new(loop_t *loop, void *zctx, const connfile_t *ci, kernel_conn_msg_fn *on_msg,
                              kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen)
{
    s_zconn_t *self = xcalloc(1, sizeof *self);
    self->base.ops = &s_ops;
    self->base.on_msg = on_msg;
    self->base.on_event = on_event;
    self->base.ud = ud;
    self->loop = loop;
    self->hb_ok = true;
    self->hb_rtt_us = -1;
    wire_new_id(self->session);
    wire_auth_init(&self->auth, ci->key, strlen(ci->key));
    self->replay = wire_replay_new();
    wire_out_init(&self->out);
    static const int types[KCHAN_COUNT] = {ZMQ_DEALER, ZMQ_DEALER, ZMQ_DEALER, ZMQ_SUB};
    static const int ports[KCHAN_COUNT] = {CONN_SHELL, CONN_CONTROL, CONN_STDIN, CONN_IOPUB};
    /* iopub first: its subscription takes a moment to reach the kernel. */
    static const kchan_t order[KCHAN_COUNT] = {KCHAN_IOPUB, KCHAN_SHELL, KCHAN_CONTROL, KCHAN_STDIN};
    for (int k = 0; k < KCHAN_COUNT; k++) {
        kchan_t i = order[k];
        s_chan_t *c = &self->chans[i];
        c->conn = self;
        c->ch = i;
        c->sock = s_socket(zctx, types[i], types[i] == ZMQ_DEALER ? self->session : NULL, err, errlen);
        if (!c->sock) {
            s_destroy(&self->base);
            return NULL;
        }
        c->watch = loop_watch_zsock(loop, c->sock, ZMQ_POLLIN, s_on_readable, c);
        /* The monitor before the connect: with a kernel already listening
         * (attaching) the handshake can finish at once, and a monitor
         * started after it would never report it (issue 14 item 3). */
        if (types[i] == ZMQ_DEALER) {
            char addr[96];
            snprintf(addr, sizeof addr, "inproc://rat-monitor-%p-%d", (void *)self, (int)i);
            c->mon = zmq_socket(zctx, ZMQ_PAIR);
            if (!c->mon || zmq_socket_monitor(c->sock, addr, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) < 0 ||
                zmq_connect(c->mon, addr) < 0) {
                snprintf(err, errlen, "cannot monitor the %s socket: %s", kernel_conn_channel_name(i),
                         zmq_strerror(errno));
                s_destroy(&self->base);
                return NULL;
            }
            c->mon_watch = loop_watch_zsock(loop, c->mon, ZMQ_POLLIN, s_on_monitor, c);
        }
        if (s_connect_to(c->sock, ci, ports[i], err, errlen) < 0) {
            s_destroy(&self->base);
            return NULL;
        }
    }
    self->hb = s_socket(zctx, ZMQ_REQ, NULL, err, errlen);
    if (!self->hb || s_connect_to(self->hb, ci, CONN_HB, err, errlen) < 0) {
        s_destroy(&self->base);
        return NULL;
    }
    self->hb_watch = loop_watch_zsock(loop, self->hb, ZMQ_POLLIN, s_hb_readable, self);
    return &self->base;
}
