/* runtime_ready: requests that arrive before the kernel is ready wait
 * (deferral), and the reset policy (namespace reset, reset all). */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static void s_defer(runtime_t *self, rt_pending_reset_t *p);
static void s_do_reset(runtime_t *self, bool all, runtime_done_fn *done, void *ud);

void rt_pending_free(rt_pending_reset_t *p)
{
    free(p->msg_type);
    free(p->content);
    free(p->expr);
    free(p);
}

void rt_pending_fail(rt_pending_reset_t *p, const char *why)
{
    if (p->kind == REQ_RESET && p->done)
        p->done(p->ud, false, why);
    else if (p->kind == REQ_QUERY && p->reply)
        p->reply(p->ud, NULL, why);
    else if (p->kind == REQ_HELPER && p->text)
        p->text(p->ud, NULL, why);
    rt_pending_free(p);
}

static void s_defer(runtime_t *self, rt_pending_reset_t *p)
{
    rt_pending_reset_t **pp = &self->pending_resets;
    while (*pp)
        pp = &(*pp)->next;
    *pp = p;
}

static void s_do_reset(runtime_t *self, bool all, runtime_done_fn *done, void *ud)
{
    char id[WIRE_ID_LEN + 1];
    if (rt_send_silent(self, all ? self->lang->reset_all_code : self->lang->reset_code, NULL, id) < 0) {
        done(ud, false, "could not reach the kernel");
        return;
    }
    rt_req_t *r = rt_req_add(self, REQ_RESET, id);
    r->done = done;
    r->ud = ud;
    r->all = all;
    rt_req_bound(r, RESET_TIMEOUT_MS);
}

void rt_flush_pending(runtime_t *self, const char *why)
{
    if (self->restart_done) {
        runtime_done_fn *done = self->restart_done;
        self->restart_done = NULL;
        done(self->restart_ud, false, why);
    }
    while (self->pending_resets) {
        rt_pending_reset_t *p = self->pending_resets;
        self->pending_resets = p->next;
        rt_pending_fail(p, why);
    }
    rt_drop_reqs(self, why);
}

/* A reset waits its turn: runs that arrived before it (ids below seq) make
 * it BUSY; runs that arrived after it (possible while the kernel starts)
 * execute after it, in order. */
void rt_reset(runtime_t *self, bool all, unsigned long seq, runtime_done_fn *done, void *ud)
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
    if (all && rt_spare_swap(self, done, ud))
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
            rt_start_kernel(self);
        if (self->kstate == ST_FAILED) {
            done(ud, false, self->fail_reason);
            return;
        }
        rt_pending_reset_t *p = xcalloc(1, sizeof *p);
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
    rt_reset(self, all, self->next_id, done, ud);
}

/* Requests before the kernel is ready wait for it; a failed kernel is
 * restarted for them like for a run. Returns true when p was deferred or
 * failed (and consumed), false when the kernel is ready now. */
bool rt_wait_ready(runtime_t *self, rt_pending_reset_t *p)
{
    if (self->kstate == ST_READY) {
        return false;
    }
    if (self->kstate == ST_FAILED && !self->existing)
        rt_start_kernel(self);
    if (self->kstate == ST_FAILED) {
        rt_pending_fail(p, self->fail_reason);
        return true;
    }
    s_defer(self, p);
    return true;
}
