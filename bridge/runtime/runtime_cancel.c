/* runtime_cancel: cancelling one run, the barrier that keeps an interrupt
 * out of the next run, and the probes that end runs the kernel lost. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static bool s_is_interrupt_error(const runtime_exec_t *ex);
static runtime_cancel_verdict_t s_verdict(const runtime_exec_t *ex);
static void s_barrier_send(runtime_t *self);
static void s_barrier_retry(loop_t *loop, void *ud);
static void s_watch_fire(loop_t *loop, void *ud);

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
            self->pump_timer = loop_timer(self->loop, 0, rt_pump_timer, self);
        return;
    }
    rt_req_add(self, REQ_BARRIER, id);
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
void rt_barrier_answered(runtime_t *self)
{
    if (!self->barrier_id[0] || self->barrier_wait_interrupt)
        return;
    rt_barrier_drop(self);
    rt_pump(self);
}

/* The kernel's pending interrupt completed: the barrier it held back goes
 * now. */
void rt_interrupt_done(runtime_t *self)
{
    if (!self->barrier_wait_interrupt)
        return;
    self->barrier_wait_interrupt = false;
    self->barrier_tries = 0;
    s_barrier_send(self);
}

/* The kernel is gone or replaced: nothing to wait for. */
void rt_barrier_drop(runtime_t *self)
{
    self->barrier_wait_interrupt = false;
    self->barrier_id[0] = '\0';
    loop_timer_cancel(self->loop, self->barrier_timer);
    self->barrier_timer = 0;
}

/* ex ends (called by rt_finish): owed verdicts are delivered, and an
 * interrupt that did not stop it may still land, so the queue waits. */
