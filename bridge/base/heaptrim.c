/* heaptrim: malloc_trim after a burst, debounced (heaptrim.h). One way, no
 * circle: heaptrim uses the loop's timers; the loop knows nothing of it. */
#include "heaptrim.h"

#include <stdint.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Per thread: each loop runs on one thread, and the library may run
 * servers on several. */
static _Thread_local struct {
    loop_t *loop;     /* the loop the timer is on, or NULL; maybe freed since: */
    uint64_t loop_id; /* its loop_id, which tells a new loop at the same address */
    uint64_t timer;   /* 0: none armed */
    int64_t due_ms;   /* trim at or after this time */
} heaptrim_state;

static void s_fire(loop_t *loop, void *ud)
{
    (void)ud;
    if (loop != heaptrim_state.loop || loop_id(loop) != heaptrim_state.loop_id)
        return;
    heaptrim_state.timer = 0;
    int64_t now = loop_now_ms();
    if (now < heaptrim_state.due_ms) { /* noted again since it was armed */
        heaptrim_state.timer = loop_timer(loop, heaptrim_state.due_ms - now, s_fire, NULL);
        return;
    }
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

void heaptrim_soon(loop_t *loop)
{
    if (heaptrim_state.loop != loop || heaptrim_state.loop_id != loop_id(loop)) {
        /* Another loop, or a new one where a destroyed one was: the old
         * timer, if any, is not ours to cancel (that loop freed it, or it
         * runs on it and finds itself forgotten in s_fire). */
        heaptrim_state.loop = loop;
        heaptrim_state.loop_id = loop_id(loop);
        heaptrim_state.timer = 0;
    }
    heaptrim_state.due_ms = loop_now_ms() + HEAPTRIM_QUIET_MS;
    if (!heaptrim_state.timer)
        heaptrim_state.timer = loop_timer(loop, HEAPTRIM_QUIET_MS, s_fire, NULL);
}
