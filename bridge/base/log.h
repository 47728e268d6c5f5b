/* log: leveled diagnostics on stderr.
 *
 * stdout is the MCP channel in stdio mode, so diagnostics only ever go to
 * stderr (or a file given with log_set_file). Lines look like
 *   2026-01-02T03:04:05.678Z WARN  [kernel] heartbeat missed pid=123
 * Each .c file defines LOG_MODULE before including this header. */
#ifndef RAT_LOG_H
#define RAT_LOG_H

#include <stdbool.h>

typedef enum { LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN, LOG_LEVEL_ERROR, LOG_LEVEL_OFF } log_level_t;

void log_set_level(log_level_t level);
/* Parses "debug", "info", "warn"/"warning", "error", "off". Returns -1 if unknown. */
int log_level_parse(const char *name);
bool log_enabled(log_level_t level);
void log_write(log_level_t level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifndef LOG_MODULE
#define LOG_MODULE "rat"
#endif
#define log_debug(...) do { if (log_enabled(LOG_LEVEL_DEBUG)) log_write(LOG_LEVEL_DEBUG, LOG_MODULE, __VA_ARGS__); } while (0)
#define log_info(...)  do { if (log_enabled(LOG_LEVEL_INFO))  log_write(LOG_LEVEL_INFO, LOG_MODULE, __VA_ARGS__); } while (0)
#define log_warn(...)  do { if (log_enabled(LOG_LEVEL_WARN))  log_write(LOG_LEVEL_WARN, LOG_MODULE, __VA_ARGS__); } while (0)
#define log_error(...) do { if (log_enabled(LOG_LEVEL_ERROR)) log_write(LOG_LEVEL_ERROR, LOG_MODULE, __VA_ARGS__); } while (0)

#endif
