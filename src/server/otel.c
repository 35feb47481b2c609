/* OpenTelemetry export (server/otel.h): the two bounded queues, the
 * sampling and span marks on the loop thread, the log sink, and the
 * exporter thread that drains the queues into OTLP requests. */
#include "server/otel.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sluice/error.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/metrics.h"
#include "server/otel_export.h"
#include "wire/command.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.1.0"
#endif

/* A producer that loses this many races for a slot in a row counts its
 * record as dropped rather than spin on. */
#define QUEUE_CLAIM_TRIES 64
/* The exporter logs what was dropped at most this often. */
#define DROP_REPORT_INTERVAL_US (10u * 1000000u)

/* --- the bounded queue: many producers, one consumer ------------------------------------ */

/* Each slot carries a sequence number: pos when free for the producer that
 * claims position pos, pos + 1 once that producer published it, pos + size
 * after the consumer took it (free for the next lap). Producers claim a
 * position with one compare-and-swap on head; nobody ever waits on a lock. */
typedef struct otel_queue {
    alignas(64) _Atomic uint64_t head; /* next position to claim */
    alignas(64) uint64_t tail;         /* next position to take: the exporter's */
    alignas(64) _Atomic uint64_t dropped;
    uint32_t mask;
    size_t slot_size;
    _Atomic uint64_t *seq;
    uint8_t *slots;
} otel_queue_t;

static int queue_init(otel_queue_t *q, uint32_t slots, size_t slot_size)
{
    q->mask = slots - 1;
    q->slot_size = slot_size;
    q->seq = calloc(slots, sizeof(*q->seq));
    /* calloc: pages are touched only as slots are first used. */
    q->slots = calloc(slots, slot_size);
    if (!q->seq || !q->slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < slots; i++)
        atomic_init(&q->seq[i], i);
    return 0;
}

static void queue_free(otel_queue_t *q)
{
    free(q->seq);
    free(q->slots);
}

/* A free slot for the caller to fill and publish, or NULL (full). */
static void *queue_claim(otel_queue_t *q, uint64_t *pos_out)
{
    uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    for (int tries = 0; tries < QUEUE_CLAIM_TRIES; tries++) {
        uint64_t seq = atomic_load_explicit(&q->seq[pos & q->mask], memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff < 0)
            break; /* the slot still holds a record of the last lap: full */
        if (diff > 0) {
            pos = atomic_load_explicit(&q->head, memory_order_relaxed);
            continue;
        }
        if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *pos_out = pos;
            return q->slots + (size_t)(pos & q->mask) * q->slot_size;
        }
    }
    atomic_fetch_add_explicit(&q->dropped, 1, memory_order_relaxed);
    return NULL;
}

static void queue_publish(otel_queue_t *q, uint64_t pos)
{
    atomic_store_explicit(&q->seq[pos & q->mask], pos + 1, memory_order_release);
}

/* Copies up to max records into out; returns how many. Exporter thread. */
static size_t queue_take(otel_queue_t *q, void *out, size_t max)
{
    size_t n = 0;
    for (; n < max; n++) {
        uint64_t pos = q->tail;
        _Atomic uint64_t *seq = &q->seq[pos & q->mask];
        if (atomic_load_explicit(seq, memory_order_acquire) != pos + 1)
            break; /* empty, or the next record is still being written */
        memcpy((uint8_t *)out + n * q->slot_size, q->slots + (size_t)(pos & q->mask) * q->slot_size,
               q->slot_size);
        atomic_store_explicit(seq, pos + q->mask + 1, memory_order_release);
        q->tail = pos + 1;
    }
    return n;
}

/* --- the state --------------------------------------------------------------------------- */

typedef struct signal_state {
    const char *name; /* "logs", "traces" */
    sl_otel_sender_t *sender;
    bool failing;            /* the last export failed (logged once per run of failures) */
    uint64_t failures_since; /* exports failed in the current run */
    _Atomic uint64_t exported;
    _Atomic uint64_t dropped_failed;
    _Atomic uint64_t export_failures;
    uint64_t reported_full, reported_failed; /* drop counts last logged */
} signal_state_t;

