/* The consumer of <sluice/consumer.h>: per-partition positions, the poll
 * loop over them, explicit or server-side commits, and consumer-group
 * membership (join, sync, re-sync on the sentinel or a timer, re-join when
 * the membership was lost). */
#include <sluice/consumer.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "client/client_internal.h"

#define CONSUMER_BATCH_COUNT_DEFAULT 100u
#define CONSUMER_IDLE_MS_DEFAULT     100u
#define CONSUMER_RESYNC_MS_DEFAULT   1000u

typedef struct part {
    uint32_t id;
    bool known;    /* next holds the position */
    uint64_t next; /* the offset to poll from */
    bool dirty;    /* explicit commits: returned since the last commit */
    uint64_t last; /* the offset of the last message returned */
} part_t;

struct sl_message_consumer {
    sl_client_t *client;
    char stream_name[256];
    char topic_name[256];
    char consumer_name[256];
    sl_consumer_options_t o; /* defaults applied; names point at the copies */
    part_t *parts;
    uint32_t *ids; /* parts[i].id, for sl_consumer_partitions */
    uint32_t count;
    uint32_t cursor; /* the partition the next round starts with */
    bool member;     /* joined (group) */
    bool need_sync;
    uint64_t synced_us;
    /* options.pipeline: the poll in flight, for partition ahead_id from
     * ahead_offset (ahead_ticket 0: none). */
    uint64_t ahead_ticket;
    uint32_t ahead_id;
    uint64_t ahead_offset;
};

static sl_consumer_ref_t ref_of(const sl_message_consumer_t *cn)
{
    return cn->o.kind == SL_CONSUMER_KIND_GROUP ? sl_consumer_in_group(cn->o.consumer_id)
                                                : sl_consumer_single(cn->o.consumer_id);
}

