/* Levelled logging to stderr: one line per call, with wall time and level.
 * The level is process-wide; set it once at start-up. The last
 * SL_LOG_RING_SIZE bytes of written lines are also kept in memory, so a
 * diagnostic snapshot can include them without a log file, and a sink may
 * see each written line as a record (the server's telemetry exports them;
 * base knows nothing of what it does with them). */
#ifndef SL_BASE_LOG_H
#define SL_BASE_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A sink sees every line that is written (after the rate limit), besides
 * stderr and the ring: the server's telemetry exports them. The record
 * borrows the caller's buffer and is valid only during the call. */
typedef struct sl_log_record {
    sl_log_level_t level;
    uint64_t unix_ns;    /* wall time of the line */
    const char *file;    /* __FILE__ of the call site (a static string) */
    int line;            /* 0 when the line has no call site */
    const char *message; /* the formatted text: no time, level or location */
    size_t message_len;
} sl_log_record_t;

/* The sink is called on the thread that logs, possibly several at once, so
 * it must be thread-safe and must not block; a line it logs itself is not
 * handed back to it (no recursion). */
typedef struct sl_log_sink {
    void (*fn)(void *ctx, const sl_log_record_t *record);
    void *ctx;
} sl_log_sink_t;

/* Installs sink (NULL: none). The sink must stay valid until it is replaced;
 * replace it only while no other thread logs (start-up, or after every other
 * thread has stopped). */
void sl_log_set_sink(const sl_log_sink_t *sink);

/* Writes one line, always (no rate limit): for tests and start-up. */
void sl_log_write(sl_log_level_t level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Rate limit per call site. A client that can make the server log a line
 * (a refused login, a full queue, an eviction) must not be able to fill the
 * log disk, so once sl_log_limit_set has turned it on (the server does it
 * when it starts serving, so boot diagnostics are never cut) every sl_log_*
 * call site writes at most `burst` lines per window and counts the rest; the
 * count is written as one line per site and window ("N more lines like ...
 * suppressed"), by the site's next line or by sl_log_tick, whichever comes
 * first. The total rate is therefore bounded by the number of call sites,
 * not by what clients send. The defaults of the server's settings: */
#define SL_LOG_SITE_BURST     10u
#define SL_LOG_SITE_WINDOW_US (10u * 1000000u)

/* One per call site (a static the sl_log macro declares); zero-initialised.
 * Fields are touched under the log's site lock only. */
typedef struct sl_log_site {
    uint64_t window_start_us;
    uint32_t written;    /* lines written in the current window */
    uint64_t suppressed; /* lines dropped in the current window */
    const char *fmt;     /* for the summary line */
    const char *file;
    int line;
    sl_log_level_t level;
    bool pending; /* on the list sl_log_tick walks */
    struct sl_log_site *next_pending;
} sl_log_site_t;

void sl_log_write_site(sl_log_site_t *site, sl_log_level_t level, const char *file, int line,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Turns the per-site limit on with burst lines per window_us (> 0), or off
 * with burst 0 (off at start). */
void sl_log_limit_set(uint32_t burst, uint64_t window_us);
/* Writes the summary line of every site whose window has ended with lines
 * suppressed. Call it periodically (the server's tick). */
void sl_log_tick(void);
/* Tests: the clock the limit reads (NULL: the monotonic clock). */
void sl_log_set_clock(uint64_t (*now_us)(void));

#define sl_log(level, ...)                                                                         \
    do {                                                                                           \
        if ((level) <= sl_log_get_level()) {                                                       \
            static sl_log_site_t sl_log_site_;                                                     \
            sl_log_write_site(&sl_log_site_, (level), __FILE__, __LINE__, __VA_ARGS__);            \
        }                                                                                          \
    } while (0)

#define sl_log_error(...) sl_log(SL_LOG_ERROR, __VA_ARGS__)
#define sl_log_warn(...)  sl_log(SL_LOG_WARN, __VA_ARGS__)
#define sl_log_info(...)  sl_log(SL_LOG_INFO, __VA_ARGS__)
#define sl_log_debug(...) sl_log(SL_LOG_DEBUG, __VA_ARGS__)
#define sl_log_trace(...) sl_log(SL_LOG_TRACE, __VA_ARGS__)

#endif
