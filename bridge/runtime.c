/* runtime: executions against the session's kernel, one at a time. */
#define LOG_MODULE "runtime"
#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "assets.h"
#include "buf.h"
#include "kernel.h"
#include "kernelspec.h"
#include "lang.h"
#include "log.h"
#include "mem.h"

#define SNAPSHOT_TIMEOUT_MS 2000   /* wait this long for the post-error var count */
#define DEATH_WINDOW_MS 60000      /* automatic restarts stop after ... */
#define DEATH_LIMIT 5              /* ... this many deaths within the window */
#define SPARE_DELAY_MS 1000        /* let the session's kernel settle before booting a spare */
#define SPARE_RETRIES 3            /* spares that die while starting before we stop trying */
#define MAX_DETACHED 8             /* finished runs kept for ctl wait */
/* input_request comes on stdin, output on iopub: two sockets, no order
 * between them. ipykernel flushes stdout before asking, so output printed
 * before input() is on its way; give it this long to land first. */
#define INPUT_SETTLE_MS 50
#define HELPER_OUTPUT_MAX (4u << 20) /* bytes a helper call may print (LANG_VIA_STDOUT) */
/* A run that may have been lost by the kernel (interrupted, never
 * acknowledged, or half answered) is checked this long after the doubt
 * arose, by a kernel_info_request on shell: shell requests are handled in
 * order, so its reply arriving before the run's own says the kernel skipped
 * the run. */
#define LOST_PROBE_MS 500
#define LOST_UNACKED_MS 2000       /* no busy status for a run this long: check it */
#define LOST_PROBES_MAX 3          /* probes in flight per run (one may be lost to the signal) */
#define INTERRUPT_SPACING_MS 1000  /* a cancel repeated sooner adds no second signal */
#define BARRIER_TRIES 4            /* kernel_info_requests that hold the queue after an interrupt */
/* Every request a caller waits for is answered within a bound, whatever the
 * kernel does (stopped, or holding the interpreter in a long C call). */
#define QUERY_TIMEOUT_MS 3000      /* completion, inspection */
#define HELPER_TIMEOUT_MS 10000    /* helper calls (an R overview can be slow) */
#define RESET_TIMEOUT_MS 5000      /* as long as cancel waits */

typedef enum { ST_STARTING, ST_READY, ST_FAILED } s_kstate_t;

/* Someone waiting for the verdict of a cancel (runtime_cancel_run). */
typedef struct s_canceller {
    runtime_cancel_fn *cb;
    void *ud;
    struct s_canceller *next;
} s_canceller_t;

struct runtime_exec {
    runtime_t *rt;                 /* borrowed */
    unsigned long id;
    char *code;                    /* owned until done */
    bool allow_input;
    runtime_exec_state_t state;
    runtime_outcome_t outcome;
    char msg_id[WIRE_ID_LEN + 1];
    bool got_reply, got_idle, clear_pending;
    bool got_busy;                 /* the kernel acknowledged it (busy status or execute_input) */
    bool lost;                     /* rat-py ended it: the kernel went on without it */
    bool interrupt_pending;        /* cancelled before the kernel acknowledged it: interrupt at busy */
    int64_t interrupt_us;          /* when it was interrupted, 0 if never */
    uint64_t watch_timer;          /* when to check whether the kernel still has it */
    int64_t watch_due_ms;
    unsigned probes;               /* kernel_info probes in flight for it */
    s_canceller_t *cancellers;     /* owned: verdicts owed, called once it ends */
    long number;
    int64_t sent_us, done_us, input_since_us, input_total_us;
    output_t *out;                 /* owned */
    char *ename, *evalue, *source; /* owned */
    long line;
    long vars;
    long assets;                   /* rich outputs saved */
    char *why;                     /* owned */
    char *prompt;                  /* owned */
    bool password;
    json_object *input_header;     /* owned reference */
    runtime_observer_t obs;
    void *obs_ud;
    bool has_obs;
    bool claimed;                  /* a caller follows it (started it or picked it up) */
    bool detached;                 /* its caller left before it finished */
    uintptr_t owner;               /* who started it; 0: anyone */
    uint64_t snapshot_timer;
    uint64_t input_timer;          /* INPUT_SETTLE_MS before telling the observer */
    runtime_exec_t *next;          /* in runtime->execs, oldest first */
};

typedef enum { REQ_INSTALL, REQ_SNAPSHOT, REQ_RESET, REQ_QUERY, REQ_HELPER, REQ_PROBE, REQ_BARRIER } s_req_kind_t;

typedef struct s_req {
    char msg_id[WIRE_ID_LEN + 1];
    s_req_kind_t kind;
    /* A helper call run as its own non-silent execute (LANG_VIA_STDOUT):
     * its stdout is collected here, never forwarded, and it is complete once
     * both the reply and the kernel's idle status have arrived. */
    bool capture, got_reply, got_idle;
    int retries;                   /* resends after an abort */
    uint64_t resend_timer;
    uint64_t deadline_timer;       /* the caller gets an error then; a later reply is ignored */
    int64_t sent_ms;
    buf_t out;                     /* captured stdout */
    char *error;                   /* owned: the execution's error text, if any */
    json_object *reply_content;    /* owned reference: the execute_reply content */
    runtime_exec_t *ex;            /* REQ_SNAPSHOT, REQ_PROBE */
    runtime_done_fn *done;         /* REQ_RESET */
    runtime_reply_fn *reply;       /* REQ_QUERY */
    runtime_text_fn *text;         /* REQ_HELPER */
    void *ud;
    bool all;
    runtime_t *rt;                 /* borrowed */
    char *fn, *arg;                /* captured helper call, kept for a resend; owned */
    struct s_req *next;
} s_req_t;

/* A reset, query or helper call waiting for the kernel to be ready. */
typedef struct s_pending_reset {
    s_req_kind_t kind;             /* REQ_RESET, REQ_QUERY or REQ_HELPER */
    bool all;
    unsigned long seq;             /* REQ_RESET: runs with a lower id came first */
    char *msg_type, *content;      /* REQ_QUERY; owned */
    char *expr;                    /* REQ_HELPER: the helper function; owned (content: its argument) */
    runtime_done_fn *done;
    runtime_reply_fn *reply;
    runtime_text_fn *text;
    void *ud;
    struct s_pending_reset *next;
} s_pending_reset_t;

struct runtime {
    loop_t *loop;                  /* borrowed */
    uint64_t trim_timer;           /* pending s_trim, 0 if none */
    void *zctx;                    /* borrowed */
    /* options, owned copies */
    char *kernel_name, *existing, *cwd, *runtime_dir, *assets_dir, *interpreter, *env_note;
    assets_t *assets;              /* borrowed, may be NULL */
    char **argv, **env_extra;
    int boot_timeout_ms;
    bool allow_restart;
    kernelspec_t *spec;            /* owned, NULL when attaching or with argv */
    kernel_t *kernel;              /* owned */
    s_kstate_t kstate;
    char *fail_reason;             /* owned, when ST_FAILED */
    char *language;                /* owned: from kernel_info, else the spec */
    char *implementation;          /* owned: kernel_info implementation, e.g. "ipython" */
    json_object *snapshot;         /* owned: last {"vars", "rows"} from the helper */
    long snapshot_exec;
    const lang_t *lang;
    runtime_exec_t *execs;         /* owned list */
    runtime_exec_t *current;       /* borrowed from execs */
    long exec_count, vars;
    unsigned long rev, next_id;
    s_req_t *reqs;                 /* owned list of internal requests */
    s_pending_reset_t *pending_resets; /* owned: resets waiting for the kernel */
    runtime_done_fn *restart_done; /* pending ctl restart */
    void *restart_ud;
    /* An attached kernel's restart asked while still attaching: it is sent
     * once the kernel is ready (its session known, see runtime_restart). */
    bool restart_on_ready;
    int64_t deaths[DEATH_LIMIT];   /* ring of recent death times */
    unsigned ndeaths, restarts;
    char *last_death;              /* owned */
    /* An automatic restart nobody was told about (no run followed by a
     * caller ended with the death): the next run's output says so. Owned. */
    char *restart_note;
    uint64_t pump_timer;
    uint64_t collect_timer;        /* frees released executions from the loop */
    kernel_conn_factory_fn *connect; /* NULL: ZeroMQ */
    void *connect_ud;
    /* --spare: a second kernel booted in the background and swapped in on
     * restart (and reset all), then replaced. */
    bool want_spare;
    kernel_t *spare;               /* owned */
    json_object *spare_info;       /* owned: its kernel_info_reply content */
    bool spare_ready;
    unsigned spare_failures;
    uint64_t spare_timer;
    bool helper_preinstalled;      /* s_on_ready must not install the helper again */
    /* After a run ended on its own although it was interrupted, the signal
     * may still be on its way: no run starts until the kernel has answered a
     * shell request sent after it (barrier_id set while waiting). */
    char barrier_id[WIRE_ID_LEN + 1];
    uint64_t barrier_timer;
    unsigned barrier_tries;
};

static void s_pump(runtime_t *self);
static void s_start_kernel(runtime_t *self);
static void s_spare_schedule(runtime_t *self);
static void s_reset(runtime_t *self, bool all, unsigned long seq, runtime_done_fn *done, void *ud);
static void s_cancel_settle(runtime_t *self, runtime_exec_t *ex);
static void s_pump_timer(loop_t *loop, void *ud);
static void s_watch(runtime_exec_t *ex, int64_t ms);
static void s_probe_answered(runtime_t *self, runtime_exec_t *ex);
static void s_barrier_answered(runtime_t *self);
static void s_barrier_drop(runtime_t *self);

/* ------------------------------------------------------------ small helpers */