static void pause_ms(uint32_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* --- the partition set ------------------------------------------------------------------- */

/* Replaces the partition set with ids, keeping the position of every
 * partition that stays (its reads since the last commit too). */
static int assign(sl_message_consumer_t *cn, const uint32_t *ids, uint32_t count)
{
    part_t *parts = calloc(count ? count : 1, sizeof(*parts));
    uint32_t *copy = calloc(count ? count : 1, sizeof(*copy));
    if (parts == NULL || copy == NULL) {
        free(parts);
        free(copy);
        return -SL_ERR_ERROR;
    }
    for (uint32_t i = 0; i < count; i++) {
        parts[i] = (part_t){.id = ids[i]};
        copy[i] = ids[i];
        for (uint32_t k = 0; k < cn->count; k++)
            if (cn->parts[k].id == ids[i])
                parts[i] = cn->parts[k];
    }
    free(cn->parts);
    free(cn->ids);
    cn->parts = parts;
    cn->ids = copy;
    cn->count = count;
    cn->cursor = 0;
    return 0;
}

/* A single consumer over all partitions: ids 0..n-1 of the topic now. */
static int assign_all(sl_message_consumer_t *cn)
{
    const sl_topic_t *t;
    int rc = sl_client_get_topic(cn->client, cn->o.stream, cn->o.topic, &t);
    if (rc != 0)
        return rc;
    if (t == NULL)
        return cn->o.topic.kind == SL_ID_NAME ? -SL_ERR_TOPIC_NAME_NOT_FOUND
                                              : -SL_ERR_TOPIC_ID_NOT_FOUND;
    uint32_t n = t->partitions_count;
    uint32_t *ids = calloc(n ? n : 1, sizeof(*ids));
    if (ids == NULL)
        return -SL_ERR_ERROR;
    for (uint32_t i = 0; i < n; i++)
        ids[i] = i;
    rc = assign(cn, ids, n);
    free(ids);
    return rc;
}

/* --- groups -------------------------------------------------------------------------------- */

static int join(sl_message_consumer_t *cn)
{
    int rc =
        sl_client_join_consumer_group(cn->client, cn->o.stream, cn->o.topic, cn->o.consumer_id);
    cn->member = rc == 0;
    return rc;
}

/* Syncs the assignment; a client that is no longer a member joins again
 * first (once per sync: a second refusal is an error). */
static int group_sync(sl_message_consumer_t *cn)
{
    const sl_assignment_t *a = NULL;
    int rc = 0;
    if (cn->member)
        rc = sl_client_sync_consumer_group(cn->client, cn->o.stream, cn->o.topic, cn->o.consumer_id,
                                           &a);
    if (rc == 0 && a == NULL) {
        rc = join(cn);
        if (rc == 0)
            rc = sl_client_sync_consumer_group(cn->client, cn->o.stream, cn->o.topic,
                                               cn->o.consumer_id, &a);
        if (rc == 0 && a == NULL)
            rc = -SL_ERR_CONSUMER_GROUP_MEMBER_NOT_FOUND;
    }
    if (rc != 0)
        return rc;
    rc = assign(cn, a->partitions, a->partitions_count);
    if (rc == 0) {
        cn->need_sync = false;
        cn->synced_us = sl_clock_monotonic_us();
    }
    return rc;
}

/* Creates the group by name unless it exists; a concurrent creator wins
 * quietly. */
static int ensure_group(sl_message_consumer_t *cn)
{
    const sl_consumer_group_t *g;
    int rc =
        sl_client_get_consumer_group(cn->client, cn->o.stream, cn->o.topic, cn->o.consumer_id, &g);
    if (rc != 0 || g != NULL)
        return rc;
    rc = sl_client_create_consumer_group(cn->client, cn->o.stream, cn->o.topic,
                                         cn->o.consumer_id.name, NULL);
    return rc == -SL_ERR_CONSUMER_GROUP_NAME_ALREADY_EXISTS ? 0 : rc;
}

static bool sync_due(const sl_message_consumer_t *cn)
{
    if (cn->o.kind != SL_CONSUMER_KIND_GROUP)
        return false;
    uint64_t age = sl_clock_monotonic_us() - cn->synced_us;
    return cn->need_sync || age >= (uint64_t)cn->o.resync_interval_ms * 1000u;
}

/* --- polling ----------------------------------------------------------------------------- */

/* Drops the poll in flight (its partition's position did not move to where
 * it starts, or the client is needed for another call). With auto-commit
 * the server stored the offset of messages nobody was given: the offset of
 * the last message returned is stored again, so a restart does not skip
 * them. */
static int drop_ahead(sl_message_consumer_t *cn)
{
    if (cn->ahead_ticket == 0)
        return 0;
    cn->ahead_ticket = 0;
    uint64_t ticket;
    sl_client_flight_t f;
    sl_poll_messages_reply_t w;
    int rc = sl_client_poll_receive(cn->client, &ticket, &f, &w);
    if (rc != 0 || cn->o.commit != SL_CONSUMER_COMMIT_AUTO || w.messages_count == 0)
        return rc == -SL_ERR_DISCONNECTED ? 0 : rc; /* a lost connection returned nothing */
    for (uint32_t i = 0; i < cn->count; i++)
        if (cn->parts[i].id == cn->ahead_id && cn->parts[i].known && cn->parts[i].next > 0)
            return sl_client_store_consumer_offset(cn->client, ref_of(cn), cn->o.stream,
                                                   cn->o.topic, cn->ahead_id, cn->parts[i].next - 1,
                                                   SL_ACK_LEVEL_QUORUM);
    return 0;
}

/* Pipelined: puts the poll of the partition the round reads next in flight
 * (from its known position; from `next` when it is the partition just
 * read, whose position moves once its reply is verified). A failed submit
 * only means that poll goes lockstep. */
static void submit_ahead(sl_message_consumer_t *cn, const part_t *read, uint64_t next)
{
    const part_t *q = &cn->parts[cn->cursor];
    if (q != read && !q->known)
        return;
    uint64_t from = q == read ? next : q->next;
    uint64_t ticket;
    bool auto_commit = cn->o.commit == SL_CONSUMER_COMMIT_AUTO;
    /* No connection care: the reply being returned must survive. */
    if (sl_client_poll_submit_care(cn->client, false, ref_of(cn), cn->o.stream, cn->o.topic, q->id,
                                   sl_poll_offset(from), cn->o.batch_count, auto_commit,
                                   &ticket) != 0)
        return;
    cn->ahead_ticket = ticket;
    cn->ahead_id = q->id;
    cn->ahead_offset = from;
}

/* The reply for partition p: collected from the poll in flight when it is
 * p's from p's position, else polled now (lockstep). Pipelined, the next
 * poll goes out before this reply's checksums are verified. */
static int poll_reply(sl_message_consumer_t *cn, part_t *p, sl_polled_messages_t *out)
{
    sl_poll_strategy_t from = p->known ? sl_poll_offset(p->next) : sl_poll_next();
    bool auto_commit = cn->o.commit == SL_CONSUMER_COMMIT_AUTO;
    bool mine =
        cn->ahead_ticket != 0 && cn->ahead_id == p->id && p->known && cn->ahead_offset == p->next;
    if (!mine) {
        int rc = drop_ahead(cn);
        if (rc != 0)
            return rc;
    }
    /* Group members poll lockstep: a rebalance can give the partition to
     * another member while a poll of it is in flight (and auto-committed
     * by the server), which would skip that batch or read it twice. */
    if (!cn->o.pipeline || cn->o.kind != SL_CONSUMER_KIND_SINGLE)
        return sl_client_poll_messages(cn->client, ref_of(cn), cn->o.stream, cn->o.topic, p->id,
                                       from, cn->o.batch_count, auto_commit, out);
    uint64_t ticket;
    if (!mine) {
        int rc = sl_client_poll_submit(cn->client, ref_of(cn), cn->o.stream, cn->o.topic, p->id,
                                       from, cn->o.batch_count, auto_commit, &ticket);
        if (rc != 0)
            return rc;
    }
    cn->ahead_ticket = 0;
    sl_client_flight_t f;
    sl_poll_messages_reply_t w;
    int rc = sl_client_poll_receive(cn->client, &ticket, &f, &w);
    if (rc != 0)
        return rc;
    uint64_t next;
    if (sl_client_poll_next_offset(&w, &next))
        submit_ahead(cn, p, next);
    return sl_client_poll_result(cn->client, &w, out);
}

/* One PollMessages for one partition; moves its position on. */
static int poll_part(sl_message_consumer_t *cn, part_t *p, sl_polled_messages_t *out)
{
    bool auto_commit = cn->o.commit == SL_CONSUMER_COMMIT_AUTO;
    int rc = poll_reply(cn, p, out);
    if (rc != 0 || out->resync_required || out->count == 0)
        return rc;
    uint64_t last = out->messages[out->count - 1].offset;
    p->known = true;
    p->next = last + 1;
    if (!auto_commit) {
        p->dirty = true;
        p->last = last;
    }
    return 0;
}

/* One pass over the partitions, starting after the last one that gave
 * messages. 1 with messages in *out, 0 when none had any, or an error. */
static int poll_round(sl_message_consumer_t *cn, sl_polled_messages_t *out)
{
    for (uint32_t i = 0; i < cn->count; i++) {
        part_t *p = &cn->parts[cn->cursor];
        cn->cursor = (cn->cursor + 1) % cn->count;
        int rc = poll_part(cn, p, out);
        if (rc != 0)
            return rc;
        if (out->resync_required) {
            cn->need_sync = true; /* the partition moved: sync before the next round */
            return 0;
        }
        if (out->count > 0)
            return 1;
    }
    return 0;
}

int sl_consumer_poll(sl_message_consumer_t *cn, uint32_t timeout_ms, sl_polled_messages_t *out)
{
    uint64_t deadline = sl_clock_monotonic_us() + (uint64_t)timeout_ms * 1000u;
    /* Bounded by the deadline: each pass without messages sleeps, except
     * one immediate pass after the first sentinel. */
    bool immediate = true;
    for (;;) {
        if (sync_due(cn)) {
            int rc = drop_ahead(cn);
            if (rc == 0)
                rc = group_sync(cn);
            if (rc != 0)
                return rc;
        }
        int got = poll_round(cn, out);
        if (got < 0)
            return got;
        if (got == 1)
            return 0;
        if (cn->need_sync && immediate) {
            immediate = false; /* the sentinel: sync and poll again at once */
            continue;
        }
        uint64_t now = sl_clock_monotonic_us();
        if (now >= deadline)
            break;
        uint64_t left_ms = (deadline - now + 999u) / 1000u;
        int rc = drop_ahead(cn); /* none is submitted for a round without messages */
        if (rc != 0)
            return rc;
        pause_ms(left_ms < cn->o.idle_ms ? (uint32_t)left_ms : cn->o.idle_ms);
        rc = sl_client_tick(cn->client);
        if (rc != 0)
            return rc;
    }
    *out = (sl_polled_messages_t){.partition_id = SL_PARTITION_NONE};
    return 0;
}

int sl_consumer_commit(sl_message_consumer_t *cn)
{
    /* The store goes lockstep: the poll in flight is collected and dropped
     * (its messages were not returned; explicit commits stored nothing). */
    int first = drop_ahead(cn);
    for (uint32_t i = 0; i < cn->count; i++) {
        part_t *p = &cn->parts[i];
        if (!p->dirty)
            continue;
        int rc = sl_client_store_consumer_offset(cn->client, ref_of(cn), cn->o.stream, cn->o.topic,
                                                 p->id, p->last, SL_ACK_LEVEL_QUORUM);
        if (rc == 0)
            p->dirty = false;
        else if (first == 0)
            first = rc;
    }
    return first;
}

void sl_consumer_partitions(const sl_message_consumer_t *cn, const uint32_t **partitions,
                            uint32_t *count)
{
    *partitions = cn->ids;
    *count = cn->count;
}

/* --- open and close ---------------------------------------------------------------------- */

static bool copy_id(sl_id_t *id, char *buf, size_t cap)
{
    if (id->kind == SL_ID_NUMBER)
        return true;
    if (id->kind != SL_ID_NAME || id->name == NULL)
        return false;
    size_t n = strlen(id->name);
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, id->name, n + 1);
    id->name = buf;
    return true;
}

