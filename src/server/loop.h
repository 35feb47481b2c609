/* The transport of sluiced: one io_uring event loop per shard thread that
 * accepts TCP connections, assembles whole frames (framing.md 1) and writes
 * vectored replies. It knows nothing of commands: frames go to a callback.
 *
 * Threads. A loop belongs to the thread that calls sl_loop_run; every
 * function here except sl_loop_stop must be called on that thread (the
 * callbacks run there too). sl_loop_stop is safe from any thread and from a
 * signal handler.
 *
 * Lockstep. A connection has at most one frame in the handler's hands. After
 * on_frame the loop delivers nothing more on that connection until the
 * handler answers with exactly one of sl_conn_reply, sl_conn_reply_close,
 * sl_conn_done or sl_conn_close, now or later (from another callback on the
 * same thread), and until a reply has been completely written.
 *
 * Memory and time a client can hold (docs/configuration.md, "Memory").
 * - Each connection has a frame limit (sl_conn_set_frame_limit): a header
 *   declaring more closes the connection before anything is reserved. The
 *   loop knows no commands; the server lowers the limit until a login.
 * - Every frame larger than one receive buffer (buf_size) is reserved
 *   against one budget (cfg.frame_budget) from the moment its header
 *   arrives until its buffer goes back to the pool or the handler takes it.
 *   A frame that does not fit waits with its receive not armed, behind every
 *   frame that waited before it, until bytes come back; the loop learns that
 *   a waiting client went away only when its turn comes. Smaller frames are
 *   part of what each connection costs (like its spill) and never wait.
 * - A frame must be complete within frame_timeout_ms of its first byte, and
 *   a reply written within reply_timeout_ms; the tick closes connections
 *   past either. Only the client's own sending and reading are timed: a
 *   frame waiting for the budget or held by the handler never times out.
 *
 * Ownership and lifetimes.
 * - The frame passed to on_frame is owned by the loop and stays valid until
 *   the reply has been written (on_sent), until sl_conn_done, or until
 *   on_close, whichever comes first. A reply may point into it. The handler
 *   may take the buffer over with sl_conn_take_frame; it then gives it back
 *   to the loop's frame pool (sl_loop_frame_pool) when done with it.
 * - Reply bytes are borrowed: the iovec array is copied, the bytes it points
 *   at must stay valid until on_sent or on_close for that connection.
 * - sl_conn_t pointers are valid from on_open until on_close returns. on_close
 *   runs exactly once per opened connection, after the kernel holds no
 *   reference to anything of it; free the user pointer there.
 */
#ifndef SL_SERVER_LOOP_H
#define SL_SERVER_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "base/limits.h"
#include "server/frame_pool.h"

typedef struct sl_loop sl_loop_t;
typedef struct sl_conn sl_conn_t;

/* --- defaults (the server's config table refers to these) ---------------- */

/* Connections one loop holds, closing ones included: bounds memory. */
#define SL_LOOP_MAX_CONNS_DEFAULT 1024u
/* Frames one connection may have delivered per loop turn: fairness. */
#define SL_LOOP_FRAMES_PER_TURN_DEFAULT 4u
/* Period of on_tick; heartbeat checks need no finer grain. */
#define SL_LOOP_TICK_MS_DEFAULT 1000u
/* How long a stopping loop waits for handlers to answer before it closes. */
#define SL_LOOP_STOP_GRACE_MS_DEFAULT 5000u
/* Bytes of frames held at once (message_bus.receive_memory_max). */
#define SL_LOOP_FRAME_BUDGET_DEFAULT (256ull * 1024u * 1024u)
/* A frame's first byte to its last, and a reply's first send to its last
 * byte taken by the client (tcp.frame_timeout, tcp.reply_timeout). */
#define SL_LOOP_FRAME_TIMEOUT_MS_DEFAULT 30000u
#define SL_LOOP_REPLY_TIMEOUT_MS_DEFAULT 30000u
/* Submission queue entries; the kernel sizes the completion queue twice. */
#define SL_LOOP_RING_ENTRIES_DEFAULT 1024u
/* Provided receive buffers: count (a power of two) and size of each. A
 * frame's header and the start of its body arrive in one of them. */
#define SL_LOOP_BUF_COUNT_DEFAULT 256u
#define SL_LOOP_BUF_SIZE_DEFAULT  (16u * 1024u)
/* Most iovec entries one reply may have (the kernel's IOV_MAX). */
#define SL_LOOP_IOV_MAX 1024

/* --- transports -------------------------------------------------------------- */