/* Languages are shown lowercased: "python idle", "r idle" (IRkernel says "R"). */
static char *s_lower_dup(const char *s)
{
    char *p = xstrdup(s);
    for (char *q = p; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    return p;
}

static const char *s_state_text(runtime_t *self)
{
    if (self->kstate == ST_FAILED)
        return "dead";
    if (self->kstate == ST_STARTING)
        return self->restart_done || self->restarts ? "restarting" : "starting";
    if (self->current)
        return self->current->state == RUNTIME_EXEC_INPUT ? "input" : "busy";
    return "idle";
}

/* The helper's user_expressions["rat"] text/plain from a reply, or NULL. */
static const char *s_user_expr(json_object *content, const char **err)
{
    json_object *ue = NULL, *rat = NULL, *data = NULL, *plain = NULL;
    if (!json_object_object_get_ex(content, "user_expressions", &ue) || !json_object_object_get_ex(ue, "rat", &rat))
        return NULL;
    const char *status = wire_get_str(rat, "status");
    if (status && strcmp(status, "ok") != 0) {
        if (err)
            *err = wire_get_str(rat, "evalue");
        return NULL;
    }
    if (!json_object_object_get_ex(rat, "data", &data) || !json_object_object_get_ex(data, "text/plain", &plain) ||
        !json_object_is_type(plain, json_type_string))
        return NULL;
    return json_object_get_string(plain);
}

/* Keeps a snapshot ({"vars": N, "rows": [...]}; consumed) and returns its
 * var count (-1 when it is not one). */
static long s_take_snapshot_obj(runtime_t *self, json_object *snap)
{
    json_object *v = NULL;
    if (!snap || !json_object_object_get_ex(snap, "vars", &v) || !json_object_is_type(v, json_type_int)) {
        json_object_put(snap);
        return -1;
    }
    json_object_put(self->snapshot);
    self->snapshot = snap;
    self->snapshot_exec = self->exec_count;
    self->vars = (long)json_object_get_int64(v);
    return self->vars;
}

/* The same, from JSON text. */
static long s_take_snapshot_text(runtime_t *self, const char *text)
{
    return s_take_snapshot_obj(self, text ? json_tokener_parse(text) : NULL);
}

/* The snapshot the helper's post-run hook put in a reply's payload list
 * ({"source": "rat_snapshot", "snapshot": {...}}). Returns its var count, or
 * -1 when the reply carries none. */
static long s_take_snapshot_payload(runtime_t *self, json_object *content)
{
    json_object *payload = NULL;
    if (!json_object_object_get_ex(content, "payload", &payload) || !json_object_is_type(payload, json_type_array))
        return -1;
    for (size_t i = 0; i < json_object_array_length(payload); i++) {
        json_object *p = json_object_array_get_idx(payload, i), *snap = NULL;
        const char *src = wire_get_str(p, "source");
        if (src && strcmp(src, "rat_snapshot") == 0 && json_object_object_get_ex(p, "snapshot", &snap))
            return s_take_snapshot_obj(self, json_object_get(snap));
    }
    return -1;
}

/* Keeps the snapshot carried by a reply's user_expressions (if any). */
static long s_take_snapshot(runtime_t *self, json_object *content)
{
    return s_take_snapshot_text(self, s_user_expr(content, NULL));
}

/* ------------------------------------------------------------ executions */

static void s_exec_free(runtime_exec_t *ex)
{
    runtime_t *self = ex->rt;
    for (runtime_exec_t **pp = &self->execs; *pp; pp = &(*pp)->next) {
        if (*pp == ex) {
            *pp = ex->next;
            break;
        }
    }
    if (self->current == ex)
        self->current = NULL;
    for (s_req_t *r = self->reqs; r; r = r->next)
        if (r->ex == ex)
            r->ex = NULL;
    loop_timer_cancel(self->loop, ex->snapshot_timer);
    loop_timer_cancel(self->loop, ex->input_timer);
    loop_timer_cancel(self->loop, ex->watch_timer);
    while (ex->cancellers) {
        s_canceller_t *c = ex->cancellers;
        ex->cancellers = c->next;
        free(c);
    }
    output_destroy(&ex->out);
    json_object_put(ex->input_header);
    free(ex->code);
    free(ex->ename);
    free(ex->evalue);
    free(ex->source);
    free(ex->why);
    free(ex->prompt);
    free(ex);
}

/* Frees finished executions nobody follows, and keeps at most MAX_DETACHED
 * finished detached ones. Runs from the loop only (s_collect). */
static void s_collect_now(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->collect_timer = 0;
    size_t detached_done = 0;
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state == RUNTIME_EXEC_DONE && ex->detached && !ex->claimed)
            detached_done++;
    runtime_exec_t *ex = self->execs;
    while (ex) {
        runtime_exec_t *next = ex->next;
        if (ex->state == RUNTIME_EXEC_DONE && !ex->claimed) {
            if (!ex->detached) {
                s_exec_free(ex);
            } else if (detached_done > MAX_DETACHED) {
                detached_done--;
                s_exec_free(ex);
            }
        }
        ex = next;
    }
}

/* Executions are finished and released inside callbacks (on_done releases
 * the run it was told about, and its callers, s_finish's callers among
 * them, still read it): they are freed from the loop, never here. */
static void s_collect(runtime_t *self)
{
    if (!self->collect_timer)
        self->collect_timer = loop_timer(self->loop, 0, s_collect_now, self);
}

/* A second after runs end, freed heap pages go back to the system
 * (malloc_trim): a flood or a big result must not stay in an idle rat-py's
 * RSS. Off the critical path, and at most once a second however many runs. */
#define TRIM_DELAY_MS 1000
static void s_trim(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->trim_timer = 0;
    malloc_trim(0);
}

static void s_finish(runtime_t *self, runtime_exec_t *ex, runtime_outcome_t outcome, const char *why)
{
    if (ex->state == RUNTIME_EXEC_DONE)
        return;
    if (ex->state == RUNTIME_EXEC_INPUT)
        ex->input_total_us += loop_now_us() - ex->input_since_us;
    ex->state = RUNTIME_EXEC_DONE;
    ex->outcome = outcome;
    ex->done_us = loop_now_us();
    if (why && !ex->why)
        ex->why = xstrdup(why);
    if (self->assets && (ex->assets || output_spill_path(ex->out)))
        assets_trim(self->assets);
    if (!self->trim_timer)
        self->trim_timer = loop_timer(self->loop, TRIM_DELAY_MS, s_trim, self);
    FREE_AND_NULL(ex->prompt);
    json_object_put(ex->input_header);
    ex->input_header = NULL;
    loop_timer_cancel(self->loop, ex->snapshot_timer);
    ex->snapshot_timer = 0;
    loop_timer_cancel(self->loop, ex->input_timer);
    ex->input_timer = 0;
    if (self->current == ex)
        self->current = NULL;
    s_cancel_settle(self, ex);
    self->rev++;
    if (ex->has_obs && ex->obs.on_done)
        ex->obs.on_done(ex->obs_ud, ex); /* may release ex: still valid, freed from the loop */
    s_collect(self);
}

static void s_snapshot_timeout(loop_t *loop, void *ud)
{
    runtime_exec_t *ex = ud;
    runtime_t *self = ex->rt;
    ex->snapshot_timer = 0;
    s_finish(self, ex, RUNTIME_ERROR, NULL);
    s_pump(self);
}

static s_req_t *s_req_add(runtime_t *self, s_req_kind_t kind, const char *msg_id)
{
    s_req_t *r = xcalloc(1, sizeof *r);
    r->rt = self;
    r->sent_ms = loop_now_ms();
    memcpy(r->msg_id, msg_id, sizeof r->msg_id);
    r->kind = kind;
    r->next = self->reqs;
    self->reqs = r;
    return r;
}

/* The caller of r waited long enough: tell it why, and forget it (the
 * request stays listed, so a late reply still updates what it should). */
static void s_req_deadline(loop_t *loop, void *ud)
{
    s_req_t *r = ud;
    runtime_t *self = r->rt;
    r->deadline_timer = 0;
    bool hb = self->kernel && kernel_heartbeat_ok(self->kernel);
    int64_t age = loop_now_ms() - r->sent_ms;
    if (r->kind == REQ_HELPER && hb && age < HELPER_TIMEOUT_MS) {
        /* A live kernel may take a while over a helper call; a silent one
         * will not answer at all. */
        r->deadline_timer = loop_timer(loop, QUERY_TIMEOUT_MS, s_req_deadline, r);
        return;
    }
    char why[400];
    snprintf(why, sizeof why, "%sthe kernel did not answer within %lld s (%s)",
             r->kind == REQ_RESET ? "reset not confirmed: " : "",
             (long long)((age + 500) / 1000),
             !hb ? "unresponsive: no heartbeat — stopped, or blocked outside Python; ctl restart replaces it"
             : self->current ? "busy: the running code holds the interpreter, e.g. a long call in C"
                             : "busy");
    if (r->kind == REQ_RESET) {
        self->rev++;
        snprintf(why + strlen(why), sizeof why - strlen(why),
                 "; the reset is still queued in the kernel and happens when it resumes");
    }
    runtime_done_fn *done = r->done;
    runtime_reply_fn *reply = r->reply;
    runtime_text_fn *text = r->text;
    void *cb_ud = r->ud;
    r->done = NULL;
    r->reply = NULL;
    r->text = NULL;
    if (done)
        done(cb_ud, false, why);
    else if (reply)
        reply(cb_ud, NULL, why);
    else if (text)
        text(cb_ud, NULL, why);
}

static void s_req_bound(s_req_t *r, int64_t ms)
{
    r->deadline_timer = loop_timer(r->rt->loop, ms, s_req_deadline, r);
}

static void s_req_free(s_req_t *r)
{
    buf_free(&r->out);
    free(r->fn);
    free(r->arg);
    if (r->resend_timer)
        loop_timer_cancel(r->rt->loop, r->resend_timer);
    loop_timer_cancel(r->rt->loop, r->deadline_timer);
    free(r->error);
    json_object_put(r->reply_content);
    free(r);
}

/* Sends a silent execute (no history, no output broadcast to us). With a
 * user_expressions helper, expr (default: the snapshot) rides along. */
static int s_send_silent(runtime_t *self, const char *code, const char *expr, char id_out[WIRE_ID_LEN + 1])
{
    buf_t b, snap;
    buf_init(&b, 0);
    buf_init(&snap, 0);
    buf_puts(&b, "{\"code\":");
    buf_put_json_str(&b, code, strlen(code));
    buf_puts(&b, ",\"silent\":true,\"store_history\":false,\"user_expressions\":{");
    if (!expr && self->lang && self->lang->channel == LANG_VIA_USER_EXPRESSIONS) {
        self->lang->call(&snap, "snap", NULL);
        expr = snap.data;
    }
    if (expr) {
        buf_puts(&b, "\"rat\":");
        buf_put_json_str(&b, expr, strlen(expr));
    }
    buf_puts(&b, "},\"allow_stdin\":false,\"stop_on_error\":false}");
    int rc = kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, id_out);
    buf_free(&b);
    buf_free(&snap);
    return rc;
}

/* Sends helper call fn(json_arg) as a non-silent execute without history
 * whose stdout carries the answer (LANG_VIA_STDOUT). Returns 0 or -1. */
static int s_send_capture_msg(runtime_t *self, const char *fn, const char *json_arg, char id[WIRE_ID_LEN + 1])
{
    buf_t code, b;
    buf_init(&code, 0);
    buf_init(&b, 0);
    self->lang->call(&code, fn, json_arg);
    buf_puts(&b, "{\"code\":");
    buf_put_json_str(&b, code.data, code.len);
    buf_puts(&b, ",\"silent\":false,\"store_history\":false,\"user_expressions\":{},"
                 "\"allow_stdin\":false,\"stop_on_error\":false}");
    int rc = kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, id);
    buf_free(&b);
    buf_free(&code);
    return rc;
}

