/* The replica plane's transport (server/replica_bus.h): sockets, the
 * cluster.md 4 handshake over vsr/handshake.h, framing, queues and
 * reconnection, driven by poll(2). */
#define _GNU_SOURCE /* accept4 */
#include "server/replica_bus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "server/loop.h"
#include "server/trip_trace.h"
#include "vsr/handshake.h"

#define LINKS_MAX        (SL_RBUS_REPLICAS_MAX + SL_RBUS_PENDING_MAX)
#define ACCEPTS_PER_POLL 16u

typedef enum link_state {
    LINK_FREE = 0,
    LINK_CONNECTING,      /* dialer: connect(2) in progress */
    LINK_AWAIT_CHALLENGE, /* dialer: Hello sent, auth on */
    LINK_AWAIT_HELLO,     /* acceptor: nothing read yet */
    LINK_AWAIT_FINISH,    /* acceptor: Challenge sent */
    LINK_UP,
    LINK_CLOSING, /* flushing a refusal, then closed */
} link_state_t;

typedef struct out_frame {
    uint8_t *bytes;
    uint32_t len;
} out_frame_t;

typedef struct link {
    link_state_t state;
    int fd;
    bool dialer;
    uint8_t peer;         /* known for a dialer; for an acceptor once its Hello is read */
    uint64_t deadline_us; /* handshake (or refusal flush) deadline */
    uint8_t dialer_nonce[SL_VSR_NONCE_LEN];
    uint8_t acceptor_nonce[SL_VSR_NONCE_LEN];
    /* The frame being received: its header, then (size > 256) its buffer. */
    uint8_t head[SL_HEADER_SIZE];
    uint32_t head_got;
    uint8_t *body_frame; /* whole frame, header copied in; NULL while reading the header */
    uint32_t frame_len;
    uint32_t frame_got;
    /* Send queue: a ring of owned copies, the first partly written. */
    out_frame_t *queue;
    uint32_t queue_head;
    uint32_t queue_count;
    uint32_t head_sent;
} link_t;

typedef struct peer {
    link_t *up;     /* the established link, or NULL */
    link_t *dialed; /* our dialing link to a higher id while it is not up */
    uint64_t next_dial_us;
    uint32_t backoff_ms;
} peer_t;

struct sl_rbus {
    sl_rbus_config_t cfg;
    int listen_fd;
    uint16_t port;
    link_t links[LINKS_MAX];
    peer_t peers[SL_RBUS_REPLICAS_MAX];
    sl_rbus_stats_t stats;
    uint64_t jitter_state;
    link_t *delivering; /* the link whose frame on_frame is being handed (sl_rbus_take_frame) */
    uint32_t budget;    /* frames on_frame may still be handed this turn (cfg.room) */
};

void sl_rbus_config_init(sl_rbus_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen.host, sizeof(cfg->listen.host), "127.0.0.1");
    cfg->frame_max = SL_FRAME_MAX_DEFAULT;
    cfg->queue_max = SL_RBUS_QUEUE_MAX_DEFAULT;
    cfg->handshake_timeout_ms = SL_RBUS_HANDSHAKE_TIMEOUT_MS;
    cfg->backoff_min_ms = SL_RBUS_BACKOFF_MIN_MS;
    cfg->backoff_max_ms = SL_RBUS_BACKOFF_MAX_MS;
    cfg->wake_fd = -1;
}

/* --- frame buffers ----------------------------------------------------------------- */

/* In front of a frame buffer's bytes: its references. 16 bytes keep the
 * frame as aligned as malloc's own. */
typedef struct frame_head {
    atomic_uint refs;
    uint32_t len;
    uint64_t pad;
} frame_head_t;
_Static_assert(sizeof(frame_head_t) == 16, "a frame's bytes start 16-byte aligned");

static frame_head_t *frame_head(uint8_t *frame)
{
    return (frame_head_t *)(void *)(frame - sizeof(frame_head_t));
}

uint8_t *sl_rbus_frame_alloc(uint32_t len)
{
    frame_head_t *h = malloc(sizeof(*h) + len);
    if (h == NULL)
        return NULL;
    atomic_init(&h->refs, 1u);
    h->len = len;
    return (uint8_t *)(h + 1);
}

void sl_rbus_frame_ref(uint8_t *frame)
{
    unsigned before = atomic_fetch_add_explicit(&frame_head(frame)->refs, 1u,
                                                memory_order_relaxed);
    sl_assert(before >= 1u); /* a reference is taken only from a live one */
}

