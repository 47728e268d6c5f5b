/* mem: allocation helpers that abort on out-of-memory.
 *
 * rat-py is a small daemon; an allocation failure leaves no sane way to keep
 * serving, so every allocation goes through these and aborts with a message on
 * stderr instead of propagating NULL through every layer (czmq's zmalloc). */
#ifndef RAT_MEM_H
#define RAT_MEM_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Caller owns the returned copy. xstrdup(NULL) returns NULL. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a fresh string. Caller owns the result. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* NULL-terminated string vectors (argv, envp). strv_dup(NULL) is NULL;
 * caller owns the copy. strv_free accepts NULL. */
char **strv_dup(char *const *v);
void strv_free(char **v);

/* Frees *p and sets it to NULL. */
#define FREE_AND_NULL(p) do { free(p); (p) = NULL; } while (0)

#endif