static int options_apply(sl_message_consumer_t *cn, const sl_consumer_options_t *in)
{
    sl_consumer_options_t *o = &cn->o;
    *o = *in;
    o->kind = o->kind ? o->kind : SL_CONSUMER_KIND_SINGLE;
    o->commit = o->commit ? o->commit : SL_CONSUMER_COMMIT_AUTO;
    o->batch_count = o->batch_count ? o->batch_count : CONSUMER_BATCH_COUNT_DEFAULT;
    o->idle_ms = o->idle_ms ? o->idle_ms : CONSUMER_IDLE_MS_DEFAULT;
    o->resync_interval_ms =
        o->resync_interval_ms ? o->resync_interval_ms : CONSUMER_RESYNC_MS_DEFAULT;
    bool ok = copy_id(&o->stream, cn->stream_name, sizeof(cn->stream_name)) &&
              copy_id(&o->topic, cn->topic_name, sizeof(cn->topic_name)) &&
              copy_id(&o->consumer_id, cn->consumer_name, sizeof(cn->consumer_name)) &&
              (o->kind == SL_CONSUMER_KIND_SINGLE || o->kind == SL_CONSUMER_KIND_GROUP) &&
              (o->commit == SL_CONSUMER_COMMIT_AUTO || o->commit == SL_CONSUMER_COMMIT_EXPLICIT) &&
              !(o->kind == SL_CONSUMER_KIND_GROUP && o->create_group &&
                o->consumer_id.kind != SL_ID_NAME);
    return ok ? 0 : -SL_ERR_INVALID_COMMAND;
}

