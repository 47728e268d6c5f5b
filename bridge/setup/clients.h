/* clients: the terminal clients that turn rat-py into the `py` command,
 * mcptocli and mcp2cli (its name before; github.com/MaximeRivest/mcp2cli),
 * and where each keeps things: its config, its exposed commands, its cache
 * of tool schemas, the pid files of `NAME up`. Both follow the XDG base
 * directories (adrg/xdg: a variable counts only when it is absolute). */
#ifndef RAT_CLIENTS_H
#define RAT_CLIENTS_H

#include <stdbool.h>

#include "family.h"

#define CLIENTS_N 2
/* The clients, the current name first: "mcptocli", "mcp2cli". */
extern const char *const clients_names[CLIENTS_N];

typedef enum {
    CLIENTS_CONFIG,      /* ${XDG_CONFIG_HOME:-~/.config}/CLIENT/config.yaml */
    CLIENTS_BIN,         /* ${XDG_DATA_HOME:-~/.local/share}/CLIENT/bin: the exposed commands */
    CLIENTS_CACHE,       /* ${XDG_CACHE_HOME:-~/.cache}/CLIENT/metadata: cached tool schemas */
    CLIENTS_DAEMONS,     /* ${XDG_DATA_HOME:-~/.local/share}/CLIENT/daemons: `up`'s pid files */
} clients_path_t;

/* A client's file or folder. Caller owns it. */
char *clients_path(const char *client, clients_path_t which);
/* The file where client caches the metadata of server NAME (its key: the
 * first 12 bytes of SHA-256(NAME) in hex; internal/cache/metadata.go).
 * Caller owns it. */
char *clients_cache_file(const char *client, const char *name);
/* The client's program: on PATH (*on_path set), else in the folders `go
 * install` and install scripts use. Caller owns it; NULL when not found. */
char *clients_find(const char *client, bool *on_path);
/* Whether a registered command line runs a rat-py program (its first word
 * is rat-py, rat-r, ... or this very program). */
bool clients_command_is_rat(const char *command);
/* The pid the client's pid file for `NAME up` names (unchecked: anything
 * running as the user can write it, and the pid may be reused), or 0. */
long clients_daemon_pidfile(const char *client, const char *name);
/* Whether pid is the client's `NAME up` process, as far as a process
 * rat-py did not start can be proven (doc/security.md "What `rat-py
 * uninstall` may signal"): it runs as this user (euid), its argv is
 * `__daemon NAME` (or `__daemon-shared NAME`) after the program, and its
 * executable is the client's program (clients_find; dev and inode, or that
 * path deleted since). When not, why says which does not hold (empty when
 * pid is gone). */
bool clients_daemon_is(const char *client, const char *name, long pid, char *why, size_t whylen);
/* The pid of the client's `NAME up` process, or 0 when it is not running
 * (a stale pid file, or a pid reused by another process, is not). */
long clients_daemon_pid(const char *client, const char *name);

#endif
