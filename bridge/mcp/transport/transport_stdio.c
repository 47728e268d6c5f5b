/* transport_stdio: MCP over newline-delimited JSON on stdin/stdout. */
#define LOG_MODULE "stdio"
#include "transport_stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "buf.h"
#include "jsonrpc.h"
#include "log.h"
#include "mem.h"

/* Past this much unwritten output, notifications are dropped. */
#define OUT_DROP_NOTIFY (4u << 20)
/* Past this much, we stop reading requests until the client catches up. */
#define OUT_PAUSE_READ (16u << 20)
/* Queue capacity kept once drained: most responses fit; a run's output
 * batches (up to 64 KiB of text, ~130 KiB as JSON) do not stay resident. */
#define OUT_KEEP_CAP (32u << 10)
/* After stdin's EOF, the longest we wait for calls in flight. A run's
 * `wait` is at most 3600 s, so an ordinary call has answered by then; what
 * is still in flight past it (a vscode-rat held call, whose default wait is
 * 86400 s, or a call on a stuck kernel) must not keep rat-py and its kernel
 * alive with nobody left to ask. Task rounds have no wait at all: they are
 * not waited for, EOF ends them (mcp_session_input_closed). */
#define EOF_DRAIN_MAX_MS ((3600 + 60) * 1000)

struct transport_stdio {
    loop_t *loop;                 /* borrowed */
    mcp_session_t *session;       /* owned */
    int in_fd, out_fd;
    int in_flags, out_flags;      /* original fcntl flags, restored on destroy */
    int in_watch, out_watch;
    buf_t in;                     /* partial line */
    bool discarding;              /* skipping the rest of an over-long line */
    buf_t out;                    /* queued output */
    size_t out_off;               /* bytes of `out` already written */
    bool eof;
    bool eof_told;                /* on_eof has run */
    uint64_t drained_timer;       /* pending s_on_drained, 0 if none */
    uint64_t drain_limit_timer;   /* EOF_DRAIN_MAX_MS after EOF */
    unsigned long dropped;
    transport_stdio_eof_fn *on_eof;
    void *ud;
};

static void s_update_watches(transport_stdio_t *self)
{
    size_t pending = self->out.len - self->out_off;
    loop_watch_set(self->loop, self->out_watch, pending ? ZMQ_POLLOUT : 0);
    loop_watch_set(self->loop, self->in_watch, (!self->eof && pending < OUT_PAUSE_READ) ? ZMQ_POLLIN : 0);
}

static void s_write_some(transport_stdio_t *self)
{
    while (self->out_off < self->out.len) {
        ssize_t n = write(self->out_fd, self->out.data + self->out_off, self->out.len - self->out_off);
        if (n > 0) {
            self->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        /* The reader is gone (EPIPE): nothing more can be delivered. */
        log_info("stdout closed: %s", n < 0 ? strerror(errno) : "short write");
        self->out_off = self->out.len;
        break;
    }
    if (self->out_off == self->out.len) {
        /* A slow reader or a streamed batch made the queue big: give the
         * memory back now it is drained (an idle rat-py stays small after
         * a flood). */
        buf_reset_shrink(&self->out, OUT_KEEP_CAP);
        self->out_off = 0;
    } else if (self->out_off > (1u << 20)) {
        buf_consume(&self->out, self->out_off);
        self->out_off = 0;
    }
}

static void s_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind)
{
    transport_stdio_t *self = transport;
    (void)origin;
    size_t pending = self->out.len - self->out_off;
    if (kind == MCP_MSG_NOTIFICATION && pending > OUT_DROP_NOTIFY) {
        if (self->dropped++ == 0)
            log_warn("client is not reading stdout; dropping notifications");
        return;
    }
    buf_append(&self->out, json, len);
    buf_putc(&self->out, '\n');
    /* Try right away: the common case is an idle pipe, and writing now saves a
     * poll round trip on every response. */
    s_write_some(self);
    s_update_watches(self);
}

static void s_on_writable(loop_t *loop, void *ud, int revents)
{
    transport_stdio_t *self = ud;
    s_write_some(self);
    s_update_watches(self);
}

static void s_handle_line(transport_stdio_t *self, const char *line, size_t len);
static void s_too_long(transport_stdio_t *self);

/* From the loop: stdin is closed; tell the owner once no call is in flight. */
static void s_on_drained(loop_t *loop, void *ud)
{
    transport_stdio_t *self = ud;
    self->drained_timer = 0;
    if (self->eof_told || mcp_session_calls(self->session) > 0)
        return;
    self->eof_told = true;
    if (self->on_eof)
        self->on_eof(self->ud);
}

/* EOF_DRAIN_MAX_MS after EOF: stop waiting for what is still in flight. */
static void s_on_drain_limit(loop_t *loop, void *ud)
{
    transport_stdio_t *self = ud;
    self->drain_limit_timer = 0;
    if (self->eof_told)
        return;
    log_warn("stdin closed %d s ago and %zu call(s) are still unanswered; shutting down", EOF_DRAIN_MAX_MS / 1000,
             mcp_session_calls(self->session));
    self->eof_told = true;
    if (self->on_eof)
        self->on_eof(self->ud);
}

/* mcp_session_on_idle: runs inside the last call's finisher, so the check
 * (and the owner's shutdown) is left to the loop. */
static void s_on_idle(mcp_session_t *session, void *ud)
{
    transport_stdio_t *self = ud;
    if (!self->drained_timer)
        self->drained_timer = loop_timer(self->loop, 0, s_on_drained, self);
}

