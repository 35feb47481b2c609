/* libsluice internals: the client object, the pure framing helpers (request
 * numbering, reply processing) the unit tests drive directly, the socket
 * layer and the conversions from wire structs to the public result types.
 *
 * Everything here is private to src/client and its tests; names carry the
 * sl_client_ prefix so the library can be linked next to the server. */
#ifndef SL_CLIENT_INTERNAL_H
#define SL_CLIENT_INTERNAL_H

#include <sluice/client.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/arena.h"
#include "base/assert.h"
#include "base/bytes.h"
#include "wire/cmd_groups.h"
#include "wire/cmd_messages.h"
#include "wire/cmd_streams.h"
#include "wire/cmd_system.h"
#include "wire/cmd_topics.h"
#include "wire/cmd_users.h"
#include "wire/header.h"

/* --- limits of the client (reasons beside each) ----------------------------- */

#define SL_CLIENT_VERSION                    "0.1.0"
#define SL_CLIENT_SDK_NAME                   "sluice-c"
#define SL_CLIENT_CONNECT_TIMEOUT_MS_DEFAULT 5000u
/* Long enough for a snapshot or a purge on a slow disk. */
#define SL_CLIENT_REQUEST_TIMEOUT_MS_DEFAULT 30000u
/* Below this a frame could not hold a login reply with a long server version. */
#define SL_CLIENT_FRAME_MIN 4096u
/* Results take more room than the wire bytes they come from (a 13-byte group
 * header becomes a 40-byte struct plus a name copy); this factor bounds the
 * arena by the frame it was filled from. */
#define SL_CLIENT_ARENA_FACTOR 8u
/* Buffers and arena chunks above this are released at the start of the next
 * call, so one large reply does not pin memory for the client's lifetime. It
 * is well above the ~1 MiB batches producers and consumers move (requests a
 * little over 1 MiB grow tx to 2 MiB): a buffer released and allocated again
 * on every call costs a fresh mmap, page faults and zeroing each time. */
#define SL_CLIENT_KEEP_BYTES (4u << 20)
/* The kernel copies received bytes with `rep movsb`, which on some AMD cores
 * runs about ten times slower (1.7 against 22-31 GB/s measured here) when the
 * destination's offset within a page lies 1..31 bytes above the source's.
 * The source is the sender's layout, unknown in general (sluiced's reply
 * bodies arrive at page offset 256, which put libsluice's, at 16 + 256,
 * right in that window); a body placed mid-page keeps clear of the offsets
 * that page- or malloc-aligned buffers with a 256-byte header give (0, 16,
 * 256, 272). Only bodies of at least SL_CLIENT_BODY_SHIFT_MIN bytes are
 * placed; c->rx holds SL_CLIENT_PAGE bytes more than a frame for the shift. */
#define SL_CLIENT_PAGE             4096u
#define SL_CLIENT_BODY_PAGE_OFFSET 2048u
#define SL_CLIENT_BODY_SHIFT_MIN   16384u
/* First arena chunk. */
#define SL_CLIENT_ARENA_CHUNK 16384u
/* Connection care defaults (client.h, "Connection care"). */
#define SL_CLIENT_RECONNECT_DELAY_MS_DEFAULT     100u
#define SL_CLIENT_RECONNECT_DELAY_MAX_MS_DEFAULT 5000u
#define SL_CLIENT_TRANSIENT_DELAY_MS_DEFAULT     20u
/* A server that keeps answering "try again" for a second per replay is
 * overloaded; longer waits only hide that from the caller. */
#define SL_CLIENT_TRANSIENT_DELAY_MAX_MS 1000u
/* Recoveries (reconnect or re-login, then re-issue) within one call: one for
 * a dropped connection plus one for a session lost right after; more would
 * only loop against a server that keeps failing. */
#define SL_CLIENT_RECOVERIES_MAX 2u

/* --- session state and request numbering (framing.md 3, 5) ------------------ */

typedef struct sl_client_session {
    sl_u128_t client_id; /* non-zero; fresh for every login */
    uint64_t session;    /* epoch from the login reply; 0: not logged in */
    uint64_t request;    /* counter: 1 after login, next advancing number */
    uint32_t user_id;
} sl_client_session_t;

