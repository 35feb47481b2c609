/* libsluice producer: messages queued one at a time, sent in batches (by
 * count, size and linger time) to partitions chosen by a partitioning
 * policy, either from the caller's thread or from a background thread.
 *
 * Two ways to run one:
 *
 * Foreground (sl_producer_open). The producer borrows a logged-in client
 * and uses it only inside its own calls, from the caller's thread: a send
 * that fills a batch sends it before returning, and sl_producer_tick sends
 * batches whose linger time is up. Like the client, it is used by one
 * thread at a time; the client may be used for other calls between
 * producer calls (a producer call that sends ends the results of the
 * client's previous call, as any call does). The client must outlive the
 * producer; closing the producer does not close it.
 *
 * Background (sl_producer_open_background). The producer connects and logs
 * in its own client and starts one thread that owns it and does all the
 * sending. sl_producer_send, sl_producer_flush and sl_producer_stats are
 * thread-safe: any number of threads may call them at once. sl_producer_close
 * is called once, after every other thread has stopped using the producer.
 *
 * Ownership. Everything passed to sl_producer_send (payload, key, headers)
 * is copied before it returns. Options and credentials are copied at open
 * (names included). The producer owns its queues and, in the background, its
 * client; sl_producer_close frees them. Errors are codes of <sluice/error.h>.
 *
 * Delivery. At least once: the client's connection care (reconnects,
 * transient replays) is used as configured in the client's options, and a
 * batch whose reply was lost may have been stored. A batch that fails is
 * dropped, reported to the batch_done callback and counted; the first such
 * error since the last flush is what sl_producer_flush returns. Messages of
 * one partition are sent in the order they were queued. */
#ifndef SLUICE_PRODUCER_H
#define SLUICE_PRODUCER_H

#include <sluice/client.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_producer sl_producer_t;

/* How a message finds its partition. */
enum {
    SL_PRODUCER_BALANCED = 1,  /* the server round-robins each batch (Balanced) */
    SL_PRODUCER_PARTITION = 2, /* every message to options.partition_id */
    /* The message's key, hashed as the server hashes a MessagesKey
     * (XXH32(key) % partitions_count, encodings.md 5), so one key always
     * lands on one partition, in order. The partitions are counted at open. */
    SL_PRODUCER_KEY = 3,
    SL_PRODUCER_CUSTOM = 4, /* options.partitioner decides */
};

/* SL_PRODUCER_CUSTOM: the partition id (0..partitions_count-1) for a
 * message. Called inside sl_producer_send, in the sending thread, with the
 * message's key and payload (borrowed for the call). An id out of range
 * makes sl_producer_send fail with -SL_ERR_PARTITION_NOT_FOUND. */
typedef uint32_t (*sl_producer_partitioner_t)(void *ctx, const void *key, size_t key_len,
                                              const void *payload, size_t payload_len,
                                              uint32_t partitions_count);

/* What became of one batch, for the batch_done callback. */
typedef struct sl_producer_report {
    int error;             /* 0: stored; else the negated error, and the batch is dropped */
    uint32_t partition_id; /* where it went (confirmed or chosen); SL_PARTITION_NONE: unknown */
    uint64_t base_offset;  /* offset of its first message, when the server confirmed it */
    bool confirmed;        /* the server's reply carried the offset */
    uint32_t count;        /* messages in the batch */
} sl_producer_report_t;

/* Called once per batch sent or failed, from the thread that sent it (the
 * caller's in the foreground, the producer's own in the background), with
 * no producer lock held. It must not call the producer: a flush or close
 * from there waits for the thread that is running it, and so can a send
 * when the queue is full. sl_producer_stats is the exception. The report
 * is valid for the call only. */
typedef void (*sl_producer_batch_done_t)(void *ctx, const sl_producer_report_t *report);

/* Fields left at 0 / NULL take the default after their comment. */
typedef struct sl_producer_options {
    sl_id_t stream;        /* required; a name is copied */
    sl_id_t topic;         /* required; a name is copied */
    uint8_t partitioning;  /* SL_PRODUCER_*; 0: SL_PRODUCER_BALANCED */
    uint32_t partition_id; /* SL_PRODUCER_PARTITION */
    void *partitioner_ctx;
    sl_producer_partitioner_t partitioner; /* SL_PRODUCER_CUSTOM */
    uint32_t batch_count; /* a batch is sent when it holds this many messages; 0: 1000 */
    /* ... or would exceed this many payload and header bytes; 0: 1 MiB. A
     * batch is also cut where the request would exceed the client's frame
     * limit. */
    size_t batch_bytes;
    /* ... or when its first message has waited this long (0: 5 ms). In the
     * foreground the wait is only noticed by sl_producer_send and
     * sl_producer_tick: call tick from the loop. */
    uint32_t linger_ms;
    /* Background only: messages queued and not yet sent may hold this many
     * bytes (0: 64 MiB); sl_producer_send waits for room up to
     * send_timeout_ms (0: as long as it takes) and then fails with
     * -SL_ERR_BACKGROUND_SEND_BUFFER_FULL. */
    size_t queue_bytes_max;
    uint32_t send_timeout_ms;
    void *batch_done_ctx;
    sl_producer_batch_done_t batch_done; /* NULL: no reports */
    /* Pipelining (client.h, "pipelined sends and polls"): a batch is
     * written and its reply collected only after the next batch has been
     * built and written behind it, so the client's work on a batch (frame
     * and batch checksums, copies, ids) overlaps the previous batch's trip.
     * Two batches are in flight at most; the server stores them in order,
     * and reports come in order. What changes with it:
     * - a 57/58 refusal is reported, not replayed (a replay would reorder
     *   batches); reconnects still happen before a batch when none is in
     *   flight;
     * - a lost connection fails every batch in flight (outcome unknown, as
     *   for a lost reply);
     * - foreground: the last batch a call sent may still be in flight when
     *   it returns. Its error is returned by the producer call that
     *   collects it (a later send that sends a batch, tick, flush or
     *   close), and reported then. Until a tick or a flush the borrowed
     *   client is busy: other calls on it return -SL_ERR_INVALID_COMMAND.
     * false: lockstep, one batch per round trip. */
    bool pipeline;
} sl_producer_options_t;

