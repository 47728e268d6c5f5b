/* tool_watch: any session watches every run, whoever started it
 * (doc/tools.md#watching).
 *
 * - rat://status and rat://variables: resources (JSON: ctl status's and
 *   look's overview structuredContent); a session that subscribes gets
 *   notifications/resources/updated when they change.
 * - rat://events: a session that subscribes to it gets a `rat/event`
 *   notification for each run's start, output, input prompt and end.
 *
 * Bounded: output is batched (the first chunk after a quiet spell at once,
 * then at most one batch per WATCH_FLUSH_MS, each at most WATCH_BATCH_BYTES
 * of text, less with many watchers (s_batch_max), and WATCH_BATCH_ITEMS
 * items; the rest is counted in the batch's `dropped`). Each event is serialized once for every watcher (the
 * transport queues references to the same bytes). Past that, a watcher
 * that does not read loses notifications in its transport (which bounds
 * what it keeps per session, and what all sessions keep together, the
 * slowest losing first); every event carries `seq`, so a gap is the marker
 * that events were lost. */
#define LOG_MODULE "watch"
#include "tools.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "heaptrim.h"
#include "log.h"
#include "mem.h"
#include "utf8.h"

#define WATCH_FLUSH_MS 50
#define WATCH_BATCH_BYTES (64u << 10)
#define WATCH_BATCH_ITEMS 64
/* What one batch may cost all watchers together: its text times the
 * watchers, so that the fan-out of a flood costs about the same CPU for
 * 200 watchers as for 16 (loopback TCP charges about 0.8 ms per MB sent,
 * and 200 watchers at 64 KiB each per 50 ms made 256 MB/s). Each watcher
 * still gets at least WATCH_BATCH_MIN per batch, 80 KB/s of text. */
#define WATCH_FANOUT_BYTES (1u << 20)
#define WATCH_BATCH_MIN (4u << 10)
#define WATCH_CODE_MAX (16u << 10)

#define URI_STATUS "rat://status"
#define URI_VARS "rat://variables"
#define URI_EVENTS "rat://events"

typedef struct tool_watch {
    tools_ctx_t *ctx;              /* borrowed */
    mcp_server_t *srv;             /* borrowed */
    unsigned long seq;             /* events sent so far */
    unsigned long snap_seq;        /* the variables snapshot last announced */
    /* The output batch of one run (a run's output is flushed before
     * another's is batched). Runs are named by id, never kept as pointers. */
    unsigned long batch_run;
    long batch_exec;
    uintptr_t batch_owner;
    json_object *batch;            /* owned array of items, or NULL */
    int last_stream;               /* the batch's last item is this stream's, -1: not a stream */
    buf_t last_text;               /* its text while it grows */
    size_t batch_max;              /* the batch's text budget (s_batch_max) */
    size_t batch_bytes, dropped_items, dropped_bytes;
    uint64_t flush_timer;
    /* The run in progress, for rat://events reads. */
    unsigned long cur_run;
    long cur_exec;
    uintptr_t cur_owner;
} tool_watch_t;

/* One broadcast: the event is serialized once with "mine": false for every
 * watcher but the run's owner, and once more with "mine": true when the
 * owner watches too; each session's transport queues a reference to those
 * bytes, never a copy (doc/performance.md#a-room-full-of-watchers). */
typedef struct {
    json_object *ev;        /* borrowed */
    uintptr_t owner;
    rcbytes_t *others;      /* owned: the bytes for everyone but the owner */
    rcbytes_t *mine;        /* owned, made when the owner is met, or NULL */
} s_send_t;

static void s_send_one(mcp_session_t *s, void *ud)
{
    s_send_t *x = ud;
    if (x->owner && x->owner == mcp_session_serial(s)) {
        if (!x->mine) {
            json_object_object_add(x->ev, "mine", json_object_new_boolean(true));
            x->mine = mcp_notification_bytes("rat/event", x->ev);
        }
        mcp_session_notify_shared(s, x->mine);
    } else {
        mcp_session_notify_shared(s, x->others);
    }
}

static void s_count_one(mcp_session_t *s, void *ud)
{
    (void)s;
    (*(size_t *)ud)++;
}

static size_t s_watchers(tool_watch_t *w)
{
    size_t n = 0;
    mcp_server_each_subscriber(w->srv, URI_EVENTS, s_count_one, &n);
    return n;
}

static bool s_anyone(tool_watch_t *w)
{
    return s_watchers(w) > 0;
}

/* The text one batch may hold: WATCH_BATCH_BYTES, or its share of
 * WATCH_FANOUT_BYTES among the watchers there are when it starts. */
