/* Handlers of the system commands (ping, me, stats, snapshot, options,
 * client, cluster) and of the local ones (context, login, logout). */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COUNT(a)                ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define LOGIN_EXPIRY_DEFAULT_US (15ull * 60 * 1000000)
#define LOGIN_TOKEN_NAME        "sluice-cli-session"

/* --- clients ---------------------------------------------------------------------------- */

static const cli_col_t client_cols[] = {
    {"client_id", "ID", 0},
    {"user_id", "USER", 0},
    {"transport", "TRANSPORT", 0},
    {"address", "ADDRESS", 0},
    {"consumer_groups_count", "GROUPS", 0},
};

static void client_row(cli_table_t *t, const sl_client_info_t *c)
{
    const char *transport = c->transport == 1   ? "tcp"
                            : c->transport == 2 ? "quic"
                            : c->transport == 4 ? "websocket"
                                                : "unknown";
    cli_val_t user = c->user_id == UINT32_MAX ? cli_str(NULL) : cli_u(c->user_id);
    cli_val_t v[] = {cli_u(c->client_id), user, cli_str(transport), cli_str(c->address),
                     cli_u(c->groups_count)};
    cli_table_row(t, v);
}

static int print_client(cli_run_t *run, const sl_client_info_t *c)
{
    static const cli_col_t cols[] = {
        {"stream_id", "STREAM", 0}, {"topic_id", "TOPIC", 0}, {"group_id", "GROUP", 0}};
    cli_doc_t doc;
    cli_doc_object(&doc, client_cols, COUNT(client_cols));
    client_row(&doc.main, c);
    cli_table_t *groups = cli_doc_sub(&doc, "consumer_groups", cols, COUNT(cols));
    for (uint32_t i = 0; c->groups != NULL && i < c->groups_count; i++)
        cli_table_row(groups,
                      (cli_val_t[]){cli_u(c->groups[i].stream_id), cli_u(c->groups[i].topic_id),
                                    cli_u(c->groups[i].group_id)});
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_client_get(cli_run_t *run)
{
    uint32_t id;
    if (!cli_u32(cli_arg(run, "CLIENT"), &id))
        return cli_usage(run, "invalid CLIENT '%s' (a number)", cli_arg(run, "CLIENT"));
    const sl_client_info_t *c;
    int rc = sl_client_get_client(run->client, id, &c);
    if (rc != 0)
        return cli_fail(rc, "get client %u", id);
    if (c == NULL)
        return cli_error(CLI_EXIT_NOT_FOUND, "client %u not found", id);
    return print_client(run, c);
}

int cli_cmd_client_list(cli_run_t *run)
{
    const sl_client_info_t *items;
    uint32_t count;
    int rc = sl_client_get_clients(run->client, &items, &count);
    if (rc != 0)
        return cli_fail(rc, "list clients");
    cli_doc_t doc;
    cli_doc_list(&doc, client_cols, COUNT(client_cols));
    for (uint32_t i = 0; i < count; i++)
        client_row(&doc.main, &items[i]);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_me(cli_run_t *run)
{
    const sl_client_info_t *c;
    int rc = sl_client_get_me(run->client, &c);
    return rc != 0 ? cli_fail(rc, "get this client") : print_client(run, c);
}

/* --- cluster, ping, stats ----------------------------------------------------------------------
 */

int cli_cmd_cluster_metadata(cli_run_t *run)
{
    static const char *const roles[] = {"leader", "follower"};
    static const char *const states[] = {"healthy", "starting", "stopping", "unreachable",
                                         "maintenance"};
    static const cli_col_t cols[] = {
        {"name", "NAME", 0},      {"ip", "IP", 0},          {"tcp_port", "TCP", 0},
        {"quic_port", "QUIC", 0}, {"http_port", "HTTP", 0}, {"websocket_port", "WEBSOCKET", 0},
        {"role", "ROLE", 0},      {"status", "STATUS", 0},
    };
    const sl_cluster_t *cl;
    int rc = sl_client_get_cluster_metadata(run->client, &cl);
    if (rc != 0)
        return cli_fail(rc, "get the cluster metadata");
    cli_doc_t doc;
    static const cli_col_t head_cols[] = {{"name", "CLUSTER", 0}};
    cli_doc_object(&doc, head_cols, COUNT(head_cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_str(cl->name)});
    cli_table_t *nodes = cli_doc_sub(&doc, "nodes", cols, COUNT(cols));
    for (uint32_t i = 0; cl->nodes != NULL && i < cl->nodes_count; i++) {
        const sl_node_info_t *n = &cl->nodes[i];
        cli_val_t v[] = {cli_str(n->name),
                         cli_str(n->ip),
                         cli_u(n->tcp_port),
                         cli_u(n->quic_port),
                         cli_u(n->http_port),
                         cli_u(n->websocket_port),
                         cli_str(n->role < 2 ? roles[n->role] : "unknown"),
                         cli_str(n->status < 5 ? states[n->status] : "unknown")};
        cli_table_row(nodes, v);
    }
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

static double elapsed_ms(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

int cli_cmd_ping(cli_run_t *run)
{
    uint32_t count = 1;
    const char *text = cli_opt(run, "count");
    if (text != NULL && (!cli_u32(text, &count) || count == 0))
        return cli_usage(run, "invalid --count '%s' (a number from 1)", text);
    static const cli_col_t cols[] = {{"seq", "SEQ", 0}, {"time_ms", "TIME (ms)", 0}};
    cli_doc_t doc;
    cli_doc_list(&doc, cols, COUNT(cols));
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        rc = sl_client_ping(run->client);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (rc != 0)
            rc = cli_fail(rc, "ping %s", run->server);
        else
            cli_table_row(&doc.main, (cli_val_t[]){cli_u(i + 1), cli_f(elapsed_ms(&a, &b))});
    }
    if (rc == 0)
        cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return rc;
}

static const cli_col_t stats_cols[] = {
    {"process_id", "Process ID", 0},
    {"cpu_usage", "CPU usage (%)", 0},
    {"total_cpu_usage", "Total CPU usage (%)", 0},
    {"memory_usage", "Memory usage", 0},
    {"total_memory", "Total memory", 0},
    {"available_memory", "Available memory", 0},
    {"run_time_us", "Run time", 0},
    {"start_time_us", "Start time", 0},
    {"read_bytes", "Read", 0},
    {"written_bytes", "Written", 0},
    {"messages_size_bytes", "Messages size", 0},
    {"streams_count", "Streams", 0},
    {"topics_count", "Topics", 0},
    {"partitions_count", "Partitions", 0},
    {"segments_count", "Segments", 0},
    {"messages_count", "Messages", 0},
    {"clients_count", "Clients", 0},
    {"consumer_groups_count", "Consumer groups", 0},
    {"threads_count", "Threads", 0},
    {"free_disk_space", "Free disk space", 0},
    {"total_disk_space", "Total disk space", 0},
    {"hostname", "Hostname", 0},
    {"os_name", "OS name", 0},
    {"os_version", "OS version", 0},
    {"kernel_version", "Kernel version", 0},
    {"server_version", "Server version", 0},
};

int cli_cmd_stats(cli_run_t *run)
{
    const sl_stats_t *s;
    int rc = sl_client_get_stats(run->client, &s);
    if (rc != 0)
        return cli_fail(rc, "get the server statistics");
    cli_doc_t doc;
    cli_doc_object(&doc, stats_cols, COUNT(stats_cols));
    cli_val_t v[] = {
        cli_u(s->process_id),
        cli_f(s->cpu_usage),
        cli_f(s->total_cpu_usage),
        cli_typed(CLI_VAL_SIZE, s->memory_usage),
        cli_typed(CLI_VAL_SIZE, s->total_memory),
        cli_typed(CLI_VAL_SIZE, s->available_memory),
        cli_typed(CLI_VAL_DURATION_US, s->run_time_us),
        cli_typed(CLI_VAL_TIME_US, s->start_time_us),
        cli_typed(CLI_VAL_SIZE, s->read_bytes),
        cli_typed(CLI_VAL_SIZE, s->written_bytes),
        cli_typed(CLI_VAL_SIZE, s->messages_size_bytes),
        cli_u(s->streams_count),
        cli_u(s->topics_count),
        cli_u(s->partitions_count),
        cli_u(s->segments_count),
        cli_u(s->messages_count),
        cli_u(s->clients_count),
        cli_u(s->consumer_groups_count),
        cli_u(s->threads_count),
        cli_typed(CLI_VAL_SIZE, s->free_disk_space),
        cli_typed(CLI_VAL_SIZE, s->total_disk_space),
        cli_str(s->hostname),
        cli_str(s->os_name),
        cli_str(s->os_version),
        cli_str(s->kernel_version),
        cli_str(s->server_version),
    };
    cli_table_row(&doc.main, v);
    static const cli_col_t cache_cols[] = {
        {"stream_id", "STREAM", 0}, {"topic_id", "TOPIC", 0}, {"partition_id", "PARTITION", 0},
        {"hits", "HITS", 0},        {"misses", "MISSES", 0},  {"hit_ratio", "HIT RATIO", 0},
    };
    cli_table_t *cache = cli_doc_sub(&doc, "cache_metrics", cache_cols, COUNT(cache_cols));
    for (uint32_t i = 0; s->cache_metrics != NULL && i < s->cache_metrics_count; i++) {
        const sl_stats_cache_metric_t *m = &s->cache_metrics[i];
        cli_table_row(cache,
                      (cli_val_t[]){cli_u(m->stream_id), cli_u(m->topic_id), cli_u(m->partition_id),
                                    cli_u(m->hits), cli_u(m->misses), cli_f(m->hit_ratio)});
    }
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

/* --- snapshot and options ---------------------------------------------------------------- */

static const char *const snapshot_types[] = {
    NULL,   "filesystem_overview", "process_list", "resource_usage",
    "test", "server_logs",         "server_config"};

/* Adds the comma-separated types in text to types. An exit code. */
static int add_snapshot_types(cli_run_t *run, const char *text, uint8_t *types, uint32_t *n)
{
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ", ");
        uint8_t code = 0;
        if (len == 3 && strncmp(p, "all", 3) == 0)
            code = SL_SNAPSHOT_TYPE_ALL;
        for (uint8_t k = 1; k < COUNT(snapshot_types) && code == 0; k++)
            if (strlen(snapshot_types[k]) == len && strncmp(snapshot_types[k], p, len) == 0)
                code = k;
        if (code == 0)
            return cli_usage(run, "unknown snapshot type '%.*s'", (int)len, p);
        if (*n >= 255)
            return cli_usage(run, "too many snapshot types");
        types[(*n)++] = code;
        p += len;
        p += strspn(p, ", ");
    }
    return 0;
}

static int write_file(const char *path, const uint8_t *bytes, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return cli_error(CLI_EXIT_LOCAL, "cannot create %s: %s", path, strerror(errno));
    bool ok = fwrite(bytes, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    return ok ? 0 : cli_error(CLI_EXIT_LOCAL, "cannot write %s: %s", path, strerror(errno));
}

int cli_cmd_snapshot(cli_run_t *run)
{
    static const char *const methods[] = {NULL,   "stored", "deflated", "bzip2",
                                          "zstd", "lzma",   "xz"};
    const char *method = cli_opt(run, "compression"), *dir = cli_opt(run, "out-dir");
    uint8_t compression = SL_SNAPSHOT_COMPRESSION_DEFLATED, types[256];
    for (uint8_t k = 1; method != NULL && k < COUNT(methods); k++)
        if (strcmp(methods[k], method) == 0)
            compression = k;
    uint32_t n = 0;
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && cli_opt_nth(run, "snapshot-types", i) != NULL; i++)
        rc = add_snapshot_types(run, cli_opt_nth(run, "snapshot-types", i), types, &n);
    if (rc != 0)
        return rc;
    if (n == 0)
        types[n++] = SL_SNAPSHOT_TYPE_ALL;
    const uint8_t *zip;
    size_t zip_len;
    rc = sl_client_get_snapshot(run->client, compression, types, n, &zip, &zip_len);
    if (rc == -SL_ERR_FEATURE_UNAVAILABLE)
        return cli_fail_hint(rc,
                             "the server cannot write this compression (sluiced writes stored, "
                             "deflated and bzip2 archives)",
                             "get a %s snapshot", method ? method : "deflated");
    if (rc != 0)
        return cli_fail(rc, "get a snapshot");
    char path[1024], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
    snprintf(path, sizeof(path), "%s/snapshot_%s.zip", dir ? dir : ".", stamp);
    rc = write_file(path, zip, zip_len);
    if (rc != 0)
        return rc;
    static const cli_col_t cols[] = {{"path", "PATH", 0}, {"size_bytes", "SIZE", 0}};
    cli_doc_t doc;
    cli_doc_object(&doc, cols, COUNT(cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_str(path), cli_typed(CLI_VAL_SIZE, zip_len)});
    cli_created(run, &doc, "wrote the snapshot (%zu bytes) to %s", zip_len, path);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_options(cli_run_t *run)
{
    const char *scope = cli_arg(run, "SCOPE");
    uint8_t code = SL_SCOPE_TOPIC;
    if (scope != NULL && strcmp(scope, "stream") == 0)
        code = SL_SCOPE_STREAM;
    else if (scope != NULL && strcmp(scope, "user") == 0)
        code = SL_SCOPE_USER;
    const sl_option_info_t *items;
    uint32_t count;
    int rc = sl_client_describe_options(run->client, code, &items, &count);
    if (rc != 0)
        return cli_fail(rc, "describe the %s options", scope ? scope : "topic");
    static const cli_col_t cols[] = {{"key", "KEY", 0},
                                     {"kind", "KIND", 0},
                                     {"default", "DEFAULT", 0},
                                     {"description", "DESCRIPTION", 0}};
    cli_doc_t doc;
    cli_doc_list(&doc, cols, COUNT(cols));
    for (uint32_t i = 0; i < count; i++) {
        const sl_option_info_t *o = &items[i];
        cli_val_t def = o->default_len
                            ? cli_typed_value(&doc, o->kind, o->default_value, o->default_len)
                            : cli_str(NULL);
        cli_table_row(&doc.main,
                      (cli_val_t[]){cli_str(o->key), cli_str(cli_header_kind_name(o->kind)), def,
                                    cli_str(o->description)});
    }
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

/* --- contexts ------------------------------------------------------------------------------ */

int cli_cmd_context_list(cli_run_t *run)
{
    cli_contexts_t *list = cli_xalloc(sizeof(*list));
    int rc = cli_contexts_load(list);
    char active[64];
    cli_context_active(run, active, sizeof(active));
    static const cli_col_t cols[] = {{"name", "NAME", 0},
                                     {"active", "ACTIVE", 0},
                                     {"server", "SERVER", 0},
                                     {"username", "USERNAME", 0},
                                     {"auth", "AUTH", 0}};
    cli_doc_t doc;
    cli_doc_list(&doc, cols, COUNT(cols));
    if (rc == 0 && cli_context_find(list, "default") == NULL)
        cli_table_row(&doc.main,
                      (cli_val_t[]){cli_str("default"), cli_b(strcmp(active, "default") == 0),
                                    cli_str(CLI_DEFAULT_SERVER), cli_str(NULL), cli_str(NULL)});
    for (uint32_t i = 0; rc == 0 && i < list->count; i++) {
        const cli_context_t *c = &list->items[i];
        const char *auth = c->token[0] ? "token" : c->password[0] ? "password" : NULL;
        cli_table_row(&doc.main,
                      (cli_val_t[]){cli_str(c->name), cli_b(strcmp(active, c->name) == 0),
                                    cli_str(c->server[0] ? c->server : CLI_DEFAULT_SERVER),
                                    cli_str(c->username[0] ? c->username : NULL), cli_str(auth)});
    }
    if (rc == 0)
        cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    free(list);
    return rc;
}

int cli_cmd_context_use(cli_run_t *run)
{
    const char *name = cli_arg(run, "NAME");
    cli_contexts_t *list = cli_xalloc(sizeof(*list));
    int rc = cli_contexts_load(list);
    if (rc == 0 && strcmp(name, "default") != 0 && cli_context_find(list, name) == NULL)
        rc = cli_error(CLI_EXIT_NOT_FOUND, "context '%s' not found in ~/.sluice/contexts.toml",
                       name);
    free(list);
    if (rc == 0)
        rc = cli_context_write_active(name);
    if (rc == 0)
        cli_done(run, "active context is now '%s'", name);
    return rc;
}

/* --- login and logout ---------------------------------------------------------------------- */

int cli_cmd_login(cli_run_t *run)
{
    uint32_t words;
    const char *const *expiry = cli_rest(run, "EXPIRY", &words);
    uint64_t expiry_us = LOGIN_EXPIRY_DEFAULT_US;
    if (words > 0 && !cli_duration_us(expiry, words, &expiry_us))
        return cli_usage(run, "invalid EXPIRY (e.g. 15m, \"1h 30m\", never)");
    /* A session left over from an earlier login is replaced; usually there
     * is none, and not finding it is fine. */
    int replaced = sl_client_delete_token(run->client, LOGIN_TOKEN_NAME);
    (void)replaced;
    const char *token;
    int rc = sl_client_create_token(run->client, LOGIN_TOKEN_NAME, expiry_us, &token);
    if (rc != 0)
        return cli_fail(rc, "create the session token");
    cli_login_session_t *s = cli_xalloc(sizeof(*s));
    snprintf(s->server, sizeof(s->server), "%s", run->server);
    snprintf(s->name, sizeof(s->name), "%s", LOGIN_TOKEN_NAME);
    snprintf(s->token, sizeof(s->token), "%s", token);
    rc = cli_login_session_save(s);
    memset(s, 0, sizeof(*s));
    free(s);
    if (rc == 0)
        cli_done(run, "logged in to %s; the session is stored in ~/.sluice/session.toml",
                 run->server);
    return rc;
}

int cli_cmd_logout(cli_run_t *run)
{
    cli_login_session_t *s = cli_xalloc(sizeof(*s));
    int rc = 0;
    if (!cli_login_session_load(s)) {
        cli_done(run, "not logged in");
    } else if (!cli_split_server(s->server, run->host, sizeof(run->host), &run->port)) {
        rc = cli_login_session_remove();
    } else {
        sl_client_options_t opts = {.connect_timeout_ms = 5000, .sdk_name = "sluice-cli"};
        rc = sl_client_connect(run->host, run->port, &opts, &run->client);
        if (rc != 0) {
            rc = cli_fail(rc, "connect to %s", s->server);
        } else {
            /* An expired or deleted token leaves nothing to delete on the server. */
            rc = sl_client_login_token(run->client, s->token, NULL);
            if (rc == 0)
                rc = sl_client_delete_token(run->client, s->name);
            int code = cli_exit_for(rc);
            if (rc != 0 && code != CLI_EXIT_AUTH && code != CLI_EXIT_NOT_FOUND)
                rc = cli_fail(rc, "delete the session token on %s", s->server);
            else
                rc = cli_login_session_remove();
        }
        if (rc == 0)
            cli_done(run, "logged out of %s", s->server);
    }
    memset(s, 0, sizeof(*s));
    free(s);
    return rc;
}
