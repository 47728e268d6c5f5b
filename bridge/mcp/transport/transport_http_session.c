/* transport_http_session: MCP sessions over HTTP (creation, lookup, expiry,
 * end) and the SSE streams that carry their messages (one per POST, one GET
 * stream per session), with keep-alives and back-pressure. */
#define LOG_MODULE "http"
#include "transport_http_internal.h"

#include <stdint.h>
#include <sys/mman.h>

static void s_stream_event(http_stream_t *s, rcbytes_t *json, bool droppable);
static void s_mcp_send_shared(void *transport, rcbytes_t *msg);
static ssize_t s_stream_read(void *cls, uint64_t pos, char *buf, size_t max);
static void s_mcp_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind);
static bool s_session_idle(const http_session_t *sess);

http_stream_t *http_stream_new(transport_http_t *self, http_session_t *sess, struct MHD_Connection *c, bool is_get)
{
    http_stream_t *s = xcalloc(1, sizeof *s);
    s->t = self;
    s->sess = sess;
    s->conn = c;
    s->is_get = is_get;
    s->last_write_ms = loop_now_ms();
    /* Before the first read MHD zeroed the unused half of the pool it had
     * lent to reading the request: those pages are resident, and can go
     * at once. */
    s->scratch_dirty = true;
    s->dirty_ms = s->last_write_ms - RELEASE_QUIET_MS;
    s->out = outq_new(self->unsent);
    buf_init(&s->final_json, 0);
    s->next = self->streams;
    self->streams = s;
    return s;
}

void http_stream_free(http_stream_t *s)
{
    transport_http_t *self = s->t;
    for (http_stream_t **pp = &self->streams; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    if (s->sess) {
        if (s->sess->get == s)
            s->sess->get = NULL;
        else if (!s->done)
            mcp_session_forget_origin(s->sess->mcp, s);
    }
    /* A GET stream is long-lived: when it ends, its queue and (once MHD
     * has closed the connection) its connection's pool go back to the
     * heap, whose pages stay resident until trimmed: a burst's end like any
     * other (100 stalled watchers hanging up left 3.6 MB). */
    if (s->is_get && s->attached)
        heaptrim_soon(self->loop);
    outq_destroy(&s->out);
    buf_free(&s->final_json);
    free(s);
}

void http_stream_wake(http_stream_t *s)
{
    if (s->attached && s->suspended) {
        s->suspended = false;
        MHD_resume_connection(s->conn);
        http_schedule_run(s->t);
    }
}

/* Queues one SSE event around json (a reference is taken: the bytes may be
 * shared with other sessions' streams). droppable: a notification, which
 * the transport's budget may drop while the stream is among the slowest. */
static void s_stream_event(http_stream_t *s, rcbytes_t *json, bool droppable)
{
    http_session_t *sess = s->sess;
    unsigned long id = sess ? ++sess->event_id : 0;
    char head[OUTQ_FRAME_MAX - 2];
    int n = snprintf(head, sizeof head, "event: message\nid: %lu\ndata: ", id);
    outq_push(s->out, head, (size_t)n, json, "\n\n", 2, droppable);
    if (outq_unsent(s->out) > s->out_peak)
        s->out_peak = outq_unsent(s->out);
    s->last_write_ms = loop_now_ms();
}

/* The same for a message of this stream only: its bytes are copied once. */
static void s_stream_event_copy(http_stream_t *s, const char *json, size_t len, bool droppable)
{
    rcbytes_t *b = rcbytes_new(json, len);
    s_stream_event(s, b, droppable);
    rcbytes_unref(&b);
}

/* [*lo, *hi): the whole pages inside buf[0..max) (empty when *hi <= *lo). */
static void s_whole_pages(const char *buf, size_t max, uintptr_t *lo, uintptr_t *hi)
{
    static uintptr_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (uintptr_t)p : 4096;
    }
    *lo = ((uintptr_t)buf + page - 1) & ~(page - 1);
    *hi = ((uintptr_t)buf + max) & ~(page - 1);
}

