/* lang: what rat-py knows about a kernel's language beyond the protocol.
 *
 * The protocol alone runs code, completes and inspects. Counting variables,
 * resetting a namespace and everything `look` shows need a little code in
 * the kernel's own language; a lang_t holds that code. Kernels whose language
 * has no adapter still run, cancel and restart; they just report no
 * variables. */
#ifndef RAT_LANG_H
#define RAT_LANG_H

#include <stdbool.h>

#include "buf.h"

typedef struct {
    const char *name;            /* language_info.name it serves, e.g. "python" */
    /* Code (run once, silently, when the kernel is ready) that installs the
     * helper without touching the user's namespace; appended to b. */
    void (*install)(buf_t *b);
    /* user_expressions expression returning the state snapshot as JSON text
     * ({"vars": N, ...}), or NULL. */
    const char *snapshot_expr;
    /* Silent code that clears the user namespace / everything. */
    const char *reset_code;
    const char *reset_all_code;
} lang_t;

/* The adapter for a language_info.name (case-insensitive), or NULL. */
const lang_t *lang_find(const char *language);

#endif
