/* runtime_internal: the state the runtime_*.c files share (see runtime.c).
 * Not a public header: only bridge/runtime/runtime*.c include it. */
#ifndef RAT_RUNTIME_INTERNAL_H
#define RAT_RUNTIME_INTERNAL_H

#include "runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "assets.h"
#include "buf.h"
#include "jmsg.h"
#include "kernel.h"
#include "kernelspec.h"
#include "lang.h"
#include "outitems.h"
#include "log.h"
#include "mem.h"
#include "utf8.h"

#define SNAPSHOT_TIMEOUT_MS 2000   /* wait this long for a post-run var count asked separately */
#define DEATH_WINDOW_MS 60000      /* automatic restarts stop after ... */
#define DEATH_LIMIT 5              /* ... this many deaths within the window */
#define SPARE_DELAY_MS 1000        /* let the session's kernel settle before booting a spare */
#define SPARE_RETRIES 3            /* spares that die while starting before we stop trying */
#define MAX_DETACHED 8             /* finished runs kept for ctl wait */
/* input_request comes on stdin, output on iopub: two sockets, no order
 * between them. ipykernel flushes stdout before asking, so output printed
 * before input() is on its way; give it this long to land first. */
#define INPUT_SETTLE_MS 50
#define HELPER_OUTPUT_MAX (4u << 20) /* bytes a helper call may print (LANG_VIA_STDOUT) */
/* A run that may have been lost by the kernel (interrupted, never
 * acknowledged, or half answered) is checked this long after the doubt
 * arose, by a kernel_info_request on shell: shell requests are handled in
 * order, so its reply arriving before the run's own says the kernel skipped
 * the run. */
#define LOST_PROBE_MS 500
#define LOST_UNACKED_MS 2000       /* no busy status for a run this long: check it */
#define LOST_PROBES_MAX 3          /* probes in flight per run (one may be lost to the signal) */
/* A run whose reply is in waits for its idle status this long after a
 * probe's reply, unless iopub shows the probe first (then the idle was lost
 * for sure). iopub and shell are separate sockets: a large output (a 33 MB
 * display) can trail the reply by seconds on a loaded machine. */
#define IOPUB_LAG_MAX_MS 10000
#define INTERRUPT_SPACING_MS 1000  /* a cancel repeated sooner adds no second signal */
#define BARRIER_TRIES 4            /* kernel_info_requests that hold the queue after an interrupt */
/* Every request a caller waits for is answered within a bound, whatever the
 * kernel does (stopped, or holding the interpreter in a long C call). */
#define QUERY_TIMEOUT_MS 3000      /* completion, inspection */
/* Helper calls (an R overview can be slow), and completions and inspections
 * while no code runs, as long as the heartbeat answers. */
#define HELPER_TIMEOUT_MS 10000
#define RESET_TIMEOUT_MS 5000      /* as long as cancel waits */

typedef enum { ST_STARTING, ST_READY, ST_FAILED } rt_kstate_t;

/* Someone waiting for the verdict of a cancel (runtime_cancel_run). */
typedef struct rt_canceller {
    runtime_cancel_fn *cb;
    void *ud;
    struct rt_canceller *next;
} rt_canceller_t;

