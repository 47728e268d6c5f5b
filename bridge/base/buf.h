/* buf: a growable byte buffer with a hard size cap (curl's dynbuf idea).
 *
 * The cap is the point: every buffer fed from outside (stdin lines, kernel
 * output, HTTP bodies) has a maximum, and appending past it fails visibly
 * instead of growing rat-py without limit. The data is always NUL-terminated. */
#ifndef RAT_BUF_H
#define RAT_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *data;  /* owned; NUL-terminated when non-NULL */
    size_t len;  /* bytes used, excluding the NUL */
    size_t cap;  /* bytes allocated */
    size_t max;  /* largest len allowed; 0 means unlimited (only for trusted data) */
} buf_t;

void buf_init(buf_t *b, size_t max);
void buf_free(buf_t *b);
/* Empties the buffer and keeps its memory. */
void buf_reset(buf_t *b);
/* Empties the buffer, and gives its memory back when more than keep bytes
 * are allocated: for buffers reused for every message, so that one big
 * message does not stay in an idle rat-py's RSS. */
void buf_reset_shrink(buf_t *b, size_t keep);
/* Returns 0, or -1 when the result would exceed b->max (b is unchanged then). */
int buf_append(buf_t *b, const void *p, size_t n);
int buf_puts(buf_t *b, const char *s);
int buf_putc(buf_t *b, char c);
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included. Invalid UTF-8 bytes are
 * replaced by U+FFFD so the result is always valid JSON. */
int buf_put_json_str(buf_t *b, const char *s, size_t n);
/* Appends s with every byte that is not part of a valid UTF-8 character
 * replaced by U+FFFD, so the result is valid UTF-8 whatever s holds. */
int buf_append_utf8(buf_t *b, const char *s, size_t n);
/* Removes the first n bytes. */
void buf_consume(buf_t *b, size_t n);
/* Returns the data and leaves b empty. Caller owns the result (never NULL). */
char *buf_take(buf_t *b);
/* A never-NULL view of the contents. */
const char *buf_str(const buf_t *b);

#endif
