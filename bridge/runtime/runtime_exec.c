/* runtime_exec: run objects (runtime_exec_t) and the queue: creation,
 * sending, finishing, freeing from the loop, input() prompts, accessors. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

#include "heaptrim.h"

static void s_collect_now(loop_t *loop, void *ud);
static void s_collect(runtime_t *self);
static void s_input_settled(loop_t *loop, void *ud);
static void s_send_execute(runtime_t *self, runtime_exec_t *ex);

void rt_exec_free(runtime_exec_t *ex)
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
    for (rt_req_t *r = self->reqs; r; r = r->next)
        if (r->ex == ex)
            r->ex = NULL;
    loop_timer_cancel(self->loop, ex->snapshot_timer);
    loop_timer_cancel(self->loop, ex->input_timer);
    loop_timer_cancel(self->loop, ex->watch_timer);
    while (ex->cancellers) {
        rt_canceller_t *c = ex->cancellers;
        ex->cancellers = c->next;
        free(c);
    }
    output_destroy(&ex->out);
    outitems_destroy(&ex->items);
    json_object_put(ex->traceback);
    json_object_put(ex->traceback_ansi);
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
                rt_exec_free(ex);
            } else if (detached_done > MAX_DETACHED) {
                detached_done--;
                rt_exec_free(ex);
            }
        }
        ex = next;
    }
}

/* Executions are finished and released inside callbacks (on_done releases
 * the run it was told about, and its callers, rt_finish's callers among
 * them, still read it): they are freed from the loop, never here. */
static void s_collect(runtime_t *self)
{
    if (!self->collect_timer)
        self->collect_timer = loop_timer(self->loop, 0, s_collect_now, self);
}

static void s_state_fire(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->state_timer = 0;
    if (self->watch)
        self->watch(self->watch_ud, &(runtime_ev_t){.kind = RUNTIME_EV_STATE, .stream = -1});
}

void rt_changed(runtime_t *self)
{
    self->rev++;
    if (self->watch && !self->state_timer)
        self->state_timer = loop_timer(self->loop, 0, s_state_fire, self);
}

void rt_emit(runtime_t *self, runtime_exec_t *ex, runtime_ev_kind_t kind, int stream, const char *text, size_t len,
             json_object *item)
{
    if (!self->watch)
        return;
    if (kind == RUNTIME_EV_END && !ex->announced)
        return; /* it never ran: nobody was told it started */
    if (!ex->announced) {
        ex->announced = true;
        self->watch(self->watch_ud, &(runtime_ev_t){.kind = RUNTIME_EV_START, .ex = ex, .stream = -1});
        if (kind == RUNTIME_EV_START)
            return;
    }
    self->watch(self->watch_ud,
                &(runtime_ev_t){.kind = kind, .ex = ex, .stream = stream, .text = text, .len = len, .item = item});
}

void runtime_watch(runtime_t *self, runtime_watch_fn *fn, void *ud)
{
    self->watch = fn;
    self->watch_ud = ud;
}

unsigned long runtime_snapshot_seq(const runtime_t *self)
{
    return self->snapshot_seq;
}

unsigned long runtime_exec_id(const runtime_exec_t *ex)
{
    return ex->id;
}

void rt_finish(runtime_t *self, runtime_exec_t *ex, runtime_outcome_t outcome, const char *why)
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
    /* Once runs are over, freed heap pages go back to the system: a flood
     * or a big result must not stay in an idle rat-py's RSS. Off the
     * critical path: heaptrim waits for a quiet spell, however many runs. */
    heaptrim_soon(self->loop);
    FREE_AND_NULL(ex->prompt);
    json_object_put(ex->input_header);
    ex->input_header = NULL;
    loop_timer_cancel(self->loop, ex->snapshot_timer);
    ex->snapshot_timer = 0;
    loop_timer_cancel(self->loop, ex->input_timer);
    ex->input_timer = 0;
    if (self->current == ex)
        self->current = NULL;
    rt_cancel_settle(self, ex);
    rt_changed(self);
    rt_emit(self, ex, RUNTIME_EV_END, -1, NULL, 0, NULL);
    if (ex->has_obs && ex->obs.on_done)
        ex->obs.on_done(ex->obs_ud, ex); /* may release ex: still valid, freed from the loop */
    s_collect(self);
}