static s_req_t *s_send_capture(runtime_t *self, s_req_kind_t kind, const char *fn, const char *json_arg)
{
    char id[WIRE_ID_LEN + 1];
    if (s_send_capture_msg(self, fn, json_arg, id) < 0)
        return NULL;
    s_req_t *r = s_req_add(self, kind, id);
    r->capture = true;
    r->fn = xstrdup(fn);
    r->arg = xstrdup(json_arg);
    buf_init(&r->out, HELPER_OUTPUT_MAX);
    return r;
}

/* IRkernel aborts every request already queued when an execution fails or
 * is interrupted (its abort loop drains the shell socket for a while), and a
 * helper call sent right after that reply can be caught in it: send it
 * again a little later, a few times. */
#define CAPTURE_RETRIES 4
#define CAPTURE_RETRY_MS 60

static void s_capture_resend(loop_t *loop, void *ud)
{
    s_req_t *r = ud;
    r->resend_timer = 0;
    if (s_send_capture_msg(r->rt, r->fn, r->arg, r->msg_id) < 0)
        r->msg_id[0] = '\0'; /* unreachable kernel: the caller's timeout or the kernel's death ends it */
}

/* Finds "Cell In [N], line L" (IPython 8) or "Input In [N]" ... "line L" in
 * a cleaned traceback: the last frame that points into this run's cell. */
static long s_find_line(const char *tb, long number)
{
    long line = 0;
    const char *p = tb;
    while ((p = strstr(p, "In ")) || (p = NULL)) {
        const char *q = p + 3;
        if (*q == ' ')
            q++;
        if (*q != '[') {
            p += 3;
            continue;
        }
        char *end = NULL;
        long cell = strtol(q + 1, &end, 10);
        if (!end || *end != ']') {
            p += 3;
            continue;
        }
        const char *l = strstr(end, "line ");
        const char *nl = strchr(end, '\n');
        if (l && (!nl || l < nl) && (cell == number || number == 0)) {
            long v = strtol(l + 5, NULL, 10);
            if (v > 0)
                line = v;
        }
        p = end;
    }
    return line;
}

static void s_record_error(runtime_exec_t *ex, json_object *content)
{
    const char *ename = wire_get_str(content, "ename");
    const char *evalue = wire_get_str(content, "evalue");
    free(ex->ename);
    free(ex->evalue);
    ex->ename = xstrdup(ename ? ename : "Error");
    ex->evalue = xstrdup(evalue ? evalue : "");
    if (ex->rt->lang && ex->rt->lang->clean_error)
        ex->rt->lang->clean_error(&ex->ename, &ex->evalue);
    json_object *tb = NULL;
    if (!json_object_object_get_ex(content, "traceback", &tb) || !json_object_is_type(tb, json_type_array))
        return;
    buf_t clean;
    buf_init(&clean, 1u << 20);
    for (size_t i = 0; i < json_object_array_length(tb); i++) {
        json_object *t = json_object_array_get_idx(tb, i);
        if (json_object_is_type(t, json_type_string)) {
            output_clean_text(json_object_get_string(t), (size_t)json_object_get_string_len(t), &clean);
            buf_putc(&clean, '\n');
        }
    }
    long line = s_find_line(buf_str(&clean), ex->number);
    buf_free(&clean);
    if (line <= 0 || !ex->code)
        return;
    /* The source line, from the code we sent. */
    const char *p = ex->code;
    for (long i = 1; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    if (n > 200)
        n = 200;
    ex->line = line;
    free(ex->source);
    ex->source = xstrndup(p, n);
}

static void s_output_text(runtime_exec_t *ex, int stream, const char *text, size_t len)
{
    if (ex->clear_pending) {
        ex->clear_pending = false;
        output_clear(ex->out);
    }
    buf_t clean;
    buf_init(&clean, 0);
    output_write(ex->out, text, len, &clean);
    if (clean.len && ex->has_obs && ex->obs.on_output)
        ex->obs.on_output(ex->obs_ud, ex, stream, clean.data, clean.len);
    buf_free(&clean);
}

/* Saves the rich parts of a MIME bundle (images, HTML) as assets and adds
 * a line naming each to the output; a part that cannot be saved says why. */
static void s_save_assets(runtime_exec_t *ex, json_object *data)
{
    static const char *mimes[] = {"image/png", "image/jpeg", "image/svg+xml", "text/html"};
    assets_t *store = ex->rt->assets;
    if (!store)
        return;
    for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(data, mimes[i], &v))
            continue;
        if (strcmp(mimes[i], "text/html") == 0 && json_object_object_get_ex(data, "text/plain", NULL) &&
            !(ex->rt->lang && ex->rt->lang->html_with_plain_is_asset))
            continue;
        const char *text = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
        size_t tlen = text ? (size_t)json_object_get_string_len(v) : 0;
        if (!text) {
            if (!json_object_is_type(v, json_type_array))
                continue;
            text = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN); /* list of lines: rare */
            tlen = strlen(text);
        }
        unsigned char *bin = NULL;
        size_t blen = tlen;
        const void *bytes = text;
        bool binary = strncmp(mimes[i], "image/png", 9) == 0 || strncmp(mimes[i], "image/jpeg", 10) == 0;
        if (binary) {
            /* Binary outputs travel base64-encoded (with line breaks at times). */
            bin = xmalloc(tlen / 4 * 3 + 4);
            if (sodium_base642bin(bin, tlen / 4 * 3 + 4, text, tlen, "\n\r ", &blen, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0) {
                free(bin);
                output_write_block(ex->out, "[image not saved: invalid base64 data]", 38);
                continue;
            }
            bytes = bin;
        }
        char id[ASSETS_ID_MAX], err[256];
        char *line;
        if (assets_put(store, mimes[i], bytes, blen, id, err, sizeof err) == 0) {
            char *link = assets_link(store, id);
            line = xasprintf("[%s: %s]", strcmp(mimes[i], "text/html") == 0 ? "html" : "image", link);
            free(link);
            ex->assets++;
        } else {
            line = xasprintf("[%s]", err);
        }
        output_write_block(ex->out, line, strlen(line));
        free(line);
        free(bin);
    }
}

static void s_output_bundle(runtime_exec_t *ex, json_object *content)
{
    json_object *data = NULL, *plain = NULL;
    if (!json_object_object_get_ex(content, "data", &data) || !json_object_is_type(data, json_type_object))
        return;
    if (ex->clear_pending) {
        ex->clear_pending = false;
        output_clear(ex->out);
    }
    if (json_object_object_get_ex(data, "text/plain", &plain) && json_object_is_type(plain, json_type_string)) {
        const char *t = json_object_get_string(plain);
        size_t n = (size_t)json_object_get_string_len(plain);
        output_write_block(ex->out, t, n);
        if (ex->has_obs && ex->obs.on_output) {
            buf_t clean;
            buf_init(&clean, 0);
            output_clean_text(t, n, &clean);
            buf_putc(&clean, '\n');
            ex->obs.on_output(ex->obs_ud, ex, 0, clean.data, clean.len);
            buf_free(&clean);
        }
    }
    s_save_assets(ex, data);
}

static void s_maybe_done(runtime_t *self, runtime_exec_t *ex)
{
    if (!ex->got_reply || !ex->got_idle || ex->snapshot_timer)
        return;
    s_finish(self, ex, ex->outcome, NULL);
    s_pump(self);
}

/* The kernel has taken ex: a cancel that waited for that interrupts now. */
static void s_exec_acknowledged(runtime_t *self, runtime_exec_t *ex)
{
    if (ex->got_busy)
        return;
    ex->got_busy = true;
    self->rev++;
    if (ex->interrupt_pending && self->kernel) {
        ex->interrupt_pending = false;
        if (kernel_interrupt(self->kernel) == 0)
            ex->interrupt_us = loop_now_us();
        s_watch(ex, LOST_PROBE_MS);
    }
}

static void s_exec_iopub(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    const char *t = m->msg_type;
    json_object *c = m->content;
    if (strcmp(t, "stream") == 0) {
        const char *name = wire_get_str(c, "name");
        const char *text;
        size_t len;
        /* In pieces: a flood's message is never copied whole (wire.h). */
        while (wire_stream_next(m, &text, &len))
            s_output_text(ex, name && strcmp(name, "stderr") == 0 ? 1 : 0, text, len);
    } else if (strcmp(t, "execute_result") == 0 || strcmp(t, "display_data") == 0 ||
               strcmp(t, "update_display_data") == 0) {
        json_object *n = NULL;
        if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int))
            ex->number = (long)json_object_get_int64(n);
        s_output_bundle(ex, c);
    } else if (strcmp(t, "error") == 0) {
        s_record_error(ex, c);
    } else if (strcmp(t, "clear_output") == 0) {
        json_object *w = NULL;
        if (json_object_object_get_ex(c, "wait", &w) && json_object_get_boolean(w))
            ex->clear_pending = true;
        else
            output_clear(ex->out);
    } else if (strcmp(t, "execute_input") == 0) {
        json_object *n = NULL;
        if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int))
            ex->number = (long)json_object_get_int64(n);
        s_exec_acknowledged(self, ex);
    } else if (strcmp(t, "status") == 0) {
        const char *st = wire_get_str(c, "execution_state");
        if (st && strcmp(st, "busy") == 0) {
            s_exec_acknowledged(self, ex);
        } else if (st && strcmp(st, "idle") == 0) {
            ex->got_idle = true;
            if (!ex->got_reply)
                s_watch(ex, LOST_PROBE_MS); /* idle without a reply: is it coming? */
            s_maybe_done(self, ex);
        }
    }
}

static void s_exec_reply(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    json_object *c = m->content, *n = NULL;
    const char *status = wire_get_str(c, "status");
    if (json_object_object_get_ex(c, "execution_count", &n) && json_object_is_type(n, json_type_int)) {
        ex->number = (long)json_object_get_int64(n);
        self->exec_count = ex->number;
    }
    ex->got_reply = true;
    bool have_snapshot = self->lang && self->lang->snapshot_in_payload && s_take_snapshot_payload(self, c) >= 0;
    if (status && strcmp(status, "ok") == 0) {
        ex->outcome = RUNTIME_OK;
        if (!have_snapshot)
            s_take_snapshot(self, c);
        ex->vars = self->vars;
    } else if (status && strcmp(status, "aborted") == 0) {
        ex->outcome = RUNTIME_ABORTED;
        ex->vars = self->vars;
    } else {
        ex->outcome = RUNTIME_ERROR;
        if (!ex->ename && status && strcmp(status, "abort") == 0) {
            /* IRkernel's answer to an interrupt. */
            ex->ename = xstrdup("");
            ex->evalue = xstrdup("Interrupted");
        }
        if (!ex->ename)
            s_record_error(ex, c);
        ex->vars = self->vars;
    }
    /* The footer's variable count must be true. user_expressions ride along
     * only with a run that succeeded; otherwise (or for kernels without
     * user_expressions) ask with a separate request, and finish the run
     * when its answer is in (or after SNAPSHOT_TIMEOUT_MS). */
    bool ask = self->lang && !have_snapshot &&
               (ex->outcome == RUNTIME_ERROR || self->lang->channel == LANG_VIA_STDOUT);
    s_req_t *r = NULL;
    char id[WIRE_ID_LEN + 1];
    if (ask && self->lang->channel == LANG_VIA_STDOUT)
        r = s_send_capture(self, REQ_SNAPSHOT, "snap", NULL);
    else if (ask && s_send_silent(self, "", NULL, id) == 0)
        r = s_req_add(self, REQ_SNAPSHOT, id);
    if (r) {
        r->ex = ex;
        ex->snapshot_timer = loop_timer(self->loop, SNAPSHOT_TIMEOUT_MS, s_snapshot_timeout, ex);
    }
    if (!ex->got_idle)
        s_watch(ex, LOST_PROBE_MS); /* a reply without idle: is the status coming? */
    s_maybe_done(self, ex);
}

