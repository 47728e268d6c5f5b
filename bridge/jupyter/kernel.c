/* kernel: process + connection file + channels + readiness for one kernel;
 * a kernel on a gateway (its REST calls) is kernel_gw.c's, the state both
 * share kernel_internal.h. */
#define LOG_MODULE "kernel"
#include "kernel.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connfile.h"
#include "jmsg.h"
#include "kernel_internal.h"
#include "kernel_proc.h"
#include "kernel_zmq.h"
#include "log.h"
#include "mem.h"

#define NUDGE_INTERVAL_MS 1000 /* re-send kernel_info_request while booting */
/* A reply without iopub traffic means our subscription had not reached the
 * kernel's PUB socket yet (it travels after the ZMTP handshake): ask again
 * soon, backing off from IOPUB_PROOF_MS to NUDGE_INTERVAL_MS. Waiting a
 * fixed 200 ms here cost every third boot that much. */
#define IOPUB_PROOF_MS 10
#define HB_INTERVAL_MS 1000
#define HB_TOLERANCE_MS 3000
#define PORT_RETRIES 3
/* See s_redial. */
#define CHANS_GRACE_MS 3000
#define REDIALS 3
/* An interrupt is complete once the kernel answered interrupt_request on
 * control, or the gateway answered its POST; after these it is taken as
 * done regardless (a kernel that never answers one, a gateway that hangs),
 * so nothing that waits for it waits forever. */
#define INTERRUPT_REPLY_MS 5000
#define LOG_TRIM_BYTES (16L << 20)

static int s_launch(kernel_t *self, char *err, size_t errlen);

/* Brackets every call of an owner's handler. s_leave returns false when the
 * handler destroyed the kernel: the caller then returns at once, and the
 * memory stays valid until the loop frees it. */
static void s_enter(kernel_t *self)
{
    self->depth++;
}

static bool s_leave(kernel_t *self)
{
    self->depth--;
    return !self->doomed;
}

static kernel_conn_t *s_new_conn(kernel_t *self, char *err, size_t errlen)
{
    if (self->connect)
        return self->connect(self->connect_ud, self->loop, &self->ci, kernel_on_msg, kernel_on_conn_event, self, err,
                             errlen);
    return kernel_zmq_new(self->loop, &self->ci, kernel_on_msg, kernel_on_conn_event, self, err, errlen);
}

/* The kernel's extra environment: the kernelspec's `env` with ${VAR}
 * expanded from ours (as jupyter_client does), then the caller's (which
 * wins on a clash, being later in the list). Caller owns the result. */
static char **s_env(const kernel_opts_t *o)
{
    size_t ns = o->spec ? o->spec->nenv : 0, nx = 0;
    while (o->env_extra && o->env_extra[nx])
        nx++;
    char **env = xcalloc(ns + nx + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < ns; i++) {
        const char *eq = strchr(o->spec->env[i], '=');
        if (!eq)
            continue;
        bool overridden = false;
        for (size_t j = 0; j < nx && !overridden; j++)
            overridden = strncmp(o->env_extra[j], o->spec->env[i], (size_t)(eq - o->spec->env[i]) + 1) == 0;
        if (overridden)
            continue;
        char *val = kernelspec_expand_env(eq + 1);
        env[k++] = xasprintf("%.*s=%s", (int)(eq - o->spec->env[i]), o->spec->env[i], val);
        free(val);
    }
    for (size_t i = 0; i < nx; i++)
        env[k++] = xstrdup(o->env_extra[i]);
    return env;
}

void kernel_set_events(kernel_t *self, const kernel_events_t *ev, void *ud)
{
    self->ev = *ev;
    self->ud = ud;
}

kernel_state_t kernel_state(const kernel_t *self)
{
    return self->state;
}

bool kernel_owned(const kernel_t *self)
{
    return self->proc != NULL || self->remote_owned;
}

bool kernel_remote(const kernel_t *self)
{
    return self->gw != NULL;
}

pid_t kernel_pid(const kernel_t *self)
{
    return self->proc ? kernel_proc_pid(self->proc) : 0;
}

int64_t kernel_started_ms(const kernel_t *self)
{
    return self->started_ms;
}

