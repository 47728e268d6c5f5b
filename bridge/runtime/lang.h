/* lang: what rat-py knows about a kernel's language beyond the protocol.
 *
 * The protocol alone runs code, completes and inspects. Counting variables,
 * resetting a namespace and everything `look` shows need a little code in
 * the kernel's own language: a helper installed once per kernel (kept out of
 * the user's namespace) and called with small snippets. A lang_t holds that
 * code and says how results come back, which differs per kernel:
 *
 *   LANG_VIA_USER_EXPRESSIONS (ipykernel): a helper call is an expression in
 *     execute_request.user_expressions; its repr comes back in the reply. It
 *     can ride along with the user's own execute (no extra round trip) and
 *     runs silently (no output, no history).
 *   LANG_VIA_STDOUT (IRkernel, which has no user_expressions and suppresses
 *     all output of silent executes): a helper call is a separate,
 *     non-silent execute_request with store_history=false that prints JSON
 *     on stdout; rat-py collects that output for itself and forwards none of
 *     it (frontends sharing an attached kernel do see it).
 *
 * Kernels whose language has no adapter still run, cancel and restart; they
 * just report no variables. */
#ifndef RAT_LANG_H
#define RAT_LANG_H

#include <stdbool.h>

#include "buf.h"

typedef enum { LANG_VIA_USER_EXPRESSIONS, LANG_VIA_STDOUT } lang_channel_t;

typedef struct lang {
    const char *name;            /* language_info.name it serves, e.g. "python" (case-insensitive) */
    lang_channel_t channel;
    /* Appends code (run once when the kernel is ready) that installs the
     * helper without touching the user's namespace. */
    void (*install)(buf_t *b);
    /* Appends the code (an expression for LANG_VIA_USER_EXPRESSIONS) that
     * calls helper function fn ("snap": the variables snapshot; "inspect": a
     * look path) with json_arg, a JSON text (NULL: no argument). The result
     * is JSON text: {"vars": N, "rows": [...]} for snap; {"ok": ..., ...}
     * for inspect. */
    void (*call)(buf_t *b, const char *fn, const char *json_arg);
    /* Appends code that makes dir the kernel's working directory without
     * touching the user's variables: the process's (and $PWD), and where
     * the language has one, the import path's entry that was the old
     * working directory (Python's sys.path[0]). NULL: the kernel moves only
     * when it is started again (runtime_move). */
    void (*chdir)(buf_t *b, const char *dir);
    /* Code that clears the user namespace / also history and the execution
     * counter (NULL: not possible for this kernel). */
    const char *reset_code;
    const char *reset_all_code;
    /* Code run silently when rat-py leaves a kernel it attached to: the
     * helper undoes what it changed there (hooks, settings, itself), once no
     * other rat-py uses it. NULL: nothing to undo. */
    const char *detach_code;
    /* Rewrites a kernel error (ename, evalue; both owned and replaceable)
     * into what the run result shows: "ename: evalue", or evalue alone when
     * *ename becomes "". NULL: shown as sent. */
    void (*clean_error)(char **ename, char **evalue);
    /* For `rat-py doctor`: code that prints the interpreter on one line and
     * "<kernel package> <version>" on the next; and code that does nothing. */
    const char *probe_code;
    const char *noop_code;
    /* Whether an HTML form that comes with a text/plain one is worth saving
     * as an asset: yes for Python (pandas' tables); no for IRkernel, which
     * sends HTML for every value it prints. HTML with no plain-text form
     * (an explicit HTML display) is always saved. */
    bool html_with_plain_is_asset;
    /* The helper puts the snapshot into every execute_reply's payload list
     * (IPython's post_run_cell hook + payload manager), so a run needs no
     * user_expression, and errors need no second request. */
    bool snapshot_in_payload;
    /* A replaced kernel (restart, spare swap) is asked to shut down and
     * given a second, not SIGKILLed at once: it cleans up only when it quits
     * by itself. See kernel_set_ask_on_replace. */
    bool ask_on_replace;
} lang_t;

/* The adapters, one file each (lang_python.c, lang_r.c). */
extern const lang_t lang_python;
extern const lang_t lang_r;

/* The adapter for a language_info.name (case-insensitive), or NULL. */
const lang_t *lang_find(const char *language);

#endif
