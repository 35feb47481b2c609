/* Starting and stopping the real sluiced for integration tests. */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "certs.h"
#include "client/client_internal.h"

static char log_text[1 << 20];

static const char *sluiced_path(void)
{
    const char *p = getenv("SLUICE_SLUICED");
    return p ? p : "./sluiced";
}

static void die(const char *what)
{
    fprintf(stderr, "harness: %s: %s\n", what, strerror(errno));
    abort();
}

/* --- the door of the suite ------------------------------------------------------ */

th_mode_t th_mode(void)
{
    const char *m = getenv("SLUICE_IT_TRANSPORT");
    if (m == NULL || strcmp(m, "tcp") == 0 || m[0] == '\0')
        return TH_TCP;
    if (strcmp(m, "tls") == 0)
        return TH_TLS;
    if (strcmp(m, "ws") == 0)
        return TH_WS;
    if (strcmp(m, "wss") == 0)
        return TH_WSS;
    fprintf(stderr, "harness: SLUICE_IT_TRANSPORT=%s is none of tcp, tls, ws, wss\n", m);
    abort();
}

static bool mode_tls(void)
{
    return th_mode() == TH_TLS || th_mode() == TH_WSS;
}

/* One set of certificates per test process, removed at exit. */
static char certs_dir[256];
static th_certs_t certs;

static void certs_remove(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", certs_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: could not remove %s\n", certs_dir);
}

static const th_certs_t *test_certs(void)
{
    if (certs_dir[0])
        return &certs;
    const char *tmp = getenv("TMPDIR");
    snprintf(certs_dir, sizeof(certs_dir), "%s/sluice-certs-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(certs_dir))
        die("mkdtemp certs");
    if (!th_certs_make(certs_dir, &certs))
        die("make test certificates");
    atexit(certs_remove);
    return &certs;
}

/* What the mode adds to the configuration: the door it serves. Every
 * server of the suite binds ephemeral ports, WebSocket included (on by
 * default, it would otherwise take 8092 in every test at once); a test
 * that configures [websocket] itself gets its own section instead. */
static void write_door_config(FILE *f, const th_options_t *opt)
{
    th_mode_t m = th_mode();
    const th_certs_t *c = mode_tls() ? test_certs() : NULL;
    if (m == TH_TLS)
        fprintf(f,
                "\n[tcp.tls]\nenabled = true\nself_signed = false\ncert_file = \"%s\"\n"
                "key_file = \"%s\"\n",
                c->leaf, c->leaf_key);
    if (!opt || !opt->extra_config || !strstr(opt->extra_config, "[websocket]"))
        fprintf(f, "\n[websocket]\naddress = \"127.0.0.1:0\"\n");
    if (m == TH_WSS)
        fprintf(f,
                "\n[websocket.tls]\nenabled = true\nself_signed = false\ncert_file = \"%s\"\n"
                "key_file = \"%s\"\n",
                c->leaf, c->leaf_key);
}

static void write_config(th_server_t *srv, const th_options_t *opt)
{
    snprintf(srv->config_path, sizeof(srv->config_path), "%s/sluiced.toml", srv->data_dir);
    FILE *f = fopen(srv->config_path, "w");
    if (!f)
        die("config");
    fprintf(f, "[tcp]\naddress = \"127.0.0.1:0\"\n\n[system]\npath = \"%s/data\"\n", srv->data_dir);
    /* HTTP is on by default: every test server gets a port of its own. */
    if (!opt || !opt->extra_config || !strstr(opt->extra_config, "[http]"))
        fprintf(f, "\n[http]\naddress = \"127.0.0.1:0\"\n");
    write_door_config(f, opt);
    if (opt && opt->extra_config)
        fprintf(f, "\n%s\n", opt->extra_config);
    fclose(f);
}

static pid_t spawn(th_server_t *srv, const th_options_t *opt)
{
    snprintf(srv->log_path, sizeof(srv->log_path), "%s/sluiced.log", srv->data_dir);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        /* A test that fails half-way must not leave a server behind. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(srv->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 2);
        dup2(fd, 1);
        close(fd);
        unsetenv("IGGY_ROOT_USERNAME");
        unsetenv("IGGY_ROOT_PASSWORD");
        for (size_t i = 0; opt && opt->env && opt->env[i]; i++)
            putenv((char *)opt->env[i]);
        if (opt && opt->umask_zero)
            umask(0);
        /* sluiced --config PATH [--with-default-root-credentials] [args...] */
        const char *argv[32] = {"sluiced", "--config", srv->config_path};
        size_t argc = 3;
        if (opt && opt->root_username) {
            setenv("IGGY_ROOT_USERNAME", opt->root_username, 1);
            setenv("IGGY_ROOT_PASSWORD", opt->root_password, 1);
        } else if (!opt || !opt->no_root_credentials) {
            argv[argc++] = "--with-default-root-credentials";
        }
        for (size_t i = 0; opt && opt->args && opt->args[i] && argc < 31; i++)
            argv[argc++] = opt->args[i];
        argv[argc] = NULL;
        execv(sluiced_path(), (char *const *)argv);
        _exit(127);
    }
    return pid;
}

