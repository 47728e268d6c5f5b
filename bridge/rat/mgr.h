/* mgr: `rat`, the runtime manager of the rat family (the name rat-py runs
 * under when invoked as `rat`): named runtimes, each a `rat-py --http`
 * server with its own kernel on its own port, in the state file the Go
 * `rat` CLI and vscode-rat share (mgr_state.h), with the Go CLI's commands
 * and texts where vscode-rat reads them (doc/rat.md):
 *   rat start|stop|restart|cancel NAME, rat add NAME --lang L --cwd DIR,
 *   rat remove NAME [--yes], rat install LANG, rat resolve X --json,
 *   rat status (ls), rat version (--version), rat NAME (a REPL). */
#ifndef RAT_MGR_H
#define RAT_MGR_H

#include <stdbool.h>

/* Whether argv[0] names the manager (its basename is "rat"). */
bool mgr_is_manager(const char *argv0);
/* The whole command; returns the exit status. */
int mgr_main(int argc, char **argv);

#endif
