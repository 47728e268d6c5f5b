/* edit_dl: libedit (BSD editline: line editing, history, key bindings),
 * loaded at run time for the `rat NAME` REPL.
 *
 * Only the REPL edits lines; every rat-py server is the same binary, and a
 * linked library is mapped into each (idle RSS, doc/performance.md). So,
 * as mhd_dl and gw_dl do for theirs, libedit is not linked: edit_dl_load()
 * dlopen()s it by its soname the first time a REPL starts, and the calls go
 * through the table below. libedit rather than GNU readline: it is
 * BSD-licensed (a library-linked project keeps its own license) and
 * Debian's libedit2 is small. Without it the REPL reads plain lines. */
#ifndef RAT_EDIT_DL_H
#define RAT_EDIT_DL_H

#include <stdio.h>
#include <histedit.h>

typedef struct {
    EditLine *(*el_init)(const char *, FILE *, FILE *, FILE *);
    void (*el_end)(EditLine *);
    const char *(*el_gets)(EditLine *, int *);
    int (*el_set)(EditLine *, int, ...);
    int (*el_wset)(EditLine *, int, ...); /* EL_ADDFN: el_set's copies of the names leak */
    int (*el_get)(EditLine *, int, ...);
    const LineInfo *(*el_line)(EditLine *);
    int (*el_insertstr)(EditLine *, const char *);
    void (*el_deletestr)(EditLine *, int);
    void (*el_reset)(EditLine *);
    History *(*history_init)(void);
    void (*history_end)(History *);
    int (*history)(History *, HistEvent *, int, ...);
} edit_dl_t;

/* The table; valid once edit_dl_load() returned 0. */
extern edit_dl_t edit_dl;

/* Loads libedit (once). -1 with a sentence naming the package in err. */
int edit_dl_load(char *err, size_t errlen);

#endif