int64_t kernel_boot_ms(const kernel_t *self)
{
    return self->ready_ms ? self->ready_ms - self->started_ms : 0;
}

const char *kernel_connection_file(const kernel_t *self)
{
    return self->conn_path;
}

const char *kernel_log_path(const kernel_t *self)
{
    return self->log_path;
}

bool kernel_heartbeat_ok(const kernel_t *self)
{
    return self->hb_ok;
}

void kernel_stats(const kernel_t *self, kconn_stats_t *out)
{
    if (self->conn)
        kernel_conn_stats(self->conn, out);
    else
        memset(out, 0, sizeof *out);
}

/* A death goes out from a 0 ms timer: kernel_check_exit and the timers
 * that find it are called by owners who do not expect a handler to run. */
static void s_emit_dead(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->event_timer = 0;
    char *why = self->dead_why;
    self->dead_why = NULL;
    if (self->ev.on_dead) {
        s_enter(self);
        self->ev.on_dead(self->ud, self, why ? why : "the kernel stopped");
        s_leave(self);
    }
    free(why);
}

void kernel_die(kernel_t *self, char *why /* consumed */)
{
    if (self->state == KERNEL_DEAD) {
        free(why);
        return;
    }
    self->state = KERNEL_DEAD;
    loop_timer_cancel(self->loop, self->nudge_timer);
    loop_timer_cancel(self->loop, self->boot_timer);
    loop_timer_cancel(self->loop, self->hb_dead_timer);
    loop_timer_cancel(self->loop, self->gw_poll_timer);
    self->nudge_timer = self->boot_timer = self->hb_dead_timer = self->gw_poll_timer = 0;
    if (self->conn)
        kernel_conn_heartbeat(self->conn, 0, 0);
    free(self->dead_why);
    self->dead_why = why;
    log_info("kernel dead: %s", why);
    self->event_timer = loop_timer(self->loop, 0, s_emit_dead, self);
}

static void s_send_info(kernel_t *self)
{
    kernel_conn_send(self->conn, KCHAN_SHELL, "kernel_info_request", NULL, NULL, self->info_id);
}

/* Whether a starting kernel failed to bind its ports, and was started again
 * on new ones (or died when that failed): another process took one of them
 * between rat-py picking it and the kernel binding it (connfile_init_local
 * can only hold them until the kernel starts). ipykernel says so in its log
 * ("Address already in use") and then often does not exit: its ZeroMQ
 * context waits at exit on the sockets it did bind, so the kernel hangs,
 * and only the boot timeout ended it (the 60-minute soak: a restart's
 * kernel not ready for 40 s). Checked at its exit and while it boots
 * (s_nudge), at most PORT_RETRIES times. */
static bool s_port_clash(kernel_t *self)
{
    if (self->state != KERNEL_STARTING || !self->proc || self->retries >= PORT_RETRIES)
        return false;
    char *tail = kernel_proc_log_tail(self->proc, 4096);
    bool clash = tail && strstr(tail, "Address already in use");
    free(tail);
    if (!clash)
        return false;
    log_info("kernel port clash; retrying with new ports");
    self->retries++;
    kernel_conn_destroy(&self->conn);
    kernel_proc_destroy(&self->proc); /* a hung one is killed */
    char err[512];
    if (s_launch(self, err, sizeof err) < 0)
        kernel_die(self, xstrdup(err));
    return true;
}

/* Whether a starting kernel's channels were connected again: its heartbeat
 * answers (ipykernel binds the heartbeat last, so all its ports are bound),
 * yet CHANS_GRACE_MS later not every socket has finished its handshake. One
 * of rat-py's sockets, connecting every 10 ms while the kernel starts, then
 * met another process's socket on that port, before the kernel bound it
 * (most often another kernel's IOPub pipe: a PULL socket ipykernel binds on
 * a port the system picks, which may be one rat-py picked and let go). Of a
 * peer of the wrong type libzmq makes a protocol error, and it never tries
 * that socket again: the kernel was healthy, and never ready (the
 * 60-minute soak: a restart's kernel not ready within 20 s, its log
 * empty). A heartbeat socket is made again by kernel_zmq itself. At most
 * REDIALS times a launch; then the boot timeout decides. */