/* Whether requests of this operation carry request_checksum (the Rust SDK's
 * rule: Register, Logout, metadata operations and DeleteSegments). */
bool sl_client_op_stamped(uint8_t operation);
/* Whether this operation takes the next counter value (all but Register
 * and NonReplicated, framing.md 5.2's recommendation). */
bool sl_client_op_advances(uint8_t operation);
/* Completes a request frame in tx, which holds 256 reserved header bytes
 * followed by the body: fills the header for operation (code only with
 * operation 2) from s, advancing s->request when the operation advances.
 * -SL_ERR_COMMAND_LENGTH_ERROR when tx failed or the frame exceeds frame_max;
 * nothing is advanced then. */
int sl_client_frame_finish(sl_buf_t *tx, sl_client_session_t *s, uint8_t operation, uint32_t code,
                           uint32_t frame_max) SL_WUR;
/* Drops the session: not logged in, counter back to 1 (the client id stays
 * for pre-login pings). */
void sl_client_session_reset(sl_client_session_t *s);

/* --- reply processing (framing.md 7.2) -------------------------------------- */

typedef enum sl_client_outcome {
    SL_CLIENT_REPLY_OK,             /* payload ready */
    SL_CLIENT_REPLY_STATUS,         /* non-zero status, empty body */
    SL_CLIENT_REPLY_RESULT,         /* result section with a non-zero code */
    SL_CLIENT_REPLY_EMPTY_REGISTER, /* login reply without a body: failed */
    SL_CLIENT_REPLY_EVICTED,        /* eviction frame: the session is over */
    SL_CLIENT_REPLY_BAD_RESULT,     /* framed body with a malformed section */
    SL_CLIENT_REPLY_BAD_FRAME,      /* framing broken: close the connection */
} sl_client_outcome_t;

typedef struct sl_client_reply {
    sl_client_outcome_t outcome;
    sl_eviction_header_t eviction; /* when EVICTED */
    sl_reply_header_t header;      /* Reply frames (size and status at least) */
    sl_span_t frame;
    sl_span_t body;    /* the bytes after the header */
    sl_span_t payload; /* body without its result section */
    bool framed;       /* the body started with a result section */
    uint32_t result;   /* the section's code, 0 */
} sl_client_reply_t;

/* Steps 1-2 on a received header: the frame's total size, or
 * -SL_ERR_INVALID_COMMAND for a size outside 256..frame_max, a command byte
 * other than Reply (8) and Eviction (13), or an eviction with a body. */
int sl_client_frame_size(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max,
                         uint32_t *size) SL_WUR;
/* Steps 1-7 on a whole frame: fills out and returns 0 (payload ready) or the
 * negated error a call reports; out->outcome says which kind. A frame shorter
 * than 256 bytes is -SL_ERR_EMPTY_RESPONSE. Spans borrow frame. */
int sl_client_reply_process(sl_span_t frame, uint32_t frame_max, sl_client_reply_t *out) SL_WUR;

/* --- the client object ---------------------------------------------------------- */

/* The SendMessages request being built in tx (calls_messages.c). */
typedef struct sl_client_batch {
    bool open;
    size_t count_at; /* where the metadata's messages_count sits in tx */
    sl_batch_builder_t bb;
} sl_client_batch_t;

/* Random bytes for message ids (random.c): a ChaCha20 keystream in user
 * space, keyed from getrandom (the kernel's generator cost ~0.1 ms per 1000
 * ids). The pool is refilled 512 bytes at a time, 32 of which key the next
 * refill; the key is drawn from the kernel again after RESEED_BYTES of
 * output and after a fork. */
#define SL_CLIENT_RNG_POOL         512u
#define SL_CLIENT_RNG_RESEED_BYTES (1u << 20)

typedef struct sl_client_rng {
    uint32_t key[8];
    uint8_t pool[SL_CLIENT_RNG_POOL];
    size_t left; /* unserved bytes at the end of pool[] */
    size_t reseed_left;
    uint64_t generation; /* the fork generation the key was drawn in */
    uint64_t draws;      /* calls served; each costs bookkeeping, so callers batch */
    bool seeded;
} sl_client_rng_t;