void sl_rbus_frame_release(uint8_t *frame)
{
    if (frame == NULL)
        return;
    frame_head_t *h = frame_head(frame);
    unsigned before = atomic_fetch_sub_explicit(&h->refs, 1u, memory_order_acq_rel);
    sl_assert(before >= 1u);
    if (before == 1u)
        free(h);
}

/* --- sockets ----------------------------------------------------------------------- */

static int sockaddr_of(const sl_rbus_addr_t *a, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, a->host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(a->port);
        *len = sizeof(*v4);
        return 0;
    }
    if (inet_pton(AF_INET6, a->host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(a->port);
        *len = sizeof(*v6);
        return 0;
    }
    return -EINVAL;
}

static void socket_tune(int fd)
{
    int one = 1;
    /* Consensus frames are small and latency-bound. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int listen_on(const sl_rbus_addr_t *a, int *fd_out, uint16_t *port_out)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (sockaddr_of(a, &ss, &len))
        return -EINVAL;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 64) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    *port_out = ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
                                        : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    *fd_out = fd;
    return 0;
}

typedef struct bus_listen {
    const sl_rbus_addr_t *a;
    int *fd;
    uint16_t *port;
} bus_listen_t;

/* listen_on for sl_listen_retry: a restarted node's replica port may still
 * be held by the killed process's io_uring for a moment (loop.h). */
static int listen_try(void *ctx)
{
    bus_listen_t *l = ctx;
    return listen_on(l->a, l->fd, l->port);
}

/* --- links ------------------------------------------------------------------------- */

static link_t *link_alloc(sl_rbus_t *bus, int fd, bool dialer)
{
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        link_t *l = &bus->links[i];
        if (l->state != LINK_FREE)
            continue;
        out_frame_t *queue = l->queue; /* kept across uses */
        memset(l, 0, sizeof(*l));
        l->queue = queue;
        l->fd = fd;
        l->dialer = dialer;
        return l;
    }
    return NULL;
}

static void queue_clear(link_t *l, uint32_t queue_max)
{
    for (uint32_t i = 0; i < l->queue_count; i++)
        sl_rbus_frame_release(l->queue[(l->queue_head + i) % queue_max].bytes);
    l->queue_head = l->queue_count = l->head_sent = 0;
}

/* The next redial: the backoff doubles from backoff_min_ms to
 * backoff_max_ms, with up to a quarter taken off at random so that peers
 * that lost each other at once do not retry in step. */
static void schedule_dial(sl_rbus_t *bus, peer_t *p, uint64_t now)
{
    uint32_t b = p->backoff_ms ? p->backoff_ms : bus->cfg.backoff_min_ms;
    bus->jitter_state = bus->jitter_state * 6364136223846793005ull + 1442695040888963407ull;
    uint32_t off = (uint32_t)((bus->jitter_state >> 33) % (b / 4 + 1));
    p->next_dial_us = now + (uint64_t)(b - off) * 1000u;
    uint64_t next = (uint64_t)b * 2;
    p->backoff_ms = (uint32_t)(next > bus->cfg.backoff_max_ms ? bus->cfg.backoff_max_ms : next);
}

/* Closes a link for `reason` (logged; NULL for an orderly stop). */
static void link_close(sl_rbus_t *bus, link_t *l, const char *reason)
{
    if (l->state == LINK_FREE)
        return;
    bool was_up = l->state == LINK_UP;
    bool known = l->dialer || l->state == LINK_AWAIT_FINISH || was_up;
    if (reason && was_up)
        sl_log_warn("replica link %u <-> %u lost: %s", bus->cfg.self, l->peer, reason);
    else if (reason && known)
        sl_log_warn("replica link %u <-> %u not established: %s", bus->cfg.self, l->peer, reason);
    else if (reason)
        sl_log_warn("replica plane: incoming connection closed: %s", reason);
    close(l->fd);
    sl_rbus_frame_release(l->body_frame);
    l->body_frame = NULL;
    queue_clear(l, bus->cfg.queue_max);
    l->state = LINK_FREE;
    peer_t *p = known ? &bus->peers[l->peer] : NULL;
    if (p && p->up == l) {
        p->up = NULL;
        bus->stats.links_up--;
        bus->stats.links_lost++;
        if (bus->cfg.on_link)
            bus->cfg.on_link(bus->cfg.ctx, l->peer, false);
    }
    if (p && l->dialer) {
        p->dialed = NULL;
        schedule_dial(bus, p, sl_clock_monotonic_us());
    }
}

/* Appends bytes (a frame buffer whose reference is now the queue's) to the
 * link's queue; false when it is full, and the caller still holds it. */
