/* Levelled logging to stderr (base/log.h). */
#include "base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic int log_level = SL_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void sl_log_set_level(sl_log_level_t level)
{
    atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

sl_log_level_t sl_log_get_level(void)
{
    return (sl_log_level_t)atomic_load_explicit(&log_level, memory_order_relaxed);
}

int sl_log_parse_level(const char *text)
{
    for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
        if (strcmp(text, level_names[i]) == 0)
            return i;
    return -1;
}

void sl_log_write(sl_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char text[1024];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000, level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(text))
        n += vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
    va_end(ap);
    if (level <= SL_LOG_WARN || level >= SL_LOG_DEBUG) {
        const char *base = strrchr(file, '/');
        if (n > 0 && (size_t)n < sizeof(text))
            snprintf(text + n, sizeof(text) - (size_t)n, " (%s:%d)", base ? base + 1 : file, line);
    } else {
        (void)file;
        (void)line;
    }
    /* One fputs per line keeps lines whole across threads. */
    size_t len = strnlen(text, sizeof(text) - 2);
    text[len] = '\n';
    text[len + 1] = '\0';
    fputs(text, stderr);
}