static size_t s_batch_max(tool_watch_t *w)
{
    size_t n = s_watchers(w), max = n ? WATCH_FANOUT_BYTES / n : WATCH_BATCH_BYTES;
    return max > WATCH_BATCH_BYTES ? WATCH_BATCH_BYTES : max < WATCH_BATCH_MIN ? WATCH_BATCH_MIN : max;
}

/* A new event with the fields every event has. */
static json_object *s_event(tool_watch_t *w, const char *type, unsigned long run, long exec, uintptr_t owner)
{
    json_object *ev = json_object_new_object();
    json_object_object_add(ev, "type", json_object_new_string(type));
    json_object_object_add(ev, "seq", json_object_new_int64((int64_t)++w->seq));
    json_object_object_add(ev, "run", json_object_new_int64((int64_t)run));
    json_object_object_add(ev, "exec_count", json_object_new_int64(exec));
    if (owner)
        json_object_object_add(ev, "session", json_object_new_int64((int64_t)owner));
    return ev;
}

/* Sends ev (consumed) to every subscriber of rat://events, with `mine`. */
static void s_broadcast(tool_watch_t *w, json_object *ev, uintptr_t owner)
{
    json_object_object_add(ev, "mine", json_object_new_boolean(false));
    s_send_t x = {ev, owner, mcp_notification_bytes("rat/event", ev), NULL};
    mcp_server_each_subscriber(w->srv, URI_EVENTS, s_send_one, &x);
    rcbytes_unref(&x.others);
    rcbytes_unref(&x.mine);
    json_object_put(ev);
}

static void s_end_stream(tool_watch_t *w)
{
    if (w->last_stream < 0)
        return;
    json_object *it = json_object_array_get_idx(w->batch, json_object_array_length(w->batch) - 1);
    json_object_object_add(it, "text", json_object_new_string_len(buf_str(&w->last_text), (int)w->last_text.len));
    w->last_stream = -1;
    buf_reset(&w->last_text);
}

static void s_flush(tool_watch_t *w)
{
    if (!w->batch)
        return;
    s_end_stream(w);
    json_object *ev = s_event(w, "run_output", w->batch_run, w->batch_exec, w->batch_owner);
    json_object_object_add(ev, "outputs", w->batch);
    if (w->dropped_items || w->dropped_bytes) {
        json_object *d = json_object_new_object();
        json_object_object_add(d, "outputs", json_object_new_int64((int64_t)w->dropped_items));
        json_object_object_add(d, "bytes", json_object_new_int64((int64_t)w->dropped_bytes));
        json_object_object_add(ev, "dropped", d);
    }
    w->batch = NULL;
    w->batch_bytes = w->dropped_items = w->dropped_bytes = 0;
    s_broadcast(w, ev, w->batch_owner);
}

static void s_flush_timer(loop_t *loop, void *ud)
{
    tool_watch_t *w = ud;
    w->flush_timer = 0;
    if (w->batch) {
        s_flush(w);
        w->flush_timer = loop_timer(loop, WATCH_FLUSH_MS, s_flush_timer, w);
    }
}

static void s_batch_add(tool_watch_t *w, const runtime_ev_t *ev)
{
    runtime_exec_t *ex = ev->ex;
    if (w->batch && w->batch_run != runtime_exec_id(ex))
        s_flush(w);
    if (!w->batch) {
        w->batch = json_object_new_array();
        w->batch_run = runtime_exec_id(ex);
        w->batch_exec = runtime_exec_number(ex);
        w->batch_owner = runtime_exec_owner(ex);
        w->batch_max = s_batch_max(w);
    }
    if (ev->stream >= 0) {
        size_t room = w->batch_max > w->batch_bytes ? w->batch_max - w->batch_bytes : 0;
        size_t take = ev->len <= room ? ev->len : utf8_floor(ev->text, ev->len, room);
        w->dropped_bytes += ev->len - take;
        if (take && w->last_stream != ev->stream) {
            s_end_stream(w);
            if (json_object_array_length(w->batch) >= WATCH_BATCH_ITEMS) {
                w->dropped_bytes += take;
                take = 0;
            } else {
                json_object *it = json_object_new_object();
                json_object_object_add(it, "type", json_object_new_string("stream"));
                json_object_object_add(it, "name", json_object_new_string(ev->stream ? "stderr" : "stdout"));
                json_object_array_add(w->batch, it);
                w->last_stream = ev->stream;
            }
        }
        if (take) {
            buf_append(&w->last_text, ev->text, take);
            w->batch_bytes += take;
        }
    } else if (ev->item) {
        s_end_stream(w);
        if (json_object_array_length(w->batch) >= WATCH_BATCH_ITEMS)
            w->dropped_items++;
        else
            json_object_array_add(w->batch, json_object_get(ev->item));
    }
    if (!w->flush_timer) {
        /* The first output after a quiet spell goes at once. */
        s_flush(w);
        w->flush_timer = loop_timer(w->ctx->loop, WATCH_FLUSH_MS, s_flush_timer, w);
    }
}

