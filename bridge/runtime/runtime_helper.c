/* runtime_helper: the kernel-side helper protocol (how each language carries
 * the helper's answers: LANG_VIA_*), the snapshot, internal requests and
 * their bounds, completion and inspection queries. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static long s_take_snapshot_payload(runtime_t *self, json_object *content);
static long s_take_snapshot(runtime_t *self, json_object *content);
static void s_snapshot_timeout(loop_t *loop, void *ud);
static rt_req_t *s_send_capture(runtime_t *self, rt_req_kind_t kind, const char *fn, const char *json_arg);
static const char *s_user_expr(json_object *content, const char **err);
static long s_take_snapshot_obj(runtime_t *self, json_object *snap);
static long s_take_snapshot_text(runtime_t *self, const char *text);
static void s_req_deadline(loop_t *loop, void *ud);
static void s_req_free(rt_req_t *r);
static int s_send_capture_msg(runtime_t *self, const char *fn, const char *json_arg, char id[WIRE_ID_LEN + 1]);
static void s_capture_resend(loop_t *loop, void *ud);
static void s_req_done(runtime_t *self, rt_req_t *r, json_object *content, const char *text);
static rt_req_t *s_req_take(runtime_t *self, const char *parent_id, bool remove);
static void s_capture_maybe_done(runtime_t *self, rt_req_t *r);
static void s_complete_reply(void *ud, json_object *content, const char *err);
static void s_inspect_reply(void *ud, json_object *content, const char *err);

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
    self->snapshot_seq++;
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

static void s_snapshot_timeout(loop_t *loop, void *ud)
{
    runtime_exec_t *ex = ud;
    runtime_t *self = ex->rt;
    ex->snapshot_timer = 0;
    /* The run's own outcome: a slow variable count (an R overview after a
     * successful run) must not turn success into an error. */
    rt_finish(self, ex, ex->outcome, NULL);
    rt_pump(self);
}

rt_req_t *rt_req_add(runtime_t *self, rt_req_kind_t kind, const char *msg_id)
{
    rt_req_t *r = xcalloc(1, sizeof *r);
    r->rt = self;
    r->sent_ms = loop_now_ms();
    memcpy(r->msg_id, msg_id, sizeof r->msg_id);
    r->kind = kind;
    r->next = self->reqs;
    self->reqs = r;
    return r;
}

/* The caller of r waited long enough: tell it why. A reset stays listed, so
 * its late reply still updates what it should; a query or helper call has
 * nobody left to answer and is dropped, so a kernel stuck for hours does
 * not collect one entry per look. */
static void s_req_deadline(loop_t *loop, void *ud)
{
    rt_req_t *r = ud;
    runtime_t *self = r->rt;
    r->deadline_timer = 0;
    bool hb = self->kernel && kernel_heartbeat_ok(self->kernel);
    int64_t age = loop_now_ms() - r->sent_ms;
    if ((r->kind == REQ_HELPER || (r->kind == REQ_QUERY && !self->current)) && hb && age < HELPER_TIMEOUT_MS) {
        /* A live kernel may take a while over a helper call, or over a
         * completion while no code runs (Jedi's first one parses the
         * builtins' stubs: 0.7 s of CPU with an empty cache, several
         * seconds on a loaded machine); a silent one will not answer at
         * all. While code runs, 3 s without an answer means it holds the
         * interpreter, and waiting longer helps nobody. */
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
        rt_changed(self);
        snprintf(why + strlen(why), sizeof why - strlen(why),
                 "; the reset is still queued in the kernel and happens when it resumes");
    }
    runtime_done_fn *done = r->done;
    rt_reply_fn *reply = r->reply;
    runtime_text_fn *text = r->text;
    void *cb_ud = r->ud;
    r->done = NULL;
    r->reply = NULL;
    r->text = NULL;
    if (r->kind == REQ_QUERY || r->kind == REQ_HELPER) {
        for (rt_req_t **pp = &self->reqs; *pp; pp = &(*pp)->next) {
            if (*pp == r) {
                *pp = r->next;
                s_req_free(r);
                break;
            }
        }
    }
    if (done)
        done(cb_ud, false, why);
    else if (reply)
        reply(cb_ud, NULL, why);
    else if (text)
        text(cb_ud, NULL, why);
}

void rt_req_bound(rt_req_t *r, int64_t ms)
{
    r->deadline_timer = loop_timer(r->rt->loop, ms, s_req_deadline, r);
}

