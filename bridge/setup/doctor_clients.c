/* doctor_clients: doctor's checks of mcptocli and mcp2cli. One way, no
 * circle: doctor.c calls these; they print through doctor_report. */
#include "doctor_clients.h"
#include "doctor_report.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fileio.h"
#include "clients.h"
#include "mem.h"
#include "yaml_block.h"

#define VERSION_TIMEOUT_MS 5000
#define VERSION_MAX 4096           /* bytes of `CLIENT version` read */
#define CACHE_MAX (8u << 20)       /* bytes of a client's metadata cache file */

extern char **environ;

static int64_t s_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* `prog version`'s "version: X" (caller owns it), or NULL. */
static char *s_version(const char *prog)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)prog, "version", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, prog, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return NULL;
    }
    buf_t out;
    buf_init(&out, VERSION_MAX);
    int64_t deadline = s_now_ms() + VERSION_TIMEOUT_MS;
    for (;;) {
        int left = (int)(deadline - s_now_ms());
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (left <= 0 || (poll(&pf, 1, left) < 0 && errno != EINTR))
            break;
        char chunk[512];
        ssize_t n = read(p[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || buf_append(&out, chunk, (size_t)n) < 0)
            break;
    }
    close(p[0]);
    int status;
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    char *v = NULL;
    const char *t = buf_str(&out), *at = strstr(t, "version: ");
    if (at && (at == t || at[-1] == '\n')) {
        at += strlen("version: ");
        v = xstrndup(at, strcspn(at, "\r\n"));
    }
    buf_free(&out);
    return v;
}

/* The registered command of NAME in a client's config (caller owns it);
 * NULL when there is none. *exists: the file exists. */
static char *s_registered(const char *client, const char *name, bool *exists)
{
    char *cfg = clients_path(client, CLIENTS_CONFIG);
    size_t len = 0;
    char *text = fileio_read(cfg, YAML_BLOCK_MAX_TEXT, &len);
    *exists = text != NULL;
    char err[256];
    yaml_block_t *y = text ? yaml_block_parse(text, len, err, sizeof err) : NULL;
    char *cmd = y ? yaml_block_scalar(y, "servers", name, "command") : NULL;
    yaml_block_destroy(&y);
    free(text);
    free(cfg);
    return cmd;
}

/* The live tool named name in a tools/list result's array, or NULL. */
static json_object *s_tool(json_object *tools, const char *name)
{
    for (size_t i = 0; tools && i < json_object_array_length(tools); i++) {
        json_object *t = json_object_array_get_idx(tools, i), *n = NULL;
        if (json_object_object_get_ex(t, "name", &n) && json_object_is_type(n, json_type_string) &&
            strcmp(json_object_get_string(n), name) == 0)
            return t;
    }
    return NULL;
}

/* Whether two inputSchemas say the same. mcptocli keeps a schema the way
 * mcp-go re-encodes it: keys sorted (JSON values compare regardless), and
 * an empty "required" (or "properties") where the server sent none. */
static bool s_same_schema(json_object *a, json_object *b)
{
    json_object *ca = NULL, *cb = NULL;
    if (json_object_deep_copy(a, &ca, NULL) < 0 || json_object_deep_copy(b, &cb, NULL) < 0) {
        json_object_put(ca);
        return false;
    }
    json_object *x[2] = {ca, cb};
    for (int i = 0; i < 2; i++) {
        json_object *v = NULL;
        if (!json_object_is_type(x[i], json_type_object))
            continue;
        if (json_object_object_get_ex(x[i], "required", &v) && json_object_is_type(v, json_type_array) &&
            json_object_array_length(v) == 0)
            json_object_object_del(x[i], "required");
        if (json_object_object_get_ex(x[i], "properties", &v) && json_object_is_type(v, json_type_object) &&
            json_object_object_length(v) == 0)
            json_object_object_del(x[i], "properties");
    }
    bool same = json_object_equal(ca, cb);
    json_object_put(ca);
    json_object_put(cb);
    return same;
}

/* Compares the client's cached tools for name with the live ones (their
 * inputSchemas: what the client builds a command's flags from). Appends
 * the names that differ to diff. Returns false when the cache cannot be
 * read (why says so). */
static bool s_compare_cache(const char *file, json_object *live, buf_t *diff, char **saved, const char **why)
{
    size_t len = 0;
    char *text = fileio_read(file, CACHE_MAX, &len);
    json_object *doc = text ? json_tokener_parse(text) : NULL, *cached = NULL, *at = NULL;
    free(text);
    if (!doc || !json_object_object_get_ex(doc, "tools", &cached) || !json_object_is_type(cached, json_type_array)) {
        *why = "it is not the clients' cache format";
        json_object_put(doc);
        return false;
    }
    if (json_object_object_get_ex(doc, "savedAt", &at) && json_object_is_type(at, json_type_string))
        *saved = xstrndup(json_object_get_string(at), 10); /* the date */
    json_object *live_tools = NULL;
    json_object_object_get_ex(live, "tools", &live_tools);
    for (size_t i = 0; live_tools && i < json_object_array_length(live_tools); i++) {
        json_object *t = json_object_array_get_idx(live_tools, i), *n = NULL, *s1 = NULL, *s2 = NULL;
        if (!json_object_object_get_ex(t, "name", &n))
            continue;
        const char *name = json_object_get_string(n);
        json_object *c = s_tool(cached, name);
        json_object_object_get_ex(t, "inputSchema", &s1);
        if (c)
            json_object_object_get_ex(c, "inputSchema", &s2);
        if (!c || !s_same_schema(s1, s2))
            buf_printf(diff, "%s%s", diff->len ? ", " : "", name);
    }
    for (size_t i = 0; i < json_object_array_length(cached); i++) {
        json_object *n = NULL;
        if (json_object_object_get_ex(json_object_array_get_idx(cached, i), "name", &n) &&
            json_object_is_type(n, json_type_string) && !s_tool(live_tools, json_object_get_string(n)))
            buf_printf(diff, "%s%s (gone)", diff->len ? ", " : "", json_object_get_string(n));
    }
    json_object_put(doc);
    return true;
}

