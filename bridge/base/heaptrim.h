/* heaptrim: gives freed heap back to the system once a burst is over.
 *
 * A fan-out to many watchers, a flood of output or a large look makes the
 * heap grow; freeing it afterwards leaves the pages in the allocator, and
 * an idle rat-py would keep the RSS of its busiest moment. Whoever ends a
 * burst calls heaptrim_soon; once nothing has called it for
 * HEAPTRIM_QUIET_MS, the loop runs malloc_trim(0) (glibc; nothing
 * elsewhere), which releases the top of the heap and the free pages inside
 * it. Debounced, so a busy stretch costs one trim at its end, never one per
 * event. */
#ifndef RAT_HEAPTRIM_H
#define RAT_HEAPTRIM_H

#include "loop.h"

#define HEAPTRIM_QUIET_MS 500

/* A burst ended on loop's thread: trim once it has been quiet for a while.
 * Cheap (a clock read; a timer armed at most once per quiet spell). A loop
 * destroyed with a trim pending needs nothing: its timer goes with it, and
 * the next heaptrim_soon sees a new loop by its loop_id. */
void heaptrim_soon(loop_t *loop);

#endif
