/* sigs: process signals as loop events (signalfd). */
#define LOG_MODULE "sigs"
#include "sigs.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "log.h"
#include "mem.h"

struct sigs {
    int fd;
    sigset_t old;
    loop_t *loop;   /* borrowed */
    int watch;
    sigs_fn *fn;
    void *ud;
};

sigs_t *sigs_new(void)
{
    sigs_t *self = xcalloc(1, sizeof *self);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    signal(SIGPIPE, SIG_IGN);
    if (sigprocmask(SIG_BLOCK, &set, &self->old) < 0) {
        free(self);
        return NULL;
    }
    self->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (self->fd < 0) {
        sigprocmask(SIG_SETMASK, &self->old, NULL);
        free(self);
        return NULL;
    }
    return self;
}

static void s_readable(loop_t *loop, void *ud, int revents)
{
    sigs_t *self = ud;
    struct signalfd_siginfo si;
    for (;;) {
        ssize_t n = read(self->fd, &si, sizeof si);
        if (n != (ssize_t)sizeof si)
            return;
        if (self->fn)
            self->fn(self->ud, (int)si.ssi_signo);
    }
}

void sigs_attach(sigs_t *self, loop_t *loop, sigs_fn *fn, void *ud)
{
    self->loop = loop;
    self->fn = fn;
    self->ud = ud;
    self->watch = loop_watch_fd(loop, self->fd, ZMQ_POLLIN, s_readable, self);
}

void sigs_destroy(sigs_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sigs_t *self = *self_p;
    if (self->loop)
        loop_unwatch(self->loop, self->watch);
    close(self->fd);
    sigprocmask(SIG_SETMASK, &self->old, NULL);
    free(self);
    *self_p = NULL;
}