static bool queue_push_owned(sl_rbus_t *bus, link_t *l, uint8_t *bytes, uint32_t len)
{
    if (l->queue_count == bus->cfg.queue_max)
        return false;
    uint32_t at = (l->queue_head + l->queue_count) % bus->cfg.queue_max;
    l->queue[at] = (out_frame_t){bytes, len};
    l->queue_count++;
    return true;
}

/* Appends a copy of bytes to the link's queue; false when it is full. */
static bool queue_push(sl_rbus_t *bus, link_t *l, const uint8_t *bytes, uint32_t len)
{
    uint8_t *copy = sl_rbus_frame_alloc(len);
    if (!copy)
        return false;
    memcpy(copy, bytes, len);
    if (queue_push_owned(bus, l, copy, len))
        return true;
    sl_rbus_frame_release(copy);
    return false;
}

/* Writes what the socket takes. -1 when the link was closed. */
static int link_flush(sl_rbus_t *bus, link_t *l)
{
    uint32_t rounds = bus->cfg.queue_max; /* every turn retires a frame or stops */
    while (l->queue_count > 0 && rounds-- > 0) {
        out_frame_t *f = &l->queue[l->queue_head];
        ssize_t n = send(l->fd, f->bytes + l->head_sent, f->len - l->head_sent, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n < 0) {
            link_close(bus, l, strerror(errno));
            return -1;
        }
        l->head_sent += (uint32_t)n;
        if (l->head_sent < f->len)
            return 0;
        SL_TRIP_FRAME("bus_sent", f->bytes, f->len);
        sl_rbus_frame_release(f->bytes);
        f->bytes = NULL;
        l->queue_head = (l->queue_head + 1) % bus->cfg.queue_max;
        l->queue_count--;
        l->head_sent = 0;
        if (l->state == LINK_UP)
            bus->stats.frames_out++;
    }
    return 0;
}

static void link_up(sl_rbus_t *bus, link_t *l)
{
    peer_t *p = &bus->peers[l->peer];
    if (p->up && p->up != l)
        link_close(bus, p->up, "replaced by a new connection from the peer");
    l->state = LINK_UP;
    p->up = l;
    if (l->dialer) {
        p->dialed = NULL;
        p->backoff_ms = 0;
    }
    bus->stats.links_up++;
    bus->stats.links_established++;
    sl_log_info("replica link %u <-> %u up (%s, %s)", bus->cfg.self, l->peer,
                l->dialer ? "dialed" : "accepted", bus->cfg.auth ? "authenticated" : "no auth");
    if (bus->cfg.on_link)
        bus->cfg.on_link(bus->cfg.ctx, l->peer, true);
}

/* --- the handshake (cluster.md 4) ----------------------------------------------------- */

static void mac_input(const sl_rbus_t *bus, const link_t *l, uint8_t direction,
                      sl_vsr_mac_input_t *in)
{
    memset(in, 0, sizeof(*in));
    in->cluster = bus->cfg.cluster;
    in->dialer = l->dialer ? bus->cfg.self : l->peer;
    in->acceptor = l->dialer ? l->peer : bus->cfg.self;
    memcpy(in->dialer_nonce, l->dialer_nonce, SL_VSR_NONCE_LEN);
    memcpy(in->acceptor_nonce, l->acceptor_nonce, SL_VSR_NONCE_LEN);
    in->binding = 0; /* plaintext: the exporter stays zero */
    in->direction = direction;
}

static bool verify_mac(const sl_rbus_t *bus, const link_t *l, uint8_t direction,
                       const uint8_t mac[SL_VSR_MAC_LEN])
{
    sl_vsr_mac_input_t in;
    mac_input(bus, l, direction, &in);
    return sl_vsr_auth_verify(bus->cfg.key,
                              bus->cfg.has_previous_key ? bus->cfg.previous_key : NULL, &in, mac);
}

static void random_nonce(uint8_t nonce[SL_VSR_NONCE_LEN])
{
    /* Non-zero by construction: a zero nonce means "no auth" on the wire. */
    do {
        if (getrandom(nonce, SL_VSR_NONCE_LEN, 0) != (ssize_t)SL_VSR_NONCE_LEN)
            sl_assert(!"getrandom failed");
    } while (sl_all_zero(nonce, SL_VSR_NONCE_LEN));
}