static bool s_redial(kernel_t *self)
{
    if (self->gw || !self->conn || self->chans_up || self->redials >= REDIALS)
        return false;
    kconn_stats_t st;
    kernel_conn_stats(self->conn, &st);
    if (st.hb_rtt_us < 0)
        return false; /* no answer yet on this connection: maybe still binding */
    int64_t now = loop_now_ms();
    if (!self->answered_ms)
        self->answered_ms = now;
    if (now - self->answered_ms < CHANS_GRACE_MS)
        return false;
    log_info("the kernel answers its heartbeat, yet not all its channels connected within %d s: connecting its "
             "channels again",
             CHANS_GRACE_MS / 1000);
    self->redials++;
    kernel_conn_destroy(&self->conn);
    char err[512];
    self->conn = s_new_conn(self, err, sizeof err);
    if (!self->conn) {
        kernel_die(self, xstrdup(err));
        return true;
    }
    kernel_chans_connect(self);
    return true;
}

static void s_nudge(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->nudge_timer = 0;
    if (self->state != KERNEL_STARTING)
        return;
    if (s_redial(self))
        return; /* kernel_chans_connect armed the new connection's nudge */
    /* Reply and iopub are in: only the channels' handshakes are missing, and
     * kernel_on_conn_event finishes when they are done (the boot timer guards).
     * Asking again would not help; it used to re-arm at 0 ms here (iopub
     * came before the first reply, so proof_ms was never set) and flood the
     * kernel with kernel_info_requests until the handshakes were done. Only
     * s_redial looks again, once a nudge interval. */
    if (self->got_reply && self->got_iopub) {
        self->nudge_timer = loop_timer(loop, NUDGE_INTERVAL_MS, s_nudge, self);
        return;
    }
    if (!self->got_reply && s_port_clash(self))
        return; /* s_launch armed the new kernel's own nudge */
    /* Either no reply yet (kernel still booting: ask again, slowly) or a reply
     * came without iopub traffic (the subscription was not there yet). */
    s_send_info(self);
    int wait = NUDGE_INTERVAL_MS;
    if (self->got_reply && self->proof_ms > 0) {
        wait = self->proof_ms;
        self->proof_ms = self->proof_ms * 2 > NUDGE_INTERVAL_MS ? NUDGE_INTERVAL_MS : self->proof_ms * 2;
    }
    self->nudge_timer = loop_timer(loop, wait, s_nudge, self);
}

static void s_become_ready(kernel_t *self)
{
    self->state = KERNEL_READY;
    self->ready_ms = loop_now_ms();
    loop_timer_cancel(self->loop, self->nudge_timer);
    loop_timer_cancel(self->loop, self->boot_timer);
    self->nudge_timer = self->boot_timer = 0;
    log_info("kernel ready in %lld ms", (long long)(self->ready_ms - self->started_ms));
    if (self->ev.on_ready)
        self->ev.on_ready(self->ud, self, self->info);
}

/* The pending interrupt completed (or its wait ended): tell the owner.
 * Called from the loop only (a reply, a request's end, a timer). */
void kernel_interrupt_done(kernel_t *self, const char *how)
{
    loop_timer_cancel(self->loop, self->interrupt_timer);
    self->interrupt_timer = 0;
    self->interrupt_id[0] = '\0';
    log_debug("interrupt %s", how);
    if (self->ev.on_interrupted && self->state != KERNEL_DEAD) {
        s_enter(self);
        self->ev.on_interrupted(self->ud, self);
        s_leave(self);
    }
}

static void s_interrupt_timeout(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->interrupt_timer = 0;
    log_info("the kernel did not answer interrupt_request within %d s; going on", INTERRUPT_REPLY_MS / 1000);
    kernel_interrupt_done(self, "unanswered");
}