static void s_input_settled(loop_t *loop, void *ud)
{
    runtime_exec_t *ex = ud;
    ex->input_timer = 0;
    if (ex->state == RUNTIME_EXEC_INPUT && ex->has_obs && ex->obs.on_input)
        ex->obs.on_input(ex->obs_ud, ex);
}

static void s_exec_input(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    const char *prompt = wire_get_str(m->content, "prompt");
    json_object *pw = NULL;
    free(ex->prompt);
    ex->prompt = xstrdup(prompt ? prompt : "");
    ex->password = json_object_object_get_ex(m->content, "password", &pw) && json_object_get_boolean(pw);
    json_object_put(ex->input_header);
    ex->input_header = json_object_get(m->header);
    ex->state = RUNTIME_EXEC_INPUT;
    ex->input_since_us = loop_now_us();
    self->rev++;
    loop_timer_cancel(self->loop, ex->input_timer);
    ex->input_timer = loop_timer(self->loop, INPUT_SETTLE_MS, s_input_settled, ex);
}

/* An internal request is answered: content is the reply (borrowed) and,
 * for captured helper calls, text what the helper printed. */
static void s_req_done(runtime_t *self, s_req_t *r, json_object *content, const char *text)
{
    const char *status = wire_get_str(content, "status");
    bool ok = status && strcmp(status, "ok") == 0;
    if (r->capture && status && strcmp(status, "aborted") == 0 && r->retries < CAPTURE_RETRIES) {
        r->retries++;
        r->got_reply = r->got_idle = false;
        buf_reset(&r->out);
        FREE_AND_NULL(r->error);
        json_object_put(r->reply_content);
        r->reply_content = NULL;
        r->msg_id[0] = '\0';
        r->next = self->reqs; /* back in the list, to be answered later */
        self->reqs = r;
        r->resend_timer = loop_timer(self->loop, CAPTURE_RETRY_MS * r->retries, s_capture_resend, r);
        return;
    }
    if (r->capture && r->kind == REQ_SNAPSHOT)
        s_take_snapshot_text(self, ok ? text : NULL);
    else if (!r->capture && r->kind != REQ_QUERY && r->kind != REQ_HELPER && r->kind != REQ_PROBE &&
             r->kind != REQ_BARRIER)
        s_take_snapshot(self, content);
    switch (r->kind) {
    case REQ_QUERY:
        if (r->reply)
            r->reply(r->ud, content, NULL);
        break;
    case REQ_HELPER: {
        const char *err = NULL;
        const char *out = r->capture ? (ok && text && *text ? text : NULL) : s_user_expr(content, &err);
        if (r->capture && !out)
            err = r->error;
        if (!ok && !err)
            err = wire_get_str(content, "evalue");
        if (r->text)
            r->text(r->ud, out, out ? NULL : (err ? err : "the helper gave no answer"));
        break;
    }
    case REQ_PROBE:
        if (r->ex)
            s_probe_answered(self, r->ex);
        break;
    case REQ_BARRIER:
        s_barrier_answered(self);
        break;
    case REQ_INSTALL:
        if (!ok)
            log_warn("the kernel-side helper failed to install (%s); variable counts are unavailable",
                     wire_get_str(content, "evalue") ? wire_get_str(content, "evalue") : "?");
        break;
    case REQ_SNAPSHOT:
        if (r->ex) {
            r->ex->vars = self->vars;
            loop_timer_cancel(self->loop, r->ex->snapshot_timer);
            r->ex->snapshot_timer = 0;
            s_maybe_done(self, r->ex);
        }
        break;
    case REQ_RESET: {
        json_object *n = NULL;
        if (json_object_object_get_ex(content, "execution_count", &n) && json_object_is_type(n, json_type_int) &&
            r->all)
            self->exec_count = (long)json_object_get_int64(n);
        if (ok && self->lang && self->lang->channel == LANG_VIA_STDOUT) {
            /* Nothing rides along to say what is left: a reset leaves nothing. */
            s_take_snapshot_text(self, "{\"vars\":0,\"rows\":[]}");
        }
        self->rev++;
        char text_n[64];
        snprintf(text_n, sizeof text_n, "%ld", self->vars < 0 ? 0 : self->vars);
        if (r->done)
            r->done(r->ud, ok, ok ? text_n : (wire_get_str(content, "evalue") ? wire_get_str(content, "evalue")
                                                                            : "reset failed"));
        break;
    }
    }
    s_req_free(r);
}

static s_req_t *s_req_take(runtime_t *self, const char *parent_id, bool remove)
{
    if (!parent_id)
        return NULL;
    s_req_t **pp = &self->reqs;
    while (*pp && strcmp((*pp)->msg_id, parent_id) != 0)
        pp = &(*pp)->next;
    s_req_t *r = *pp;
    if (r && remove)
        *pp = r->next;
    return r;
}

/* A captured helper call is complete once its reply and its idle are in
 * (iopub and shell are separate sockets: output may trail the reply). */
static void s_capture_maybe_done(runtime_t *self, s_req_t *r)
{
    if (!r->got_reply || !r->got_idle)
        return;
    s_req_take(self, r->msg_id, true);
    s_req_done(self, r, r->reply_content, buf_str(&r->out));
}

static void s_req_reply(runtime_t *self, wire_msg_t *m)
{
    s_req_t *r = s_req_take(self, m->parent_id, false);
    if (!r)
        return;
    if (r->capture) {
        if (strcmp(m->msg_type, "execute_reply") != 0)
            return;
        json_object_put(r->reply_content);
        r->reply_content = json_object_get(m->content);
        r->got_reply = true;
        /* An aborted request was never executed: no iopub will follow. */
        const char *status = wire_get_str(m->content, "status");
        if (status && strcmp(status, "aborted") == 0)
            r->got_idle = true;
        s_capture_maybe_done(self, r);
        return;
    }
    s_req_take(self, m->parent_id, true);
    s_req_done(self, r, m->content, NULL);
}

/* iopub traffic of an internal request: only captured helper calls care. */
static void s_req_iopub(runtime_t *self, wire_msg_t *m)
{
    s_req_t *r = s_req_take(self, m->parent_id, false);
    if (!r || !r->capture)
        return;
    const char *t = m->msg_type;
    json_object *c = m->content;
    if (strcmp(t, "stream") == 0) {
        const char *name = wire_get_str(c, "name"), *text;
        size_t len;
        bool over = false;
        while (name && strcmp(name, "stdout") == 0 && !over && wire_stream_next(m, &text, &len))
            over = buf_append(&r->out, text, len) < 0;
        if (over)
            log_warn("a helper answer exceeded %u bytes; ignored", HELPER_OUTPUT_MAX);
    } else if (strcmp(t, "error") == 0) {
        const char *ev = wire_get_str(c, "evalue");
        free(r->error);
        r->error = xstrdup(ev ? ev : "the helper failed");
    } else if (strcmp(t, "status") == 0) {
        const char *st = wire_get_str(c, "execution_state");
        if (st && strcmp(st, "idle") == 0) {
            r->got_idle = true;
            s_capture_maybe_done(self, r);
        }
    }
}

/* ------------------------------------------------------------ cancel, lost runs */

static bool s_is_interrupt_error(const runtime_exec_t *ex)
{
    if (!ex->ename)
        return false;
    if (strstr(ex->ename, "Interrupt"))
        return true;
    return !*ex->ename && ex->evalue && strcmp(ex->evalue, "Interrupted") == 0; /* IRkernel */
}

static runtime_cancel_verdict_t s_verdict(const runtime_exec_t *ex)
{
    if (ex->lost)
        return ex->got_busy ? RUNTIME_CANCEL_LOST : RUNTIME_CANCEL_DROPPED;
    switch (ex->outcome) {
    case RUNTIME_CANCELLED:
        return RUNTIME_CANCEL_DROPPED;
    case RUNTIME_FAILED:
        return RUNTIME_CANCEL_FAILED;
    case RUNTIME_ABORTED:
        return RUNTIME_CANCEL_INTERRUPTED;
    case RUNTIME_ERROR:
        return s_is_interrupt_error(ex) ? RUNTIME_CANCEL_INTERRUPTED : RUNTIME_CANCEL_ENDED;
    case RUNTIME_OK:
    default:
        return RUNTIME_CANCEL_ENDED;
    }
}

static void s_barrier_retry(loop_t *loop, void *ud);

/* Holds the queue until the kernel answers a shell request sent now (see
 * barrier_id). A barrier reply can itself be lost to the late signal, so it
 * is sent again a few times; after that the queue moves on regardless. */
static void s_barrier_send(runtime_t *self)
{
    char id[WIRE_ID_LEN + 1];
    loop_timer_cancel(self->loop, self->barrier_timer);
    self->barrier_timer = 0;
    if (self->barrier_tries >= BARRIER_TRIES || !self->kernel || self->kstate != ST_READY ||
        kernel_send(self->kernel, KCHAN_SHELL, "kernel_info_request", NULL, NULL, id) < 0) {
        self->barrier_id[0] = '\0';
        if (!self->pump_timer)
            self->pump_timer = loop_timer(self->loop, 0, s_pump_timer, self);
        return;
    }
    s_req_add(self, REQ_BARRIER, id);
    memcpy(self->barrier_id, id, sizeof self->barrier_id);
    self->barrier_tries++;
    self->barrier_timer = loop_timer(self->loop, LOST_PROBE_MS * self->barrier_tries, s_barrier_retry, self);
}

static void s_barrier_retry(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->barrier_timer = 0;
    if (self->barrier_id[0])
        s_barrier_send(self);
}

/* Any barrier's reply will do: the kernel handled a request sent after the
 * signal. */