/* n bytes of the client's keystream: 0, or -SL_ERR_ERROR when the kernel
 * gives no key. */
int sl_client_rng_bytes(sl_client_rng_t *r, void *out, size_t n) SL_WUR;

/* Dials a new connection for a reconnect: 0 with *fd, or the negated error.
 * The default dials host:port; tests substitute socketpairs. */
typedef int (*sl_client_dial_t)(void *ctx, int *fd);
/* Waits ms milliseconds between attempts; tests record instead. */
typedef void (*sl_client_sleep_t)(void *ctx, uint32_t ms);

/* A host and port to dial; a DNS name is at most 253 bytes. */
#define SL_CLIENT_HOST_MAX 256u
/* Nodes remembered from the last settlement, for reconnects: more than a
 * cluster of 3 or 5 lists; the rest of a larger roster is not needed to
 * find one node that answers. */
#define SL_CLIENT_KNOWN_NODES_MAX 8u

typedef struct sl_client_address {
    char host[SL_CLIENT_HOST_MAX];
    uint16_t port;
} sl_client_address_t;

/* Connection care (care.c): settings, what a reconnect needs, counters. */
typedef struct sl_client_care {
    uint32_t reconnect_attempts;
    uint32_t reconnect_delay_ms;
    uint32_t reconnect_delay_max_ms;
    uint32_t transient_retries;
    uint32_t transient_delay_ms;
    uint32_t heartbeat_interval_ms;
    char *host; /* NULL for an adopted socket */
    uint16_t port;
    /* Remembered after a successful login while reconnects are on; a token
     * login leaves username and password NULL. */
    char *username;
    char *password;
    char *token;
    bool recovering;       /* inside a recovery: the calls it makes get no care */
    uint64_t last_send_us; /* monotonic time of the last request written */
    uint64_t reconnects;
    uint64_t relogins;
    uint64_t replays;
    bool settle;            /* leader settlement on (settle_on_leader) */
    uint64_t leader_moves;  /* moves to another node by settlement */
    uint32_t cluster_nodes; /* nodes listed by the last settlement; 0: none yet */
    /* The nodes of the last settlement that lists 2 or more (their client
     * addresses): a reconnect that cannot reach the current node tries
     * them, so a client whose leader died finds the others. */
    sl_client_address_t known[SL_CLIENT_KNOWN_NODES_MAX];
    uint32_t known_count;
    sl_buf_t saved; /* a request body kept while a re-login reuses tx */
    sl_client_dial_t dial;
    void *dial_ctx;
    sl_client_sleep_t sleep;
    void *sleep_ctx;
} sl_client_care_t;

/* The transport of a connection (link.c): TLS and WebSocket state on top
 * of the socket. Settings are copied from the options at connect. */
#define SL_CLIENT_TLS_TEXT_MAX 1024u
/* TLS read-ahead buffer: a few 16 KiB records per read(2). */
#define SL_CLIENT_TLS_READ_BUFFER (128u * 1024u)
/* Plaintext encrypted before it is sent: a 1 MiB request leaves in four
 * rounds of large writes rather than 64 record-sized ones. */
#define SL_CLIENT_TLS_WRITE_CHUNK (256u * 1024u)
struct ssl_st;
struct ssl_ctx_st;
struct bio_method_st;
typedef struct sl_client_ws sl_client_ws_t;

typedef struct sl_client_link {
    sl_client_transport_t transport;
    bool tls;
    bool tls_validate;
    char tls_domain[SL_CLIENT_TLS_TEXT_MAX];
    char tls_ca_file[SL_CLIENT_TLS_TEXT_MAX];
    struct ssl_ctx_st *tls_ctx;           /* made at the first connect, kept for reconnects */
    struct bio_method_st *tls_out_method; /* the BIO kind that appends to tls_out */
    sl_buf_t tls_out;                     /* records written, not yet sent */
    struct ssl_st *ssl;                   /* this connection's TLS session, or NULL */
    sl_client_ws_t *ws;                   /* this connection's WebSocket state, or NULL */
} sl_client_link_t;

