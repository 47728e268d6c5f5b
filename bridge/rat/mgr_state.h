/* mgr_state: the `rat` manager's state file, shared with the Go `rat` CLI
 * and read by vscode-rat.
 *
 * Where: $XDG_CONFIG_HOME/rat/state.yaml (default ~/.config/rat), with
 * state.yaml.lock beside it and logs/NAME.log for each runtime's server.
 * What: `kernels:` (servers started, running or stopped: name, lang, port,
 * pid, cwd, venv, status, started, stopped, and rat-py's own proc_start,
 * proc_dev, proc_ino: the identity of the process it started, see
 * mgr_proc.h) and `runtimes:` (saved
 * configurations from `rat add`: name, lang, cwd, venv, runtime_path,
 * options, env). The layout written is the one the Go CLI writes (go-yaml
 * v3: 4-space indent, `- name:` first in each item, continuation lines
 * indented 6), which is also what vscode-rat's hand-written parser needs.
 *
 * The file is untrusted input: read with libyaml, at most MGR_STATE_MAX
 * bytes and MGR_STATE_MAX_ENTRIES items per list; an item with an invalid
 * name or field is dropped with a warning on stderr; a file that is not
 * YAML is moved aside (state.yaml.bad-<time>, nothing lost) and the state
 * starts empty. Every read-modify-write holds flock(LOCK_EX) on
 * state.yaml.lock (the lock the Go CLI takes too) and writes atomically
 * (a temporary file renamed over state.yaml, mode 0600). */
#ifndef RAT_MGR_STATE_H
#define RAT_MGR_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "mgr_proc.h"

#define MGR_STATE_MAX (1u << 20)      /* bytes of state.yaml read */
#define MGR_STATE_MAX_ENTRIES 1000    /* items per list */
#define MGR_STATE_MAX_STR 4096        /* bytes of one value */
#define MGR_STATE_LOCK_MS 10000       /* wait for the lock at most this long */

typedef struct {
    char *key, *value;
} mgr_kv_t;

typedef struct {
    char *name, *lang, *cwd, *venv;
    long port, pid;
    mgr_proc_id_t proc; /* recorded by rat-py's `rat start`; the Go CLI writes none */
    char *status;       /* "running" or "stopped" */
    char *started;      /* RFC 3339 time, as written */
    char *stopped;      /* or NULL */
} mgr_kernel_t;

typedef struct {
    char *name, *lang, *cwd, *venv, *runtime_path;  /* cwd, venv, runtime_path may be NULL */
    mgr_kv_t *options, *env;
    size_t noptions, nenv;
} mgr_runtime_t;

typedef struct {
    mgr_kernel_t *kernels;
    size_t nkernels;
    mgr_runtime_t *runtimes;
    size_t nruntimes;
    char *path;         /* state.yaml */
    int lock_fd;        /* the held lock, -1 when none */
} mgr_state_t;

/* $XDG_CONFIG_HOME/rat, else $HOME/.config/rat. Caller owns it; NULL when
 * neither variable is set. */
char *mgr_state_dir(void);
/* Locks, reads and normalizes the state (a `running` entry whose process
 * is gone, or is no longer the server it names, becomes `stopped` with pid
 * and port 0; the change is written back). A missing file is an empty
 * state. Returns NULL with err filled when the directory or the lock
 * cannot be had. The lock is held until mgr_state_close. */
mgr_state_t *mgr_state_open(char *err, size_t errlen);
/* Writes the state atomically (the lock must be held). -1 with err. */
int mgr_state_save(mgr_state_t *self, char *err, size_t errlen);
/* Releases the lock and frees everything. */
void mgr_state_close(mgr_state_t **self_p);
/* Releases the lock early (the state stays readable, no more saves). */
void mgr_state_unlock(mgr_state_t *self);

/* Parses text into an empty state (no file, no lock): for mgr_state_open
 * and the tests. Returns -1 with err ("line N: ...") when it is not a YAML
 * mapping; items that are not valid are dropped (a line on stderr each). */
int mgr_state_parse(mgr_state_t *self, const char *text, size_t len, char *err, size_t errlen);
/* The state as YAML, in the Go CLI's layout. Caller owns it; NULL (with
 * err) when a value cannot be written (not UTF-8). */
char *mgr_state_text(const mgr_state_t *self, char *err, size_t errlen);
/* Frees the entries (not path or the lock). */
void mgr_state_clear(mgr_state_t *self);
/* Marks stale entries stopped (see mgr_state_open); returns whether any
 * changed. */
bool mgr_state_normalize(mgr_state_t *self);

mgr_kernel_t *mgr_state_kernel(mgr_state_t *self, const char *name);
mgr_runtime_t *mgr_state_runtime(mgr_state_t *self, const char *name);
/* The entry for name, emptied (a new one at the end when there was none). */
mgr_kernel_t *mgr_state_put_kernel(mgr_state_t *self, const char *name);
mgr_runtime_t *mgr_state_put_runtime(mgr_state_t *self, const char *name);
bool mgr_state_remove_kernel(mgr_state_t *self, const char *name);
bool mgr_state_remove_runtime(mgr_state_t *self, const char *name);
/* Marks name stopped now (pid, port and identity 0). */
void mgr_state_mark_stopped(mgr_kernel_t *k);

/* What k's process is: MGR_PROC_GONE when k is not `running`, else
 * mgr_proc_check of its pid, port and recorded identity. */
mgr_proc_t mgr_state_proc(const mgr_kernel_t *k, char *why, size_t whylen);
/* Whether k is `running` and its process is (or, unproven, seems to be) the
 * server it names: mgr_state_proc is not MGR_PROC_GONE. */
bool mgr_state_alive(const mgr_kernel_t *k);
/* The current time as RFC 3339 with nanoseconds, local offset (Go's
 * time.RFC3339Nano, as go-yaml writes a time). Caller owns it. */
char *mgr_state_now(void);

#endif