/* An idle stream's connection keeps a 32 KiB memory pool (the request
 * header bound, doc/security.md). libmicrohttpd zeroes the half it lent to
 * reading the request once the request is in, and later fills the rest as
 * the SSE write buffer; pools of 32 KiB or less come from malloc, so a new
 * connection's pool is often heap another connection already dirtied (and
 * a kept-alive connection's next request zeroes all of its pool). An
 * idle GET stream thus held about 32 KiB of resident memory for a few
 * hundred bytes of request (issue 34). buf[0..max) is the free part of that
 * write buffer, lent to us to fill (the content reader's contract: only the
 * bytes we return are sent), so its whole pages can go back to the kernel
 * (MADV_DONTNEED: they read as zeros, are faulted in again when written).
 * Only once no data has reached those pages for RELEASE_QUIET_MS: a
 * stream that drains and refills many times a second (a fan-out) would
 * otherwise pay a syscall and a page fault per page each time (measured:
 * 25 % more CPU for 200 watchers during a run). http_keepalive wakes a
 * stream that is still dirty once it has been quiet that long, and MHD
 * calls s_stream_read again, which releases. */
static void s_stream_release(http_stream_t *s, char *buf, size_t max)
{
    if (!s->scratch_dirty || loop_now_ms() - s->dirty_ms < RELEASE_QUIET_MS)
        return;
    uintptr_t lo, hi;
    s_whole_pages(buf, max, &lo, &hi);
    if (hi > lo && madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        log_debug("madvise(MADV_DONTNEED) of an idle stream's write buffer: %s", strerror(errno));
    else if (hi > lo) /* tests/integration/http.test.mjs checks the stream stays byte-exact across this */
        log_debug("idle stream: %zu KiB of its write buffer given back", (size_t)(hi - lo) >> 10);
    s->scratch_dirty = false;
}

/* MHD pulls SSE bytes here. No data yet: suspend until http_stream_wake. */
static ssize_t s_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_stream_t *s = cls;
    size_t n = outq_read(s->out, buf, max);
    if (n) {
        /* A write within buf's first page (a keep-alive, a small event)
         * dirties no page a release could give back. */
        uintptr_t lo, hi;
        s_whole_pages(buf, max, &lo, &hi);
        if ((uintptr_t)buf + n > lo && hi > lo) {
            s->scratch_dirty = true;
            s->dirty_ms = loop_now_ms();
        }
        if (!outq_unsent(s->out)) {
            /* Drained after a burst (a slow reader caught up, a fan-out
             * went out): what it held is free now; give it back. */
            if (s->out_peak >= TRIM_AFTER_BYTES)
                heaptrim_soon(s->t->loop);
            s->out_peak = 0;
        }
        return (ssize_t)n;
    }
    if (s->done)
        return MHD_CONTENT_READER_END_OF_STREAM;
    s_stream_release(s, buf, max);
    s->suspended = true;
    MHD_suspend_connection(s->conn);
    return 0;
}

enum MHD_Result http_attach_sse(transport_http_t *self, http_stream_t *s, const char *session_id)
{
    /* The block size is a buffer libmicrohttpd allocates (and fills) per
     * response, used only when it cannot send chunked (an HTTP/1.0
     * client): chunked SSE is read straight into the connection's own
     * buffer (up to its 32 KiB pool). 16 KiB here cost every open stream
     * 12 KB more RSS, for no fewer or larger writes (issue 34); the 4 KiB
     * are still about 3.5 KB of an idle stream's 10-11 KB. */
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, s_stream_read, s, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    if (session_id)
        MHD_add_response_header(r, "Mcp-Session-Id", session_id);
    s->attached = true;
    return http_queue(self, s->conn, MHD_HTTP_OK, r);
}

