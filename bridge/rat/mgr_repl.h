/* mgr_repl: `rat NAME`, an interactive REPL on a runtime's kernel: a client
 * of its server like any other (the notebook GUI's Variables see what it
 * defines, and it sees theirs). Line editing and history through libedit
 * (edit_dl.h; history in <state dir>/history/NAME, at most 1000 lines),
 * TAB completion from the kernel (look {code, cursor}), output streamed as
 * it comes, input() answered on the terminal (a password without echo),
 * Ctrl-C interrupting the running code (ctl cancel), Ctrl-D leaving. A
 * line ending in ':' or '\' or with brackets open continues on `...`
 * lines until an empty one. Without a terminal, or without libedit, lines
 * are read plainly from stdin (no prompt when stdin is not a terminal). */
#ifndef RAT_MGR_REPL_H
#define RAT_MGR_REPL_H

/* Runs the REPL on the server at port; returns the exit status. */
int mgr_repl_main(const char *name, long port);

#endif
