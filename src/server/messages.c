/* The message plane (messages.md, commands.md 6-7): SendMessages,
 * PollMessages and the consumer offsets, over the partitions of
 * server/partitions.h. Resolution, permissions and consumer-group fencing
 * happen here; the store sees plain numbers. */
#include <errno.h>
#include <sluice/error.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/encryption.h"
#include "server/reads.h"
#include "store/offsets.h"
#include "wire/cmd_messages.h"
#include "wire/codec.h"
#include "wire/command.h"

/* A resolved (stream, topic) pair of a message request. */
typedef struct target {
    const sl_meta_stream_t *stream;
    const sl_meta_topic_t *topic;
    sl_topic_rt_t *rt;
} target_t;

static bool resolve(sl_server_t *srv, const sl_ident_t *stream, const sl_ident_t *topic,
                    target_t *t)
{
    t->stream = sl_meta_stream_find(srv->meta, stream);
    t->topic = t->stream ? sl_meta_topic_find(t->stream, topic) : NULL;
    t->rt = t->topic ? sl_partitions_topic(&srv->partitions, t->stream->id, t->topic->id) : NULL;
    return t->rt != NULL;
}

/* --- SendMessages (101) ------------------------------------------------------------- */

/* encodings.md 5: the partition a send goes to; false when none. */
static bool choose_partition(const sl_partitioning_t *p, sl_topic_rt_t *rt, uint32_t *id)
{
    uint32_t n = rt->partitions_count;
    switch (p->kind) {
    case SL_PARTITIONING_PARTITION_ID:
        *id = p->partition_id;
        return *id < n;
    case SL_PARTITIONING_BALANCED:
        if (n == 0)
            return false;
        *id = (uint32_t)(rt->balanced_next % n);
        rt->balanced_next = (rt->balanced_next + 1) % n;
        return true;
    case SL_PARTITIONING_MESSAGES_KEY:
        if (n == 0)
            return false;
        *id = sl_partitioning_key_index(p->key, n);
        return true;
    }
    return false;
}

static uint64_t next_message_timestamp(sl_server_t *srv)
{
    uint64_t now = sl_clock_realtime_us();
    srv->last_message_ts = now > srv->last_message_ts ? now : srv->last_message_ts + 1;
    return srv->last_message_ts;
}

/* The reply of one send: its confirmation, or the append's error (the
 * frame goes back to the pool then: the partition did not take it). */
static void answer_send(sl_staged_send_t *e, int rc, uint64_t base_offset)
{
    sl_session_t *s = e->session;
    if (rc != 0) {
        sl_frame_pool_put(s->server->frame_pool, e->frame);
        sl_log_error("append to partition %u of topic %u, stream %u failed: %s", e->partition_id,
                     e->topic_id, e->stream_id, sl_strerror(rc));
        return sl_reply_status(s, &e->req, (uint32_t)-rc);
    }
    sl_send_confirmation_t c = {e->stream_id, e->topic_id, e->partition_id, base_offset};
    sl_send_messages_reply_t r = {1, &c};
    sl_buf_reset(&s->reply_body);
    if (sl_send_messages_reply_encode(&s->reply_body, &r) != 0)
        return sl_reply_status(s, &e->req, SL_ERR_ERROR);
    sl_reply_body(s, &e->req, SL_OP_SEND_MESSAGES);
}

/* Keeps a send for the turn's group commit; false (nothing kept) when the
 * list cannot grow, and the caller appends at once instead. */
static bool stage(sl_server_t *srv, const sl_staged_send_t *send)
{
    if (srv->staged_count == srv->staged_cap) {
        uint32_t cap = srv->staged_cap ? 2 * srv->staged_cap : 16;
        sl_staged_send_t *staged = realloc(srv->staged, cap * sizeof(*staged));
        if (staged)
            srv->staged = staged;
        sl_partition_batch_t *batches = realloc(srv->staged_batches, cap * sizeof(*batches));
        if (batches)
            srv->staged_batches = batches;
        uint64_t *bases = realloc(srv->staged_bases, cap * sizeof(*bases));
        if (bases)
            srv->staged_bases = bases;
        uint32_t *picks = realloc(srv->staged_picks, cap * sizeof(*picks));
        if (picks)
            srv->staged_picks = picks;
        if (!staged || !batches || !bases || !picks)
            return false;
        srv->staged_cap = cap;
    }
    srv->staged[srv->staged_count++] = *send;
    return true;
}

