/* workdir: where the kernel works, and why. See workdir.h. */
#define LOG_MODULE "workdir"
#include "workdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assets.h"
#include "log.h"
#include "mcp_roots.h"
#include "mem.h"

struct workdir {
    loop_t *loop;                  /* borrowed */
    runtime_t *rt;                 /* borrowed */
    struct assets *assets;         /* borrowed, may be NULL */
    bool from_option, movable;
    char *assets_option;           /* owned, or NULL */
    workdir_kernel_fn *kernel;
    void *kernel_ud;
    char *path;                    /* owned: where the kernel works */
    workdir_source_t source;
    char *root;                    /* owned: the root's URI (shown safely) when source is WORKDIR_ROOT */
    char *problem;                 /* owned: what went wrong with the client's roots last, or NULL */
    char *moving_to, *moving_root; /* owned: a move asked for and not made yet */
    unsigned long decider;         /* the session whose roots decide (its serial); 0: none yet */
    unsigned asks;                 /* roots/list requests in flight */
    /* list_changed not followed since the asks hit WORKDIR_MAX_ASKS: said
     * once when the cap is hit and once when an answer comes (a client can
     * send thousands: one WARN line each flooded the log). */
    unsigned long skipped;
    unsigned long ask_seq;         /* the last one sent */
    unsigned long answered_seq;    /* the newest one answered: older answers are stale */
    unsigned long hold_seq;        /* the ask runs wait for; 0: none */
    uint64_t hold_timer;
    bool asked;                    /* some session's roots were asked for */
    bool start_bad;                /* the start directory is / or not writable */
    bool noted;                    /* the note about the start directory was given */
    char *warned;                  /* owned: the last refused venv's warning said (workdir_opts_t.env_warning) */
};

/* One roots/list request. Lives until its answer (or abandonment). */
typedef struct {
    workdir_t *wd;
    unsigned long serial;          /* the session asked */
    unsigned long seq;
} s_ask_t;

/* One move asked of the runtime. Lives until the runtime calls back. */
typedef struct {
    workdir_t *wd;
    char *dir, *root;              /* owned */
    char *from;                    /* owned: where the kernel worked when it was asked */
    bool announce;                 /* the kernel had run code: the next result says where it went */
} s_move_t;

static void s_set(char **field, const char *value)
{
    char *v = value ? xstrdup(value) : NULL;
    free(*field);
    *field = v;
}

/* The note of workdir.h's last sentence, when it applies: once, and only
 * while the kernel works in the start directory with no decision pending. */
static void s_start_note(workdir_t *self)
{
    if (self->noted || !self->start_bad || self->source != WORKDIR_START || self->hold_seq || self->moving_to)
        return;
    self->noted = true;
    char *note = xasprintf("[rat-py: the kernel works in %s, the directory rat-py was started in%s, because the "
                           "client shares no workspace root; to choose where, start rat-py with --cwd DIR (in the "
                           "host's MCP config: \"args\": [\"--cwd\", \"/path/to/project\"])]",
                           self->path, strcmp(self->path, "/") == 0 ? "" : " (rat-py cannot write there)");
    runtime_note(self->rt, note);
    free(note);
}

/* The same from a decision that came (or did not) while no run may be
 * queued: only when a run waits for it, so that the note never reaches a
 * result after a later decision made it untrue. */
static void s_start_note_if_waiting(workdir_t *self)
{
    runtime_status_t st;
    runtime_status(self->rt, &st);
    if (st.queued)
        s_start_note(self);
}

/* Says warning (a refused venv) in the next result, unless it was the last
 * one said. */
static void s_warn(workdir_t *self, const char *warning)
{
    if (!warning || (self->warned && strcmp(self->warned, warning) == 0))
        return;
    s_set(&self->warned, warning);
    char *note = xasprintf("[rat-py: %s]", warning);
    runtime_note(self->rt, note);
    free(note);
}

static void s_release(workdir_t *self)
{
    if (!self->hold_seq)
        return;
    self->hold_seq = 0;
    loop_timer_cancel(self->loop, self->hold_timer);
    self->hold_timer = 0;
    runtime_hold(self->rt, false);
}

