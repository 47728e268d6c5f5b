/* runtime_watchdog: a kernel that stops answering its shell.
 *
 * A run sent to the kernel is acknowledged by a busy status on iopub whose
 * parent is its msg_id (or by its reply). A run still unacknowledged after
 * shell_timeout_ms, while the kernel's last published status is not busy
 * (busy with another client's request, or with an earlier run rat-py gave
 * up on, is work, not silence; busy with one of rat-py's own
 * kernel_info_requests is not), makes the kernel "not answering": the
 * callers that wait for a run (the stuck one and those queued behind it)
 * are told at once with what to do (runtime_observer_t.on_silent), the
 * watcher gets RUNTIME_EV_SILENT, runtime_status says since when. Nothing
 * is dropped: the runs stay in order and go on if the kernel answers
 * again; ctl restart ends them. A shell message or the run's busy clears
 * the state (RUNTIME_EV_ANSWERING). The probes of runtime_cancel.c that
 * are already in flight are what the kernel answers first when it comes
 * back (shell is handled in order), so no probing is added here.
 *
 * Whether a stall is one is decided from the time the run was sent, never
 * from rat-py's own pace: under valgrind rat-py is slow, the kernel not. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static void s_fire(loop_t *loop, void *ud);

static int s_bound_ms(const runtime_t *self)
{
    return self->shell_timeout_ms > 0 ? self->shell_timeout_ms : RUNTIME_SHELL_TIMEOUT_MS;
}

static void s_arm_in(runtime_t *self, int64_t ms)
{
    loop_timer_cancel(self->loop, self->watchdog_timer);
    self->watchdog_timer = loop_timer(self->loop, ms > 0 ? ms : 0, s_fire, self);
}

void rt_watchdog_arm(runtime_t *self)
{
    if (!self->silent_since_us)
        s_arm_in(self, s_bound_ms(self));
}

/* Everyone who follows a run is told, once, that it will not move for now. */
static void s_tell_followers(runtime_t *self)
{
    /* Observers may release their run (freed from the loop only) and stop
     * observing; nothing here is freed, so the list stays walkable. */
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_DONE || !ex->has_obs || !ex->obs.on_silent)
            continue;
        ex->obs.on_silent(ex->obs_ud, ex);
    }
}

static void s_fire(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->watchdog_timer = 0;
    runtime_exec_t *ex = self->current;
    if (self->silent_since_us || !ex || ex->state != RUNTIME_EXEC_RUNNING || ex->got_busy || ex->got_reply ||
        !self->kernel || self->kstate != ST_READY)
        return; /* acknowledged, answered or ended: a new run arms it again */
    int bound = s_bound_ms(self);
    if (self->kernel_busy) {
        s_arm_in(self, bound); /* working on something sent before: not silence */
        return;
    }
    int64_t since = ex->sent_us > self->kernel_status_us ? ex->sent_us : self->kernel_status_us;
    int64_t left = since / 1000 + bound - loop_now_ms();
    if (left > 0) {
        s_arm_in(self, left);
        return;
    }
    self->silent_since_us = ex->sent_us;
    char *why = runtime_silent_why(self);
    log_warn("run %lu: %s", ex->id, why);
    free(why);
    rt_changed(self);
    if (self->watch)
        self->watch(self->watch_ud, &(runtime_ev_t){.kind = RUNTIME_EV_SILENT, .ex = ex, .stream = -1});
    s_tell_followers(self);
    (void)loop;
}

static void s_clear(runtime_t *self, const char *how)
{
    if (!self->silent_since_us)
        return;
    log_warn("the kernel %s after %lld s without answering its shell", how,
             (long long)((loop_now_us() - self->silent_since_us) / 1000000));
    self->silent_since_us = 0;
    rt_changed(self);
    if (self->watch)
        self->watch(self->watch_ud, &(runtime_ev_t){.kind = RUNTIME_EV_ANSWERING, .stream = -1});
}