/* Requests in flight (pipe.c): submitted, reply not collected yet. A poll
 * keeps its request body so that a chained poll can be the same request
 * from a later offset; the largest body is three identifiers of 1 + 1 +
 * 255 bytes, the partition, the strategy, the count and the flag. */
#define SL_CLIENT_POLL_BODY_MAX 1024u

typedef struct sl_client_flight {
    uint64_t ticket;
    uint8_t operation; /* SL_OP_SEND_MESSAGES, or SL_OP_NON_REPLICATED: a poll */
    uint64_t request;  /* the number in its header, which the reply echoes */
    uint32_t messages; /* a send: messages in its batch */
    int cut;           /* 0, or what its collect returns: the connection was lost */
    uint32_t body_len; /* a poll: its request body */
    uint8_t body[SL_CLIENT_POLL_BODY_MAX];
} sl_client_flight_t;

typedef struct sl_client_pipe {
    sl_client_flight_t flights[SL_CLIENT_IN_FLIGHT_MAX]; /* a ring from head */
    uint32_t head;
    uint32_t count;   /* in the ring, cut ones included */
    uint32_t live;    /* not cut: their replies are still to come, or still to be written */
    uint64_t tickets; /* the last ticket handed out */
    /* A send submitted while another is on the wire is built and numbered
     * but held in `held` (the newest entry) until the reply before it has
     * been read: writing it at once would leave its bytes to be pushed
     * through the loopback stack by the server's own reads (a full receive
     * window), which cost sluiced more CPU per batch than the overlap won. */
    bool holding;
    sl_buf_t held;
} sl_client_pipe_t;

struct sl_client {
    int fd; /* -1 once closed after a transport or framing error */
    sl_client_link_t link;
    uint32_t connect_timeout_ms;
    uint32_t request_timeout_ms;
    uint32_t frame_max;
    char sdk_name[256];
    char sdk_version[256];
    sl_client_session_t session;
    sl_buf_t tx; /* the request being built: header space, then body */
    sl_buf_t rx; /* the last reply frame; results may borrow it */
    sl_arena_t arena;
    sl_client_batch_t batch; /* closed by every other call */
    sl_buf_t scratch;        /* the encoded user headers of the message being added */
    sl_client_rng_t rng;     /* message ids */
    sl_client_care_t care;
    char server_version[256]; /* of the last login, for sl_identity_t */
    sl_client_pipe_t pipe;    /* pipelined sends and polls */
};

/* Wraps a connected stream socket (tests use one end of a socketpair). The
 * client owns fd from then on, also on failure. */
int sl_client_adopt(int fd, const sl_client_options_t *options, sl_client_t **out) SL_WUR;
/* Forgets the previous call's results and reserves the request header
 * (both steps below); closes an open batch. */
void sl_client_call_begin(sl_client_t *c);
/* The first step alone: the previous call's results die here. */
void sl_client_results_release(sl_client_t *c);
/* The second step alone: an empty request with its header reserved. The
 * batch builder starts with this, so polled results survive until commit. */
void sl_client_request_begin(sl_client_t *c);
/* n bytes from the kernel's random source: 0 or -SL_ERR_ERROR. */
int sl_client_random(void *out, size_t n) SL_WUR;
/* Sends the request in c->tx and processes the reply: 0 with *reply filled
 * and the payload ready, or the negated error. Applies the side effects:
 * an eviction drops the session, a transport or framing error closes the
 * connection. Replicated operations need a session. */
int sl_client_call(sl_client_t *c, uint8_t operation, uint32_t code,
                   sl_client_reply_t *reply) SL_WUR;
/* The shape of most calls: when encode_rc (the body encoder's result) is 0,
 * sends c->tx and leaves the reply payload in *payload. */
int sl_client_run(sl_client_t *c, int encode_rc, uint8_t operation, uint32_t code,
                  sl_span_t *payload) SL_WUR;
/* Like sl_client_call for a request without a body. */
int sl_client_call_empty(sl_client_t *c, uint8_t operation, uint32_t code,
                         sl_client_reply_t *reply) SL_WUR;
