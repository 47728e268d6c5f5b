/* loop: the single-threaded reactor that drives rat-py.
 *
 * Every ZMQ socket, the stdio pipes, the HTTP daemon's descriptor, the signal
 * descriptor and all timers are served from one thread by poll(2). ZMQ
 * sockets must stay on the thread that polls them, and one thread means no
 * locks and no cross-thread queues anywhere in rat-py.
 *
 * Callbacks may add and remove watches and timers freely, including their own. */
#ifndef RAT_LOOP_H
#define RAT_LOOP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct loop loop_t;

/* revents holds ZMQ_POLLIN / ZMQ_POLLOUT / ZMQ_POLLERR bits. */
typedef void (loop_io_fn)(loop_t *loop, void *ud, int revents);
typedef void (loop_timer_fn)(loop_t *loop, void *ud);

loop_t *loop_new(void);
void loop_destroy(loop_t **self_p);
/* A number no other loop of this process has had, so that a client that
 * keeps a loop pointer across calls (heaptrim) can tell a new loop that
 * reuses a freed one's address from the old one, without a hook here. */
uint64_t loop_id(const loop_t *self);

/* Watches a file descriptor, or a ZMQ socket: a czmq zsock_t or zactor_t
 * (its pipe), anything zsock_fd takes except the draft thread-safe socket
 * types, which have no descriptor. events is a mask of ZMQ_POLLIN and
 * ZMQ_POLLOUT. Returns a watch id (> 0). */
int loop_watch_fd(loop_t *self, int fd, int events, loop_io_fn *fn, void *ud);
int loop_watch_zsock(loop_t *self, void *zsock, int events, loop_io_fn *fn, void *ud);
/* Changes the events of a watch; 0 pauses it. */
void loop_watch_set(loop_t *self, int id, int events);
/* Call after sending on (or otherwise using) a watched ZMQ socket outside its
 * own callback: any operation on a ZMQ socket may consume the edge-triggered
 * signal that says a message arrived, so the loop must ask the socket again
 * before it sleeps. Safe with any id. */
void loop_watch_kick(loop_t *self, int id);
/* Removes a watch. Safe to call with an id already removed or 0. */
void loop_unwatch(loop_t *self, int id);

/* Calls fn once after ms milliseconds (0: at the end of this iteration).
 * Returns a timer id (> 0). */
uint64_t loop_timer(loop_t *self, int64_t ms, loop_timer_fn *fn, void *ud);
/* Like a 0 ms timer, but it is sure to run: from the loop's next pass, or
 * from loop_destroy if the loop stopped first. For work deferred out of a
 * callback that must happen before the process goes on (freeing an object
 * that holds sockets a ZMQ context waits for). Cancel with loop_timer_cancel. */
uint64_t loop_defer(loop_t *self, loop_timer_fn *fn, void *ud);
/* Cancels a timer. Safe with a fired, cancelled or 0 id. */
void loop_timer_cancel(loop_t *self, uint64_t id);

/* Runs until loop_stop. Returns 0, or -1 when polling fails unexpectedly. */
int loop_run(loop_t *self);
/* One iteration of loop_run, for tests and fuzz harnesses that drive the
 * loop themselves: waits at most timeout_ms (0: not at all; sooner when a
 * timer is due) for I/O, serves what is ready, then runs the timers that are
 * due. Returns how many callbacks ran (0 with timeout 0: the loop is idle;
 * with a longer timeout, 0 may also mean a ZMQ socket woke the loop for
 * nothing it was asked about), or -1 when polling failed (errno set;
 * EINTR when a signal cut the wait short: nothing was served, try again). */
int loop_run_once(loop_t *self, int timeout_ms);
void loop_stop(loop_t *self);
bool loop_stopping(const loop_t *self);
/* Undoes loop_stop: a loop that loop_run has left serves its watches and
 * timers again in loop_run_once (a stopped loop serves nothing), e.g. for a
 * last exchange with the kernel at shutdown. */
void loop_resume(loop_t *self);

/* Monotonic clock in milliseconds and microseconds. */
int64_t loop_now_ms(void);
int64_t loop_now_us(void);

#endif
