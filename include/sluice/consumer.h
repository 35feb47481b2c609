/* libsluice consumer: a poll loop over the partitions of a topic, for a
 * single consumer (every partition, or one) or as a member of a consumer
 * group (the partitions the group assigns), with the offset committed by
 * the server as messages are polled (auto-commit) or by the application
 * (explicit commit).
 *
 * Threads and ownership. A consumer borrows a logged-in client and uses it
 * only inside its own calls, from the caller's thread: one thread at a time,
 * like the client itself, which may serve other calls in between. The client
 * must outlive the consumer; closing the consumer does not close it. Options
 * are copied at open (names included). Polled messages borrow the client's
 * receive buffer, exactly as sl_client_poll_messages results do: valid until
 * the next call on the consumer or the client. Errors are codes of
 * <sluice/error.h>.
 *
 * Positions. The consumer keeps, per partition, the offset after the last
 * message it returned, and polls from there (PollMessages by offset). A
 * partition it has not read yet starts after the consumer's (or group's)
 * stored offset, or at the first message when none is stored (the Next
 * strategy).
 *
 * Commit modes:
 *   SL_CONSUMER_COMMIT_AUTO      every poll asks the server to store the offset
 *                                of the last message it returns (auto_commit).
 *                                At most once: a crash after the poll loses the
 *                                batch being processed, never repeats it.
 *   SL_CONSUMER_COMMIT_EXPLICIT  nothing is stored until sl_consumer_commit,
 *                                which stores, per partition, the offset of the
 *                                last message returned so far. At least once:
 *                                what was returned but not committed is read
 *                                again after a restart (or by the member a
 *                                rebalance gives the partition to).
 *
 * Consumer groups (SL_CONSUMER_KIND_GROUP). Open joins the group (creating it
 * first when asked) and syncs to learn the assigned partitions. A poll that
 * meets the re-sync sentinel (the server moved the partition to another
 * member) syncs again and continues with the new assignment; so does a poll
 * after resync_interval_ms, which is how partitions given up by a member
 * that left are picked up. When a sync says the client is no longer a
 * member (a reconnect logged it in under a new session, or it was evicted),
 * the consumer joins again. Positions of partitions that stay assigned are
 * kept; partitions gained start from the group's stored offset. Close
 * leaves the group. */
#ifndef SLUICE_CONSUMER_H
#define SLUICE_CONSUMER_H

#include <sluice/client.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_message_consumer sl_message_consumer_t;

enum {
    SL_CONSUMER_COMMIT_AUTO = 1,
    SL_CONSUMER_COMMIT_EXPLICIT = 2,
};

