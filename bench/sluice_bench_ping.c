/* sluice-bench ping: raw-socket lockstep clients (one blocking connection, or
 * many driven by one epoll thread), the raw login that gives each connection
 * a session, and the bare ping-pong server used as the baseline. The same
 * client code drives sluiced and the bare server, so the ratio of the two
 * rates is the server's cost alone. */
#define _GNU_SOURCE /* accept4, memrchr */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "sluice_bench.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"
#include "wire/command.h"

enum {
    IO_TIMEOUT_MS = 5000, /* a server silent this long has failed */
    CONNS_MAX = 64,       /* of the many-connection driver and the bare server */
};

/* --- sockets ---------------------------------------------------------------------- */

int sb_connect(const char *host, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        sb_die("%s is not an IPv4 address", host);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        sb_die("cannot connect to %s:%u: %s", host, port, strerror(errno));
    int one = 1;
    struct timeval tv = {IO_TIMEOUT_MS / 1000, 0};
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

static void check_reply(const sb_conn_t *c)
{
    if (c->reply[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION)
        sb_die("evicted by the server (reason %u)", c->reply[SL_EVI_OFF_REASON]);
    if (c->reply[SL_HDR_OFF_COMMAND] != SL_COMMAND_REPLY)
        sb_die("not a reply header (command %u)", c->reply[SL_HDR_OFF_COMMAND]);
    uint32_t status = sl_load_u32(c->reply + SL_REP_OFF_STATUS);
    if (status != 0)
        sb_die("the server answered status %u (%s)", status, sl_strerror((int)status));
}

/* One recv toward the reply being assembled. Returns true when the reply is
 * complete and checked (the connection is then ready for the next one),
 * false when more bytes are needed. With MSG_DONTWAIT "no bytes yet" is
 * false; on a blocking socket it is the receive timeout, which is fatal. */
static bool conn_receive(sb_conn_t *c, int flags)
{
    ssize_t k = recv(c->fd, c->reply + c->have, c->need - c->have, flags);
    if (k < 0) {
        if (errno == EINTR || (errno == EAGAIN && (flags & MSG_DONTWAIT)))
            return false;
        sb_die("no reply: %s", errno == EAGAIN ? "timed out" : strerror(errno));
    }
    if (k == 0)
        sb_die("the server closed the connection");
    c->have += (uint32_t)k;
    if (c->have == SL_HEADER_SIZE && c->need == SL_HEADER_SIZE) {
        uint32_t size = sl_header_size(c->reply);
        if (size < SL_HEADER_SIZE || size > sizeof(c->reply))
            sb_die("reply size %u out of range", size);
        c->need = size;
    }
    if (c->have < c->need)
        return false;
    check_reply(c);
    c->reply_size = c->need;
    c->have = 0;
    c->need = SL_HEADER_SIZE;
    return true;
}

/* --- sessions ------------------------------------------------------------------ */

static sl_u128_t random_client(void)
{
    sl_u128_t id = {0, 0};
    for (int i = 0; i < 8 && sl_u128_is_zero(id); i++)
        if (getrandom(&id, sizeof(id), 0) != sizeof(id))
            sb_die("getrandom: %s", strerror(errno));
    return id;
}

/* A PING of that session: operation 2, code 1, no body, so exactly 256
 * bytes. The request number is the session's current one (framing.md 5.2:
 * 1 after login, not advanced by reads). */
static void ping_frame(sb_conn_t *c, sl_u128_t client, uint64_t session)
{
    sl_request_header_t h = {
        .size = SL_HEADER_SIZE,
        .client = client,
        .request = session ? 1 : 0,
        .operation = SL_OP_NON_REPLICATED,
        .session = session,
        .code = SL_CMD_PING,
    };
    sl_request_header_encode(c->frame, &h);
    c->have = 0;
    c->need = SL_HEADER_SIZE;
}

void sb_raw_anonymous(sb_conn_t *c)
{
    ping_frame(c, random_client(), 0);
}

static void send_login(sb_conn_t *c, sl_u128_t client, const char *user, const char *password)
{
    sl_buf_t b;
    sl_buf_init(&b, 0);
    sl_login_register_request_t q = {
        .version = {SL_PROTOCOL_VERSION, sl_span_str("sluice-bench"), sl_span_str("0.1.0")},
        .login = {sl_span_str(user), sl_span_str(password), sl_span(NULL, 0)},
    };
    if (sl_login_register_request_encode(&b, &q) != 0)
        sb_die("cannot encode the login of %s", user);
    sl_span_t body = sl_buf_span(&b);
    sl_request_header_t h = {
        .size = (uint32_t)(SL_HEADER_SIZE + body.len),
        .client = client,
        .request_checksum = sl_request_checksum(body),
        .operation = SL_OP_REGISTER,
    };
    uint8_t head[SL_HEADER_SIZE];
    sl_request_header_encode(head, &h);
    sb_send_all(c->fd, head, sizeof(head));
    sb_send_all(c->fd, body.ptr, body.len);
    sl_buf_free(&b);
}

void sb_raw_login(sb_conn_t *c, const char *user, const char *password)
{
    sl_u128_t client = random_client();
    send_login(c, client, user, password);
    c->have = 0;
    c->need = SL_HEADER_SIZE;
    while (!conn_receive(c, 0)) {
    }
    sl_span_t body = sl_span(c->reply + SL_HEADER_SIZE, c->reply_size - SL_HEADER_SIZE), payload;
    uint32_t result;
    if (sl_result_split(body, &result, &payload) != 0)
        sb_die("login: malformed reply");
    if (result != 0)
        sb_die("login as %s refused: %s", user, sl_strerror((int)result));
    sl_login_register_reply_t lr;
    if (sl_login_register_reply_decode(payload, NULL, &lr) != 0)
        sb_die("login: undecodable reply");
    ping_frame(c, client, lr.session);
}

/* --- lockstep drivers -------------------------------------------------------------- */

/* One connection: blocking send and recv, two system calls per round trip. */
static sb_rate_t pingpong_one(sb_conn_t *c, double seconds, uint64_t trips_max)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    uint64_t trips = 0;
    while (trips < trips_max && now < deadline) {
        sb_send_all(c->fd, c->frame, SL_HEADER_SIZE);
        while (!conn_receive(c, 0)) {
        }
        trips++;
        now = sl_clock_monotonic_ns();
    }
    return (sb_rate_t){trips, now - start};
}

/* Many connections, one thread: epoll says which replies arrived; each
 * complete reply is answered at once with that connection's next request.
 * After the deadline nothing more is sent and the outstanding replies are
 * drained, so every counted round trip is whole. */
static sb_rate_t pingpong_many(sb_conn_t *conns, int n, double seconds, uint64_t trips_max)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        sb_die("epoll_create1: %s", strerror(errno));
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0)
            sb_die("epoll_ctl: %s", strerror(errno));
    }
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    uint64_t sent = 0, trips = 0;
    int outstanding = 0;
    for (int i = 0; i < n && sent < trips_max; i++, sent++, outstanding++)
        sb_send_all(conns[i].fd, conns[i].frame, SL_HEADER_SIZE);
    struct epoll_event ev[CONNS_MAX];
    while (outstanding > 0) {
        int k = epoll_wait(ep, ev, CONNS_MAX, IO_TIMEOUT_MS);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            sb_die("no reply within %d ms: %s", IO_TIMEOUT_MS, k < 0 ? strerror(errno) : "");
        for (int j = 0; j < k; j++) {
            sb_conn_t *c = &conns[ev[j].data.u32];
            if (!conn_receive(c, MSG_DONTWAIT))
                continue;
            trips++;
            now = sl_clock_monotonic_ns();
            if (sent < trips_max && now < deadline) {
                sb_send_all(c->fd, c->frame, SL_HEADER_SIZE);
                sent++;
            } else {
                outstanding--;
            }
        }
    }
    close(ep);
    return (sb_rate_t){trips, now - start};
}

