/* runtime: executions against the session's kernel, one at a time; the
 * façade (runtime.h) over the files below, and the status.
 *
 * The runtime is split by concept; runtime_internal.h holds the shared state:
 *   runtime_exec.c       run objects and the queue
 *   runtime_iopub.c      iopub and replies -> a run's output, errors, assets
 *   runtime_helper.c     the kernel-side helper protocol (LANG_VIA_*), snapshots, queries
 *   runtime_cancel.c     cancel, interrupt barrier, lost runs
 *   runtime_supervise.c  kernel start, death window, automatic and attached restart
 *   runtime_spare.c      the warm spare
 *   runtime_ready.c      readiness deferral and reset policy */
#define LOG_MODULE "runtime"
#include "runtime_internal.h"
#include "gateway.h"

static const char *s_state_text(runtime_t *self);

/* Languages are shown lowercased: "python idle", "r idle" (IRkernel says "R"). */
char *rt_lower_dup(const char *s)
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
        return self->current->state == RUNTIME_EXEC_INPUT ? RUNTIME_STATE_WAITING : "busy";
    return "idle";
}


/* kernelspec/kernel.json, embedded at build time (cmake/embed.cmake). */
extern const char rat_kernel_json[];
extern const size_t rat_kernel_json_len;

kernelspec_t *rt_spec(const runtime_t *self, char *err, size_t errlen)
{
    if (!self->python && !self->kernelspec_dir)
        return kernelspec_find(self->kernel_name, err, errlen);
    if (!self->kernelspec_dir)
        return kernelspec_parse(rat_kernel_json, rat_kernel_json_len, "", "rat-py", "rat-py's kernel.json", err,
                                errlen);
    char why[1024];
    kernelspec_t *ks = kernelspec_load(self->kernelspec_dir, "rat-py", why, sizeof why);
    if (!ks)
        snprintf(err, errlen, "cannot use the kernelspec in %s: %s", self->kernelspec_dir, why);
    return ks;
}

static void s_start_timer(loop_t *loop, void *ud)
{
    runtime_t *self = ud;
    (void)loop;
    self->start_timer = 0;
    rt_start_kernel(self);
}

/* The kernel is launched from the loop, not from here: launching costs
 * milliseconds (fork and exec, the ZeroMQ context's first use, five
 * connects) and a host waits for `initialize`'s answer before anything
 * else. The loop serves I/O before timers, so a handshake already on stdin
 * is answered in the first pass, the launch follows in the same pass.
 * Until then the kernel is STARTING: runs and requests wait as they do for
 * a booting kernel (rt_wait_ready), a restart or a move starts it at once
 * (rt_start_kernel cancels this). */
static void s_start_soon(runtime_t *self)
{
    self->kstate = ST_STARTING;
    self->start_timer = loop_timer(self->loop, 0, s_start_timer, self);
}

runtime_t *runtime_new(loop_t *loop, const runtime_opts_t *o, char *err, size_t errlen)
{
    runtime_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->kernel_name = xstrdup(o->kernel_name ? o->kernel_name : "python3");
    self->existing = xstrdup(o->existing);
    self->cwd = xstrdup(o->cwd);
    self->runtime_dir = xstrdup(o->runtime_dir);
    self->assets_dir = xstrdup(o->assets_dir);
    self->assets = o->assets;
    self->interpreter = xstrdup(o->interpreter);
    self->env_note = xstrdup(o->env_note);
    self->python = xstrdup(o->python);
    self->kernelspec_dir = xstrdup(o->kernelspec_dir);
    self->env_extra = strv_dup(o->env_extra);
    self->boot_timeout_ms = o->boot_timeout_ms;
    self->shell_timeout_ms = o->shell_timeout_ms;
    self->allow_restart = o->allow_restart;
    self->want_spare = o->spare;
    self->connect = o->connect;
    self->connect_ud = o->connect_ud;
    self->vars = -1;
    self->next_id = 1;
    buf_init(&self->notes, 64 << 10);
    if (o->gateway_url) {
        gateway_opts_t go = {.url = o->gateway_url, .token = o->gateway_token, .ca_file = o->gateway_ca,
                             .insecure = o->gateway_insecure};
        self->gateway = gateway_new(loop, &go, err, errlen);
        if (!self->gateway) {
            runtime_destroy(&self, 0);
            return NULL;
        }
        /* The kernelspec is the gateway's: its language comes with the
         * kernel_info_reply. */
        self->language = xstrdup(strncmp(self->kernel_name, "python", 6) == 0 ? "python" : "kernel");
        s_start_soon(self);
        return self;
    }
    if (!self->existing) {
        self->spec = rt_spec(self, err, errlen);
        if (!self->spec) {
            runtime_destroy(&self, 0);
            return NULL;
        }
    }
    if (self->spec && self->spec->language[0])
        self->language = rt_lower_dup(self->spec->language);
    else
        self->language = xstrdup(self->existing ? "kernel" : "python");
    s_start_soon(self);
    return self;
}

void runtime_destroy(runtime_t **self_p, int grace_ms)
{
    if (!self_p || !*self_p)
        return;
    runtime_t *self = *self_p;
    loop_timer_cancel(self->loop, self->pump_timer);
    loop_timer_cancel(self->loop, self->start_timer);
    loop_timer_cancel(self->loop, self->spare_timer);
    loop_timer_cancel(self->loop, self->collect_timer);
    loop_timer_cancel(self->loop, self->state_timer);
    loop_timer_cancel(self->loop, self->watchdog_timer);
    rt_move_free_all(self);
    rt_spare_drop(self);
    kernel_destroy(&self->kernel, grace_ms);
    gateway_destroy(&self->gateway); /* after its kernel, which deletes itself there */
    /* Killed kernels are reaped on SIGCHLD; none may outlive the runtime. */
    kernel_reap_all(2000);
    rt_flush_pending(self, "rat-py is shutting down");
    while (self->execs) {
        runtime_exec_t *ex = self->execs;
        ex->has_obs = false;
        rt_exec_free(ex);
    }
    kernelspec_destroy(&self->spec);
    free(self->python);
    free(self->kernelspec_dir);
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
    out->silent_ms = runtime_silent_ms(self);
    for (rt_req_t *r = self->reqs; r; r = r->next)
        if (r->kind == REQ_RESET)
            out->reset_ms = loop_now_ms() - r->sent_ms;
    out->cwd = self->cwd;
    out->move_to = self->move ? self->move->cwd : NULL;
    out->next_interpreter = self->next_pending ? self->next_interpreter : NULL;
    out->held = self->hold;
    out->fresh = !self->used;
    if (self->kernel)
        kernel_stats(self->kernel, &out->wire);
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
