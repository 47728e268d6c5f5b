/* runtime: executions against the session's kernel, one at a time.
 *
 * The runtime owns the current kernel (kernel.c) and replaces it when it dies
 * or is restarted. Runs are queued FIFO and sent to the kernel one at a time,
 * so each run's output, input requests and result are its own, cancelling
 * one never aborts another, and a queued run can be dropped without touching
 * the kernel. Busy/idle comes from the kernel's iopub status and
 * execute_reply (a run is done when both have arrived), never from timers.
 *
 * Knows Jupyter, not MCP: tools observe executions through callbacks.
 *
 * Callbacks and lifetime (the rule of every layer, see kernel.h: nothing is
 * freed under a caller that may still use it). Observers (on_output,
 * on_input, on_done) and the done/reply/text callbacks may be called from
 * inside runtime_* calls (a cancelled queued run finishes inside
 * runtime_cancel) as well as from the loop. Inside them a caller may
 * release executions (runtime_exec_release): a released execution is freed
 * from the loop, never under the frame that finished it, so the runtime
 * and the observer's callers may still read it until they return. They may
 * read state and answer their own callers, but must not call
 * runtime_execute, runtime_cancel, runtime_restart, runtime_reset or
 * runtime_destroy synchronously (the runtime is in the middle of a
 * transition): defer such a call to the loop. The runtime itself destroys
 * kernels inside kernel handlers, which kernel.h allows. */
#ifndef RAT_RUNTIME_H
#define RAT_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "jmsg.h"
#include "kernel_conn.h"
#include "loop.h"
#include "outitems.h"
#include "output.h"

typedef struct runtime runtime_t;
typedef struct runtime_exec runtime_exec_t;

#define RUNTIME_SHELL_TIMEOUT_MS 30000 /* the shell watchdog's default bound (--shell-timeout) */

typedef struct {
    const char *kernel_name;   /* kernelspec to find and launch, unless one of: */
    /* rat-py's own kernelspec (kernelspec/kernel.json, built in), or the
     * one in kernelspec_dir, launched with python as its {python}: a
     * stock ipykernel from the interpreter the caller chose (interp.h). */
    const char *python;
    const char *kernelspec_dir;
    const char *existing;      /* attach to this connection file instead */
    const char *cwd;           /* kernel working directory */
    const char *runtime_dir;   /* connection + log files */
    const char *assets_dir;    /* full-output files */
    struct assets *assets;     /* borrowed: where images and HTML outputs are saved (may be NULL) */
    const char *interpreter;   /* informational, for status (may be NULL) */
    const char *env_note;      /* informational, e.g. why a venv was (not) used */
    char *const *env_extra;    /* extra "KEY=VALUE" for the kernel */
    int boot_timeout_ms;
    /* The shell watchdog's bound (runtime_watchdog.c): a run the kernel has
     * not acknowledged this long, while it is not busy with anything else,
     * makes the kernel "not answering". 0: RUNTIME_SHELL_TIMEOUT_MS. */
    int shell_timeout_ms;
    bool allow_restart;        /* for attached kernels */
    bool spare;                /* keep a warm spare kernel for restart / reset all */
    /* Makes each kernel's connection (the session's and the spare's); NULL:
     * ZeroMQ. The unit tests hand a fake one here to drive deaths,
     * restarts, spare swaps and replies in any order. */
    kernel_conn_factory_fn *connect;
    void *connect_ud;
    /* A Jupyter Server / Enterprise Gateway (gateway.h): kernels are started
     * there (kernel_name is the remote kernelspec), or existing is a kernel
     * id there. The runtime owns the client. */
    const char *gateway_url, *gateway_token, *gateway_ca;
    bool gateway_insecure;
} runtime_opts_t;

typedef enum {
    RUNTIME_EXEC_QUEUED,
    RUNTIME_EXEC_RUNNING,
    RUNTIME_EXEC_INPUT,        /* waiting for runtime_exec_answer */
    RUNTIME_EXEC_DONE,
} runtime_exec_state_t;