struct runtime_exec {
    runtime_t *rt;                 /* borrowed */
    unsigned long id;
    char *code;                    /* owned until done */
    bool allow_input;
    runtime_exec_state_t state;
    runtime_outcome_t outcome;
    char msg_id[WIRE_ID_LEN + 1];
    bool got_reply, got_idle, clear_pending;
    bool got_busy;                 /* the kernel acknowledged it (busy status or execute_input) */
    bool lost;                     /* rat-py ended it: the kernel went on without it */
    bool interrupt_pending;        /* cancelled before the kernel acknowledged it: interrupt at busy */
    int64_t interrupt_us;          /* when it was interrupted, 0 if never */
    uint64_t watch_timer;          /* when to check whether the kernel still has it */
    int64_t watch_due_ms;
    unsigned probes;               /* kernel_info probes in flight for it */
    /* The first probe sent for it: its status on iopub comes after all of
     * this run's iopub (one socket, in order), so once it is seen an idle
     * still missing was lost, not late (rt_probe_iopub). "" until a probe is sent. */
    char probe_id[WIRE_ID_LEN + 1];
    int64_t probe_answered_ms;     /* a probe answered while its idle was missing; 0 if not */
    rt_canceller_t *cancellers;     /* owned: verdicts owed, called once it ends */
    long number;
    int64_t sent_us, done_us, input_since_us, input_total_us;
    output_t *out;                 /* owned */
    outitems_t *items;             /* owned: the outputs as structured items */
    char *ename, *evalue, *source; /* owned */
    json_object *traceback;        /* owned: the error's frames, ANSI removed, or NULL */
    json_object *traceback_ansi;   /* owned: the same frames as the kernel sent them (colours kept), or NULL */
    long line;
    long vars;
    long assets;                   /* rich outputs saved */
    char *why;                     /* owned */
    char *prompt;                  /* owned */
    bool password;
    unsigned long input_seq;       /* input() prompts so far (runtime_exec_input_seq) */
    json_object *input_header;     /* owned reference */
    runtime_observer_t obs;
    void *obs_ud;
    bool has_obs;
    bool claimed;                  /* a caller follows it (started it or picked it up) */
    bool announced;                /* the watcher was told it started */
    bool detached;                 /* its caller left before it finished */
    uintptr_t owner;               /* who started it; 0: anyone */
    uint64_t snapshot_timer;
    uint64_t input_timer;          /* INPUT_SETTLE_MS before telling the observer */
    runtime_exec_t *next;          /* in runtime->execs, oldest first */
};

/* Reply to rt_query: content (borrowed) or NULL with err. */
typedef void (rt_reply_fn)(void *ud, json_object *content, const char *err);
typedef enum { REQ_INSTALL, REQ_SNAPSHOT, REQ_RESET, REQ_QUERY, REQ_HELPER, REQ_PROBE, REQ_BARRIER, REQ_MOVE,
              REQ_DETACH } rt_req_kind_t;

/* A move of the kernel's working directory (runtime_move): waiting for its
 * moment (runtime->move), or made in place and not yet answered by the
 * kernel (runtime->moving, with what it replaced, to put back if the
 * kernel refuses). */
typedef struct rt_move {
    char *cwd, *assets_dir, *interpreter, *env_note; /* owned */
    char *python;                  /* owned; NULL: the named kernelspec (runtime_place_t) */
    bool python_changed;           /* moving: python differed (PARTLY) */
    char *old_cwd, *old_assets_dir; /* owned (moving) */
    char *old_python;              /* owned (moving, when python_changed) */
    runtime_move_fn *done;
    void *ud;
} rt_move_t;

typedef struct rt_req {
    char msg_id[WIRE_ID_LEN + 1];
    rt_req_kind_t kind;
    /* A helper call run as its own non-silent execute (LANG_VIA_STDOUT):
     * its stdout is collected here, never forwarded, and it is complete once
     * both the reply and the kernel's idle status have arrived. */
    bool capture, got_reply, got_idle;
    int retries;                   /* resends after an abort */
    uint64_t resend_timer;
    uint64_t deadline_timer;       /* the caller gets an error then; a later reply is ignored */
    int64_t sent_ms;
    buf_t out;                     /* captured stdout */
    char *error;                   /* owned: the execution's error text, if any */
    json_object *reply_content;    /* owned reference: the execute_reply content */
    runtime_exec_t *ex;            /* REQ_SNAPSHOT, REQ_PROBE */
    runtime_done_fn *done;         /* REQ_RESET */
    rt_reply_fn *reply;       /* REQ_QUERY */
    runtime_text_fn *text;         /* REQ_HELPER */
    void *ud;
    bool all;
    runtime_t *rt;                 /* borrowed */
    char *fn, *arg;                /* captured helper call, kept for a resend; owned */
    struct rt_req *next;
} rt_req_t;