const char *th_log(th_server_t *srv)
{
    log_text[0] = '\0';
    FILE *f = fopen(srv->log_path, "r");
    if (!f)
        return log_text;
    size_t n = fread(log_text, 1, sizeof(log_text) - 1, f);
    log_text[n] = '\0';
    fclose(f);
    return log_text;
}

/* sluiced logs "listening on 127.0.0.1:PORT" once it accepts, after
 * "serving WebSocket on 127.0.0.1:PORT" when that door is on, then
 * "HTTP API on 127.0.0.1:PORT" when HTTP is on, then "ready". */
static bool find_port(th_server_t *srv)
{
    static const char tcp_line[] = "listening on 127.0.0.1:";
    static const char ws_line[] = "serving WebSocket on 127.0.0.1:";
    const char *log = th_log(srv);
    const char *p = strstr(log, tcp_line);
    const char *w = strstr(log, ws_line);
    if (!p || !strstr(log, " ready, data in "))
        return false;
    srv->tcp_port = (uint16_t)atoi(p + strlen(tcp_line));
    srv->ws_port = w ? (uint16_t)atoi(w + strlen(ws_line)) : 0;
    srv->port = srv->tcp_port;
    if (th_mode() == TH_WS || th_mode() == TH_WSS) {
        if (!w)
            return false;
        srv->port = srv->ws_port;
    }
    const char *h = strstr(log, "HTTP API on 127.0.0.1:");
    srv->http_port = h ? (uint16_t)atoi(h + strlen("HTTP API on 127.0.0.1:")) : 0;
    snprintf(srv->ca_file, sizeof(srv->ca_file), "%s", mode_tls() ? certs.ca : "");
    return srv->port != 0 && srv->tcp_port != 0;
}

/* Starts sluiced; 1 once it listens, 0 when it exited first (*status set),
 * -1 when it neither listened nor exited in time. */