static void send_handshake(sl_rbus_t *bus, link_t *l, uint8_t command, const uint8_t *nonce,
                           const uint8_t *mac, uint8_t status)
{
    uint8_t frame[SL_HEADER_SIZE];
    sl_vsr_handshake_encode(frame, command, bus->cfg.cluster, bus->cfg.self, nonce, mac, status);
    bool queued = queue_push(bus, l, frame, sizeof(frame));
    sl_assert(queued); /* a handshake link's queue is empty but for this */
}

static const char *status_name(uint8_t status)
{
    static const char *const names[] = {
        "ok",          "unknown command", "cluster mismatch", "directional rule", "auth required",
        "MAC mismatch"};
    return status < SL_ARRAY_LEN(names) ? names[status] : "unknown status";
}

/* Dialer: the connection is open; say Hello. */
static void dialer_connected(sl_rbus_t *bus, link_t *l)
{
    random_nonce(l->dialer_nonce);
    send_handshake(bus, l, SL_VSR_REPLICA_HELLO, l->dialer_nonce, NULL, 0);
    if (bus->cfg.auth)
        l->state = LINK_AWAIT_CHALLENGE;
    else
        link_up(bus, l); /* the acceptor trusts the Hello; a refusal arrives as a frame */
}

/* Dialer, auth on: the acceptor's Challenge. */
static void dialer_challenge(sl_rbus_t *bus, link_t *l, const sl_vsr_frame_t *f)
{
    if (f->h.command != SL_VSR_REPLICA_CHALLENGE) {
        bus->stats.bad_frames++;
        link_close(bus, l, "expected ReplicaChallenge");
        return;
    }
    if (f->u.handshake.status != SL_VSR_HELLO_OK) {
        char why[96];
        snprintf(why, sizeof(why), "the peer refused the handshake: %s",
                 status_name(f->u.handshake.status));
        bus->stats.refused++;
        link_close(bus, l, why);
        return;
    }
    memcpy(l->acceptor_nonce, f->u.handshake.nonce, SL_VSR_NONCE_LEN);
    if (!verify_mac(bus, l, SL_VSR_MAC_ACCEPTOR, f->u.handshake.mac)) {
        bus->stats.refused++;
        link_close(bus, l, "the acceptor's MAC does not verify (another shared secret?)");
        return;
    }
    sl_vsr_mac_input_t in;
    uint8_t mac[SL_VSR_MAC_LEN];
    mac_input(bus, l, SL_VSR_MAC_DIALER, &in);
    sl_vsr_auth_mac(bus->cfg.key, &in, mac);
    send_handshake(bus, l, SL_VSR_REPLICA_FINISH, NULL, mac, 0);
    link_up(bus, l);
}

/* Acceptor: the first frame must be a Hello this replica may accept. */
static void acceptor_hello(sl_rbus_t *bus, link_t *l, const sl_vsr_frame_t *f)
{
    sl_vsr_hello_status_t st = sl_vsr_hello_check(f, bus->cfg.cluster, bus->cfg.self,
                                                  bus->cfg.replica_count, bus->cfg.auth);
    if (st != SL_VSR_HELLO_OK) {
        bool nonce = !sl_all_zero(f->u.handshake.nonce, SL_VSR_NONCE_LEN);
        char why[128];
        snprintf(why, sizeof(why), "refused a Hello claiming replica %u: %s", f->h.replica,
                 status_name(st));
        bus->stats.refused++;
        /* Reject frames go only to a dialer that sent a nonce, and never for
         * AuthRequired / MacMismatch (cluster.md 4). */
        if (f->h.command == SL_VSR_REPLICA_HELLO && nonce && st <= SL_VSR_HELLO_DIRECTIONAL_RULE) {
            send_handshake(bus, l, SL_VSR_REPLICA_CHALLENGE, NULL, NULL, (uint8_t)st);
            sl_log_warn("replica plane: %s", why);
            l->state = LINK_CLOSING;
            if (link_flush(bus, l) == 0 && l->queue_count == 0)
                link_close(bus, l, NULL);
            return;
        }
        link_close(bus, l, why);
        return;
    }
    l->peer = f->h.replica;
    memcpy(l->dialer_nonce, f->u.handshake.nonce, SL_VSR_NONCE_LEN);
    if (!bus->cfg.auth) {
        link_up(bus, l);
        return;
    }
    random_nonce(l->acceptor_nonce);
    sl_vsr_mac_input_t in;
    uint8_t mac[SL_VSR_MAC_LEN];
    mac_input(bus, l, SL_VSR_MAC_ACCEPTOR, &in);
    sl_vsr_auth_mac(bus->cfg.key, &in, mac);
    send_handshake(bus, l, SL_VSR_REPLICA_CHALLENGE, l->acceptor_nonce, mac, SL_VSR_HELLO_OK);
    l->state = LINK_AWAIT_FINISH;
}