/* The per-session bound (kept besides the transport's total budget): a
 * client that does not read gets no more notifications once its stream
 * holds STREAM_DROP_NOTIFY unsent bytes. */
static bool s_over_own_bound(http_session_t *sess, http_stream_t *s)
{
    if (outq_unsent(s->out) <= STREAM_DROP_NOTIFY)
        return false;
    if (s->dropped++ == 0)
        log_warn("session %.8s: client is not reading; dropping notifications", sess->id);
    return true;
}

/* mcp_send_fn: the MCP layer delivers a message for a session. */
static void s_mcp_send(void *transport, void *origin, const char *json, size_t len, mcp_msg_kind_t kind)
{
    bool final = kind == MCP_MSG_RESPONSE;
    http_session_t *sess = transport;
    http_stream_t *s = origin ? origin : sess->get;
    if (!s && kind == MCP_MSG_REQUEST) {
        /* Its answer is awaited: it waits for the GET stream. */
        if (sess->nbacklog >= BACKLOG_MAX || sess->backlog.len + len + 1 > BACKLOG_BYTES) {
            log_warn("session %.8s: too many server requests wait for a GET stream; one dropped", sess->id);
            return;
        }
        buf_append(&sess->backlog, json, len);
        buf_putc(&sess->backlog, '\0');
        sess->nbacklog++;
        return;
    }
    if (!s || s->done) {
        log_debug("session %.8s: no stream for a server message; dropped", sess->id);
        return;
    }
    if (kind == MCP_MSG_NOTIFICATION && s_over_own_bound(sess, s))
        return;
    if (final && !s->is_get) {
        if (!s->attached)
            buf_append(&s->final_json, json, len);
        s->done = true;
    } else {
        s->had_other = true;
    }
    s_stream_event_copy(s, json, len, kind == MCP_MSG_NOTIFICATION);
    http_stream_wake(s);
}

/* mcp_send_shared_fn: a notification whose bytes other sessions share
 * (rat/event): it goes on the GET stream as a reference, not a copy. */
static void s_mcp_send_shared(void *transport, rcbytes_t *msg)
{
    http_session_t *sess = transport;
    http_stream_t *s = sess->get;
    if (!s || s->done || s_over_own_bound(sess, s))
        return;
    s->had_other = true;
    s_stream_event(s, msg, true);
    http_stream_wake(s);
}

void http_session_flush_backlog(http_session_t *sess)
{
    http_stream_t *s = sess->get;
    if (!s || !sess->nbacklog)
        return;
    for (size_t at = 0; at < sess->backlog.len;) {
        size_t n = strlen(sess->backlog.data + at);
        s_stream_event_copy(s, sess->backlog.data + at, n, false);
        at += n + 1;
    }
    buf_free(&sess->backlog);
    buf_init(&sess->backlog, 0);
    sess->nbacklog = 0;
    http_stream_wake(s);
}

