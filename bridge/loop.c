/* loop: the single-threaded reactor (zmq_poll over sockets and fds, timers). */
#define LOG_MODULE "loop"
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "log.h"
#include "mem.h"

typedef struct {
    int id;          /* 0 when the slot is free */
    int fd;          /* watched fd when zsock is NULL */
    void *zsock;     /* borrowed ZMQ socket, or NULL */
    int events;      /* ZMQ_POLLIN | ZMQ_POLLOUT; 0 = paused */
    loop_io_fn *fn;
    void *ud;
} s_watch_t;

typedef struct {
    uint64_t id;
    int64_t due_ms;
    loop_timer_fn *fn;
    void *ud;
} s_timer_t;

struct loop {
    s_watch_t *watches;      /* owned array */
    size_t nwatches, capwatches;
    int next_watch_id;
    s_timer_t *timers;       /* owned array, unsorted (there are few) */
    size_t ntimers, captimers;
    uint64_t next_timer_id;
    zmq_pollitem_t *items;   /* owned scratch for zmq_poll */
    int *item_ids;           /* owned: watch id per poll item */
    size_t capitems;
    bool stop;
};

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
    loop_t *self = xcalloc(1, sizeof *self);
    self->next_watch_id = 1;
    self->next_timer_id = 1;
    return self;
}

void loop_destroy(loop_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    loop_t *self = *self_p;
    free(self->watches);
    free(self->timers);
    free(self->items);
    free(self->item_ids);
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
    w->fd = fd;
    w->zsock = zsock;
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
    if (w)
        w->events = events;
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
    return t->id;
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
 * callbacks run, or -1 when zmq_poll failed (errno set). */
static int s_iterate(loop_t *self, long max_wait)
{
    s_compact(self);
    if (self->capitems < self->nwatches) {
        self->capitems = self->nwatches;
        self->items = xrealloc(self->items, self->capitems * sizeof *self->items);
        self->item_ids = xrealloc(self->item_ids, self->capitems * sizeof *self->item_ids);
    }
    int n = 0;
    for (size_t i = 0; i < self->nwatches; i++) {
        s_watch_t *w = &self->watches[i];
        if (!w->events)
            continue;
        self->items[n].socket = w->zsock;
        self->items[n].fd = w->zsock ? 0 : w->fd;
        self->items[n].events = (short)w->events;
        self->items[n].revents = 0;
        self->item_ids[n] = w->id;
        n++;
    }
    long wait = s_timeout(self);
    if (max_wait >= 0 && (wait < 0 || wait > max_wait))
        wait = max_wait;
    int rc = zmq_poll(self->items, n, wait);
    if (rc < 0)
        return -1;
    int ran = 0;
    for (int i = 0; i < n && rc > 0 && !self->stop; i++) {
        if (!self->items[i].revents)
            continue;
        s_watch_t *w = s_find(self, self->item_ids[i]);
        if (w && (w->events & self->items[i].revents & (ZMQ_POLLIN | ZMQ_POLLOUT))) {
            w->fn(self, w->ud, self->items[i].revents);
            ran++;
        } else if (w && (self->items[i].revents & ZMQ_POLLERR)) {
            w->fn(self, w->ud, self->items[i].revents);
            ran++;
        }
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
            if (errno == ETERM)
                return 0;
            log_error("zmq_poll: %s", zmq_strerror(errno));
            return -1;
        }
    }
    return 0;
}

int loop_run_once(loop_t *self, int timeout_ms)
{
    return s_iterate(self, timeout_ms < 0 ? 0 : timeout_ms);
}