static void s_req_free(rt_req_t *r)
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

/* The user expression that rides along with a user's run (written into
 * snap): the snapshot call, for a helper that answers in user_expressions
 * when the reply's payload does not carry the snapshot; NULL otherwise. */
const char *rt_helper_run_expr(runtime_t *self, buf_t *snap)
{
    if (!self->lang || self->lang->channel != LANG_VIA_USER_EXPRESSIONS || self->lang->snapshot_in_payload)
        return NULL;
    self->lang->call(snap, "snap", NULL);
    return buf_str(snap);
}

/* Takes the snapshot a run's execute_reply carries: in its payload (then
 * returns true), or in user_expressions, which ride along only with a run
 * that succeeded (ok). */
bool rt_helper_reply_snapshot(runtime_t *self, json_object *content, bool ok)
{
    bool have = self->lang && self->lang->snapshot_in_payload && s_take_snapshot_payload(self, content) >= 0;
    if (ok && !have)
        s_take_snapshot(self, content);
    return have;
}

/* The footer's variable count must be true. When the reply carried no
 * snapshot (have_snapshot false) and the run failed, or the helper answers
 * on stdout, asks with a separate request; ex finishes when its answer is
 * in (or after SNAPSHOT_TIMEOUT_MS). */
void rt_helper_run_snapshot(runtime_t *self, runtime_exec_t *ex, bool have_snapshot)
{
    bool ask = self->lang && !have_snapshot &&
               (ex->outcome == RUNTIME_ERROR || self->lang->channel == LANG_VIA_STDOUT);
    rt_req_t *r = NULL;
    char id[WIRE_ID_LEN + 1];
    if (ask && self->lang->channel == LANG_VIA_STDOUT)
        r = s_send_capture(self, REQ_SNAPSHOT, "snap", NULL);
    else if (ask && rt_send_silent(self, "", NULL, id) == 0)
        r = rt_req_add(self, REQ_SNAPSHOT, id);
    if (r) {
        r->ex = ex;
        ex->snapshot_timer = loop_timer(self->loop, SNAPSHOT_TIMEOUT_MS, s_snapshot_timeout, ex);
    }
}

/* Sends a silent execute (no history, no output broadcast to us). With a
 * user_expressions helper, expr (default: the snapshot; "": none) rides
 * along. */
int rt_send_silent(runtime_t *self, const char *code, const char *expr, char id_out[WIRE_ID_LEN + 1])
{
    buf_t b, snap;
    buf_init(&b, 0);
    buf_init(&snap, 0);
    if (!expr && self->lang && self->lang->channel == LANG_VIA_USER_EXPRESSIONS) {
        self->lang->call(&snap, "snap", NULL);
        expr = snap.data;
    } else if (expr && !*expr) {
        expr = NULL;
    }
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = code, .rat_expr = expr, .silent = true});
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
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = code.data, .code_len = code.len});
    int rc = kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, id);
    buf_free(&b);
    buf_free(&code);
    return rc;
}

static rt_req_t *s_send_capture(runtime_t *self, rt_req_kind_t kind, const char *fn, const char *json_arg)
{
    char id[WIRE_ID_LEN + 1];
    if (s_send_capture_msg(self, fn, json_arg, id) < 0)
        return NULL;
    rt_req_t *r = rt_req_add(self, kind, id);
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
    rt_req_t *r = ud;
    r->resend_timer = 0;
    if (s_send_capture_msg(r->rt, r->fn, r->arg, r->msg_id) < 0)
        r->msg_id[0] = '\0'; /* unreachable kernel: the caller's timeout or the kernel's death ends it */
}

/* An internal request is answered: content is the reply (borrowed) and,
 * for captured helper calls, text what the helper printed. */
static void s_req_done(runtime_t *self, rt_req_t *r, json_object *content, const char *text)
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
             r->kind != REQ_BARRIER && r->kind != REQ_DETACH)
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
            rt_probe_answered(self, r->ex);
        break;
    case REQ_BARRIER:
        rt_barrier_answered(self);
        break;
    case REQ_MOVE:
        rt_move_answered(self, ok, false, wire_get_str(content, "evalue"));
        break;
    case REQ_DETACH:
        self->detached = true;
        if (!ok)
            log_info("the kernel-side helper could not undo its changes: %s",
                     wire_get_str(content, "evalue") ? wire_get_str(content, "evalue") : "?");
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
            rt_maybe_done(self, r->ex);
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
        rt_changed(self);
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

