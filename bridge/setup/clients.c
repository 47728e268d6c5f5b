/* clients: where mcptocli and mcp2cli keep things (clients.h). */
#include "clients.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sodium.h>

#include "buf.h"
#include "fileio.h"
#include "jpaths.h"
#include "mem.h"

const char *const clients_names[CLIENTS_N] = {"mcptocli", "mcp2cli"};

static char *s_xdg(const char *var, const char *fallback)
{
    const char *v = getenv(var);
    if (v && v[0] == '/')
        return xstrdup(v);
    return xasprintf("%s/%s", jpaths_home(), fallback);
}

char *clients_path(const char *client, clients_path_t which)
{
    static const struct {
        const char *var, *fallback, *leaf;
    } p[] = {
        [CLIENTS_CONFIG] = {"XDG_CONFIG_HOME", ".config", "config.yaml"},
        [CLIENTS_BIN] = {"XDG_DATA_HOME", ".local/share", "bin"},
        [CLIENTS_CACHE] = {"XDG_CACHE_HOME", ".cache", "metadata"},
        [CLIENTS_DAEMONS] = {"XDG_DATA_HOME", ".local/share", "daemons"},
    };
    char *base = s_xdg(p[which].var, p[which].fallback);
    char *out = xasprintf("%s/%s/%s", base, client, p[which].leaf);
    free(base);
    return out;
}

char *clients_cache_file(const char *client, const char *name)
{
    /* Both clients' cacheKey: hex of the first 12 bytes of SHA-256(name). */
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(h, (const unsigned char *)name, strlen(name));
    char hex[2 * 12 + 1];
    sodium_bin2hex(hex, sizeof hex, h, 12);
    char *dir = clients_path(client, CLIENTS_CACHE);
    char *out = xasprintf("%s/%s.json", dir, hex);
    free(dir);
    return out;
}

char *clients_find(const char *client, bool *on_path)
{
    *on_path = false;
    char *found = fileio_which(client);
    if (found) {
        *on_path = true;
        return found;
    }
    /* Installed off PATH: `go install` (GOBIN, GOPATH/bin, ~/go/bin), and
     * the folders install scripts use. */
    const char *home = jpaths_home();
    char *cands[5];
    size_t n = 0;
    if (getenv("GOBIN") && *getenv("GOBIN"))
        cands[n++] = xasprintf("%s/%s", getenv("GOBIN"), client);
    if (getenv("GOPATH") && *getenv("GOPATH")) {
        const char *gp = getenv("GOPATH");
        const char *colon = strchr(gp, ':');
        cands[n++] = xasprintf("%.*s/bin/%s", (int)(colon ? colon - gp : (long)strlen(gp)), gp, client);
    }
    cands[n++] = xasprintf("%s/go/bin/%s", home, client);
    cands[n++] = xasprintf("%s/.local/bin/%s", home, client);
    cands[n++] = xasprintf("/usr/local/bin/%s", client);
    for (size_t i = 0; i < n; i++) {
        if (!found && fileio_is_executable(cands[i]))
            found = xstrdup(cands[i]);
        free(cands[i]);
    }
    return found;
}

bool clients_command_is_rat(const char *command)
{
    /* The first word, as go-shellquote (mcp2cli) or a split on spaces
     * (mcptocli's `up`) reads it: plain, or in single or double quotes. */
    const char *p = command + strspn(command, " \t");
    buf_t w;
    buf_init(&w, 4096);
    char quote = 0;
    for (; *p && (quote || !strchr(" \t", *p)); p++) {
        if (!quote && (*p == '\'' || *p == '"'))
            quote = *p;
        else if (quote && *p == quote)
            quote = 0;
        else if (!quote && *p == '\\' && p[1])
            buf_putc(&w, *++p);
        else
            buf_putc(&w, *p);
    }
    const char *word = buf_str(&w);
    const char *base = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
    bool rat = *base && family_is_prog(base);
    if (!rat && *word) {
        char *a = fileio_realpath(word), *b = fileio_realpath("/proc/self/exe");
        rat = a && b && strcmp(a, b) == 0;
        free(a);
        free(b);
    }
    buf_free(&w);
    return rat;
}

long clients_daemon_pidfile(const char *client, const char *name)
{
    char *dir = clients_path(client, CLIENTS_DAEMONS);
    char *pidfile = xasprintf("%s/%s.pid", dir, name);
    free(dir);
    size_t len = 0;
    char *text = fileio_read(pidfile, 64, &len);
    free(pidfile);
    char *end = NULL;
    long pid = text ? strtol(text, &end, 10) : 0;
    bool ok = text && end != text && pid > 1 && pid <= INT_MAX && (*end == '\0' || *end == '\n');
    free(text);
    return ok ? pid : 0;
}

bool clients_daemon_is(const char *client, const char *name, long pid, char *why, size_t whylen)
{
    if (whylen)
        why[0] = '\0';
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%ld", pid);
    if (pid <= 1 || stat(path, &sb) < 0)
        return false; /* gone: nothing to say */
    /* Its owner: the pid file is the user's, so is the process (root
     * running uninstall signals none of another user's processes). */
    if (sb.st_uid != geteuid()) {
        snprintf(why, whylen, "it runs as uid %lu, not as you", (unsigned long)sb.st_uid);
        return false;
    }
    /* Its argv: `CLIENT __daemon NAME ...` (or `__daemon-shared NAME`). */
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    size_t len = 0;
    char *cmdline = fileio_read(path, 65536, &len);
    bool argv_ok = false;
    if (cmdline) {
        const char *arg1 = memchr(cmdline, '\0', len) ? cmdline + strlen(cmdline) + 1 : NULL;
        const char *arg2 = arg1 && arg1 < cmdline + len ? arg1 + strlen(arg1) + 1 : NULL;
        argv_ok = arg2 && arg2 < cmdline + len && strncmp(arg1, "__daemon", 8) == 0 && strcmp(arg2, name) == 0;
    }
    free(cmdline);
    if (!argv_ok) {
        snprintf(why, whylen, "its arguments are not %s's `__daemon %s`", client, name);
        return false;
    }
    /* Its executable: the client's program (st_dev and st_ino, as
     * start-stop-daemon --exec proves a pidfile's process), or that file
     * replaced on disk since `up` started (a client upgraded in place):
     * /proc/PID/exe then reads "PROGRAM (deleted)". */
    bool on_path = false;
    char *prog = clients_find(client, &on_path);
    char *real = prog ? fileio_realpath(prog) : NULL;
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    struct stat pe, ce;
    bool exe_ok = real && stat(path, &pe) == 0 && stat(real, &ce) == 0 && pe.st_dev == ce.st_dev &&
                  pe.st_ino == ce.st_ino;
    char exe[4096];
    ssize_t n = readlink(path, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (!exe_ok && real && n > 0) {
        char *deleted = xasprintf("%s (deleted)", real);
        exe_ok = strcmp(exe, deleted) == 0;
        free(deleted);
    }
    if (!exe_ok)
        snprintf(why, whylen, "it runs %s, not %s (%s)", n > 0 ? exe : "a program that cannot be read", client,
                 real ? real : "not found");
    free(real);
    free(prog);
    return exe_ok;
}

long clients_daemon_pid(const char *client, const char *name)
{
    long pid = clients_daemon_pidfile(client, name);
    char why[8];
    return pid && clients_daemon_is(client, name, pid, why, sizeof why) ? pid : 0;
}