struct sl_otel {
    otel_queue_t logs;
    otel_queue_t spans;
    signal_state_t signals[2];
    sl_log_sink_t sink;
    sl_otel_resource_t resource;
    char service_name[SL_OTEL_SERVICE_NAME_CAPACITY];
    int wake_fd; /* eventfd: a queue gathered a batch, or stop */
    pthread_t thread;
    bool thread_started;
    _Atomic bool stop;
    _Atomic bool hold; /* test hook: export nothing */
    /* Loop thread: the sampling decision and trace ids. */
    uint64_t sample_state;
    uint64_t sample_threshold; /* a draw below it is sampled */
    bool sample_all;
    /* Loop thread: the last journal write measured (sl_otel_journal_*). */
    uint64_t journal_begin_ns, journal_end_ns, journal_fsync_ns, journal_sync_mark;
    /* Exporter thread. */
    uint64_t id_state;
    uint64_t last_drop_report_us;
    sl_otel_log_t *log_batch;
    sl_otel_span_t *span_batch;
    sl_buf_t body;
};

static _Thread_local uint64_t thread_sync_ns;

void sl_otel_note_sync(uint64_t ns)
{
    thread_sync_ns += ns;
}

static uint64_t wall_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wake_exporter(sl_otel_t *o)
{
    uint64_t one = 1;
    /* The counter only saturates after 2^64 - 2 wake-ups: never EAGAIN in practice, and a
     * lost wake-up costs at most one export interval. */
    if (write(o->wake_fd, &one, sizeof(one)) < 0)
        return;
}

/* A record is in: every SL_OTEL_EXPORT_BATCH of them wake the exporter early,
 * so the recorders make one syscall per batch, not per record. */
static void published(sl_otel_t *o, otel_queue_t *q, uint64_t pos)
{
    queue_publish(q, pos);
    if ((pos + 1) % SL_OTEL_EXPORT_BATCH == 0)
        wake_exporter(o);
}

/* --- the log sink (any thread) ----------------------------------------------------------- */

static void on_log(void *ctx, const sl_log_record_t *r)
{
    sl_otel_t *o = ctx;
    uint64_t pos;
    sl_otel_log_t *rec = queue_claim(&o->logs, &pos);
    if (!rec)
        return;
    size_t len = r->message_len < SL_OTEL_LOG_TEXT_MAX ? r->message_len : SL_OTEL_LOG_TEXT_MAX;
    rec->unix_ns = r->unix_ns;
    rec->file = r->file;
    rec->line = r->line;
    rec->level = (uint8_t)r->level;
    rec->text_len = (uint16_t)len;
    memcpy(rec->text, r->message, len);
    published(o, &o->logs, pos);
}

/* --- spans (loop thread) ----------------------------------------------------------------- */

void sl_otel_begin(sl_otel_t *otel, sl_otel_span_t *span, uint16_t metric_slot, uint32_t code,
                   uint64_t request_bytes)
{
    span->active = false;
    if (!otel)
        return;
    if (!otel->sample_all && sl_otel_random(&otel->sample_state) >= otel->sample_threshold)
        return;
    *span = (sl_otel_span_t){
        .active = true,
        .name = sl_metrics_slot_name(metric_slot),
        .code = metric_slot < sl_commands_count ? sl_commands[metric_slot].code : code,
        .user_id = SL_OTEL_NONE,
        .stream_id = SL_OTEL_NONE,
        .topic_id = SL_OTEL_NONE,
        .partition_id = SL_OTEL_NONE,
        .request_bytes = request_bytes,
        .trace_id = {sl_otel_random(&otel->sample_state), sl_otel_random(&otel->sample_state)},
        .span_id = sl_otel_random(&otel->sample_state) | 1, /* 0 is the invalid id */
        .unix_ns = wall_now_ns(),
        .start_ns = sl_clock_monotonic_ns(),
    };
}

void sl_otel_admitted(sl_otel_span_t *span)
{
    if (span->active && !span->admitted_ns)
        span->admitted_ns = sl_clock_monotonic_ns();
}

