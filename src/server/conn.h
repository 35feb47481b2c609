/* Internals of the event loop shared by loop.c (ring, accept, timers, stop)
 * and conn.c (frame assembly, replies, closing). Nothing outside
 * src/server/loop.c, conn.c and their unit test includes this. */
#ifndef SL_SERVER_CONN_H
#define SL_SERVER_CONN_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/loop.h"

/* --- intrusive doubly-linked lists ----------------------------------------- */

typedef struct sl_dlink {
    struct sl_dlink *prev;
    struct sl_dlink *next;
} sl_dlink_t;

static inline void sl_dlist_init(sl_dlink_t *head)
{
    head->prev = head->next = head;
}
static inline bool sl_dlist_empty(const sl_dlink_t *head)
{
    return head->next == head;
}
static inline void sl_dlist_push(sl_dlink_t *head, sl_dlink_t *node)
{
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}
static inline void sl_dlist_remove(sl_dlink_t *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
}
/* Moves every node of from to the empty list to. */
static inline void sl_dlist_move_all(sl_dlink_t *from, sl_dlink_t *to)
{
    sl_dlist_init(to);
    if (sl_dlist_empty(from))
        return;
    to->next = from->next;
    to->prev = from->prev;
    to->next->prev = to;
    to->prev->next = to;
    sl_dlist_init(from);
}

#define SL_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* --- submission tags ------------------------------------------------------- */

/* user_data = pointer | tag. Connections are malloc'd (16-byte aligned), so
 * the low bits are free; loop-wide operations carry the tag alone. */
enum {
    SL_UD_IGNORE = 0, /* cancellations and timeout removals */
    SL_UD_ACCEPT = 1,
    SL_UD_WAKE = 2,
    SL_UD_TICK = 3,
    SL_UD_RECV = 4,
    SL_UD_SEND = 5,
    SL_UD_EVENT = 6, /* the read on cfg.events[i], i in the bits above the tag */
    SL_UD_TAG_MASK = 7,
};

static inline uint64_t sl_ud(const void *ptr, unsigned tag)
{
    return (uint64_t)(uintptr_t)ptr | tag;
}

/* Buffer group of the provided receive buffers (one group per ring). */
#define SL_LOOP_BGID 0

/* --- the connection -------------------------------------------------------- */

typedef enum sl_conn_state {
    SL_CONN_HEAD,    /* assembling the 256-byte header */
    SL_CONN_WAIT,    /* header complete, waiting for the frame budget */
    SL_CONN_BODY,    /* size known: receiving straight into the frame */
    SL_CONN_READY,   /* a whole frame waits for its turn */
    SL_CONN_HANDLER, /* delivered; the handler has not answered yet */
    SL_CONN_SENDING, /* the answer is being written */
} sl_conn_state_t;

enum { SL_CONN_IOV_INLINE = 4, SL_CONN_PEER_LEN = 64 };

struct sl_conn {
    sl_loop_t *loop;
    int fd;
    uint32_t id;
    sl_conn_state_t state;
    uint32_t inflight; /* submissions the kernel still holds */
    bool closing;
    bool dead;    /* on loop->dead, waiting for on_close and free */
    bool queued;  /* linked on loop->runq (or the batch being run) */
    bool starved; /* linked on loop->starved: waits for receive buffers */
    bool waiting; /* linked on loop->waiters: waits for the frame budget */
    bool recv_armed;
    bool send_armed;
    bool close_after_send;
    void *user;
    sl_dlink_t all_link;    /* loop->conns */
    sl_dlink_t run_link;    /* loop->runq */
    sl_dlink_t starve_link; /* loop->starved */
    sl_dlink_t wait_link;   /* loop->waiters */
    struct sl_conn *dead_next;

    /* Read side: the header collects here first; once its size is known the
     * frame buffer is taken whole from the loop's pool and the header copied
     * to its start. */
    uint8_t hdr[SL_HEADER_SIZE];
    uint32_t hdr_have;
    uint32_t frame_limit;    /* largest frame the next header may declare */
    uint32_t reserved;       /* bytes of the loop's frame budget held for this frame */
    uint64_t frame_start_us; /* monotonic: first byte of the frame being read; 0 none */
    uint8_t *frame;
    uint32_t frame_size;
    uint32_t frame_have;
    /* Bytes past a complete frame that arrived in the same receive buffer:
     * the start of the next frame of a pipelining client. */
    uint8_t *spill;
    uint32_t spill_off;
    uint32_t spill_len;

    /* Write side: the reply's iovec array (copied), consumed from iov_idx. */
    struct iovec *iov;
    uint32_t iov_cnt;
    uint32_t iov_idx;
    struct iovec iov_inline[SL_CONN_IOV_INLINE];
    struct iovec iov_capped; /* faults.send_max */
    struct msghdr msg;
    uint64_t reply_start_us; /* monotonic: when the reply being written was armed */

