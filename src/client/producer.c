/* The producer of <sluice/producer.h>: per-partition queues of copied
 * messages, cut into batches by count, size and linger time and sent with
 * the client's batch builder, from the caller's thread or from a thread of
 * its own.
 *
 * Background locking: one mutex guards the queues, counters and flags.
 * Enqueuers append under it; the sending thread swaps a queue's buffer for
 * an empty one under it, then sends the swapped-out records without it, so
 * enqueuers never wait for the network (only for room, when the queues are
 * full). The client belongs to the sending thread alone. */
#include <sluice/producer.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "client/client_internal.h"
#include "wire/prim.h"

/* Defaults of sl_producer_options_t. */
#define PRODUCER_BATCH_COUNT_DEFAULT 1000u
#define PRODUCER_BATCH_BYTES_DEFAULT (1u << 20)
#define PRODUCER_LINGER_MS_DEFAULT   5u
#define PRODUCER_QUEUE_BYTES_DEFAULT (64u << 20)
/* Request bytes besides the messages: the 256-byte header, identifiers and
 * partitioning of up to 257 bytes each, the count, and the 256-byte batch
 * header (messages.md 1). Rounded up. */
#define PRODUCER_REQUEST_OVERHEAD 2048u
/* A queued record: id (16), origin timestamp (8), payload and headers
 * lengths (4 + 4), then the payload and the encoded headers. */
#define RECORD_HEADER 32u

/* A batch submitted and not collected yet (options.pipeline): what its
 * report and the counters need once its reply arrives. */
typedef struct flight {
    uint64_t ticket;
    uint32_t partition_id;
    uint32_t count;
    size_t record_bytes;
} flight_t;

/* Batches a pipelined producer keeps in flight: the one being answered
 * while the next is built and written. */
#define PRODUCER_IN_FLIGHT 2u
_Static_assert(PRODUCER_IN_FLIGHT <= SL_CLIENT_IN_FLIGHT_MAX, "the client must take them");

typedef struct queue {
    uint32_t partition_id; /* SL_PARTITION_NONE: Balanced */
    sl_buf_t data;         /* queued records */
    uint32_t count;
    size_t bytes;      /* payload and header bytes queued */
    uint64_t first_us; /* monotonic enqueue time of the oldest queued record */
    sl_buf_t sending;  /* background: records taken out by the thread */
} queue_t;

struct sl_producer {
    sl_client_t *client;
    bool own_client;
    char stream_name[256];
    char topic_name[256];
    sl_id_t stream;
    sl_id_t topic;
    sl_producer_options_t o; /* defaults applied; names point at the copies above */
    uint32_t partitions_count;
    queue_t *queues;
    uint32_t queues_count;
    sl_buf_t scratch; /* headers of the message being queued */
    /* Background state, guarded by mu. */
    bool background;
    bool thread_started;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* to the thread: work or a flush */
    pthread_cond_t room; /* to enqueuers: bytes were freed */
    pthread_cond_t done; /* to flushers: a sweep finished */
    bool closing;
    uint64_t flush_wanted; /* sweeps asked for */
    uint64_t flush_done;   /* sweeps finished */
    size_t pending_bytes;  /* record bytes queued or in flight */
    int first_error;       /* since the last flush */
    sl_producer_stats_t stats;
    uint64_t linger_due_us; /* foreground: the earliest linger deadline */
    /* Pipelined batches in submit order, owned by the sending thread. */
    flight_t flights[PRODUCER_IN_FLIGHT];
    uint32_t flights_count;
};

/* --- locking (no-ops in the foreground) -------------------------------------------------- */

static void lock(sl_producer_t *p)
{
    if (p->background)
        pthread_mutex_lock(&p->mu);
}

static void unlock(sl_producer_t *p)
{
    if (p->background)
        pthread_mutex_unlock(&p->mu);
}

