/* Levelled logging to stderr (base/log.h), with an in-memory ring of the
 * most recent lines for diagnostic snapshots. */
#include "base/log.h"

#include "base/clock.h"

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

/* Formats one line ("<time> <level> <message>[ (file:line)]\n") into text
 * (cap >= 3) and returns its length, newline included. */
__attribute__((format(printf, 6, 0))) static size_t format_line(char *text, size_t cap,
                                                                sl_log_level_t level,
                                                                const char *file, int line,
                                                                const char *fmt, va_list ap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(text, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ %-5s ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
                     level_names[level]);
    if (n > 0 && (size_t)n < cap)
        n += vsnprintf(text + n, cap - (size_t)n, fmt, ap);
    if (level <= SL_LOG_WARN || level >= SL_LOG_DEBUG) {
        const char *base = strrchr(file, '/');
        if (n > 0 && (size_t)n < cap)
            snprintf(text + n, cap - (size_t)n, " (%s:%d)", base ? base + 1 : file, line);
    }
    size_t len = strnlen(text, cap - 2);
    text[len] = '\n';
    text[len + 1] = '\0';
    return len + 1;
}

static void emit(const char *text, size_t len)
{
    /* One fputs per line keeps lines whole across threads. */
    fputs(text, stderr);
    ring_append(text, len);
}

void sl_log_write(sl_log_level_t level, const char *file, int line, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(text, sizeof(text), level, file, line, fmt, ap);
    va_end(ap);
    emit(text, len);
}

/* --- the per-site limit ------------------------------------------------------ */

static _Atomic uint32_t limit_burst; /* 0: off */
static _Atomic uint64_t limit_window_us = SL_LOG_SITE_WINDOW_US;
static uint64_t (*_Atomic limit_clock)(void);
/* Guards every site's fields and the pending list; never held while a line
 * is written (emit takes ring_lock). */
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static sl_log_site_t *pending_head;

void sl_log_limit_set(uint32_t burst, uint64_t window_us)
{
    atomic_store(&limit_window_us, window_us ? window_us : SL_LOG_SITE_WINDOW_US);
    atomic_store(&limit_burst, burst);
}

void sl_log_set_clock(uint64_t (*now_us)(void))
{
    atomic_store(&limit_clock, now_us);
}

static uint64_t limit_now_us(void)
{
    uint64_t (*clock)(void) = atomic_load(&limit_clock);
    return clock ? clock() : sl_clock_monotonic_us();
}

/* What a site owes the log: the count of its window, taken and cleared. */
typedef struct {
    uint64_t count;
    sl_log_level_t level;
    const char *fmt, *file;
    int line;
} owed_t;

static owed_t site_take_owed_locked(sl_log_site_t *site)
{
    owed_t o = {site->suppressed, site->level, site->fmt, site->file, site->line};
    site->suppressed = 0;
    return o;
}

static void write_owed(const owed_t *o)
{
    if (o->count == 0)
        return;
    sl_log_write(o->level, o->file, o->line, "%llu more lines like \"%.200s\" suppressed in %llu s",
                 (unsigned long long)o->count, o->fmt,
                 (unsigned long long)(atomic_load(&limit_window_us) / 1000000u));
}

/* Decides under the lock whether this line is written; a window that ended
 * with lines suppressed hands its count back to be written first. */
static bool site_admit(sl_log_site_t *site, uint32_t burst, sl_log_level_t level, const char *file,
                       int line, const char *fmt, owed_t *owed)
{
    uint64_t now = limit_now_us();
    uint64_t window = atomic_load(&limit_window_us);
    pthread_mutex_lock(&site_lock);
    if (site->written == 0 && site->suppressed == 0)
        site->window_start_us = now;
    if (now - site->window_start_us >= window) {
        *owed = site_take_owed_locked(site);
        site->window_start_us = now;
        site->written = 0;
    }
    bool write = site->written < burst;
    if (write) {
        site->written++;
    } else {
        site->suppressed++;
        site->level = level;
        site->fmt = fmt;
        site->file = file;
        site->line = line;
        if (!site->pending) {
            site->pending = true;
            site->next_pending = pending_head;
            pending_head = site;
        }
    }
    pthread_mutex_unlock(&site_lock);
    return write;
}

void sl_log_write_site(sl_log_site_t *site, sl_log_level_t level, const char *file, int line,
                       const char *fmt, ...)
{
    owed_t owed = {0};
    uint32_t burst = atomic_load_explicit(&limit_burst, memory_order_relaxed);
    if (burst > 0 && !site_admit(site, burst, level, file, line, fmt, &owed))
        return;
    write_owed(&owed);
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(text, sizeof(text), level, file, line, fmt, ap);
    va_end(ap);
    emit(text, len);
}

/* Sites whose window is over: their counts, written after the lock is let go.
 * Bounded by the number of call sites in the program. */
#define TICK_OWED_MAX 64

void sl_log_tick(void)
{
    owed_t owed[TICK_OWED_MAX];
    size_t n = 0;
    uint64_t now = limit_now_us();
    uint64_t window = atomic_load(&limit_window_us);
    pthread_mutex_lock(&site_lock);
    sl_log_site_t **link = &pending_head;
    while (*link && n < TICK_OWED_MAX) {
        sl_log_site_t *site = *link;
        if (now - site->window_start_us < window) {
            link = &site->next_pending;
            continue;
        }
        owed[n++] = site_take_owed_locked(site);
        site->written = 0;
        site->window_start_us = now;
        site->pending = false;
        *link = site->next_pending;
        site->next_pending = NULL;
    }
    pthread_mutex_unlock(&site_lock);
    for (size_t i = 0; i < n; i++)
        write_owed(&owed[i]);
}