/* Credentials of the background producer's own connection: a token, or a
 * username and password. */
typedef struct sl_credentials {
    const char *username;
    const char *password;
    const char *token; /* non-NULL: log in with this personal access token */
} sl_credentials_t;

/* One message to queue. Everything is copied by sl_producer_send. */
typedef struct sl_producer_message {
    const void *payload;
    size_t payload_len; /* 0..64 000 000 */
    const void *key;    /* SL_PRODUCER_KEY: 1..255 bytes; otherwise only passed to a partitioner */
    size_t key_len;
    const sl_header_t *headers; /* typed user headers, encoded at once */
    uint32_t headers_count;
    sl_msg_id_t id;               /* {0, 0}: a random UUIDv4 when sent */
    uint64_t origin_timestamp_us; /* 0: the time of sl_producer_send */
} sl_producer_message_t;

typedef struct sl_producer_stats {
    uint64_t queued;  /* messages accepted by sl_producer_send */
    uint64_t sent;    /* messages in batches the server accepted */
    uint64_t failed;  /* messages in batches that failed */
    uint64_t batches; /* batches sent, failed ones included */
    uint64_t pending; /* queued, neither sent nor failed yet */
} sl_producer_stats_t;

/* A foreground producer on client (logged in; borrowed, see above). For
 * SL_PRODUCER_KEY and _CUSTOM the topic is read once (GetTopic) to count its
 * partitions. Errors: -SL_ERR_INVALID_COMMAND for options that make no
 * sense (no stream or topic, an unknown partitioning, _CUSTOM without a
 * partitioner), -SL_ERR_TOPIC_ID_NOT_FOUND / _NAME_NOT_FOUND when the topic
 * is missing there, the client's errors, -SL_ERR_ERROR (no memory). */
int sl_producer_open(sl_client_t *client, const sl_producer_options_t *options,
                     sl_producer_t **out) SL_CLIENT_WUR;

/* A background producer: connects to host:port with client_options (NULL:
 * defaults; its reconnect and retry settings apply to the producer's
 * connection), logs in with credentials, checks the topic as open does, and
 * starts the sending thread. All of that happens before it returns, so
 * connection and login errors are reported here. */
int sl_producer_open_background(const char *host, uint16_t port,
                                const sl_client_options_t *client_options,
                                const sl_credentials_t *credentials,
                                const sl_producer_options_t *options,
                                sl_producer_t **out) SL_CLIENT_WUR;

/* Queues one message (copied). Errors: -SL_ERR_INVALID_COMMAND (NULL
 * payload with a length), -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD, the user-header
 * errors of sl_client_send_add, -SL_ERR_INVALID_KEY_VALUE_LENGTH (a key of 0
 * or over 255 bytes with SL_PRODUCER_KEY), -SL_ERR_PARTITION_NOT_FOUND (a
 * partitioner's answer out of range), -SL_ERR_COMMAND_LENGTH_ERROR (the
 * message cannot fit one request), -SL_ERR_CLIENT_SHUTDOWN (close has
 * begun), -SL_ERR_BACKGROUND_SEND_BUFFER_FULL (see queue_bytes_max),
 * -SL_ERR_ERROR. Foreground: when the message would push its partition's
 * batch over batch_bytes, that batch is sent first; when it fills the batch
 * (batch_count, batch_bytes), or another batch's linger is up, those are
 * sent before the call returns. Such a send's error is returned (and
 * reported), although the message itself was queued all the same. */
int sl_producer_send(sl_producer_t *producer, const sl_producer_message_t *message) SL_CLIENT_WUR;

/* Queues a payload with no key, headers or id. */
static inline int sl_producer_send_payload(sl_producer_t *producer, const void *payload, size_t len)
{
    sl_producer_message_t m = {payload, len, NULL, 0, NULL, 0, {0, 0}, 0};
    return sl_producer_send(producer, &m);
}

/* Foreground: sends the batches whose linger time is up, and ticks the
 * client (heartbeat, reconnect: sl_client_tick). Returns the first error.
 * Background: nothing to do (the thread lingers and ticks); returns 0. */
int sl_producer_tick(sl_producer_t *producer) SL_CLIENT_WUR;

/* Sends everything queued before the call and waits until it has been sent
 * or has failed. Returns 0 when every batch since the previous flush (or
 * open) was stored, else the first error among them (which clears it).
 * Background: messages queued by other threads while the flush waits may
 * go out with it, but are not waited for. */
int sl_producer_flush(sl_producer_t *producer) SL_CLIENT_WUR;

/* Counters, as of the call. Thread-safe in the background. */
void sl_producer_stats(sl_producer_t *producer, sl_producer_stats_t *out);

/* Flushes (as sl_producer_flush), stops the thread, closes the producer's
 * own client (background) and frees everything; returns the flush's
 * result. Messages that cannot be sent are dropped and counted as failed.
 * NULL is allowed (returns 0). Sends after close has begun fail with
 * -SL_ERR_CLIENT_SHUTDOWN; the pointer is invalid once it returns. */
int sl_producer_close(sl_producer_t *producer);

#ifdef __cplusplus
}
#endif

#endif
