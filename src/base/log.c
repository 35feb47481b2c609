/* Levelled logging to stderr (base/log.h), with an in-memory ring of the
 * most recent lines for diagnostic snapshots. */
#include "base/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static _Atomic int log_level = SL_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

/* The ring holds the last SL_LOG_RING_SIZE bytes written; ring_total counts
 * every byte ever appended, so ring_total % size is the next write position.
 * A mutex is enough: a line costs one or two memcpy calls under it. */
static char ring[SL_LOG_RING_SIZE];
static uint64_t ring_total;
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;

static void ring_append(const char *text, size_t len)
{
    if (len > SL_LOG_RING_SIZE) {
        text += len - SL_LOG_RING_SIZE;
        len = SL_LOG_RING_SIZE;
    }
    pthread_mutex_lock(&ring_lock);
    size_t pos = (size_t)(ring_total % SL_LOG_RING_SIZE);
    size_t first = len < SL_LOG_RING_SIZE - pos ? len : SL_LOG_RING_SIZE - pos;
    memcpy(ring + pos, text, first);
    memcpy(ring, text + first, len - first);
    ring_total += len;
    pthread_mutex_unlock(&ring_lock);
}

/* Copies the newest `take` bytes; true when they start at a line boundary. */
static bool ring_copy_locked(char *buf, size_t take)
{
    uint64_t start = ring_total - take;
    size_t pos = (size_t)(start % SL_LOG_RING_SIZE);
    size_t first = take < SL_LOG_RING_SIZE - pos ? take : SL_LOG_RING_SIZE - pos;
    memcpy(buf, ring + pos, first);
    memcpy(buf + first, ring, take - first);
    /* The byte before start is still in the ring only when take < size. */
    if (start == 0)
        return true;
    return take < SL_LOG_RING_SIZE && ring[(start - 1) % SL_LOG_RING_SIZE] == '\n';
}

size_t sl_log_recent(char *buf, size_t len)
{
    pthread_mutex_lock(&ring_lock);
    size_t held = ring_total < SL_LOG_RING_SIZE ? (size_t)ring_total : SL_LOG_RING_SIZE;
    if (buf == NULL || len == 0) {
        pthread_mutex_unlock(&ring_lock);
        return held;
    }
    size_t take = held < len ? held : len;
    bool whole = ring_copy_locked(buf, take);
    pthread_mutex_unlock(&ring_lock);
    if (whole)
        return take;
    /* Drop the oldest line: only part of it fitted or survived. */
    const char *newline = memchr(buf, '\n', take);
    if (newline == NULL)
        return 0;
    size_t skip = (size_t)(newline - buf) + 1;
    memmove(buf, buf + skip, take - skip);
    return take - skip;
}

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
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000, level_names[level]);
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
    ring_append(text, len + 1);
}
