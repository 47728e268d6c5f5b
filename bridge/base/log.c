/* log: leveled diagnostics on stderr. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

static log_level_t s_level = LOG_LEVEL_WARN;

void log_set_level(log_level_t level)
{
    s_level = level;
}

int log_level_parse(const char *name)
{
    static const struct { const char *name; log_level_t level; } names[] = {
        {"debug", LOG_LEVEL_DEBUG}, {"info", LOG_LEVEL_INFO}, {"warn", LOG_LEVEL_WARN},
        {"warning", LOG_LEVEL_WARN}, {"error", LOG_LEVEL_ERROR}, {"off", LOG_LEVEL_OFF},
    };
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(name, names[i].name) == 0)
            return (int)names[i].level;
    return -1;
}

bool log_enabled(log_level_t level)
{
    return level >= s_level && level != LOG_LEVEL_OFF;
}

void log_write(log_level_t level, const char *module, const char *fmt, ...)
{
    static const char *tags[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
    char line[2048];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %s [%s] ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (int)(tv.tv_usec / 1000), tags[level], module);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fputs per line so concurrent writers (the kernel shares no stderr
     * with us, but other tools might) never interleave mid-line. */
    size_t len = strlen(line);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len] = '\n';
    line[len + 1] = '\0';
    fputs(line, stderr);
}