/* An absolute CLOCK_MONOTONIC time ms from now, for the condition waits. */
static struct timespec deadline_in(uint64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (us % 1000000u) * 1000u;
    ts.tv_sec += (time_t)(us / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    return ts;
}

/* --- records ----------------------------------------------------------------------------- */

static void record_put(queue_t *q, const sl_producer_message_t *m, uint64_t ts, sl_span_t headers)
{
    sl_buf_t *b = &q->data;
    sl_put_u64(b, m->id.lo);
    sl_put_u64(b, m->id.hi);
    sl_put_u64(b, ts);
    sl_put_u32(b, (uint32_t)m->payload_len);
    sl_put_u32(b, (uint32_t)headers.len);
    sl_put_bytes(b, m->payload, m->payload_len);
    sl_put_bytes(b, headers.ptr, headers.len);
}

/* The next record of r as a message to add; false at the end. */
static bool record_next(sl_reader_t *r, sl_send_message_t *out)
{
    if (sl_reader_done(r))
        return false;
    uint32_t payload_len = 0, headers_len = 0;
    *out = (sl_send_message_t){0};
    sl_read_u64(r, &out->id.lo);
    sl_read_u64(r, &out->id.hi);
    sl_read_u64(r, &out->origin_timestamp_us);
    sl_read_u32(r, &payload_len);
    sl_read_u32(r, &headers_len);
    out->payload = sl_read_take(r, payload_len);
    out->payload_len = payload_len;
    out->headers_raw = sl_read_take(r, headers_len);
    out->headers_raw_len = headers_len;
    /* The producer wrote these bytes itself. */
    sl_assert(sl_reader_ok(r));
    return true;
}

/* --- sending ---------------------------------------------------------------------------- */

static sl_send_partitioning_t partitioning_of(uint32_t partition_id)
{
    return partition_id == SL_PARTITION_NONE ? sl_partitioning_balanced()
                                             : sl_partitioning_partition(partition_id);
}

/* Counts one batch and tells the application about it. */
static void batch_finished(sl_producer_t *p, uint32_t partition_id, uint32_t count, int rc,
                           const sl_send_result_t *res, size_t record_bytes)
{
    sl_producer_report_t report = {.error = rc, .partition_id = partition_id, .count = count};
    if (rc == 0 && res->confirmed) {
        report.confirmed = true;
        report.partition_id = res->partition_id;
        report.base_offset = res->base_offset;
    }
    lock(p);
    p->stats.batches++;
    if (rc == 0) {
        p->stats.sent += count;
    } else {
        p->stats.failed += count;
        if (p->first_error == 0)
            p->first_error = rc;
    }
    p->pending_bytes -= record_bytes;
    if (p->background)
        pthread_cond_broadcast(&p->room);
    unlock(p);
    if (p->o.batch_done != NULL)
        p->o.batch_done(p->o.batch_done_ctx, &report);
}

/* Collects the oldest pipelined batch and reports it. */
static int collect_one(sl_producer_t *p)
{
    sl_assert(p->flights_count > 0);
    flight_t f = p->flights[0];
    memmove(&p->flights[0], &p->flights[1], (p->flights_count - 1) * sizeof(flight_t));
    p->flights_count--;
    uint64_t ticket = 0;
    sl_send_result_t res = {0};
    int rc = sl_client_send_collect(p->client, &ticket, &res);
    /* The client answers in submit order, and only this producer submits
     * on it while batches are in flight. */
    sl_assert(ticket == f.ticket);
    batch_finished(p, f.partition_id, f.count, rc, &res, f.record_bytes);
    return rc;
}

/* Collects every pipelined batch; the first error. */
static int collect_all(sl_producer_t *p)
{
    int first = 0;
    while (p->flights_count > 0) {
        int rc = collect_one(p);
        if (first == 0)
            first = rc;
    }
    return first;
}

/* Ends a batch built in the client: commit (lockstep) or submit, the
 * latter collecting the batch before it once this one is on its way, so
 * that building the next batch overlaps this one's trip. A failure is
 * reported after the batches in flight before it, in order. */
static int batch_end(sl_producer_t *p, uint32_t partition_id, uint32_t count, int rc,
                     size_t record_bytes)
{
    sl_send_result_t res = {0};
    if (!p->o.pipeline) {
        if (rc == 0)
            rc = sl_client_send_commit(p->client, &res);
        else
            sl_client_send_abandon(p->client);
        batch_finished(p, partition_id, count, rc, &res, record_bytes);
        return rc;
    }
    uint64_t ticket = 0;
    if (rc == 0)
        rc = sl_client_send_submit(p->client, &ticket);
    else
        sl_client_send_abandon(p->client);
    if (rc != 0) {
        int before = collect_all(p);
        batch_finished(p, partition_id, count, rc, &res, record_bytes);
        return before != 0 ? before : rc;
    }
    p->flights[p->flights_count++] = (flight_t){ticket, partition_id, count, record_bytes};
    return p->flights_count == PRODUCER_IN_FLIGHT ? collect_one(p) : 0;
}

/* Sends one batch from r: messages while the batch is under both limits
 * and the request has room. A message refused by the client fails the
 * batch (it was checked when queued, so that is rare). Pipelined, the
 * result is that of the batch collected meanwhile (if any). */
static int send_batch(sl_producer_t *p, uint32_t partition_id, sl_reader_t *r)
{
    int rc = sl_client_send_begin(p->client, p->stream, p->topic, partitioning_of(partition_id));
    uint32_t count = 0;
    size_t bytes = 0, start = r->pos;
    sl_send_message_t m;
    for (;;) {
        sl_reader_t peek = *r;
        if (count >= p->o.batch_count || !record_next(&peek, &m))
            break;
        size_t size = m.payload_len + m.headers_raw_len;
        if (count > 0 && bytes + size > p->o.batch_bytes)
            break;
        if (rc == 0) {
            int add = sl_client_send_add(p->client, &m);
            if (add == -SL_ERR_COMMAND_LENGTH_ERROR && count > 0)
                break; /* the request is full: this message opens the next one */
            rc = add;
        }
        *r = peek;
        count++;
        bytes += size;
    }
    return batch_end(p, partition_id, count, rc, r->pos - start);
}

/* Sends every record of records in batches; the first error. */
static int send_records(sl_producer_t *p, uint32_t partition_id, const sl_buf_t *records)
{
    sl_reader_t r = sl_reader(sl_buf_span(records));
    int first = 0;
    while (!sl_reader_done(&r)) {
        int rc = send_batch(p, partition_id, &r);
        if (first == 0)
            first = rc;
    }
    return first;
}

static bool queue_full(const sl_producer_t *p, const queue_t *q)
{
    return q->count >= p->o.batch_count || q->bytes >= p->o.batch_bytes;
}

static bool queue_lingered(const sl_producer_t *p, const queue_t *q, uint64_t now_us)
{
    return q->count > 0 && now_us - q->first_us >= (uint64_t)p->o.linger_ms * 1000u;
}

static void queue_clear(queue_t *q)
{
    sl_buf_reset(&q->data);
    q->count = 0;
    q->bytes = 0;
}

/* Foreground: sends one queue's records now. */
static int queue_send(sl_producer_t *p, queue_t *q)
{
    if (q->count == 0)
        return 0;
    int rc = send_records(p, q->partition_id, &q->data);
    queue_clear(q);
    return rc;
}

/* Foreground: sends the queues that are due (all of them when all is set)
 * and notes when the next linger falls due. */
static int send_due(sl_producer_t *p, bool all)
{
    uint64_t now = sl_clock_monotonic_us();
    uint64_t linger = (uint64_t)p->o.linger_ms * 1000u;
    int first = 0;
    p->linger_due_us = UINT64_MAX;
    for (uint32_t i = 0; i < p->queues_count; i++) {
        queue_t *q = &p->queues[i];
        if (q->count > 0 && (all || queue_full(p, q) || queue_lingered(p, q, now))) {
            int rc = queue_send(p, q);
            if (first == 0)
                first = rc;
        }
        if (q->count > 0 && q->first_us + linger < p->linger_due_us)
            p->linger_due_us = q->first_us + linger;
    }
    return first;
}

/* --- the background thread --------------------------------------------------------------- */

/* Under the lock: moves the due queues' records to their sending buffers.
 * True when anything was taken. */
static bool take_due(sl_producer_t *p, bool all, uint64_t now_us)
{
    bool took = false;
    for (uint32_t i = 0; i < p->queues_count; i++) {
        queue_t *q = &p->queues[i];
        if (q->count == 0 || !(all || queue_full(p, q) || queue_lingered(p, q, now_us)))
            continue;
        sl_buf_t swap = q->sending;
        q->sending = q->data;
        q->data = swap;
        queue_clear(q);
        took = true;
    }
    return took;
}

/* Under the lock: whether any message waits in a queue. */
static bool queued_any(const sl_producer_t *p)
{
    for (uint32_t i = 0; i < p->queues_count; i++)
        if (p->queues[i].count > 0)
            return true;
    return false;
}

/* Without the lock: sends what take_due moved. */
static void send_taken(sl_producer_t *p)
{
    for (uint32_t i = 0; i < p->queues_count; i++) {
        queue_t *q = &p->queues[i];
        if (q->sending.len == 0)
            continue;
        (void)send_records(p, q->partition_id, &q->sending);
        sl_buf_reset(&q->sending);
    }
}

/* Under the lock: how long the thread may sleep. The oldest queued
 * message's linger, and the heartbeat when the client wants one. */
static uint64_t idle_wait_us(const sl_producer_t *p, uint64_t now_us, uint64_t last_tick_us)
{
    uint64_t wait = UINT64_MAX;
    uint64_t linger = (uint64_t)p->o.linger_ms * 1000u;
    for (uint32_t i = 0; i < p->queues_count; i++) {
        const queue_t *q = &p->queues[i];
        if (q->count == 0)
            continue;
        uint64_t due = q->first_us + linger;
        uint64_t left = due > now_us ? due - now_us : 0;
        wait = left < wait ? left : wait;
    }
    uint64_t beat = (uint64_t)p->client->care.heartbeat_interval_ms * 1000u;
    if (beat > 0) {
        uint64_t due = last_tick_us + beat / 2;
        uint64_t left = due > now_us ? due - now_us : 0;
        wait = left < wait ? left : wait;
    }
    return wait;
}

/* Without the lock: the client's heartbeat and reconnect, when due. */
static void thread_tick(sl_producer_t *p, uint64_t *last_tick_us)
{
    /* A failure here shows in the next send, which reports it per batch. */
    int rc = sl_client_tick(p->client);
    (void)rc;
    *last_tick_us = sl_clock_monotonic_us();
}

static void *producer_thread(void *arg)
{
    sl_producer_t *p = arg;
    uint64_t last_tick_us = sl_clock_monotonic_us();
    pthread_mutex_lock(&p->mu);
    for (;;) {
        uint64_t now = sl_clock_monotonic_us();
        /* A flush (or close) takes everything queued when the pass starts,
         * once: messages queued meanwhile cannot starve it. */
        uint64_t sweep = p->flush_wanted;
        bool all = sweep > p->flush_done || p->closing;
        bool took = take_due(p, all, now);
        if (took) {
            pthread_mutex_unlock(&p->mu);
            send_taken(p);
            pthread_mutex_lock(&p->mu);
        }
        if (all && p->flights_count > 0) {
            pthread_mutex_unlock(&p->mu);
            (void)collect_all(p);
            pthread_mutex_lock(&p->mu);
        }
        if (all) {
            p->flush_done = sweep;
            pthread_cond_broadcast(&p->done);
            if (p->closing)
                break;
        }
        if (took || all)
            continue;
        uint64_t wait = idle_wait_us(p, now, last_tick_us);
        if (p->flights_count > 0 && !queued_any(p)) {
            /* Nothing queued to build behind the batch in flight: collect
             * it now rather than after the next message's linger. */
            pthread_mutex_unlock(&p->mu);
            (void)collect_all(p);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (wait == 0) {
            pthread_mutex_unlock(&p->mu);
            thread_tick(p, &last_tick_us);
            pthread_mutex_lock(&p->mu);
        } else if (wait == UINT64_MAX) {
            pthread_cond_wait(&p->wake, &p->mu);
        } else {
            struct timespec ts = deadline_in(wait);
            pthread_cond_timedwait(&p->wake, &p->mu, &ts);
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* --- queuing ---------------------------------------------------------------------------- */

/* The queue a message goes to. */
static int choose_queue(sl_producer_t *p, const sl_producer_message_t *m, queue_t **out)
{
    uint32_t index = 0;
    if (p->o.partitioning == SL_PRODUCER_KEY) {
        if (m->key == NULL || m->key_len < 1 || m->key_len > SL_PARTITION_KEY_MAX)
            return -SL_ERR_INVALID_KEY_VALUE_LENGTH;
        index = sl_partitioning_key_index(sl_span(m->key, m->key_len), p->partitions_count);
    } else if (p->o.partitioning == SL_PRODUCER_CUSTOM) {
        index = p->o.partitioner(p->o.partitioner_ctx, m->key, m->key_len, m->payload,
                                 m->payload_len, p->partitions_count);
        if (index >= p->partitions_count)
            return -SL_ERR_PARTITION_NOT_FOUND;
    }
    *out = &p->queues[index];
    return 0;
}

/* Under the lock, background: waits until the record fits the queue
 * budget. An empty producer always takes one record, however large. */
static int wait_for_room(sl_producer_t *p, size_t record_bytes)
{
    bool timed = p->o.send_timeout_ms > 0;
    struct timespec ts = deadline_in((uint64_t)p->o.send_timeout_ms * 1000u);
    while (!p->closing && p->pending_bytes > 0 &&
           p->pending_bytes + record_bytes > p->o.queue_bytes_max) {
        int rc = timed ? pthread_cond_timedwait(&p->room, &p->mu, &ts)
                       : pthread_cond_wait(&p->room, &p->mu);
        if (rc == ETIMEDOUT)
            return -SL_ERR_BACKGROUND_SEND_BUFFER_FULL;
    }
    return p->closing ? -SL_ERR_CLIENT_SHUTDOWN : 0;
}

/* Under the lock: encodes the headers and appends the record. In the
 * foreground a batch that the message would push over batch_bytes is sent
 * first; *sent_rc gets that send's result. */
static int enqueue_locked(sl_producer_t *p, queue_t *q, const sl_producer_message_t *m, uint64_t ts,
                          int *sent_rc)
{
    if (p->closing)
        return -SL_ERR_CLIENT_SHUTDOWN;
    int rc = sl_client_headers_encode(&p->scratch, m->headers, m->headers_count);
    if (rc != 0)
        return rc;
    size_t size = m->payload_len + p->scratch.len;
    if (SL_FRAME_HEADER_SIZE + size > p->client->frame_max - PRODUCER_REQUEST_OVERHEAD)
        return -SL_ERR_COMMAND_LENGTH_ERROR;
    if (p->background && (rc = wait_for_room(p, RECORD_HEADER + size)) != 0)
        return rc;
    if (!p->background && q->count > 0 && q->bytes + size > p->o.batch_bytes)
        *sent_rc = queue_send(p, q);
    size_t before = q->data.len;
    record_put(q, m, ts, sl_buf_span(&p->scratch));
    if (!sl_buf_ok(&q->data)) {
        q->data.len = before; /* drop the partial record */
        q->data.failed = false;
        return -SL_ERR_ERROR;
    }
    if (q->count == 0) {
        q->first_us = sl_clock_monotonic_us();
        uint64_t due = q->first_us + (uint64_t)p->o.linger_ms * 1000u;
        p->linger_due_us = due < p->linger_due_us ? due : p->linger_due_us;
    }
    q->count++;
    q->bytes += size;
    p->pending_bytes += RECORD_HEADER + size;
    p->stats.queued++;
    /* The thread sleeps until the oldest linger; a new oldest or a full
     * queue changes what it should do. */
    if (p->background && (q->count == 1 || queue_full(p, q)))
        pthread_cond_signal(&p->wake);
    return 0;
}

int sl_producer_send(sl_producer_t *p, const sl_producer_message_t *m)
{
    if (m == NULL || (m->payload == NULL && m->payload_len > 0))
        return -SL_ERR_INVALID_COMMAND;
    if (m->payload_len > SL_PAYLOAD_MAX)
        return -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD;
    queue_t *q;
    int rc = choose_queue(p, m, &q);
    if (rc != 0)
        return rc;
    uint64_t ts = m->origin_timestamp_us ? m->origin_timestamp_us : sl_clock_realtime_us();
    int sent_rc = 0;
    lock(p);
    rc = enqueue_locked(p, q, m, ts, &sent_rc);
    unlock(p);
    if (rc != 0 || p->background)
        return rc != 0 ? rc : sent_rc;
    /* Foreground: a full batch goes now; lingering ones when one is due
     * (scanning every queue per message would cost with many partitions). */
    if (queue_full(p, q)) {
        int full = queue_send(p, q);
        sent_rc = sent_rc != 0 ? sent_rc : full;
    }
    if (sl_clock_monotonic_us() >= p->linger_due_us) {
        int linger = send_due(p, false);
        sent_rc = sent_rc != 0 ? sent_rc : linger;
    }
    return sent_rc;
}

/* --- open, flush, close ------------------------------------------------------------------- */

static void apply_defaults(sl_producer_options_t *o)
{
    if (o->partitioning == 0)
        o->partitioning = SL_PRODUCER_BALANCED;
    if (o->batch_count == 0)
        o->batch_count = PRODUCER_BATCH_COUNT_DEFAULT;
    if (o->batch_bytes == 0)
        o->batch_bytes = PRODUCER_BATCH_BYTES_DEFAULT;
    if (o->linger_ms == 0)
        o->linger_ms = PRODUCER_LINGER_MS_DEFAULT;
    if (o->queue_bytes_max == 0)
        o->queue_bytes_max = PRODUCER_QUEUE_BYTES_DEFAULT;
}

static bool options_valid(const sl_producer_options_t *o)
{
    if (o == NULL || (o->stream.kind == SL_ID_NAME && o->stream.name == NULL) ||
        (o->topic.kind == SL_ID_NAME && o->topic.name == NULL))
        return false;
    bool kinds = (o->stream.kind == SL_ID_NUMBER || o->stream.kind == SL_ID_NAME) &&
                 (o->topic.kind == SL_ID_NUMBER || o->topic.kind == SL_ID_NAME);
    bool custom_ok = o->partitioning != SL_PRODUCER_CUSTOM || o->partitioner != NULL;
    return kinds && custom_ok && o->partitioning <= SL_PRODUCER_CUSTOM;
}

/* A name identifier pointing at the producer's own copy. */
static bool copy_id(sl_id_t in, char *buf, size_t cap, sl_id_t *out)
{
    *out = in;
    if (in.kind != SL_ID_NAME)
        return true;
    size_t n = strlen(in.name);
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, in.name, n + 1);
    out->name = buf;
    return true;
}

/* Counts the topic's partitions and makes one queue per destination. */
static int make_queues(sl_producer_t *p)
{
    const sl_topic_t *t;
    int rc = sl_client_get_topic(p->client, p->stream, p->topic, &t);
    if (rc != 0)
        return rc;
    if (t == NULL)
        return p->topic.kind == SL_ID_NAME ? -SL_ERR_TOPIC_NAME_NOT_FOUND
                                           : -SL_ERR_TOPIC_ID_NOT_FOUND;
    p->partitions_count = t->partitions_count;
    bool per_partition =
        p->o.partitioning == SL_PRODUCER_KEY || p->o.partitioning == SL_PRODUCER_CUSTOM;
    if (per_partition && p->partitions_count == 0)
        return -SL_ERR_NO_PARTITIONS;
    p->queues_count = per_partition ? p->partitions_count : 1;
    p->queues = calloc(p->queues_count, sizeof(*p->queues));
    if (p->queues == NULL)
        return -SL_ERR_ERROR;
    for (uint32_t i = 0; i < p->queues_count; i++) {
        queue_t *q = &p->queues[i];
        q->partition_id = per_partition                                ? i
                          : p->o.partitioning == SL_PRODUCER_PARTITION ? p->o.partition_id
                                                                       : SL_PARTITION_NONE;
        sl_buf_init(&q->data, 0);
        sl_buf_init(&q->sending, 0);
    }
    return 0;
}

static void producer_free(sl_producer_t *p)
{
    for (uint32_t i = 0; p->queues != NULL && i < p->queues_count; i++) {
        sl_buf_free(&p->queues[i].data);
        sl_buf_free(&p->queues[i].sending);
    }
    free(p->queues);
    sl_buf_free(&p->scratch);
    if (p->background) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->room);
        pthread_cond_destroy(&p->done);
    }
    if (p->own_client)
        sl_client_close(p->client);
    free(p);
}

static int producer_new(sl_client_t *client, const sl_producer_options_t *options,
                        sl_producer_t **out)
{
    *out = NULL;
    if (!options_valid(options))
        return -SL_ERR_INVALID_COMMAND;
    sl_producer_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return -SL_ERR_ERROR;
    p->client = client;
    p->linger_due_us = UINT64_MAX;
    p->o = *options;
    apply_defaults(&p->o);
    sl_buf_init(&p->scratch, SL_USER_HEADERS_MAX);
    int rc = 0;
    if (!copy_id(options->stream, p->stream_name, sizeof(p->stream_name), &p->stream) ||
        !copy_id(options->topic, p->topic_name, sizeof(p->topic_name), &p->topic))
        rc = -SL_ERR_INVALID_COMMAND;
    if (rc == 0)
        rc = make_queues(p);
    if (rc != 0) {
        producer_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int sl_producer_open(sl_client_t *client, const sl_producer_options_t *options, sl_producer_t **out)
{
    sl_assert(client != NULL && out != NULL);
    return producer_new(client, options, out);
}

static int login(sl_client_t *c, const sl_credentials_t *cred)
{
    if (cred == NULL)
        return -SL_ERR_INVALID_COMMAND;
    if (cred->token != NULL)
        return sl_client_login_token(c, cred->token, NULL);
    return sl_client_login(c, cred->username, cred->password, NULL);
}

static int start_thread(sl_producer_t *p)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -SL_ERR_ERROR;
    /* Linger deadlines are monotonic; a wall-clock step must not stretch them. */
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, &attr);
    pthread_cond_init(&p->room, &attr);
    pthread_cond_init(&p->done, &attr);
    pthread_condattr_destroy(&attr);
    p->background = true;
    if (pthread_create(&p->thread, NULL, producer_thread, p) != 0)
        return -SL_ERR_ERROR;
    p->thread_started = true;
    return 0;
}

int sl_producer_open_background(const char *host, uint16_t port,
                                const sl_client_options_t *client_options,
                                const sl_credentials_t *credentials,
                                const sl_producer_options_t *options, sl_producer_t **out)
{
    sl_assert(out != NULL);
    *out = NULL;
    sl_client_t *c;
    int rc = sl_client_connect(host, port, client_options, &c);
    if (rc != 0)
        return rc;
    rc = login(c, credentials);
    sl_producer_t *p = NULL;
    if (rc == 0)
        rc = producer_new(c, options, &p);
    if (rc != 0) {
        sl_client_close(c);
        return rc;
    }
    p->own_client = true;
    rc = start_thread(p);
    if (rc != 0) {
        producer_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int sl_producer_tick(sl_producer_t *p)
{
    if (p->background)
        return 0;
    int rc = send_due(p, false);
    /* The batch left in flight is collected, so the client is free for the
     * tick and for the application's own calls. */
    int collected = collect_all(p);
    rc = rc != 0 ? rc : collected;
    int tick = sl_client_tick(p->client);
    return rc != 0 ? rc : tick;
}

/* Background: asks for a sweep of everything queued now and waits for it. */
static void sweep_and_wait(sl_producer_t *p)
{
    uint64_t mine = ++p->flush_wanted;
    pthread_cond_signal(&p->wake);
    while (p->flush_done < mine && p->thread_started)
        pthread_cond_wait(&p->done, &p->mu);
}

int sl_producer_flush(sl_producer_t *p)
{
    lock(p);
    if (p->background) {
        sweep_and_wait(p);
    } else {
        /* Errors, the last pipelined batch's included, go to first_error. */
        (void)send_due(p, true);
        (void)collect_all(p);
    }
    int rc = p->first_error;
    p->first_error = 0;
    unlock(p);
    return rc;
}

void sl_producer_stats(sl_producer_t *p, sl_producer_stats_t *out)
{
    lock(p);
    *out = p->stats;
    out->pending = out->queued - out->sent - out->failed;
    unlock(p);
}

int sl_producer_close(sl_producer_t *p)
{
    if (p == NULL)
        return 0;
    int rc;
    if (p->background && p->thread_started) {
        pthread_mutex_lock(&p->mu);
        p->closing = true;
        pthread_cond_broadcast(&p->room); /* waiting senders give up */
        pthread_cond_signal(&p->wake);    /* the thread sweeps and exits */
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
        rc = p->first_error;
    } else {
        rc = sl_producer_flush(p);
    }
    producer_free(p);
    return rc;
}