static rt_req_t *s_req_take(runtime_t *self, const char *parent_id, bool remove)
{
    if (!parent_id)
        return NULL;
    rt_req_t **pp = &self->reqs;
    while (*pp && strcmp((*pp)->msg_id, parent_id) != 0)
        pp = &(*pp)->next;
    rt_req_t *r = *pp;
    if (r && remove)
        *pp = r->next;
    return r;
}

/* A captured helper call is complete once its reply and its idle are in
 * (iopub and shell are separate sockets: output may trail the reply). */
static void s_capture_maybe_done(runtime_t *self, rt_req_t *r)
{
    if (!r->got_reply || !r->got_idle)
        return;
    s_req_take(self, r->msg_id, true);
    s_req_done(self, r, r->reply_content, buf_str(&r->out));
}

void rt_req_reply(runtime_t *self, wire_msg_t *m)
{
    rt_req_t *r = s_req_take(self, m->parent_id, false);
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
void rt_req_iopub(runtime_t *self, wire_msg_t *m)
{
    rt_req_t *r = s_req_take(self, m->parent_id, false);
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

void runtime_detach(runtime_t *self, int max_ms)
{
    if (!self->kernel || kernel_owned(self->kernel) || self->kstate != ST_READY || !self->lang ||
        !self->lang->detach_code)
        return;
    char id[WIRE_ID_LEN + 1];
    buf_t b;
    buf_init(&b, 0);
    /* A silent execute, with no user expression riding along (Python's
     * default one asks for a snapshot, which needs the helper). */
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = self->lang->detach_code, .silent = true});
    int rc = kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, id);
    buf_free(&b);
    if (rc < 0)
        return;
    rt_req_add(self, REQ_DETACH, id);
    self->detached = false;
    if (kernel_remote(self->kernel) && max_ms < RUNTIME_DETACH_REMOTE_MS)
        max_ms = RUNTIME_DETACH_REMOTE_MS;
    /* At exit loop_run has returned on loop_stop, and a stopped loop serves
     * nothing: without this the reply was never read (every detach waited
     * out max_ms) and a gateway kernel's request never left the WebSocket's
     * queue (the helper stayed in the kernel). */
    bool stopped = loop_stopping(self->loop);
    loop_resume(self->loop);
    int64_t until = loop_now_ms() + max_ms;
    while (!self->detached && self->kernel && loop_now_ms() < until)
        loop_run_once(self->loop, 5);
    if (stopped)
        loop_stop(self->loop);
    if (self->detached)
        log_info("left the attached kernel as it was (the helper took its hooks out)");
    else
        log_info("the attached kernel did not confirm within %d ms that the helper took its hooks out (busy?); "
                 "they serve only rat-py's requests, so nobody else pays for them",
                 max_ms);
}