/* One attempt of sl_client_call without connection care: check, number,
 * send, read, process. *sent (may be NULL) tells whether the whole request
 * reached the kernel, after which a transport failure leaves its outcome
 * unknown; *transport whether the error is one of the socket (the
 * connection is closed then). */
int sl_client_call_once(sl_client_t *c, uint8_t operation, uint32_t code, sl_client_reply_t *reply,
                        bool *sent, bool *transport) SL_WUR;
/* Sends the request already numbered in c->tx again and processes the reply
 * (a transient replay). Same outputs as sl_client_call_once. */
int sl_client_resend(sl_client_t *c, sl_client_reply_t *reply, bool *sent, bool *transport) SL_WUR;
/* Whether operation needs a bound session (all but Register and NonReplicated). */
bool sl_client_needs_session(uint8_t operation);
/* The login of a re-login, with the remembered credentials: no logout
 * first, nothing remembered again, no settlement (the caller settles). */
int sl_client_login_again(sl_client_t *c) SL_WUR;
/* One login exchange on the current connection: the Register body (token
 * NULL: username and password), a fresh client id, the session bound from
 * the reply; *out (may be NULL) filled, its server_version in the client. */
int sl_client_login_with(sl_client_t *c, const char *username, const char *password,
                         const char *token, sl_identity_t *out) SL_WUR;

/* --- pipelined requests (pipe.c) ---------------------------------------------------- */

/* Whether requests are in flight whose replies are still to be read from
 * the connection: every lockstep exchange is refused then. */
bool sl_client_pipe_busy(const sl_client_t *c);
/* Numbers and writes the request in c->tx (header reserved, body built)
 * without waiting for its reply, and lists it in flight: 0 with *ticket,
 * or the error (nothing listed). care: run connection care first when
 * nothing is in flight (off for a chained poll, whose reply being read
 * must survive). A poll's request body is kept in its entry; messages:
 * a send's message count. */
int sl_client_pipe_submit(sl_client_t *c, uint8_t operation, uint32_t code, uint32_t messages,
                          bool care, uint64_t *ticket) SL_WUR;
/* Reads the reply of the oldest request in flight, which must be of
 * operation (-SL_ERR_INVALID_COMMAND otherwise, or when none is): as
 * sl_client_call_once, with *flight a copy of its entry (taken off the
 * pipe). A lost connection cuts the requests behind it. */
int sl_client_pipe_collect(sl_client_t *c, uint8_t operation, sl_client_flight_t *flight,
                           sl_client_reply_t *reply) SL_WUR;
/* The side effects of a processed reply (client.c): an eviction drops the
 * session, a broken frame closes the connection. */
void sl_client_reply_apply(sl_client_t *c, const sl_client_reply_t *r);
/* Connection care before a request is written (care.c): a lost connection
 * dialled again, a lost session logged in again. 0 when care is off. */
int sl_client_care_prepare(sl_client_t *c, uint8_t operation) SL_WUR;

/* The pipelined poll in parts (calls_messages.c), for the consumer:
 * receive collects the oldest poll and decodes its reply (layout checked,
 * checksums not yet); next_offset says where the messages after it start
 * (false when it has none); result verifies and lists them as
 * sl_client_poll_messages does. */
int sl_client_poll_receive(sl_client_t *c, uint64_t *ticket, sl_client_flight_t *flight,
                           sl_poll_messages_reply_t *w) SL_WUR;
bool sl_client_poll_next_offset(const sl_poll_messages_reply_t *w, uint64_t *next);
/* sl_client_poll_submit, with connection care only when care is set (a
 * recovery reuses the buffers a reply being returned lives in). */
int sl_client_poll_submit_care(sl_client_t *c, bool care, sl_consumer_ref_t consumer,
                               sl_id_t stream, sl_id_t topic, uint32_t partition,
                               sl_poll_strategy_t strategy, uint32_t count, bool auto_commit,
                               uint64_t *ticket) SL_WUR;
int sl_client_poll_result(sl_client_t *c, const sl_poll_messages_reply_t *w,
                          sl_polled_messages_t *out) SL_WUR;

