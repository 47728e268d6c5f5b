/* loop: the single-threaded reactor (poll over fds and ZMQ sockets, timers).
 *
 * ZMQ sockets (czmq's zsock_t, or an actor's pipe) are polled through their
 * descriptor (zsock_fd), not with zmq_poll or zpoller: zmq_poll asks every
 * socket for ZMQ_EVENTS twice per call (two system calls each), which with
 * eight kernel sockets was most of rat-py's system calls per run. That
 * descriptor is edge-triggered and any operation on the socket may consume
 * its signal, so a socket is asked for its events (zsock_events) only when
 * its descriptor fired, after its callback ran, when it was resumed, or
 * when its owner used it elsewhere (loop_watch_kick); in every other case
 * nothing can be pending.
 *
 * zsock_events cannot report an error. libzmq's are EINTR (no signal
 * interrupts this thread: they arrive on a signalfd, sigs.h) and ETERM (the
 * context ends at exit, after the loop), so there is none to handle.
 *
 * No circle with heaptrim: heaptrim uses the loop (its timer) and the loop
 * knows nothing of it (loop_id lets heaptrim see its loop replaced). */
#define LOG_MODULE "loop"
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <czmq.h>

#include "log.h"
#include "mem.h"

typedef struct {
    int id;          /* 0 when the slot is free */
    int fd;          /* the watched fd, or the socket's zsock_fd */
    void *zsock;     /* borrowed ZMQ socket, or NULL */
    int events;      /* ZMQ_POLLIN | ZMQ_POLLOUT; 0 = paused */
    bool check;      /* ZMQ socket: ask ZMQ_EVENTS before sleeping */
    int ready;       /* this iteration's revents, not yet dispatched */
    loop_io_fn *fn;
    void *ud;
} s_watch_t;

typedef struct {
    uint64_t id;
    int64_t due_ms;
    loop_timer_fn *fn;
    void *ud;
    bool must_run;   /* loop_defer: run by loop_destroy if still pending */
} s_timer_t;

struct loop {
    s_watch_t *watches;      /* owned array */
    size_t nwatches, capwatches;
    int next_watch_id;
    s_timer_t *timers;       /* owned array, unsorted (there are few) */
    size_t ntimers, captimers;
    uint64_t next_timer_id;
    struct pollfd *pfds;     /* owned scratch for poll */
    size_t *item_idx;        /* owned: watch index per poll item */
    size_t capitems;
    bool stop;
    uint64_t id;             /* loop_id */
};

uint64_t loop_id(const loop_t *self)
{
    return self->id;
}

int64_t loop_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t loop_now_ms(void)
{
    return loop_now_us() / 1000;
}

loop_t *loop_new(void)
{
    static atomic_uint_fast64_t ids;
    loop_t *self = xcalloc(1, sizeof *self);
    self->id = (uint64_t)atomic_fetch_add(&ids, 1) + 1;
    self->next_watch_id = 1;
    self->next_timer_id = 1;
    return self;
}

void loop_destroy(loop_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    loop_t *self = *self_p;
    /* Deferred work (loop_defer) that the loop stopped before running, e.g. a
     * kernel freed out of its own callback just before shutdown: run it now,
     * while the loop's API still works (it may unwatch and cancel). It may
     * defer more; that runs too. */
    for (;;) {
        size_t i = 0;
        while (i < self->ntimers && !self->timers[i].must_run)
            i++;
        if (i == self->ntimers)
            break;
        s_timer_t t = self->timers[i];
        self->timers[i] = self->timers[--self->ntimers];
        t.fn(self, t.ud);
    }
    free(self->watches);
    free(self->timers);
    free(self->pfds);
    free(self->item_idx);
    free(self);
    *self_p = NULL;
}

static int s_add(loop_t *self, int fd, void *zsock, int events, loop_io_fn *fn, void *ud)
{
    if (self->nwatches == self->capwatches) {
        self->capwatches = self->capwatches ? self->capwatches * 2 : 16;
        self->watches = xrealloc(self->watches, self->capwatches * sizeof *self->watches);
    }
    s_watch_t *w = &self->watches[self->nwatches++];
    w->id = self->next_watch_id++;
    if (self->next_watch_id <= 0)
        self->next_watch_id = 1;
    w->fd = zsock ? zsock_fd(zsock) : fd;
    w->zsock = zsock;
    w->check = zsock != NULL;
    w->ready = 0;
    w->events = events;
    w->fn = fn;
    w->ud = ud;
    return w->id;
}

