/* mgr_proc: whether a pid is the server `rat` started (see mgr_proc.h). */
#include "mgr_proc.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fileio.h"

/* Whether /proc/PID/cmdline has the two arguments "--port" "N" (or
 * "--port=N"): the process is the server the entry names (a pid reused by
 * another program is not). False when it cannot be read: what cannot be
 * checked is not the server. */
static bool s_is_server(long pid, long port)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    size_t len = 0;
    char *cmd = fileio_read(path, 1u << 16, &len);
    if (!cmd)
        return false;
    char want[32], joined[48];
    snprintf(want, sizeof want, "%ld", port);
    snprintf(joined, sizeof joined, "--port=%ld", port);
    bool found = false;
    for (size_t i = 0; i < len && !found;) {
        const char *a = cmd + i;
        size_t n = strnlen(a, len - i);
        if (n < len - i && strcmp(a, joined) == 0)
            found = true;
        else if (n < len - i && strcmp(a, "--port") == 0 && i + n + 1 < len &&
                 strnlen(cmd + i + n + 1, len - i - n - 1) < len - i - n - 1 && strcmp(cmd + i + n + 1, want) == 0)
            found = true;
        i += n + 1;
    }
    free(cmd);
    return found;
}

int mgr_proc_id(long pid, mgr_proc_id_t *out)
{
    memset(out, 0, sizeof *out);
    if (pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    size_t len = 0;
    char *stat_text = fileio_read(path, 4096, &len);
    if (!stat_text)
        return -1;
    /* "PID (COMM) STATE ...": COMM may hold spaces and ')', so the fields
     * are counted from the last ')'; STATE is field 3, starttime field 22. */
    char *p = NULL;
    for (size_t i = len; i > 0 && !p; i--)
        if (stat_text[i - 1] == ')')
            p = stat_text + i;
    unsigned long long start = 0;
    int field = 2;
    while (p && p < stat_text + len && field < 22) {
        while (p < stat_text + len && *p == ' ')
            p++;
        field++;
        if (field == 22) {
            char *end = NULL;
            errno = 0;
            start = strtoull(p, &end, 10);
            if (errno || end == p)
                start = 0;
            break;
        }
        while (p < stat_text + len && *p != ' ')
            p++;
    }
    free(stat_text);
    if (!start) {
        errno = EINVAL;
        return -1;
    }
    snprintf(path, sizeof path, "/proc/%ld/exe", pid);
    struct stat sb;
    if (stat(path, &sb) < 0)
        return -1;
    out->start = start;
    out->dev = (unsigned long long)sb.st_dev;
    out->ino = (unsigned long long)sb.st_ino;
    return 0;
}

mgr_proc_t mgr_proc_check(long pid, long port, const mgr_proc_id_t *recorded, char *why, size_t whylen)
{
    char scratch[8];
    if (!why) {
        why = scratch;
        whylen = sizeof scratch;
    }
    if (whylen)
        why[0] = '\0';
    if (pid <= 0)
        return MGR_PROC_GONE;
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return MGR_PROC_GONE;
    if (recorded->start) {
        mgr_proc_id_t now;
        if (mgr_proc_id(pid, &now) < 0) {
            if (errno != ENOENT && errno != ESRCH)
                snprintf(why, whylen, "PID %ld cannot be checked (%s): not a process of yours, so not its server",
                         pid, strerror(errno));
            return MGR_PROC_GONE;
        }
        if (now.start != recorded->start || now.dev != recorded->dev || now.ino != recorded->ino) {
            snprintf(why, whylen, "PID %ld is another process now (%s differs from the one rat started)", pid,
                     now.start != recorded->start ? "its start time" : "its executable");
            return MGR_PROC_GONE;
        }
        if (port > 0 && !s_is_server(pid, port)) {
            snprintf(why, whylen, "PID %ld does not serve port %ld", pid, port);
            return MGR_PROC_GONE;
        }
        return MGR_PROC_PROVEN;
    }
    if (port <= 0) {
        snprintf(why, whylen, "PID %ld is named with no port and no identity: nothing shows it is its server",
                 pid);
        return MGR_PROC_GONE;
    }
    if (!s_is_server(pid, port)) {
        snprintf(why, whylen, "PID %ld is not a server on port %ld", pid, port);
        return MGR_PROC_GONE;
    }
    snprintf(why, whylen, "its entry records no identity for PID %ld (it was written by the Go rat CLI or an "
                          "older rat-py), so nothing proves that process is its server", pid);
    return MGR_PROC_UNPROVEN;
}