/* Room for the tail cache's notes of a sealed batch of count messages, or
 * NULL when there is no cache (or no memory: the batch is then not kept). */
static sl_sealed_note_t *tail_notes(sl_server_t *srv, uint32_t count)
{
    if (!srv->tail_cache || count == 0)
        return NULL;
    if (count > srv->tail_notes_cap) {
        sl_sealed_note_t *notes = realloc(srv->tail_notes, count * sizeof(*notes));
        if (!notes)
            return NULL;
        srv->tail_notes = notes;
        srv->tail_notes_cap = count;
    }
    return srv->tail_notes;
}

/* Under at-rest encryption the journal takes a sealed copy of the record, in
 * a pool buffer of its own, and the request frame goes back to the pool.
 * The sealed record must still fit a poll reply whole, so a batch within 28
 * bytes a message of the frame limit is refused (4036). 0 or the status. */
static uint32_t seal_send(sl_session_t *s, uint32_t count, sl_staged_send_t *send)
{
    sl_server_t *srv = s->server;
    size_t sealed = sl_encryption_sealed_len(send->len, count);
    if (sealed > (size_t)srv->frame_max - SL_HEADER_SIZE - SL_POLL_REPLY_PREFIX_SIZE)
        return SL_ERR_INVALID_MESSAGES_SIZE;
    uint8_t *buf = sl_frame_pool_get(srv->frame_pool, (uint32_t)sealed);
    if (!buf)
        return SL_ERR_CANNOT_ENCRYPT_DATA;
    sl_sealed_note_t *notes = tail_notes(srv, count);
    int rc = sl_encryption_seal_record_noted(srv->aead, (sl_span_t){send->record, send->len}, buf,
                                             notes);
    if (rc != 0) {
        sl_frame_pool_put(srv->frame_pool, buf);
        return (uint32_t)-rc;
    }
    /* The plaintext request frame: kept by the tail cache, or back to the pool. */
    if (notes)
        sl_tail_cache_add(srv->tail_cache, send->frame, send->record, buf, notes, count);
    else
        sl_frame_pool_put(srv->frame_pool, send->frame);
    send->frame = send->record = buf;
    send->len = sealed;
    return 0;
}

