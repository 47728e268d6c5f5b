/* mgr_proc: proving that a pid is the server `rat` started, the only
 * process `rat` may signal (doc/security.md "What `rat` may signal").
 *
 * A pid read from state.yaml is untrusted twice: anything running as the
 * user can edit the file, and the kernel reuses pids. `rat start` records
 * the identity of the process it spawned (mgr_proc_id, read while it is
 * rat's unreaped child); every later signal is preceded by mgr_proc_check
 * against that record (mgr_daemon holds a pidfd across the check, so the
 * process checked is the process signalled). */
#ifndef RAT_MGR_PROC_H
#define RAT_MGR_PROC_H

#include <stddef.h>

/* Who a process is, beyond its pid (which the kernel reuses): its start
 * time (/proc/PID/stat field 22, clock ticks after boot: never the same for
 * two processes that had one pid) and its executable (/proc/PID/exe's
 * st_dev and st_ino, which stay put when the file is replaced on disk).
 * start 0: not recorded. */
typedef struct {
    unsigned long long start, dev, ino;
} mgr_proc_id_t;

/* pid's identity, read from /proc. -1 with errno when it cannot be read
 * (ENOENT: gone; EACCES: another user's process). */
int mgr_proc_id(long pid, mgr_proc_id_t *out);

/* What the process with pid is, for an entry that names pid, port (0:
 * none) and the identity recorded (start 0: none).
 * MGR_PROC_GONE: pid is not positive, is gone, or is now another process:
 *   the identity recorded differs, or cannot be read (another user's), or,
 *   with none recorded, its argv lacks `--port PORT` (or the port is 0:
 *   rat-py always records one).
 * MGR_PROC_PROVEN: the identity recorded at start is the process's now (and
 *   with a port, its argv has `--port PORT`): the server rat started, the
 *   only process `rat` may signal.
 * MGR_PROC_UNPROVEN: no identity recorded (an entry of the Go CLI or an
 *   older rat-py) but its argv has `--port PORT`: probably the server, so
 *   it is listed and used, but never signalled.
 * why (may be NULL) says why, for GONE when a process has that pid, and for
 * UNPROVEN. */
typedef enum { MGR_PROC_GONE, MGR_PROC_PROVEN, MGR_PROC_UNPROVEN } mgr_proc_t;
mgr_proc_t mgr_proc_check(long pid, long port, const mgr_proc_id_t *recorded, char *why, size_t whylen);

#endif