typedef enum {
    RUNTIME_OK,
    RUNTIME_ERROR,             /* the code raised: see runtime_exec_error */
    RUNTIME_ABORTED,           /* the kernel aborted it */
    RUNTIME_FAILED,            /* kernel died / could not start / restarted: see why */
    RUNTIME_CANCELLED,         /* removed from the queue before it ran */
} runtime_outcome_t;

typedef struct {
    const char *ename;         /* e.g. "NameError" */
    const char *evalue;
    long line;                 /* line in this run's code, 0 if unknown */
    const char *source;        /* that line's text, or NULL */
    json_object *traceback;    /* the kernel's frames as strings, ANSI removed (borrowed), or NULL */
    json_object *traceback_ansi; /* the same frames with their ANSI colours (borrowed), or NULL */
} runtime_error_t;

typedef struct {
    /* A cleaned chunk of stdout (stream 0) or stderr (stream 1) arrived. */
    void (*on_output)(void *ud, runtime_exec_t *ex, int stream, const char *text, size_t len);
    /* The code called input(): see runtime_exec_prompt. */
    void (*on_input)(void *ud, runtime_exec_t *ex);
    /* The execution finished (any outcome). */
    void (*on_done)(void *ud, runtime_exec_t *ex);
    /* The shell watchdog found the kernel not answering (runtime_silent_ms)
     * while ex, running or queued, was followed: ex stays where it is (it
     * runs if the kernel answers again). Once per stall; may be NULL. */
    void (*on_silent)(void *ud, runtime_exec_t *ex);
} runtime_observer_t;

/* The one word for "a run's input() waits for an answer", everywhere it is
 * shown: the kernel's state (ctl status, look's header, rat://status, the
 * page) and a run's result status. The same word the Go rat and vscode-rat
 * use. */
#define RUNTIME_STATE_WAITING "waiting_for_input"

typedef struct {
    const char *language;      /* "python", "R", ... or the spec's language before ready */
    const char *state;         /* starting, idle, busy, waiting_for_input, restarting, dead */
    long exec_count;           /* last execution_count seen */
    unsigned long rev;         /* runtime events so far */
    int64_t up_ms;             /* since the current kernel started */
    runtime_exec_t *running;   /* or NULL */
    size_t queued;
    long vars;                 /* -1 unknown */
    pid_t pid;                 /* 0 when attached */
    const char *kernel_name, *display_name, *interpreter, *env_note;
    const char *connection_file, *log_path;
    const char *last_death;    /* why the previous kernel died, or NULL */
    unsigned restarts;         /* automatic restarts so far */
    bool heartbeat_ok, attached;
    const char *spare;         /* "ready", "starting", "none", or NULL without --spare */
    pid_t spare_pid;
    int64_t boot_ms;
    int64_t reset_ms;          /* age of a reset the kernel has not confirmed yet, -1 if none */
    const char *cwd;           /* where the kernel works (runtime_move) */
    const char *move_to;       /* a move waiting for its moment (runtime_move), or NULL */
    const char *next_interpreter; /* the interpreter of kernels from the next restart on, when it differs, or NULL */
    bool held;                 /* runs wait (runtime_hold) */
    int64_t silent_ms;         /* -1, or since when the kernel has not answered its shell (runtime_silent_ms) */
    bool fresh;                /* the current kernel has run no user code */
    kconn_stats_t wire;
} runtime_status_t;

typedef void (runtime_done_fn)(void *ud, bool ok, const char *text);
/* Result of runtime_call_helper: the expression's text/plain, or NULL with err. */
typedef void (runtime_text_fn)(void *ud, const char *text, const char *err);

/* Starts the kernel in the background from the loop's next pass (after the
 * I/O that pass serves); returns at once. NULL with err filled when the
 * configuration is unusable (e.g. no such kernelspec); a kernel that cannot
 * be launched is reported as today, by the runs and the status. */