http_session_t *http_session_find(transport_http_t *self, const char *id)
{
    for (http_session_t *s = self->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

void http_session_end(transport_http_t *self, http_session_t *sess)
{
    for (http_session_t **pp = &self->sessions; *pp; pp = &(*pp)->next) {
        if (*pp == sess) {
            *pp = sess->next;
            self->nsessions--;
            break;
        }
    }
    /* Streams of this session end; in-flight calls are cancelled as "gone"
     * by mcp_session_destroy (runs keep going; ctl wait can collect them). */
    for (http_stream_t *s = self->streams; s; s = s->next) {
        if (s->sess == sess) {
            s->sess = NULL;
            s->done = true;
            http_stream_wake(s);
        }
    }
    mcp_session_destroy(&sess->mcp);
    log_info("session %.8s ended", sess->id);
    buf_free(&sess->backlog);
    free(sess);
}

static bool s_session_idle(const http_session_t *sess)
{
    if (mcp_session_calls(sess->mcp) || sess->get)
        return false;
    for (http_stream_t *s = sess->t->streams; s; s = s->next)
        if (s->sess == sess)
            return false;
    return true;
}

http_session_t *http_session_new(transport_http_t *self)
{
    if (self->nsessions >= self->max_sessions) {
        /* Evict the least recently used idle session. */
        http_session_t *oldest = NULL;
        for (http_session_t *s = self->sessions; s; s = s->next)
            if (s_session_idle(s) && (!oldest || s->last_used_ms < oldest->last_used_ms))
                oldest = s;
        if (!oldest)
            return NULL;
        log_info("session table full: evicting idle session %.8s", oldest->id);
        http_session_end(self, oldest);
    }
    http_session_t *sess = xcalloc(1, sizeof *sess);
    sess->t = self;
    unsigned char raw[SESSION_ID_HEX / 2];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(sess->id, sizeof sess->id, raw, sizeof raw);
    buf_init(&sess->backlog, 0);
    sess->mcp = mcp_session_new(self->server, s_mcp_send, sess);
    mcp_session_set_send_shared(sess->mcp, s_mcp_send_shared);
    sess->last_used_ms = loop_now_ms();
    sess->next = self->sessions;
    self->sessions = sess;
    self->nsessions++;
    return sess;
}

/* The session that serves modern requests: it never expires, is counted
 * nowhere and has no GET stream; its calls' messages go on their POST's
 * stream only. Ended with http_session_end at destroy. */
http_session_t *http_session_new_stateless(transport_http_t *self)
{
    http_session_t *sess = xcalloc(1, sizeof *sess);
    sess->t = self;
    snprintf(sess->id, sizeof sess->id, "stateless");
    buf_init(&sess->backlog, 0);
    sess->mcp = mcp_session_new(self->server, s_mcp_send, sess);
    mcp_session_set_send_shared(sess->mcp, s_mcp_send_shared);
    mcp_session_set_stateless(sess->mcp);
    sess->last_used_ms = loop_now_ms();
    return sess;
}

void http_sweep(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->sweep_timer = loop_timer(loop, SWEEP_MS, http_sweep, self);
    int64_t now = loop_now_ms();
    http_session_t *s = self->sessions;
    while (s) {
        http_session_t *next = s->next;
        if (s_session_idle(s) && now - s->last_used_ms > (int64_t)self->session_idle_s * 1000) {
            log_info("session %.8s expired after %d s idle", s->id, self->session_idle_s);
            http_session_end(self, s);
        }
        s = next;
    }
}

void http_keepalive(loop_t *loop, void *ud)
{
    transport_http_t *self = ud;
    self->keepalive_timer = loop_timer(loop, CALL_KEEPALIVE_MS, http_keepalive, self);
    int64_t now = loop_now_ms();
    /* A comment line keeps proxies from closing idle streams and lets MHD
     * notice clients that went away (it cannot while a stream is suspended). */
    for (http_stream_t *s = self->streams; s; s = s->next) {
        if (s->attached && !s->done && !s->is_get && s->sess && !mcp_session_origin_pending(s->sess->mcp, s)) {
            /* Its call was dropped (notifications/cancelled): no response
             * will come, so the stream ends now instead of idling open. */
            s->done = true;
            http_stream_wake(s);
            continue;
        }
        int64_t every = s->is_get ? KEEPALIVE_MS : CALL_KEEPALIVE_MS;
        /* A stream with bytes still queued is being written (or the
         * write is failing): it needs no keep-alive. */
        if (s->attached && !s->done && !outq_unsent(s->out) && now - s->last_write_ms >= every) {
            outq_push(s->out, ": keepalive\n\n", 13, NULL, NULL, 0, false);
            s->last_write_ms = now;
            http_stream_wake(s);
        } else if (s->suspended && s->scratch_dirty && now - s->dirty_ms >= RELEASE_QUIET_MS) {
            /* Quiet long enough to give its write buffer's pages back:
             * MHD calls s_stream_read once more, which does. */
            http_stream_wake(s);
        }
    }
}
