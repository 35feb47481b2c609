/* The harness's cutting proxy (proxy.h), on its own: it forwards both ways;
 * a two-way cut closes the link; a one-way cut drops one direction's bytes
 * while the other still flows and nothing closes; a restore closes what a
 * one-way cut touched (its framing is broken) and forwards new links. The
 * target is a listening socket of this test. "Nothing arrives" is checked
 * after the other direction's later bytes did arrive through the same
 * proxy thread, which forwards in order of polling, so it is not a timing
 * guess alone. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include "harness.h"
#include "proxy.h"

static int listen_on(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 8), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A link through the proxy: *dialer our end, *target the accepted end. */
static void link_up(int listen_fd, th_proxy_t *p, int *dialer, int *target)
{
    *dialer = th_connect(th_proxy_port(p));
    assert_true(*dialer >= 0);
    *target = accept(listen_fd, NULL, NULL);
    assert_true(*target >= 0);
}

static void say(int fd, const char *text)
{
    assert_true(th_send_all(fd, text, strlen(text)));
}

/* Reads exactly strlen(text) bytes and compares (5 s at most). */
static void hear(int fd, const char *text)
{
    char buf[64];
    size_t n = strlen(text), got = 0;
    while (got < n) {
        assert_true(th_readable(fd, 5000));
        ssize_t r = recv(fd, buf + got, n - got, 0);
        assert_true(r > 0);
        got += (size_t)r;
    }
    assert_memory_equal(buf, text, n);
}

static void test_proxy_cuts(void **state)
{
    (void)state;
    uint16_t port;
    int listen_fd = listen_on(&port);
    th_proxy_t *p = th_proxy_start(port);
    int d, t;
    link_up(listen_fd, p, &d, &t);
    say(d, "ping");
    hear(t, "ping");
    say(t, "pong");
    hear(d, "pong");

    /* One way: the dialer's bytes are dropped, the target's still arrive. */
    th_proxy_cut_one_way(p, TH_PROXY_FROM_DIALER);
    say(d, "lost");
    say(t, "heard");
    hear(d, "heard");
    say(t, "again");
    hear(d, "again");
    assert_false(th_readable(t, 300)); /* "lost" never came, and the link is open */
    /* Restored: that link is closed on both ends, a new one forwards. */
    th_proxy_restore(p);
    assert_true(th_wait_closed(d, 5000));
    assert_true(th_wait_closed(t, 5000));
    close(d);
    close(t);
    link_up(listen_fd, p, &d, &t);
    say(d, "new");
    hear(t, "new");

    /* The other way round. */
    th_proxy_cut_one_way(p, TH_PROXY_FROM_TARGET);
    say(t, "lost");
    say(d, "heard");
    hear(t, "heard");
    assert_false(th_readable(d, 300));
    th_proxy_restore(p);
    assert_true(th_wait_closed(d, 5000));
    close(d);
    close(t);

    /* Two ways: the link closes, new ones are refused until restored. */
    link_up(listen_fd, p, &d, &t);
    th_proxy_cut(p);
    assert_true(th_wait_closed(d, 5000));
    assert_true(th_wait_closed(t, 5000));
    close(d);
    close(t);
    th_proxy_restore(p);
    link_up(listen_fd, p, &d, &t);
    say(d, "back");
    hear(t, "back");
    close(d);
    close(t);
    th_proxy_stop(p);
    close(listen_fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_proxy_cuts)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
