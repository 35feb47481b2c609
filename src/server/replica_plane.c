/* The replica plane's thread (server/replica_plane.h). */
#include "server/replica_plane.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "server/replica_bus.h"
#include "server/trip_trace.h"
#include "vsr/handshake.h"

/* How long one poll may sleep: the bound on how late a stop is seen. */
#define PLANE_POLL_MS 100

/* Inbox frames from which on a frame that repeats one still queued is merged into it
 * (inbox_merge): the loop is behind, and the heartbeats of every group's primary pile up. */
#define PLANE_MERGE_FROM 64u
/* Bytes that identify a frame whole: its header seal and its body seal. */
#define PLANE_FRAME_ID_LEN 32u
/* Header fields (shared/protocol/cluster.md 3 and 6.4): the view and command of every frame;
 * a Commit's commit_checksum (16 bytes), then after its heartbeat number (144) the commit,
 * checkpoint_op and group (8 bytes each). */
#define AT_VIEW            52u
#define AT_COMMAND         60u
#define AT_COMMIT_CHECKSUM 128u
#define AT_COMMIT          152u

/* One frame between the threads: a frame buffer of the bus's
 * (sl_rbus_frame_alloc), whose reference the queue holds. */
typedef struct plane_frame {
    uint8_t peer;
    uint32_t len;
    uint8_t *bytes;
} plane_frame_t;

/* A bounded FIFO guarded by its own mutex. */
typedef struct plane_queue {
    pthread_mutex_t lock;
    plane_frame_t *ring;
    uint32_t cap, head, count;
    uint64_t dropped;
    uint64_t merged; /* frames that repeated one still queued (inbox_merge) */
} plane_queue_t;

struct sl_replica_plane {
    sl_rbus_t *bus;
    pthread_t thread;
    atomic_bool stop;
    int inbox_fd;  /* the loop reads it */
    int outbox_fd; /* the plane's poll wakes on it */
    plane_queue_t inbox, outbox;
    atomic_bool up[SL_RBUS_REPLICAS_MAX];
    /* Set by the plane when the inbox had no room (its links left unread),
     * cleared by the loop's drain, which then wakes the plane to read on. */
    atomic_bool paused;
    /* The loop thread's own: the frame its drain is handing out, which a
     * send of those very bytes (a backup relaying a prepare down the chain)
     * queues by reference instead of copying. */
    uint8_t *draining;
    uint32_t draining_len;
};

