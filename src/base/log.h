/* Levelled logging to stderr: one line per call, with wall time and level.
 * The level is process-wide; set it once at start-up. The last
 * SL_LOG_RING_SIZE bytes of written lines are also kept in memory, so a
 * diagnostic snapshot can include them without a log file. */
#ifndef SL_BASE_LOG_H
#define SL_BASE_LOG_H

#include <stddef.h>

typedef enum sl_log_level {
    SL_LOG_ERROR = 0,
    SL_LOG_WARN = 1,
    SL_LOG_INFO = 2,
    SL_LOG_DEBUG = 3,
    SL_LOG_TRACE = 4,
} sl_log_level_t;

void sl_log_set_level(sl_log_level_t level);
sl_log_level_t sl_log_get_level(void);
/* Parses "error", "warn", "info", "debug" or "trace"; -1 when unknown. */
int sl_log_parse_level(const char *text);
/* Bytes of recent log lines kept in memory (base/log.c). */
#define SL_LOG_RING_SIZE (256u * 1024u)

/* Copies the newest whole log lines that fit in len bytes into buf, oldest
 * first, each ending in '\n'; no terminator is added. Returns the bytes
 * written. With buf NULL (or len 0) it returns the bytes currently held, at
 * most SL_LOG_RING_SIZE. Safe from any thread. */
size_t sl_log_recent(char *buf, size_t len);

void sl_log_write(sl_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define sl_log(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= sl_log_get_level())                                                         \
            sl_log_write((level), __FILE__, __LINE__, __VA_ARGS__);                                \
    } while (0)

#define sl_log_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)
#define sl_log_warn(...) sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_log_info(...) sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_log_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)
#define sl_log_trace(...) sl_log(SL_LOG_TRACE, __VA_ARGS__)

#endif