static void send_messages(sl_session_t *s, const sl_request_header_t *req, const uint8_t *frame,
                          sl_span_t body)
{
    sl_server_t *srv = s->server;
    sl_send_messages_request_t q;
    target_t t;
    uint32_t partition_id;
    /* Every resolution failure is 20, as the reference maps them. */
    if (sl_send_messages_metadata_decode(body, &q) != 0 ||
        !resolve(srv, &q.stream_id, &q.topic_id, &t))
        return sl_reply_status(s, req, SL_ERR_RESOURCE_NOT_FOUND);
    if (!sl_meta_allow(srv->meta, s->user_id, SL_PERM_SEND_MESSAGES, t.stream->id, t.topic->id))
        return sl_reply_status(s, req, SL_ERR_UNAUTHORIZED);
    if (!choose_partition(&q.partitioning, t.rt, &partition_id) || !t.rt->partitions[partition_id])
        return sl_reply_status(s, req, SL_ERR_RESOURCE_NOT_FOUND);
    /* The batch checksum's input is kept for the stamp of an immediate
     * append (not for a staged one: the next send reuses the buffer). */
    int rc = sl_batch_validate_keep(q.batch, q.messages_count, &srv->batch_sums);
    if (rc != 0)
        return sl_reply_status(s, req, (uint32_t)-rc);
    s->server->metrics.messages_in += q.messages_count;
    sl_otel_target(&s->span, t.stream->id, t.topic->id, partition_id, q.messages_count);
    sl_otel_admitted(&s->span);
    if (srv->cluster) {
        /* Replicated: the partition's group stamps, journals and appends
         * the record on every node; the reply waits for the commit. The
         * frame stays the connection's (the replica copies the record). */
        return sl_cluster_send_messages(srv->cluster, s, req, t.stream->id, t.topic->id,
                                        partition_id, q.batch);
    }

    /* The frame becomes the journal's: no copy of the messages. Everything
     * read from it must be read before the append (a flush may free it). */
    size_t record_at = (size_t)(q.batch.ptr - frame);
    uint8_t *owned = sl_conn_take_frame(s->conn);
    sl_assert(owned == frame);
    sl_staged_send_t send = {
        .session = s,
        .req = *req,
        .partition = t.rt->partitions[partition_id],
        .frame = owned,
        .record = owned + record_at,
        .len = q.batch.len,
        .stream_id = t.stream->id,
        .topic_id = t.topic->id,
        .partition_id = partition_id,
    };
    if (srv->aead) {
        uint32_t status = seal_send(s, q.messages_count, &send);
        if (status != 0) {
            sl_frame_pool_put(srv->frame_pool, send.frame);
            return sl_reply_status(s, req, status);
        }
    }
    /* enforce_fsync: wait for the turn's group commit; otherwise the flush
     * gate decides and the append answers at once. */
    if (t.topic->config.enforce_fsync && stage(srv, &send))
        return;
    sl_partition_batch_t batch = {send.frame, send.record, send.len, srv->batch_sums.data,
                                  srv->batch_sums.len};
    if (batch.sums_len == 0 || srv->aead) {
        batch.sums = NULL; /* none kept (or sealed since): the stamp walks the frames */
        batch.sums_len = 0;
    }
    uint64_t base_offset = 0;
    size_t accepted;
    sl_otel_journal_begin(srv->otel);
    rc = sl_partition_append_many(send.partition, &batch, 1, next_message_timestamp(srv),
                                  &base_offset, &accepted);
    sl_otel_journal_end(srv->otel);
    answer_send(&send, rc, base_offset);
}

void sl_messages_commit_staged(sl_server_t *srv)
{
    /* Partitions in the order of their first staged send; inside one, the
     * order the sends arrived in, which is the order of their offsets. */
    for (uint32_t i = 0; i < srv->staged_count; i++) {
        sl_partition_t *p = srv->staged[i].partition;
        if (p == NULL)
            continue; /* answered with an earlier partition */
        uint32_t k = 0;
        for (uint32_t j = i; j < srv->staged_count; j++) {
            sl_staged_send_t *e = &srv->staged[j];
            if (e->partition != p)
                continue;
            srv->staged_picks[k] = j;
            srv->staged_batches[k++] =
                (sl_partition_batch_t){.owner = e->frame, .record = e->record, .len = e->len};
        }
        size_t accepted = 0;
        sl_otel_journal_begin(srv->otel);
        int rc = sl_partition_append_many(p, srv->staged_batches, k, next_message_timestamp(srv),
                                          srv->staged_bases, &accepted);
        sl_otel_journal_end(srv->otel);
        for (uint32_t m = 0; m < k; m++) {
            sl_staged_send_t *e = &srv->staged[srv->staged_picks[m]];
            answer_send(e, m < accepted ? 0 : rc, m < accepted ? srv->staged_bases[m] : 0);
            e->partition = NULL;
        }
    }
    srv->staged_count = 0;
}

/* --- consumers ------------------------------------------------------------------------ */

/* The offsets key of a consumer: a single consumer's id (names hashed), or
 * the group's numeric id; false when the group does not resolve. */
static bool consumer_key(const sl_meta_topic_t *topic, const sl_consumer_t *c,
                         sl_offsets_kind_t *kind, uint32_t *id, const sl_meta_group_t **group)
{
    *group = NULL;
    if (c->kind == SL_CONSUMER_SINGLE) {
        *kind = SL_OFFSETS_CONSUMER;
        *id = sl_consumer_key(&c->id);
        return true;
    }
    *kind = SL_OFFSETS_GROUP;
    *group = sl_meta_group_find(topic, &c->id);
    if (!*group)
        return false;
    *id = (*group)->id;
    return true;
}

/* A group consumer may only touch partitions its member owns now. */
static bool group_owns(sl_session_t *s, const sl_meta_group_t *g, uint32_t partition_id)
{
    const sl_meta_member_t *m = sl_meta_member_find(g, s->client);
    return m && sl_meta_member_owns(m, partition_id);
}

