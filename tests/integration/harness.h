/* The integration-test harness: starts the real sluiced binary on an
 * ephemeral loopback port with a temporary data directory, and gives raw
 * socket helpers for protocol-level tests. Tests talk to it over TCP only
 * (libsluice or raw frames); nothing runs in-process. */
#ifndef SL_TEST_HARNESS_H
#define SL_TEST_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The door the suite talks through, from SLUICE_IT_TRANSPORT: "tcp" (or
 * unset), "tls" (TCP-TLS with a test CA), "ws" (WebSocket) or "wss". In the
 * other modes th_start serves that door (srv->port is its port), th_client
 * and th_client_connect connect through it, and th_connect returns one end
 * of a socket pair whose other end a thread carries over it, so raw-frame
 * tests run unchanged. */
typedef enum th_mode { TH_TCP, TH_TLS, TH_WS, TH_WSS } th_mode_t;
th_mode_t th_mode(void);

typedef struct th_server {
    pid_t pid;
    uint16_t port;
    uint16_t http_port; /* 0 when HTTP is off */
    char data_dir[256];
    char log_path[320];
    char config_path[320];
    bool keep_data;    /* leave the directory for a restart */
    uint16_t tcp_port; /* the TCP (or TCP-TLS) door, whatever the mode */
    uint16_t ws_port;  /* the WebSocket (or WSS) door, 0 when it is off */
    char ca_file[320]; /* the test CA in the TLS modes, else "" */
} th_server_t;

typedef struct th_options {
    const char *root_username; /* NULL: --with-default-root-credentials (iggy/iggy) */
    const char *root_password;
    const char *extra_config; /* appended to the generated config file; on a
                                 restart (data_dir set) it rewrites the file */
    const char *data_dir;     /* reuse an existing directory (restart) */
    /* Start-up and security tests; zero keeps the defaults above. */
    bool no_root_credentials; /* neither variables nor the flag: a generated password */
    const char *const *env;   /* NULL-terminated "NAME=value" list set in the child */
    bool umask_zero;          /* start sluiced with umask 000 */
    const char *const *args;  /* NULL-terminated extra arguments ("--replica-id", "1") */
} th_options_t;

/* Starts sluiced and waits until it listens. Fails the test on error.
 * Returns false when io_uring is unavailable here (the caller skips). */
bool th_start(th_server_t *srv, const th_options_t *opt);
/* Like th_start, but a sluiced that exits before it listens is reported
 * instead of aborting: returns false and sets *exit_status (waitpid form);
 * th_log then holds what it printed. True once it listens. */
bool th_try_start(th_server_t *srv, const th_options_t *opt, int *exit_status);
/* Sends sig (SIGTERM, SIGKILL, ...) and waits; returns the exit status as
 * waitpid gives it. Keeps the data directory. */
int th_stop(th_server_t *srv, int sig);
/* Removes the data directory. */
void th_cleanup(th_server_t *srv);
/* True while the process is alive. */
bool th_alive(th_server_t *srv);
/* The server's stderr so far, NUL-terminated (static buffer). */
const char *th_log(th_server_t *srv);

/* Raw TCP to the server. */
int th_connect(uint16_t port);
bool th_send_all(int fd, const void *p, size_t n);
/* Reads one frame (header + body) into buf (cap bytes); returns its size,
 * 0 on EOF, -1 on error or timeout (ms). */
int th_read_frame(int fd, uint8_t *buf, size_t cap, int timeout_ms);
/* True when the peer closes (EOF or reset) within timeout_ms. */
bool th_wait_closed(int fd, int timeout_ms);
/* True when the peer sent at least one byte (or closed) within timeout_ms;
 * nothing is consumed. */
bool th_readable(int fd, int timeout_ms);

/* A libsluice client connected to the server and logged in, or NULL (the
 * reason is printed). Closed with sl_client_close. */
struct sl_client;
struct sl_client *th_client(uint16_t port, const char *username, const char *password);
/* th_client as iggy/iggy, retried every 100 ms for up to 90 s while the node
 * cannot log anyone in yet (a cluster node before its group's first commit,
 * or with no primary to forward the login to); NULL on giving up, with srv's
 * log printed. Leader settlement off, as th_client_connect. */
struct sl_client *th_client_when_ready(th_server_t *srv, uint16_t port);
/* A loopback port free now, picked at random below the kernel's ephemeral
 * range so that no outgoing connection is given it while its server is
 * down for a restart (another test could still pick the same one in the
 * milliseconds before its sluiced binds). Aborts the test program when none
 * can be had. */
uint16_t th_free_port(void);
/* sl_client_connect to 127.0.0.1:port through the suite's door (not logged
 * in), with leader settlement off: the client stays on the node dialled. */
struct sl_client_options;
void th_client_options(struct sl_client_options *o);
int th_client_connect(uint16_t port, struct sl_client **out);

#endif