void rt_maybe_done(runtime_t *self, runtime_exec_t *ex)
{
    if (!ex->got_reply || !ex->got_idle || ex->snapshot_timer)
        return;
    rt_finish(self, ex, ex->outcome, NULL);
    rt_pump(self);
}

/* The kernel has taken ex: a cancel that waited for that interrupts now. */
void rt_exec_acknowledged(runtime_t *self, runtime_exec_t *ex)
{
    rt_watchdog_alive(self);
    if (ex->got_busy)
        return;
    ex->got_busy = true;
    rt_changed(self);
    if (ex->interrupt_pending && self->kernel) {
        ex->interrupt_pending = false;
        if (kernel_interrupt(self->kernel) == 0)
            ex->interrupt_us = loop_now_us();
        rt_watch(ex, LOST_PROBE_MS);
    }
}

static void s_input_settled(loop_t *loop, void *ud)
{
    runtime_exec_t *ex = ud;
    ex->input_timer = 0;
    if (ex->state == RUNTIME_EXEC_INPUT)
        rt_emit(ex->rt, ex, RUNTIME_EV_INPUT, -1, NULL, 0, NULL);
    if (ex->state == RUNTIME_EXEC_INPUT && ex->has_obs && ex->obs.on_input)
        ex->obs.on_input(ex->obs_ud, ex);
}

void rt_exec_input(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m)
{
    const char *prompt = wire_get_str(m->content, "prompt");
    json_object *pw = NULL;
    free(ex->prompt);
    ex->prompt = xstrdup(prompt ? prompt : "");
    ex->password = json_object_object_get_ex(m->content, "password", &pw) && json_object_get_boolean(pw);
    ex->input_seq++;
    json_object_put(ex->input_header);
    ex->input_header = json_object_get(wire_msg_header(m));
    ex->state = RUNTIME_EXEC_INPUT;
    ex->input_since_us = loop_now_us();
    rt_changed(self);
    loop_timer_cancel(self->loop, ex->input_timer);
    ex->input_timer = loop_timer(self->loop, INPUT_SETTLE_MS, s_input_settled, ex);
}


static void s_send_execute(runtime_t *self, runtime_exec_t *ex)
{
    buf_t b, snap;
    buf_init(&b, 0);
    buf_init(&snap, 0);
    jmsg_execute_request(&b, &(jmsg_execute_t){.code = ex->code,
                                               .rat_expr = rt_helper_run_expr(self, &snap),
                                               .store_history = true,
                                               .allow_stdin = ex->allow_input});
    buf_free(&snap);
    rt_move_notes(self, ex);
    self->used = true;
    ex->sent_us = loop_now_us();
    if (kernel_send(self->kernel, KCHAN_SHELL, "execute_request", b.data, NULL, ex->msg_id) < 0) {
        buf_free(&b);
        rt_finish(self, ex, RUNTIME_FAILED, "could not send the code to the kernel");
        return;
    }
    buf_free(&b);
    ex->state = RUNTIME_EXEC_RUNNING;
    self->current = ex;
    rt_changed(self);
    rt_watch(ex, LOST_UNACKED_MS);
    rt_watchdog_arm(self);
}

void rt_fail_queued(runtime_t *self, const char *why)
{
    /* Restart from the head each time: finishing one run can free others
     * (observers release them), so no pointer is kept across rt_finish. */
    for (;;) {
        runtime_exec_t *ex = self->execs;
        while (ex && ex->state != RUNTIME_EXEC_QUEUED)
            ex = ex->next;
        if (!ex)
            return;
        rt_finish(self, ex, RUNTIME_FAILED, why);
    }
}

void rt_pump_timer(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    self->pump_timer = 0;
    rt_pump(self);
}

/* Starts the next queued execution when the kernel is free. */
void rt_pump(runtime_t *self)
{
    if (self->move)
        rt_move_try(self); /* a kernel that ran nothing moves before its first run */
    if (self->kstate == ST_FAILED) {
        rt_fail_queued(self, self->fail_reason);
        return;
    }
    /* A move in place is answered before the next run goes: the run and
     * its result see the new directory, and the note that says so. */
    if (self->kstate != ST_READY || self->current || self->barrier_id[0] || self->barrier_wait_interrupt ||
        self->hold || self->moving)
        return;
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_QUEUED) {
            s_send_execute(self, ex);
            return;
        }
    }
}