/* --- PollMessages (100) ------------------------------------------------------------------ */

static void poll_empty(sl_session_t *s, const sl_request_header_t *req, uint32_t partition_id,
                       uint64_t current_offset)
{
    sl_buf_reset(&s->reply_body);
    sl_poll_messages_reply_begin(&s->reply_body, partition_id, current_offset);
    sl_reply_body(s, req, SL_OP_NON_REPLICATED);
}

/* Where a poll starts (commands.md 100); false when it returns nothing. */
static bool poll_start(sl_partition_t *p, const sl_poll_messages_request_t *q,
                       sl_offsets_kind_t kind, uint32_t key, sl_partition_poll_t *pq)
{
    pq->kind = SL_PARTITION_POLL_OFFSET;
    pq->count = q->count;
    uint64_t current = sl_partition_current_offset(p);
    uint64_t stored;
    switch (q->strategy.kind) {
    case SL_STRATEGY_OFFSET:
        pq->value = q->strategy.value;
        return true;
    case SL_STRATEGY_TIMESTAMP:
        pq->kind = SL_PARTITION_POLL_TIMESTAMP;
        pq->value = q->strategy.value;
        return true;
    case SL_STRATEGY_FIRST:
        pq->value = sl_partition_first_offset(p);
        return true;
    case SL_STRATEGY_LAST:
        pq->value = current >= q->count - 1 ? current - (q->count - 1) : 0;
        return true;
    case SL_STRATEGY_NEXT:
        /* After the stored offset, or from the start when none is stored. */
        pq->value = sl_offsets_get(p, kind, key, &stored) == 0 ? stored + 1 : 0;
        return true;
    }
    return false;
}

/* Fills the reply with at most SL_POLL_REPLY_SLICE bytes of records, or, when not one record
 * fits in that, with up to grant bytes (one large record is served whole). Under encryption
 * these are the sealed records, which open_polled opens where they lie (opening only shrinks
 * them). */
static int poll_into(sl_session_t *s, sl_partition_t *p, const sl_partition_poll_t *pq,
                     size_t grant, uint32_t partition_id, uint64_t current, size_t *count_at,
                     sl_partition_poll_result_t *res)
{
    size_t slice = SL_POLL_REPLY_PREFIX_SIZE + SL_POLL_REPLY_SLICE;
    size_t max = grant < slice ? grant : slice;
    for (int pass = 0; pass < 2; pass++) {
        sl_buf_reset(&s->reply_body);
        s->reply_body.max = max;
        *count_at = sl_poll_messages_reply_begin(&s->reply_body, partition_id, current);
        int rc = sl_partition_poll(p, pq, &s->reply_body, res);
        if (rc != 0 || res->messages > 0 || !res->out_full || max == grant)
            return rc;
        max = grant;
    }
    return 0;
}

/* Under at-rest encryption, opens the sealed records a poll read into the
 * reply after its prefix, in place (one pass: each blob is decrypted where
 * it lies and its frame moved down over the gap the nonce and tag leave).
 * false, with the failure logged, when one does not verify: the poll then
 * fails closed rather than serve wrong bytes. */
static bool open_polled(sl_session_t *s, size_t count_at, uint32_t stream_id, uint32_t topic_id,
                        uint32_t partition_id)
{
    sl_server_t *srv = s->server;
    sl_buf_t *b = &s->reply_body;
    size_t at = count_at + 4, opened = 0;
    uint64_t bad_offset = 0;
    int rc = sl_buf_ok(b) && b->len >= at
                 ? sl_encryption_open_run_cached(srv->aead, srv->tail_cache, b->data + at,
                                                 b->len - at, &opened, &bad_offset)
                 : -SL_ERR_ERROR;
    if (rc == 0) {
        b->len = at + opened;
        return true;
    }
    if (rc == -SL_ERR_CANNOT_DECRYPT_DATA)
        sl_log_error("poll of stream %u, topic %u, partition %u: message at offset %llu cannot "
                     "be decrypted (wrong key, or the data was changed on disk); answered %u "
                     "CannotDecryptData",
                     stream_id, topic_id, partition_id, (unsigned long long)bad_offset,
                     SL_ERR_CANNOT_DECRYPT_DATA);
    else
        sl_log_error("poll of stream %u, topic %u, partition %u: the reply holds no records to "
                     "open; answered %u CannotDecryptData",
                     stream_id, topic_id, partition_id, SL_ERR_CANNOT_DECRYPT_DATA);
    return false;
}