/* A reset, query or helper call waiting for the kernel to be ready. */
typedef struct rt_pending_reset {
    rt_req_kind_t kind;             /* REQ_RESET, REQ_QUERY or REQ_HELPER */
    bool all;
    unsigned long seq;             /* REQ_RESET: runs with a lower id came first */
    char *msg_type, *content;      /* REQ_QUERY; owned */
    char *expr;                    /* REQ_HELPER: the helper function; owned (content: its argument) */
    runtime_done_fn *done;
    rt_reply_fn *reply;
    runtime_text_fn *text;
    void *ud;
    struct rt_pending_reset *next;
} rt_pending_reset_t;

struct runtime {
    loop_t *loop;                  /* borrowed */
    /* options, owned copies */
    char *kernel_name, *existing, *cwd, *runtime_dir, *assets_dir, *interpreter, *env_note;
    assets_t *assets;              /* borrowed, may be NULL */
    char *python;                  /* {python} in rat-py's kernelspec, or NULL: kernel_name's */
    char *kernelspec_dir;          /* rat-py's kernelspec from there, or NULL: the built-in one */
    char **env_extra;
    int boot_timeout_ms;
    bool allow_restart;
    kernelspec_t *spec;            /* owned, NULL when attaching */
    kernel_t *kernel;              /* owned */
    struct gateway *gateway;       /* owned: kernels on a Jupyter Server, or NULL */
    rt_kstate_t kstate;
    char *fail_reason;             /* owned, when ST_FAILED */
    char *language;                /* owned: from kernel_info, else the spec */
    char *implementation;          /* owned: kernel_info implementation, e.g. "ipython" */
    json_object *snapshot;         /* owned: last {"vars", "rows"} from the helper */
    long snapshot_exec;
    const lang_t *lang;
    runtime_exec_t *execs;         /* owned list */
    runtime_exec_t *current;       /* borrowed from execs */
    long exec_count, vars;
    unsigned long rev, next_id;
    rt_req_t *reqs;                 /* owned list of internal requests */
    rt_pending_reset_t *pending_resets; /* owned: resets waiting for the kernel */
    runtime_done_fn *restart_done; /* pending ctl restart */
    void *restart_ud;
    /* An attached kernel's restart asked while still attaching: it is sent
     * once the kernel is ready (its session known, see runtime_restart). */
    bool restart_on_ready;
    int64_t deaths[DEATH_LIMIT];   /* ring of recent death times */
    unsigned ndeaths, restarts;
    char *last_death;              /* owned */
    /* An automatic restart nobody was told about (no run followed by a
     * caller ended with the death): the next run's output says so. Owned. */
    char *restart_note;
    uint64_t pump_timer;
    /* The first kernel's launch, from the loop's first pass (runtime_new):
     * the MCP handshake already waiting on stdin is answered before it. */
    uint64_t start_timer;
    uint64_t collect_timer;        /* frees released executions from the loop */
    runtime_watch_fn *watch;       /* runtime_watch */
    void *watch_ud;
    uint64_t state_timer;          /* a pending RUNTIME_EV_STATE */
    unsigned long snapshot_seq;
    kernel_conn_factory_fn *connect; /* NULL: ZeroMQ */
    void *connect_ud;
    /* --spare: a second kernel booted in the background and swapped in on
     * restart (and reset all), then replaced. */
    bool want_spare;
    kernel_t *spare;               /* owned */
    json_object *spare_info;       /* owned: its kernel_info_reply content */
    bool spare_ready;
    unsigned spare_failures;
    uint64_t spare_timer;
    bool helper_preinstalled;      /* rt_on_ready must not install the helper again */
    /* After a run ended on its own although it was interrupted, the signal
     * may still be on its way: no run starts until the kernel has answered a
     * shell request sent after it (barrier_id set while waiting). */
    char barrier_id[WIRE_ID_LEN + 1];
    uint64_t barrier_timer;
    unsigned barrier_tries;
    /* The barrier is owed but the interrupt itself has not completed (a
     * gateway's POST in flight, an interrupt_request not yet answered): it
     * is sent on the kernel's on_interrupted, and the queue waits meanwhile.
     * A barrier answered before the interrupt took effect proves nothing. */
    bool barrier_wait_interrupt;
    /* Where the kernel works (runtime_move.c). */
    rt_move_t *move;               /* owned: a move waiting for its moment */
    rt_move_t *moving;             /* owned: made in place, the kernel's answer not in yet */
    char *next_interpreter;        /* owned: the interpreter of kernels from the next start (PARTLY) */
    char *next_env_note;           /* owned: with it */
    bool next_pending;             /* the two above replace interpreter and env_note at the next start */
    bool used;                     /* user code was sent to the current kernel */
    bool hold;                     /* runtime_hold */
    buf_t notes;                   /* runtime_note: lines for the next run sent */
    bool detached;                 /* runtime_detach: the helper answered its detach */
    /* The shell watchdog (runtime_watchdog.c). */
    int shell_timeout_ms;
    uint64_t watchdog_timer;
    int64_t silent_since_us;       /* not answering since (the unacknowledged run's send); 0: answering */
    /* The kernel's last published status, whatever its parent: busy with
     * a request not ours (another client's, an earlier run's) is work, not
     * silence. */
    bool kernel_busy;
    /* Whether the kernel's last busy was for a request of rat-py's own (a
     * look, a snapshot, a completion: short and bounded), and when rat-py
     * sent that request; false for anything else. Kept until
     * the kernel's idle, not its reply: ipykernel 7 sends the reply before
     * its post_handler_hook (doc/kernels.md "An interrupt as a run ends"). */
    bool kernel_busy_own;
    int64_t kernel_busy_sent_ms;
    int64_t kernel_status_us;      /* when that status came, 0: none yet */
};