/* Acceptor, auth on: the dialer's Finish proves the secret. */
static void acceptor_finish(sl_rbus_t *bus, link_t *l, const sl_vsr_frame_t *f)
{
    bool ok = f->h.command == SL_VSR_REPLICA_FINISH && f->h.replica == l->peer &&
              verify_mac(bus, l, SL_VSR_MAC_DIALER, f->u.handshake.mac);
    if (!ok) {
        bus->stats.refused++;
        link_close(bus, l,
                   f->h.command == SL_VSR_REPLICA_FINISH
                       ? "the dialer's MAC does not verify (another shared secret?)"
                       : "expected ReplicaFinish");
        return;
    }
    link_up(bus, l);
}

/* --- received frames ------------------------------------------------------------------- */

/* An established link's frame: checked, then handed on. */
static void up_frame(sl_rbus_t *bus, link_t *l, const sl_vsr_frame_t *f, const uint8_t *bytes,
                     uint32_t len)
{
    uint8_t c = f->h.command;
    if (c == SL_VSR_REPLICA_CHALLENGE && l->dialer && f->u.handshake.status != SL_VSR_HELLO_OK) {
        char why[96];
        snprintf(why, sizeof(why), "the peer refused the handshake: %s",
                 status_name(f->u.handshake.status));
        bus->stats.refused++;
        link_close(bus, l, why);
        return;
    }
    if (c >= SL_VSR_REPLICA_HELLO && c <= SL_VSR_REPLICA_FINISH) {
        bus->stats.bad_frames++;
        link_close(bus, l, "a handshake frame on an established link");
        return;
    }
    bus->stats.frames_in++;
    sl_assert(bus->budget > 0);
    bus->budget--;
    if (bus->cfg.on_frame) {
        bus->delivering = l;
        bus->cfg.on_frame(bus->cfg.ctx, l->peer, f, bytes, len);
        bus->delivering = NULL;
    }
}

/* One whole frame read from l. */
static void link_frame(sl_rbus_t *bus, link_t *l, const uint8_t *bytes, uint32_t len)
{
    sl_vsr_frame_t f;
    SL_TRIP_FRAME("bus_read", bytes, len);
    sl_vsr_verdict_t v = sl_vsr_frame_decode(bytes, len, bus->cfg.frame_max, &f);
    char why[128];
    if (v != SL_VSR_OK) {
        snprintf(why, sizeof(why), "a frame (command %u) the codec refuses: %s", bytes[60],
                 sl_vsr_verdict_name(v));
        bus->stats.bad_frames++;
        link_close(bus, l, why);
        return;
    }
    if (!sl_u128_eq(f.h.cluster, bus->cfg.cluster) && l->state != LINK_AWAIT_HELLO) {
        bus->stats.bad_frames++;
        link_close(bus, l, "a frame of another cluster (cluster id differs)");
        return;
    }
    bool known_sender =
        l->state == LINK_UP || l->state == LINK_AWAIT_CHALLENGE || l->state == LINK_AWAIT_FINISH;
    /* A Prepare travels the chain primary -> next -> ... as the primary
     * sealed it (cluster.md 6.1), and a RepairPrepare is a journaled
     * prepare: their `replica` names the primary that built them, not the
     * neighbour that relays them. Every other frame names its sender. */
    bool relayed = f.h.command == SL_VSR_PREPARE || f.h.command == SL_VSR_REPAIR_PREPARE;
    if (known_sender && f.h.replica != l->peer && !(relayed && l->state == LINK_UP)) {
        snprintf(why, sizeof(why), "a frame claiming to come from replica %u", f.h.replica);
        bus->stats.bad_frames++;
        link_close(bus, l, why);
        return;
    }
    switch (l->state) {
    case LINK_AWAIT_HELLO:
        acceptor_hello(bus, l, &f);
        return;
    case LINK_AWAIT_FINISH:
        acceptor_finish(bus, l, &f);
        return;
    case LINK_AWAIT_CHALLENGE:
        dialer_challenge(bus, l, &f);
        return;
    case LINK_UP:
        up_frame(bus, l, &f, bytes, len);
        return;
    default:
        return; /* closing: nothing more is read */
    }
}