runtime_t *runtime_new(loop_t *loop, const runtime_opts_t *opts, char *err, size_t errlen);
/* Stops the kernel (owned ones within grace_ms) and frees everything. */
void runtime_destroy(runtime_t **self_p, int grace_ms);
/* Before runtime_destroy, for a kernel rat-py attached to (not one it
 * started): asks the kernel-side helper to undo what it changed there
 * (lang_t.detach_code) and runs the loop until the kernel confirms, at most
 * max_ms, or RUNTIME_DETACH_REMOTE_MS for a kernel on a gateway (its answer
 * crosses the gateway; and the request must be out of the WebSocket, which
 * only the loop writes, before it closes). Runs the loop itself, also after
 * loop_run has returned on loop_stop (resumed for the wait, stopped again
 * after): not from inside a loop callback. */
#define RUNTIME_DETACH_REMOTE_MS 2000
void runtime_detach(runtime_t *self, int max_ms);
/* SIGCHLD arrived. */
void runtime_on_sigchld(runtime_t *self);

/* The queue's bounds: runs waiting (not yet sent to the kernel), and the
 * bytes of their code together (each run's code is up to 4 MiB). A client
 * that queues without waiting is refused past them, not let grow rat-py. */
#define RUNTIME_QUEUE_MAX 256
#define RUNTIME_QUEUE_MAX_BYTES ((size_t)64 << 20)
/* Whether a run of code_len bytes fits in the queue now. When it does not,
 * why gets a sentence naming the bound and what to do. */
bool runtime_queue_room(const runtime_t *self, size_t code_len, char *why, size_t whylen);
/* Queues code. The runtime keeps the execution until runtime_exec_release.
 * NULL when the queue has no room for it (runtime_queue_room). */
runtime_exec_t *runtime_execute(runtime_t *self, const char *code, bool allow_input);
/* The running execution (or the one waiting for input), else NULL. */
runtime_exec_t *runtime_current(runtime_t *self);
/* Claims the oldest execution whose caller stopped following it before it
 * finished (ctl wait picks it up), skipping those waiting for an input()
 * answer from an owner other than owner (see runtime_exec_set_owner); NULL
 * when there is none. */
runtime_exec_t *runtime_detached(runtime_t *self, uintptr_t owner);
/* The same, for the run whose execution count is number (0: any). */
runtime_exec_t *runtime_detached_number(runtime_t *self, uintptr_t owner, long number);
/* What a cancel did to the run it was aimed at, known once that run ended. */
typedef enum {
    RUNTIME_CANCEL_INTERRUPTED, /* it stopped on the interrupt (KeyboardInterrupt, the kernel's abort) */
    RUNTIME_CANCEL_DROPPED,     /* it had not started: it never ran */
    RUNTIME_CANCEL_ENDED,       /* it ended on its own before the interrupt took effect */
    RUNTIME_CANCEL_LOST,        /* the kernel lost it after the interrupt; rat-py ended it */
    RUNTIME_CANCEL_FAILED,      /* the kernel died or was restarted meanwhile */
} runtime_cancel_verdict_t;
/* Called once when the cancelled run ends. ex is valid during the call only
 * and must not be released by it (the runtime calls the run's own observer
 * right after). */
typedef void (runtime_cancel_fn)(void *ud, runtime_exec_t *ex, runtime_cancel_verdict_t verdict);

/* Cancels ex, and only ex: a queued run is dropped (never interrupted); a
 * running one is interrupted, unless its reply is already in (then it is
 * ending and the signal would hit whatever runs next). After an interrupt
 * the queue waits until the kernel has shown it took the signal, so it never
 * lands in the next run; a run the kernel loses on the interrupt (ipykernel
 * drops a request whose SIGINT arrives while it dispatches it) is ended once
 * the kernel answers a later request on the same channel. cb (may be NULL)
 * gets the verdict when ex ends, possibly before this returns (a queued run
 * is dropped at once). Returns 0, or -1 when ex is done or the kernel cannot
 * be reached (cb is then never called). */