static int consumer_start(sl_message_consumer_t *cn)
{
    if (cn->o.kind == SL_CONSUMER_KIND_SINGLE) {
        if (cn->o.partition != SL_PARTITION_NONE)
            return assign(cn, &cn->o.partition, 1);
        return assign_all(cn);
    }
    int rc = cn->o.create_group ? ensure_group(cn) : 0;
    if (rc == 0)
        rc = join(cn);
    return rc == 0 ? group_sync(cn) : rc;
}

int sl_consumer_open(sl_client_t *client, const sl_consumer_options_t *options,
                     sl_message_consumer_t **out)
{
    sl_assert(client != NULL && out != NULL);
    *out = NULL;
    if (options == NULL)
        return -SL_ERR_INVALID_COMMAND;
    sl_message_consumer_t *cn = calloc(1, sizeof(*cn));
    if (cn == NULL)
        return -SL_ERR_ERROR;
    cn->client = client;
    int rc = options_apply(cn, options);
    if (rc == 0)
        rc = consumer_start(cn);
    if (rc != 0) {
        sl_consumer_close(cn); /* leaves the group when the join went through */
        return rc;
    }
    *out = cn;
    return 0;
}

void sl_consumer_close(sl_message_consumer_t *cn)
{
    if (cn == NULL)
        return;
    int dropped = drop_ahead(cn);
    (void)dropped; /* best effort, like the leave */
    if (cn->member) {
        /* Best effort: the server drops the membership with the session. */
        int rc = sl_client_leave_consumer_group(cn->client, cn->o.stream, cn->o.topic,
                                                cn->o.consumer_id);
        (void)rc;
    }
    free(cn->parts);
    free(cn->ids);
    free(cn);
}
