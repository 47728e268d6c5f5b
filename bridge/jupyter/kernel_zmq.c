/* kernel_zmq: kernel_conn over ZeroMQ. */
#define LOG_MODULE "zmq"
#include "kernel_zmq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <czmq.h>

#include "log.h"
#include "mem.h"
#include "zmqctx.h"

#define MAX_FRAMES 32              /* identities + delimiter + 5 + a few buffers */
#define DRAIN_BUDGET 256           /* messages read per wake-up per socket */

typedef struct s_zconn s_zconn_t;

typedef struct {
    s_zconn_t *conn;
    kchan_t ch;
    zsock_t *sock;
    int watch;
    zsock_t *mon;     /* PAIR receiving this socket's monitor events, or NULL */
    int mon_watch;
    bool up;          /* ZMTP handshake done: the kernel can route to us */
} s_chan_t;

struct s_zconn {
    kernel_conn_t base;            /* must be first */
    loop_t *loop;                  /* borrowed */
    s_chan_t chans[KCHAN_COUNT];
    zsock_t *hb;                   /* REQ socket */
    int hb_watch;
    char hb_ep[300];               /* its endpoint, to connect a new one (s_hb_redial) */
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

/* Reads what c's socket holds, DRAIN_BUDGET messages at most (the loop
 * calls again for the rest), into libzmq messages on the stack: the data is
 * not copied, and wire_decode reads it in place. A message of more than
 * MAX_FRAMES frames is read to its end and dropped, keeping no more than
 * MAX_FRAMES of it (zmsg_recv would first hold it all).
 *
 * The one place rat-py receives with libzmq (zmq_msg_recv on the zsock's
 * handle), not czmq: czmq's least costly form, zframe_recv, is zero-copy
 * too but allocates a zframe_t per frame (calloc, free) and asks
 * zsock_rcvmore: ~780 instructions a frame, 23 k of the 37.6 k more a
 * `x = 42` round trip took on czmq (its ~30 frames; 441 k against 403 k,
 * callgrind), and rat-py's CPU per round trip 448 µs against 413 µs
 * (scripts/bench --baseline-ref=main, interleaved, issue 29). */
static void s_recv_all(s_zconn_t *self, s_chan_t *c)
{
    void *sock = zsock_resolve(c->sock);
    for (int budget = 0; budget < DRAIN_BUDGET; budget++) {
        zmq_msg_t frames[MAX_FRAMES];
        size_t n = 0;
        bool overflow = false;
        for (;;) {
            zmq_msg_t extra;
            zmq_msg_t *f = n < MAX_FRAMES ? &frames[n] : &extra;
            zmq_msg_init(f);
            /* Only the first frame may be absent (EAGAIN: drained); the
             * rest of a multipart message arrives atomically with it. */
            if (zmq_msg_recv(f, sock, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(f);
                if (n == 0 && !overflow)
                    return;
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

/* Stops c's monitor, if it has one (see s_monitor). */
static void s_monitor_end(s_zconn_t *self, s_chan_t *c)
{
    if (!c->mon)
        return;
    loop_unwatch(self->loop, c->mon_watch);
    c->mon_watch = 0;
    zmq_socket_monitor(zsock_resolve(c->sock), NULL, 0);
    zsock_destroy(&c->mon);
}

/* Ends the monitors once all four handshakes are done: nothing reads their
 * events after the kernel is ready (kernel.c waits for KCONN_UP while
 * starting only; a restart makes a new connection), and each monitor is an
 * inproc PAIR with its pipes: ~125 KB of an idle rat-py's live heap for
 * three (massif); the fourth, iopub's, goes with them.
 * Safe inside a monitor's own callback: the loop skips an unwatched watch,
 * and no other code holds these sockets. */
static void s_monitors_end(s_zconn_t *self)
{
    for (int i = 0; i < KCHAN_COUNT; i++)
        s_monitor_end(self, &self->chans[i]);
}

/* A kernel's ROUTER silently drops messages for a peer whose handshake has
 * not finished, so an input_request sent to a stdin DEALER that is still
 * (re)connecting is lost and the kernel waits forever. The monitor tells us
 * when each socket's handshake is done; the kernel is not ready before.
 * iopub's SUB is watched too: a handshake that never comes is how kernel.c
 * (s_redial) learns that a socket met another process's socket of the wrong
 * type on the kernel's port, which libzmq never tries again. */
static void s_on_monitor(loop_t *loop, void *ud, int revents)
{
    s_chan_t *c = ud;
    s_zconn_t *self = c->conn;
    /* An event is [16-bit id, 32-bit value][address]; the id is all we
     * need. NULL: none left (the PAIR's receive timeout is 0). */
    zframe_t *ev;
    while ((ev = zframe_recv(c->mon))) {
        uint16_t id = 0;
        if (zframe_size(ev) >= sizeof id)
            memcpy(&id, zframe_data(ev), sizeof id);
        if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            c->up = true;
        else if (id == ZMQ_EVENT_DISCONNECTED)
            c->up = false;
        zframe_destroy(&ev);
        zsock_flush(c->mon); /* the address */
    }
    bool all = self->chans[KCHAN_SHELL].up && self->chans[KCHAN_CONTROL].up && self->chans[KCHAN_STDIN].up &&
               self->chans[KCHAN_IOPUB].up;
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
    zsock_t *s = self->chans[ch].sock;
    if (strcmp(msg_type, "shutdown_request") == 0) {
        /* The connection is closed right after (kernel_destroy does not wait
         * for a replaced R kernel): libzmq's I/O thread still delivers this
         * after the socket is closed, for at most this long, which the
         * context's end may then wait at exit. Everything else is dropped
         * at close (linger 0). */
        zsock_set_linger(s, 200);
    }
    /* One multipart message: delimiter, signature, header, parent header,
     * metadata, content. It fails at once (send timeout 0) rather than
     * block the loop when the kernel's queue is full. czmq builds a zmsg_t
     * of six zframe_t for it: ~7.7 k instructions a request more than six
     * zmq_send (callgrind), once per request, not per frame received. */
    const wire_out_t *o = &self->out;
    int rc = zsock_send(s, "ssbbbb", WIRE_DELIM, o->sig, (byte *)wire_out_part(o, 0), o->len[0],
                        (byte *)wire_out_part(o, 1), o->len[1], (byte *)wire_out_part(o, 2), o->len[2],
                        (byte *)wire_out_part(o, 3), o->len[3]);
    loop_watch_kick(self->loop, self->chans[ch].watch); /* a send can eat the recv signal */
    if (rc < 0) {
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
    zframe_t *pong;
    while ((pong = zframe_recv(self->hb))) {
        zframe_destroy(&pong);
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

static zsock_t *s_socket(int type, const char *identity);

/* A ping unanswered past the tolerance: the heartbeat socket is made again
 * before the next. A kernel that is merely slow or stopped answers the new
 * one as it would have the old; but a REQ that met another process's socket
 * of the wrong type on the port (before the kernel bound it: see
 * s_on_monitor) is never connected again by libzmq, and the kernel's
 * heartbeat would look lost for its whole life. */
static void s_hb_redial(s_zconn_t *self)
{
    loop_unwatch(self->loop, self->hb_watch);
    zsock_destroy(&self->hb);
    self->hb = s_socket(ZMQ_REQ, NULL);
    self->hb_watch = loop_watch_zsock(self->loop, self->hb, ZMQ_POLLIN, s_hb_readable, self);
    if (zsock_connect(self->hb, "%s", self->hb_ep) < 0)
        log_warn("heartbeat: cannot connect to %s: %s", self->hb_ep, zmq_strerror(errno));
    log_debug("heartbeat: no answer; connecting again");
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
        self->hb_sent_us = 0;
        s_hb_redial(self);
    }
    if (!self->hb_sent_us) {
        /* A ping that cannot be sent counts as unanswered: a REQ whose only
         * peer libzmq dropped for good (s_hb_redial) has no pipe to send
         * into, and would otherwise never be found silent. */
        if (zstr_send(self->hb, "ping") != 0)
            log_debug("heartbeat: cannot send a ping: %s", zmq_strerror(errno));
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
        s_monitor_end(self, c); /* before its socket, which it monitors */
        zsock_destroy(&c->sock);
    }
    loop_unwatch(self->loop, self->hb_watch);
    zsock_destroy(&self->hb);
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

/* A socket with our options, not connected yet (see s_connect_to).
 * zsock_new aborts when libzmq cannot make a socket, which happens only
 * when the process is out of descriptors: in HTTP mode, where clients hold
 * descriptors, server.c keeps the connection limit well under the
 * descriptor limit. */
static zsock_t *s_socket(int type, const char *identity)
{
    zsock_t *s = zsock_new(type);
    zsock_set_linger(s, 0);
    /* Never block the loop: a send or receive that cannot happen at once
     * fails with EAGAIN (zframe_recv returns NULL: drained). */
    zsock_set_sndtimeo(s, 0);
    zsock_set_rcvtimeo(s, 0);
    /* The kernel binds while we are already connecting: retry every 10 ms
     * (plus libzmq's jitter, up to another 10) and never back off. libzmq's
     * default is 100 ms; a backoff (we had one up to 500 ms) made half of all
     * cold starts wait up to that long after a kernel had bound its ports.
     * A refused loopback connect costs microseconds, so retrying five sockets
     * every 10 ms while a kernel is down is cheap. */
    zsock_set_reconnect_ivl(s, 10);
    zsock_set_reconnect_ivl_max(s, 0);
    zsock_set_maxmsgsize(s, 256 << 20);
    zsock_set_rcvhwm(s, 10000);
    if (identity)
        zsock_set_identity(s, identity);
    if (type == ZMQ_SUB)
        zsock_set_subscribe(s, "");
    if (type == ZMQ_REQ) {
        zsock_set_req_relaxed(s, 1);
        zsock_set_req_correlate(s, 1);
    }
    return s;
}

static int s_connect_to(zsock_t *s, const connfile_t *ci, int which, char *err, size_t errlen)
{
    char ep[300];
    connfile_endpoint(ci, which, ep, sizeof ep);
    if (zsock_connect(s, "%s", ep) < 0) {
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

/* A kernel's ROUTER silently drops messages for a peer whose handshake has
 * not finished (see s_on_monitor), so each socket but the heartbeat's is
 * monitored from before its connect (with a kernel already listening, as
 * when attaching, the handshake can finish at once, and a monitor started
 * after it would never report it: issue 14 item 3) until the four
 * handshakes are done
 * (s_monitors_end), a few milliseconds into a kernel's life.
 *
 * libzmq's zmq_socket_monitor, read through a czmq PAIR on the loop, not
 * czmq's zmonitor: that actor is a thread per socket, and one destroyed
 * just before the process exits (rat-py stopped while a kernel starts) has
 * not closed its pipe yet when czmq's atexit handler (zsys_shutdown) looks,
 * which then sleeps 200 ms: with zmonitor, EOF 0.3 s after start took
 * 530-750 ms to exit, against 320-500 ms (issue 29). */
static zsock_t *s_monitor(s_zconn_t *self, s_chan_t *c, char *err, size_t errlen)
{
    /* A name never used before in this process: the endpoint of a monitor
     * just stopped stays bound until libzmq's reaper closes its socket, and
     * a connection made again at once (s_redial, a port clash) may sit at
     * the same address as the one it replaces. */
    static unsigned long seq;
    char addr[96];
    snprintf(addr, sizeof addr, "inproc://rat-monitor-%lu-%d", ++seq, (int)c->ch);
    if (zmq_socket_monitor(zsock_resolve(c->sock), addr, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) < 0) {
        snprintf(err, errlen, "cannot monitor the %s socket: %s", kernel_conn_channel_name(c->ch), zmq_strerror(errno));
        return NULL;
    }
    zsock_t *mon = zsock_new(ZMQ_PAIR);
    zsock_set_rcvtimeo(mon, 0);
    if (zsock_connect(mon, "%s", addr) < 0) {
        snprintf(err, errlen, "cannot monitor the %s socket: %s", kernel_conn_channel_name(c->ch), zmq_strerror(errno));
        zmq_socket_monitor(zsock_resolve(c->sock), NULL, 0);
        zsock_destroy(&mon);
    }
    return mon;
}

kernel_conn_t *kernel_zmq_new(loop_t *loop, const connfile_t *ci, kernel_conn_msg_fn *on_msg,
                              kernel_conn_event_fn *on_event, void *ud, char *err, size_t errlen)
{
    zmqctx_init();
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
        c->sock = s_socket(types[i], types[i] == ZMQ_DEALER ? self->session : NULL);
        c->watch = loop_watch_zsock(loop, c->sock, ZMQ_POLLIN, s_on_readable, c);
        c->mon = s_monitor(self, c, err, errlen);
        if (!c->mon) {
            s_destroy(&self->base);
            return NULL;
        }
        c->mon_watch = loop_watch_zsock(loop, c->mon, ZMQ_POLLIN, s_on_monitor, c);
        if (s_connect_to(c->sock, ci, ports[i], err, errlen) < 0) {
            s_destroy(&self->base);
            return NULL;
        }
    }
    self->hb = s_socket(ZMQ_REQ, NULL);
    self->hb_watch = loop_watch_zsock(loop, self->hb, ZMQ_POLLIN, s_hb_readable, self);
    connfile_endpoint(ci, CONN_HB, self->hb_ep, sizeof self->hb_ep);
    if (s_connect_to(self->hb, ci, CONN_HB, err, errlen) < 0) {
        s_destroy(&self->base);
        return NULL;
    }
    return &self->base;
}