int runtime_cancel_run(runtime_t *self, runtime_exec_t *ex, runtime_cancel_fn *cb, void *ud);
/* The same without a verdict. */
int runtime_cancel(runtime_t *self, runtime_exec_t *ex);
/* Forgets every pending cancel callback with this ud (its caller is gone). */
void runtime_cancel_forget(runtime_t *self, void *ud);
/* The oldest queued run, or NULL. */
runtime_exec_t *runtime_first_queued(runtime_t *self);
/* Restarts the kernel; done runs when the new one is ready (or failed). */
void runtime_restart(runtime_t *self, runtime_done_fn *done, void *ud);
/* Clears the namespace (all: also history and the exec counter). Refused
 * while something runs. done gets the new variable count in the text. */
void runtime_reset(runtime_t *self, bool all, runtime_done_fn *done, void *ud);
void runtime_status(runtime_t *self, runtime_status_t *out);
/* The kernel's completions of code at cursor (code points) through
 * complete_request (idle: on shell; while code runs: on control when the kernel answers
 * there (ipykernel), else cb gets a "busy" error at once; while the kernel
 * starts, the request waits for it).
 * cb gets the parsed reply (borrowed, valid during the call; cursor_start
 * and cursor_end -1 when the kernel did not say), or NULL with err. */
typedef jmsg_completion_t runtime_completion_t;
typedef jmsg_complete_reply_t runtime_completions_t;
typedef void (runtime_complete_fn)(void *ud, const runtime_completions_t *c, const char *err);
void runtime_complete(runtime_t *self, const char *code, size_t cursor, runtime_complete_fn *cb, void *ud);
/* The kernel's own inspector on code (inspect_request, cursor at the end).
 * cb gets its text/plain (borrowed, len bytes), or NULL: with err when there
 * was no answer, with err NULL when the kernel found nothing. */
typedef void (runtime_inspect_fn)(void *ud, const char *text, size_t len, const char *err);
void runtime_inspect(runtime_t *self, const char *code, runtime_inspect_fn *cb, void *ud);
/* Calls function fn of the kernel-side helper ("snap", "inspect") with
 * json_arg (JSON text, or NULL) and returns the JSON text it answers (see
 * lang.h for how each kernel carries it; no history, no output to anyone
 * else). Needs an idle kernel with a helper; cb gets an error otherwise. */
void runtime_call_helper(runtime_t *self, const char *fn, const char *json_arg, runtime_text_fn *cb, void *ud);
/* The state snapshot taken after the last execution ({"vars": N, "rows":
 * [...]}; borrowed, NULL if none) and the execution count it belongs to. */
json_object *runtime_snapshot(runtime_t *self, long *exec_count);
/* Whether the kernel has a helper for its language (variables, drill-down). */
bool runtime_has_helper(runtime_t *self);
/* Whether the kernel is ready and nothing runs or waits in the queue. */
bool runtime_idle(runtime_t *self);
/* Whether the kernel can be restarted by us. */
bool runtime_can_restart(const runtime_t *self, const char **why);

/* ---- where the kernel works ---- */

/* A working directory and how kernels start there. */
typedef struct {
    const char *cwd;           /* absolute path of an existing directory */
    const char *assets_dir;    /* where full outputs spill from now on; NULL: unchanged */
    const char *python;        /* how kernels start there (as runtime_opts_t.python; NULL: the named kernelspec) */
    const char *interpreter;   /* with python, for status (may be NULL) */
    const char *env_note;      /* for status (may be NULL) */
} runtime_place_t;