static void s_hold_expired(loop_t *loop, void *ud)
{
    workdir_t *self = ud;
    self->hold_timer = 0;
    log_warn("the client did not answer roots/list within %d ms; runs go on in %s", WORKDIR_ROOTS_WAIT_MS,
             self->path);
    char *p = xasprintf("the client did not answer roots/list within %d ms (the kernel moves if it answers later)",
                        WORKDIR_ROOTS_WAIT_MS);
    free(self->problem);
    self->problem = p;
    s_release(self);
    s_start_note_if_waiting(self);
}

static char *s_assets_for(const workdir_t *self, const char *dir)
{
    if (self->assets_option && self->assets_option[0] == '/')
        return NULL; /* fixed */
    return xasprintf("%s/%s", dir, self->assets_option ? self->assets_option : ".rat-assets");
}

static void s_moved(void *ud, runtime_move_result_t result, const char *why)
{
    s_move_t *mv = ud;
    workdir_t *self = mv->wd;
    if (result == RUNTIME_MOVE_DROPPED) {
        /* A newer move replaced it (and set moving_to), or rat-py is
         * stopping: nothing to say. */
    } else if (result == RUNTIME_MOVE_FAILED) {
        log_warn("the kernel stays in %s: %s", self->path, why ? why : "");
        char *p = xasprintf("the kernel could not move to %s: %s", mv->dir, why ? why : "");
        free(self->problem);
        self->problem = p;
        if (self->moving_to && strcmp(self->moving_to, mv->dir) == 0) {
            FREE_AND_NULL(self->moving_to);
            FREE_AND_NULL(self->moving_root);
        }
        if (mv->announce) {
            char *note = xasprintf("[rat-py: the client's root changed, but the kernel stays in %s: it could not "
                                   "move to %s (%s)]",
                                   self->path, mv->dir, why ? why : "");
            runtime_note(self->rt, note);
            free(note);
        }
    } else {
        s_set(&self->path, mv->dir);
        self->source = WORKDIR_ROOT;
        s_set(&self->root, mv->root);
        if (self->moving_to && strcmp(self->moving_to, mv->dir) == 0) {
            FREE_AND_NULL(self->moving_to);
            FREE_AND_NULL(self->moving_root);
        }
        char *assets = s_assets_for(self, mv->dir);
        if (assets && self->assets)
            assets_set_dir(self->assets, assets);
        free(assets);
        log_info("the kernel works in %s (the client's root %s)", mv->dir, mv->root);
        if (mv->announce) {
            runtime_status_t st;
            runtime_status(self->rt, &st);
            char *note = xasprintf(
                "[rat-py: the kernel now works in %s, the client's root (it worked in %s)%s]", mv->dir, mv->from,
                result == RUNTIME_MOVE_IN_PLACE ? "; variables are kept"
                : result == RUNTIME_MOVE_PARTLY  ? "; variables are kept; the interpreter found there is used from "
                                                   "the next ctl(op=\"restart\")"
                                                 : "");
            runtime_note(self->rt, note);
            free(note);
        }
    }
    free(mv->dir);
    free(mv->root);
    free(mv->from);
    free(mv);
}

