/* kernel_proc: one kernel process that rat-py owns.
 *
 * The kernel runs in its own session and process group (so signals reach its
 * children and a terminal's Ctrl-C never reaches it), with JPY_PARENT_PID set,
 * stdin on /dev/null and stdout/stderr appended to a log file: never rat-py's
 * stdout, which is the MCP channel. PR_SET_PDEATHSIG makes the kernel die with
 * rat-py even when rat-py is SIGKILLed. */
#ifndef RAT_KERNEL_PROC_H
#define RAT_KERNEL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct kernel_proc kernel_proc_t;

typedef struct {
    char *const *argv;      /* argv[0] is resolved through $PATH */
    char *const *env_extra; /* NULL-terminated "KEY=VALUE" added to our environment */
    char *const *env_drop;  /* NULL-terminated names removed from it (rat-py's secrets always are) */
    const char *cwd;        /* working directory, or NULL */
    const char *log_path;   /* stdout/stderr go here (appended) */
} kernel_proc_opts_t;

/* Our environment without rat-py's secrets (RAT_PY_TOKEN), as every
 * process rat-py starts gets it: a new NULL-terminated copy (strv_free). */
char **kernel_proc_environ(void);
/* Starts the process. Returns NULL with err filled when it cannot be started
 * (program not found, exec failure: the child reports errno through a
 * close-on-exec pipe, so "No such file" is reported here, not as a death). */
kernel_proc_t *kernel_proc_spawn(const kernel_proc_opts_t *opts, char *err, size_t errlen);
pid_t kernel_proc_pid(const kernel_proc_t *self);
/* Sends sig to the whole process group. */
int kernel_proc_signal(kernel_proc_t *self, int sig);
/* Sends sig to the process's main thread only (tgkill): only that thread
 * takes it, whatever the others are doing. */
int kernel_proc_signal_main(kernel_proc_t *self, int sig);
/* Whether the process is stopped (SIGSTOP, SIGTSTP; state T in
 * /proc/PID/stat). A stopped process keeps signals pending, SIGKILL aside. */
bool kernel_proc_is_stopped(const kernel_proc_t *self);
/* Non-blocking reap. Returns true once the process has exited; *status gets
 * the wait status. */
bool kernel_proc_reap(kernel_proc_t *self, int *status);
bool kernel_proc_exited(const kernel_proc_t *self);
/* Waits up to max_ms (blocking, in 2 ms steps) for the process to exit by
 * itself; returns how long it waited. For a process that was asked to quit
 * (shutdown_request) and cleans up only when it does so by itself. */
int kernel_proc_wait(kernel_proc_t *self, int max_ms);
/* SIGTERM to the group and wait up to grace_ms (0: not at all) for it to
 * exit, then SIGKILL to the group. Never waits after the SIGKILL: it runs on
 * the loop that serves every session. */
void kernel_proc_stop(kernel_proc_t *self, int grace_ms);
/* Stops the process if needed (no grace) and frees. A process that has not
 * exited yet is reaped later by kernel_proc_reap_orphans. */
void kernel_proc_destroy(kernel_proc_t **self_p);
/* Frees without stopping a process that was asked to quit (a
 * shutdown_request: R removes its session directory, /tmp/RtmpXXXXXX, only
 * when it quits by itself): kernel_proc_reap_orphans reaps it when it goes,
 * or SIGKILLs its group once grace_ms are up. Never waits. */
void kernel_proc_destroy_deferred(kernel_proc_t **self_p, int grace_ms);
/* Reaps, without blocking, the processes of destroyed kernel_procs (call on
 * SIGCHLD, and when kernel_proc_orphans_due_ms says), SIGKILLs the group of
 * a deferred one that went (what it started goes with it), and the group of
 * one whose grace is up. */
void kernel_proc_reap_orphans(void);
/* How many of them are still to be reaped. */
size_t kernel_proc_orphans(void);
/* Milliseconds until the first deferred process's grace is up (call
 * kernel_proc_reap_orphans then), or -1 when none is waiting. */
int kernel_proc_orphans_due_ms(void);
/* At exit: SIGKILLs them again and waits up to max_ms until all are reaped,
 * so rat-py never leaves a kernel behind. */
void kernel_proc_reap_all(int max_ms);
/* "signal 9 (Killed)" / "exit code 1" for a wait status, into out. */
void kernel_proc_describe(int status, char *out, size_t outlen);
/* Last up to max bytes of the log file (for error messages). Caller owns it. */
char *kernel_proc_log_tail(const kernel_proc_t *self, size_t max);
/* Truncates the log when it grew past max bytes (the kernel appends, so it
 * keeps writing at the new end). */
void kernel_proc_trim_log(kernel_proc_t *self, long max);

#endif