static void s_barrier_answered(runtime_t *self)
{
    if (!self->barrier_id[0])
        return;
    s_barrier_drop(self);
    s_pump(self);
}

/* The kernel is gone or replaced: nothing to wait for. */
static void s_barrier_drop(runtime_t *self)
{
    self->barrier_id[0] = '\0';
    loop_timer_cancel(self->loop, self->barrier_timer);
    self->barrier_timer = 0;
}

/* ex ends (called by s_finish): owed verdicts are delivered, and an
 * interrupt that did not stop it may still land, so the queue waits. */
static void s_cancel_settle(runtime_t *self, runtime_exec_t *ex)
{
    loop_timer_cancel(self->loop, ex->watch_timer);
    ex->watch_timer = 0;
    runtime_cancel_verdict_t v = s_verdict(ex);
    if (ex->interrupt_us && v == RUNTIME_CANCEL_ENDED && self->kstate == ST_READY) {
        self->barrier_tries = 0;
        s_barrier_send(self);
    }
    if (ex->cancellers && v != RUNTIME_CANCEL_ENDED && ex->detached && !ex->claimed)
        ex->detached = false; /* its end is reported by the cancel: ctl wait has nothing left to give */
    while (ex->cancellers) {
        s_canceller_t *c = ex->cancellers;
        ex->cancellers = c->next;
        c->cb(c->ud, ex, v);
        free(c);
    }
}

static void s_watch_fire(loop_t *loop, void *ud)
{
    runtime_exec_t *ex = ud;
    runtime_t *self = ex->rt;
    ex->watch_timer = 0;
    /* Waiting for input counts: the kernel holds the shell channel while
     * it waits, so a probe is answered only once the run is over. */
    if (ex->state == RUNTIME_EXEC_DONE || ex->state == RUNTIME_EXEC_QUEUED || self->current != ex || !self->kernel)
        return;
    bool doubt = ex->interrupt_us || ex->interrupt_pending || !ex->got_busy || ex->got_idle != ex->got_reply;
    if (!doubt)
        return; /* acknowledged and running: a long run is not a lost one */
    if (ex->interrupt_pending) {
        /* Still not acknowledged: the kernel may be stopped or stuck, and
         * only a signal (with SIGCONT) gets it going. */
        ex->interrupt_pending = false;
        if (kernel_interrupt(self->kernel) == 0)
            ex->interrupt_us = loop_now_us();
    }
    char id[WIRE_ID_LEN + 1];
    if (ex->probes < LOST_PROBES_MAX && kernel_send(self->kernel, KCHAN_SHELL, "kernel_info_request", NULL, NULL, id) == 0) {
        s_req_t *r = s_req_add(self, REQ_PROBE, id);
        r->ex = ex;
        ex->probes++;
    }
    s_watch(ex, LOST_PROBE_MS * 2);
}

/* (Re)arms ex's check to fire within ms. */
static void s_watch(runtime_exec_t *ex, int64_t ms)
{
    runtime_t *self = ex->rt;
    if (ex->state == RUNTIME_EXEC_DONE)
        return;
    int64_t due = loop_now_ms() + ms;
    if (ex->watch_timer) {
        if (ex->watch_due_ms <= due)
            return;
        loop_timer_cancel(self->loop, ex->watch_timer);
    }
    ex->watch_due_ms = due;
    ex->watch_timer = loop_timer(self->loop, ms, s_watch_fire, ex);
}

/* The kernel answered a shell request sent after ex's execute_request. */
static void s_probe_answered(runtime_t *self, runtime_exec_t *ex)
{
    if (ex->probes)
        ex->probes--;
    if (ex->state == RUNTIME_EXEC_DONE || self->current != ex)
        return;
    if (ex->got_reply) {
        /* The reply is in and the kernel moved on: its idle status was lost. */
        ex->got_idle = true;
        s_maybe_done(self, ex);
        return;
    }
    ex->lost = true;
    if (!ex->got_busy)
        s_finish(self, ex, RUNTIME_CANCELLED,
                 ex->interrupt_us ? "CANCELLED before it started" : "lost by the kernel before it started");
    else
        s_finish(self, ex, RUNTIME_FAILED,
                 ex->interrupt_us ? "lost by the kernel after an interrupt"
                                  : "lost by the kernel: it went on with later requests without finishing this run");
    s_pump(self);
}

/* ------------------------------------------------------------ kernel events */

static void s_send_execute(runtime_t *self, runtime_exec_t *ex)
{
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"code\":");
    buf_put_json_str(&b, ex->code, strlen(ex->code));
    buf_puts(&b, ",\"silent\":false,\"store_history\":true,\"user_expressions\":{");
    if (self->lang && self->lang->channel == LANG_VIA_USER_EXPRESSIONS && !self->lang->snapshot_in_payload) {
        buf_t snap;
        buf_init(&snap, 0);
        self->lang->call(&snap, "snap", NULL);
        buf_puts(&b, "\"rat\":");
        buf_put_json_str(&b, snap.data, snap.len);
        buf_free(&snap);
    }
    buf_printf(&b, "},\"allow_stdin\":%s,\"stop_on_error\":false}", ex->allow_input ? "true" : "false");
    ex->sent_us = loop_now_us();
    if (kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, ex->msg_id) < 0) {
        buf_free(&b);
        s_finish(self, ex, RUNTIME_FAILED, "could not send the code to the kernel");
        return;
    }
    buf_free(&b);
    ex->state = RUNTIME_EXEC_RUNNING;
    self->current = ex;
    self->rev++;
    s_watch(ex, LOST_UNACKED_MS);
}

static void s_fail_queued(runtime_t *self, const char *why)
{
    /* Restart from the head each time: finishing one run can free others
     * (observers release them), so no pointer is kept across s_finish. */
    for (;;) {
        runtime_exec_t *ex = self->execs;
        while (ex && ex->state != RUNTIME_EXEC_QUEUED)
            ex = ex->next;
        if (!ex)
            return;
        s_finish(self, ex, RUNTIME_FAILED, why);
    }
}

/* Internal requests die with their kernel. */
static void s_drop_reqs(runtime_t *self, const char *why)
{
    while (self->reqs) {
        s_req_t *r = self->reqs;
        self->reqs = r->next;
        if (r->kind == REQ_RESET && r->done)
            r->done(r->ud, false, why);
        else if (r->kind == REQ_QUERY && r->reply)
            r->reply(r->ud, NULL, why);
        else if (r->kind == REQ_HELPER && r->text)
            r->text(r->ud, NULL, why);
        s_req_free(r);
    }
    s_barrier_drop(self);
}

static void s_pending_free(s_pending_reset_t *p)
{
    free(p->msg_type);
    free(p->content);
    free(p->expr);
    free(p);
}

static void s_pending_fail(s_pending_reset_t *p, const char *why)
{
    if (p->kind == REQ_RESET && p->done)
        p->done(p->ud, false, why);
    else if (p->kind == REQ_QUERY && p->reply)
        p->reply(p->ud, NULL, why);
    else if (p->kind == REQ_HELPER && p->text)
        p->text(p->ud, NULL, why);
    s_pending_free(p);
}

static void s_defer(runtime_t *self, s_pending_reset_t *p)
{
    s_pending_reset_t **pp = &self->pending_resets;
    while (*pp)
        pp = &(*pp)->next;
    *pp = p;
}

static void s_pump_timer(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->pump_timer = 0;
    s_pump(self);
}

/* Starts the next queued execution when the kernel is free. */
static void s_pump(runtime_t *self)
{
    if (self->kstate == ST_FAILED) {
        s_fail_queued(self, self->fail_reason);
        return;
    }
    if (self->kstate != ST_READY || self->current || self->barrier_id[0])
        return;
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_QUEUED) {
            s_send_execute(self, ex);
            return;
        }
    }
}

static void s_do_reset(runtime_t *self, bool all, runtime_done_fn *done, void *ud)
{
    char id[WIRE_ID_LEN + 1];
    if (s_send_silent(self, all ? self->lang->reset_all_code : self->lang->reset_code, NULL, id) < 0) {
        done(ud, false, "could not reach the kernel");
        return;
    }
    s_req_t *r = s_req_add(self, REQ_RESET, id);
    r->done = done;
    r->ud = ud;
    r->all = all;
    s_req_bound(r, RESET_TIMEOUT_MS);
}

static void s_on_ready(void *ud, kernel_t *k, json_object *info)
{
    runtime_t *self = ud;
    if (self->restart_on_ready) {
        /* Attached now: ask for the restart that was waiting for this. */
        self->restart_on_ready = false;
        if (kernel_restart_attached(k) == 0)
            return; /* STARTING again; restart_done is answered by the new kernel's on_ready or on_dead */
        runtime_done_fn *d = self->restart_done;
        self->restart_done = NULL;
        d(self->restart_ud, false, "could not ask the attached kernel to restart (it does not answer on control)");
    }
    json_object *li = NULL, *name = NULL;
    if (info && json_object_object_get_ex(info, "language_info", &li) && json_object_object_get_ex(li, "name", &name) &&
        json_object_is_type(name, json_type_string)) {
        free(self->language);
        self->language = s_lower_dup(json_object_get_string(name));
    }
    const char *impl = wire_get_str(info, "implementation");
    free(self->implementation);
    self->implementation = xstrdup(impl ? impl : "");
    self->lang = lang_find(self->language);
    self->kstate = ST_READY;
    json_object_put(self->snapshot);
    self->snapshot = NULL;
    /* A new kernel counts from 0 (an attached one: unknown until its first run). */
    self->exec_count = 0;
    self->snapshot_exec = 0;
    self->rev++;
    self->vars = self->lang ? 0 : -1;
    if (self->lang && self->lang->install && !self->helper_preinstalled) {
        /* Shell requests run in order, so the helper is in place before the
         * first user execution even though we do not wait for this reply. */
        buf_t b;
        buf_init(&b, 0);
        self->lang->install(&b);
        char id[WIRE_ID_LEN + 1];
        if (s_send_silent(self, b.data, NULL, id) == 0)
            s_req_add(self, REQ_INSTALL, id);
        buf_free(&b);
    }
    self->helper_preinstalled = false;
    s_spare_schedule(self);
    if (self->restart_done) {
        runtime_done_fn *done = self->restart_done;
        self->restart_done = NULL;
        done(self->restart_ud, true, "0");
    }
    while (self->pending_resets && self->kstate == ST_READY) {
        s_pending_reset_t *p = self->pending_resets;
        self->pending_resets = p->next;
        if (p->kind == REQ_RESET)
            s_reset(self, p->all, p->seq, p->done, p->ud);
        else if (p->kind == REQ_QUERY)
            runtime_query(self, p->msg_type, p->content, p->reply, p->ud);
        else
            runtime_call_helper(self, p->expr, p->content, p->text, p->ud);
        p->done = NULL;
        p->reply = NULL;
        p->text = NULL;
        s_pending_free(p);
    }
    s_pump(self);
}