void sl_otel_journal_begin(sl_otel_t *otel)
{
    if (!otel)
        return;
    otel->journal_sync_mark = thread_sync_ns;
    otel->journal_begin_ns = sl_clock_monotonic_ns();
    otel->journal_end_ns = 0;
}

void sl_otel_journal_end(sl_otel_t *otel)
{
    if (!otel)
        return;
    otel->journal_end_ns = sl_clock_monotonic_ns();
    otel->journal_fsync_ns = thread_sync_ns - otel->journal_sync_mark;
}

void sl_otel_journaled(const sl_otel_t *otel, sl_otel_span_t *span)
{
    /* Only a measure taken while this request was in flight is its own. */
    if (!otel || !span->active || otel->journal_end_ns == 0 ||
        otel->journal_begin_ns < span->start_ns)
        return;
    span->journal_begin_ns = otel->journal_begin_ns;
    span->journal_end_ns = otel->journal_end_ns;
    uint64_t took = otel->journal_end_ns - otel->journal_begin_ns;
    span->fsync_ns = otel->journal_fsync_ns < took ? otel->journal_fsync_ns : took;
}

void sl_otel_replied(sl_otel_span_t *span, uint64_t reply_bytes, uint32_t status, bool error,
                     sl_otel_outcome_t outcome)
{
    if (!span->active)
        return;
    span->reply_ns = sl_clock_monotonic_ns();
    span->reply_bytes = reply_bytes;
    span->status = status;
    span->error = error;
    span->outcome = (uint8_t)outcome;
}

void sl_otel_end(sl_otel_t *otel, sl_otel_span_t *span, uint32_t user_id, uint32_t connection,
                 bool internal)
{
    if (!span->active)
        return;
    span->active = false;
    if (!otel)
        return;
    span->end_ns = sl_clock_monotonic_ns();
    if (!span->reply_ns) /* never answered: the connection went first */
        span->outcome = SL_OTEL_CLOSED;
    span->user_id = user_id;
    span->connection = connection;
    span->internal = internal;
    uint64_t pos;
    sl_otel_span_t *rec = queue_claim(&otel->spans, &pos);
    if (!rec)
        return;
    *rec = *span;
    published(otel, &otel->spans, pos);
}

/* --- the exporter thread ----------------------------------------------------------------- */

static void note_result(signal_state_t *sig, size_t n, bool ok, const char *why)
{
    if (ok) {
        atomic_fetch_add_explicit(&sig->exported, n, memory_order_relaxed);
        if (sig->failing)
            sl_log_info("telemetry: exporting %s to %s again (%llu exports had failed)", sig->name,
                        sl_otel_sender_url(sig->sender), (unsigned long long)sig->failures_since);
        sig->failing = false;
        sig->failures_since = 0;
        return;
    }
    atomic_fetch_add_explicit(&sig->dropped_failed, n, memory_order_relaxed);
    atomic_fetch_add_explicit(&sig->export_failures, 1, memory_order_relaxed);
    sig->failures_since++;
    /* One line per run of failures: a collector that is away for an hour
     * must not fill the log (the counters keep the tally). */
    if (!sig->failing)
        sl_log_warn("telemetry: cannot export %s to %s: %s; records are dropped and counted "
                    "until it answers",
                    sig->name, sl_otel_sender_url(sig->sender), why);
    sig->failing = true;
}

/* Encodes and sends one batch of signal s (SL_OTEL_LOGS / SL_OTEL_TRACES); false when the
 * queue had nothing. */