/* --- leader settlement (settle.c) ------------------------------------------------- */

/* Moves to another node per settlement: enough for a leader that changed
 * once while the client moved; a bound so two nodes that name each other
 * cannot keep a client hopping. */
#define SL_CLIENT_SETTLE_HOPS_MAX 3u

/* What the settlement decision reads: the GetClusterMetadata call's result
 * and payload, and where the client is connected. */
typedef struct sl_client_settle_in {
    int rc;            /* the call's result: anything but 0 means stay */
    sl_span_t payload; /* the reply body, decoded here */
    sl_client_transport_t transport;
    const char *given_host; /* the host as the application (or a move) gave it */
    const char *peer_host;  /* the connected peer's numeric address, or NULL */
    uint16_t port;          /* the port connected to */
} sl_client_settle_in_t;

/* The decision alone, pure: true with *target when the client should move
 * to the first node that is Leader and Healthy; false (stay) for a failed
 * call, a body that does not decode, fewer than 2 nodes, no such node, an
 * unusable address (empty or too long, port 0), or the node connected to.
 * *nodes_count gets the nodes listed (0 when the body did not decode).
 * Decoding uses arena. */
bool sl_client_settle_decide(const sl_client_settle_in_t *in, sl_arena_t *arena,
                             sl_client_address_t *target, uint32_t *nodes_count);
/* The usable client addresses of a GetClusterMetadata reply (ports.tcp, or
 * ports.websocket for that transport; empty, over-long and port 0 entries
 * skipped), at most max of them into out; 0 when the body does not decode
 * or lists fewer than 2 nodes. Pure. */
uint32_t sl_client_settle_roster(sl_span_t payload, sl_client_transport_t transport,
                                 sl_arena_t *arena, sl_client_address_t *out, uint32_t max);
/* Whether two host texts name the same address: literals of one family by
 * their bytes (::1 and 0::1 agree), names without regard to case. */
bool sl_client_same_host(const char *a, const char *b);
/* Settles after a successful login with these credentials (token NULL:
 * username and password); *out (may be NULL) becomes the identity of the
 * node it ends on. 0 when it stayed or moved; the error of the
 * GetClusterMetadata exchange when that closed the connection. */
int sl_client_settle(sl_client_t *c, const char *username, const char *password, const char *token,
                     sl_identity_t *out) SL_WUR;
/* Whether settlement is on for this client (an option, and an address). */
bool sl_client_settle_on(const sl_client_t *c);

/* --- connection care (care.c) ------------------------------------------------------ */

/* The n-th backoff wait (attempt 0 is the first): d = first_ms * 2^attempt
 * capped at max_ms, then a point of [d/2, d] picked by random. Pure. */
uint32_t sl_client_backoff_ms(uint32_t first_ms, uint32_t max_ms, uint32_t attempt,
                              uint32_t random);
/* Whether calls go through the care path (reconnects or replays enabled). */
bool sl_client_care_on(const sl_client_t *c);
bool sl_client_reconnect_on(const sl_client_t *c);
/* sl_client_call with reconnects, re-logins and replays. */
int sl_client_care_call(sl_client_t *c, uint8_t operation, uint32_t code,
                        sl_client_reply_t *reply) SL_WUR;
void sl_client_care_init(sl_client_t *c, const sl_client_options_t *o);
/* Copies the credentials of a successful login (when reconnects are on). */
int sl_client_care_remember(sl_client_t *c, const char *username, const char *password,
                            const char *token) SL_WUR;
/* Wipes and frees the remembered credentials. */
void sl_client_care_forget(sl_client_t *c);
void sl_client_care_free(sl_client_t *c);

/* --- socket layer --------------------------------------------------------------- */

/* Monotonic deadline timeout_ms from now, in microseconds. */
uint64_t sl_client_deadline(uint32_t timeout_ms);
int sl_client_tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms, int *fd) SL_WUR;
/* 0, -SL_ERR_TASK_TIMEOUT or -SL_ERR_DISCONNECTED. */
int sl_client_send_all(int fd, const uint8_t *p, size_t n, uint64_t deadline_us) SL_WUR;
/* 0 when n bytes arrived; *got says how many did otherwise. -SL_ERR_CONNECTION_CLOSED
 * at end of stream, -SL_ERR_TASK_TIMEOUT or -SL_ERR_DISCONNECTED. */