/* A byte-stream adapter between a connection's socket and its frame
 * assembly (TLS, WebSocket): the frames, lockstep and replies above it are
 * those of plain TCP. A connection without one reads and writes the socket
 * directly. Everything runs on the loop thread and never blocks.
 * - open: a new connection's state; whatever the transport wants to send
 *   (handshake bytes, control frames, encoded replies) it appends to out,
 *   which the loop owns and sends, and which outlives the state.
 * - input: n bytes from the socket, kept until read takes them.
 * - read: up to n (> 0) bytes of the frame stream into dst: the count, 0
 *   when more input is needed, -errno to close (why() says why).
 * - write: n bytes of the reply stream, encoded into out. -errno to close.
 * - established: the handshake is done (until then handshake_timeout_ms
 *   runs from the accept).
 * - need (optional): how many socket bytes must still arrive, at the
 *   least, before stream_bytes more of the frame stream can come out of
 *   read, given what the transport holds now (0: maybe none). The loop
 *   then waits for that many in one receive straight into the frame's
 *   free tail (they go to input from there before read writes over them),
 *   instead of a receive buffer's worth per loop turn. It must never
 *   overstate: a client that sends exactly its frame would wait forever. */
typedef struct sl_conn_transport {
    const char *name;    /* for the log: "tls", "ws", "wss" */
    uint8_t report_code; /* transport code clients are listed with; 0: TCP */
    int (*open)(void *ctx, sl_buf_t *out, void **state);
    void (*close)(void *state);
    int (*input)(void *state, const uint8_t *data, uint32_t n);
    int (*read)(void *state, uint8_t *dst, uint32_t n);
    int (*write)(void *state, const uint8_t *src, size_t n);
    bool (*established)(const void *state);
    const char *(*why)(const void *state);
    uint32_t (*need)(void *state, uint32_t stream_bytes);
} sl_conn_transport_t;

/* A further listening socket (a door) with its transport. */
typedef struct sl_loop_door {
    int listen_fd;                        /* listening, the caller's: not closed */
    const sl_conn_transport_t *transport; /* NULL: plain */
    void *transport_ctx;                  /* first argument of transport->open */
} sl_loop_door_t;

#define SL_LOOP_DOORS_MAX 3u
/* Reply bytes a transport encodes at a time: one such chunk is written
 * while the next is encoded, so memory per connection stays near twice
 * this whatever the reply's size, and one encode is a bounded piece of a
 * loop turn. */
#define SL_LOOP_TRANSPORT_CHUNK (256u * 1024u)

/* --- configuration --------------------------------------------------------- */

/* Completion sources one loop reads (worker pools, other threads' inboxes). */
#define SL_LOOP_EVENTS_MAX 4u

typedef struct sl_loop_event {
    int fd; /* an eventfd (8-byte reads) */
    void (*on_event)(void *ctx, sl_loop_t *loop);
} sl_loop_event_t;

typedef struct sl_loop_callbacks {
    /* A connection was accepted; may set the user pointer or close it. */
    void (*on_open)(void *ctx, sl_conn_t *conn);
    /* One whole frame, header included (size >= 256, <= max_frame). */
    void (*on_frame)(void *ctx, sl_conn_t *conn, const uint8_t *frame, uint32_t size);
    /* The last reply was completely written; its bytes may be released. */
    void (*on_sent)(void *ctx, sl_conn_t *conn);
    /* Last call for a connection (see the ownership notes above). */
    void (*on_close)(void *ctx, sl_conn_t *conn);
    /* Every tick_ms, also while stopping. Optional. */
    void (*on_tick)(void *ctx, sl_loop_t *loop);
    /* Once per turn, after every runnable connection had its frames
     * delivered and before closed connections are released (their
     * on_close comes after this): work the frames of one turn share, such
     * as one fdatasync for several appends. Optional. */
    void (*on_turn_end)(void *ctx, sl_loop_t *loop);
} sl_loop_callbacks_t;

/* Test hooks that make the kernel look slow: every send and every body
 * receive moves at most this many bytes (0: no cap), so the short-write and
 * short-read paths run deterministically. */
typedef struct sl_loop_faults {
    uint32_t send_max;
    uint32_t recv_max;
} sl_loop_faults_t;