/* Fields left at 0 / NULL take the default after their comment. */
typedef struct sl_consumer_options {
    sl_id_t stream; /* required; a name is copied */
    sl_id_t topic;  /* required; a name is copied */
    /* SL_CONSUMER_KIND_SINGLE (a consumer of its own, named consumer_id) or
     * SL_CONSUMER_KIND_GROUP (a member of the group consumer_id), as in
     * client.h; 0: single. */
    uint8_t kind;
    /* The consumer's id or name (single), or the group's (group). A name
     * is copied. Required. */
    sl_id_t consumer_id;
    /* Single: the one partition to read, or SL_PARTITION_NONE for all the
     * partitions the topic has at open. Ignored for groups. Note that 0 is
     * a valid partition id: set SL_PARTITION_NONE explicitly for all. */
    uint32_t partition;
    bool create_group;    /* group: create it (by name) when it does not exist */
    uint8_t commit;       /* SL_CONSUMER_COMMIT_*; 0: SL_CONSUMER_COMMIT_AUTO */
    uint32_t batch_count; /* messages per poll request; 0: 100 */
    /* How long sl_consumer_poll sleeps between rounds that found nothing;
     * 0: 100. The client is ticked (heartbeat, reconnect) between rounds. */
    uint32_t idle_ms;
    uint32_t resync_interval_ms; /* group: sync at least this often; 0: 1000 */
    /* Pipelining (client.h, "pipelined sends and polls"): when a poll
     * returns messages, the poll the next round makes (the same partition
     * from after them, or the next partition from its position) is put in
     * flight before their checksums are verified, so the server reads and
     * sends the next batch while this one is checked and used. The next
     * sl_consumer_poll collects it; when it no longer fits (the position
     * did not move there: a failed check; a sync; a commit; close) it is
     * collected and dropped. What changes with it:
     * - between consumer calls a poll may be in flight, and other calls on
     *   the borrowed client return -SL_ERR_INVALID_COMMAND until the next
     *   sl_consumer_poll, sl_consumer_commit or sl_consumer_close;
     * - with SL_CONSUMER_COMMIT_AUTO the server stores the offset of the
     *   poll in flight when it serves it, before the application has seen
     *   those messages: a crash can lose two batches rather than one (still
     *   at most once). A poll that is dropped has the last returned offset
     *   stored again, so dropping loses nothing.
     * Single consumers only: group members ignore it and poll lockstep
     * (a rebalance could give a partition to another member while a poll
     * of it is in flight and already auto-committed by the server, and
     * that batch would be skipped or read twice).
     * false: lockstep, one poll per round trip. */
    bool pipeline;
} sl_consumer_options_t;

/* Opens a consumer on client (logged in; borrowed). Single consumers over
 * all partitions read the topic (GetTopic) to count them; groups are
 * created (when asked), joined and synced here. Errors: -SL_ERR_INVALID_COMMAND
 * for options that make no sense (missing ids, unknown kind or commit mode,
 * create_group with a numeric group id), -SL_ERR_TOPIC_NAME_NOT_FOUND /
 * _ID_NOT_FOUND, -SL_ERR_CONSUMER_GROUP_ID_NOT_FOUND (no such group and
 * create_group is false; sluiced reports a missing group by id, also when
 * it was named), the client's errors,
 * -SL_ERR_ERROR (no memory). */
int sl_consumer_open(sl_client_t *client, const sl_consumer_options_t *options,
                     sl_message_consumer_t **out) SL_CLIENT_WUR;

/* Returns the next batch of messages of one partition (out->partition_id),
 * trying the partitions in turn. Waits up to timeout_ms for messages
 * (0: one round, no wait), polling a round every idle_ms; returns 0 with
 * out->count == 0 when none arrived in time. out->resync_required is never
 * set: the consumer handles the sentinel itself. The messages borrow the
 * client's receive buffer (see above). Errors are the client's (the poll,
 * the sync, a re-join); the consumer stays usable after them. */
int sl_consumer_poll(sl_message_consumer_t *consumer, uint32_t timeout_ms,
                     sl_polled_messages_t *out) SL_CLIENT_WUR;

/* SL_CONSUMER_COMMIT_EXPLICIT: stores the offset of the last message
 * returned, for every partition read since its last commit (StoreConsumerOffset,
 * quorum ack). Returns the first error; partitions that failed stay
 * uncommitted and are tried again by the next commit. With auto-commit:
 * nothing to do, returns 0. Ends the results of the previous poll. */
int sl_consumer_commit(sl_message_consumer_t *consumer) SL_CLIENT_WUR;

/* The partitions the consumer reads now (assigned ones for a group):
 * *partitions points into the consumer, valid until its next call.
 * Single consumers report the partitions chosen at open. */
void sl_consumer_partitions(const sl_message_consumer_t *consumer, const uint32_t **partitions,
                            uint32_t *count);

/* Leaves the group (best effort; the server also drops the membership when
 * the connection ends) and frees the consumer. Does not commit: call
 * sl_consumer_commit first in explicit mode. The client stays open. NULL is
 * allowed. */
void sl_consumer_close(sl_message_consumer_t *consumer);

#ifdef __cplusplus
}
#endif

#endif