int sl_client_recv_exact(int fd, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got) SL_WUR;
/* --- the connection's transport (link.c) ------------------------------------------ */

/* Copies the transport settings of o (NULL: plain TCP). 0, or
 * -SL_ERR_INVALID_TLS_DOMAIN / -SL_ERR_INVALID_TLS_CERTIFICATE_PATH for a
 * name or path too long. */
int sl_client_link_init(sl_client_t *c, const sl_client_options_t *o) SL_WUR;
/* Takes over a connected socket: the TLS handshake and the WebSocket
 * upgrade run within the connect timeout, then c->fd = fd. On failure fd
 * is closed and the error returned: -SL_ERR_INVALID_TLS_CERTIFICATE when
 * the server's certificate does not verify, -SL_ERR_INVALID_TLS_CERTIFICATE_PATH
 * when the CA file cannot be loaded, -SL_ERR_WEB_SOCKET_CONNECTION_ERROR
 * when the upgrade is refused, -SL_ERR_CANNOT_ESTABLISH_CONNECTION else. */
int sl_client_link_open(sl_client_t *c, int fd, const char *host, uint16_t port) SL_WUR;
/* Whole-buffer send and exact receive over the transport; the same results
 * as sl_client_send_all and sl_client_recv_exact. */
int sl_client_link_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us) SL_WUR;
int sl_client_link_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us,
                        size_t *got) SL_WUR;
/* Up to n bytes of the stream that are already here, without waiting and
 * without consuming them: the count, 0 when none, -1 at end of stream or
 * on an error. */
int sl_client_link_peek(sl_client_t *c, uint8_t *p, size_t n);
/* One non-blocking read of the stream: >0 bytes, 0 when nothing is here
 * yet (*events: what to poll for), -1 at end of stream or on an error.
 * Only a 0 means the socket was tried: bytes read ahead (whole TLS records
 * not yet decrypted) are not announced by the socket, so a caller that
 * polls must read until 0 first. */
ssize_t sl_client_link_read_some(sl_client_t *c, uint8_t *p, size_t n, short *events);
/* Ends this connection's transport state and closes the socket. */
void sl_client_link_close(sl_client_t *c);
/* Frees what link_init and the first connect made (the TLS context). */
void sl_client_link_free(sl_client_t *c);

/* The raw stream under WebSocket frames: the socket, or TLS over it.
 * read: one non-blocking step, >0 bytes, 0 when it must wait for *events,
 * -1 at end of stream, -2 on an error. send/recv: as link_send and
 * link_recv. */
ssize_t sl_client_raw_read(sl_client_t *c, uint8_t *p, size_t n, short *events);
int sl_client_raw_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us) SL_WUR;
int sl_client_raw_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us,
                       size_t *got) SL_WUR;
/* Waits until fd is ready for events: 0, -SL_ERR_TASK_TIMEOUT, or
 * -SL_ERR_DISCONNECTED when poll fails. */
int sl_client_wait_ready(int fd, short events, uint64_t deadline_us) SL_WUR;

/* WebSocket (ws.c, websocket.md 6): the upgrade on the raw stream, then
 * every request one binary message and replies read as a byte stream. */
int sl_client_ws_open(sl_client_t *c, const char *host, uint16_t port, uint64_t deadline_us) SL_WUR;
int sl_client_ws_send(sl_client_t *c, const uint8_t *p, size_t n, uint64_t deadline_us) SL_WUR;
int sl_client_ws_recv(sl_client_t *c, uint8_t *p, size_t n, uint64_t deadline_us,
                      size_t *got) SL_WUR;
int sl_client_ws_peek(sl_client_t *c, uint8_t *p, size_t n);
ssize_t sl_client_ws_read_some(sl_client_t *c, uint8_t *p, size_t n, short *events);
void sl_client_ws_free(sl_client_ws_t *ws);