/* runtime_exec.c */
/* rev++ (a runtime event) and a coalesced RUNTIME_EV_STATE for the watcher. */
void rt_changed(runtime_t *self);
/* Tells the watcher about ex: START first if it was not told yet. */
void rt_emit(runtime_t *self, runtime_exec_t *ex, runtime_ev_kind_t kind, int stream, const char *text, size_t len,
             json_object *item);
void rt_exec_free(runtime_exec_t *ex);
void rt_finish(runtime_t *self, runtime_exec_t *ex, runtime_outcome_t outcome, const char *why);
void rt_maybe_done(runtime_t *self, runtime_exec_t *ex);
void rt_exec_acknowledged(runtime_t *self, runtime_exec_t *ex);
void rt_exec_input(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m);
void rt_fail_queued(runtime_t *self, const char *why);
void rt_pump_timer(loop_t *loop, void *ud);
void rt_pump(runtime_t *self);

/* runtime_iopub.c */
void rt_exec_iopub(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m);
void rt_exec_reply(runtime_t *self, runtime_exec_t *ex, wire_msg_t *m);

/* runtime_helper.c */
rt_req_t *rt_req_add(runtime_t *self, rt_req_kind_t kind, const char *msg_id);
void rt_req_bound(rt_req_t *r, int64_t ms);
int rt_send_silent(runtime_t *self, const char *code, const char *expr, char id_out[WIRE_ID_LEN + 1]);
void rt_req_reply(runtime_t *self, wire_msg_t *m);
void rt_req_iopub(runtime_t *self, wire_msg_t *m);
void rt_drop_reqs(runtime_t *self, const char *why);
void rt_query(runtime_t *self, const char *msg_type, const char *content, rt_reply_fn *cb, void *ud);