sb_rate_t sb_pingpong(sb_conn_t *conns, int n, double seconds, uint64_t trips_max)
{
    if (n < 1 || n > CONNS_MAX)
        sb_die("connections must be 1..%d", CONNS_MAX);
    return n == 1 ? pingpong_one(conns, seconds, trips_max)
                  : pingpong_many(conns, n, seconds, trips_max);
}

sb_rate_t sb_client_ping(sl_client_t *client, double seconds, uint64_t trips_max)
{
    uint64_t start = sl_clock_monotonic_ns(), now = start;
    uint64_t deadline = start + (uint64_t)(seconds * 1e9);
    uint64_t trips = 0;
    while (trips < trips_max && now < deadline) {
        int rc = sl_client_ping(client);
        if (rc != 0)
            sb_die("sl_client_ping: %s", sl_strerror(rc));
        trips++;
        now = sl_clock_monotonic_ns();
    }
    return (sb_rate_t){trips, now - start};
}

/* --- the bare ping-pong server ------------------------------------------------------ */

typedef struct bare_conn {
    int fd;
    uint32_t have;
    uint8_t request[SL_HEADER_SIZE];
} bare_conn_t;

static void bare_accept(int ep, int listen_fd, bare_conn_t *conns)
{
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    for (uint32_t i = 0; i < CONNS_MAX; i++) {
        if (conns[i].fd >= 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            break;
        conns[i] = (bare_conn_t){.fd = fd};
        return;
    }
    close(fd);
}

/* Reads what is there of the current 256-byte request; a whole one is
 * answered with the 256-byte reply. The socket stays blocking for the send
 * (256 bytes always fit a lockstep peer's window); the receive never waits. */
static void bare_serve_conn(bare_conn_t *c, const uint8_t *reply)
{
    ssize_t k = recv(c->fd, c->request + c->have, SL_HEADER_SIZE - c->have, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (k <= 0) {
        close(c->fd); /* closing also leaves the epoll set */
        c->fd = -1;
        return;
    }
    c->have += (uint32_t)k;
    if (c->have < SL_HEADER_SIZE)
        return;
    c->have = 0;
    size_t off = 0;
    while (off < SL_HEADER_SIZE) {
        ssize_t w = send(c->fd, reply + off, SL_HEADER_SIZE - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        off += (size_t)w;
    }
}

static void bare_serve(int listen_fd, double lifetime_seconds)
{
    static bare_conn_t conns[CONNS_MAX];
    for (int i = 0; i < CONNS_MAX; i++)
        conns[i].fd = -1;
    uint8_t reply[SL_HEADER_SIZE];
    sl_reply_header_t h = {.size = SL_HEADER_SIZE, .operation = SL_OP_NON_REPLICATED};
    sl_reply_header_encode(reply, &h);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &lev) != 0)
        _exit(1);
    uint64_t deadline = sl_clock_monotonic_ns() + (uint64_t)(lifetime_seconds * 1e9);
    struct epoll_event ev[CONNS_MAX];
    while (sl_clock_monotonic_ns() < deadline) {
        int k = epoll_wait(ep, ev, CONNS_MAX, 1000);
        for (int j = 0; j < k; j++) {
            if (ev[j].data.u32 == UINT32_MAX)
                bare_accept(ep, listen_fd, conns);
            else
                bare_serve_conn(&conns[ev[j].data.u32], reply);
        }
    }
}

pid_t sb_bare_start(uint16_t *port, double lifetime_seconds)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, CONNS_MAX) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        sb_die("bare server socket: %s", strerror(errno));
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid < 0)
        sb_die("fork: %s", strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the bench */
        /* The bench's handlers would kill sluiced and remove its directory. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        bare_serve(fd, lifetime_seconds);
        _exit(0);
    }
    close(fd);
    sb_child_track(pid);
    return pid;
}

void sb_bare_stop(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    sb_child_untrack(pid);
}