void kernel_on_msg(void *ud, kchan_t ch, wire_msg_t *m)
{
    kernel_t *self = ud;
    if (self->doomed)
        return;
    if (ch == KCHAN_CONTROL && self->interrupt_id[0] && m->parent_id && strcmp(m->parent_id, self->interrupt_id) == 0 &&
        strcmp(m->msg_type, "interrupt_reply") == 0) {
        kernel_interrupt_done(self, "answered");
        if (self->doomed)
            return;
    }
    const char *session = m->session;
    if (self->state == KERNEL_STARTING && self->stale_session && session && strcmp(session, self->stale_session) == 0)
        return; /* the kernel before the restart, still answering */
    if (ch == KCHAN_IOPUB && strcmp(m->msg_type, "status") == 0) {
        const char *st = wire_get_str(m->content, "execution_state");
        if (st)
            self->busy = strcmp(st, "busy") == 0;
    }
    if (self->state == KERNEL_STARTING) {
        if (ch == KCHAN_IOPUB)
            self->got_iopub = true;
        if (ch == KCHAN_SHELL && strcmp(m->msg_type, "kernel_info_reply") == 0) {
            self->got_reply = true;
            json_object_put(self->info);
            self->info = json_object_get(m->content);
            free(self->session);
            self->session = xstrdup(session);
            if (!self->got_iopub && self->proof_ms == 0) {
                /* First reply: switch from the slow boot nudge to the proof. */
                self->proof_ms = IOPUB_PROOF_MS;
                loop_timer_cancel(self->loop, self->nudge_timer);
                self->nudge_timer = loop_timer(self->loop, IOPUB_PROOF_MS, s_nudge, self);
            }
        }
        if (self->got_reply && self->got_iopub && self->chans_up) {
            /* The reply and status of the handshake are ours, not the
             * owner's. on_ready may destroy us: nothing follows it. */
            s_enter(self);
            s_become_ready(self);
            s_leave(self);
            return;
        }
        if (ch == KCHAN_SHELL && strcmp(m->msg_type, "kernel_info_reply") == 0)
            return;
    }
    if (self->state == KERNEL_DEAD)
        return;
    if (self->ev.on_msg) {
        s_enter(self);
        self->ev.on_msg(self->ud, self, ch, m);
        s_leave(self);
    }
}

/* Whether this kernel answers heartbeats while it runs code (ipykernel
 * does, from a thread of its own). */
static bool s_hb_while_busy(const kernel_t *self)
{
    const char *impl = self->info ? wire_get_str(self->info, "implementation") : NULL;
    return impl && strcmp(impl, "ipython") == 0;
}

static void s_hb_dead(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->hb_dead_timer = 0;
    if (self->hb_ok || self->state == KERNEL_DEAD)
        return;
    if (self->gw) {
        self->hb_dead_timer = loop_timer(loop, HB_DEAD_MS, s_hb_dead, self);
        kernel_gw_check(self);
        return;
    }
    if (self->busy && !s_hb_while_busy(self)) {
        /* Busy: silence proves nothing. Look again later. */
        self->hb_dead_timer = loop_timer(loop, HB_DEAD_MS, s_hb_dead, self);
        return;
    }
    kernel_die(self, xasprintf("the kernel has not answered its heartbeat for %d s%s (%s)",
                               (HB_TOLERANCE_MS + HB_DEAD_MS) / 1000, self->busy ? "" : " while idle",
                               self->state == KERNEL_STARTING ? "nothing answers at this connection file: is the kernel "
                                                                "running?"
                                                              : "it stopped or was killed"));
}

void kernel_on_conn_event(void *ud, kconn_event_t ev)
{
    kernel_t *self = ud;
    if (self->doomed)
        return;
    if (ev == KCONN_GONE) {
        const char *why = self->conn && self->conn->ops->error ? self->conn->ops->error(self->conn) : NULL;
        kernel_die(self, xstrdup(why ? why : "the kernel is gone"));
        return;
    }
    if (ev == KCONN_UP) {
        self->chans_up = true;
        if (self->state == KERNEL_STARTING && self->got_reply && self->got_iopub) {
            s_enter(self);
            s_become_ready(self);
            s_leave(self);
        }
        return;
    }
    bool ok = ev == KCONN_HB_OK;
    if (ok == self->hb_ok)
        return;
    self->hb_ok = ok;
    log_info("kernel heartbeat %s", ok ? "back" : "lost");
    if (!self->proc) {
        loop_timer_cancel(self->loop, self->hb_dead_timer);
        self->hb_dead_timer = ok ? 0 : loop_timer(self->loop, HB_DEAD_MS, s_hb_dead, self);
    }
    if (self->ev.on_heartbeat) {
        s_enter(self);
        self->ev.on_heartbeat(self->ud, self, ok);
        s_leave(self);
    }
}

