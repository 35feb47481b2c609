/* The client's socket layer: TCP connect with a timeout, and whole-buffer
 * sends and receives bounded by a deadline.
 *
 * The socket stays in blocking mode, but every send and receive passes
 * MSG_DONTWAIT and waits in poll() instead, so no call can block past the
 * deadline (a blocking send of a large frame could otherwise wait for the
 * peer indefinitely). MSG_NOSIGNAL turns a closed peer into EPIPE, not
 * SIGPIPE. */
#include "client/client_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

uint64_t sl_client_deadline(uint32_t timeout_ms)
{
    return sl_clock_monotonic_us() + (uint64_t)timeout_ms * 1000u;
}

/* Milliseconds left until deadline for poll(), rounded up so a wait never
 * ends just short of it; 0 once it has passed. */
static int remaining_ms(uint64_t deadline_us)
{
    uint64_t now = sl_clock_monotonic_us();
    if (now >= deadline_us)
        return 0;
    uint64_t ms = (deadline_us - now + 999u) / 1000u;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

int sl_client_wait_ready(int fd, short events, uint64_t deadline_us)
{
    for (;;) {
        int left = remaining_ms(deadline_us);
        if (left == 0)
            return -SL_ERR_TASK_TIMEOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left);
        if (n > 0)
            return 0; /* readable, writable, or an error the next call reports */
        if (n < 0 && errno != EINTR)
            return -SL_ERR_DISCONNECTED;
    }
}

int sl_client_send_all(int fd, const uint8_t *p, size_t n, uint64_t deadline_us)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = sl_client_wait_ready(fd, POLLOUT, deadline_us);
            if (rc != 0)
                return rc;
            continue;
        }
        return -SL_ERR_DISCONNECTED;
    }
    return 0;
}

int sl_client_recv_exact(int fd, uint8_t *p, size_t n, uint64_t deadline_us, size_t *got)
{
    size_t done = 0;
    int rc = 0;
    while (done < n) {
        ssize_t r = recv(fd, p + done, n - done, MSG_DONTWAIT);
        if (r > 0) {
            done += (size_t)r;
            continue;
        }
        if (r == 0) {
            rc = -SL_ERR_CONNECTION_CLOSED;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            rc = sl_client_wait_ready(fd, POLLIN, deadline_us);
            if (rc != 0)
                break;
            continue;
        }
        rc = -SL_ERR_DISCONNECTED;
        break;
    }
    *got = done;
    return rc;
}

/* Where the frame goes in c->rx: shifted so that its body starts at
 * SL_CLIENT_BODY_PAGE_OFFSET within a page, when rx has the room. */
static uint8_t *frame_slot(sl_client_t *c, uint32_t size)
{
    size_t shift = 0;
    if (size - SL_HEADER_SIZE >= SL_CLIENT_BODY_SHIFT_MIN &&
        sl_buf_reserve(&c->rx, (size_t)size + SL_CLIENT_PAGE)) {
        uintptr_t body = (uintptr_t)c->rx.data + SL_HEADER_SIZE;
        shift = (SL_CLIENT_BODY_PAGE_OFFSET - body) & (SL_CLIENT_PAGE - 1);
    }
    uint8_t *slot = sl_buf_extend(&c->rx, shift + size);
    return slot == NULL ? NULL : slot + shift;
}

int sl_client_read_frame(sl_client_t *c, uint64_t deadline_us, sl_span_t *frame)
{
    sl_buf_reset(&c->rx);
    uint8_t hdr[SL_HEADER_SIZE];
    size_t got;
    int rc = sl_client_link_recv(c, hdr, SL_HEADER_SIZE, deadline_us, &got);
    if (rc == -SL_ERR_CONNECTION_CLOSED && got > 0)
        return -SL_ERR_EMPTY_RESPONSE; /* a frame shorter than its header */
    if (rc != 0)
        return rc;
    uint32_t size;
    rc = sl_client_frame_size(hdr, c->frame_max, &size);
    if (rc != 0)
        return rc;
    uint8_t *slot = frame_slot(c, size);
    if (slot == NULL)
        return -SL_ERR_ERROR;
    memcpy(slot, hdr, SL_HEADER_SIZE);
    rc = sl_client_link_recv(c, slot + SL_HEADER_SIZE, size - SL_HEADER_SIZE, deadline_us, &got);
    if (rc != 0)
        return rc;
    *frame = sl_span(slot, size);
    return 0;
}

void sl_client_disconnect(sl_client_t *c)
{
    sl_client_link_close(c);
    sl_client_session_reset(&c->session);
}

/* --- connect ---------------------------------------------------------------- */

/* One non-blocking connect attempt, waited for until the deadline. */
static int connect_one(const struct addrinfo *ai, uint64_t deadline_us, int *out)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        rc = errno == EINPROGRESS ? sl_client_wait_ready(fd, POLLOUT, deadline_us)
                                  : -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
        int err = 0;
        socklen_t len = sizeof(err);
        if (rc == 0 && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0))
            rc = -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    }
    int one = 1;
    int flags = fcntl(fd, F_GETFL);
    if (rc == 0 && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0))
        rc = -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    if (rc != 0) {
        close(fd);
        return rc == -SL_ERR_TASK_TIMEOUT ? -SL_ERR_CANNOT_ESTABLISH_CONNECTION : rc;
    }
    *out = fd;
    return 0;
}

int sl_client_tcp_connect(const char *host, uint16_t port, uint32_t timeout_ms, int *fd)
{
    if (host == NULL || host[0] == '\0')
        return -SL_ERR_INVALID_SERVER_ADDRESS;
    char service[8];
    snprintf(service, sizeof(service), "%u", (unsigned)port);
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *list = NULL;
    if (getaddrinfo(host, service, &hints, &list) != 0 || list == NULL)
        return -SL_ERR_INVALID_SERVER_ADDRESS;
    /* One deadline for all addresses: the caller asked for a bound on the
     * whole connect, not per address. */
    uint64_t deadline_us = sl_client_deadline(timeout_ms);
    int rc = -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    for (const struct addrinfo *ai = list; ai != NULL && rc != 0; ai = ai->ai_next)
        rc = connect_one(ai, deadline_us, fd);
    freeaddrinfo(list);
    return rc;
}
