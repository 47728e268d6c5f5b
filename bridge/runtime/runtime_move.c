/* runtime_move: where the kernel works. A move (runtime_move) waits for a
 * moment that breaks nothing, then changes the kernel's directory in place
 * (the language's chdir, lang.h) or starts the kernel there; runs wait
 * while a decision is coming (runtime_hold); notes for the next result
 * (runtime_note). See runtime.h for the contract. */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"

static bool s_str_eq(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static void s_move_free(rt_move_t *m)
{
    if (!m)
        return;
    free(m->cwd);
    free(m->assets_dir);
    free(m->interpreter);
    free(m->env_note);
    free(m->python);
    free(m->old_cwd);
    free(m->old_assets_dir);
    free(m->old_python);
    free(m);
}

/* Ends m: done once, then m is freed. */
static void s_finish(rt_move_t *m, runtime_move_result_t result, const char *why)
{
    runtime_move_fn *done = m->done;
    void *ud = m->ud;
    s_move_free(m);
    if (done)
        done(ud, result, why);
}

static bool s_queued(const runtime_t *self)
{
    for (runtime_exec_t *ex = self->execs; ex; ex = ex->next)
        if (ex->state == RUNTIME_EXEC_QUEUED)
            return true;
    return false;
}

/* From now on kernels start with python (rat-py's kernelspec with that
 * interpreter, or the named kernelspec when NULL). */
static void s_set_python(runtime_t *self, char *python)
{
    bool kind = (self->python == NULL) != (python == NULL);
    free(self->python);
    self->python = python;
    if (kind || !self->spec) {
        char err[1024];
        kernelspec_destroy(&self->spec);
        self->spec = rt_spec(self, err, sizeof err);
        if (!self->spec)
            log_warn("%s", err); /* the next start says it too, in its result */
    }
}

/* From now on kernels start with m's python: a spare started for the old
 * one is dropped (another is booted for the new one), and the interpreter
 * shown changes at the next start, or now when now_too. */
static void s_take_python(runtime_t *self, rt_move_t *m, bool now_too)
{
    s_set_python(self, xstrdup(m->python));
    if (now_too) {
        free(self->interpreter);
        self->interpreter = xstrdup(m->interpreter);
        free(self->env_note);
        self->env_note = xstrdup(m->env_note);
        self->next_pending = false;
    } else {
        free(self->next_interpreter);
        self->next_interpreter = xstrdup(m->interpreter);
        free(self->next_env_note);
        self->next_env_note = xstrdup(m->env_note);
        self->next_pending = true;
    }
}

/* The directory (and assets directory) becomes m's. */
static void s_take_dir(runtime_t *self, rt_move_t *m)
{
    free(self->cwd);
    self->cwd = xstrdup(m->cwd);
    if (m->assets_dir) {
        free(self->assets_dir);
        self->assets_dir = xstrdup(m->assets_dir);
    }
}

void rt_move_at_start(runtime_t *self)
{
    self->used = false;
    if (self->next_pending) {
        free(self->interpreter);
        self->interpreter = self->next_interpreter;
        self->next_interpreter = NULL;
        free(self->env_note);
        self->env_note = self->next_env_note;
        self->next_env_note = NULL;
        self->next_pending = false;
    }
    rt_move_t *m = self->move;
    if (!m)
        return;
    self->move = NULL;
    s_take_dir(self, m);
    if (!s_str_eq(self->python, m->python))
        s_take_python(self, m, true);
    else if (m->env_note || m->interpreter) {
        free(self->env_note);
        self->env_note = xstrdup(m->env_note);
    }
    rt_spare_drop(self); /* booted in the old place; rt_on_ready schedules the next */
    rt_changed(self);
    s_finish(m, RUNTIME_MOVE_STARTED, NULL);
}

/* Replaces a kernel that has run no user code by one started in m's place. */
static void s_replace(runtime_t *self)
{
    log_info("starting the kernel again in %s", self->move->cwd);
    kernel_destroy(&self->kernel, 0);
    self->lang = NULL;
    rt_drop_reqs(self, "the kernel was replaced by one started in its new working directory");
    rt_start_kernel(self); /* makes the move (rt_move_at_start) */
}

/* Sends the language's chdir for the waiting move; it becomes `moving`. */
static void s_in_place(runtime_t *self)
{
    rt_move_t *m = self->move;
    self->move = NULL;
    buf_t code;
    buf_init(&code, 0);
    self->lang->chdir(&code, m->cwd);
    char id[WIRE_ID_LEN + 1];
    int rc = rt_send_silent(self, code.data, "", id); /* no snapshot: the variables did not change */
    buf_free(&code);
    if (rc < 0) {
        s_finish(m, RUNTIME_MOVE_FAILED, "could not reach the kernel");
        return;
    }
    rt_req_add(self, REQ_MOVE, id);
    m->old_cwd = xstrdup(self->cwd);
    m->old_assets_dir = xstrdup(self->assets_dir);
    s_take_dir(self, m);
    m->python_changed = !s_str_eq(self->python, m->python);
    if (m->python_changed) {
        m->old_python = xstrdup(self->python);
        s_take_python(self, m, false);
    } else {
        free(self->env_note); /* the same interpreter; the venv it was found in may read differently */
        self->env_note = xstrdup(m->env_note);
    }
    /* A spare booted in the old place would bring the kernel back there. */
    rt_spare_drop(self);
    rt_spare_schedule(self);
    self->moving = m;
    rt_changed(self);
    log_info("the kernel moves to %s", m->cwd);
}

void rt_move_try(runtime_t *self)
{
    rt_move_t *m = self->move;
    if (!m || self->moving)
        return;
    if (!self->kernel || self->kstate == ST_FAILED) {
        /* Nothing runs: the next start happens there. */
        rt_move_at_start(self);
        return;
    }
    bool python_changes = !s_str_eq(self->python, m->python);
    bool in_place = self->lang && self->lang->chdir;
    if (self->kstate == ST_STARTING) {
        /* Booting: one that will need replacing goes now; otherwise it
         * moves once ready (rt_pump tries again). */
        if (!self->used && (python_changes || !lang_find(self->language) || !lang_find(self->language)->chdir))
            s_replace(self);
        return;
    }
    if (!self->used) {
        if (python_changes || !in_place)
            s_replace(self);
        else
            s_in_place(self);
        return;
    }
    if (self->current || s_queued(self) || self->barrier_id[0] || !in_place)
        return; /* later: when idle, or at the next start */
    s_in_place(self);
}

void rt_move_answered(runtime_t *self, bool ok, bool gone, const char *why)
{
    rt_move_t *m = self->moving;
    if (!m)
        return;
    self->moving = NULL;
    if (gone) {
        /* The kernel went before answering; the next one starts there
         * (with the interpreter waiting for it, rt_move_at_start). */
        s_finish(m, RUNTIME_MOVE_STARTED, NULL);
    } else if (ok) {
        s_finish(m, m->python_changed ? RUNTIME_MOVE_PARTLY : RUNTIME_MOVE_IN_PLACE, NULL);
    } else {
        free(self->cwd);
        self->cwd = m->old_cwd;
        m->old_cwd = NULL;
        free(self->assets_dir);
        self->assets_dir = m->old_assets_dir;
        m->old_assets_dir = NULL;
        if (m->python_changed) {
            s_set_python(self, m->old_python);
            m->old_python = NULL;
            self->next_pending = false;
            rt_spare_drop(self);
            rt_spare_schedule(self);
        }
        rt_changed(self);
        char text[600];
        snprintf(text, sizeof text, "the kernel could not change its directory: %s", why ? why : "it refused");
        log_warn("%s", text);
        s_finish(m, RUNTIME_MOVE_FAILED, text);
    }
    rt_changed(self);
    if (!gone) {
        rt_move_try(self); /* a newer move may be waiting (when gone, the next start makes it) */
        rt_pump(self);     /* runs waited for the answer */
    }
}

void runtime_move(runtime_t *self, const runtime_place_t *p, runtime_move_fn *done, void *ud)
{
    if (self->existing || self->gateway) {
        if (done)
            done(ud, RUNTIME_MOVE_FAILED, "the kernel belongs to another program (attached, or on a Jupyter "
                                          "server): rat-py does not move it");
        return;
    }
    rt_move_t *m = xcalloc(1, sizeof *m);
    m->cwd = xstrdup(p->cwd);
    m->assets_dir = xstrdup(p->assets_dir);
    m->python = xstrdup(p->python);
    m->interpreter = xstrdup(p->interpreter);
    m->env_note = xstrdup(p->env_note);
    m->done = done;
    m->ud = ud;
    rt_move_t *old = self->move;
    self->move = m;
    if (old)
        s_finish(old, RUNTIME_MOVE_DROPPED, "a newer move replaced it");
    rt_changed(self);
    rt_move_try(self);
}

void runtime_hold(runtime_t *self, bool hold)
{
    if (self->hold == hold)
        return;
    self->hold = hold;
    rt_changed(self);
    if (!hold && !self->pump_timer)
        self->pump_timer = loop_timer(self->loop, 0, rt_pump_timer, self);
}

void runtime_note(runtime_t *self, const char *text)
{
    if (self->notes.len)
        buf_putc(&self->notes, '\n');
    buf_puts(&self->notes, text);
}

void rt_move_notes(runtime_t *self, runtime_exec_t *ex)
{
    if (!self->notes.len)
        return;
    output_write_block(ex->out, self->notes.data, self->notes.len);
    buf_free(&self->notes);
    buf_init(&self->notes, 0);
}

void rt_move_free_all(runtime_t *self)
{
    rt_move_t *m = self->move, *g = self->moving;
    self->move = self->moving = NULL;
    if (m)
        s_finish(m, RUNTIME_MOVE_DROPPED, "rat-py is shutting down");
    if (g)
        s_finish(g, RUNTIME_MOVE_DROPPED, "rat-py is shutting down");
    free(self->next_interpreter);
    free(self->next_env_note);
    self->next_interpreter = self->next_env_note = NULL;
    buf_free(&self->notes);
}