const char *rt_helper_run_expr(runtime_t *self, buf_t *snap);
bool rt_helper_reply_snapshot(runtime_t *self, json_object *content, bool ok);
void rt_helper_run_snapshot(runtime_t *self, runtime_exec_t *ex, bool have_snapshot);

/* runtime_cancel.c */
void rt_barrier_answered(runtime_t *self);
void rt_barrier_drop(runtime_t *self);
void rt_interrupt_done(runtime_t *self);
void rt_cancel_settle(runtime_t *self, runtime_exec_t *ex);
void rt_watch(runtime_exec_t *ex, int64_t ms);
void rt_probe_answered(runtime_t *self, runtime_exec_t *ex);
void rt_probe_iopub(runtime_t *self, runtime_exec_t *ex, const wire_msg_t *m);

/* runtime_supervise.c */
/* The session kernel's events (a spare swapped in gets them too). */
extern const kernel_events_t rt_kernel_events;
void rt_on_ready(void *ud, kernel_t *k, json_object *info);
/* The options of a kernel this runtime starts itself (kernelspec, cwd,
 * environment, timeouts): rt_start_kernel adds an existing kernel or a
 * gateway to them; the spare starts exactly these. Borrowed pointers into
 * self, valid while self is. */
kernel_opts_t rt_local_kernel_opts(const runtime_t *self);
void rt_start_kernel(runtime_t *self);
void rt_announce_restart(runtime_t *self, runtime_exec_t *ex);

/* runtime_spare.c */
void rt_spare_drop(runtime_t *self);
void rt_spare_schedule(runtime_t *self);
bool rt_spare_swap(runtime_t *self, runtime_done_fn *done, void *ud);

/* runtime_ready.c */
void rt_pending_free(rt_pending_reset_t *p);
void rt_pending_fail(rt_pending_reset_t *p, const char *why);
void rt_flush_pending(runtime_t *self, const char *why);
void rt_reset(runtime_t *self, bool all, unsigned long seq, runtime_done_fn *done, void *ud);
bool rt_wait_ready(runtime_t *self, rt_pending_reset_t *p);

/* runtime_move.c */
/* Makes the waiting move if this is its moment (see runtime_move). */
void rt_move_try(runtime_t *self);
/* A kernel is about to start: a waiting move is made now (its place is
 * where the kernel starts), an interpreter waiting for this start is
 * taken; the kernel has run nothing yet. */
void rt_move_at_start(runtime_t *self);
/* The kernel answered the in-place move (ok, or the error's text), or it
 * went away before answering (gone: the next kernel starts there). */
void rt_move_answered(runtime_t *self, bool ok, bool gone, const char *why);
/* Writes the notes (runtime_note) at the top of ex's output. */
void rt_move_notes(runtime_t *self, runtime_exec_t *ex);
void rt_move_free_all(runtime_t *self);

/* runtime_watchdog.c */
/* A run was just sent (self->current): the watchdog looks after it. */
void rt_watchdog_arm(runtime_t *self);
/* The kernel answered on shell, or acknowledged a run: a stall is over. */
void rt_watchdog_alive(runtime_t *self);
/* An iopub status message that is not the current run's (any parent). */
void rt_watchdog_status(runtime_t *self, const wire_msg_t *m);
/* The kernel is still busy with a request of rat-py's own (not a run). */
bool rt_watchdog_busy_own(const runtime_t *self);
/* The kernel is gone or replaced: nothing stalls any more. */
void rt_watchdog_reset(runtime_t *self);

/* runtime.c */
char *rt_lower_dup(const char *s);
/* The kernelspec kernels start from now (runtime_opts_t): rat-py's own,
 * from kernelspec_dir or built in (kernelspec/kernel.json), when python or
 * kernelspec_dir is set; else the one named kernel_name. Read by the one
 * kernelspec reader, so a copy someone changed is checked as any
 * kernelspec is. NULL with err filled when it cannot be had. */
kernelspec_t *rt_spec(const runtime_t *self, char *err, size_t errlen);

#endif