static void s_on_msg(void *ud, kernel_t *k, kchan_t ch, wire_msg_t *m)
{
    runtime_t *self = ud;
    if (k != self->kernel)
        return;
    runtime_exec_t *ex = self->current;
    bool mine = ex && m->parent_id && strcmp(m->parent_id, ex->msg_id) == 0;
    switch (ch) {
    case KCHAN_IOPUB:
        if (mine)
            s_exec_iopub(self, ex, m);
        else
            s_req_iopub(self, m);
        break;
    case KCHAN_SHELL:
        if (mine && strcmp(m->msg_type, "execute_reply") == 0)
            s_exec_reply(self, ex, m);
        else
            s_req_reply(self, m);
        break;
    case KCHAN_STDIN:
        if (mine && strcmp(m->msg_type, "input_request") == 0)
            s_exec_input(self, ex, m);
        break;
    case KCHAN_CONTROL:
        s_req_reply(self, m);
        break;
    case KCHAN_COUNT:
        break;
    }
}

static void s_flush_pending(runtime_t *self, const char *why)
{
    if (self->restart_done) {
        runtime_done_fn *done = self->restart_done;
        self->restart_done = NULL;
        done(self->restart_ud, false, why);
    }
    while (self->pending_resets) {
        s_pending_reset_t *p = self->pending_resets;
        self->pending_resets = p->next;
        s_pending_fail(p, why);
    }
    s_drop_reqs(self, why);
}

static void s_on_dead(void *ud, kernel_t *k, const char *why)
{
    runtime_t *self = ud;
    if (k != self->kernel)
        return;
    bool was_ready = self->kstate == ST_READY;
    bool attached = !kernel_owned(k);
    free(self->last_death);
    self->last_death = xstrdup(why);
    self->rev++;
    kernel_destroy(&self->kernel, 0);
    self->lang = NULL;
    int64_t now = loop_now_ms();
    bool give_up = false;
    if (was_ready && !attached) {
        self->deaths[self->ndeaths % DEATH_LIMIT] = now;
        self->ndeaths++;
        give_up = self->ndeaths >= DEATH_LIMIT && now - self->deaths[self->ndeaths % DEATH_LIMIT] < DEATH_WINDOW_MS;
    }
    free(self->fail_reason);
    self->fail_reason = NULL;
    char *run_why;
    bool restart_sent = !self->restart_on_ready;
    self->restart_on_ready = false;
    if (attached && self->restart_done && restart_sent) {
        self->fail_reason = xasprintf("%s; the attached kernel shut down for the restart and nothing started it "
                                      "again (only its owner, such as a Jupyter server, can)", why);
        run_why = xstrdup(self->fail_reason);
    } else if (attached) {
        self->fail_reason = xasprintf("%s; the attached kernel is gone (start it again and reconnect)", why);
        run_why = xstrdup(self->fail_reason);
    } else if (!was_ready) {
        self->fail_reason = xstrdup(why);
        run_why = xstrdup(why);
    } else if (give_up) {
        self->fail_reason = xasprintf("%s; the kernel died %d times within %d s, so it is not restarted "
                                      "automatically (ctl restart starts a new one)",
                                      why, DEATH_LIMIT, DEATH_WINDOW_MS / 1000);
        run_why = xstrdup(self->fail_reason);
    } else {
        run_why = xasprintf("%s; a new kernel is starting, variables are lost", why);
    }
    bool restart = was_ready && !attached && !give_up;
    /* What the callbacks below see: requests they make wait for the new
     * kernel (or fail with the reason), none finds a half-replaced one. */
    self->kstate = restart ? ST_STARTING : ST_FAILED;
    /* Whether a caller follows a run this death ends: its result tells. */
    bool told = false;
    for (runtime_exec_t *ex = self->execs; ex && !told; ex = ex->next)
        told = ex->state != RUNTIME_EXEC_DONE && ex->has_obs;
    s_drop_reqs(self, run_why);
    if (self->current)
        s_finish(self, self->current, RUNTIME_FAILED, run_why);
    char *queued_why = xasprintf("not run: %s", run_why);
    s_fail_queued(self, queued_why);
    free(queued_why);
    if (restart) {
        self->restarts++;
        free(self->restart_note);
        self->restart_note = told ? NULL : xasprintf("[%s; a new kernel was started, variables are lost]", why);
        /* Pending restart/reset requests carry over to the new kernel. */
        s_start_kernel(self);
        if (self->kstate == ST_FAILED)
            s_flush_pending(self, self->fail_reason);
    } else {
        s_flush_pending(self, self->fail_reason);
    }
    free(run_why);
}

static void s_on_heartbeat(void *ud, kernel_t *k, bool ok)
{
    runtime_t *self = ud;
    self->rev++;
    (void)k;
    (void)ok;
}

static const kernel_events_t s_events = {
    .on_ready = s_on_ready,
    .on_msg = s_on_msg,
    .on_dead = s_on_dead,
    .on_heartbeat = s_on_heartbeat,
};

static void s_start_kernel(runtime_t *self)
{
    kernel_opts_t ko = {
        .spec = self->spec,
        .argv = self->argv,
        .existing = self->existing,
        .cwd = self->cwd,
        .env_extra = self->env_extra,
        .runtime_dir = self->runtime_dir,
        .boot_timeout_ms = self->boot_timeout_ms,
        .connect = self->connect,
        .connect_ud = self->connect_ud,
    };
    char err[1024];
    self->kstate = ST_STARTING;
    self->kernel = kernel_start(self->loop, self->zctx, &ko, &s_events, self, err, sizeof err);
    if (!self->kernel) {
        self->kstate = ST_FAILED;
        free(self->fail_reason);
        self->fail_reason = xstrdup(err);
        log_error("%s", err);
        /* Report from the loop, never from inside the caller. */
        if (!self->pump_timer)
            self->pump_timer = loop_timer(self->loop, 0, s_pump_timer, self);
    }
}

/* ------------------------------------------------------------ the warm spare */

static void s_spare_drop(runtime_t *self)
{
    kernel_destroy(&self->spare, 0);
    json_object_put(self->spare_info);
    self->spare_info = NULL;
    self->spare_ready = false;
}

/* The spare is ready: install the helper now, so swapping it in costs
 * nothing but the swap. Its replies are not awaited (it is nobody's yet). */
static void s_spare_ready(void *ud, kernel_t *k, json_object *info)
{
    runtime_t *self = ud;
    json_object *li = NULL, *name = NULL;
    const char *language = info && json_object_object_get_ex(info, "language_info", &li) &&
                                   json_object_object_get_ex(li, "name", &name)
                               ? json_object_get_string(name)
                               : NULL;
    const lang_t *lang = lang_find(language);
    if (lang && lang->install) {
        buf_t b;
        buf_init(&b, 0);
        lang->install(&b);
        buf_t c;
        buf_init(&c, 0);
        buf_puts(&c, "{\"code\":");
        buf_put_json_str(&c, b.data, b.len);
        buf_puts(&c, ",\"silent\":true,\"store_history\":false,\"user_expressions\":{},\"allow_stdin\":false,"
                     "\"stop_on_error\":false}");
        kernel_send(k, KCHAN_SHELL, "execute_request", c.data, NULL, NULL);
        buf_free(&c);
        buf_free(&b);
    }
    json_object_put(self->spare_info);
    self->spare_info = json_object_get(info);
    self->spare_ready = true;
    self->spare_failures = 0;
    log_info("spare kernel ready");
}

static void s_spare_msg(void *ud, kernel_t *k, kchan_t ch, wire_msg_t *m)
{
    /* Nothing runs on the spare until it is swapped in. */
}

static void s_spare_dead(void *ud, kernel_t *k, const char *why)
{
    runtime_t *self = ud;
    log_warn("spare kernel: %s", why);
    s_spare_drop(self);
    self->spare_failures++;
    s_spare_schedule(self);
}

static const kernel_events_t s_spare_events = {
    .on_ready = s_spare_ready,
    .on_msg = s_spare_msg,
    .on_dead = s_spare_dead,
};

static void s_spare_start(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->spare_timer = 0;
    if (self->spare || self->existing)
        return;
    kernel_opts_t ko = {
        .spec = self->spec,
        .argv = self->argv,
        .cwd = self->cwd,
        .env_extra = self->env_extra,
        .runtime_dir = self->runtime_dir,
        .boot_timeout_ms = self->boot_timeout_ms,
        .connect = self->connect,
        .connect_ud = self->connect_ud,
    };
    char err[1024];
    self->spare = kernel_start(self->loop, self->zctx, &ko, &s_spare_events, self, err, sizeof err);
    if (!self->spare) {
        log_warn("spare kernel: %s", err);
        self->spare_failures++;
    }
}

/* Every automatic restart is announced in the next result, as a death
 * during a run is in that run's: the note goes first in the output of the
 * next run queued. */
static void s_announce_restart(runtime_t *self, runtime_exec_t *ex)
{
    if (!self->restart_note)
        return;
    output_write_block(ex->out, self->restart_note, strlen(self->restart_note));
    FREE_AND_NULL(self->restart_note);
}

/* Boots a spare in the background when --spare asks for one and there is
 * none, a little after the session's kernel is ready (so the two do not
 * compete while the first one boots). */
static void s_spare_schedule(runtime_t *self)
{
    if (!self->want_spare || self->existing || self->spare || self->spare_timer ||
        self->spare_failures >= SPARE_RETRIES)
        return;
    self->spare_timer = loop_timer(self->loop, SPARE_DELAY_MS * (1 + self->spare_failures), s_spare_start, self);
}

/* Swaps the ready spare in as the session's kernel. done is called as for a
 * restart. Returns false (and changes nothing) when there is no ready spare. */
static bool s_spare_swap(runtime_t *self, runtime_done_fn *done, void *ud)
{
    if (!self->spare || !self->spare_ready || kernel_state(self->spare) != KERNEL_READY)
        return false;
    self->rev++;
    self->ndeaths = 0;
    FREE_AND_NULL(self->restart_note); /* asked for: the restart's answer tells */
    kernel_destroy(&self->kernel, 0);
    self->lang = NULL;
    self->kstate = ST_STARTING; /* for the callbacks below: no kernel until the swap */
    if (self->current)
        s_finish(self, self->current, RUNTIME_FAILED, "interrupted: the kernel was restarted");
    s_fail_queued(self, "not run: the kernel was restarted");
    s_drop_reqs(self, "the kernel was restarted");
    self->kernel = self->spare;
    self->spare = NULL;
    json_object *info = self->spare_info;
    self->spare_info = NULL;
    self->spare_ready = false;
    kernel_set_events(self->kernel, &s_events, self);
    self->restart_done = done;
    self->restart_ud = ud;
    self->helper_preinstalled = true;
    self->kstate = ST_STARTING;
    s_on_ready(self, self->kernel, info); /* becomes ready now; schedules the next spare */
    json_object_put(info);
    return true;
}