/* The kernel is to work in dir (the client's root uri). */
static void s_move_to(workdir_t *self, const char *dir, const char *uri)
{
    if (strcmp(dir, self->moving_to ? self->moving_to : self->path) == 0) {
        if (!self->moving_to) {
            self->source = WORKDIR_ROOT; /* already there: it is the root now */
            s_set(&self->root, uri);
        }
        return;
    }
    char *python = NULL, *interp = NULL, *note = NULL, *warning = NULL;
    char err[1024];
    int rc = self->kernel(self->kernel_ud, dir, &python, &interp, &note, &warning, err, sizeof err);
    s_warn(self, warning);
    free(warning);
    if (rc < 0) {
        log_warn("the kernel stays in %s: %s", self->path, err);
        char *p = xasprintf("the kernel cannot be started in %s: %s", dir, err);
        free(self->problem);
        self->problem = p;
        return;
    }
    runtime_status_t st;
    runtime_status(self->rt, &st);
    s_move_t *mv = xcalloc(1, sizeof *mv);
    mv->wd = self;
    mv->dir = xstrdup(dir);
    mv->root = xstrdup(uri);
    mv->from = xstrdup(self->path);
    mv->announce = !st.fresh;
    s_set(&self->moving_to, dir);
    s_set(&self->moving_root, uri);
    char *assets = s_assets_for(self, dir);
    runtime_place_t place = {.cwd = dir, .assets_dir = assets, .python = python, .interpreter = interp, .env_note = note};
    runtime_move(self->rt, &place, s_moved, mv); /* may call s_moved before it returns */
    free(assets);
    free(python);
    free(interp);
    free(note);
}

static void s_on_roots(void *ud, json_object *result, json_object *error)
{
    s_ask_t *ask = ud;
    workdir_t *self = ask->wd;
    self->asks--;
    if (self->skipped) {
        log_info("roots/list is answered again; %lu roots/list_changed notifications were not followed meanwhile",
                 self->skipped);
        self->skipped = 0;
    }
    bool holding = self->hold_seq == ask->seq;
    bool stale = ask->seq < self->answered_seq || (self->decider && self->decider != ask->serial);
    if (result || error)
        self->answered_seq = ask->seq > self->answered_seq ? ask->seq : self->answered_seq;
    if (!result && !error) {
        /* The session ended first. */
    } else if (stale) {
        log_debug("a roots/list answer from session %lu is not used (stale, or another session decides)",
                  ask->serial);
    } else if (error) {
        json_object *msg = NULL;
        const char *m = json_object_object_get_ex(error, "message", &msg) && json_object_is_type(msg, json_type_string)
                            ? json_object_get_string(msg)
                            : "no message";
        char *shown = mcp_roots_show(m, strlen(m));
        char *p = xasprintf("the client answered roots/list with an error: %s", shown);
        free(shown);
        log_warn("%s", p);
        free(self->problem);
        self->problem = p;
    } else {
        mcp_roots_pick_t pick;
        char err[2600];
        if (mcp_roots_pick(result, &pick, err, sizeof err) < 0) {
            log_warn("%s; the kernel works in %s", err, self->path);
            s_set(&self->problem, err);
        } else {
            self->decider = ask->serial;
            s_set(&self->problem, pick.problems); /* the roots before it that were not used, or NULL */
            s_move_to(self, pick.dir, pick.uri);
        }
        mcp_roots_pick_free(&pick);
    }
    if (holding)
        s_release(self);
    s_start_note_if_waiting(self);
    free(ask);
}

static void s_ask(workdir_t *self, mcp_session_t *session, bool hold)
{
    if (self->asks >= WORKDIR_MAX_ASKS) {
        if (self->skipped++ == 0)
            log_warn("%u roots/list requests are unanswered; not asking again until one is answered", self->asks);
        return;
    }
    s_ask_t *ask = xcalloc(1, sizeof *ask);
    ask->wd = self;
    ask->serial = mcp_session_serial(session);
    ask->seq = ++self->ask_seq;
    if (mcp_session_request(session, "roots/list", NULL, s_on_roots, ask) == 0) {
        free(ask);
        return;
    }
    self->asks++;
    self->asked = true;
    if (hold && !self->hold_seq) {
        self->hold_seq = ask->seq;
        runtime_hold(self->rt, true);
        self->hold_timer = loop_timer(self->loop, WORKDIR_ROOTS_WAIT_MS, s_hold_expired, self);
    }
}

static void s_on_initialized(mcp_session_t *session, json_object *params, void *ud)
{
    workdir_t *self = ud;
    if (!mcp_session_client_has(session, "roots"))
        return;
    if (self->decider) {
        log_info("session %lu's roots are not asked for: session %lu's decide where the kernel works",
                 mcp_session_serial(session), self->decider);
        return;
    }
    /* Runs wait for the first answer; a session that comes later and is
     * asked while the kernel already ran code does not hold them. */
    runtime_status_t st;
    runtime_status(self->rt, &st);
    s_ask(self, session, !self->asked && st.fresh);
}