    /* A transport between the socket and the frames (loop.h). Its output
     * collects in xout; xsend is the part handed to the kernel, of which
     * xsent bytes are written. Replies are encoded into xout a chunk ahead. */
    const sl_conn_transport_t *xport;
    void *xstate;
    sl_buf_t xout;
    sl_buf_t xsend;
    size_t xsent;
    uint64_t open_us; /* monotonic: accepted */

    char peer[SL_CONN_PEER_LEN];
};

/* A listening socket of the loop and the transport its connections get. */
typedef struct sl_door_state {
    int fd;
    bool own; /* created by the loop (cfg.host/port), closed with it */
    bool armed;
    bool retry; /* accept failed hard: re-arm on the next tick */
    const sl_conn_transport_t *transport;
    void *transport_ctx;
} sl_door_state_t;

/* --- the loop ---------------------------------------------------------------- */

struct sl_loop {
    struct io_uring ring;
    bool ring_ok;
    sl_loop_config_t cfg;
    int listen_fd; /* doors[0].fd */
    sl_door_state_t doors[1 + SL_LOOP_DOORS_MAX];
    uint32_t ndoors;
    int wake_fd;
    uint64_t wake_val;
    struct __kernel_timespec tick_ts;

    struct io_uring_buf_ring *br; /* provided buffer ring, page aligned */
    size_t br_bytes;
    uint8_t *bufs; /* buf_count * buf_size */
    bool br_registered;
    sl_frame_pool_t *pool; /* every frame buffer comes from here */
    bool own_pool;

    bool ran;
    bool tick_armed;
    bool wake_armed;
    bool event_armed[SL_LOOP_EVENTS_MAX];
    uint64_t event_val[SL_LOOP_EVENTS_MAX];
    bool stopping;
    bool finishing; /* no connections left: cancelling loop-wide operations */
    bool done;
    uint64_t stop_deadline_us;

    uint32_t nconns;
    sl_dlink_t conns;
    sl_dlink_t runq;
    sl_dlink_t starved; /* receives that met an empty buffer ring, oldest first */
    sl_dlink_t waiters; /* headers waiting for the frame budget, oldest first */
    uint64_t budget_used;
    bool tearing_down; /* destroy: connections are freed without waking others */
    struct sl_conn *dead;
    sl_loop_stats_t stats;
};

/* loop.c, for conn.c */
struct io_uring_sqe *sl_loop_sqe(sl_loop_t *loop);
void sl_loop_enqueue(sl_loop_t *loop, sl_conn_t *conn);
/* Parks a connection whose receive found no buffer (starve = true) until
 * buffers are back, or takes it off that list. */
void sl_loop_starve(sl_loop_t *loop, sl_conn_t *conn, bool starve);
void sl_loop_buf_return(sl_loop_t *loop, uint16_t bid);
/* Reserves size bytes of the frame budget for c (c->reserved), or puts c
 * at the end of the waiting list and returns false: nobody overtakes a
 * frame that waits. sl_loop_budget_release gives c's bytes back and grants
 * waiting frames in order, queueing their connections to run. */
bool sl_loop_budget_take(sl_loop_t *loop, sl_conn_t *conn, uint32_t size);
void sl_loop_budget_release(sl_loop_t *loop, sl_conn_t *conn);
/* Takes a closing connection off the waiting list. */
void sl_loop_budget_leave(sl_loop_t *loop, sl_conn_t *conn);
const uint8_t *sl_loop_buf(const sl_loop_t *loop, uint16_t bid);

/* conn.c, for loop.c */
/* A connection on fd accepted by door (NULL: plain, as in tests). */
sl_conn_t *sl_conn_new(sl_loop_t *loop, int fd, const sl_door_state_t *door);
void sl_conn_free(sl_conn_t *conn);
void sl_conn_on_recv(sl_conn_t *conn, int res, uint32_t flags);
void sl_conn_on_send(sl_conn_t *conn, int res);
/* Delivers up to budget frames and keeps a receive armed; true when work
 * is left over for the next turn. */
bool sl_conn_step(sl_conn_t *conn, uint32_t budget);
/* Closes the connection (logged at info) when the frame it is sending has
 * taken longer than frame_us since its first byte, or the reply it is
 * reading longer than reply_us since it was armed (0: no limit). */
void sl_conn_check_timeouts(sl_conn_t *conn, uint64_t now_us, uint64_t frame_us, uint64_t reply_us);
/* Closes the connection when its transport has not finished its handshake
 * handshake_us after the accept. */
void sl_conn_check_handshake(sl_conn_t *conn, uint64_t now_us, uint64_t handshake_us);

/* The text of sl_loop_diagnose from explicit facts (tested directly):
 * disabled = kernel.io_uring_disabled (-1 unknown), seccomp = the Seccomp
 * mode of /proc/self/status (-1 unknown), memlock = RLIMIT_MEMLOCK bytes. */
void sl_loop_explain(char *out, size_t cap, int err, int disabled, int seccomp, uint64_t memlock);

#endif
