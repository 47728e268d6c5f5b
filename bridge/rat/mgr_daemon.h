/* mgr_daemon: a runtime's server, `rat-py --http` (the family member of its
 * language) on its own port with its own kernel, started in the
 * background and stopped.
 *
 * Started detached: a new session (setsid), stdin /dev/null, stdout and
 * stderr appended to <state dir>/logs/NAME.log (rotated past 1 MiB to
 * NAME.log.1), every other descriptor closed, so the caller (vscode-rat's
 * execFile waits for its pipes to close) returns at once. The port is the
 * first of 8717-8816 that no state entry holds and that binds (the Go
 * CLI's range); the entry is written under the state lock before the lock
 * is released, so two `rat start NAME` at once make one server: the second
 * finds the first's entry and waits for it. Ready means the server answers
 * MCP and its kernel is up (ctl status idle, busy or input); a kernel that
 * cannot start is an error naming why (its last failure, or the log's end),
 * and its server is stopped. */
#ifndef RAT_MGR_DAEMON_H
#define RAT_MGR_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

#include "mgr_names.h"
#include "mgr_state.h"

#define MGR_PORT_FIRST 8717
#define MGR_PORT_COUNT 100
#define MGR_READY_MS 25000       /* a kernel's boot, within vscode-rat's 30 s for `rat start` */
#define MGR_STOP_MS 5000         /* SIGTERM, then SIGKILL */

typedef enum { MGR_STARTED, MGR_ALREADY, MGR_REPLACED } mgr_start_t;

/* Makes r's server run. st must be open (locked); the lock is released
 * while waiting for readiness, so st is closed on return (*st_p NULL).
 * On success *port and *pid name the server, *how says what happened and
 * *still_starting whether its kernel was not ready yet at MGR_READY_MS.
 * -1 with err otherwise. */
int mgr_daemon_start(mgr_state_t **st_p, const mgr_resolved_t *r, long *port, long *pid, mgr_start_t *how,
                     bool *still_starting, char *err, size_t errlen);
/* Stops k's server (SIGTERM, then SIGKILL after MGR_STOP_MS, with its
 * process group) and marks it stopped in st (not saved). Only a process
 * proven to be the server rat started is signalled (mgr_state_proc: its
 * recorded start time and executable, checked through a pidfd so a pid
 * reused meanwhile is never hit); a pid that is another process now is
 * marked stopped without a signal. -1 with why, nothing signalled and the
 * entry unchanged, when the process cannot be proven (an entry without an
 * identity, from the Go CLI or an older rat-py). */
int mgr_daemon_stop(mgr_kernel_t *k, char *why, size_t whylen);
/* The log file of a runtime. Caller owns it. */
char *mgr_daemon_log_path(const char *name);

#endif