static int start(th_server_t *srv, const th_options_t *opt, int *status)
{
    if (!opt || !opt->data_dir) {
        memset(srv, 0, sizeof(*srv));
        const char *tmp = getenv("TMPDIR");
        snprintf(srv->data_dir, sizeof(srv->data_dir), "%s/sluice-it-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(srv->data_dir))
            die("mkdtemp");
        write_config(srv, opt);
    } else if (opt->extra_config) {
        write_config(srv, opt); /* a restart with other settings */
    }
    /* find_port reads the log: a restart must not find the last run's port there. */
    if (truncate(srv->log_path, 0) != 0 && errno != ENOENT)
        die("truncate sluiced.log");
    srv->port = 0;
    srv->http_port = 0;
    srv->ws_port = 0;
    srv->pid = spawn(srv, opt);
    for (int i = 0; i < 1000; i++) { /* up to 20 s: Argon2 and recovery run first */
        if (find_port(srv))
            return 1;
        if (waitpid(srv->pid, status, WNOHANG) == srv->pid) {
            srv->pid = 0;
            return 0;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

bool th_start(th_server_t *srv, const th_options_t *opt)
{
    int status = 0;
    int r = start(srv, opt, &status);
    /* Under heavy parallel load the kernel may refuse a new io_uring for a
     * moment (sluiced exits 77): try again on the same directory before
     * calling io_uring unavailable. */
    for (int attempt = 0; attempt < 10 && r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 77;
         attempt++) {
        struct timespec ts = {0, 300 * 1000 * 1000};
        nanosleep(&ts, NULL);
        th_options_t again = opt ? *opt : (th_options_t){0};
        again.data_dir = srv->data_dir;
        again.extra_config = NULL;
        r = start(srv, &again, &status);
    }
    if (r == 1)
        return true;
    if (r == 0) {
        fprintf(stderr, "harness: sluiced exited (status %d):\n%s\n", status, th_log(srv));
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
            return false;
        abort();
    }
    fprintf(stderr, "harness: sluiced did not start:\n%s\n", th_log(srv));
    abort();
}

bool th_try_start(th_server_t *srv, const th_options_t *opt, int *exit_status)
{
    *exit_status = 0;
    int r = start(srv, opt, exit_status);
    if (r == 1)
        return true;
    if (r == 0)
        return false;
    fprintf(stderr, "harness: sluiced did not start:\n%s\n", th_log(srv));
    abort();
}

int th_stop(th_server_t *srv, int sig)
{
    if (srv->pid <= 0)
        return -1;
    kill(srv->pid, sig);
    int status = 0;
    for (int i = 0; i < 1500; i++) { /* 30 s at most, then SIGKILL */
        if (waitpid(srv->pid, &status, WNOHANG) == srv->pid) {
            srv->pid = 0;
            if (sig != SIGKILL && status != 0)
                fprintf(stderr, "harness: sluiced exited with status %d:\n%s\n", status,
                        th_log(srv));
            return status;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(srv->pid, SIGKILL);
    waitpid(srv->pid, &status, 0);
    srv->pid = 0;
    fprintf(stderr, "harness: sluiced did not stop on signal %d:\n%s\n", sig, th_log(srv));
    return -1;
}

bool th_alive(th_server_t *srv)
{
    if (srv->pid <= 0)
        return false;
    int status;
    if (waitpid(srv->pid, &status, WNOHANG) == srv->pid) {
        srv->pid = 0;
        return false;
    }
    return true;
}

void th_cleanup(th_server_t *srv)
{
    if (srv->pid > 0)
        th_stop(srv, SIGKILL);
    if (getenv("SLUICE_KEEP_DATA")) { /* debugging: keep logs and data */
        fprintf(stderr, "harness: kept %s\n", srv->data_dir);
        return;
    }
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", srv->data_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "harness: could not remove %s\n", srv->data_dir);
}

/* --- the carrier of raw connections in the TLS and WebSocket modes ------------------- */

/* Bytes from the test's end towards the server: in the WebSocket modes a
 * message carries exactly one frame, so they are gathered up to a frame's
 * end first (a frame too short to be one goes as it is). */
typedef struct carrier {
    int local;
    sl_client_t *client;
    uint8_t up[1 << 17];
    size_t up_len;
} carrier_t;

static size_t carrier_frame_len(const carrier_t *k)
{
    if (th_mode() != TH_WS && th_mode() != TH_WSS)
        return k->up_len;
    if (k->up_len < 256)
        return 0;
    uint32_t size;
    memcpy(&size, k->up + 48, 4);
    if (size < 256 || size > sizeof(k->up))
        return k->up_len;
    return size <= k->up_len ? size : 0;
}

static bool carrier_up(carrier_t *k)
{
    ssize_t n = recv(k->local, k->up + k->up_len, sizeof(k->up) - k->up_len, 0);
    if (n <= 0)
        return false;
    k->up_len += (size_t)n;
    for (size_t len; (len = carrier_frame_len(k)) > 0;) {
        if (sl_client_link_send(k->client, k->up, len, sl_client_deadline(20000)) != 0)
            return false;
        memmove(k->up, k->up + len, k->up_len - len);
        k->up_len -= len;
    }
    return true;
}

/* Moves everything the link has for the test now. The link is drained
 * until it would block: a TLS session with read-ahead keeps whole records
 * it has read from the socket but not yet decrypted, which neither
 * SSL_pending nor the socket announces, so stopping after one record could
 * leave the rest of a reply waiting for bytes that never come. */
static bool carrier_down(carrier_t *k)
{
    uint8_t buf[16384];
    for (;;) {
        short events = 0;
        ssize_t n = sl_client_link_read_some(k->client, buf, sizeof(buf), &events);
        if (n < 0)
            return false;
        if (n == 0)
            return true;
        if (!th_send_all(k->local, buf, (size_t)n))
            return false;
    }
}

static void *carrier_run(void *arg)
{
    carrier_t *k = arg;
    /* Ends when either side closes: the other is closed then. Both
     * directions are drained each time, so waiting in poll is right. */
    for (;;) {
        struct pollfd p[2] = {{.fd = k->local, .events = POLLIN},
                              {.fd = k->client->fd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !carrier_up(k))
            break;
        if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !carrier_down(k))
            break;
    }
    close(k->local);
    sl_client_close(k->client);
    free(k);
    return NULL;
}

static int carrier_start(uint16_t port)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair");
    carrier_t *k = calloc(1, sizeof(*k));
    if (!k)
        die("calloc");
    k->local = sv[1];
    int rc = th_client_connect(port, &k->client);
    if (rc != 0) {
        fprintf(stderr, "harness: carrier connect to %u: %s\n", port, sl_strerror(rc));
        abort();
    }
    pthread_t t;
    if (pthread_create(&t, NULL, carrier_run, k) != 0)
        die("pthread_create");
    pthread_detach(t);
    return sv[0];
}

int th_connect(uint16_t port)
{
    if (th_mode() != TH_TCP)
        return carrier_start(port);
    /* Close-on-exec: a sluiced the harness forks later must not hold a copy. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

bool th_send_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        b += w;
        n -= (size_t)w;
    }
    return true;
}

static int read_exact(int fd, uint8_t *p, size_t n, int timeout_ms)
{
    size_t got = 0;
    while (got < n) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, timeout_ms);
        if (r <= 0)
            return -1;
        ssize_t k = recv(fd, p + got, n - got, 0);
        if (k == 0)
            return 0;
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)k;
    }
    return 1;
}

int th_read_frame(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
    if (cap < 256)
        return -1;
    int r = read_exact(fd, buf, 256, timeout_ms);
    if (r <= 0)
        return r;
    uint32_t size;
    memcpy(&size, buf + 48, 4);
    if (size < 256 || size > cap)
        return -1;
    if (size > 256 && read_exact(fd, buf + 256, size - 256, timeout_ms) <= 0)
        return -1;
    return (int)size;
}

bool th_wait_closed(int fd, int timeout_ms)
{
    uint8_t b[4096];
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, timeout_ms) <= 0)
            return false;
        ssize_t k = recv(fd, b, sizeof(b), 0);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
            return true;
    }
}

bool th_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    return poll(&pfd, 1, timeout_ms) > 0;
}

void th_client_options(sl_client_options_t *o)
{
    th_mode_t m = th_mode();
    o->transport = m == TH_WS || m == TH_WSS ? SL_CLIENT_WEBSOCKET : SL_CLIENT_TCP;
    o->tls_enabled = mode_tls();
    o->tls_domain = "localhost"; /* the leaf's only name */
    o->tls_ca_file = mode_tls() ? test_certs()->ca : NULL;
    /* A test talks to the node it dialled (a cluster test may mean a
     * backup): no leader settlement. test_cluster_settle tests it. */
    o->settle_on_leader = SL_CLIENT_SETTLE_OFF;
}

int th_client_connect(uint16_t port, sl_client_t **out)
{
    sl_client_options_t o = {.connect_timeout_ms = 5000, .request_timeout_ms = 20000};
    th_client_options(&o);
    return sl_client_connect("127.0.0.1", port, &o, out);
}

struct sl_client *th_client(uint16_t port, const char *username, const char *password)
{
    sl_client_t *c = NULL;
    int rc = th_client_connect(port, &c);
    if (rc != 0) {
        fprintf(stderr, "harness: connect to port %u: %s\n", port, sl_strerror(rc));
        return NULL;
    }
    rc = sl_client_login(c, username, password, NULL);
    if (rc != 0) {
        fprintf(stderr, "harness: login as %s: %s\n", username, sl_strerror(rc));
        sl_client_close(c);
        return NULL;
    }
    return c;
}

struct sl_client *th_client_when_ready(th_server_t *srv, uint16_t port)
{
    for (int i = 0; i < 900; i++) {
        sl_client_t *c = NULL;
        if (th_client_connect(port, &c) == 0) {
            if (sl_client_login(c, "iggy", "iggy", NULL) == 0)
                return c;
            sl_client_close(c);
        }
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "harness: no login on the node on port %u; its log:\n%s\n", port,
            th_log(srv));
    return NULL;
}

/* Whether port is free on loopback now (bound, then let go). */
static bool port_free(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

/* A port a server may listen on for the whole test, restarts included: one
 * below the kernel's ephemeral range (ip_local_port_range), which no
 * outgoing connection is given as its local port. A port of that range,
 * free when picked, could be taken by any client's or replica link's
 * connect while its server was down for a restart (CI: a cluster node
 * restarted in test_cut_link_reconnects found its port in use). */
uint16_t th_free_port(void)
{
    static uint32_t x;
    unsigned low = 32768, high = 60999;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf(f, "%u %u", &low, &high) != 2)
            low = 32768;
        fclose(f);
    }
    const unsigned base = 10000;
    if (x == 0)
        x = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL) ^ 1u;
    for (int i = 0; low > base + 1000 && i < 1000; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        uint16_t port = (uint16_t)(base + x % (low - base));
        if (port_free(port))
            return port;
    }
    /* None there (an unusual ip_local_port_range): one the kernel picks. */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        fprintf(stderr, "harness: no free loopback port: %s\n", strerror(errno));
        abort();
    }
    close(fd);
    return ntohs(a.sin_port);
}
