/* runtime_supervise: the kernel's life: start, readiness, messages routed to
 * runs and requests, death (with the automatic-restart window), heartbeat,
 * and restart (owned or attached). */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static void s_on_msg(void *ud, kernel_t *k, kchan_t ch, wire_msg_t *m);
static void s_on_dead(void *ud, kernel_t *k, const char *why);
static void s_on_heartbeat(void *ud, kernel_t *k, bool ok);
static void s_on_interrupted(void *ud, kernel_t *k);

void rt_on_ready(void *ud, kernel_t *k, json_object *info)
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
        self->language = rt_lower_dup(json_object_get_string(name));
    }
    const char *impl = wire_get_str(info, "implementation");
    free(self->implementation);
    self->implementation = xstrdup(impl ? impl : "");
    self->lang = lang_find(self->language);
    if (self->lang)
        kernel_set_ask_on_replace(k, self->lang->ask_on_replace);
    self->kstate = ST_READY;
    rt_watchdog_reset(self); /* a new kernel (or the same, attached again) starts answering */
    json_object_put(self->snapshot);
    self->snapshot = NULL;
    self->snapshot_seq++;
    /* A new kernel counts from 0 (an attached one: unknown until its first run). */
    self->exec_count = 0;
    self->snapshot_exec = 0;
    rt_changed(self);
    self->vars = self->lang ? 0 : -1;
    if (self->lang && self->lang->install && !self->helper_preinstalled) {
        /* Shell requests run in order, so the helper is in place before the
         * first user execution even though we do not wait for this reply. */
        buf_t b;
        buf_init(&b, 0);
        self->lang->install(&b);
        char id[WIRE_ID_LEN + 1];
        if (rt_send_silent(self, b.data, NULL, id) == 0)
            rt_req_add(self, REQ_INSTALL, id);
        buf_free(&b);
    }
    self->helper_preinstalled = false;
    rt_spare_schedule(self);
    if (self->restart_done) {
        runtime_done_fn *done = self->restart_done;
        self->restart_done = NULL;
        done(self->restart_ud, true, "0");
    }
    while (self->pending_resets && self->kstate == ST_READY) {
        rt_pending_reset_t *p = self->pending_resets;
        self->pending_resets = p->next;
        if (p->kind == REQ_RESET)
            rt_reset(self, p->all, p->seq, p->done, p->ud);
        else if (p->kind == REQ_QUERY)
            rt_query(self, p->msg_type, p->content, p->reply, p->ud);
        else
            runtime_call_helper(self, p->expr, p->content, p->text, p->ud);
        p->done = NULL;
        p->reply = NULL;
        p->text = NULL;
        rt_pending_free(p);
    }
    rt_pump(self);
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
        rt_watchdog_status(self, m);
        if (mine) {
            rt_exec_iopub(self, ex, m);
        } else {
            if (ex)
                rt_probe_iopub(self, ex, m);
            rt_req_iopub(self, m);
        }
        break;
    case KCHAN_SHELL:
        rt_watchdog_alive(self); /* before the reply ends a run: the next one gets its own bound */
        if (mine && strcmp(m->msg_type, "execute_reply") == 0)
            rt_exec_reply(self, ex, m);
        else
            rt_req_reply(self, m);
        break;
    case KCHAN_STDIN:
        if (mine && strcmp(m->msg_type, "input_request") == 0)
            rt_exec_input(self, ex, m);
        break;
    case KCHAN_CONTROL:
        rt_req_reply(self, m);
        break;
    case KCHAN_COUNT:
        break;
    }
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
    rt_changed(self);
    kernel_destroy(&self->kernel, 0);
    rt_watchdog_reset(self);
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
    rt_drop_reqs(self, run_why);
    if (self->current)
        rt_finish(self, self->current, RUNTIME_FAILED, run_why);
    char *queued_why = xasprintf("not run: %s", run_why);
    rt_fail_queued(self, queued_why);
    free(queued_why);
    if (restart) {
        self->restarts++;
        free(self->restart_note);
        self->restart_note = told ? NULL : xasprintf("[%s; a new kernel was started, variables are lost]", why);
        /* Pending restart/reset requests carry over to the new kernel. */
        rt_start_kernel(self);
        if (self->kstate == ST_FAILED)
            rt_flush_pending(self, self->fail_reason);
    } else {
        rt_flush_pending(self, self->fail_reason);
    }
    free(run_why);
}