bool runtime_queue_room(const runtime_t *self, size_t code_len, char *why, size_t whylen)
{
    size_t n = 0, bytes = 0;
    for (const runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_QUEUED) {
            n++;
            bytes += ex->code ? strlen(ex->code) : 0;
        }
    }
    if (n >= RUNTIME_QUEUE_MAX) {
        snprintf(why, whylen, "run: %zu runs are already waiting in the queue (at most %d): wait for them "
                              "(ctl(op=\"wait\")), then run again",
                 n, RUNTIME_QUEUE_MAX);
        return false;
    }
    if (code_len > RUNTIME_QUEUE_MAX_BYTES - bytes) {
        snprintf(why, whylen, "run: the %zu runs waiting in the queue already hold %.1f MiB of code, and this "
                              "one (%.1f MiB) would pass the %zu MiB the queue holds: wait for them "
                              "(ctl(op=\"wait\")), then run again",
                 n, (double)bytes / 1048576, (double)code_len / 1048576, RUNTIME_QUEUE_MAX_BYTES >> 20);
        return false;
    }
    return true;
}

runtime_exec_t *runtime_execute(runtime_t *self, const char *code, bool allow_input)
{
    char why[256];
    if (!runtime_queue_room(self, strlen(code), why, sizeof why)) {
        log_warn("%s", why);
        return NULL;
    }
    runtime_exec_t *ex = xcalloc(1, sizeof *ex);
    ex->rt = self;
    ex->id = self->next_id++;
    ex->code = xstrdup(code);
    ex->allow_input = allow_input;
    ex->state = RUNTIME_EXEC_QUEUED;
    ex->vars = -1;
    ex->claimed = true;
    ex->out = output_new(self->assets_dir);
    ex->items = outitems_new();
    rt_announce_restart(self, ex);
    runtime_exec_t **pp = &self->execs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = ex;
    if (self->kstate == ST_FAILED && !self->existing) {
        /* A run is a reason to try again: the cause may be fixed by now
         * (e.g. ipykernel installed). Failures are reported from the loop. */
        rt_start_kernel(self);
    } else if (self->kstate == ST_FAILED) {
        if (!self->pump_timer)
            self->pump_timer = loop_timer(self->loop, 0, rt_pump_timer, self);
    } else {
        rt_pump(self);
    }
    return ex;
}

runtime_exec_t *runtime_current(runtime_t *self)
{
    return self->current;
}

runtime_exec_t *runtime_detached(runtime_t *self, uintptr_t owner)
{
    return runtime_detached_number(self, owner, 0);
}

runtime_exec_t *runtime_detached_number(runtime_t *self, uintptr_t owner, long number)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next) {
        if (ex->state == RUNTIME_EXEC_INPUT && ex->owner && ex->owner != owner)
            continue; /* its prompt and output are its owner's */
        if (number > 0 && ex->number != number)
            continue;
        if (ex->detached && !ex->claimed) {
            ex->claimed = true;
            ex->detached = false;
            return ex;
        }
    }
    return NULL;
}

runtime_exec_t *runtime_first_queued(runtime_t *self)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state == RUNTIME_EXEC_QUEUED)
            return ex;
    return NULL;
}


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
    out->traceback = ex->traceback;
    out->traceback_ansi = ex->traceback_ansi;
}

outitems_t *runtime_exec_items(runtime_exec_t *ex)
{
    return ex->items;
}

const char *runtime_exec_code(const runtime_exec_t *ex)
{
    return ex->code;
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

unsigned long runtime_exec_input_seq(const runtime_exec_t *ex)
{
    return ex->input_seq;
}

int runtime_exec_answer(runtime_exec_t *ex, const char *value)
{
    runtime_t *self = ex->rt;
    if (ex->state != RUNTIME_EXEC_INPUT || !self->kernel)
        return -1;
    buf_t b;
    buf_init(&b, 0);
    jmsg_input_reply(&b, value);
    int rc = kernel_send(self->kernel, KCHAN_STDIN, "input_reply", b.data, ex->input_header, NULL);
    buf_free(&b);
    if (rc < 0)
        return -1;
    ex->input_total_us += loop_now_us() - ex->input_since_us;
    ex->state = RUNTIME_EXEC_RUNNING;
    FREE_AND_NULL(ex->prompt);
    json_object_put(ex->input_header);
    ex->input_header = NULL;
    rt_changed(self);
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