/* ------------------------------------------------------------ public API */

runtime_t *runtime_new(loop_t *loop, void *zctx, const runtime_opts_t *o, char *err, size_t errlen)
{
    runtime_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->zctx = zctx;
    self->kernel_name = xstrdup(o->kernel_name ? o->kernel_name : "python3");
    self->existing = xstrdup(o->existing);
    self->cwd = xstrdup(o->cwd);
    self->runtime_dir = xstrdup(o->runtime_dir);
    self->assets_dir = xstrdup(o->assets_dir);
    self->assets = o->assets;
    self->interpreter = xstrdup(o->interpreter);
    self->env_note = xstrdup(o->env_note);
    self->argv = strv_dup(o->argv);
    self->env_extra = strv_dup(o->env_extra);
    self->boot_timeout_ms = o->boot_timeout_ms;
    self->allow_restart = o->allow_restart;
    self->want_spare = o->spare;
    self->connect = o->connect;
    self->connect_ud = o->connect_ud;
    self->vars = -1;
    self->next_id = 1;
    if (!self->existing && !self->argv) {
        self->spec = kernelspec_find(self->kernel_name, err, errlen);
        if (!self->spec) {
            runtime_destroy(&self, 0);
            return NULL;
        }
    }
    if (self->spec && self->spec->language[0])
        self->language = s_lower_dup(self->spec->language);
    else
        self->language = xstrdup(self->existing ? "kernel" : "python");
    s_start_kernel(self);
    return self;
}

void runtime_destroy(runtime_t **self_p, int grace_ms)
{
    if (!self_p || !*self_p)
        return;
    runtime_t *self = *self_p;
    loop_timer_cancel(self->loop, self->trim_timer);
    loop_timer_cancel(self->loop, self->pump_timer);
    loop_timer_cancel(self->loop, self->spare_timer);
    loop_timer_cancel(self->loop, self->collect_timer);
    s_spare_drop(self);
    kernel_destroy(&self->kernel, grace_ms);
    /* Killed kernels are reaped on SIGCHLD; none may outlive the runtime. */
    kernel_reap_all(2000);
    s_flush_pending(self, "rat-py is shutting down");
    while (self->execs) {
        runtime_exec_t *ex = self->execs;
        ex->has_obs = false;
        s_exec_free(ex);
    }
    kernelspec_destroy(&self->spec);
    strv_free(self->argv);
    strv_free(self->env_extra);
    free(self->kernel_name);
    free(self->existing);
    free(self->cwd);
    free(self->runtime_dir);
    free(self->assets_dir);
    free(self->interpreter);
    free(self->env_note);
    free(self->fail_reason);
    free(self->language);
    free(self->implementation);
    json_object_put(self->snapshot);
    free(self->last_death);
    free(self->restart_note);
    free(self);
    *self_p = NULL;
}

void runtime_on_sigchld(runtime_t *self)
{
    if (self->kernel)
        kernel_check_exit(self->kernel);
    if (self->spare)
        kernel_check_exit(self->spare);
    kernel_reap_destroyed();
}

runtime_exec_t *runtime_execute(runtime_t *self, const char *code, bool allow_input)
{
    runtime_exec_t *ex = xcalloc(1, sizeof *ex);
    ex->rt = self;
    ex->id = self->next_id++;
    ex->code = xstrdup(code);
    ex->allow_input = allow_input;
    ex->state = RUNTIME_EXEC_QUEUED;
    ex->vars = -1;
    ex->claimed = true;
    ex->out = output_new(self->assets_dir);
    s_announce_restart(self, ex);
    runtime_exec_t **pp = &self->execs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = ex;
    if (self->kstate == ST_FAILED && !self->existing) {
        /* A run is a reason to try again: the cause may be fixed by now
         * (e.g. ipykernel installed). Failures are reported from the loop. */
        s_start_kernel(self);
    } else if (self->kstate == ST_FAILED) {
        if (!self->pump_timer)
            self->pump_timer = loop_timer(self->loop, 0, s_pump_timer, self);
    } else {
        s_pump(self);
    }
    return ex;
}

runtime_exec_t *runtime_current(runtime_t *self)
{
    return self->current;
}

runtime_exec_t *runtime_detached(runtime_t *self, uintptr_t owner)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_INPUT && ex->owner && ex->owner != owner)
            continue; /* its prompt and output are its owner's */
        if (ex->detached && !ex->claimed) {
            ex->claimed = true;
            ex->detached = false;
            return ex;
        }
    }
    return NULL;
}

int runtime_cancel_run(runtime_t *self, runtime_exec_t *ex, runtime_cancel_fn *cb, void *ud)
{
    if (ex->state == RUNTIME_EXEC_DONE)
        return -1;
    /* One signal per second at most: a second SIGINT close behind the first
     * tends to land in the kernel's own dispatch code, which drops the run. */
    bool signal_now = ex->state != RUNTIME_EXEC_QUEUED && !ex->got_reply && !ex->interrupt_pending && ex->got_busy &&
                      !(ex->interrupt_us && loop_now_us() - ex->interrupt_us < INTERRUPT_SPACING_MS * 1000);
    if (signal_now && (!self->kernel || kernel_interrupt(self->kernel) < 0))
        return -1;
    if (cb) {
        s_canceller_t *c = xcalloc(1, sizeof *c);
        c->cb = cb;
        c->ud = ud;
        c->next = ex->cancellers;
        ex->cancellers = c;
    }
    if (ex->state == RUNTIME_EXEC_QUEUED) {
        s_finish(self, ex, RUNTIME_CANCELLED, "cancelled before it started");
        return 0;
    }
    self->rev++;
    if (ex->got_reply || ex->interrupt_pending)
        return 0; /* ending already, or interrupted once the kernel takes it */
    if (!ex->got_busy) {
        /* Sent, not yet taken: a signal now would hit whatever the kernel
         * does before it (or make it drop the request). */
        ex->interrupt_pending = true;
        s_watch(ex, LOST_PROBE_MS);
        return 0;
    }
    if (signal_now)
        ex->interrupt_us = loop_now_us();
    s_watch(ex, LOST_PROBE_MS);
    return 0;
}

int runtime_cancel(runtime_t *self, runtime_exec_t *ex)
{
    return runtime_cancel_run(self, ex, NULL, NULL);
}

void runtime_cancel_forget(runtime_t *self, void *ud)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        s_canceller_t **pp = &ex->cancellers;
        while (*pp) {
            if ((*pp)->ud == ud) {
                s_canceller_t *c = *pp;
                *pp = c->next;
                free(c);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
}

runtime_exec_t *runtime_first_queued(runtime_t *self)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state == RUNTIME_EXEC_QUEUED)
            return ex;
    return NULL;
}

bool runtime_can_restart(const runtime_t *self, const char **why)
{
    if (self->existing && !self->allow_restart) {
        if (why)
            *why = "this kernel belongs to another program (attached with --existing); restarting it is "
                   "refused unless rat-py runs with --allow-restart";
        return false;
    }
    return true;
}

void runtime_restart(runtime_t *self, runtime_done_fn *done, void *ud)
{
    const char *why = NULL;
    if (!runtime_can_restart(self, &why)) {
        done(ud, false, why);
        return;
    }
    if (self->restart_done) {
        done(ud, false, "a restart is already in progress");
        return;
    }
    if (s_spare_swap(self, done, ud))
        return;
    self->rev++;
    self->restart_done = done;
    self->restart_ud = ud;
    self->ndeaths = 0;
    FREE_AND_NULL(self->restart_note); /* asked for: the restart's answer tells */
    if (self->existing && self->kernel && self->kstate == ST_STARTING) {
        /* Still attaching: the kernel's session is not known yet, so the
         * old kernel answering before it shuts down could not be told from
         * a new one, and the restart would look done at once (issue 11
         * item 7). Ask once attached; runs queued until then wait for the
         * kernel after the restart. */
        self->restart_on_ready = true;
        s_fail_queued(self, "not run: the kernel was restarted");
        return;
    }
    /* An attached kernel is restarted by its owner, on request; ours are
     * replaced. */
    bool attached_restart = self->existing && self->kernel && kernel_restart_attached(self->kernel) == 0;
    if (!attached_restart)
        kernel_destroy(&self->kernel, 0);
    self->lang = NULL;
    self->kstate = ST_STARTING;
    if (self->current)
        s_finish(self, self->current, RUNTIME_FAILED, "interrupted: the kernel was restarted");
    s_fail_queued(self, "not run: the kernel was restarted");
    s_drop_reqs(self, "the kernel was restarted");
    if (attached_restart)
        return;
    s_start_kernel(self);
    if (self->kstate == ST_FAILED) {
        runtime_done_fn *d = self->restart_done;
        self->restart_done = NULL;
        d(self->restart_ud, false, self->fail_reason);
    }
}

/* A reset waits its turn: runs that arrived before it (ids below seq) make
 * it BUSY; runs that arrived after it (possible while the kernel starts)
 * execute after it, in order. */
static void s_reset(runtime_t *self, bool all, unsigned long seq, runtime_done_fn *done, void *ud)
{
    runtime_exec_t *busy = self->current;
    for (runtime_exec_t *ex = self->execs; ex && !busy; ex = ex->next)
        if (ex->state != RUNTIME_EXEC_DONE && ex->id < seq)
            busy = ex;
    if (busy) {
        char text[256];
        snprintf(text, sizeof text, "BUSY: exec #%ld is %s; reset needs an idle kernel (ctl cancel stops it)",
                 busy->number ? busy->number : (long)busy->id,
                 busy->state == RUNTIME_EXEC_INPUT ? "waiting for input"
                 : busy->state == RUNTIME_EXEC_QUEUED ? "queued" : "running");
        done(ud, false, text);
        return;
    }
    /* Everything cleared is what a fresh kernel is: with a warm spare that
     * is the quickest reset there is. */
    if (all && s_spare_swap(self, done, ud))
        return;
    if (self->kstate == ST_READY && !self->lang) {
        done(ud, false, "reset is not available for this kernel's language; ctl restart gives a fresh one");
        return;
    }
    if (self->kstate == ST_READY && all && !self->lang->reset_all_code) {
        char text[256];
        snprintf(text, sizeof text, "reset with scope all (history and the execution counter) is not available "
                                    "for %s kernels; ctl(op=\"reset\") clears the variables, ctl(op=\"restart\") "
                                    "gives a fresh kernel",
                 self->language);
        done(ud, false, text);
        return;
    }
    if (self->kstate != ST_READY) {
        if (self->kstate == ST_FAILED && !self->existing)
            s_start_kernel(self);
        if (self->kstate == ST_FAILED) {
            done(ud, false, self->fail_reason);
            return;
        }
        s_pending_reset_t *p = xcalloc(1, sizeof *p);
        p->kind = REQ_RESET;
        p->all = all;
        p->seq = seq;
        p->done = done;
        p->ud = ud;
        s_defer(self, p);
        return;
    }
    s_do_reset(self, all, done, ud);
}