/* The header is complete: check its size before anything is allocated. */
static int head_done(sl_rbus_t *bus, link_t *l)
{
    uint32_t size = sl_load_u32(l->head + 48);
    uint32_t max = l->state == LINK_UP ? bus->cfg.frame_max : SL_HEADER_SIZE;
    if (size < SL_HEADER_SIZE || size > max) {
        char why[96];
        snprintf(why, sizeof(why), "frame size %u outside %u..%u%s", size, SL_HEADER_SIZE, max,
                 l->state == LINK_UP ? "" : " (handshake frames are header-only)");
        bus->stats.bad_frames++;
        link_close(bus, l, why);
        return -1;
    }
    l->frame_len = size;
    SL_TRIP_FRAME("bus_head", l->head, SL_HEADER_SIZE);
    if (size == SL_HEADER_SIZE)
        return 0;
    l->body_frame = sl_rbus_frame_alloc(size);
    if (!l->body_frame) {
        link_close(bus, l, "out of memory for a frame");
        return -1;
    }
    memcpy(l->body_frame, l->head, SL_HEADER_SIZE);
    l->frame_got = SL_HEADER_SIZE;
    return 0;
}

/* Reads what is there, frame by frame. -1 when the link was closed. */
static int link_read(sl_rbus_t *bus, link_t *l)
{
    for (uint32_t frames = 0; frames < SL_RBUS_FRAMES_PER_POLL;) {
        /* Backpressure: with no room for a frame, nothing more is read (a
         * frame half read waits where it is). */
        if (l->state == LINK_UP && bus->budget == 0)
            return 0;
        uint8_t *dst;
        size_t want;
        if (l->head_got < SL_HEADER_SIZE) {
            dst = l->head + l->head_got;
            want = SL_HEADER_SIZE - l->head_got;
        } else {
            dst = l->body_frame + l->frame_got;
            want = l->frame_len - l->frame_got;
        }
        ssize_t n = recv(l->fd, dst, want, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        if (n <= 0) {
            link_close(bus, l, n == 0 ? "closed by the peer" : strerror(errno));
            return -1;
        }
        bool in_head = l->head_got < SL_HEADER_SIZE;
        if (in_head)
            l->head_got += (uint32_t)n;
        else
            l->frame_got += (uint32_t)n;
        if (in_head && l->head_got == SL_HEADER_SIZE && head_done(bus, l))
            return -1;
        bool whole = l->head_got == SL_HEADER_SIZE &&
                     (l->frame_len == SL_HEADER_SIZE || l->frame_got == l->frame_len);
        if (!whole)
            continue;
        uint8_t *frame = l->body_frame ? l->body_frame : l->head;
        link_state_t before = l->state;
        link_frame(bus, l, frame, l->frame_len);
        if (l->state == LINK_FREE)
            return -1;
        sl_rbus_frame_release(l->body_frame);
        l->body_frame = NULL;
        l->head_got = l->frame_got = l->frame_len = 0;
        frames++;
        if (l->state == LINK_CLOSING || before != l->state)
            return 0; /* a handshake step: write before reading on */
    }
    return 0;
}

/* --- dialing and accepting ------------------------------------------------------------------- */

static void dial(sl_rbus_t *bus, uint8_t id, uint64_t now)
{
    peer_t *p = &bus->peers[id];
    struct sockaddr_storage ss;
    socklen_t len;
    bus->stats.dials++;
    if (sockaddr_of(&bus->cfg.peers[id], &ss, &len)) {
        schedule_dial(bus, p, now);
        return;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    link_t *l = fd >= 0 ? link_alloc(bus, fd, true) : NULL;
    if (!l) {
        if (fd >= 0)
            close(fd);
        schedule_dial(bus, p, now);
        return;
    }
    socket_tune(fd);
    l->peer = id;
    l->deadline_us = now + (uint64_t)bus->cfg.handshake_timeout_ms * 1000u;
    p->dialed = l;
    l->state = LINK_CONNECTING;
    if (connect(fd, (struct sockaddr *)&ss, len) == 0)
        dialer_connected(bus, l);
    else if (errno != EINPROGRESS)
        link_close(bus, l, strerror(errno));
}

static void connect_done(sl_rbus_t *bus, link_t *l)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        /* A peer that is not up yet refuses: not worth a warning each retry. */
        sl_log_debug("replica plane: dialing %u: %s", l->peer, strerror(err));
        link_close(bus, l, NULL);
        return;
    }
    dialer_connected(bus, l);
}