static void s_boot_timeout(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->boot_timer = 0;
    if (self->state != KERNEL_STARTING)
        return;
    char *why = xasprintf("the kernel did not become ready within %d s%s%s", self->boot_timeout_ms / 1000,
                          self->log_path ? " (its log: " : "", self->log_path ? self->log_path : "");
    if (self->log_path) {
        char *w2 = xasprintf("%s)", why);
        free(why);
        why = w2;
    }
    kernel_die(self, why);
}

static void s_trim(loop_t *loop, void *ud)
{
    kernel_t *self = ud;
    self->trim_timer = loop_timer(loop, 5000, s_trim, self);
    if (self->proc)
        kernel_proc_trim_log(self->proc, LOG_TRIM_BYTES);
}

/* Builds a one-line explanation of an early exit from the log's last lines. */
static char *s_exit_reason(kernel_t *self, const char *how)
{
    char *tail = self->proc ? kernel_proc_log_tail(self->proc, 4096) : NULL;
    const char *last = NULL;
    if (tail) {
        /* Last non-empty line that is not debugger noise. */
        char *save = NULL;
        for (char *line = strtok_r(tail, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            while (*line == ' ' || *line == '\t')
                line++;
            if (*line && !strstr(line, "Debugger warning") && !strstr(line, "frozen modules") &&
                !strstr(line, "PYDEVD_DISABLE_FILE_VALIDATION") && strncmp(line, "0.00s -", 7) != 0)
                last = line;
        }
    }
    char *why;
    if (self->state == KERNEL_STARTING && last && strstr(last, "No module named ipykernel")) {
        /* The commonest start-up failure: a Python (--python, --venv, a
         * kernelspec's) without ipykernel. Say which and what to install. */
        const char *py = self->argv_template ? self->argv_template[0] : "python3";
        why = xasprintf("the kernel exited during start-up (%s): %s; %s lacks the ipykernel package: install it "
                        "(Debian/Ubuntu system Python: apt install python3-ipykernel; a venv or other Python: %s -m "
                        "pip install ipykernel)",
                        how, last, py, py);
    } else if (self->state == KERNEL_STARTING)
        why = xasprintf("the kernel exited during start-up (%s)%s%s", how, last ? ": " : "", last ? last : "");
    else
        why = xasprintf("kernel died (%s)", how);
    free(tail);
    return why;
}

void kernel_check_exit(kernel_t *self)
{
    int status = 0;
    if (!self->proc || self->state == KERNEL_DEAD || !kernel_proc_reap(self->proc, &status))
        return;
    char how[128];
    kernel_proc_describe(status, how, sizeof how);
    if (s_port_clash(self))
        return;
    kernel_die(self, s_exit_reason(self, how));
}

void kernel_set_ask_on_replace(kernel_t *self, bool ask)
{
    self->ask_on_replace = ask;
}

void kernel_reap_destroyed(void)
{
    kernel_proc_reap_orphans();
}

void kernel_reap_all(int max_ms)
{
    kernel_proc_reap_all(max_ms);
}

void kernel_chans_connect(kernel_t *self)
{
    self->got_reply = self->got_iopub = self->chans_up = false;
    self->proof_ms = 0;
    self->answered_ms = 0;
    s_send_info(self);
    loop_timer_cancel(self->loop, self->nudge_timer);
    self->nudge_timer = loop_timer(self->loop, NUDGE_INTERVAL_MS, s_nudge, self);
    kernel_conn_heartbeat(self->conn, HB_INTERVAL_MS, HB_TOLERANCE_MS);
}

/* Writes a connection file, spawns the process and connects. */
static int s_launch(kernel_t *self, char *err, size_t errlen)
{
    static unsigned seq;
    connfile_free(&self->ci);
    if (connfile_init_local(&self->ci, "", err, errlen) < 0)
        return -1;
    unsigned n = ++seq;
    self->redials = 0;
    /* A relaunch (port clash) leaves nothing behind: the previous attempt's
     * connection file holds a key, and its log would pile up. */
    if (self->owned_file && self->conn_path)
        unlink(self->conn_path);
    self->owned_file = false;
    if (self->log_path)
        unlink(self->log_path);
    free(self->conn_path);
    free(self->log_path);
    self->conn_path = xasprintf("%s/kernel-rat%ld-%u.json", self->runtime_dir, (long)getpid(), n);
    self->log_path = xasprintf("%s/kernel-rat%ld-%u.log", self->runtime_dir, (long)getpid(), n);
    unlink(self->log_path);
    if (connfile_write(self->conn_path, &self->ci, err, errlen) < 0)
        return -1;
    self->owned_file = true;
    size_t argc = 0;
    while (self->argv_template[argc])
        argc++;
    char **argv = xcalloc(argc + 1, sizeof *argv);
    for (size_t i = 0; i < argc; i++) {
        const char *a = self->argv_template[i];
        const char *at = strstr(a, "{connection_file}");
        argv[i] = at ? xasprintf("%.*s%s%s", (int)(at - a), a, self->conn_path, at + strlen("{connection_file}"))
                     : xstrdup(a);
    }
    char *parent = xasprintf("JPY_PARENT_PID=%ld", (long)getpid());
    size_t ne = 0;
    while (self->env_extra && self->env_extra[ne])
        ne++;
    char **env = xcalloc(ne + 3, sizeof *env);
    /* ipykernel's debugger warns about frozen modules at every start; the
     * warning is noise in the log and costs start-up time. */
    env[0] = xstrdup("PYDEVD_DISABLE_FILE_VALIDATION=1");
    env[1] = parent;
    for (size_t i = 0; i < ne; i++)
        env[2 + i] = xstrdup(self->env_extra[i]);
    static char *const drop[] = {"PYTHONEXECUTABLE", NULL};
    kernel_proc_opts_t po = {
        .argv = argv, .env_extra = env, .env_drop = drop, .cwd = self->cwd, .log_path = self->log_path,
    };
    self->started_ms = loop_now_ms();
    self->proc = kernel_proc_spawn(&po, err, errlen);
    strv_free(argv);
    strv_free(env);
    if (!self->proc) {
        unlink(self->conn_path);
        return -1;
    }
    log_info("kernel pid %ld started: %s", (long)kernel_proc_pid(self->proc), self->conn_path);
    self->conn = s_new_conn(self, err, errlen);
    if (!self->conn)
        return -1;
    kernel_chans_connect(self);
    return 0;
}

kernel_t *kernel_start(loop_t *loop, const kernel_opts_t *o, const kernel_events_t *ev, void *ud,
                       char *err, size_t errlen)
{
    kernel_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->ev = *ev;
    self->ud = ud;
    self->connect = o->connect;
    self->connect_ud = o->connect_ud;
    self->state = KERNEL_STARTING;
    self->hb_ok = true;
    self->boot_timeout_ms = o->boot_timeout_ms > 0 ? o->boot_timeout_ms : 60000;
    self->runtime_dir = xstrdup(o->runtime_dir ? o->runtime_dir : "/tmp");
    self->started_ms = loop_now_ms();
    if (o->gateway) {
        self->gw = o->gateway;
        if (kernel_gw_start(self, o, err, errlen) < 0)
            goto fail;
    } else if (o->existing) {
        self->conn_path = xstrdup(o->existing);
        if (connfile_read(o->existing, &self->ci, err, errlen) < 0)
            goto fail;
        self->interrupt_message = true; /* no process to signal */
        self->conn = s_new_conn(self, err, errlen);
        if (!self->conn)
            goto fail;
        kernel_chans_connect(self);
    } else {
        if (!o->spec) {
            snprintf(err, errlen, "no kernelspec to start the kernel from");
            goto fail;
        }
        /* {resource_dir}, {prefix} and {python} now; {connection_file}
         * stays for each launch. */
        self->argv_template = kernelspec_argv(o->spec, "{connection_file}", o->python);
        self->env_extra = s_env(o);
        self->cwd = xstrdup(o->cwd);
        self->interrupt_message = o->spec && o->spec->interrupt_message;
        if (s_launch(self, err, errlen) < 0)
            goto fail;
        self->trim_timer = loop_timer(loop, 5000, s_trim, self);
    }
    self->boot_timer = loop_timer(loop, self->boot_timeout_ms, s_boot_timeout, self);
    return self;
fail:
    kernel_destroy(&self, 0);
    return NULL;
}

/* The memory, and the connection (whose callbacks may be on the stack when
 * the kernel is destroyed: see kernel_conn.h). */
static void s_free(kernel_t *self)
{
    kernel_conn_destroy(&self->conn);
    free(self->remote_id);
    connfile_free(&self->ci);
    json_object_put(self->info);
    strv_free(self->argv_template);
    strv_free(self->env_extra);
    free(self->cwd);
    free(self->conn_path);
    free(self->log_path);
    free(self->runtime_dir);
    free(self->dead_why);
    free(self->session);
    free(self->stale_session);
    free(self);
}

static void s_free_timer(loop_t *loop, void *ud)
{
    s_free(ud);
}

/* A replaced kernel's process asked to quit by kernel_destroy: SIGKILLed by
 * the reaper if it has not gone when its grace is up. ud: NULL (the kernel_t
 * is gone by then; the orphans are kernel_proc's). */
static void s_reap_due(loop_t *loop, void *ud);

/* Arms s_reap_due for the first deferred process's deadline, if any. */
static void s_arm_reaper(loop_t *loop)
{
    int due = kernel_proc_orphans_due_ms();
    if (due >= 0)
        loop_timer(loop, due + 1, s_reap_due, NULL);
}

static void s_reap_due(loop_t *loop, void *ud)
{
    (void)ud;
    kernel_proc_reap_orphans();
    s_arm_reaper(loop);
}

void kernel_destroy(kernel_t **self_p, int grace_ms)
{
    if (!self_p || !*self_p)
        return;
    kernel_t *self = *self_p;
    *self_p = NULL;
    if (self->doomed)
        return;
    loop_timer_cancel(self->loop, self->nudge_timer);
    loop_timer_cancel(self->loop, self->boot_timer);
    loop_timer_cancel(self->loop, self->event_timer);
    loop_timer_cancel(self->loop, self->trim_timer);
    loop_timer_cancel(self->loop, self->hb_dead_timer);
    loop_timer_cancel(self->loop, self->gw_poll_timer);
    loop_timer_cancel(self->loop, self->interrupt_timer);
    if (self->proc && !kernel_proc_exited(self->proc) && self->conn && grace_ms > 0 &&
        self->state == KERNEL_READY) {
        /* Ask politely first: ipykernel then cleans up its own children.
         * And give it half the grace to go by itself: R removes its session
         * directory (/tmp/RtmpXXXXXX, which holds what tempfile() made) only
         * when it quits, ~20 ms after the request, never on SIGTERM. */
        if (kernel_conn_send(self->conn, KCHAN_CONTROL, "shutdown_request", jmsg_shutdown_request(false), NULL,
                             NULL) == 0)
            grace_ms -= kernel_proc_wait(self->proc, grace_ms / 2);
    }
    if (self->proc && grace_ms == 0 && self->ask_on_replace && !kernel_proc_exited(self->proc) && self->conn &&
        self->state == KERNEL_READY &&
        kernel_conn_send(self->conn, KCHAN_CONTROL, "shutdown_request", jmsg_shutdown_request(false), NULL, NULL) ==
            0) {
        /* Replaced (restart, spare swap): asked to go, and not waited for.
         * The reaper SIGKILLs it if it has not gone in KERNEL_QUIT_MS. */
        kernel_proc_destroy_deferred(&self->proc, KERNEL_QUIT_MS);
        s_arm_reaper(self->loop);
    }
    if (self->proc) {
        kernel_proc_stop(self->proc, grace_ms);
        kernel_proc_destroy(&self->proc);
    }
    if (self->gw)
        kernel_gw_close(self, grace_ms);
    if (self->owned_file && self->conn_path)
        unlink(self->conn_path);
    if (self->log_path && self->argv_template)
        unlink(self->log_path);
    if (self->depth > 0) {
        /* Inside one of our handlers: silent from now on, freed from the loop. */
        self->doomed = true;
        self->state = KERNEL_DEAD;
        memset(&self->ev, 0, sizeof self->ev);
        /* loop_defer, not a plain timer: if the loop stops first (a death
         * then EOF in one pass), loop_destroy still frees it, closing its
         * sockets before the process's ZeroMQ context ends at exit, which
         * would wait for them (zmqctx.h). */
        self->free_timer = loop_defer(self->loop, s_free_timer, self);
        return;
    }
    s_free(self);
}

int kernel_send(kernel_t *self, kchan_t ch, const char *msg_type, const char *content, json_object *parent,
                char id_out[WIRE_ID_LEN + 1])
{
    if (!self->conn || self->state == KERNEL_DEAD)
        return -1;
    return kernel_conn_send(self->conn, ch, msg_type, content, parent, id_out);
}

int kernel_interrupt(kernel_t *self)
{
    if (self->state == KERNEL_DEAD)
        return -1;
    if (self->gw)
        return kernel_gw_interrupt(self);
    if (self->interrupt_message || !self->proc) {
        /* Pending until its interrupt_reply (the kernel signals itself,
         * then answers, from its control thread). A newer request replaces
         * the one waited for. */
        if (kernel_send(self, KCHAN_CONTROL, "interrupt_request", NULL, NULL, self->interrupt_id) < 0) {
            self->interrupt_id[0] = '\0';
            return -1;
        }
        loop_timer_cancel(self->loop, self->interrupt_timer);
        self->interrupt_timer = loop_timer(self->loop, INTERRUPT_REPLY_MS, s_interrupt_timeout, self);
        return 0;
    }
    if (kernel_proc_is_stopped(self->proc)) {
        /* Someone stopped the kernel (kill -STOP, a debugger that let go):
         * a SIGINT would stay pending until it runs again, so cancel would
         * wait out its 5 s and fail. Continue it (its group), and signal
         * its main thread alone, where a kernel takes SIGINT (Python runs
         * its handlers there): sent to the process, the signal waits on the
         * process's queue through the stop and, on SIGCONT, whichever
         * thread runs first takes it, a ZeroMQ or heartbeat thread as often
         * as not, and the main thread, in a sleep or a call in C, sleeps on
         * to its end (integration.interrupt_window's reset case, every run after
         * another test). The group's other processes
         * are continued, not interrupted. */
        log_info("kernel pid %ld is stopped; continuing it to take the interrupt", (long)kernel_pid(self));
        if (kernel_proc_signal_main(self->proc, SIGINT) < 0)
            return -1;
        kernel_proc_signal(self->proc, SIGCONT);
        return 0;
    }
    if (kernel_proc_signal(self->proc, SIGINT) < 0)
        return -1;
    return 0;
}

bool kernel_interrupt_pending(const kernel_t *self)
{
    return self->gw_interrupt != NULL || self->interrupt_id[0] != '\0';
}

int kernel_restart_attached(kernel_t *self)
{
    if (self->proc || !self->conn || self->state == KERNEL_DEAD)
        return -1;
    if (self->gw) {
        if (kernel_gw_restart(self) < 0)
            return -1;
    } else if (kernel_send(self, KCHAN_CONTROL, "shutdown_request", jmsg_shutdown_request(true), NULL, NULL) < 0) {
        return -1;
    }
    /* Same sockets: ZeroMQ reconnects to the same ports once the owner has
     * started the kernel again. What the old kernel still says is ignored. */
    free(self->stale_session);
    self->stale_session = self->session;
    self->session = NULL;
    self->state = KERNEL_STARTING;
    self->ready_ms = 0;
    self->started_ms = loop_now_ms();
    self->busy = false;
    json_object_put(self->info);
    self->info = NULL;
    kernel_chans_connect(self);
    self->chans_up = true; /* the ZMTP handshakes are done and survive the reconnect */
    loop_timer_cancel(self->loop, self->boot_timer);
    self->boot_timer = loop_timer(self->loop, self->boot_timeout_ms, s_boot_timeout, self);
    return 0;
}