void rt_cancel_settle(runtime_t *self, runtime_exec_t *ex)
{
    loop_timer_cancel(self->loop, ex->watch_timer);
    ex->watch_timer = 0;
    runtime_cancel_verdict_t v = s_verdict(ex);
    if (ex->interrupt_us && v == RUNTIME_CANCEL_ENDED && self->kstate == ST_READY) {
        self->barrier_tries = 0;
        /* The barrier must follow the interrupt's completion: a signal is
         * sent by now, but a gateway's POST or an interrupt_request may still
         * be on its way while a barrier on the open shell channel is
         * answered first, and then the next run (any session's) would take
         * the interrupt. */
        if (self->kernel && kernel_interrupt_pending(self->kernel))
            self->barrier_wait_interrupt = true;
        else
            s_barrier_send(self);
    }
    if (ex->cancellers && v != RUNTIME_CANCEL_ENDED && ex->detached && !ex->claimed)
        ex->detached = false; /* its end is reported by the cancel: ctl wait has nothing left to give */
    while (ex->cancellers) {
        rt_canceller_t *c = ex->cancellers;
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
    if (ex->interrupt_pending && !rt_watchdog_busy_own(self)) {
        /* Still not acknowledged: the kernel may be stopped or stuck, and
         * only a signal (with SIGCONT) gets it going. Not while it is busy
         * with a short request of rat-py's own (a look, a snapshot; while
         * its heartbeat answers, for at most HELPER_TIMEOUT_MS:
         * rt_watchdog_busy_own): the signal
         * would land in that one (and in ipykernel 6's and 7's hook windows it
         * ended the kernel: doc/kernels.md "An interrupt as a run ends");
         * the run is interrupted once the kernel takes it
         * (rt_exec_acknowledged), or here after that request. */
        ex->interrupt_pending = false;
        if (kernel_interrupt(self->kernel) == 0)
            ex->interrupt_us = loop_now_us();
    }
    char id[WIRE_ID_LEN + 1];
    if (ex->probes < LOST_PROBES_MAX && kernel_send(self->kernel, KCHAN_SHELL, "kernel_info_request", NULL, NULL, id) == 0) {
        rt_req_t *r = rt_req_add(self, REQ_PROBE, id);
        r->ex = ex;
        ex->probes++;
        if (!ex->probe_id[0])
            memcpy(ex->probe_id, id, sizeof ex->probe_id);
    }
    rt_watch(ex, LOST_PROBE_MS * 2);
}

/* (Re)arms ex's check to fire within ms. */
void rt_watch(runtime_exec_t *ex, int64_t ms)
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

/* ex's reply is in and its idle status will not come: it ends. */
static void s_idle_lost(runtime_t *self, runtime_exec_t *ex)
{
    if (ex->state == RUNTIME_EXEC_DONE || self->current != ex || !ex->got_reply || ex->got_idle)
        return;
    ex->got_idle = true;
    rt_maybe_done(self, ex);
}

/* The kernel answered a shell request sent after ex's execute_request. */
void rt_probe_answered(runtime_t *self, runtime_exec_t *ex)
{
    if (ex->probes)
        ex->probes--;
    if (ex->state == RUNTIME_EXEC_DONE || self->current != ex)
        return;
    if (ex->got_reply) {
        /* The reply is in and the kernel moved on, but the run's iopub may
         * still be on its way (a large output trails the reply): its idle
         * counts as lost once iopub shows the probe (rt_probe_iopub), or
         * after IOPUB_LAG_MAX_MS of answered probes without it. */
        int64_t now = loop_now_ms();
        if (!ex->probe_answered_ms)
            ex->probe_answered_ms = now;
        else if (now - ex->probe_answered_ms >= IOPUB_LAG_MAX_MS) {
            log_warn("run %lu: its idle status did not come in %d ms after its reply; taken as lost", ex->id,
                     IOPUB_LAG_MAX_MS);
            s_idle_lost(self, ex);
        }
        return;
    }
    ex->lost = true;
    if (!ex->got_busy)
        rt_finish(self, ex, RUNTIME_CANCELLED,
                 ex->interrupt_us ? "CANCELLED before it started" : "lost by the kernel before it started");
    else
        rt_finish(self, ex, RUNTIME_FAILED,
                 ex->interrupt_us ? "lost by the kernel after an interrupt"
                                  : "lost by the kernel: it went on with later requests without finishing this run");
    rt_pump(self);
}

/* An iopub message m that is not ex's own: when its parent is ex's first
 * probe, everything the kernel published for ex came before it, so an idle
 * still missing was lost, not late. ex may end here (its observers run, and
 * may release it: it stays valid until the loop frees it). */
void rt_probe_iopub(runtime_t *self, runtime_exec_t *ex, const wire_msg_t *m)
{
    if (ex->probe_id[0] && m->parent_id && strcmp(m->parent_id, ex->probe_id) == 0)
        s_idle_lost(self, ex);
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
        rt_canceller_t *c = xcalloc(1, sizeof *c);
        c->cb = cb;
        c->ud = ud;
        c->next = ex->cancellers;
        ex->cancellers = c;
    }
    if (ex->state == RUNTIME_EXEC_QUEUED) {
        rt_finish(self, ex, RUNTIME_CANCELLED, "cancelled before it started");
        return 0;
    }
    rt_changed(self);
    if (ex->got_reply || ex->interrupt_pending)
        return 0; /* ending already, or interrupted once the kernel takes it */
    if (!ex->got_busy) {
        /* Sent, not yet taken: a signal now would hit whatever the kernel
         * does before it (or make it drop the request). */
        ex->interrupt_pending = true;
        rt_watch(ex, LOST_PROBE_MS);
        return 0;
    }
    if (signal_now)
        ex->interrupt_us = loop_now_us();
    rt_watch(ex, LOST_PROBE_MS);
    return 0;
}

int runtime_cancel(runtime_t *self, runtime_exec_t *ex)
{
    return runtime_cancel_run(self, ex, NULL, NULL);
}

void runtime_cancel_forget(runtime_t *self, void *ud)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        rt_canceller_t **pp = &ex->cancellers;
        while (*pp) {
            if ((*pp)->ud == ud) {
                rt_canceller_t *c = *pp;
                *pp = c->next;
                free(c);
            } else {
                pp = &(*pp)->next;
            }
        }
    }
}