static void s_vars_changed(tool_watch_t *w)
{
    unsigned long seq = runtime_snapshot_seq(w->ctx->rt);
    if (seq != w->snap_seq) {
        w->snap_seq = seq;
        mcp_server_resource_updated(w->srv, URI_VARS);
    }
}

/* The shell watchdog's verdicts (runtime_watchdog.c), for every watcher:
 * kernel_not_answering names the run the kernel has not acknowledged, and
 * says since when and why; kernel_answering ends it. */
static void s_kernel_event(tool_watch_t *w, const runtime_ev_t *ev)
{
    if (!s_anyone(w))
        return;
    s_flush(w);
    json_object *e;
    uintptr_t owner = 0;
    if (ev->kind == RUNTIME_EV_SILENT) {
        owner = ev->ex ? runtime_exec_owner(ev->ex) : 0;
        e = s_event(w, "kernel_not_answering", ev->ex ? runtime_exec_id(ev->ex) : 0,
                    ev->ex ? runtime_exec_number(ev->ex) : 0, owner);
        json_object_object_add(e, "since_ms", json_object_new_int64(runtime_silent_ms(w->ctx->rt)));
        char *why = runtime_silent_why(w->ctx->rt);
        json_object_object_add(e, "why", json_object_new_string(why ? why : ""));
        free(why);
    } else {
        e = s_event(w, "kernel_answering", 0, 0, 0);
    }
    s_broadcast(w, e, owner);
}

static void s_on_event(void *ud, const runtime_ev_t *ev)
{
    tool_watch_t *w = ud;
    /* A state change (a restart) ends a burst: give its freed heap back
     * once it is quiet (a run's end does so in the runtime). */
    if (ev->kind == RUNTIME_EV_STATE)
        heaptrim_soon(w->ctx->loop);
    if (ev->kind == RUNTIME_EV_STATE) {
        mcp_server_resource_updated(w->srv, URI_STATUS);
        s_vars_changed(w);
        return;
    }
    if (ev->kind == RUNTIME_EV_SILENT || ev->kind == RUNTIME_EV_ANSWERING) {
        s_kernel_event(w, ev);
        return;
    }
    runtime_exec_t *ex = ev->ex;
    tool_tail_note(w->ctx->tail, ev);
    if (ev->kind == RUNTIME_EV_START) {
        w->cur_run = runtime_exec_id(ex);
        w->cur_exec = runtime_exec_number(ex);
        w->cur_owner = runtime_exec_owner(ex);
    }
    /* What rat://events reads is kept whether or not anyone listens: the
     * run in progress is forgotten at its end (it used to be only when a
     * subscriber was there, so a read said a finished run was running). */
    if (ev->kind == RUNTIME_EV_END && w->cur_run == runtime_exec_id(ex))
        w->cur_run = 0;
    if (!s_anyone(w)) {
        if (ev->kind == RUNTIME_EV_END)
            s_vars_changed(w);
        return;
    }
    if (ev->kind == RUNTIME_EV_OUTPUT) {
        s_batch_add(w, ev);
        return;
    }
    s_flush(w); /* what the run printed goes before what comes next */
    uintptr_t owner = runtime_exec_owner(ex);
    if (ev->kind == RUNTIME_EV_START) {
        json_object *e = s_event(w, "run_started", runtime_exec_id(ex), runtime_exec_number(ex), owner);
        const char *code = runtime_exec_code(ex);
        size_t n = code ? strlen(code) : 0, keep = n > WATCH_CODE_MAX ? utf8_floor(code, n, WATCH_CODE_MAX) : n;
        json_object_object_add(e, "code", json_object_new_string_len(code ? code : "", (int)keep));
        if (keep < n)
            json_object_object_add(e, "code_truncated", json_object_new_boolean(true));
        s_broadcast(w, e, owner);
    } else if (ev->kind == RUNTIME_EV_INPUT) {
        json_object *e = s_event(w, "run_input", runtime_exec_id(ex), runtime_exec_number(ex), owner);
        bool password = false;
        const char *prompt = runtime_exec_prompt(ex, &password);
        json_object *in = json_object_new_object();
        json_object_object_add(in, "prompt", json_object_new_string(prompt ? prompt : ""));
        json_object_object_add(in, "password", json_object_new_boolean(password));
        json_object_object_add(e, "input", in);
        s_broadcast(w, e, owner);
    } else if (ev->kind == RUNTIME_EV_END) {
        json_object *e = s_event(w, "run_ended", runtime_exec_id(ex), runtime_exec_number(ex), owner);
        const char *status = tool_run_status_word(ex);
        json_object_object_add(e, "status", json_object_new_string(status));
        json_object_object_add(e, "success", json_object_new_boolean(strcmp(status, "ok") == 0));
        json_object_object_add(e, "duration_ms", json_object_new_int64(runtime_exec_elapsed_ms(ex)));
        if (runtime_exec_vars(ex) >= 0)
            json_object_object_add(e, "vars", json_object_new_int64(runtime_exec_vars(ex)));
        if (runtime_exec_outcome(ex) == RUNTIME_ERROR) {
            runtime_error_t er;
            runtime_exec_error(ex, &er);
            json_object *o = json_object_new_object();
            json_object_object_add(o, "ename", json_object_new_string(er.ename ? er.ename : ""));
            json_object_object_add(o, "evalue", json_object_new_string(er.evalue ? er.evalue : ""));
            json_object_object_add(e, "error", o);
        } else if (runtime_exec_outcome(ex) != RUNTIME_OK && runtime_exec_why(ex)) {
            json_object_object_add(e, "failure", json_object_new_string(runtime_exec_why(ex)));
        }
        s_broadcast(w, e, owner);
        s_vars_changed(w);
    }
}