/* EOF (or a read error) on stdin: what was received is still answered. Calls
 * in flight finish within their own bounds (a run's wait, at most
 * EOF_DRAIN_MAX_MS); a request to the client (elicitation) can no longer be
 * answered and fails now; tasks can no longer be asked about, so their
 * rounds end now (as "gone": the run is not interrupted, the kernel goes
 * with rat-py) and are not counted as in flight. */
static void s_input_ended(transport_stdio_t *self)
{
    self->eof = true;
    /* A last line without its newline is still a message (and an
     * over-long one still gets its error). */
    if (self->discarding)
        s_too_long(self);
    else if (self->in.len)
        s_handle_line(self, self->in.data, self->in.len);
    self->discarding = false;
    buf_reset(&self->in);
    s_update_watches(self);
    size_t n = mcp_session_calls(self->session);
    if (n)
        log_info("stdin closed: answering the %zu call%s in flight first", n, n == 1 ? "" : "s");
    mcp_session_on_idle(self->session, s_on_idle, self);
    mcp_session_input_closed(self->session);
    s_on_idle(self->session, self);
    self->drain_limit_timer = loop_timer(self->loop, EOF_DRAIN_MAX_MS, s_on_drain_limit, self);
}

static void s_handle_line(transport_stdio_t *self, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len)
        return; /* blank lines are not messages */
    mcp_session_handle(self->session, line + i, len - i, NULL);
}

static void s_too_long(transport_stdio_t *self)
{
    char msg[128];
    snprintf(msg, sizeof msg, "Invalid Request: message longer than %u bytes was discarded", TRANSPORT_STDIO_MAX_LINE);
    char *json = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST, msg, NULL);
    s_send(self, NULL, json, strlen(json), MCP_MSG_RESPONSE);
    free(json);
}

static void s_on_readable(loop_t *loop, void *ud, int revents)
{
    transport_stdio_t *self = ud;
    char chunk[65536];
    /* Bounded work per wake-up so kernel traffic is never starved. */
    for (int rounds = 0; rounds < 16 && !self->eof; rounds++) {
        ssize_t n = read(self->in_fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            if (n < 0)
                log_warn("stdin: %s", strerror(errno));
            s_input_ended(self);
            return;
        }
        size_t start = 0;
        for (size_t i = 0; i < (size_t)n; i++) {
            if (chunk[i] != '\n')
                continue;
            if (self->discarding) {
                self->discarding = false;
                s_too_long(self);
            } else if (self->in.len) {
                if (buf_append(&self->in, chunk + start, i - start) < 0) {
                    s_too_long(self);
                } else {
                    s_handle_line(self, self->in.data, self->in.len);
                }
                buf_reset(&self->in);
            } else {
                s_handle_line(self, chunk + start, i - start);
            }
            start = i + 1;
            if (self->eof || loop_stopping(self->loop))
                return;
        }
        if (start < (size_t)n && !self->discarding) {
            if (buf_append(&self->in, chunk + start, (size_t)n - start) < 0) {
                buf_free(&self->in);
                buf_init(&self->in, TRANSPORT_STDIO_MAX_LINE);
                self->discarding = true;
            }
        }
        if (self->out.len - self->out_off >= OUT_PAUSE_READ)
            break;
    }
    s_update_watches(self);
}

transport_stdio_t *transport_stdio_new(loop_t *loop, mcp_server_t *server, int in_fd, int out_fd,
                                       transport_stdio_eof_fn *on_eof, void *ud)
{
    transport_stdio_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->in_fd = in_fd;
    self->out_fd = out_fd;
    self->on_eof = on_eof;
    self->ud = ud;
    buf_init(&self->in, TRANSPORT_STDIO_MAX_LINE);
    buf_init(&self->out, 0); /* bounded by the drop/pause policy above */
    self->in_flags = fcntl(in_fd, F_GETFL);
    self->out_flags = fcntl(out_fd, F_GETFL);
    if (self->in_flags >= 0)
        fcntl(in_fd, F_SETFL, self->in_flags | O_NONBLOCK);
    if (self->out_flags >= 0)
        fcntl(out_fd, F_SETFL, self->out_flags | O_NONBLOCK);
    self->session = mcp_session_new(server, s_send, self);
    self->in_watch = loop_watch_fd(loop, in_fd, ZMQ_POLLIN, s_on_readable, self);
    self->out_watch = loop_watch_fd(loop, out_fd, 0, s_on_writable, self);
    return self;
}

void transport_stdio_flush(transport_stdio_t *self, int timeout_ms)
{
    int64_t deadline = loop_now_ms() + timeout_ms;
    s_write_some(self);
    while (self->out.len > self->out_off) {
        int64_t left = deadline - loop_now_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = self->out_fd, .events = POLLOUT};
        if (poll(&pfd, 1, (int)left) <= 0)
            break;
        if (pfd.revents & (POLLERR | POLLHUP))
            break;
        s_write_some(self);
    }
}

void transport_stdio_destroy(transport_stdio_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    transport_stdio_t *self = *self_p;
    mcp_session_destroy(&self->session);
    loop_timer_cancel(self->loop, self->drained_timer);
    loop_timer_cancel(self->loop, self->drain_limit_timer);
    loop_unwatch(self->loop, self->in_watch);
    loop_unwatch(self->loop, self->out_watch);
    if (self->in_flags >= 0)
        fcntl(self->in_fd, F_SETFL, self->in_flags);
    if (self->out_flags >= 0)
        fcntl(self->out_fd, F_SETFL, self->out_flags);
    buf_free(&self->in);
    buf_free(&self->out);
    free(self);
    *self_p = NULL;
}