typedef struct sl_loop_config {
    const char *host; /* numeric address to bind when listen_fd < 0 */
    uint16_t port;    /* 0: an ephemeral port (see sl_loop_port) */
    int listen_fd;    /* >= 0: a listening socket shared by shards, not closed */
    /* Completion sources: eventfds the loop keeps a read on until it
     * finishes (also while stopping, so handlers waiting for one can
     * answer). Each read calls that source's on_event(ctx, loop) while
     * completions are drained: another thread (a worker pool, say) has
     * results for this one, and it may answer delivered frames. The fds
     * are the caller's, not closed. */
    sl_loop_event_t events[SL_LOOP_EVENTS_MAX];
    uint32_t events_count;
    /* Largest frame, header included; a bigger size field closes the
     * connection. Each connection's own limit (sl_conn_set_frame_limit)
     * starts here and never exceeds it. */
    uint32_t max_frame;
    /* Bytes of frames above buf_size reserved at once, counted at their
     * declared size from header to release (the pool may round a buffer up
     * to its size class, less than twice). At least max_frame, so the
     * largest frame always fits. Frame memory is bounded by this, buf_size
     * per connection and the pool's idle cap. */
    uint64_t frame_budget;
    /* The transport of the listener above (NULL: plain TCP) and more doors. */
    const sl_conn_transport_t *transport;
    void *transport_ctx;
    sl_loop_door_t doors[SL_LOOP_DOORS_MAX];
    uint32_t door_count;
    /* Accept to an established transport (its handshake); 0: none. */
    uint32_t handshake_timeout_ms;
    uint32_t frame_timeout_ms; /* first byte to last of one frame; 0: none */
    uint32_t reply_timeout_ms; /* first send to last byte of one reply; 0: none */
    uint32_t max_conns;        /* more are accepted and closed at once */
    uint32_t frames_per_turn;  /* per connection */
    uint32_t tick_ms;
    uint32_t stop_grace_ms;
    uint32_t ring_entries;
    uint32_t buf_count; /* power of two, at most 32768 */
    uint32_t buf_size;  /* at least one header */
    /* Where frame buffers come from (the loop thread's pool, shared with
     * whoever frames are handed to). NULL: the loop makes one of its own
     * with SL_FRAME_POOL_IDLE_MAX_DEFAULT and frees it with the loop. */
    sl_frame_pool_t *frame_pool;
    sl_loop_callbacks_t cb; /* on_frame is required, the rest optional */
    void *ctx;              /* first argument of every callback */
    sl_loop_faults_t faults;
} sl_loop_config_t;

/* Fills every field with its default: 127.0.0.1, ephemeral port, no shared
 * socket, no completion source, 64 MiB frames. Callbacks and ctx are left NULL. */
void sl_loop_config_init(sl_loop_config_t *cfg);

/* Counters for logs and tests; read on the loop thread or after run. */
typedef struct sl_loop_stats {
    uint64_t turns;
    uint64_t accepted;
    uint64_t refused; /* accepted then closed at once: at max_conns or stopping */
    uint64_t closed;
    uint64_t frames;
    uint64_t bad_frames;     /* size < 256 or above max_frame */
    uint64_t enobufs;        /* receives that found the buffer ring empty */
    uint64_t over_limit;     /* headers above their connection's frame limit (closed) */
    uint64_t budget_waits;   /* frames that waited for the frame budget */
    uint64_t frame_timeouts; /* connections closed: a frame took too long */
    uint64_t reply_timeouts; /* connections closed: a reply was not taken in time */
    /* Connections closed: no transport handshake in time; the transport
     * refused the bytes (not TLS, a bad WebSocket frame). */
    uint64_t handshake_timeouts;
    uint64_t transport_errors;
    uint64_t budget_used;    /* bytes of the frame budget reserved now */
    uint32_t budget_waiting; /* connections waiting for the frame budget now */
    uint32_t conns;
} sl_loop_stats_t;

/* --- the loop -------------------------------------------------------------- */

/* Sets up the ring, the provided buffers and the listening socket. Returns 0
 * or -errno; when the ring itself cannot be created the error is the one of
 * io_uring_queue_init and sl_loop_diagnose explains it. */
int sl_loop_create(const sl_loop_config_t *cfg, sl_loop_t **out) SL_WUR;
/* Runs until stopped, on the calling thread; once per loop. Returns 0, or
 * -errno when the ring fails (connections are then closed by destroy). */
int sl_loop_run(sl_loop_t *loop) SL_WUR;
/* Asks the loop to stop: accept nothing more, hand frames already read to
 * the handler, write their replies, close every connection, return from
 * run. Async-signal-safe and callable from any thread, before or during run. */
void sl_loop_stop(sl_loop_t *loop);
/* Frees everything. The loop must not be running. */
void sl_loop_destroy(sl_loop_t *loop);

/* The local port of the listening socket (the ephemeral one when port 0). */
uint16_t sl_loop_port(const sl_loop_t *loop);
/* The local port of a listening socket (sl_loop_port for another door). */
uint16_t sl_loop_socket_port(int listen_fd);
/* Increments once per loop turn: "the same turn" for per-turn budgets. */
uint64_t sl_loop_turn(const sl_loop_t *loop);
void sl_loop_stats(const sl_loop_t *loop, sl_loop_stats_t *out);
/* The pool frame buffers come from (cfg.frame_pool or the loop's own). */
sl_frame_pool_t *sl_loop_frame_pool(const sl_loop_t *loop);