static int queue_init(plane_queue_t *q, uint32_t cap)
{
    memset(q, 0, sizeof(*q));
    q->ring = calloc(cap, sizeof(*q->ring));
    if (!q->ring)
        return -ENOMEM;
    q->cap = cap;
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

static void queue_free(plane_queue_t *q)
{
    if (!q->ring)
        return;
    for (uint32_t i = 0; i < q->count; i++)
        sl_rbus_frame_release(q->ring[(q->head + i) % q->cap].bytes);
    free(q->ring);
    pthread_mutex_destroy(&q->lock);
    q->ring = NULL;
}

/* Queues owned (a frame buffer whose reference the queue takes, or NULL
 * when it could not be had: counted as a drop); false (dropped, counted,
 * released) when full. */
static bool queue_push_owned(plane_queue_t *q, uint8_t peer, uint8_t *owned, uint32_t len)
{
    pthread_mutex_lock(&q->lock);
    bool ok = owned && q->count < q->cap;
    if (ok)
        q->ring[(q->head + q->count++) % q->cap] = (plane_frame_t){peer, len, owned};
    else
        q->dropped++;
    pthread_mutex_unlock(&q->lock);
    if (!ok)
        sl_rbus_frame_release(owned);
    return ok;
}

/* Copies the frame in; false (dropped, counted) when full or out of memory. */
static bool queue_push(plane_queue_t *q, uint8_t peer, const uint8_t *bytes, uint32_t len)
{
    uint8_t *copy = sl_rbus_frame_alloc(len);
    if (copy)
        memcpy(copy, bytes, len);
    return queue_push_owned(q, peer, copy, len);
}

static bool queue_pop(plane_queue_t *q, plane_frame_t *out)
{
    pthread_mutex_lock(&q->lock);
    bool ok = q->count > 0;
    if (ok) {
        *out = q->ring[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static void wake(int fd)
{
    uint64_t one = 1;
    if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        sl_log_debug("replica plane: eventfd write failed: %s", strerror(errno));
}

/* Whether queued frame q says what f says: a Commit (a heartbeat) of the same group, view
 * and commit point, or the very same Prepare, PrepareOk or RepairPrepare (resent at the
 * heartbeat's pace while unanswered): same identity or seal (bytes 0..32), same view. */
static bool same_news(const plane_frame_t *q, uint8_t peer, const sl_vsr_frame_t *f,
                      const uint8_t *bytes, uint32_t len)
{
    if (q->peer != peer || q->len != len || q->bytes[AT_COMMAND] != f->h.command)
        return false;
    /* Both decoded when they were read (the queued one too): compared in place. The view
     * too, which a prepare's identity leaves out (it is re-sent in later views). */
    if (memcmp(q->bytes + AT_VIEW, bytes + AT_VIEW, 4) != 0)
        return false;
    if (f->h.command == SL_VSR_PREPARE || f->h.command == SL_VSR_PREPARE_OK ||
        f->h.command == SL_VSR_REPAIR_PREPARE)
        return memcmp(q->bytes, bytes, PLANE_FRAME_ID_LEN) == 0;
    if (f->h.command != SL_VSR_COMMIT)
        return false;
    return memcmp(q->bytes + AT_COMMIT_CHECKSUM, bytes + AT_COMMIT_CHECKSUM, 16) == 0 &&
           memcmp(q->bytes + AT_COMMIT, bytes + AT_COMMIT, 24) == 0;
}

/* A frame that tells the loop nothing a frame still in the inbox does not is merged into
 * it instead of taking a slot: a Commit replaces the queued one's bytes (its heartbeat
 * number is the newer), a repeated frame is let go. Only once the inbox holds
 * PLANE_MERGE_FROM frames (the scan is the inbox's length). Consensus sees what a network
 * that lost the older copy would show it. */
static bool inbox_merge(plane_queue_t *q, uint8_t peer, const sl_vsr_frame_t *f,
                        const uint8_t *bytes, uint32_t len)
{
    bool merged = false;
    pthread_mutex_lock(&q->lock);
    for (uint32_t i = 0; q->count >= PLANE_MERGE_FROM && i < q->count && !merged; i++) {
        plane_frame_t *e = &q->ring[(q->head + i) % q->cap];
        if (!same_news(e, peer, f, bytes, len))
            continue;
        if (f->h.command == SL_VSR_COMMIT)
            memcpy(e->bytes, bytes, len);
        merged = true;
        q->merged++;
    }
    pthread_mutex_unlock(&q->lock);
    return merged;
}

static void on_frame(void *ctx, uint8_t peer, const sl_vsr_frame_t *f, const uint8_t *bytes,
                     uint32_t len)
{
    sl_replica_plane_t *plane = ctx;
    if (inbox_merge(&plane->inbox, peer, f, bytes, len))
        return; /* the bus keeps (and frees) its buffer */
    /* A frame with a body comes in a buffer of its own, which the queue
     * takes: a megabyte prepare crosses to the loop without a copy. */
    uint8_t *owned = sl_rbus_take_frame(plane->bus);
    SL_TRIP_FRAME("plane_inbox", bytes, len);
    bool queued = owned ? queue_push_owned(&plane->inbox, peer, owned, len)
                        : queue_push(&plane->inbox, peer, bytes, len);
    if (queued) {
        wake(plane->inbox_fd);
        return;
    }
    const char *name = sl_vsr_command_name(f->h.command);
    sl_log_debug("replica plane: %s from replica %u dropped: the loop's queue is full",
                 name ? name : "?", peer);
}

/* The bus's backpressure (replica_bus.h, room): the inbox's free slots. Only this thread
 * pushes, so what it says stays true until the bus has handed that many frames. */
static uint32_t inbox_room(void *ctx)
{
    sl_replica_plane_t *plane = ctx;
    pthread_mutex_lock(&plane->inbox.lock);
    uint32_t room = plane->inbox.cap - plane->inbox.count;
    if (room == 0)
        atomic_store_explicit(&plane->paused, true, memory_order_release);
    pthread_mutex_unlock(&plane->inbox.lock);
    return room;
}

static void on_link(void *ctx, uint8_t peer, bool up)
{
    sl_replica_plane_t *plane = ctx;
    if (peer < SL_RBUS_REPLICAS_MAX)
        atomic_store_explicit(&plane->up[peer], up, memory_order_release);
}

/* The loop's frames to the bus's per-link queues (which drop when full or
 * when the link is down). */
static void flush_outbox(sl_replica_plane_t *plane)
{
    plane_frame_t f;
    for (uint32_t i = 0; i < SL_PLANE_OUTBOX_MAX && queue_pop(&plane->outbox, &f); i++) {
        SL_TRIP_FRAME("plane_pop", f.bytes, f.len);
        /* The bus takes the queue's reference (and releases it). */
        int rc = sl_rbus_send_owned(plane->bus, f.peer, f.bytes, f.len);
        (void)rc; /* counted by the bus; consensus resends */
    }
}

static void *plane_main(void *arg)
{
    sl_replica_plane_t *plane = arg;
    while (!atomic_load_explicit(&plane->stop, memory_order_acquire)) {
        flush_outbox(plane);
        sl_rbus_poll(plane->bus, PLANE_POLL_MS);
    }
    return NULL;
}

int sl_replica_plane_event_fd(const sl_replica_plane_t *plane)
{
    return plane->inbox_fd;
}

uint32_t sl_replica_plane_drain(sl_replica_plane_t *plane,
                                void (*fn)(void *ctx, uint8_t peer, const uint8_t *frame,
                                           uint32_t len),
                                void *ctx)
{
    plane_frame_t f;
    uint32_t n = 0;
    while (n < SL_PLANE_INBOX_MAX && queue_pop(&plane->inbox, &f)) {
        plane->draining = f.bytes;
        plane->draining_len = f.len;
        fn(ctx, f.peer, f.bytes, f.len);
        plane->draining = NULL;
        sl_rbus_frame_release(f.bytes);
        n++;
    }
    /* The plane stopped reading for want of room: there is some now. */
    if (n > 0 && atomic_exchange_explicit(&plane->paused, false, memory_order_acq_rel))
        wake(plane->outbox_fd);
    return n;
}

/* Whether frame is the prepare the drain is handing out: those very bytes
 * (a backup relaying it from the frame it was given), or a copy of them (one
 * relaying it once its own journal write is done, from the journal image it
 * made of that frame: vsr/replica.c, vsr_relay_kept). A prepare's header
 * names its bytes (its identity covers the header, whose fields pin the
 * body: one prepare per op and view), and the drained frame is the one the
 * primary sent, so the same header and length are the same prepare. */
static bool draining_bytes(const sl_replica_plane_t *plane, const uint8_t *frame, uint32_t len)
{
    if (plane->draining == NULL || len != plane->draining_len)
        return false;
    if (frame == plane->draining)
        return true;
    return len > SL_HEADER_SIZE && frame[AT_COMMAND] == SL_VSR_PREPARE &&
           memcmp(frame, plane->draining, SL_HEADER_SIZE) == 0;
}

void sl_replica_plane_send(sl_replica_plane_t *plane, uint8_t peer, const uint8_t *frame,
                           uint32_t len)
{
    SL_TRIP_FRAME("loop_send", frame, len);
    bool queued;
    if (draining_bytes(plane, frame, len)) {
        /* The frame being drained, sent on as it is: it stays unchanged
         * until both the drain and the sender have released it. */
        sl_rbus_frame_ref(plane->draining);
        queued = queue_push_owned(&plane->outbox, peer, plane->draining, len);
    } else {
        queued = queue_push(&plane->outbox, peer, frame, len);
    }
    if (queued)
        wake(plane->outbox_fd);
    SL_TRIP_FRAME("loop_sent", frame, len);
}

bool sl_replica_plane_link_up(const sl_replica_plane_t *plane, uint8_t peer)
{
    return peer < SL_RBUS_REPLICAS_MAX &&
           atomic_load_explicit(&plane->up[peer], memory_order_acquire);
}

static void bus_config(const sl_config_t *cfg, const sl_config_cluster_node_t *self,
                       sl_rbus_config_t *c)
{
    sl_rbus_config_init(c);
    c->self = (uint8_t)self->replica_id;
    c->replica_count = (uint8_t)cfg->cluster.nodes_count;
    snprintf(c->listen.host, sizeof(c->listen.host), "%s", self->ip);
    c->listen.port = (uint16_t)self->ports.tcp_replica;
    for (uint32_t i = 0; i < cfg->cluster.nodes_count; i++) {
        const sl_config_cluster_node_t *n = &cfg->cluster.nodes[i];
        snprintf(c->peers[n->replica_id].host, sizeof(c->peers[0].host), "%s", n->ip);
        c->peers[n->replica_id].port = (uint16_t)n->ports.tcp_replica;
    }
    c->cluster = sl_vsr_cluster_id(sl_span_str(cfg->cluster.name));
    c->auth = cfg->cluster.auth.enabled;
    if (cfg->cluster.auth.shared_secret[0])
        sl_vsr_auth_key(sl_span_str(cfg->cluster.auth.shared_secret), c->key);
    if (cfg->cluster.auth.previous_shared_secret[0]) {
        c->has_previous_key = true;
        sl_vsr_auth_key(sl_span_str(cfg->cluster.auth.previous_shared_secret), c->previous_key);
    }
    c->frame_max = (uint32_t)cfg->message_bus.max_message_size;
}

static void plane_free(sl_replica_plane_t *plane)
{
    queue_free(&plane->inbox);
    queue_free(&plane->outbox);
    if (plane->inbox_fd >= 0)
        close(plane->inbox_fd);
    if (plane->outbox_fd >= 0)
        close(plane->outbox_fd);
    free(plane);
}

int sl_replica_plane_start(const sl_config_t *cfg, sl_replica_plane_t **out, char *err,
                           size_t err_len)
{
    const sl_config_cluster_node_t *self = sl_config_cluster_self(cfg);
    sl_assert(self != NULL);
    sl_replica_plane_t *plane = calloc(1, sizeof(*plane));
    if (!plane) {
        snprintf(err, err_len, "replica plane: out of memory");
        return -ENOMEM;
    }
    plane->inbox_fd = eventfd(0, EFD_CLOEXEC); /* read by the ring, as the pools' are */
    plane->outbox_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (plane->inbox_fd < 0 || plane->outbox_fd < 0 ||
        queue_init(&plane->inbox, SL_PLANE_INBOX_MAX) != 0 ||
        queue_init(&plane->outbox, SL_PLANE_OUTBOX_MAX) != 0) {
        snprintf(err, err_len, "replica plane: cannot create its queues");
        plane_free(plane);
        return -ENOMEM;
    }
    sl_rbus_config_t c;
    bus_config(cfg, self, &c);
    c.on_frame = on_frame;
    c.on_link = on_link;
    c.room = inbox_room;
    c.ctx = plane;
    c.wake_fd = plane->outbox_fd;
    int rc = sl_rbus_create(&c, &plane->bus);
    if (rc) {
        snprintf(err, err_len, "replica plane: cannot listen on %s port %u: %s", self->ip,
                 self->ports.tcp_replica, strerror(-rc));
        plane_free(plane);
        return rc;
    }
    atomic_init(&plane->stop, false);
    atomic_init(&plane->paused, false);
    rc = pthread_create(&plane->thread, NULL, plane_main, plane);
    if (rc) {
        snprintf(err, err_len, "replica plane: cannot start its thread: %s", strerror(rc));
        sl_rbus_destroy(plane->bus);
        plane_free(plane);
        return -rc;
    }
    sl_log_info("replica plane: replica %u of %u in cluster \"%s\", listening on %s port %u "
                "(auth %s)",
                self->replica_id, cfg->cluster.nodes_count, cfg->cluster.name, self->ip,
                sl_rbus_port(plane->bus), c.auth ? "on" : "off");
    *out = plane;
    return 0;
}

void sl_replica_plane_stop(sl_replica_plane_t *plane)
{
    if (!plane)
        return;
    atomic_store_explicit(&plane->stop, true, memory_order_release);
    wake(plane->outbox_fd);
    pthread_join(plane->thread, NULL);
    /* What was dropped on the way, for the operator and the tests
     * (docs/cluster.md, "Many partitions"): consensus resends it. */
    sl_rbus_stats_t st;
    sl_rbus_stats(plane->bus, &st);
    sl_log_info("replica plane: %llu frames in, %llu out; dropped: %llu with the loop's queue "
                "full, %llu with the plane's queue full, %llu with a link's queue full, %llu "
                "with no link up; %llu merged into one queued for the loop; reading held %llu "
                "times while the loop's queue was full",
                (unsigned long long)st.frames_in, (unsigned long long)st.frames_out,
                (unsigned long long)plane->inbox.dropped, (unsigned long long)plane->outbox.dropped,
                (unsigned long long)st.dropped_full,
                (unsigned long long)(st.dropped - st.dropped_full),
                (unsigned long long)plane->inbox.merged, (unsigned long long)st.paused);
    sl_rbus_destroy(plane->bus);
    plane_free(plane);
}