static void accept_some(sl_rbus_t *bus, uint64_t now)
{
    for (uint32_t i = 0; i < ACCEPTS_PER_POLL; i++) {
        int fd = accept4(bus->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        uint32_t pending = 0;
        for (uint32_t k = 0; k < LINKS_MAX; k++)
            pending += bus->links[k].state == LINK_AWAIT_HELLO;
        link_t *l = pending < SL_RBUS_PENDING_MAX ? link_alloc(bus, fd, false) : NULL;
        if (!l) {
            sl_log_warn("replica plane: too many connections in their handshake; closed one");
            close(fd);
            continue;
        }
        socket_tune(fd);
        l->state = LINK_AWAIT_HELLO;
        l->deadline_us = now + (uint64_t)bus->cfg.handshake_timeout_ms * 1000u;
    }
}

/* --- the turn ------------------------------------------------------------------------------ */

static void dial_due(sl_rbus_t *bus, uint64_t now)
{
    for (uint32_t id = bus->cfg.self + 1u; id < bus->cfg.replica_count; id++) {
        peer_t *p = &bus->peers[id];
        if (!p->up && !p->dialed && now >= p->next_dial_us)
            dial(bus, (uint8_t)id, now);
    }
}

static void expire_handshakes(sl_rbus_t *bus, uint64_t now)
{
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        link_t *l = &bus->links[i];
        if (l->state != LINK_FREE && l->state != LINK_UP && now >= l->deadline_us)
            link_close(bus, l, l->state == LINK_CONNECTING ? NULL : "handshake timed out");
    }
}

/* Milliseconds until the next dial or handshake deadline, at most cap. */
static int next_timer_ms(const sl_rbus_t *bus, uint64_t now, int cap)
{
    uint64_t next = now + (uint64_t)cap * 1000u;
    for (uint32_t id = bus->cfg.self + 1u; id < bus->cfg.replica_count; id++) {
        const peer_t *p = &bus->peers[id];
        if (!p->up && !p->dialed && p->next_dial_us < next)
            next = p->next_dial_us;
    }
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        const link_t *l = &bus->links[i];
        if (l->state != LINK_FREE && l->state != LINK_UP && l->deadline_us < next)
            next = l->deadline_us;
    }
    return next <= now ? 0 : (int)((next - now + 999) / 1000);
}

void sl_rbus_poll(sl_rbus_t *bus, int timeout_ms)
{
    uint64_t now = sl_clock_monotonic_us();
    dial_due(bus, now);
    bus->budget = bus->cfg.room ? bus->cfg.room(bus->cfg.ctx) : UINT32_MAX;
    if (bus->budget == 0)
        bus->stats.paused++;
    struct pollfd fds[LINKS_MAX + 2]; /* the listener, the links, the wake fd */
    link_t *owner[LINKS_MAX + 1];
    nfds_t n = 0;
    fds[n] = (struct pollfd){.fd = bus->listen_fd, .events = POLLIN};
    owner[n++] = NULL;
    /* Last in fds, so the loop below never looks at it. */
    struct pollfd *wake = NULL;
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        link_t *l = &bus->links[i];
        if (l->state == LINK_FREE)
            continue;
        short ev = l->state == LINK_CONNECTING ? POLLOUT : POLLIN;
        if (l->state == LINK_UP && bus->budget == 0)
            ev = 0; /* not read until the receiver has room (errors still wake the poll) */
        if (l->queue_count)
            ev |= POLLOUT;
        fds[n] = (struct pollfd){.fd = l->fd, .events = ev};
        owner[n++] = l;
    }
    if (bus->cfg.wake_fd >= 0) {
        wake = &fds[n];
        *wake = (struct pollfd){.fd = bus->cfg.wake_fd, .events = POLLIN};
    }
    int rc = poll(fds, n + (wake != NULL),
                  next_timer_ms(bus, now, timeout_ms < 0 ? 1000 : timeout_ms));
    now = sl_clock_monotonic_us();
    if (rc > 0 && wake && (wake->revents & POLLIN)) {
        uint64_t v;
        if (read(bus->cfg.wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
            sl_log_debug("replica bus: wake fd read failed: %s", strerror(errno));
    }
    for (nfds_t i = 0; rc > 0 && i < n; i++) {
        link_t *l = owner[i];
        short re = fds[i].revents;
        if (!re)
            continue;
        if (!l) {
            accept_some(bus, now); /* first in fds: no slot it reuses is looked at later */
            continue;
        }
        if (l->state == LINK_FREE)
            continue; /* closed earlier in this turn (a link replaced by a newer one) */
        if (l->state == LINK_CONNECTING) {
            connect_done(bus, l);
            continue;
        }
        if ((re & (POLLIN | POLLHUP | POLLERR)) && l->state != LINK_CLOSING && link_read(bus, l))
            continue;
        if (l->state != LINK_FREE && l->queue_count && link_flush(bus, l))
            continue;
        if (l->state == LINK_CLOSING && l->queue_count == 0)
            link_close(bus, l, NULL);
    }
    expire_handshakes(bus, now);
}

/* --- the public rest ---------------------------------------------------------------------- */

int sl_rbus_create(const sl_rbus_config_t *cfg, sl_rbus_t **out)
{
    sl_assert(cfg->replica_count >= 1 && cfg->replica_count <= SL_RBUS_REPLICAS_MAX);
    sl_assert(cfg->self < cfg->replica_count && cfg->queue_max >= 2);
    sl_assert(cfg->frame_max >= SL_HEADER_SIZE && cfg->backoff_min_ms >= 1);
    sl_rbus_t *bus = calloc(1, sizeof(*bus));
    if (!bus)
        return -ENOMEM;
    bus->cfg = *cfg;
    bus->listen_fd = -1;
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        bus->links[i].queue = calloc(cfg->queue_max, sizeof(out_frame_t));
        if (!bus->links[i].queue) {
            sl_rbus_destroy(bus);
            return -ENOMEM;
        }
    }
    uint8_t seed[8];
    if (getrandom(seed, sizeof(seed), 0) == (ssize_t)sizeof(seed))
        memcpy(&bus->jitter_state, seed, sizeof(seed));
    bus_listen_t l = {&cfg->listen, &bus->listen_fd, &bus->port};
    int rc = sl_listen_retry(listen_try, &l);
    if (rc) {
        sl_log_error("replica plane: cannot listen on %s port %u: %s", cfg->listen.host,
                     cfg->listen.port, strerror(-rc));
        sl_rbus_destroy(bus);
        return rc;
    }
    *out = bus;
    return 0;
}

