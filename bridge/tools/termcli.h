/* termcli: the terminal clients, mcp2cli and its renamed successor
 * mcptocli (github.com/MaximeRivest/mcp2cli), that turn rat-py into the
 * `py` command.
 *
 * They cannot send run(input=...) the way the MCP contract says: both
 * reserve the flag --input for "the arguments as JSON". So for them, and
 * only them, while their own run's input() waits, the code of the next run
 * is the answer (`py run Alice`), and the texts that tell how to answer
 * name that command instead of the MCP call. They are known by the
 * clientInfo.name they send: "mcp2cli" / "mcptocli" when a command starts
 * its own rat-py for one call (`py run ...` without `py up`, or `py
 * shell`), "mcp2cli-daemon" / "mcptocli-daemon" from the process `py up`
 * starts, which keeps one rat-py (and one session) for every command. */
#ifndef RAT_TERMCLI_H
#define RAT_TERMCLI_H

#include <stdbool.h>

#include "buf.h"
#include "mcp.h"

typedef enum {
    TERMCLI_NONE,    /* any other client: the MCP texts */
    TERMCLI_DIRECT,  /* one rat-py per command: it ends with the call */
    TERMCLI_DAEMON,  /* under `py up`: the next command reaches the same run */
} termcli_mode_t;

termcli_mode_t termcli_mode(mcp_session_t *s);

/* The command `rat-py install` exposes for a kernel language (the rat
 * family's names: python py, R r, julia ju, bash sh, javascript js; "py"
 * for any other or NULL). Static. */
const char *termcli_command(const char *language);

/* The answer a terminal client's run code gives to a waiting input(): the
 * code, less one line break at its end (`py run @-` reads stdin, which
 * ends with the Enter that was typed; input() never returns one). Caller
 * owns it. */
char *termcli_answer(const char *code);

/* Appends the line under INPUT REQUESTED that says how to answer exec #n,
 * for a terminal client in mode (not TERMCLI_NONE) whose command is cmd. */
void termcli_input_hint(buf_t *b, termcli_mode_t mode, const char *cmd, long n, bool password);

#endif