void runtime_reset(runtime_t *self, bool all, runtime_done_fn *done, void *ud)
{
    s_reset(self, all, self->next_id, done, ud);
}

void runtime_status(runtime_t *self, runtime_status_t *out)
{
    memset(out, 0, sizeof *out);
    out->language = self->language;
    out->state = s_state_text(self);
    out->exec_count = self->exec_count;
    out->rev = self->rev;
    out->up_ms = self->kernel ? loop_now_ms() - kernel_started_ms(self->kernel) : 0;
    out->running = self->current;
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state == RUNTIME_EXEC_QUEUED)
            out->queued++;
    out->vars = self->vars;
    out->pid = self->kernel ? kernel_pid(self->kernel) : 0;
    out->kernel_name = self->existing ? NULL : self->spec ? self->spec->name : NULL;
    out->display_name = self->spec ? self->spec->display_name : NULL;
    out->interpreter = self->interpreter;
    out->env_note = self->env_note;
    out->connection_file = self->kernel ? kernel_connection_file(self->kernel) : self->existing;
    out->log_path = self->kernel ? kernel_log_path(self->kernel) : NULL;
    out->last_death = self->kstate == ST_FAILED ? self->fail_reason : self->last_death;
    out->restarts = self->restarts;
    /* Only ipykernel answers heartbeats from a thread of its own; IRkernel
     * and others answer from the loop that runs the code, so their silence
     * while busy means nothing. */
    out->heartbeat_ok = self->kernel ? kernel_heartbeat_ok(self->kernel) : false;
    if (self->current && (!self->implementation || strcmp(self->implementation, "ipython") != 0))
        out->heartbeat_ok = true;
    out->attached = self->existing != NULL;
    out->spare = !self->want_spare ? NULL : self->spare_ready ? "ready" : self->spare ? "starting" : "none";
    out->spare_pid = self->spare ? kernel_pid(self->spare) : 0;
    out->boot_ms = self->kernel ? kernel_boot_ms(self->kernel) : 0;
    out->reset_ms = -1;
    for (s_req_t *r = self->reqs; r; r = r->next)
        if (r->kind == REQ_RESET)
            out->reset_ms = loop_now_ms() - r->sent_ms;
    if (self->kernel)
        kernel_stats(self->kernel, &out->wire);
}

const char *runtime_language(runtime_t *self)
{
    return self->language;
}

json_object *runtime_snapshot(runtime_t *self, long *exec_count)
{
    if (exec_count)
        *exec_count = self->snapshot_exec;
    return self->snapshot;
}

bool runtime_has_helper(runtime_t *self)
{
    return self->lang != NULL;
}

bool runtime_idle(runtime_t *self)
{
    if (self->kstate != ST_READY || self->current)
        return false;
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state != RUNTIME_EXEC_DONE)
            return false;
    return true;
}

/* Requests before the kernel is ready wait for it; a failed kernel is
 * restarted for them like for a run. Returns true when p was deferred or
 * failed (and consumed), false when the kernel is ready now. */
static bool s_wait_ready(runtime_t *self, s_pending_reset_t *p)
{
    if (self->kstate == ST_READY) {
        return false;
    }
    if (self->kstate == ST_FAILED && !self->existing)
        s_start_kernel(self);
    if (self->kstate == ST_FAILED) {
        s_pending_fail(p, self->fail_reason);
        return true;
    }
    s_defer(self, p);
    return true;
}

void runtime_query(runtime_t *self, const char *msg_type, const char *content, runtime_reply_fn *cb, void *ud)
{
    s_pending_reset_t *p = xcalloc(1, sizeof *p);
    p->kind = REQ_QUERY;
    p->msg_type = xstrdup(msg_type);
    p->content = xstrdup(content);
    p->reply = cb;
    p->ud = ud;
    if (s_wait_ready(self, p))
        return;
    kchan_t ch = KCHAN_SHELL;
    if (!runtime_idle(self)) {
        /* The shell channel is busy with the running code. ipykernel also
         * answers shell requests on control, which has its own thread. */
        if (!self->implementation || strcmp(self->implementation, "ipython") != 0) {
            s_pending_fail(p, "busy: the kernel answers only after the running code finishes");
            return;
        }
        ch = KCHAN_CONTROL;
    }
    char id[WIRE_ID_LEN + 1];
    if (kernel_send(self->kernel, ch, msg_type, content, NULL, id) < 0) {
        s_pending_fail(p, "could not reach the kernel");
        return;
    }
    s_req_t *r = s_req_add(self, REQ_QUERY, id);
    r->reply = cb;
    r->ud = ud;
    s_req_bound(r, QUERY_TIMEOUT_MS);
    p->reply = NULL;
    s_pending_free(p);
}

void runtime_call_helper(runtime_t *self, const char *fn, const char *json_arg, runtime_text_fn *cb, void *ud)
{
    s_pending_reset_t *p = xcalloc(1, sizeof *p);
    p->kind = REQ_HELPER;
    p->expr = xstrdup(fn);
    p->content = xstrdup(json_arg);
    p->text = cb;
    p->ud = ud;
    if (s_wait_ready(self, p))
        return;
    if (!self->lang) {
        s_pending_fail(p, "no helper for this kernel's language");
        return;
    }
    if (!runtime_idle(self)) {
        s_pending_fail(p, "busy");
        return;
    }
    s_req_t *r = NULL;
    if (self->lang->channel == LANG_VIA_STDOUT) {
        r = s_send_capture(self, REQ_HELPER, fn, json_arg);
    } else {
        buf_t expr;
        buf_init(&expr, 0);
        self->lang->call(&expr, fn, json_arg);
        char id[WIRE_ID_LEN + 1];
        if (s_send_silent(self, "", expr.data, id) == 0)
            r = s_req_add(self, REQ_HELPER, id);
        buf_free(&expr);
    }
    if (!r) {
        s_pending_fail(p, "could not reach the kernel");
        return;
    }
    r->text = cb;
    r->ud = ud;
    s_req_bound(r, QUERY_TIMEOUT_MS);
    p->text = NULL;
    s_pending_free(p);
}

/* ------------------------------------------------------------ executions */

void runtime_exec_observe(runtime_exec_t *ex, const runtime_observer_t *obs, void *ud)
{
    if (obs) {
        ex->obs = *obs;
        ex->obs_ud = ud;
        ex->has_obs = true;
    } else {
        ex->has_obs = false;
        ex->obs_ud = NULL;
    }
}

void runtime_exec_release(runtime_exec_t *ex, bool detach)
{
    ex->has_obs = false;
    ex->claimed = false;
    ex->detached = detach;
    s_collect(ex->rt);
}

int runtime_exec_claim(runtime_exec_t *ex)
{
    if (ex->claimed)
        return -1;
    ex->claimed = true;
    ex->detached = false;
    return 0;
}

void runtime_exec_set_owner(runtime_exec_t *ex, uintptr_t owner)
{
    ex->owner = owner;
}

uintptr_t runtime_exec_owner(const runtime_exec_t *ex)
{
    return ex->owner;
}

runtime_exec_state_t runtime_exec_state(const runtime_exec_t *ex)
{
    return ex->state;
}

runtime_outcome_t runtime_exec_outcome(const runtime_exec_t *ex)
{
    return ex->outcome;
}

output_t *runtime_exec_output(runtime_exec_t *ex)
{
    return ex->out;
}

long runtime_exec_number(const runtime_exec_t *ex)
{
    return ex->number;
}

unsigned long runtime_exec_id(const runtime_exec_t *ex)
{
    return ex->id;
}

int64_t runtime_exec_elapsed_ms(const runtime_exec_t *ex)
{
    if (!ex->sent_us)
        return 0;
    int64_t end = ex->state == RUNTIME_EXEC_DONE ? ex->done_us : loop_now_us();
    int64_t waiting = ex->input_total_us;
    if (ex->state == RUNTIME_EXEC_INPUT)
        waiting += end - ex->input_since_us;
    return (end - ex->sent_us - waiting) / 1000;
}

void runtime_exec_error(const runtime_exec_t *ex, runtime_error_t *out)
{
    out->ename = ex->ename;
    out->evalue = ex->evalue;
    out->line = ex->line;
    out->source = ex->source;
}

long runtime_exec_vars(const runtime_exec_t *ex)
{
    return ex->vars;
}

long runtime_exec_assets(const runtime_exec_t *ex)
{
    return ex->assets;
}

const char *runtime_exec_why(const runtime_exec_t *ex)
{
    return ex->why;
}

const char *runtime_exec_prompt(const runtime_exec_t *ex, bool *password)
{
    if (password)
        *password = ex->password;
    return ex->state == RUNTIME_EXEC_INPUT ? ex->prompt : NULL;
}

int runtime_exec_answer(runtime_exec_t *ex, const char *value)
{
    runtime_t *self = ex->rt;
    if (ex->state != RUNTIME_EXEC_INPUT || !self->kernel)
        return -1;
    buf_t b;
    buf_init(&b, 0);
    buf_puts(&b, "{\"value\":");
    buf_put_json_str(&b, value, strlen(value));
    buf_puts(&b, "}");
    int rc = kernel_send(self->kernel, KCHAN_STDIN, "input_reply", b.data, ex->input_header, NULL);
    buf_free(&b);
    if (rc < 0)
        return -1;
    ex->input_total_us += loop_now_us() - ex->input_since_us;
    ex->state = RUNTIME_EXEC_RUNNING;
    FREE_AND_NULL(ex->prompt);
    json_object_put(ex->input_header);
    ex->input_header = NULL;
    self->rev++;
    return 0;
}

bool runtime_exec_acknowledged(const runtime_exec_t *ex)
{
    return ex->got_busy;
}

int64_t runtime_exec_age_ms(const runtime_exec_t *ex)
{
    return ex->sent_us ? (loop_now_us() - ex->sent_us) / 1000 : 0;
}

int64_t runtime_exec_interrupted_ms(const runtime_exec_t *ex)
{
    return ex->interrupt_us ? (loop_now_us() - ex->interrupt_us) / 1000 : -1;
}

size_t runtime_exec_position(const runtime_exec_t *ex)
{
    if (ex->state != RUNTIME_EXEC_QUEUED)
        return 0;
    size_t n = ex->rt->current ? 1 : 0;
    for (runtime_exec_t *e = ex->rt->execs; e && e != ex; e = e->next)
        if (e->state == RUNTIME_EXEC_QUEUED)
            n++;
    return n;
}
