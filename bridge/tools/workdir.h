/* workdir: where the kernel works, and why (doc/kernels.md, "Where the
 * kernel works").
 *
 * --cwd DIR: there, whatever a client says. Otherwise the kernel starts in
 * the directory rat-py was started in, and the first session whose client
 * declares the roots capability is asked roots/list once it has sent
 * notifications/initialized; runs wait for the answer (at most
 * WORKDIR_ROOTS_WAIT_MS). The first root that is a directory here (see
 * mcp_roots.h) becomes where the kernel works: its working directory, the
 * import path's entry for it, the assets directory, and the kernel's
 * interpreter when a venv is found there (runtime_move: a kernel that has
 * run nothing is moved or started there before the first run).
 * notifications/roots/list_changed from that session asks again; the
 * kernel moves at the next moment that breaks nothing (runtime_move) and
 * the next result says so. Over HTTP the kernel is shared: the first
 * session whose roots were used decides, and other sessions' roots never
 * move it. With neither --cwd nor roots, when the start directory is / or
 * one rat-py cannot write, the first result says where the kernel works
 * and how to choose, once.
 *
 * Lifetime: create after the runtime and the MCP server; destroy after the
 * transports (whose sessions' pending roots/list requests call back into
 * it when they end) and after the runtime (whose pending move calls back
 * with DROPPED). It only reads and notes through the runtime after that. */
#ifndef RAT_WORKDIR_H
#define RAT_WORKDIR_H

#include <stdbool.h>
#include <json-c/json.h>

#include "buf.h"
#include "loop.h"
#include "mcp.h"
#include "runtime.h"

#define WORKDIR_ROOTS_WAIT_MS 2000   /* runs wait this long for the first roots/list answer */
#define WORKDIR_MAX_ASKS 8           /* roots/list requests in flight at once */

typedef struct workdir workdir_t;
struct assets;

typedef enum {
    WORKDIR_OPTION,   /* --cwd */
    WORKDIR_ROOT,     /* the client's root */
    WORKDIR_START,    /* the directory rat-py was started in */
} workdir_source_t;

/* How a kernel is started in dir (absolute, existing): fills *python (the
 * interpreter for rat-py's kernelspec, runtime_place_t; NULL: the named
 * kernelspec), *interpreter, *env_note and *warning (a venv found there and
 * refused, interp.h; each may be NULL), all owned by the caller afterwards.
 * Returns 0, or -1 with err: then the kernel does not move there. Called on
 * the loop; may start a Python once to ask about a venv (interp.h). */
typedef int (workdir_kernel_fn)(void *ud, const char *dir, char **python, char **interpreter, char **env_note,
                                char **warning, char *err, size_t errlen);

typedef struct {
    const char *dir;            /* where the kernel works at start: absolute, resolved */
    bool from_option;           /* --cwd given: roots are never asked */
    bool movable;               /* rat-py starts the kernel on this machine (not --existing, not --gateway) */
    /* The assets directory: an absolute --assets-dir stays; a relative one
     * (or the default .rat-assets) is inside where the kernel works. */
    const char *assets_option;  /* --assets-dir as given, or NULL for .rat-assets */
    workdir_kernel_fn *kernel;  /* required when movable */
    void *kernel_ud;
    /* A venv refused where the kernel starts (interp.h), or NULL: the next
     * result says it; a move to a place where the same venv is refused does
     * not say it again, a move to another place's refusal does. */
    const char *env_warning;
} workdir_opts_t;

workdir_t *workdir_new(loop_t *loop, mcp_server_t *mcp, runtime_t *rt, struct assets *assets,
                       const workdir_opts_t *o);
void workdir_destroy(workdir_t **self_p);
/* A run is about to be queued (tool run): the first one may carry the
 * note about the start directory. */
void workdir_on_run(workdir_t *self);
/* ctl status: appends "\nworking directory: ..." (and what is pending or
 * went wrong), and returns its structuredContent object (new; NULL when
 * the kernel is not rat-py's to place: attached or on a gateway). */
void workdir_status_text(const workdir_t *self, buf_t *b);
json_object *workdir_status_json(const workdir_t *self);

#endif