/* Which client's command dir holds path's folder, or -1. */
static int s_client_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup(".");
    char *rdir = fileio_realpath(dir);
    int which = -1;
    for (int i = 0; i < CLIENTS_N && which < 0 && rdir; i++) {
        char *bin = clients_path(clients_names[i], CLIENTS_BIN);
        char *rbin = fileio_realpath(bin);
        if (rbin && strcmp(rbin, rdir) == 0)
            which = i;
        free(rbin);
        free(bin);
    }
    free(rdir);
    free(dir);
    return which;
}

void doctor_check_clients(const family_t *fam, const char *self, json_object *tools)
{
    const char *name = fam->short_name;
    bool installed_any = false;
    int registered = -1; /* the first client where name is registered */
    for (int i = 0; i < CLIENTS_N; i++) {
        const char *client = clients_names[i];
        bool on_path = false, exists = false;
        char *prog = clients_find(client, &on_path);
        char *cmd = s_registered(client, name, &exists);
        if (prog) {
            installed_any = true;
            char *v = s_version(prog);
            doctor_info("%s: %s, version %s%s", client, prog, v ? v : "unknown (`version` said nothing)",
                        on_path ? "" : " (not on PATH)");
            free(v);
        }
        if (cmd) {
            if (registered < 0)
                registered = i;
            bool rat = clients_command_is_rat(cmd);
            bool same = strncmp(cmd, self, strlen(self)) == 0 && strchr(" \t", cmd[strlen(self)]);
            doctor_info("%s: `%s` is registered: %s%s", client, name, cmd,
                        !rat    ? " (another program: `rat-py install` refuses to replace it)"
                        : !same ? " (another rat-py than this one; `rat-py install` re-registers)"
                                : "");
            if (!prog)
                doctor_info("%s: not installed: `%s` works once it is (github.com/MaximeRivest/mcp2cli)", client,
                            name);
        } else if (prog || exists) {
            char *cfg = clients_path(client, CLIENTS_CONFIG);
            doctor_info("%s: `%s` is not registered%s%s; `%s install` registers it", client, name,
                        exists ? " in " : "", exists ? cfg : "", fam->prog);
            free(cfg);
        }
        long pid = clients_daemon_pid(client, name);
        if (pid)
            doctor_info("%s: `%s up` is running (pid %ld): after upgrading rat-py, restart it (%s down; %s up)",
                        client, name, pid, name, name);
        char *cache = clients_cache_file(client, name);
        if (fileio_is_file(cache)) {
            buf_t diff;
            buf_init(&diff, 0);
            char *saved = NULL;
            const char *why = NULL;
            char *fix = xasprintf("%s %s tools (it asks rat-py again), or delete %s", client, name, cache);
            if (!tools)
                doctor_info("%s: the tool schemas it cached for `%s` are not compared: the server did not answer",
                            client, name);
            else if (!s_compare_cache(cache, tools, &diff, &saved, &why))
                doctor_bad(fix, "%s: its cached tool schemas for `%s` (%s) cannot be read: %s", client, name, cache,
                           why);
            else if (diff.len)
                doctor_bad(fix,
                           "%s: the tool schemas it cached for `%s`%s%s are not this rat-py's (%s differ): its calls "
                           "use them without asking rat-py",
                           client, name, saved ? " on " : "", saved ? saved : "", buf_str(&diff));
            else
                doctor_ok("%s: the tool schemas it cached for `%s` are this rat-py's", client, name);
            free(fix);
            free(saved);
            buf_free(&diff);
        }
        free(cache);
        free(cmd);
        free(prog);
    }
    if (!installed_any && registered < 0) {
        doctor_info("mcptocli, mcp2cli: not installed (optional: either turns %s into the `%s` command; "
                    "mcptocli is mcp2cli's current name)",
                    fam->prog, name);
        return;
    }
    if (registered < 0)
        return;
    /* The command itself, as the shell finds it. */
    char *found = fileio_which(name);
    char *bin = clients_path(clients_names[registered], CLIENTS_BIN);
    int owner = found ? s_client_of(found) : -1;
    if (owner >= 0) {
        char target[4096];
        ssize_t n = readlink(found, target, sizeof target - 1);
        if (n > 0)
            target[n] = '\0';
        doctor_ok("`%s` on PATH: %s -> %s", name, found, n > 0 ? target : clients_names[owner]);
    } else if (found) {
        char *fix = xasprintf("put %s before it in PATH, or register another name: %s install --name NAME", bin,
                              fam->prog);
        doctor_bad(fix, "`%s` on PATH is %s, not a command of mcptocli or mcp2cli", name, found);
        free(fix);
    } else {
        char *fix = xasprintf("echo 'export PATH=\"%s:$PATH\"' >> ~/.bashrc && . ~/.bashrc", bin);
        doctor_bad(fix, "`%s` is registered but not on PATH", name);
        free(fix);
    }
    free(bin);
    free(found);
}
