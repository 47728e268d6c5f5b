/* family: the rat family of names. One binary serves every language; the
 * name it is invoked under picks the kernel:
 *   rat-py  Python (ipykernel; the default)     command name `py`
 *   rat-r   R (IRkernel, kernelspec `ir`)        `r`
 *   rat-ju  Julia (IJulia, `julia-*`)            `ju`
 *   rat-sh  bash (bash_kernel, `bash`)           `sh`
 *   rat-js  JavaScript (IJavascript, `javascript`) `js`
 * `cmake --install` creates the other names as symlinks to rat-py. */
#ifndef RAT_FAMILY_H
#define RAT_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *prog;          /* "rat-r" */
    const char *short_name;    /* "r": the default command name (rat-py install) */
    const char *what;          /* "R": for messages */
    const char *language;      /* kernelspec language to match; NULL for Python (rat-py's own logic) */
    const char *kernel;        /* preferred kernelspec name, or NULL */
    const char *install_hint;  /* how to get such a kernel */
} family_t;

/* Whether base (a file name, no folder) is one of the family's programs. */
bool family_is_prog(const char *base);
/* The member named by argv[0]'s basename; rat-py for any other name. */
const family_t *family_from_argv0(const char *argv0);
/* The kernelspec name a non-Python member launches: its preferred spec when
 * installed, else the first spec (in Jupyter's search order) whose language
 * matches. NULL with err filled, naming what to install, when there is none.
 * Caller owns the result. */
char *family_kernel(const family_t *fam, char *err, size_t errlen);

#endif