typedef enum {
    RUNTIME_MOVE_IN_PLACE,     /* the kernel changed directory; its variables are kept */
    RUNTIME_MOVE_PARTLY,       /* it changed directory; its interpreter changes at the next restart */
    RUNTIME_MOVE_STARTED,      /* a kernel was started there: one that had run no code was replaced,
                                * or the kernel (re)started after the move was asked for */
    RUNTIME_MOVE_FAILED,       /* why says why; the kernel works where it did */
    RUNTIME_MOVE_DROPPED,      /* replaced by a newer move, or the runtime is going away */
} runtime_move_result_t;
/* Called once per move, possibly before runtime_move returns, from the
 * loop or a kernel handler. It may read the status and call runtime_note;
 * nothing else of the runtime. */
typedef void (runtime_move_fn)(void *ud, runtime_move_result_t result, const char *why);

/* Moves an owned kernel to p at the first moment that breaks nothing:
 *  - a kernel that has run no user code yet moves at once, queued runs
 *    waiting for it: in place (the language's chdir, lang.h) or, when
 *    p->python differs or the language cannot move in place, by starting a
 *    new kernel there (a booting one is replaced at once);
 *  - otherwise when it is idle with no run queued: in place, variables
 *    kept; a different python then waits for the next restart (PARTLY), and
 *    a language that cannot move in place waits for it entirely;
 *  - or at the kernel's next start (ctl restart, a restart after a death,
 *    a start after a failure), whichever comes first.
 * Never under a running cell. A newer move replaces one still waiting (its
 * done gets DROPPED). Attached and gateway kernels are not ours to move:
 * done gets FAILED at once. done may be NULL. */
void runtime_move(runtime_t *self, const runtime_place_t *p, runtime_move_fn *done, void *ud);
/* While held, queued runs wait (the kernel still starts, a move is still
 * made): for a decision about where the kernel works that is about to
 * come. Releasing it lets them go from the loop. */
void runtime_hold(runtime_t *self, bool hold);
/* Puts text on its own line at the top of the next run sent to the kernel
 * (after earlier notes): what a client should hear once, in its next
 * result. Copied. */
void runtime_note(runtime_t *self, const char *text);

/* ---- watching every run (whoever started it) ---- */
typedef enum {
    RUNTIME_EV_START,   /* the kernel took ex (its exec count once the kernel said it) */
    RUNTIME_EV_OUTPUT,  /* output of ex: a cleaned stream chunk, or one structured item */
    RUNTIME_EV_INPUT,   /* ex waits for an input() answer (runtime_exec_prompt) */
    RUNTIME_EV_END,     /* ex finished (only runs that had a START) */
    RUNTIME_EV_STATE,   /* something in runtime_status changed (rev moved); coalesced, from the loop */
    RUNTIME_EV_SILENT,  /* the kernel stopped answering its shell (runtime_silent_ms); ex: the run it has
                         * not acknowledged */
    RUNTIME_EV_ANSWERING, /* after RUNTIME_EV_SILENT: the kernel answers again, or was replaced; ex NULL */
} runtime_ev_kind_t;

typedef struct {
    runtime_ev_kind_t kind;
    runtime_exec_t *ex;        /* NULL for STATE */
    int stream;                /* OUTPUT: 0 stdout, 1 stderr, -1 item */
    const char *text;          /* OUTPUT stream: the cleaned chunk (len bytes) */
    size_t len;
    json_object *item;         /* OUTPUT item: a display/clear item as in outitems.h (borrowed; take a
                                * reference to keep it, never modify it) */
} runtime_ev_t;

/* One watcher (NULL to stop) sees every run's start, output, input prompt
 * and end, and state changes. Called from the same frames as observers
 * (see the top of this file), with the same rules: it may read and send,
 * and must not call runtime_execute/cancel/restart/reset/destroy. */
typedef void (runtime_watch_fn)(void *ud, const runtime_ev_t *ev);
void runtime_watch(runtime_t *self, runtime_watch_fn *fn, void *ud);
/* A number that changes each time the variables snapshot does. */
unsigned long runtime_snapshot_seq(const runtime_t *self);
/* The execution's id, unique for the runtime's life. */
unsigned long runtime_exec_id(const runtime_exec_t *ex);