/* Sends c->tx (already numbered) and reads one frame into c->rx; any
 * failure closes the connection. *sent as in sl_client_call_once. */
int sl_client_exchange(sl_client_t *c, sl_span_t *frame, bool *sent) SL_WUR;
/* Reads one frame into c->rx: header, size check, body. */
int sl_client_read_frame(sl_client_t *c, uint64_t deadline_us, sl_span_t *frame) SL_WUR;
/* Closes the socket after an error that leaves the stream unusable. */
void sl_client_disconnect(sl_client_t *c);

/* --- conversions to the public types (convert.c) ------------------------------ */

/* Allocation failures are sticky: the conversions keep going with empty
 * values and the call reports -SL_ERR_ERROR at the end. */
typedef struct sl_client_conv {
    sl_arena_t *arena;
    bool failed;
} sl_client_conv_t;

int sl_client_conv_end(const sl_client_conv_t *cv) SL_WUR;
const char *sl_client_conv_str(sl_client_conv_t *cv, sl_span_t s);
void *sl_client_conv_alloc(sl_client_conv_t *cv, size_t size, size_t count, size_t align);
#define SL_CONV_NEW(cv, type, n)                                                                   \
    ((type *)sl_client_conv_alloc((cv), sizeof(type), (n), _Alignof(type)))

/* A public identifier as a wire Identifier; false for an unknown kind. */
bool sl_client_ident(sl_id_t id, sl_ident_t *out);

void sl_client_conv_stream(sl_client_conv_t *cv, const sl_stream_header_t *in,
                           const sl_topic_header_t *topics, sl_stream_t *out);
void sl_client_conv_topic(sl_client_conv_t *cv, const sl_topic_header_t *in,
                          const sl_partition_info_t *partitions, sl_topic_t *out);
void sl_client_conv_user(sl_client_conv_t *cv, const sl_user_header_t *in, sl_user_t *out);
void sl_client_conv_user_details(sl_client_conv_t *cv, const sl_user_details_t *in, sl_user_t *out);
void sl_client_conv_client(sl_client_conv_t *cv, const sl_client_header_t *in,
                           const sl_client_group_t *groups, sl_client_info_t *out);
void sl_client_conv_stats(sl_client_conv_t *cv, const sl_get_stats_reply_t *in, sl_stats_t *out);
void sl_client_conv_group(sl_client_conv_t *cv, const sl_group_header_t *in,
                          const sl_group_member_t *members, sl_consumer_group_t *out);
/* Copies an options block into entries (none when it is not a valid block). */
void sl_client_conv_options(sl_client_conv_t *cv, sl_span_t block, const sl_option_t **items,
                            uint32_t *count);
/* The effective settings of a topic from its two stored blocks. */
void sl_client_conv_settings(sl_span_t explicit_block, sl_span_t derived_block,
                             sl_topic_options_t *out);

/* The options block for a request: the set fields in canonical kinds sorted
 * by key, then the extra entries. -SL_ERR_INVALID_COMMAND when an entry
 * cannot be encoded, -SL_ERR_COMMAND_LENGTH_ERROR when b failed. */
int sl_client_topic_options_encode(sl_buf_t *b, const sl_topic_options_t *in) SL_WUR;
/* Encodes a public permission set (permissions.md 1) into b. */
int sl_client_permissions_encode(sl_buf_t *b, sl_client_conv_t *cv,
                                 const sl_permission_set_t *in) SL_WUR;
/* Decodes an encoded set into a public one. */
const sl_permission_set_t *sl_client_conv_permissions(sl_client_conv_t *cv, sl_span_t raw);

/* Encodes typed user headers into b (emptied first) as one block: 0 or the
 * error sl_client_send_add reports for them. Touches no client state, so the
 * producer can encode in the enqueuing thread. */
int sl_client_headers_encode(sl_buf_t *b, const sl_header_t *headers, uint32_t count) SL_WUR;

/* Whether libsluice offers a call for a command code, for
 * docs/compatibility.md (support.c, next to the calls it describes). */
const char *sl_client_support(uint32_t code);

#endif