/* Internal requests die with their kernel. */
void rt_drop_reqs(runtime_t *self, const char *why)
{
    while (self->reqs) {
        rt_req_t *r = self->reqs;
        self->reqs = r->next;
        if (r->kind == REQ_RESET && r->done)
            r->done(r->ud, false, why);
        else if (r->kind == REQ_QUERY && r->reply)
            r->reply(r->ud, NULL, why);
        else if (r->kind == REQ_HELPER && r->text)
            r->text(r->ud, NULL, why);
        else if (r->kind == REQ_MOVE)
            rt_move_answered(self, false, true, why);
        s_req_free(r);
    }
    rt_barrier_drop(self);
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

/* Sends a request (complete_request, inspect_request, ...) and calls cb with
 * the reply, exactly once. Idle: on shell. While code runs: on control when
 * the kernel answers requests there (ipykernel), else cb gets a "busy" error
 * at once. While the kernel starts, the request waits for it. */
void rt_query(runtime_t *self, const char *msg_type, const char *content, rt_reply_fn *cb, void *ud)
{
    rt_pending_reset_t *p = xcalloc(1, sizeof *p);
    p->kind = REQ_QUERY;
    p->msg_type = xstrdup(msg_type);
    p->content = xstrdup(content);
    p->reply = cb;
    p->ud = ud;
    if (rt_wait_ready(self, p))
        return;
    kchan_t ch = KCHAN_SHELL;
    if (!runtime_idle(self)) {
        /* The shell channel is busy with the running code. ipykernel also
         * answers shell requests on control, which has its own thread. */
        if (!self->implementation || strcmp(self->implementation, "ipython") != 0) {
            rt_pending_fail(p, "busy: the kernel answers only after the running code finishes");
            return;
        }
        ch = KCHAN_CONTROL;
    }
    char id[WIRE_ID_LEN + 1];
    if (kernel_send(self->kernel, ch, msg_type, content, NULL, id) < 0) {
        rt_pending_fail(p, "could not reach the kernel");
        return;
    }
    rt_req_t *r = rt_req_add(self, REQ_QUERY, id);
    r->reply = cb;
    r->ud = ud;
    rt_req_bound(r, QUERY_TIMEOUT_MS);
    p->reply = NULL;
    rt_pending_free(p);
}

/* runtime_complete and runtime_inspect: a query whose reply is parsed here,
 * so the layers above never read wire content. The adapter lives until
 * rt_query calls back, which it always does exactly once. */
typedef struct {
    runtime_complete_fn *complete;
    runtime_inspect_fn *inspect;
    void *ud;
} s_parsed_query_t;

static void s_complete_reply(void *ud, json_object *content, const char *err)
{
    s_parsed_query_t q = *(s_parsed_query_t *)ud;
    free(ud);
    if (!content) {
        q.complete(q.ud, NULL, err ? err : "no answer");
        return;
    }
    runtime_completions_t c;
    jmsg_complete_reply_parse(content, &c);
    q.complete(q.ud, &c, NULL);
    jmsg_complete_reply_free(&c);
}

void runtime_complete(runtime_t *self, const char *code, size_t cursor, runtime_complete_fn *cb, void *ud)
{
    s_parsed_query_t *q = xcalloc(1, sizeof *q);
    *q = (s_parsed_query_t){.complete = cb, .ud = ud};
    buf_t c;
    buf_init(&c, 0);
    jmsg_complete_request(&c, code, cursor);
    rt_query(self, "complete_request", buf_str(&c), s_complete_reply, q);
    buf_free(&c);
}

static void s_inspect_reply(void *ud, json_object *content, const char *err)
{
    s_parsed_query_t q = *(s_parsed_query_t *)ud;
    free(ud);
    if (!content) {
        q.inspect(q.ud, NULL, 0, err ? err : "no answer");
        return;
    }
    size_t len = 0;
    const char *text = jmsg_inspect_reply_text(content, &len);
    q.inspect(q.ud, text, len, NULL);
}

void runtime_inspect(runtime_t *self, const char *code, runtime_inspect_fn *cb, void *ud)
{
    s_parsed_query_t *q = xcalloc(1, sizeof *q);
    *q = (s_parsed_query_t){.inspect = cb, .ud = ud};
    buf_t c;
    buf_init(&c, 0);
    jmsg_inspect_request(&c, code, utf8_count(code, strlen(code)));
    rt_query(self, "inspect_request", buf_str(&c), s_inspect_reply, q);
    buf_free(&c);
}

void runtime_call_helper(runtime_t *self, const char *fn, const char *json_arg, runtime_text_fn *cb, void *ud)
{
    rt_pending_reset_t *p = xcalloc(1, sizeof *p);
    p->kind = REQ_HELPER;
    p->expr = xstrdup(fn);
    p->content = xstrdup(json_arg);
    p->text = cb;
    p->ud = ud;
    if (rt_wait_ready(self, p))
        return;
    if (!self->lang) {
        rt_pending_fail(p, "no helper for this kernel's language");
        return;
    }
    if (!runtime_idle(self)) {
        rt_pending_fail(p, "busy");
        return;
    }
    rt_req_t *r = NULL;
    if (self->lang->channel == LANG_VIA_STDOUT) {
        r = s_send_capture(self, REQ_HELPER, fn, json_arg);
    } else {
        buf_t expr;
        buf_init(&expr, 0);
        self->lang->call(&expr, fn, json_arg);
        char id[WIRE_ID_LEN + 1];
        if (rt_send_silent(self, "", expr.data, id) == 0)
            r = rt_req_add(self, REQ_HELPER, id);
        buf_free(&expr);
    }
    if (!r) {
        rt_pending_fail(p, "could not reach the kernel");
        return;
    }
    r->text = cb;
    r->ud = ud;
    rt_req_bound(r, QUERY_TIMEOUT_MS);
    p->text = NULL;
    rt_pending_free(p);
}
