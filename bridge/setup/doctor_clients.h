/* doctor_clients: `rat-py doctor`'s lines about the terminal clients that
 * turn rat-py into the `py` command (mcptocli, and mcp2cli, its name
 * before; see install.h). */
#ifndef RAT_DOCTOR_CLIENTS_H
#define RAT_DOCTOR_CLIENTS_H

#include <json-c/json.h>

#include "family.h"

/* For each client: where its program is and its version (`CLIENT
 * version`), whether fam's command (`py`) is registered and for which
 * program, whether its `up` process runs, and whether the tool schemas it
 * cached for `py` are this rat-py's: tools is the server's tools/list
 * result (borrowed; NULL when the server did not answer, then nothing is
 * compared). Then which `py` runs from PATH. Nothing here is a failure
 * except what makes `py` fail silently or not at all once registered: a
 * stale cache, or a registered `py` that PATH does not find. self is this
 * program's path. */
void doctor_check_clients(const family_t *fam, const char *self, json_object *tools);

#endif