static void s_on_list_changed(mcp_session_t *session, json_object *params, void *ud)
{
    workdir_t *self = ud;
    unsigned long serial = mcp_session_serial(session);
    if (!mcp_session_client_has(session, "roots"))
        return;
    if (self->decider && self->decider != serial) {
        log_info("session %lu's roots changed; session %lu's decide where the kernel works", serial, self->decider);
        return;
    }
    s_ask(self, session, false);
}

workdir_t *workdir_new(loop_t *loop, mcp_server_t *mcp, runtime_t *rt, struct assets *assets, const workdir_opts_t *o)
{
    workdir_t *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->rt = rt;
    self->assets = assets;
    self->from_option = o->from_option;
    self->movable = o->movable;
    self->assets_option = xstrdup(o->assets_option);
    self->kernel = o->kernel;
    self->kernel_ud = o->kernel_ud;
    self->path = xstrdup(o->dir);
    self->source = o->from_option ? WORKDIR_OPTION : WORKDIR_START;
    self->start_bad = !o->from_option && o->movable && (strcmp(o->dir, "/") == 0 || access(o->dir, W_OK) != 0);
    s_warn(self, o->env_warning);
    if (self->movable && !self->from_option && self->kernel) {
        mcp_server_on_notification(mcp, "notifications/initialized", s_on_initialized, self);
        mcp_server_on_notification(mcp, "notifications/roots/list_changed", s_on_list_changed, self);
    }
    return self;
}

void workdir_destroy(workdir_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    workdir_t *self = *self_p;
    loop_timer_cancel(self->loop, self->hold_timer);
    free(self->assets_option);
    free(self->path);
    free(self->root);
    free(self->problem);
    free(self->moving_to);
    free(self->moving_root);
    free(self->warned);
    free(self);
    *self_p = NULL;
}

void workdir_on_run(workdir_t *self)
{
    if (self)
        s_start_note(self);
}

static const char *s_source_text(workdir_t *self)
{
    switch (self->source) {
    case WORKDIR_OPTION:
        return "--cwd";
    case WORKDIR_ROOT:
        return "the client's root";
    case WORKDIR_START:
        break;
    }
    return "the directory rat-py was started in";
}

void workdir_status_text(const workdir_t *cself, buf_t *b)
{
    workdir_t *self = (workdir_t *)cself;
    if (!self->movable)
        return;
    buf_printf(b, "\nworking directory: %s (%s", self->path, s_source_text(self));
    if (self->source == WORKDIR_ROOT && self->root)
        buf_printf(b, " %s", self->root);
    buf_puts(b, ")");
    if (self->hold_seq)
        buf_puts(b, "; runs wait for the client's roots");
    if (self->moving_to)
        buf_printf(b, "; moving to %s (the client's root %s) when the kernel is idle", self->moving_to,
                   self->moving_root ? self->moving_root : "?");
    if (self->problem)
        buf_printf(b, "\nroots: %s", self->problem);
}

json_object *workdir_status_json(const workdir_t *cself)
{
    workdir_t *self = (workdir_t *)cself;
    if (!self->movable)
        return NULL;
    static const char *const sources[] = {"cwd_option", "client_root", "start_dir"};
    json_object *o = json_object_new_object();
    json_object_object_add(o, "path", json_object_new_string(self->path));
    json_object_object_add(o, "source", json_object_new_string(sources[self->source]));
    if (self->source == WORKDIR_ROOT && self->root)
        json_object_object_add(o, "root", json_object_new_string(self->root));
    json_object_object_add(o, "waiting_for_roots", json_object_new_boolean(self->hold_seq != 0));
    if (self->moving_to)
        json_object_object_add(o, "moving_to", json_object_new_string(self->moving_to));
    if (self->problem)
        json_object_object_add(o, "roots_problem", json_object_new_string(self->problem));
    return o;
}