void rt_watchdog_alive(runtime_t *self)
{
    s_clear(self, "answers again");
    /* The run that is current now (if any) gets a bound of its own. */
    if (self->current && !self->current->got_busy && !self->watchdog_timer)
        rt_watchdog_arm(self);
}

/* A kernel_info_request of rat-py's own (a probe, a barrier): never long,
 * so a kernel that stays busy with one is stuck, not working. */
static bool s_is_check(const runtime_t *self, const char *parent_id)
{
    if (!parent_id)
        return false;
    for (const rt_req_t *r = self->reqs; r; r = r->next)
        if ((r->kind == REQ_PROBE || r->kind == REQ_BARRIER) && strcmp(r->msg_id, parent_id) == 0)
            return true;
    return false;
}

/* A short request of rat-py's own, still waited for: a look's query, a
 * helper call, a snapshot. Not a reset (user code may run in it: a __del__
 * that blocks), a probe, a barrier, an install or a move. */
static const rt_req_t *s_own(const runtime_t *self, const char *parent_id)
{
    if (!parent_id || !*parent_id)
        return NULL;
    for (const rt_req_t *r = self->reqs; r; r = r->next)
        if (strcmp(r->msg_id, parent_id) == 0)
            return r->kind == REQ_QUERY || r->kind == REQ_HELPER || r->kind == REQ_SNAPSHOT ? r : NULL;
    return NULL;
}

/* Holds a cancel's signal only while that can end by itself: the heartbeat
 * answers and the request is younger than HELPER_TIMEOUT_MS (the longest
 * rat-py waits for one); after that, a stopped or stuck kernel is
 * signalled as before. Until the kernel's idle for it, not its reply: the
 * request may have been answered already (ipykernel 7 sends the reply
 * before its post_handler_hook), and a signal then lands in that hook. */
bool rt_watchdog_busy_own(const runtime_t *self)
{
    return self->kernel_busy && self->kernel_busy_own && self->kernel && kernel_heartbeat_ok(self->kernel) &&
           loop_now_ms() - self->kernel_busy_sent_ms < HELPER_TIMEOUT_MS;
}

void rt_watchdog_status(runtime_t *self, const wire_msg_t *m)
{
    if (strcmp(m->msg_type, "status") != 0)
        return;
    const char *st = wire_get_str(m->content, "execution_state");
    if (!st)
        return;
    if (strcmp(st, "busy") == 0 && s_is_check(self, m->parent_id))
        return;
    if (strcmp(st, "busy") == 0) {
        self->kernel_busy = true;
        self->kernel_busy_own = false;
        const rt_req_t *r = s_own(self, m->parent_id);
        if (r) {
            self->kernel_busy_own = true;
            self->kernel_busy_sent_ms = r->sent_ms;
        }
    } else if (strcmp(st, "idle") == 0) {
        self->kernel_busy = false;
        self->kernel_busy_own = false;
    } else {
        return;
    }
    self->kernel_status_us = loop_now_us();
}

void rt_watchdog_reset(runtime_t *self)
{
    loop_timer_cancel(self->loop, self->watchdog_timer);
    self->watchdog_timer = 0;
    self->kernel_busy = false;
    self->kernel_busy_own = false;
    self->kernel_status_us = 0;
    s_clear(self, "was replaced");
}

int64_t runtime_silent_ms(const runtime_t *self)
{
    return self->silent_since_us ? (loop_now_us() - self->silent_since_us) / 1000 : -1;
}

char *runtime_silent_why(const runtime_t *self)
{
    if (!self->silent_since_us)
        return NULL;
    long long s = (long long)(runtime_silent_ms(self) / 1000);
    bool hb = self->kernel && kernel_heartbeat_ok(self->kernel);
    return xasprintf("the kernel answers %s since %lld s (a run sent then was never acknowledged); runs wait in "
                     "order and go on if it answers again; ctl restart starts a new one (variables are lost)",
                     hb ? "its heartbeat but not its shell" : "neither its heartbeat nor its shell", s);
}
