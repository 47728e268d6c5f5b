/* termcli: what rat-py does differently for mcp2cli and mcptocli. */
#include "termcli.h"

#include <string.h>
#include <strings.h>

#include "mem.h"

termcli_mode_t termcli_mode(mcp_session_t *s)
{
    const char *name = s ? mcp_session_client_name(s) : "";
    static const char *const names[] = {"mcp2cli", "mcptocli"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(name, names[i], n) != 0)
            continue;
        if (name[n] == '\0')
            return TERMCLI_DIRECT;
        if (strcmp(name + n, "-daemon") == 0)
            return TERMCLI_DAEMON;
    }
    return TERMCLI_NONE;
}

const char *termcli_command(const char *language)
{
    /* The same names as the rat family's (bridge/cli/family.c), which
     * `rat-r install` and the others register by default. */
    static const struct {
        const char *language, *command;
    } known[] = {{"python", "py"}, {"r", "r"}, {"julia", "ju"}, {"bash", "sh"}, {"javascript", "js"}};
    for (size_t i = 0; language && i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(language, known[i].language) == 0)
            return known[i].command;
    return "py";
}

char *termcli_answer(const char *code)
{
    size_t n = strlen(code);
    if (n && code[n - 1] == '\n')
        n--;
    if (n && code[n - 1] == '\r')
        n--;
    return xstrndup(code, n);
}

void termcli_input_hint(buf_t *b, termcli_mode_t mode, const char *cmd, long n, bool password)
{
    if (mode == TERMCLI_DAEMON && !password)
        buf_printf(b, "⏳ exec #%ld waits: answer with %s run '...' or stop it with %s ctl cancel", n, cmd, cmd);
    else if (mode == TERMCLI_DAEMON)
        buf_printf(b,
                   "⏳ exec #%ld waits for a password: answer with %s run @- (type it, Enter, then Ctrl-D: it stays "
                   "out of your shell history) or stop it with %s ctl cancel",
                   n, cmd, cmd);
    else if (!password)
        buf_printf(b,
                   "⏳ exec #%ld waits, but without `%s up` each %s command starts its own rat-py, which ends with "
                   "it: run this in a terminal to answer at the prompt, or start `%s up` first",
                   n, cmd, cmd, cmd);
    else
        buf_printf(b,
                   "⏳ exec #%ld waits for a password, which is never asked at the prompt, and without `%s up` each "
                   "%s command starts its own rat-py: start `%s up` first, then answer with %s run @-",
                   n, cmd, cmd, cmd, cmd);
}
