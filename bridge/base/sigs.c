/* sigs: process signals as loop events (signalfd). */
#define LOG_MODULE "sigs"
#include "sigs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
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
    /* Until sigs_attach: the guard thread, which ends the process on a
     * termination signal (sigs.h). */
    bool guarding;
    pthread_t guard;
    int guard_fd;          /* a signalfd of SIGTERM, SIGINT and SIGHUP */
    int guard_stop[2];     /* a pipe: readable when the guard is to end */
};

static bool s_guard_wanted; /* sigs_end_process_until_attached: set once, before any thread */

void sigs_end_process_until_attached(void)
{
    s_guard_wanted = true;
}

/* The guard: waits for a termination signal or the word to stop. A signal
 * taken ends the process the way the signal would have had it not been
 * blocked (the shell sees "terminated by SIGTERM"); nothing needs cleaning
 * up yet, since no kernel is started before the loop is attached. When both
 * come at once the stop wins and the signal stays pending for the loop. */
static void *s_guard(void *ud)
{
    sigs_t *self = ud;
    struct pollfd p[2] = {{self->guard_stop[0], POLLIN, 0}, {self->guard_fd, POLLIN, 0}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[0].revents)
            return NULL;
        struct signalfd_siginfo si;
        if (!(p[1].revents & POLLIN) || read(self->guard_fd, &si, sizeof si) != (ssize_t)sizeof si)
            continue;
        int signo = (int)si.ssi_signo;
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, signo);
        signal(signo, SIG_DFL);
        pthread_sigmask(SIG_UNBLOCK, &one, NULL);
        raise(signo); /* to this thread, which no longer blocks it: the default action ends the process */
        _exit(128 + signo);
    }
}

static void s_guard_stop(sigs_t *self)
{
    if (!self->guarding)
        return;
    self->guarding = false;
    char c = 0;
    while (write(self->guard_stop[1], &c, 1) < 0 && errno == EINTR)
        ;
    pthread_join(self->guard, NULL);
    close(self->guard_stop[0]);
    close(self->guard_stop[1]);
    close(self->guard_fd);
}

/* Starts the guard; on failure the signals simply wait for the loop. */
static void s_guard_start(sigs_t *self)
{
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigaddset(&term, SIGINT);
    sigaddset(&term, SIGHUP);
    self->guard_fd = signalfd(-1, &term, SFD_NONBLOCK | SFD_CLOEXEC);
    if (self->guard_fd < 0)
        return;
    if (pipe2(self->guard_stop, O_CLOEXEC) < 0) {
        close(self->guard_fd);
        return;
    }
    if (pthread_create(&self->guard, NULL, s_guard, self) != 0) {
        close(self->guard_fd);
        close(self->guard_stop[0]);
        close(self->guard_stop[1]);
        return;
    }
    self->guarding = true;
}

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
    if (s_guard_wanted)
        s_guard_start(self); /* after the mask: the thread inherits it */
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
    s_guard_stop(self);
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
    s_guard_stop(self);
    if (self->loop)
        loop_unwatch(self->loop, self->watch);
    close(self->fd);
    sigprocmask(SIG_SETMASK, &self->old, NULL);
    free(self);
    *self_p = NULL;
}
