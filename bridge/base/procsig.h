/* procsig: signalling one process by a pidfd, so that a pid reused between
 * the check that proved it and the signal is never hit (doc/security.md,
 * "What `rat` may signal"). Shared by the rat manager (its runtimes) and
 * `rat-py uninstall` (a client's `up` process). */
#ifndef RAT_PROCSIG_H
#define RAT_PROCSIG_H

#include <stdbool.h>
#include <sys/types.h>

/* A pidfd for pid (Linux 5.3+), or -1 with errno set: ESRCH when there is no
 * such process, ENOSYS when the kernel (or valgrind 3.19) has no pidfds;
 * then signals go by pid, with the small race the pidfd closes. The caller
 * closes it. */
int procsig_open(pid_t pid);

/* Sends sig to the process pidfd holds, or by pid when pidfd is -1 or the
 * kernel has no pidfd_send_signal. False when it was not sent: through a
 * pidfd, ESRCH means the process is gone (and the pid may be another's
 * now), so no signal by pid follows. */
bool procsig_send(int pidfd, pid_t pid, int sig);

#endif
