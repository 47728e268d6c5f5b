/* procsig: see procsig.h. */
#include "procsig.h"

#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int procsig_open(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

bool procsig_send(int pidfd, pid_t pid, int sig)
{
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0) {
        if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0)
            return true;
        if (errno != ENOSYS)
            return false; /* ESRCH: it is gone, and the pid may be another's now */
    }
#endif
    return kill(pid, sig) == 0;
}