int loop_watch_fd(loop_t *self, int fd, int events, loop_io_fn *fn, void *ud)
{
    return s_add(self, fd, NULL, events, fn, ud);
}

int loop_watch_zsock(loop_t *self, void *zsock, int events, loop_io_fn *fn, void *ud)
{
    return s_add(self, -1, zsock, events, fn, ud);
}

static s_watch_t *s_find(loop_t *self, int id)
{
    for (size_t i = 0; id > 0 && i < self->nwatches; i++)
        if (self->watches[i].id == id)
            return &self->watches[i];
    return NULL;
}

void loop_watch_set(loop_t *self, int id, int events)
{
    s_watch_t *w = s_find(self, id);
    if (w) {
        w->events = events;
        if (w->zsock)
            w->check = true; /* its signal may have come while paused */
    }
}

void loop_watch_kick(loop_t *self, int id)
{
    s_watch_t *w = s_find(self, id);
    if (w && w->zsock)
        w->check = true;
}

void loop_unwatch(loop_t *self, int id)
{
    s_watch_t *w = s_find(self, id);
    if (w)
        w->id = 0; /* compacted after dispatch, so indexes stay valid meanwhile */
}

uint64_t loop_timer(loop_t *self, int64_t ms, loop_timer_fn *fn, void *ud)
{
    if (self->ntimers == self->captimers) {
        self->captimers = self->captimers ? self->captimers * 2 : 16;
        self->timers = xrealloc(self->timers, self->captimers * sizeof *self->timers);
    }
    s_timer_t *t = &self->timers[self->ntimers++];
    t->id = self->next_timer_id++;
    t->due_ms = loop_now_ms() + (ms > 0 ? ms : 0);
    t->fn = fn;
    t->ud = ud;
    t->must_run = false;
    return t->id;
}

uint64_t loop_defer(loop_t *self, loop_timer_fn *fn, void *ud)
{
    uint64_t id = loop_timer(self, 0, fn, ud);
    self->timers[self->ntimers - 1].must_run = true;
    return id;
}

void loop_timer_cancel(loop_t *self, uint64_t id)
{
    for (size_t i = 0; id && i < self->ntimers; i++) {
        if (self->timers[i].id == id) {
            self->timers[i] = self->timers[--self->ntimers];
            return;
        }
    }
}

void loop_stop(loop_t *self)
{
    self->stop = true;
}

bool loop_stopping(const loop_t *self)
{
    return self->stop;
}

void loop_resume(loop_t *self)
{
    self->stop = false;
}

static void s_compact(loop_t *self)
{
    size_t j = 0;
    for (size_t i = 0; i < self->nwatches; i++)
        if (self->watches[i].id)
            self->watches[j++] = self->watches[i];
    self->nwatches = j;
}

/* Runs every timer that is due and returns how many ran. A timer callback may
 * add timers; those run on a later pass, so a 0 ms timer re-arming itself
 * cannot starve I/O. */
static int s_run_timers(loop_t *self)
{
    int64_t now = loop_now_ms();
    uint64_t limit = self->next_timer_id;
    int ran = 0;
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < self->ntimers; i++)
            if (self->timers[i].due_ms <= now && self->timers[i].id < limit &&
                (best == SIZE_MAX || self->timers[i].due_ms < self->timers[best].due_ms))
                best = i;
        if (best == SIZE_MAX)
            return ran;
        s_timer_t t = self->timers[best];
        self->timers[best] = self->timers[--self->ntimers];
        t.fn(self, t.ud);
        ran++;
        if (self->stop)
            return ran;
    }
}

static long s_timeout(loop_t *self)
{
    if (self->ntimers == 0)
        return -1;
    int64_t due = self->timers[0].due_ms;
    for (size_t i = 1; i < self->ntimers; i++)
        if (self->timers[i].due_ms < due)
            due = self->timers[i].due_ms;
    int64_t wait = due - loop_now_ms();
    return wait < 0 ? 0 : (long)wait;
}

