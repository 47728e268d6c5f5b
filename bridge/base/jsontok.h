/* jsontok: strict json-c tokeners (no trailing commas or other leniency,
 * valid UTF-8 only), kept per thread for reuse.
 *
 * Making a tokener costs more than parsing a small message with it:
 * json_tokener_new_ex callocs a stack as deep as its depth limit (~7 k
 * instructions at depth 64, against ~3 k to parse a 100-byte request), and
 * every MCP request and every kernel message used to make one (five per
 * `run`). A kept tokener also keeps its string buffer, which grows to the
 * longest token it has read, so it is kept only when every input it read was
 * at most JSONTOK_KEEP_MAX bytes: what a thread keeps is bounded (a few
 * tokeners of a few KiB), and a thread's tokeners are freed when it ends.
 * And only when its last parse succeeded: a parse that stopped half-way can
 * leave state that json_tokener_reset does not clear (a UTF-16 high
 * surrogate waiting for its pair), which would change the next parse.
 *
 * Ownership: jsontok_take hands the caller a tokener it owns until
 * jsontok_give, which either keeps it for the same thread's next take or
 * frees it. Never give a tokener to another thread. */
#ifndef RAT_JSONTOK_H
#define RAT_JSONTOK_H

#include <stddef.h>
#include <json-c/json.h>

#define JSONTOK_KEEP_MAX 4096

/* A strict tokener with this depth limit, reset, flags set. Never NULL. */
json_tokener *jsontok_take(int depth);
/* Takes *tok back (NULL is fine) and sets *tok to NULL. depth: what it was
 * taken with; longest: the longest input it parsed since it was taken.
 * Call it right after the last parse (its error decides), before any
 * json_tokener_reset. */
void jsontok_give(json_tokener **tok, int depth, size_t longest);
/* How many tokeners this thread keeps (for tests). */
int jsontok_kept(void);

#endif