static bool export_batch(sl_otel_t *o, int s)
{
    signal_state_t *sig = &o->signals[s];
    size_t n = s == SL_OTEL_LOGS ? queue_take(&o->logs, o->log_batch, SL_OTEL_EXPORT_BATCH)
                                 : queue_take(&o->spans, o->span_batch, SL_OTEL_EXPORT_BATCH);
    if (n == 0)
        return false;
    sl_buf_reset(&o->body);
    sl_put_zeros(&o->body, sl_otel_sender_headroom(sig->sender));
    if (s == SL_OTEL_LOGS)
        sl_otlp_encode_logs(&o->body, &o->resource, o->log_batch, n);
    else
        sl_otlp_encode_spans(&o->body, &o->resource, o->span_batch, n, &o->id_state);
    char why[256];
    bool ok = sl_buf_ok(&o->body);
    if (!ok)
        snprintf(why, sizeof(why), "out of memory encoding %zu records", n);
    else
        ok = sl_otel_send(sig->sender, o->body.data, o->body.len, why, sizeof(why));
    note_result(sig, n, ok, why);
    return true;
}

/* Every batch queued now, each signal in turn; bounded by what the queues hold. */
static void export_all(sl_otel_t *o)
{
    uint32_t rounds = SL_OTEL_SPAN_QUEUE / SL_OTEL_EXPORT_BATCH + 1;
    for (uint32_t i = 0; i < rounds; i++) {
        bool more = export_batch(o, SL_OTEL_LOGS);
        more |= export_batch(o, SL_OTEL_TRACES);
        if (!more)
            return;
    }
}

static void report_drops(sl_otel_t *o)
{
    uint64_t now = sl_clock_monotonic_us();
    if (now - o->last_drop_report_us < DROP_REPORT_INTERVAL_US)
        return;
    uint64_t full[2] = {atomic_load(&o->logs.dropped), atomic_load(&o->spans.dropped)};
    for (int s = 0; s < 2; s++) {
        signal_state_t *sig = &o->signals[s];
        uint64_t failed = atomic_load(&sig->dropped_failed);
        if (full[s] == sig->reported_full && failed == sig->reported_failed)
            continue;
        sl_log_warn(
            "telemetry: %llu %s records dropped in the last %u s: %llu found the queue "
            "full, %llu were in failed exports",
            (unsigned long long)(full[s] - sig->reported_full + failed - sig->reported_failed),
            sig->name, DROP_REPORT_INTERVAL_US / 1000000u,
            (unsigned long long)(full[s] - sig->reported_full),
            (unsigned long long)(failed - sig->reported_failed));
        sig->reported_full = full[s];
        sig->reported_failed = failed;
        o->last_drop_report_us = now;
    }
}