static void s_reply_json(mcp_call_t *call, const char *uri, json_object *doc)
{
    json_object *item = json_object_new_object();
    json_object_object_add(item, "uri", json_object_new_string(uri));
    json_object_object_add(item, "mimeType", json_object_new_string("application/json"));
    json_object_object_add(item, "text",
                           json_object_new_string(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN)));
    json_object *contents = json_object_new_array();
    json_object_array_add(contents, item);
    json_object *res = json_object_new_object();
    json_object_object_add(res, "contents", contents);
    mcp_call_reply(call, res);
    json_object_put(doc);
}

static void s_read_status(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    tool_watch_t *w = ud;
    s_reply_json(call, uri, tool_ctl_status_json(w->ctx, mcp_call_session(call)));
}

static void s_read_vars(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    tool_watch_t *w = ud;
    s_reply_json(call, uri, tool_look_overview_json(w->ctx));
}

static void s_read_events(mcp_call_t *call, const char *uri, json_object *vars, void *ud)
{
    tool_watch_t *w = ud;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seq", json_object_new_int64((int64_t)w->seq));
    if (w->cur_run) {
        json_object *r = json_object_new_object();
        json_object_object_add(r, "run", json_object_new_int64((int64_t)w->cur_run));
        runtime_exec_t *cur = runtime_current(w->ctx->rt);
        long exec = cur && runtime_exec_id(cur) == w->cur_run ? runtime_exec_number(cur) : w->cur_exec;
        json_object_object_add(r, "exec_count", json_object_new_int64(exec));
        if (w->cur_owner)
            json_object_object_add(r, "session", json_object_new_int64((int64_t)w->cur_owner));
        json_object_object_add(o, "running", r);
    }
    json_object_object_add(o, "session", json_object_new_int64((int64_t)mcp_session_serial(mcp_call_session(call))));
    s_reply_json(call, uri, o);
}

void tool_watch_register(mcp_server_t *srv, tools_ctx_t *ctx)
{
    tool_watch_t *w = xcalloc(1, sizeof *w);
    w->ctx = ctx;
    w->srv = srv;
    w->last_stream = -1;
    buf_init(&w->last_text, 0);
    w->snap_seq = runtime_snapshot_seq(ctx->rt);
    ctx->watch = w;
    mcp_server_enable_subscriptions(srv);
    mcp_server_add_resource(srv, URI_STATUS, "status", "Kernel status",
                            "The kernel's state as JSON (ctl status's structuredContent); subscribe to be told when "
                            "it changes.",
                            "application/json", s_read_status, w);
    mcp_server_add_resource(srv, URI_VARS, "variables", "Variables",
                            "The variables as JSON (look's overview structuredContent); subscribe to be told when "
                            "a run, reset or restart changes them.",
                            "application/json", s_read_vars, w);
    mcp_server_add_resource(srv, URI_EVENTS, "events", "Run events",
                            "Subscribe to get a rat/event notification for every run's start, output, input "
                            "prompt and end, from any session.",
                            "application/json", s_read_events, w);
    ctx->tail = tool_tail_new();
    tool_tail_register(srv, ctx);
    runtime_watch(ctx->rt, s_on_event, w);
}

void tool_watch_destroy(tools_ctx_t *ctx)
{
    tool_watch_t *w = ctx->watch;
    if (!w)
        return;
    runtime_watch(ctx->rt, NULL, NULL);
    loop_timer_cancel(ctx->loop, w->flush_timer);
    json_object_put(w->batch);
    buf_free(&w->last_text);
    free(w);
    ctx->watch = NULL;
    tool_tail_destroy(&ctx->tail);
}