/* One pass: poll for at most max_wait ms (-1: until the next timer is due),
 * serve the ready watches, run the due timers. Returns the number of
 * callbacks run, or -1 when polling failed (errno set). Watch indexes stay
 * valid for the whole pass: unwatch only clears ids, s_compact runs first,
 * and watches added by callbacks go to the end (served from the next pass). */
static int s_iterate(loop_t *self, long max_wait)
{
    s_compact(self);
    if (self->capitems < self->nwatches) {
        self->capitems = self->nwatches;
        self->pfds = xrealloc(self->pfds, self->capitems * sizeof *self->pfds);
        self->item_idx = xrealloc(self->item_idx, self->capitems * sizeof *self->item_idx);
    }
    size_t count = self->nwatches;
    int n = 0;
    bool ready_now = false;
    for (size_t i = 0; i < count; i++) {
        s_watch_t *w = &self->watches[i];
        w->ready = 0;
        if (!w->events)
            continue;
        if (w->zsock) {
            if (w->check) {
                w->check = false;
                w->ready = zsock_events(w->zsock) & w->events;
                ready_now = ready_now || w->ready;
            }
            self->pfds[n] = (struct pollfd){.fd = w->fd, .events = POLLIN};
        } else {
            short want = (short)(((w->events & ZMQ_POLLIN) ? POLLIN : 0) | ((w->events & ZMQ_POLLOUT) ? POLLOUT : 0));
            self->pfds[n] = (struct pollfd){.fd = w->fd, .events = want};
        }
        self->item_idx[n++] = i;
    }
    long wait = s_timeout(self);
    if (max_wait >= 0 && (wait < 0 || wait > max_wait))
        wait = max_wait;
    if (ready_now)
        wait = 0;
    int rc = poll(self->pfds, (nfds_t)n, wait > INT32_MAX ? -1 : (int)wait);
    if (rc < 0) {
        /* Keep what the ZMQ sockets said for the next pass. */
        for (size_t i = 0; i < count; i++)
            if (self->watches[i].zsock && self->watches[i].ready)
                self->watches[i].check = true;
        return -1;
    }
    for (int k = 0; k < n && rc > 0; k++) {
        short re = self->pfds[k].revents;
        if (!re)
            continue;
        s_watch_t *w = &self->watches[self->item_idx[k]];
        if (w->zsock) {
            w->ready |= zsock_events(w->zsock) & w->events;
        } else {
            /* The mapping zmq_poll uses: anything but in/out is an error. */
            w->ready = ((re & POLLIN) ? ZMQ_POLLIN : 0) | ((re & POLLOUT) ? ZMQ_POLLOUT : 0) |
                       ((re & ~(POLLIN | POLLOUT)) ? ZMQ_POLLERR : 0);
        }
    }
    int ran = 0;
    for (size_t i = 0; i < count; i++) {
        s_watch_t *w = &self->watches[i];
        int r = w->ready;
        if (!w->id || !r)
            continue;
        w->ready = 0;
        if (self->stop || !((w->events & r & (ZMQ_POLLIN | ZMQ_POLLOUT)) || (r & ZMQ_POLLERR))) {
            /* Stopping, or paused by an earlier callback: ask again later. */
            if (w->zsock)
                w->check = true;
            continue;
        }
        int id = w->id;
        bool z = w->zsock != NULL;
        w->fn(self, w->ud, r);
        ran++;
        /* The callback may have left messages (a drain budget) or added
         * watches (self->watches moved). */
        w = &self->watches[i];
        if (z && w->id == id)
            w->check = true;
    }
    if (!self->stop)
        ran += s_run_timers(self);
    return ran;
}

int loop_run(loop_t *self)
{
    while (!self->stop) {
        if (s_iterate(self, -1) < 0) {
            if (errno == EINTR)
                continue;
            log_error("poll: %s", strerror(errno));
            return -1;
        }
    }
    return 0;
}

int loop_run_once(loop_t *self, int timeout_ms)
{
    return s_iterate(self, timeout_ms < 0 ? 0 : timeout_ms);
}
