/* doctor: `rat-py doctor`: checks that rat-py can work here, one line per
 * check with ✓ or ✗ and, for each ✗, what fixes it. */
#ifndef RAT_DOCTOR_H
#define RAT_DOCTOR_H

#include "family.h"

/* argv[0] is "doctor"; the other arguments are server options (--cwd,
 * --kernel, ...), passed on to the rat-py it starts and talks to. Returns 0
 * when every check passed, 1 otherwise. */
int doctor_main(int argc, char **argv, const char *self_argv0, const family_t *fam);

#endif