/* Cluster mode: the offset goes through the partition's group, and nobody
 * waits for it (a poll is answered from this node's applied state). */
static void auto_commit_cluster(sl_session_t *s, const sl_request_header_t *poll_req,
                                uint32_t stream_id, uint32_t topic_id, uint32_t partition_id,
                                sl_offsets_kind_t kind, uint32_t key, uint64_t offset)
{
    sl_request_header_t req = *poll_req;
    req.operation = SL_OP_STORE_CONSUMER_OFFSET;
    sl_cluster_offset_op_t op = {.stream_id = stream_id,
                                 .topic_id = topic_id,
                                 .partition_id = partition_id,
                                 .kind = (int)kind,
                                 .id = key,
                                 .offset = offset,
                                 .never_backwards = true};
    sl_cluster_store_offset(s->server->cluster, s, &req, &op);
}

static void poll_messages(sl_read_t *c)
{
    sl_session_t *s = c->s;
    sl_server_t *srv = s->server;
    sl_poll_messages_request_t q;
    if (sl_poll_messages_request_decode(c->body, &q) != 0)
        return poll_empty(s, c->req, 0, 0);
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &q.stream_id);
    if (!st)
        return sl_read_status(c, SL_ERR_STREAM_ID_NOT_FOUND);
    const sl_meta_topic_t *t = sl_meta_topic_find(st, &q.topic_id);
    if (!t)
        return sl_read_status(c, SL_ERR_TOPIC_ID_NOT_FOUND);
    if (!sl_read_allowed(c, SL_PERM_POLL_MESSAGES, st->id, t->id))
        return;
    sl_offsets_kind_t kind;
    uint32_t key;
    const sl_meta_group_t *g;
    if (q.consumer.kind == SL_CONSUMER_GROUP && !q.partition.present)
        return poll_empty(s, c->req, 0, 0);
    if (!consumer_key(t, &q.consumer, &kind, &key, &g) || (g && !group_owns(s, g, q.partition.id)))
        return poll_empty(s, c->req, SL_POLL_RESYNC_PARTITION, 0);
    uint32_t partition_id = q.partition.present ? q.partition.id : 0;
    sl_partition_t *p = sl_partitions_get(&srv->partitions, st->id, t->id, partition_id);
    if (!p)
        return sl_read_status(c, SL_ERR_PARTITION_NOT_FOUND);
    /* A replica out of its partition's group holds stale segments: 58, which
     * a client retries (on another node once its leader moves). */
    if (srv->cluster && !sl_cluster_partition_current(srv->cluster, st->id, t->id, partition_id))
        return sl_read_status(c, SL_ERR_TRANSIENT_NOT_ACCEPTED);

    sl_partition_poll_t pq;
    uint64_t current = sl_partition_current_offset(p);
    if (q.count == 0 || sl_partition_empty(p) || !poll_start(p, &q, kind, key, &pq))
        return poll_empty(s, c->req, partition_id, current);
    /* The reply fills what the reply budget grants; the store stops before
     * a record that does not fit (res.out_full), so a poll may return
     * fewer messages than asked, as the protocol allows. */
    size_t want = srv->frame_max - SL_HEADER_SIZE;
    size_t grant = sl_reply_budget_grant(s, want);
    size_t count_at;
    sl_partition_poll_result_t res;
    int rc = poll_into(s, p, &pq, grant, partition_id, current, &count_at, &res);
    if (rc == 0 && res.messages > 0 && srv->aead &&
        !open_polled(s, count_at, st->id, t->id, partition_id)) {
        sl_buf_reset(&s->reply_body);
        rc = -SL_ERR_CANNOT_DECRYPT_DATA;
    }
    s->reply_body.max = want;
    sl_reply_budget_account(s);
    if (rc == -SL_ERR_CANNOT_DECRYPT_DATA)
        return sl_read_status(c, SL_ERR_CANNOT_DECRYPT_DATA);
    if (rc != 0)
        return poll_empty(s, c->req, partition_id, 0);
    if (res.messages == 0 && res.out_full && grant < want) {
        /* Not one message fits what is left: wait for bytes to come back. */
        sl_buf_reset(&s->reply_body);
        return sl_reply_budget_park(s, c->req, c->body);
    }
    sl_buf_patch_u32(&s->reply_body, count_at, res.messages);
    srv->metrics.messages_out += res.messages;
    sl_otel_target(&s->span, st->id, t->id, partition_id, res.messages);
    if (q.auto_commit && res.messages > 0 && srv->cluster)
        auto_commit_cluster(s, c->req, st->id, t->id, partition_id, kind, key, res.last_offset);
    else if (q.auto_commit && res.messages > 0 &&
             sl_offsets_store(p, kind, key, res.last_offset, false, true) != 0)
        sl_log_warn("auto-commit of offset %llu failed", (unsigned long long)res.last_offset);
    sl_reply_body(s, c->req, SL_OP_NON_REPLICATED);
}

