/* heaptrim: malloc_trim after a burst, debounced (heaptrim.h). */
#include "heaptrim.h"

#include <stdint.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* Per thread: each loop runs on one thread, and the library may run
 * servers on several. */
static _Thread_local struct {
    loop_t *loop;     /* the loop the timer is on, or NULL */
    uint64_t timer;   /* 0: none armed */
    int64_t due_ms;   /* trim at or after this time */
} heaptrim_state;

static void s_fire(loop_t *loop, void *ud)
{
    (void)ud;
    if (loop != heaptrim_state.loop)
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
    if (heaptrim_state.loop != loop) {
        heaptrim_forget(heaptrim_state.loop);
        heaptrim_state.loop = loop;
    }
    heaptrim_state.due_ms = loop_now_ms() + HEAPTRIM_QUIET_MS;
    if (!heaptrim_state.timer)
        heaptrim_state.timer = loop_timer(loop, HEAPTRIM_QUIET_MS, s_fire, NULL);
}

void heaptrim_forget(loop_t *loop)
{
    if (!loop || heaptrim_state.loop != loop)
        return;
    /* Not cancelled here: loop_destroy frees its timers itself, and another
     * thread's loop is never touched. */
    heaptrim_state.loop = NULL;
    heaptrim_state.timer = 0;
}