static void *exporter_main(void *arg)
{
    sl_otel_t *o = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!atomic_load(&o->stop)) {
        struct pollfd p = {.fd = o->wake_fd, .events = POLLIN};
        if (poll(&p, 1, (int)SL_OTEL_EXPORT_INTERVAL_MS) > 0) {
            uint64_t n;
            if (read(o->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
                sl_log_warn("telemetry: reading the wake-up eventfd: %s", strerror(errno));
        }
        if (!atomic_load(&o->hold))
            export_all(o);
        report_drops(o);
    }
    /* What was queued before the stop still goes out. */
    export_all(o);
    return NULL;
}

/* --- life cycle -------------------------------------------------------------------------- */

static int open_fail(sl_otel_t *o, int rc, char *err, size_t err_len, const char *what)
{
    if (what)
        snprintf(err, err_len, "telemetry: %s", what);
    sl_otel_close(o);
    return rc;
}

static void set_sampling(sl_otel_t *o, uint32_t ppm)
{
    o->sample_all = ppm >= 1000000u;
    o->sample_threshold =
        o->sample_all ? UINT64_MAX : (uint64_t)(((unsigned __int128)ppm << 64) / 1000000u);
}

static int open_senders(sl_otel_t *o, const sl_config_t *cfg, char *err, size_t err_len)
{
    const __typeof__(cfg->telemetry) *t = &cfg->telemetry;
    o->signals[SL_OTEL_LOGS].name = "logs";
    o->signals[SL_OTEL_TRACES].name = "traces";
    int rc = sl_otel_sender_create("logs", t->logs.transport, t->logs.endpoint,
                                   &o->signals[SL_OTEL_LOGS].sender, err, err_len);
    if (rc == 0)
        rc = sl_otel_sender_create("traces", t->traces.transport, t->traces.endpoint,
                                   &o->signals[SL_OTEL_TRACES].sender, err, err_len);
    return rc;
}

int sl_otel_open(const sl_config_t *cfg, sl_otel_t **out, char *err, size_t err_len)
{
    *out = NULL;
    if (!cfg->telemetry.enabled)
        return 0;
    sl_otel_t *o = calloc(1, sizeof(*o));
    if (!o)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "out of memory");
    o->wake_fd = -1;
    snprintf(o->service_name, sizeof(o->service_name), "%s", cfg->telemetry.service_name);
    o->resource = (sl_otel_resource_t){o->service_name, SLUICE_VERSION};
    sl_buf_init(&o->body, 0);
    o->log_batch = calloc(SL_OTEL_EXPORT_BATCH, sizeof(*o->log_batch));
    o->span_batch = calloc(SL_OTEL_EXPORT_BATCH, sizeof(*o->span_batch));
    if (!o->log_batch || !o->span_batch ||
        queue_init(&o->logs, SL_OTEL_LOG_QUEUE, sizeof(sl_otel_log_t)) != 0 ||
        queue_init(&o->spans, SL_OTEL_SPAN_QUEUE, sizeof(sl_otel_span_t)) != 0)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "out of memory");
    uint64_t seeds[2];
    if (sl_random_bytes(seeds, sizeof(seeds)) != 0)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "getrandom failed");
    o->sample_state = seeds[0];
    o->id_state = seeds[1];
    set_sampling(o, cfg->telemetry.traces.sample_ppm);
    if (sl_otel_export_global_init() != 0)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "cannot initialise libcurl");
    int rc = open_senders(o, cfg, err, err_len);
    if (rc != 0)
        return open_fail(o, rc, err, err_len, NULL);
    o->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (o->wake_fd < 0)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "cannot create an eventfd");
    rc = pthread_create(&o->thread, NULL, exporter_main, o);
    if (rc != 0)
        return open_fail(o, -SL_ERR_ERROR, err, err_len, "cannot start the exporter thread");
    o->thread_started = true;
    o->sink = (sl_log_sink_t){on_log, o};
    sl_log_set_sink(&o->sink);
    char ratio[32];
    sl_format_ratio_ppm(cfg->telemetry.traces.sample_ppm, ratio, sizeof(ratio));
    sl_log_info("telemetry: logs to %s, traces of a %s share of requests to %s (service %s)",
                sl_otel_sender_url(o->signals[SL_OTEL_LOGS].sender), ratio,
                sl_otel_sender_url(o->signals[SL_OTEL_TRACES].sender), o->service_name);
    *out = o;
    return 0;
}

void sl_otel_close(sl_otel_t *o)
{
    if (!o)
        return;
    if (o->thread_started) {
        sl_log_set_sink(NULL);
        atomic_store(&o->stop, true);
        wake_exporter(o);
        pthread_join(o->thread, NULL);
    }
    for (int s = 0; s < 2; s++)
        sl_otel_sender_destroy(o->signals[s].sender);
    if (o->wake_fd >= 0)
        close(o->wake_fd);
    queue_free(&o->logs);
    queue_free(&o->spans);
    free(o->log_batch);
    free(o->span_batch);
    sl_buf_free(&o->body);
    free(o);
}

void sl_otel_hold(sl_otel_t *o, bool hold)
{
    if (o)
        atomic_store(&o->hold, hold);
}

void sl_otel_stats(const sl_otel_t *o, sl_otel_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!o)
        return;
    const otel_queue_t *queues[2] = {&o->logs, &o->spans};
    for (int s = 0; s < 2; s++) {
        const signal_state_t *sig = &o->signals[s];
        out->exported[s] = atomic_load_explicit(&sig->exported, memory_order_relaxed);
        out->dropped_full[s] = atomic_load_explicit(&queues[s]->dropped, memory_order_relaxed);
        out->dropped_failed[s] = atomic_load_explicit(&sig->dropped_failed, memory_order_relaxed);
        out->export_failures[s] = atomic_load_explicit(&sig->export_failures, memory_order_relaxed);
    }
}
