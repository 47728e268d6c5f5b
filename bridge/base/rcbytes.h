/* rcbytes: immutable bytes shared by reference count.
 *
 * One message meant for many readers (a rat/event notification for every
 * watcher) is serialized once into an rcbytes_t, and each reader's queue
 * holds a reference instead of a copy (doc/performance.md#a-room-full-of-watchers). The
 * bytes never change after rcbytes_new, so sharing needs no locking beyond
 * the single-threaded loop every holder runs on (the count is not atomic). */
#ifndef RAT_RCBYTES_H
#define RAT_RCBYTES_H

#include <stddef.h>

typedef struct rcbytes rcbytes_t;

/* A copy of data[0..len) (NUL-terminated after len) with one reference,
 * owned by the caller. Never NULL (aborts on out-of-memory). */
rcbytes_t *rcbytes_new(const void *data, size_t len);
/* Takes one more reference to b (which must be live) and returns b. */
rcbytes_t *rcbytes_ref(rcbytes_t *b);
/* Drops the caller's reference *b_p (NULL is fine) and sets *b_p to NULL;
 * the bytes are freed with the last reference. */
void rcbytes_unref(rcbytes_t **b_p);
/* The bytes (borrowed, valid while a reference is held) and their length. */
const char *rcbytes_data(const rcbytes_t *b);
size_t rcbytes_len(const rcbytes_t *b);
/* How many references are held (for tests and assertions). */
size_t rcbytes_refs(const rcbytes_t *b);

#endif