static void s_on_heartbeat(void *ud, kernel_t *k, bool ok)
{
    runtime_t *self = ud;
    rt_changed(self);
    (void)k;
    (void)ok;
}

static void s_on_interrupted(void *ud, kernel_t *k)
{
    runtime_t *self = ud;
    if (k == self->kernel)
        rt_interrupt_done(self);
}

const kernel_events_t rt_kernel_events = {
    .on_ready = rt_on_ready,
    .on_msg = s_on_msg,
    .on_dead = s_on_dead,
    .on_heartbeat = s_on_heartbeat,
    .on_interrupted = s_on_interrupted,
};

kernel_opts_t rt_local_kernel_opts(const runtime_t *self)
{
    return (kernel_opts_t){
        .spec = self->spec,
        .python = self->python,
        .cwd = self->cwd,
        .env_extra = self->env_extra,
        .runtime_dir = self->runtime_dir,
        .boot_timeout_ms = self->boot_timeout_ms,
        .connect = self->connect,
        .connect_ud = self->connect_ud,
    };
}

void rt_start_kernel(runtime_t *self)
{
    loop_timer_cancel(self->loop, self->start_timer); /* runtime_new's, if it has not fired */
    self->start_timer = 0;
    rt_move_at_start(self); /* first: a waiting move decides where it starts */
    kernel_opts_t ko = rt_local_kernel_opts(self);
    ko.existing = self->existing;
    if (self->gateway) {
        ko.gateway = self->gateway;
        ko.gateway_kernel = self->existing; /* an id there */
        ko.gateway_kernel_name = self->kernel_name;
        ko.existing = NULL;
    }
    char err[1024];
    self->kstate = ST_STARTING;
    self->kernel = kernel_start(self->loop, &ko, &rt_kernel_events, self, err, sizeof err);
    if (!self->kernel) {
        self->kstate = ST_FAILED;
        free(self->fail_reason);
        self->fail_reason = xstrdup(err);
        log_error("%s", err);
        /* Report from the loop, never from inside the caller. */
        if (!self->pump_timer)
            self->pump_timer = loop_timer(self->loop, 0, rt_pump_timer, self);
    }
}

/* Every automatic restart is announced in the next result, as a death
 * during a run is in that run's: the note goes first in the output of the
 * next run queued. */
void rt_announce_restart(runtime_t *self, runtime_exec_t *ex)
{
    if (!self->restart_note)
        return;
    output_write_block(ex->out, self->restart_note, strlen(self->restart_note));
    FREE_AND_NULL(self->restart_note);
}

void runtime_on_sigchld(runtime_t *self)
{
    if (self->kernel)
        kernel_check_exit(self->kernel);
    if (self->spare)
        kernel_check_exit(self->spare);
    kernel_reap_destroyed();
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
    if (self->start_timer) {
        /* Asked before the loop's first pass launched the kernel: launch (or
         * attach) now, so the restart is the one asked of that kernel, as
         * when the launch came first (an attached kernel's restart waits
         * for it to be attached, below). */
        rt_start_kernel(self);
    }
    if (rt_spare_swap(self, done, ud))
        return;
    rt_changed(self);
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
        rt_fail_queued(self, "not run: the kernel was restarted");
        return;
    }
    /* An attached kernel is restarted by its owner, on request; ours are
     * replaced. */
    /* A gateway's kernels too: the gateway restarts them (REST). */
    bool attached_restart = (self->existing || self->gateway) && self->kernel &&
                            kernel_restart_attached(self->kernel) == 0;
    if (!attached_restart)
        kernel_destroy(&self->kernel, 0);
    rt_watchdog_reset(self);
    self->lang = NULL;
    self->kstate = ST_STARTING;
    if (self->current)
        rt_finish(self, self->current, RUNTIME_FAILED, "interrupted: the kernel was restarted");
    rt_fail_queued(self, "not run: the kernel was restarted");
    rt_drop_reqs(self, "the kernel was restarted");
    if (attached_restart)
        return;
    rt_start_kernel(self);
    if (self->kstate == ST_FAILED) {
        runtime_done_fn *d = self->restart_done;
        self->restart_done = NULL;
        d(self->restart_ud, false, self->fail_reason);
    }
}
