/* runtime_spare: the warm spare (--spare): a second kernel booted in the
 * background with the helper installed, swapped in on restart. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static void s_spare_ready(void *ud, kernel_t *k, json_object *info);
static void s_spare_msg(void *ud, kernel_t *k, kchan_t ch, wire_msg_t *m);
static void s_spare_dead(void *ud, kernel_t *k, const char *why);
static void s_spare_start(loop_t *loop, void *ud);

void rt_spare_drop(runtime_t *self)
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
    if (lang)
        kernel_set_ask_on_replace(k, lang->ask_on_replace);
    if (lang && lang->install) {
        buf_t b;
        buf_init(&b, 0);
        lang->install(&b);
        buf_t c;
        buf_init(&c, 0);
        /* As rt_send_silent, without the snapshot: nobody reads this reply. */
        jmsg_execute_request(&c, &(jmsg_execute_t){.code = b.data, .code_len = b.len, .silent = true});
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
    rt_spare_drop(self);
    self->spare_failures++;
    rt_spare_schedule(self);
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
    kernel_opts_t ko = rt_local_kernel_opts(self);
    char err[1024];
    self->spare = kernel_start(self->loop, &ko, &s_spare_events, self, err, sizeof err);
    if (!self->spare) {
        log_warn("spare kernel: %s", err);
        self->spare_failures++;
    }
}

/* Boots a spare in the background when --spare asks for one and there is
 * none, a little after the session's kernel is ready (so the two do not
 * compete while the first one boots). */
void rt_spare_schedule(runtime_t *self)
{
    if (!self->want_spare || self->existing || self->spare || self->spare_timer ||
        self->spare_failures >= SPARE_RETRIES)
        return;
    self->spare_timer = loop_timer(self->loop, SPARE_DELAY_MS * (1 + self->spare_failures), s_spare_start, self);
}

/* Swaps the ready spare in as the session's kernel. done is called as for a
 * restart. Returns false (and changes nothing) when there is no ready spare. */
bool rt_spare_swap(runtime_t *self, runtime_done_fn *done, void *ud)
{
    if (!self->spare || !self->spare_ready || kernel_state(self->spare) != KERNEL_READY)
        return false;
    if (self->move)
        return false; /* the spare was started in the old place: a new kernel starts in the new one */
    rt_changed(self);
    self->ndeaths = 0;
    FREE_AND_NULL(self->restart_note); /* asked for: the restart's answer tells */
    kernel_destroy(&self->kernel, 0);
    self->lang = NULL;
    self->kstate = ST_STARTING; /* for the callbacks below: no kernel until the swap */
    if (self->current)
        rt_finish(self, self->current, RUNTIME_FAILED, "interrupted: the kernel was restarted");
    rt_fail_queued(self, "not run: the kernel was restarted");
    rt_drop_reqs(self, "the kernel was restarted");
    rt_move_at_start(self); /* it has run nothing; an interpreter waiting for a restart is its */
    self->kernel = self->spare;
    self->spare = NULL;
    json_object *info = self->spare_info;
    self->spare_info = NULL;
    self->spare_ready = false;
    kernel_set_events(self->kernel, &rt_kernel_events, self);
    self->restart_done = done;
    self->restart_ud = ud;
    self->helper_preinstalled = true;
    self->kstate = ST_STARTING;
    rt_on_ready(self, self->kernel, info); /* becomes ready now; schedules the next spare */
    json_object_put(info);
    return true;
}