void sl_rbus_destroy(sl_rbus_t *bus)
{
    if (!bus)
        return;
    for (uint32_t i = 0; i < LINKS_MAX; i++) {
        link_t *l = &bus->links[i];
        if (l->queue) {
            link_close(bus, l, NULL);
            free(l->queue);
        }
    }
    if (bus->listen_fd >= 0)
        close(bus->listen_fd);
    free(bus);
}

int sl_rbus_send_owned(sl_rbus_t *bus, uint8_t peer, uint8_t *frame, uint32_t len)
{
    if (peer >= bus->cfg.replica_count || peer == bus->cfg.self || len < SL_HEADER_SIZE ||
        len > bus->cfg.frame_max) {
        sl_rbus_frame_release(frame);
        return -EINVAL;
    }
    link_t *l = bus->peers[peer].up;
    if (!l) {
        sl_rbus_frame_release(frame);
        bus->stats.dropped++;
        return -ENOTCONN;
    }
    if (!queue_push_owned(bus, l, frame, len)) {
        sl_rbus_frame_release(frame);
        bus->stats.dropped++;
        bus->stats.dropped_full++;
        return -ENOBUFS;
    }
    (void)link_flush(bus, l); /* most frames go out at once */
    return 0;
}

int sl_rbus_send(sl_rbus_t *bus, uint8_t peer, const uint8_t *frame, uint32_t len)
{
    if (len < SL_HEADER_SIZE || len > bus->cfg.frame_max)
        return -EINVAL;
    uint8_t *copy = sl_rbus_frame_alloc(len);
    if (!copy) {
        bus->stats.dropped++;
        bus->stats.dropped_full++;
        return -ENOBUFS;
    }
    memcpy(copy, frame, len);
    return sl_rbus_send_owned(bus, peer, copy, len);
}

uint8_t *sl_rbus_take_frame(sl_rbus_t *bus)
{
    link_t *l = bus->delivering;
    if (l == NULL || l->body_frame == NULL)
        return NULL;
    uint8_t *frame = l->body_frame;
    l->body_frame = NULL;
    return frame;
}

uint16_t sl_rbus_port(const sl_rbus_t *bus)
{
    return bus->port;
}

void sl_rbus_set_peer(sl_rbus_t *bus, uint8_t peer, const sl_rbus_addr_t *addr)
{
    sl_assert(peer < SL_RBUS_REPLICAS_MAX);
    bus->cfg.peers[peer] = *addr;
}

void sl_rbus_stats(const sl_rbus_t *bus, sl_rbus_stats_t *out)
{
    *out = bus->stats;
}

bool sl_rbus_link_up(const sl_rbus_t *bus, uint8_t peer)
{
    return peer < SL_RBUS_REPLICAS_MAX && bus->peers[peer].up != NULL;
}