void sl_messages_poll_resume(sl_session_t *s)
{
    /* The request is judged again as dispatch would judge it now: the
     * session or its user may be gone, the topic deleted. */
    sl_request_header_t req = s->parked_req;
    if (!sl_admit_user_current(s) || !s->bound)
        return sl_reply_status(s, &req, SL_ERR_UNAUTHENTICATED);
    sl_arena_reset(&s->arena);
    sl_buf_reset(&s->reply_body);
    sl_read_t c = {s, &req, s->parked_body, s->server->meta, &s->reply_body};
    poll_messages(&c);
}

/* --- consumer offsets (120, 121, 122) ------------------------------------------------------ */

static void get_consumer_offset(sl_read_t *c)
{
    sl_server_t *srv = c->s->server;
    sl_get_consumer_offset_request_t q;
    if (sl_get_consumer_offset_request_decode(c->body, &q) != 0)
        return sl_read_ok(c);
    const sl_meta_stream_t *st = sl_meta_stream_find(srv->meta, &q.stream_id);
    const sl_meta_topic_t *t = st ? sl_meta_topic_find(st, &q.topic_id) : NULL;
    if (!t)
        return sl_read_ok(c);
    if (!sl_read_allowed(c, SL_PERM_POLL_MESSAGES, st->id, t->id))
        return;
    sl_offsets_kind_t kind;
    uint32_t key;
    const sl_meta_group_t *g;
    if (!consumer_key(t, &q.consumer, &kind, &key, &g))
        return sl_read_ok(c);
    uint32_t partition_id = q.partition.present ? q.partition.id : 0;
    sl_partition_t *p = sl_partitions_get(&srv->partitions, st->id, t->id, partition_id);
    if (!p)
        return sl_read_status(c, SL_ERR_PARTITION_NOT_FOUND);
    uint64_t stored;
    if (sl_offsets_get(p, kind, key, &stored) != 0)
        return sl_read_ok(c);
    sl_get_consumer_offset_reply_t r = {true, partition_id, sl_partition_current_offset(p), stored};
    if (sl_get_consumer_offset_reply_encode(c->out, &r) != 0)
        return sl_read_status(c, SL_ERR_ERROR);
    sl_read_ok(c);
}

/* Store and delete share resolution: the partition and the offsets key, or
 * the status to answer (20, 41). */
static int offset_target(sl_session_t *s, const sl_consumer_t *consumer, const sl_ident_t *stream,
                         const sl_ident_t *topic, sl_opt_partition_t part, sl_partition_t **p,
                         sl_offsets_kind_t *kind, uint32_t *key, bool *fsync,
                         sl_cluster_offset_op_t *op)
{
    sl_server_t *srv = s->server;
    target_t t;
    const sl_meta_group_t *g;
    if (!part.present || !resolve(srv, stream, topic, &t))
        return SL_ERR_RESOURCE_NOT_FOUND;
    if (!sl_meta_allow(srv->meta, s->user_id, SL_PERM_POLL_MESSAGES, t.stream->id, t.topic->id))
        return SL_ERR_UNAUTHORIZED;
    *p = sl_partitions_get(&srv->partitions, t.stream->id, t.topic->id, part.id);
    if (!*p || !consumer_key(t.topic, consumer, kind, key, &g) || (g && !group_owns(s, g, part.id)))
        return SL_ERR_RESOURCE_NOT_FOUND;
    *fsync = t.rt->enforce_fsync;
    *op = (sl_cluster_offset_op_t){.stream_id = t.stream->id,
                                   .topic_id = t.topic->id,
                                   .partition_id = part.id,
                                   .kind = (int)*kind,
                                   .id = *key};
    return 0;
}