/* The shell watchdog (runtime_watchdog.c): -1 while the kernel answers;
 * else how long ago the request it has not acknowledged was sent (its
 * heartbeat may still answer: runtime_status's heartbeat_ok). */
int64_t runtime_silent_ms(const runtime_t *self);
/* What a caller is told while runtime_silent_ms >= 0: "the kernel answers
 * its heartbeat but not its shell since N s; ..." with what to do. Owned
 * by the caller; NULL while the kernel answers. */
char *runtime_silent_why(const runtime_t *self);

/* ---- executions ---- */
void runtime_exec_observe(runtime_exec_t *ex, const runtime_observer_t *obs, void *ud);
/* The caller stops following ex. If it is not done it stays available to
 * runtime_detached (detach = true) or is simply forgotten when done. A
 * forgotten execution is freed from the loop (see the top of this file),
 * so ex stays readable until the caller returns to the loop. */
void runtime_exec_release(runtime_exec_t *ex, bool detach);
/* Claims a detached execution for a new follower. Returns -1 when another
 * caller follows it already. */
int runtime_exec_claim(runtime_exec_t *ex);
/* Who started ex (the MCP session, as a number compared, never used as a
 * pointer; 0: anyone). Only the owner answers its input() prompts. */
void runtime_exec_set_owner(runtime_exec_t *ex, uintptr_t owner);
uintptr_t runtime_exec_owner(const runtime_exec_t *ex);
runtime_exec_state_t runtime_exec_state(const runtime_exec_t *ex);
runtime_outcome_t runtime_exec_outcome(const runtime_exec_t *ex);
output_t *runtime_exec_output(runtime_exec_t *ex);
/* The same output as structured items, in order (outitems.h); reset it
 * with the text (output_reset) when a result is handed out early. */
outitems_t *runtime_exec_items(runtime_exec_t *ex);
/* The code it runs (borrowed, valid as long as ex). */
const char *runtime_exec_code(const runtime_exec_t *ex);
/* Kernel execution count (0 until known). */
long runtime_exec_number(const runtime_exec_t *ex);
/* Time spent executing (time waiting for input excluded). */
int64_t runtime_exec_elapsed_ms(const runtime_exec_t *ex);
void runtime_exec_error(const runtime_exec_t *ex, runtime_error_t *out);
long runtime_exec_vars(const runtime_exec_t *ex);
/* Rich outputs (images, HTML) this run saved as assets. */
long runtime_exec_assets(const runtime_exec_t *ex);
/* Why it failed / was cancelled (RUNTIME_FAILED, RUNTIME_CANCELLED). */
const char *runtime_exec_why(const runtime_exec_t *ex);
const char *runtime_exec_prompt(const runtime_exec_t *ex, bool *password);
/* Which input() prompt of ex is (or was last) pending: 1 for its first
 * input_request, 2 for the next, ...; 0 before any. With runtime_exec_id it
 * names one prompt for the runtime's life (unlike runtime_exec_number, which
 * a restart, a reset or some kernels repeat). */
unsigned long runtime_exec_input_seq(const runtime_exec_t *ex);
/* Answers the pending input() with value. Returns 0, or -1 if none pending. */
int runtime_exec_answer(runtime_exec_t *ex, const char *value);
/* Whether the kernel acknowledged ex (its busy status or execute_input came). */
bool runtime_exec_acknowledged(const runtime_exec_t *ex);
/* Milliseconds since ex was sent to the kernel (0 if not yet), and since it
 * was interrupted (-1 if never). */
int64_t runtime_exec_age_ms(const runtime_exec_t *ex);
int64_t runtime_exec_interrupted_ms(const runtime_exec_t *ex);
/* Executions ahead of ex in the queue (0 when running). */
size_t runtime_exec_position(const runtime_exec_t *ex);

#endif
