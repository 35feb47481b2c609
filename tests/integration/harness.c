/* Starting and stopping the real sluiced for integration tests. */
#include "harness.h"

#include <errno.h>
#include <sluice/client.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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

static void write_config(th_server_t *srv, const th_options_t *opt)
{
    snprintf(srv->config_path, sizeof(srv->config_path), "%s/sluiced.toml", srv->data_dir);
    FILE *f = fopen(srv->config_path, "w");
    if (!f)
        die("config");
    fprintf(f, "[tcp]\naddress = \"127.0.0.1:0\"\n\n[system]\npath = \"%s/data\"\n", srv->data_dir);
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

/* sluiced logs "listening on 127.0.0.1:PORT" once it accepts. */
static bool find_port(th_server_t *srv)
{
    const char *log = th_log(srv);
    const char *p = strstr(log, "listening on 127.0.0.1:");
    if (!p)
        return false;
    srv->port = (uint16_t)atoi(p + strlen("listening on 127.0.0.1:"));
    return srv->port != 0;
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

int th_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
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

struct sl_client *th_client(uint16_t port, const char *username, const char *password)
{
    sl_client_options_t o = {.connect_timeout_ms = 5000, .request_timeout_ms = 20000};
    sl_client_t *c = NULL;
    int rc = sl_client_connect("127.0.0.1", port, &o, &c);
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