static void offset_done(sl_session_t *s, const sl_request_header_t *req)
{
    sl_buf_reset(&s->reply_body);
    sl_result_put_ok(&s->reply_body);
    sl_reply_body(s, req, req->operation);
}

/* Cluster mode: through the partition's group. ack Quorum answers after
 * the commit; NoAck at once, and the group still replicates it. */
static void offset_cluster(sl_session_t *s, const sl_request_header_t *req,
                           sl_cluster_offset_op_t *op, uint8_t ack)
{
    op->wait = ack == SL_ACK_QUORUM;
    op->answer_now = !op->wait;
    sl_cluster_store_offset(s->server->cluster, s, req, op);
}

static void store_consumer_offset(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_store_consumer_offset_request_t q;
    sl_partition_t *p;
    sl_offsets_kind_t kind;
    uint32_t key;
    bool fsync;
    sl_cluster_offset_op_t op;
    int rc = sl_store_consumer_offset_request_decode(body, &q) != 0
                 ? SL_ERR_RESOURCE_NOT_FOUND
                 : offset_target(s, &q.consumer, &q.stream_id, &q.topic_id, q.partition, &p, &kind,
                                 &key, &fsync, &op);
    if (rc != 0)
        return sl_reply_status(s, req, (uint32_t)rc);
    if (sl_partition_empty(p) || q.offset > sl_partition_current_offset(p))
        return sl_reply_status(s, req, SL_ERR_INVALID_OFFSET);
    if (s->server->cluster) {
        op.offset = q.offset;
        return offset_cluster(s, req, &op, q.ack);
    }
    rc = sl_offsets_store(p, kind, key, q.offset, fsync, false);
    if (rc != 0)
        return sl_reply_status(s, req, (uint32_t)-rc);
    offset_done(s, req);
}

static void delete_consumer_offset(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_delete_consumer_offset_request_t q;
    sl_partition_t *p;
    sl_offsets_kind_t kind;
    uint32_t key;
    bool fsync;
    sl_cluster_offset_op_t op;
    int rc = sl_delete_consumer_offset_request_decode(body, &q) != 0
                 ? SL_ERR_RESOURCE_NOT_FOUND
                 : offset_target(s, &q.consumer, &q.stream_id, &q.topic_id, q.partition, &p, &kind,
                                 &key, &fsync, &op);
    if (rc != 0)
        return sl_reply_status(s, req, (uint32_t)rc);
    if (s->server->cluster) {
        uint64_t stored;
        if (sl_offsets_get(p, kind, key, &stored) != 0)
            return sl_reply_status(s, req, SL_ERR_CONSUMER_OFFSET_NOT_FOUND);
        op.remove = true;
        return offset_cluster(s, req, &op, q.ack);
    }
    rc = sl_offsets_delete(p, kind, key);
    if (rc != 0)
        return sl_reply_status(s, req, (uint32_t)-rc);
    offset_done(s, req);
}

/* --- entry points ---------------------------------------------------------------------- */

void sl_messages_partition_op(sl_session_t *s, const sl_request_header_t *req, const uint8_t *frame,
                              sl_span_t body)
{
    switch (req->operation) {
    case SL_OP_SEND_MESSAGES:
        return send_messages(s, req, frame, body);
    case SL_OP_STORE_CONSUMER_OFFSET:
        return store_consumer_offset(s, req, body);
    default:
        return delete_consumer_offset(s, req, body);
    }
}

void sl_messages_read(sl_read_t *c)
{
    if (c->req->code == SL_CMD_POLL_MESSAGES)
        return poll_messages(c);
    return get_consumer_offset(c);
}