/* A human explanation of an sl_loop_create error (-errno) naming the likely
 * cause: kernel.io_uring_disabled, seccomp, RLIMIT_MEMLOCK or an old kernel.
 * The text is thread-local and valid until the next call on the thread. */
const char *sl_loop_diagnose(int err);

/* A listening TCP socket on a numeric host and port (SO_REUSEADDR), for
 * several loops to share. Returns 0 or -errno. */
int sl_loop_listen(const char *host, uint16_t port, int backlog, int *fd_out) SL_WUR;

/* How long start-up retries a listen address that is in use, and how often.
 * A sluiced killed a moment ago leaves its listening sockets open for some
 * milliseconds after its exit (io_uring drops the pending accept's hold on
 * them from a kernel worker), so a supervisor's immediate restart would find
 * the port taken; a port that another server really holds is reported
 * after this long. 10 s: under ASan (CI) the release took more than 2 s
 * after a kill -9 of all three nodes of a cluster test. */
#define SL_LISTEN_RETRY_MS      10000u
#define SL_LISTEN_RETRY_STEP_MS 20u

/* Calls listen_fn(ctx) again while it returns -EADDRINUSE, every
 * SL_LISTEN_RETRY_STEP_MS for up to SL_LISTEN_RETRY_MS; returns its last
 * result. Every listener of the server (clients, the replica plane) starts
 * through it. */
int sl_listen_retry(int (*listen_fn)(void *ctx), void *ctx) SL_WUR;

/* Opens a connection on fd, a connected stream socket made in this process
 * (one end of a socketpair), as if it had been accepted: on_open runs, then
 * frames flow as on any connection. label replaces the peer address in
 * logs. Returns the connection, or NULL when refused (at max_conns or
 * stopping; fd is closed). Loop thread only, before or during run. Used by
 * the HTTP door to reach the request gate as an internal client. */
sl_conn_t *sl_loop_adopt(sl_loop_t *loop, int fd, const char *label);

/* --- connections ----------------------------------------------------------- */

/* Answers the delivered frame with iovcnt (1..SL_LOOP_IOV_MAX) runs of bytes,
 * written in full with as many sends as it takes. 0, -EINVAL when no frame
 * awaits an answer or iovcnt is out of range, -ECONNRESET when the connection
 * is closing (nothing is written; on_close follows). */
int sl_conn_reply(sl_conn_t *conn, const struct iovec *iov, int iovcnt) SL_WUR;
/* Like sl_conn_reply, then closes once the reply is written (evictions). */
int sl_conn_reply_close(sl_conn_t *conn, const struct iovec *iov, int iovcnt) SL_WUR;
/* Writes a small unsolicited frame (an eviction) on a connection that has no
 * reply in flight, then closes it. 0, -EBUSY while a reply is being written
 * (call it again from on_sent, where the reply is complete), -EAGAIN when
 * the socket did not take it all (closed anyway). */
int sl_conn_send_final(sl_conn_t *conn, const void *bytes, size_t len);
/* The delivered frame needs no reply (a dropped frame). */
void sl_conn_done(sl_conn_t *conn);
/* Closes now: pending reads and writes are cancelled, on_close follows
 * once the kernel has let go. Idempotent. */
void sl_conn_close(sl_conn_t *conn);
/* Hands the delivered frame's buffer to the caller, so a large frame can be
 * passed on by ownership instead of copied; it goes back with
 * sl_frame_pool_put on sl_loop_frame_pool (never free()). NULL if taken or
 * none is delivered. The handler must still answer. */
uint8_t *sl_conn_take_frame(sl_conn_t *conn);

/* The largest frame (header included) this connection may declare from its
 * next header on, clamped to 256..max_frame. New connections start at
 * max_frame; sluiced lowers it until a login and raises it after one. A
 * frame already declared keeps the limit it was declared under. */
void sl_conn_set_frame_limit(sl_conn_t *conn, uint32_t bytes);
uint32_t sl_conn_frame_limit(const sl_conn_t *conn);
/* True while a reply is being written: the bytes it points at are in use. */
bool sl_conn_replying(const sl_conn_t *conn);

void *sl_conn_user(const sl_conn_t *conn);
void sl_conn_set_user(sl_conn_t *conn, void *user);
/* "127.0.0.1:51234" or "[::1]:51234"; valid as long as the connection. */
const char *sl_conn_peer(const sl_conn_t *conn);
/* Unique per process, never 0. */
uint32_t sl_conn_id(const sl_conn_t *conn);
sl_loop_t *sl_conn_loop(const sl_conn_t *conn);
bool sl_conn_closing(const sl_conn_t *conn);
/* The report_code of the connection's transport; 0 for plain TCP. */
uint8_t sl_conn_transport_code(const sl_conn_t *conn);

#endif
