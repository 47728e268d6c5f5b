/* outq: a stream's bytes not yet sent, and a group that bounds what all the
 * queues in it hold together.
 *
 * An item is a small framing head and tail (copied into the item) around a
 * body that is referenced, not copied (rcbytes): the same notification
 * queued for 200 streams is one body and 200 small items. A reader takes
 * bytes in order with outq_read.
 *
 * The group counts every queue's unsent bytes (a shared body counts once
 * per queue holding it: what each stream still has to send) against a
 * budget. When a push takes the total past it, the queue with the most
 * unsent bytes (the slowest reader) loses its oldest droppable item that
 * has not started to go out, then again, until the total is within the
 * budget or nothing droppable is left. Items that are not droppable (a
 * response someone waits for) are never dropped: the budget can be
 * exceeded by them. A dropped item leaves no trace in the byte stream;
 * whoever framed it marks losses in the items themselves (rat/event's seq).
 *
 * Single-threaded: every queue and its group live on one loop. */
#ifndef RAT_OUTQ_H
#define RAT_OUTQ_H

#include <stdbool.h>
#include <stddef.h>

#include "rcbytes.h"

#define OUTQ_FRAME_MAX 64 /* head + tail bytes of one item */

typedef struct outq_group outq_group_t;
typedef struct outq outq_t;

/* budget: bytes all the group's queues may hold unsent together; 0: no
 * total bound. Caller owns the group. */
outq_group_t *outq_group_new(size_t budget);
/* Frees the group (NULL is fine) and sets *g_p to NULL. Every queue in it
 * must have been destroyed first. */
void outq_group_destroy(outq_group_t **g_p);
size_t outq_group_unsent(const outq_group_t *g);
/* Items the budget dropped so far, over all queues. */
unsigned long outq_group_dropped(const outq_group_t *g);

/* A queue in group g (NULL: in no group, bounded by nobody). Caller owns it. */
outq_t *outq_new(outq_group_t *g);
/* Frees the queue and releases its references (NULL is fine); *q_p = NULL. */
void outq_destroy(outq_t **q_p);
/* Appends head[0..hlen), then body's bytes (a reference is taken: the
 * caller keeps its own; body may be NULL), then tail[0..tlen). hlen + tlen
 * must be at most OUTQ_FRAME_MAX (aborts otherwise: a caller's bug).
 * droppable: the group may drop the item whole while no byte of it has been
 * read. Then enforces the group's budget (which may drop items of any
 * queue in the group, this one and this item included). */
void outq_push(outq_t *q, const char *head, size_t hlen, rcbytes_t *body, const char *tail, size_t tlen,
               bool droppable);
/* Copies up to max of the oldest unsent bytes to dst and forgets them
 * (items fully read are freed). Returns how many were copied. */
size_t outq_read(outq_t *q, char *dst, size_t max);
size_t outq_unsent(const outq_t *q);
/* Items the group's budget dropped from this queue so far. */
unsigned long outq_dropped(const outq_t *q);

#endif
