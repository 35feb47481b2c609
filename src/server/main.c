/* sluiced: the Sluice server. Reads the configuration (file, IGGY_*
 * environment, flags), recovers the data directory and serves the Iggy
 * binary protocol until SIGINT or SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "server/config.h"
#include "server/server.h"

/* Exit status when io_uring is refused: tests read it as "skipped". */
#define EXIT_NO_IO_URING 77

static sl_server_t server;

static void on_signal(int sig)
{
    server.stop_signal = sig;
    sl_server_stop(&server);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int main(int argc, char **argv)
{
    static sl_config_t cfg;
    char err[1024] = {0};
    bool exit_now = false;
    if (sl_config_load(&cfg, argc, argv, NULL, err, sizeof(err), &exit_now) != 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        return 2;
    }
    if (exit_now)
        return 0;
    sl_log_set_level(cfg.system.logging.level);
    if (cfg.system.sharding.shards > 1)
        sl_log_warn("system.sharding.shards = %u is ignored: this build serves every connection, "
                    "partition and the metadata from one loop thread (docs/architecture.md)",
                    cfg.system.sharding.shards);
    install_signals();
    int rc = sl_server_open(&server, &cfg, err, sizeof(err));
    if (rc != 0) {
        sl_log_error("%s", err);
        bool no_uring = server.io_uring_failed;
        sl_server_close(&server);
        return no_uring ? EXIT_NO_IO_URING : 1;
    }
    sl_log_info("sluiced %s ready, data in %s", SL_SERVER_VERSION, cfg.system.path);
    /* From here on clients can make lines be written: limit each call site. */
    sl_log_limit_set(cfg.system.logging.repeat_burst, cfg.system.logging.repeat_window_us);
    rc = sl_server_run(&server);
    int sig = server.stop_signal;
    sl_server_close(&server);
    if (rc != 0) {
        sl_log_error("event loop failed: %d", rc);
        return 1;
    }
    sl_log_info("stopped%s", sig ? " on signal" : "");
    return 0;
}
