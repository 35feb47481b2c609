/* The settings table of sluiced: its shape, defaults, the file, environment
 * overrides and their precedence, the flags, bounds and cross-setting rules,
 * the value parsers, the --print-config round trip, and that the sample
 * config and docs/configuration.md follow the table. */
#include "testutil.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"
#include "server/loop.h"
#include "server/toml.h"

/* Tests read the real environment: start each from none of our variables. */
static int clear_env(void **state)
{
    (void)state;
    size_t n;
    const sl_setting_t *rows = sl_config_settings(&n);
    for (size_t i = 0; i < n; i++)
        unsetenv(rows[i].env);
    rows = sl_config_node_settings(&n);
    for (uint32_t node = 0; node < SL_CLUSTER_NODES_MAX; node++) {
        for (size_t i = 0; i < n; i++) {
            char env[96];
            const char *mark = strstr(rows[i].env, "<i>");
            snprintf(env, sizeof(env), "%.*s%u%s", (int)(mark - rows[i].env), rows[i].env, node,
                     mark + 3);
            unsetenv(env);
        }
    }
    return 0;
}

static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *text = malloc(1 << 20);
    assert_non_null(text);
    *len = fread(text, 1, (1 << 20) - 1, f);
    text[*len] = '\0';
    fclose(f);
    return text;
}

/* A file under the source tree (tests/vectors is the one path ctest passes). */
static char *read_source_file(const char *relative, size_t *len)
{
    const char *vectors = getenv("SLUICE_VECTORS_DIR");
    assert_non_null(vectors);
    char path[4096];
    snprintf(path, sizeof(path), "%s/../../%s", vectors, relative);
    return read_text(path, len);
}

static char *print_to_string(const sl_config_t *cfg)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    sl_config_print(f, cfg);
    fclose(f);
    return text;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

typedef struct loaded {
    int rc;
    bool exit_now;
    char err[4096];
    char *out;
} loaded_t;

/* Runs sl_config_load on a NULL-terminated argument list. */
static loaded_t load(sl_config_t *cfg, const char *const *args)
{
    char *argv[16] = {"sluiced"};
    int argc = 1;
    for (; args && args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    loaded_t r = {0};
    size_t len = 0;
    FILE *f = open_memstream(&r.out, &len);
    assert_non_null(f);
    r.rc = sl_config_load(cfg, argc, argv, f, r.err, sizeof(r.err), &r.exit_now);
    fclose(f);
    return r;
}

static void assert_contains(const char *text, const char *want)
{
    if (!strstr(text, want))
        fail_msg("\"%s\" does not contain \"%s\"", text, want);
}

static void apply_ok(sl_config_t *cfg, const char *toml)
{
    char err[512];
    if (sl_config_apply_toml(cfg, toml, strlen(toml), "t.toml", err, sizeof(err)))
        fail_msg("unexpected error: %s", err);
}

static void apply_fails(const char *toml, const char *want)
{
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    char err[512];
    int rc = sl_config_apply_toml(&cfg, toml, strlen(toml), "sluiced.toml", err, sizeof(err));
    if (rc != -SL_ERR_INVALID_CONFIGURATION)
        fail_msg("<<%s>> accepted, expected %s", toml, want);
    if (strcmp(err, want) != 0)
        fail_msg("<<%s>>: got \"%s\", want \"%s\"", toml, err, want);
}

/* --- the table ------------------------------------------------------------------ */

static size_t size_of_type(sl_setting_type_t type)
{
    switch (type) {
    case SL_SETTING_BOOL:
        return sizeof(bool);
    case SL_SETTING_U32:
    case SL_SETTING_RATIO:
        return sizeof(uint32_t);
    case SL_SETTING_U64:
    case SL_SETTING_DURATION:
    case SL_SETTING_BYTES:
        return sizeof(uint64_t);
    case SL_SETTING_LOG_LEVEL:
        return sizeof(sl_log_level_t);
    case SL_SETTING_ADDRESS:
        return sizeof(sl_config_address_t);
    case SL_SETTING_STRING:
        return 0;
    }
    return 0;
}

static void test_table_shape(void **state)
{
    (void)state;
    size_t n;
    const sl_setting_t *rows = sl_config_settings(&n);
    assert_true(n >= 23);
    for (size_t i = 0; i < n; i++) {
        const sl_setting_t *r = &rows[i];
        /* IGGY_ + the name upper-cased with dots as underscores. */
        char env[128] = "IGGY_";
        for (size_t k = 0; r->name[k]; k++)
            env[5 + k] = r->name[k] == '.' ? '_' : (char)toupper((unsigned char)r->name[k]);
        assert_string_equal(r->env, env);
        assert_ptr_equal(sl_config_setting_find(r->name), r);
        assert_true(r->offset + r->size <= sizeof(sl_config_t));
        if (r->type == SL_SETTING_STRING)
            assert_true(r->max < r->size && r->min <= r->max);
        else
            assert_int_equal(r->size, size_of_type(r->type));
        if (r->type == SL_SETTING_U32)
            assert_true(r->max <= UINT32_MAX);
        if (r->type != SL_SETTING_ADDRESS && r->type != SL_SETTING_LOG_LEVEL)
            assert_true(r->min <= r->max);
        assert_true(strlen(r->description) > 10 && !strchr(r->description, '\n'));
        assert_true(r->description[strlen(r->description) - 1] == '.');
        /* Rows of one TOML table are adjacent, so printing opens each table once:
         * a table that reappears after another one started is an error. */
        const char *dot = strrchr(r->name, '.');
        assert_non_null(dot);
        size_t tlen = (size_t)(dot - r->name);
        bool starts_table = i == 0 || strncmp(rows[i - 1].name, r->name, tlen) != 0 ||
                            rows[i - 1].name[tlen] != '.' ||
                            strchr(rows[i - 1].name + tlen + 1, '.');
        for (size_t j = 0; starts_table && j < i; j++) {
            const char *jd = strrchr(rows[j].name, '.');
            if ((size_t)(jd - rows[j].name) == tlen && !memcmp(rows[j].name, r->name, tlen))
                fail_msg("%s is not next to %s, which is in the same table", r->name, rows[j].name);
        }
    }
    assert_null(sl_config_setting_find("tcp"));
    assert_null(sl_config_setting_find("tcp.adress"));
}

static void test_defaults(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    assert_true(cfg.tcp.enabled);
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:8090");
    assert_string_equal(cfg.tcp.address.host, "127.0.0.1");
    assert_int_equal(cfg.tcp.address.port, 8090);
    assert_false(cfg.tcp.address.ipv6);
    const struct sockaddr_in *sa = (const struct sockaddr_in *)&cfg.tcp.address.sockaddr;
    assert_int_equal(sa->sin_family, AF_INET);
    assert_int_equal(ntohs(sa->sin_port), 8090);
    assert_int_equal(ntohl(sa->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(cfg.tcp.address.sockaddr_len, sizeof(struct sockaddr_in));
    assert_int_equal(cfg.tcp.max_connections, 10000);
    assert_false(cfg.quic.enabled);
    assert_string_equal(cfg.quic.address.text, "127.0.0.1:8080");
    /* HTTP is served by default, as in the reference (http.md 12). */
    assert_true(cfg.http.enabled);
    assert_string_equal(cfg.http.address.text, "127.0.0.1:3000");
    assert_int_equal(cfg.http.max_request_size, 2000000);
    assert_true(cfg.http.cors.enabled);
    assert_string_equal(cfg.http.cors.allowed_origins, "*");
    assert_string_equal(cfg.http.jwt.algorithm, "HS256");
    assert_int_equal(cfg.http.jwt.access_token_expiry_us, 3600ull * 1000000ull);
    assert_string_equal(cfg.http.jwt.encoding_secret, "");
    assert_true(cfg.http.metrics.enabled);
    assert_string_equal(cfg.http.metrics.endpoint, "/metrics");
    assert_false(cfg.http.tls.enabled);
    assert_string_equal(cfg.http.tls.cert_file, "core/certs/iggy_cert.pem");
    assert_string_equal(cfg.http.tls.key_file, "core/certs/iggy_key.pem");
    assert_true(cfg.websocket.enabled);
    assert_string_equal(cfg.websocket.address.text, "127.0.0.1:8092");
    assert_int_equal(cfg.websocket.max_message_size, 0);
    assert_int_equal(cfg.websocket.max_frame_size, 0);
    assert_int_equal(sl_config_ws_message_max(&cfg), SL_FRAME_MAX_DEFAULT);
    assert_int_equal(sl_config_ws_frame_max(&cfg), 16u << 20);
    assert_false(cfg.websocket.accept_unmasked_frames);
    assert_false(cfg.websocket.tls.enabled);
    assert_true(cfg.websocket.tls.self_signed);
    assert_string_equal(cfg.websocket.tls.cert_file, "core/certs/iggy_cert.pem");
    assert_string_equal(cfg.websocket.tls.key_file, "core/certs/iggy_key.pem");
    assert_true(cfg.heartbeat.enabled);
    assert_int_equal(cfg.heartbeat.interval_us, SL_HEARTBEAT_INTERVAL_US_DEFAULT);
    assert_int_equal(cfg.message_bus.max_message_size, SL_FRAME_MAX_DEFAULT);
    assert_int_equal(cfg.message_bus.frame_pool_idle_max, 64u << 20);
    assert_int_equal(cfg.message_bus.receive_memory_max, SL_LOOP_FRAME_BUDGET_DEFAULT);
    assert_int_equal(cfg.message_bus.reply_memory_max, 256u << 20);
    assert_int_equal(cfg.tcp.login_timeout_us, 10u * 1000000u);
    assert_int_equal(cfg.tcp.frame_timeout_us, SL_LOOP_FRAME_TIMEOUT_MS_DEFAULT * 1000ull);
    assert_int_equal(cfg.tcp.reply_timeout_us, SL_LOOP_REPLY_TIMEOUT_MS_DEFAULT * 1000ull);
    assert_int_equal(cfg.metadata.clients_table_max, SL_CLIENTS_TABLE_DEFAULT);
    assert_int_equal(cfg.metadata.checkpoint_interval, 1024);
    assert_int_equal(cfg.metadata.journal_slots, 1024);
    assert_int_equal(cfg.personal_access_token.max_tokens_per_user, SL_TOKENS_PER_USER_MAX_DEFAULT);
    assert_int_equal(cfg.server.per_connection_work_max, 16);
    assert_string_equal(cfg.system.path, "local_data");
    assert_int_equal(cfg.system.logging.level, SL_LOG_INFO);
    assert_true(cfg.system.partition.validate_checksum);
    assert_int_equal(cfg.system.partition.journal_memory_max, 128u << 20);
    assert_int_equal(cfg.system.sharding.shards, 0);
    assert_string_equal(cfg.root.username, "");
    assert_string_equal(cfg.root.password, "");
    assert_false(sl_config_has_root_credentials(&cfg));
    assert_string_equal(cfg.config_path, "");
    char err[256];
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);

    uint32_t shards = sl_config_shard_count(&cfg);
    assert_true(shards >= 1 && shards <= 64);
    cfg.system.sharding.shards = 3;
    assert_int_equal(sl_config_shard_count(&cfg), 3);
}

/* --- the file ----------------------------------------------------------------------- */

static void test_file_overrides(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    apply_ok(&cfg, "[tcp]\n"
                   "address = \"[::1]:9000\"\n"
                   "max_connections = 5\n"
                   "[heartbeat]\n"
                   "enabled = false\n"
                   "interval = \"1h 30m\"\n"
                   "[message_bus]\n"
                   "max_message_size = 2_097_152\n"
                   "[system]\n"
                   "path = '/var/lib/sluice'\n"
                   "[system.logging]\n"
                   "level = \"DEBUG\"\n"
                   "[system.sharding]\n"
                   "shards = 4\n"
                   "[quic]\n"
                   "enabled = true\n");
    assert_string_equal(cfg.tcp.address.text, "[::1]:9000");
    assert_true(cfg.tcp.address.ipv6);
    assert_int_equal(cfg.tcp.max_connections, 5);
    assert_false(cfg.heartbeat.enabled);
    assert_int_equal(cfg.heartbeat.interval_us, 5400ull * 1000000);
    assert_int_equal(cfg.message_bus.max_message_size, 2u << 20);
    assert_string_equal(cfg.system.path, "/var/lib/sluice");
    assert_int_equal(cfg.system.logging.level, SL_LOG_DEBUG);
    assert_int_equal(cfg.system.sharding.shards, 4);
    assert_true(cfg.quic.enabled);
    /* Keys the file does not name keep their defaults. */
    assert_true(cfg.tcp.enabled);
    assert_int_equal(cfg.metadata.clients_table_max, 8192);
    assert_string_equal(cfg.http.address.text, "127.0.0.1:3000");

    /* Sizes as strings; an empty file changes nothing. */
    apply_ok(&cfg, "[message_bus]\nmax_message_size = \"1 GiB\"\n");
    assert_int_equal(cfg.message_bus.max_message_size, 1ull << 30);
    apply_ok(&cfg, "");
    assert_int_equal(cfg.message_bus.max_message_size, 1ull << 30);
}

static void test_file_errors(void **state)
{
    (void)state;
    apply_fails("[tcp]\nenabled = true\nadress = \"x\"\n",
                "sluiced.toml:3:1: unknown setting 'tcp.adress'");
    apply_fails("\n[nope]\n  key = 1\n", "sluiced.toml:3:3: unknown setting 'nope.key'");
    apply_fails("enabled = true\n", "sluiced.toml:1:1: unknown setting 'enabled'");
    apply_fails("[tcp]\nenabled = 1\n",
                "sluiced.toml:2:11: tcp.enabled: expected true or false, got an integer");
    apply_fails("[tcp]\nmax_connections = \"5\"\n",
                "sluiced.toml:2:19: tcp.max_connections: expected an integer, got a string");
    apply_fails("[tcp]\naddress = 8090\n", "sluiced.toml:2:11: tcp.address: expected an address "
                                           "string such as \"127.0.0.1:8090\", got an integer");
    apply_fails("[heartbeat]\ninterval = 30\n", "sluiced.toml:2:12: heartbeat.interval: expected a "
                                                "duration string such as \"30 s\", got an integer");
    apply_fails("[heartbeat]\ninterval = \"30\"\n",
                "sluiced.toml:2:12: heartbeat.interval: a unit must follow the number (us, ms, s, "
                "m, h, d, w)");
    apply_fails("[heartbeat]\ninterval = \"1 ms\"\n",
                "sluiced.toml:2:12: heartbeat.interval: 1 ms is outside the allowed range "
                "10 ms .. 1 d");
    apply_fails("[metadata]\nclients_table_max = 1\n",
                "sluiced.toml:2:21: metadata.clients_table_max: 1 is outside the allowed range "
                "2 .. 65536");
    apply_fails("[metadata]\nclients_table_max = -1\n",
                "sluiced.toml:2:21: metadata.clients_table_max: must not be negative");
    apply_fails(
        "[system.sharding]\nshards = 65\n",
        "sluiced.toml:2:10: system.sharding.shards: 65 is outside the allowed range 0 .. 64");
    apply_fails("[message_bus]\nmax_message_size = \"2 GiB\"\n",
                "sluiced.toml:2:20: message_bus.max_message_size: 2 GiB is outside the allowed "
                "range 1 MiB .. 1 GiB");
    apply_fails("[message_bus]\nmax_message_size = 1000\n",
                "sluiced.toml:2:20: message_bus.max_message_size: 1 KB is outside the allowed "
                "range 1 MiB .. 1 GiB");
    apply_fails("[system]\npath = \"\"\n",
                "sluiced.toml:2:8: system.path: must be 1..4095 bytes long (got 0)");
    apply_fails("[system.logging]\nlevel = \"verbose\"\n",
                "sluiced.toml:2:9: system.logging.level: expected error, warn, info, debug or "
                "trace");
    apply_fails("[tcp]\naddress = \"localhost:8090\"\n",
                "sluiced.toml:2:11: tcp.address: the host must be an IPv4 address such as "
                "127.0.0.1 or 0.0.0.0 (names are not resolved)");
    apply_fails("[root]\npassword = \"secret\"\n",
                "sluiced.toml:2:1: root.password cannot be set in a file; use IGGY_ROOT_PASSWORD "
                "(or --with-default-root-credentials)");
    apply_fails("[root]\nusername = \"admin\"\n",
                "sluiced.toml:2:1: root.username cannot be set in a file; use IGGY_ROOT_USERNAME "
                "(or --with-default-root-credentials)");
    /* Syntax errors keep the parser's position. */
    apply_fails("[tcp]\nenabled true\n", "sluiced.toml:2:9: expected '=' after key");
    apply_fails("[tcp]\n[tcp]\n", "sluiced.toml:2:1: duplicate table [tcp]");
    /* An address without quotes reads as a TOML time: the error says to quote it. */
    apply_fails("[tcp]\naddress = 127.0.0.1:18091\n",
                "sluiced.toml:2:11: text values must be quoted: \"127.0.0.1:18091\" (dates and "
                "times are not supported)");
    apply_fails("[system]\npath = local_data\n",
                "sluiced.toml:2:8: text values must be quoted: \"local_data\" (expected a value: "
                "\"string\", 'string', integer, true or false)");

    /* A failed setting keeps its earlier value. */
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    char err[256];
    const char *bad = "[tcp]\nmax_connections = 7\naddress = \"1.2.3.4:99999\"\n";
    assert_int_equal(sl_config_apply_toml(&cfg, bad, strlen(bad), "f", err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "f:3:11: tcp.address: the port must be a number 0..65535");
    assert_int_equal(cfg.tcp.max_connections, 7);
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:8090");
}

static void test_apply_file(void **state)
{
    (void)state;
    char path[] = "/tmp/sluice_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "[system]\npath = \"from_file\"\n");
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    char err[512];
    assert_int_equal(sl_config_apply_file(&cfg, path, err, sizeof(err)), 0);
    assert_string_equal(cfg.system.path, "from_file");
    assert_string_equal(cfg.config_path, path);

    write_file(path, "[system]\npath = 1\n");
    assert_int_equal(sl_config_apply_file(&cfg, path, err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    char want[512];
    snprintf(want, sizeof(want), "%s:2:8: system.path: expected a string, got an integer", path);
    assert_string_equal(err, want);

    /* Larger than the cap: refused before parsing. */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (unsigned i = 0; i <= SL_CONFIG_FILE_MAX / 8; i++)
        fputs("# pad..\n", f);
    fclose(f);
    assert_int_equal(sl_config_apply_file(&cfg, path, err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "larger than 1048576 bytes");
    unlink(path);

    assert_int_equal(sl_config_apply_file(&cfg, path, err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
    assert_string_equal(err, want);
    assert_int_equal(sl_config_apply_file(&cfg, "/", err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "/: cannot read: ");
}

/* --- the environment and the flags --------------------------------------------------- */

static void test_env_overrides(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    setenv("IGGY_TCP_ADDRESS", "0.0.0.0:8091", 1);
    setenv("IGGY_SYSTEM_PATH", "env_data", 1);
    setenv("IGGY_HEARTBEAT_INTERVAL", "500 ms", 1);
    setenv("IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE", "1GB", 1);
    setenv("IGGY_SYSTEM_PARTITION_VALIDATE_CHECKSUM", "false", 1);
    setenv("IGGY_METADATA_CLIENTS_TABLE_MAX", "1_000", 1);
    setenv("IGGY_SYSTEM_LOGGING_LEVEL", "trace", 1);
    char err[512];
    assert_int_equal(sl_config_apply_env(&cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.tcp.address.text, "0.0.0.0:8091");
    assert_string_equal(cfg.system.path, "env_data");
    assert_int_equal(cfg.heartbeat.interval_us, 500000);
    assert_int_equal(cfg.message_bus.max_message_size, 1000000000);
    assert_false(cfg.system.partition.validate_checksum);
    assert_int_equal(cfg.metadata.clients_table_max, 1000);
    assert_int_equal(cfg.system.logging.level, SL_LOG_TRACE);

    /* Errors name the variable and the value; secrets are never echoed. */
    const struct {
        const char *env, *value, *want;
    } bad[] = {
        {"IGGY_HEARTBEAT_INTERVAL", "30",
         "IGGY_HEARTBEAT_INTERVAL=\"30\" (heartbeat.interval): a unit must follow the number (us, "
         "ms, s, m, h, d, w)"},
        {"IGGY_TCP_ENABLED", "yes",
         "IGGY_TCP_ENABLED=\"yes\" (tcp.enabled): expected true or false"},
        {"IGGY_TCP_MAX_CONNECTIONS", "-3",
         "IGGY_TCP_MAX_CONNECTIONS=\"-3\" (tcp.max_connections): must not be negative"},
        {"IGGY_TCP_MAX_CONNECTIONS", "99999999999999999999",
         "IGGY_TCP_MAX_CONNECTIONS=\"99999999999999999999\" (tcp.max_connections): integer out of "
         "range (64-bit signed)"},
        {"IGGY_TCP_MAX_CONNECTIONS", "1000001",
         "IGGY_TCP_MAX_CONNECTIONS=\"1000001\" (tcp.max_connections): 1000001 is outside the "
         "allowed range 1 .. 1000000"},
        {"IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE", "64 MB!",
         "IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE=\"64 MB!\" (message_bus.max_message_size): unexpected "
         "text after the size"},
        {"IGGY_TCP_ADDRESS", "::1:8090",
         "IGGY_TCP_ADDRESS=\"::1:8090\" (tcp.address): write an IPv6 address in brackets, as in "
         "[::1]:8090"},
        {"IGGY_SYSTEM_PATH", "",
         "IGGY_SYSTEM_PATH=\"\" (system.path): must be 1..4095 bytes long "
         "(got 0)"},
        {"IGGY_SYSTEM_PATH", "\xff",
         "IGGY_SYSTEM_PATH=\"\xff\" (system.path): must be valid UTF-8 "
         "text"},
        {"IGGY_ROOT_USERNAME", "zq",
         "IGGY_ROOT_USERNAME=\"zq\" (root.username): must be 3..50 bytes long (got 2)"},
        {"IGGY_ROOT_PASSWORD", "zq",
         "IGGY_ROOT_PASSWORD (root.password): must be 3..100 bytes long (got 2)"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        clear_env(NULL);
        setenv(bad[i].env, bad[i].value, 1);
        sl_config_defaults(&cfg);
        int rc = sl_config_apply_env(&cfg, err, sizeof(err));
        assert_int_equal(rc, -SL_ERR_INVALID_CONFIGURATION);
        if (strcmp(err, bad[i].want) != 0)
            fail_msg("%s=%s: got \"%s\"", bad[i].env, bad[i].value, err);
    }
    clear_env(NULL);
    /* Variables outside the table are ignored. */
    setenv("IGGY_TCP_SOCKET_NODELAY", "whatever", 1);
    sl_config_defaults(&cfg);
    assert_int_equal(sl_config_apply_env(&cfg, err, sizeof(err)), 0);
    unsetenv("IGGY_TCP_SOCKET_NODELAY");
}

static void test_precedence(void **state)
{
    (void)state;
    char path[] = "/tmp/sluice_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "[tcp]\naddress = \"127.0.0.1:1111\"\nmax_connections = 11\n"
                     "[system]\npath = \"file_path\"\n");
    setenv("IGGY_TCP_ADDRESS", "127.0.0.1:2222", 1);
    sl_config_t cfg;
    loaded_t r = load(&cfg, (const char *[]){"--config", path, NULL});
    assert_int_equal(r.rc, 0);
    assert_false(r.exit_now);
    /* The environment beats the file, the file beats the defaults. */
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:2222");
    assert_int_equal(cfg.tcp.max_connections, 11);
    assert_string_equal(cfg.system.path, "file_path");
    assert_int_equal(cfg.heartbeat.interval_us, 30000000);
    assert_string_equal(r.out, "");
    free(r.out);

    char arg[64];
    snprintf(arg, sizeof(arg), "--config=%s", path);
    unsetenv("IGGY_TCP_ADDRESS");
    r = load(&cfg, (const char *[]){arg, NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:1111");
    free(r.out);

    /* Without --config no file is read. */
    r = load(&cfg, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:8090");
    assert_string_equal(cfg.config_path, "");
    free(r.out);
    unlink(path);
}

static void test_flags(void **state)
{
    (void)state;
    sl_config_t cfg;
    loaded_t r = load(&cfg, (const char *[]){"--help", NULL});
    assert_int_equal(r.rc, 0);
    assert_true(r.exit_now);
    assert_contains(r.out, "usage: sluiced [--config PATH]");
    assert_contains(r.out, "--with-default-root-credentials");
    free(r.out);
    r = load(&cfg, (const char *[]){"-h", "--nope", NULL});
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    free(r.out);

    r = load(&cfg, (const char *[]){"--version", NULL});
    assert_int_equal(r.rc, 0);
    assert_true(r.exit_now);
    assert_contains(r.out, "sluiced ");
    assert_contains(r.out, "0.11.0");
    free(r.out);

    r = load(&cfg, (const char *[]){"--frobnicate", NULL});
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_false(r.exit_now);
    assert_contains(r.err, "unknown option '--frobnicate'");
    assert_contains(r.err, "usage: sluiced");
    free(r.out);
    r = load(&cfg, (const char *[]){"config.toml", NULL});
    assert_contains(r.err, "unknown option 'config.toml'");
    free(r.out);
    r = load(&cfg, (const char *[]){"--config", NULL});
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(r.err, "--config needs a PATH");
    free(r.out);
    r = load(&cfg, (const char *[]){"--config=", NULL});
    assert_contains(r.err, "unknown option '--config='");
    free(r.out);
    r = load(&cfg, (const char *[]){"--config", "/nonexistent/sluiced.toml", NULL});
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(r.err, "/nonexistent/sluiced.toml: cannot open: No such file or directory");
    free(r.out);
}

static void test_root_credentials(void **state)
{
    (void)state;
    sl_config_t cfg;
    /* The flag alone: iggy/iggy. */
    loaded_t r = load(&cfg, (const char *[]){"--with-default-root-credentials", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.root.username, "iggy");
    assert_string_equal(cfg.root.password, "iggy");
    assert_true(sl_config_has_root_credentials(&cfg));
    free(r.out);

    /* The environment wins over the flag, variable by variable. */
    setenv("IGGY_ROOT_USERNAME", "admin", 1);
    setenv("IGGY_ROOT_PASSWORD", "s3cret-pass", 1);
    r = load(&cfg, (const char *[]){"--with-default-root-credentials", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.root.username, "admin");
    assert_string_equal(cfg.root.password, "s3cret-pass");
    free(r.out);
    r = load(&cfg, NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.root.username, "admin");
    free(r.out);
    unsetenv("IGGY_ROOT_PASSWORD");
    r = load(&cfg, (const char *[]){"--with-default-root-credentials", NULL});
    assert_int_equal(r.rc, 0);
    assert_string_equal(cfg.root.username, "admin");
    assert_string_equal(cfg.root.password, "iggy");
    free(r.out);

    /* Without the flag both variables or neither. */
    r = load(&cfg, NULL);
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(r.err, "IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD must be set together "
                               "(only IGGY_ROOT_USERNAME is set)");
    free(r.out);
    unsetenv("IGGY_ROOT_USERNAME");
    setenv("IGGY_ROOT_PASSWORD", "only-password", 1);
    r = load(&cfg, NULL);
    assert_contains(r.err, "(only IGGY_ROOT_PASSWORD is set)");
    free(r.out);

    /* Lengths: username 3..50, password 3..100 bytes. */
    char long_user[52], long_pass[102];
    memset(long_user, 'u', 51);
    long_user[51] = '\0';
    memset(long_pass, 'p', 101);
    long_pass[101] = '\0';
    setenv("IGGY_ROOT_USERNAME", long_user, 1);
    setenv("IGGY_ROOT_PASSWORD", "abc", 1);
    r = load(&cfg, NULL);
    assert_contains(r.err, "(root.username): must be 3..50 bytes long (got 51)");
    free(r.out);
    long_user[50] = '\0';
    setenv("IGGY_ROOT_USERNAME", long_user, 1);
    setenv("IGGY_ROOT_PASSWORD", long_pass, 1);
    r = load(&cfg, NULL);
    assert_string_equal(r.err, "IGGY_ROOT_PASSWORD (root.password): must be 3..100 bytes long "
                               "(got 101)");
    assert_null(strstr(r.err, "ppp"));
    free(r.out);
    long_pass[100] = '\0';
    setenv("IGGY_ROOT_PASSWORD", long_pass, 1);
    r = load(&cfg, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(strlen(cfg.root.username), 50);
    assert_int_equal(strlen(cfg.root.password), 100);
    free(r.out);
    clear_env(NULL);
}

/* --- validation ------------------------------------------------------------------------ */

/* One [http] rule: the setting as the environment would write it is refused
 * with a message containing want. */
static void http_refused(const char *name, const char *value, const char *want)
{
    sl_config_t cfg;
    char err[512];
    sl_config_defaults(&cfg);
    if (sl_config_set(&cfg, sl_config_setting_find(name), value, err, sizeof(err)) == 0)
        assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, want);
}

/* The boot checks of http.md 12. */
static void test_validation_http(void **state)
{
    (void)state;
    http_refused("http.jwt.algorithm", "RS256", "only HS256, HS384 and HS512");
    http_refused("http.metrics.endpoint", "metrics", "must start with /");
    /* HTTPS needs its files named (no self-signed option). */
    sl_config_t tls;
    char why[512];
    sl_config_defaults(&tls);
    tls.http.tls.enabled = true;
    assert_int_equal(sl_config_validate(&tls, why, sizeof(why)), 0);
    tls.http.tls.key_file[0] = '\0';
    assert_int_equal(sl_config_validate(&tls, why, sizeof(why)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(why, "http.tls.cert_file and http.tls.key_file must both be set");
    http_refused("http.cors.allowed_methods", "GET, FETCH", "http.cors.allowed_methods");
    http_refused("http.cors.allowed_origins", "https://a.example, *", "only be the first");
    sl_config_t cfg;
    char err[512];
    sl_config_defaults(&cfg);
    cfg.http.cors.allow_credentials = true;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "allow_credentials needs explicit origins");
    snprintf(cfg.http.cors.allowed_origins, sizeof(cfg.http.cors.allowed_origins),
             "https://a.example");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    sl_config_defaults(&cfg);
    snprintf(cfg.http.jwt.encoding_secret, sizeof(cfg.http.jwt.encoding_secret), "one");
    snprintf(cfg.http.jwt.decoding_secret, sizeof(cfg.http.jwt.decoding_secret), "two");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "decoding_secret differs");
    /* Iggy's list form from the environment reads as the comma form. */
    sl_config_defaults(&cfg);
    assert_int_equal(sl_config_set(&cfg, sl_config_setting_find("http.cors.allowed_methods"),
                                   "[GET, \"POST\"]", err, sizeof(err)),
                     0);
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    /* The request size default is 2 MB, in decimal units. */
    assert_int_equal(cfg.http.max_request_size, 2000000);
}

/* [telemetry]: the reference's names and defaults, transports and
 * endpoints. */
static void test_telemetry_settings(void **state)
{
    (void)state;
    sl_config_t cfg;
    char err[512];
    sl_config_defaults(&cfg);
    assert_false(cfg.telemetry.enabled);
    assert_string_equal(cfg.telemetry.service_name, "iggy");
    assert_string_equal(cfg.telemetry.logs.transport, "grpc");
    assert_string_equal(cfg.telemetry.logs.endpoint, "http://localhost:7281/v1/logs");
    assert_string_equal(cfg.telemetry.traces.transport, "grpc");
    assert_string_equal(cfg.telemetry.traces.endpoint, "http://localhost:7281/v1/traces");
    assert_int_equal(cfg.telemetry.traces.sample_ppm, 10000);
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    cfg.telemetry.enabled = true;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    snprintf(cfg.telemetry.logs.transport, sizeof(cfg.telemetry.logs.transport), "http");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    snprintf(cfg.telemetry.traces.transport, sizeof(cfg.telemetry.traces.transport), "HTTP");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "telemetry.traces.transport must be grpc or http (got \"HTTP\")");
    http_refused("telemetry.logs.transport", "udp",
                 "telemetry.logs.transport must be grpc or http");
    http_refused("telemetry.traces.endpoint", "localhost:4318",
                 "telemetry.traces.endpoint must be an http:// or https:// URL");
    apply_fails("[telemetry.traces]\nsample_ratio = 2\n",
                "sluiced.toml:2:16: telemetry.traces.sample_ratio: a ratio is 0..1");
    apply_fails("[telemetry.traces]\nsample_ratio = true\n",
                "sluiced.toml:2:16: telemetry.traces.sample_ratio: expected a quoted ratio such "
                "as \"0.01\", got a boolean");
    sl_config_defaults(&cfg);
    apply_ok(&cfg, "[telemetry.traces]\nsample_ratio = 1\n");
    assert_int_equal(cfg.telemetry.traces.sample_ppm, 1000000);
    apply_ok(&cfg, "[telemetry.traces]\nsample_ratio = \"0.25\"\n");
    assert_int_equal(cfg.telemetry.traces.sample_ppm, 250000);
}

static void ratio_ok(const char *text, uint32_t want)
{
    uint32_t ppm = 0;
    const char *why = NULL;
    if (sl_config_parse_ratio_ppm(text, strlen(text), &ppm, &why) != 0)
        fail_msg("\"%s\" refused: %s", text, why);
    assert_int_equal(ppm, want);
    char back[32];
    sl_format_ratio_ppm(ppm, back, sizeof(back));
    uint32_t again = 0;
    assert_int_equal(sl_config_parse_ratio_ppm(back, strlen(back), &again, &why), 0);
    assert_int_equal(again, ppm);
}

static void ratio_refused(const char *text, const char *want)
{
    uint32_t ppm = 7;
    const char *why = NULL;
    assert_int_equal(sl_config_parse_ratio_ppm(text, strlen(text), &ppm, &why),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_int_equal(ppm, 7);
    assert_contains(why, want);
}

static void test_ratios(void **state)
{
    (void)state;
    ratio_ok("0", 0);
    ratio_ok("1", 1000000);
    ratio_ok("1.0", 1000000);
    ratio_ok("0.5", 500000);
    ratio_ok(" 0.01 ", 10000);
    ratio_ok("0.000001", 1);
    ratio_ok("0.999999", 999999);
    ratio_refused("", "expected a ratio");
    ratio_refused(".5", "expected a ratio");
    ratio_refused("0.", "digits after");
    ratio_refused("0.0000001", "at most six decimals");
    ratio_refused("1.5", "at most 1");
    ratio_refused("2", "at most 1");
    ratio_refused("99999999999999999999", "expected a ratio");
    ratio_refused("0.5x", "expected a ratio");
    ratio_refused("-0.5", "expected a ratio");
    char text[32];
    sl_format_ratio_ppm(10000, text, sizeof(text));
    assert_string_equal(text, "0.01");
    sl_format_ratio_ppm(1000000, text, sizeof(text));
    assert_string_equal(text, "1");
    sl_format_ratio_ppm(125, text, sizeof(text));
    assert_string_equal(text, "0.000125");
}

/* websocket.md 3: frame <= message <= message_bus for the sizes set; unset
 * ones follow the others. */
static void test_validation_websocket(void **state)
{
    (void)state;
    http_refused("websocket.max_message_size", "65 MiB", "exceeds message_bus.max_message_size");
    http_refused("websocket.max_frame_size", "65 MiB", "exceeds the message limit");
    sl_config_t cfg;
    char err[512];
    sl_config_defaults(&cfg);
    cfg.websocket.max_message_size = 1u << 20;
    cfg.websocket.max_frame_size = (1u << 20) + 1;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "websocket.max_frame_size (1048577 bytes) exceeds the message limit");
    /* The frame limit follows a smaller message limit, which follows the bus. */
    cfg.websocket.max_frame_size = 0;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    assert_int_equal(sl_config_ws_frame_max(&cfg), 1u << 20);
    sl_config_defaults(&cfg);
    cfg.message_bus.max_message_size = 8u << 20;
    assert_int_equal(sl_config_ws_message_max(&cfg), 8u << 20);
    assert_int_equal(sl_config_ws_frame_max(&cfg), 8u << 20);
}

static void test_validation(void **state)
{
    (void)state;
    sl_config_t cfg;
    char err[512];
    sl_config_defaults(&cfg);
    cfg.tcp.enabled = false;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "tcp.enabled is false");

    sl_config_defaults(&cfg);
    cfg.metadata.checkpoint_interval = 2048;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err,
                    "metadata.checkpoint_interval (2048) exceeds metadata.journal_slots (1024)");

    /* The budgets hold the largest frame. */
    sl_config_defaults(&cfg);
    cfg.message_bus.reply_memory_max = cfg.message_bus.max_message_size - 1;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "must be at least message_bus.max_message_size");
    sl_config_defaults(&cfg);
    cfg.message_bus.receive_memory_max = cfg.message_bus.max_message_size - 1;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    cfg.message_bus.receive_memory_max = cfg.message_bus.max_message_size;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);

    /* Bounds hold for values set in code, too: validation reads the table. */
    sl_config_defaults(&cfg);
    cfg.system.sharding.shards = 65;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "system.sharding.shards: 65 is outside the allowed range 0 .. 64");
    sl_config_defaults(&cfg);
    cfg.heartbeat.interval_us = 0;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "heartbeat.interval: 0 s is outside the allowed range 10 ms .. 1 d");
    sl_config_defaults(&cfg);
    cfg.system.logging.level = (sl_log_level_t)9;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    sl_config_defaults(&cfg);
    cfg.system.path[0] = '\0';
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    sl_config_defaults(&cfg);
    snprintf(cfg.root.username, sizeof(cfg.root.username), "ab");
    snprintf(cfg.root.password, sizeof(cfg.root.password), "abc");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "root.username: must be 3..50 bytes long (got 2)");

    /* The same rules apply through sl_config_load. */
    setenv("IGGY_TCP_ENABLED", "false", 1);
    loaded_t r = load(&cfg, NULL);
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(r.err, "tcp.enabled is false");
    free(r.out);
    unsetenv("IGGY_TCP_ENABLED");
}

static void test_config_set(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    char err[256];
    const sl_setting_t *row = sl_config_setting_find("tcp.max_connections");
    assert_int_equal(sl_config_set(&cfg, row, "42", err, sizeof(err)), 0);
    assert_int_equal(cfg.tcp.max_connections, 42);
    assert_int_equal(sl_config_set(&cfg, row, "0", err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "tcp.max_connections: 0 is outside the allowed range 1 .. 1000000");
    assert_int_equal(cfg.tcp.max_connections, 42);
    row = sl_config_setting_find("websocket.address");
    assert_int_equal(sl_config_set(&cfg, row, "[::]:0", err, sizeof(err)), 0);
    assert_string_equal(cfg.websocket.address.text, "[::]:0");
    assert_int_equal(sl_config_set(&cfg, row, "nope", err, sizeof(err)),
                     -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(cfg.websocket.address.text, "[::]:0");
}

/* --- value parsers ------------------------------------------------------------------------- */

static void test_duration_parse(void **state)
{
    (void)state;
    const struct {
        const char *text;
        uint64_t us;
    } good[] = {
        {"30 s", 30000000},
        {"30s", 30000000},
        {"1 m", 60000000},
        {"500 ms", 500000},
        {"1h 30m", 5400000000},
        {"1h30m", 5400000000},
        {"2 days", 172800000000},
        {"1 d 2 h", 93600000000},
        {"1 w", 604800000000},
        {"250us", 250},
        {"3 \xC2\xB5s", 3},
        {"  5 seconds  ", 5000000},
        {"1 minute 1 sec", 61000000},
        {"2 hours", 7200000000},
        {"0 s", 0},
        {"10msec", 10000},
        {"1hr 1min 1secs", 3661000000},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        uint64_t us = 1;
        const char *why = NULL;
        if (sl_config_parse_duration_us(good[i].text, strlen(good[i].text), &us, &why) != 0)
            fail_msg("\"%s\": %s", good[i].text, why);
        if (us != good[i].us)
            fail_msg("\"%s\": %llu us", good[i].text, (unsigned long long)us);
    }
    const struct {
        const char *text, *why;
    } bad[] = {
        {"", "empty duration"},
        {"   ", "empty duration"},
        {"30", "a unit must follow"},
        {"s", "expected a number"},
        {"30 parsecs", "unknown unit"},
        {"30 S", "unknown unit"},
        {"1.5 s", "a unit must follow"},
        {"-1 s", "expected a number"},
        {"1 s,", "expected a number"},
        {"99999999999999999999 s", "duration too long"},
        {"18446744073709551615 d", "duration too long"},
        {"18446744073709551615 us 1 us", "duration too long"},
        {"30 ns", "unknown unit"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint64_t us;
        const char *why = NULL;
        if (sl_config_parse_duration_us(bad[i].text, strlen(bad[i].text), &us, &why) !=
                -SL_ERR_INVALID_CONFIGURATION ||
            !strstr(why, bad[i].why))
            fail_msg("\"%s\": want %s, got %s", bad[i].text, bad[i].why, why ? why : "ok");
    }
}

static void test_duration_format(void **state)
{
    (void)state;
    const struct {
        uint64_t us;
        const char *text;
    } shown[] = {
        {0, "0 s"},
        {30000000, "30 s"},
        {5400000000, "1 h 30 m"},
        {500000, "500 ms"},
        {90061001001, "1 d 1 h 1 m 1 s 1 ms 1 us"},
        {UINT64_MAX, "213503982 d 8 h 1 m 49 s 551 ms 615 us"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(shown); i++) {
        char buf[64];
        int n = sl_format_duration_us(shown[i].us, buf, sizeof(buf));
        assert_string_equal(buf, shown[i].text);
        assert_int_equal(n, strlen(shown[i].text));
        uint64_t back;
        const char *why;
        assert_int_equal(sl_config_parse_duration_us(buf, strlen(buf), &back, &why), 0);
        assert_true(back == shown[i].us);
    }
    char tiny[8];
    assert_int_equal(sl_format_duration_us(5400000000, tiny, sizeof(tiny)), 8);
    assert_string_equal(tiny, "1 h 30 ");
}

static void test_byte_sizes(void **state)
{
    (void)state;
    const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {
        {"64 MiB", 64ull << 20},
        {"1GB", 1000000000},
        {"1048576", 1048576},
        {"1 kib", 1024},
        {"2 KB", 2000},
        {"7 B", 7},
        {"0", 0},
        {"1 TiB", 1ull << 40},
        {" 3 gib ", 3ull << 30},
        {"5 mb", 5000000},
        {"1tb", 1000000000000ull},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        uint64_t v = 1;
        const char *why = NULL;
        if (sl_config_parse_byte_size(good[i].text, strlen(good[i].text), &v, &why) != 0)
            fail_msg("\"%s\": %s", good[i].text, why);
        if (v != good[i].bytes)
            fail_msg("\"%s\": %llu", good[i].text, (unsigned long long)v);
    }
    const struct {
        const char *text, *why;
    } bad[] = {
        {"", "empty size"},
        {"MiB", "expected a whole number"},
        {"-1 MiB", "expected a whole number"},
        {"1.5 GiB", "unexpected text"},
        {"64 MiB x", "unexpected text"},
        {"64 MiB 1", "unexpected text"},
        {"1 XB", "unknown unit"},
        {"1 K", "unknown unit"},
        {"20000000 TiB", "size too large"},
        {"99999999999999999999", "size too large"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        uint64_t v;
        const char *why = NULL;
        if (sl_config_parse_byte_size(bad[i].text, strlen(bad[i].text), &v, &why) !=
                -SL_ERR_INVALID_CONFIGURATION ||
            !strstr(why, bad[i].why))
            fail_msg("\"%s\": want %s, got %s", bad[i].text, bad[i].why, why ? why : "ok");
    }
    const struct {
        uint64_t bytes;
        const char *text;
    } shown[] = {
        {0, "0 B"},
        {64ull << 20, "64 MiB"},
        {1ull << 30, "1 GiB"},
        {1000000, "1 MB"},
        {1000, "1 KB"},
        {1536, "1536 B"},
        {3ull << 40, "3 TiB"},
        {1023, "1023 B"},
        {2048000, "2000 KiB"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(shown); i++) {
        char buf[64];
        sl_format_byte_size(shown[i].bytes, buf, sizeof(buf));
        assert_string_equal(buf, shown[i].text);
        uint64_t back;
        const char *why;
        assert_int_equal(sl_config_parse_byte_size(buf, strlen(buf), &back, &why), 0);
        assert_true(back == shown[i].bytes);
    }
}

static void test_addresses(void **state)
{
    (void)state;
    const struct {
        const char *text, *canonical, *host;
        uint16_t port;
        bool ipv6;
    } good[] = {
        {"127.0.0.1:8090", "127.0.0.1:8090", "127.0.0.1", 8090, false},
        {"0.0.0.0:0", "0.0.0.0:0", "0.0.0.0", 0, false},
        {"10.1.2.3:65535", "10.1.2.3:65535", "10.1.2.3", 65535, false},
        {"[::1]:8090", "[::1]:8090", "::1", 8090, true},
        {"[0:0:0:0:0:0:0:1]:1", "[::1]:1", "::1", 1, true},
        {"[::]:3000", "[::]:3000", "::", 3000, true},
        {"[fe80::1:2]:08090", "[fe80::1:2]:8090", "fe80::1:2", 8090, true},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(good); i++) {
        sl_config_address_t a;
        const char *why = NULL;
        if (sl_parse_address(good[i].text, strlen(good[i].text), &a, &why) != 0)
            fail_msg("\"%s\": %s", good[i].text, why);
        assert_string_equal(a.text, good[i].canonical);
        assert_string_equal(a.host, good[i].host);
        assert_int_equal(a.port, good[i].port);
        assert_int_equal(a.ipv6, good[i].ipv6);
        if (a.ipv6) {
            const struct sockaddr_in6 *sa = (const struct sockaddr_in6 *)&a.sockaddr;
            assert_int_equal(sa->sin6_family, AF_INET6);
            assert_int_equal(ntohs(sa->sin6_port), good[i].port);
            assert_int_equal(a.sockaddr_len, sizeof(*sa));
        } else {
            const struct sockaddr_in *sa = (const struct sockaddr_in *)&a.sockaddr;
            assert_int_equal(sa->sin_family, AF_INET);
            assert_int_equal(ntohs(sa->sin_port), good[i].port);
            assert_int_equal(a.sockaddr_len, sizeof(*sa));
        }
    }
    const struct {
        const char *text, *why;
    } bad[] = {
        {"", "empty address"},
        {"localhost:8090", "names are not resolved"},
        {"127.0.0.1", "expected host:port"},
        {"127.0.0.1:", "missing port"},
        {"127.0.0.1:65536", "0..65535"},
        {"127.0.0.1:80a", "0..65535"},
        {"127.0.0.1:-1", "0..65535"},
        {"127.0.0.1:123456", "0..65535"},
        {"::1:8090", "in brackets"},
        {"[::1]8090", "expected ':' and a port"},
        {"[::1", "missing ']'"},
        {"[127.0.0.1]:80", "invalid IPv6 address"},
        {"[::1%eth0]:80", "invalid IPv6 address"},
        {"1.2.3:80", "IPv4 address"},
        {":8090", "IPv4 address"},
        {"256.0.0.1:80", "IPv4 address"},
        {"127.0.0.1:8090 ", "0..65535"},
        {"[aaaa:bbbb:cccc:dddd:eeee:ffff:1111:2222:3333:4444:5555:6666:7777:8888]:1",
         "not an address"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        sl_config_address_t a;
        const char *why = NULL;
        if (sl_parse_address(bad[i].text, strlen(bad[i].text), &a, &why) !=
                -SL_ERR_INVALID_CONFIGURATION ||
            !strstr(why, bad[i].why))
            fail_msg("\"%s\": want %s, got %s", bad[i].text, bad[i].why, why ? why : "ok");
    }
}

/* --- printing ------------------------------------------------------------------------------ */

static void set_or_fail(sl_config_t *cfg, const char *name, const char *text)
{
    char err[256];
    if (sl_config_set(cfg, sl_config_setting_find(name), text, err, sizeof(err)))
        fail_msg("%s", err);
}

static void assert_same_settings(const sl_config_t *a, const sl_config_t *b, bool with_env_only)
{
    size_t n;
    const sl_setting_t *rows = sl_config_settings(&n);
    for (size_t i = 0; i < n; i++) {
        /* Secrets print as comments ("<hidden>"): they do not come back. */
        if (!with_env_only && (rows[i].flags & (SL_SETTING_ENV_ONLY | SL_SETTING_SECRET)))
            continue;
        char va[32768], vb[32768];
        sl_config_format(a, &rows[i], true, va, sizeof(va));
        sl_config_format(b, &rows[i], true, vb, sizeof(vb));
        if (strcmp(va, vb) != 0)
            fail_msg("%s: %s != %s", rows[i].name, va, vb);
        assert_memory_equal((const char *)a + rows[i].offset, (const char *)b + rows[i].offset,
                            rows[i].size);
    }
}

/* A non-default value in every row, strings with every escape. */
static void set_every_row(sl_config_t *cfg)
{
    set_or_fail(cfg, "tcp.enabled", "true");
    set_or_fail(cfg, "tcp.address", "[::1]:1234");
    set_or_fail(cfg, "tcp.max_connections", "77");
    set_or_fail(cfg, "tcp.login_timeout", "1m 1s");
    set_or_fail(cfg, "tcp.frame_timeout", "2 s");
    set_or_fail(cfg, "tcp.reply_timeout", "3 s");
    set_or_fail(cfg, "quic.enabled", "true");
    set_or_fail(cfg, "quic.address", "10.0.0.1:1");
    set_or_fail(cfg, "http.enabled", "false");
    set_or_fail(cfg, "http.address", "0.0.0.0:2");
    set_or_fail(cfg, "http.max_request_size", "1 MiB");
    set_or_fail(cfg, "http.max_connections", "9");
    set_or_fail(cfg, "http.idle_timeout", "5 s");
    set_or_fail(cfg, "http.sessions", "3");
    set_or_fail(cfg, "http.web_ui", "true");
    set_or_fail(cfg, "http.cors.enabled", "false");
    set_or_fail(cfg, "http.cors.allowed_methods", "GET");
    set_or_fail(cfg, "http.cors.allowed_origins", "https://a.example, https://b.example");
    set_or_fail(cfg, "http.cors.allowed_headers", "x-a");
    set_or_fail(cfg, "http.cors.exposed_headers", "");
    set_or_fail(cfg, "http.cors.allow_credentials", "true");
    set_or_fail(cfg, "http.cors.allow_private_network", "true");
    set_or_fail(cfg, "http.jwt.algorithm", "HS512");
    set_or_fail(cfg, "http.jwt.issuer", "me");
    set_or_fail(cfg, "http.jwt.audience", "you");
    set_or_fail(cfg, "http.jwt.valid_issuers", "me, them");
    set_or_fail(cfg, "http.jwt.valid_audiences", "you");
    set_or_fail(cfg, "http.jwt.access_token_expiry", "2 m");
    set_or_fail(cfg, "http.jwt.clock_skew", "0 s");
    set_or_fail(cfg, "http.jwt.not_before", "1 s");
    set_or_fail(cfg, "http.jwt.encoding_secret", "se\"cret");
    set_or_fail(cfg, "http.jwt.decoding_secret", "se\"cret");
    set_or_fail(cfg, "http.jwt.use_base64_secret", "true");
    set_or_fail(cfg, "http.metrics.enabled", "false");
    set_or_fail(cfg, "http.metrics.endpoint", "/m");
    set_or_fail(cfg, "http.tls.enabled", "true");
    set_or_fail(cfg, "http.tls.cert_file", "h.pem");
    set_or_fail(cfg, "http.tls.key_file", "h.key");
    set_or_fail(cfg, "websocket.enabled", "false");
    set_or_fail(cfg, "websocket.address", "[::]:3");
    set_or_fail(cfg, "websocket.max_message_size", "1 MiB");
    set_or_fail(cfg, "websocket.max_frame_size", "64 KiB");
    set_or_fail(cfg, "websocket.accept_unmasked_frames", "true");
    set_or_fail(cfg, "websocket.tls.enabled", "true");
    set_or_fail(cfg, "websocket.tls.self_signed", "false");
    set_or_fail(cfg, "websocket.tls.cert_file", "w.pem");
    set_or_fail(cfg, "websocket.tls.key_file", "w.key");
    set_or_fail(cfg, "heartbeat.enabled", "false");
    set_or_fail(cfg, "heartbeat.interval", "2h 3m 4s 5ms 6us");
    set_or_fail(cfg, "data_maintenance.messages.interval", "2 s");
    set_or_fail(cfg, "tcp.tls.enabled", "true");
    set_or_fail(cfg, "tcp.tls.self_signed", "false");
    set_or_fail(cfg, "tcp.tls.cert_file", "certs/a \"b\".pem");
    set_or_fail(cfg, "tcp.tls.key_file", "");
    set_or_fail(cfg, "message_bus.handshake_grace", "250 ms");
    set_or_fail(cfg, "message_bus.max_message_size", "1048577");
    set_or_fail(cfg, "message_bus.frame_pool_idle_max", "0");
    set_or_fail(cfg, "message_bus.receive_memory_max", "3 MiB");
    set_or_fail(cfg, "message_bus.reply_memory_max", "1048577");
    set_or_fail(cfg, "metadata.clients_table_max", "2");
    set_or_fail(cfg, "metadata.checkpoint_interval", "7");
    set_or_fail(cfg, "metadata.journal_slots", "9");
    set_or_fail(cfg, "personal_access_token.max_tokens_per_user", "5");
    set_or_fail(cfg, "server.per_connection_work_max", "1024");
    set_or_fail(cfg, "server.password_hash_threads", "2");
    set_or_fail(cfg, "server.password_hash_queue_max", "4096");
    set_or_fail(cfg, "telemetry.enabled", "true");
    set_or_fail(cfg, "telemetry.service_name", "sluice \"east\"");
    set_or_fail(cfg, "telemetry.logs.transport", "http");
    set_or_fail(cfg, "telemetry.logs.endpoint", "https://collector:4318/v1/logs");
    set_or_fail(cfg, "telemetry.traces.transport", "http");
    set_or_fail(cfg, "telemetry.traces.endpoint", "http://[::1]:4318/v1/traces");
    set_or_fail(cfg, "telemetry.traces.sample_ratio", "0.000125");
    set_or_fail(cfg, "system.path", "dir \"q\" \\ back\ttab\nnl\x01 \xC3\xA9 '#");
    set_or_fail(cfg, "system.group_access", "true");
    set_or_fail(cfg, "system.logging.level", "warn");
    set_or_fail(cfg, "system.logging.repeat_burst", "0");
    set_or_fail(cfg, "system.logging.repeat_window", "1 m");
    set_or_fail(cfg, "system.partition.validate_checksum", "false");
    set_or_fail(cfg, "system.partition.journal_memory_max", "2 MiB");
    set_or_fail(cfg, "system.sharding.shards", "64");
    set_or_fail(cfg, "system.encryption.enabled", "true");
    set_or_fail(cfg, "system.encryption.key", "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=");
    set_or_fail(cfg, "system.encryption.previous_key",
                "oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8=");
    set_or_fail(cfg, "system.encryption.tail_cache_max", "0");
    set_or_fail(cfg, "cluster.enabled", "true");
    set_or_fail(cfg, "cluster.name", "prod \"eu\"");
    set_or_fail(cfg, "cluster.heartbeat_timeout", "3 s");
    set_or_fail(cfg, "cluster.commit_broadcast_interval", "250 ms");
    set_or_fail(cfg, "cluster.auth.enabled", "true");
    set_or_fail(cfg, "cluster.auth.shared_secret", "0123456789abcdef0123456789abcdef");
    set_or_fail(cfg, "cluster.auth.previous_shared_secret", "fedcba9876543210fedcba9876543210");
    set_or_fail(cfg, "root.username", "admin");
    set_or_fail(cfg, "root.password", "pa\"ss");
}

/* [system.encryption]: a key must be base64 of exactly 32 bytes, required
 * when enabled; the refusal names the setting, never the text. */
static void encryption_fails(const char *toml, const char *want)
{
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    apply_ok(&cfg, toml);
    char err[512];
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    if (!strstr(err, want))
        fail_msg("expected \"%s\" in \"%s\"", want, err);
    assert_null(strstr(err, "c2VjcmV0"));
    assert_null(strstr(err, "AQIDBAUG"));
}

static void test_encryption_keys(void **state)
{
    (void)state;
    encryption_fails("[system.encryption]\nenabled = true\n", "system.encryption.key is empty");
    encryption_fails("[system.encryption]\nenabled = true\nkey = \"c2VjcmV0!\"\n",
                     "system.encryption.key is not valid base64");
    encryption_fails("[system.encryption]\nenabled = true\nkey = \"c2VjcmV0\"\n",
                     "system.encryption.key decodes to 6 bytes; an AES-256 key is exactly 32");
    encryption_fails("[system.encryption]\nenabled = true\n"
                     "key = \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n"
                     "previous_key = \"AQIDBAUG\"\n",
                     "system.encryption.previous_key decodes to 6 bytes");
    encryption_fails("[system.encryption]\n"
                     "previous_key = \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n",
                     "previous_key is set but system.encryption.enabled is false");
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    assert_false(cfg.system.encryption.enabled);
    apply_ok(&cfg, "[system.encryption]\nenabled = true\n"
                   "key = \"AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n");
    char err[256];
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    /* A key that is set but unused (encryption off) is still checked. */
    sl_config_defaults(&cfg);
    apply_ok(&cfg, "[system.encryption]\nkey = \"nope\"\n");
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
}

static void test_print_round_trip(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    set_every_row(&cfg);

    size_t n;
    const sl_setting_t *rows = sl_config_settings(&n);
    sl_config_t defaults;
    sl_config_defaults(&defaults);
    for (size_t i = 0; i < n; i++) {
        char va[512], vb[512];
        sl_config_format(&cfg, &rows[i], true, va, sizeof(va));
        sl_config_format(&defaults, &rows[i], true, vb, sizeof(vb));
        /* tcp.enabled must stay true (TCP is always served). */
        if (strcmp(va, vb) == 0 && strcmp(rows[i].name, "tcp.enabled") != 0)
            fail_msg("%s is still its default", rows[i].name);
    }

    char *text = print_to_string(&cfg);
    /* Secrets are hidden, other values shown; every row is named with its variable. */
    assert_contains(text, "# root.password = \"<hidden>\"");
    assert_null(strstr(text, "pa\\\"ss"));
    assert_contains(text, "# root.username = \"admin\"");
    assert_contains(text, "# encoding_secret = \"<hidden>\"");
    assert_null(strstr(text, "se\\\"cret"));
    assert_contains(text, "# key = \"<hidden>\"");
    assert_contains(text, "# previous_key = \"<hidden>\"");
    assert_null(strstr(text, "AQIDBAUGBwgJ"));
    assert_null(strstr(text, "oKGio6SlpqeoqaqrrK2u"));
    for (size_t i = 0; i < n; i++)
        assert_contains(text, rows[i].env);
    assert_contains(text, "[system.sharding]\n");
    assert_contains(text, "interval = \"2 h 3 m 4 s 5 ms 6 us\"\n");
    assert_contains(text, "max_message_size = \"1048577 B\"\n");

    /* A set secret prints hidden, as a comment. */
    assert_contains(text, "# shared_secret = \"<hidden>\"\n");
    assert_null(strstr(text, "0123456789abcdef"));

    /* Printing then parsing gives the same settings. */
    sl_config_t back;
    sl_config_defaults(&back);
    apply_ok(&back, text);
    assert_same_settings(&cfg, &back, false);
    char err[256];
    /* The roster is the one thing the file lacks for cluster mode. */
    set_or_fail(&back, "cluster.auth.enabled", "false");
    set_or_fail(&back, "cluster.enabled", "false");
    /* The printed file leaves the hidden keys out; an operator passes them
     * separately (the environment), without which enabled = true refuses. */
    assert_int_not_equal(sl_config_validate(&back, err, sizeof(err)), 0);
    assert_contains(err, "system.encryption.key is empty");
    memcpy(&back.system.encryption, &cfg.system.encryption, sizeof(back.system.encryption));
    assert_int_equal(sl_config_validate(&back, err, sizeof(err)), 0);
    free(text);

    /* Defaults print and read back as defaults. */
    text = print_to_string(&defaults);
    sl_config_defaults(&back);
    set_or_fail(&back, "tcp.max_connections", "3");
    apply_ok(&back, text);
    assert_same_settings(&defaults, &back, true);
    assert_contains(text, "# root.password = \"\"");
    free(text);

    char value[64];
    assert_int_equal(sl_config_format(&cfg, sl_config_setting_find("root.password"), false, value,
                                      sizeof(value)),
                     10);
    assert_string_equal(value, "\"<hidden>\"");
    sl_config_format(&cfg, sl_config_setting_find("root.password"), true, value, sizeof(value));
    assert_string_equal(value, "\"pa\\\"ss\"");
}

static void test_print_config_flag(void **state)
{
    (void)state;
    setenv("IGGY_ROOT_USERNAME", "admin", 1);
    setenv("IGGY_ROOT_PASSWORD", "topsecret", 1);
    setenv("IGGY_SYSTEM_SHARDING_SHARDS", "2", 1);
    sl_config_t cfg;
    loaded_t r = load(&cfg, (const char *[]){"--print-config", NULL});
    assert_int_equal(r.rc, 0);
    assert_true(r.exit_now);
    assert_contains(r.out, "[tcp]\n");
    assert_contains(r.out, "shards = 2\n");
    assert_contains(r.out, "# root.password = \"<hidden>\"");
    assert_null(strstr(r.out, "topsecret"));
    sl_config_t back;
    sl_config_defaults(&back);
    apply_ok(&back, r.out);
    assert_same_settings(&cfg, &back, false);
    free(r.out);

    /* An invalid configuration is an error, not a print. */
    setenv("IGGY_SYSTEM_SHARDING_SHARDS", "99", 1);
    r = load(&cfg, (const char *[]){"--print-config", NULL});
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_false(r.exit_now);
    assert_string_equal(r.out, "");
    free(r.out);
    clear_env(NULL);
}

/* --- the cluster roster ------------------------------------------------------------------- */

static const char roster[] =
    "[cluster]\nenabled = true\nname = \"c1\"\n"
    "[[cluster.nodes]]\nname = \"n0\"\nip = \"127.0.0.1\"\nreplica_id = 0\n"
    "ports = { tcp = 8090, tcp_replica = 9090 }\n"
    "[[cluster.nodes]]\nname = \"n1\"\nip = \"127.0.0.1\"\nreplica_id = 1\n"
    "[cluster.nodes.ports]\ntcp = 8091\ntcp_replica = 9091\n"
    "[[cluster.nodes]]\nname = \"n2\"\nip = \"::1\"\nreplica_id = 2\n"
    "ports = { tcp = 8090, tcp_replica = 9090, http = 3000 }\n";

static void test_node_table_shape(void **state)
{
    (void)state;
    size_t n;
    const sl_setting_t *rows = sl_config_node_settings(&n);
    assert_true(n >= 8);
    for (size_t i = 0; i < n; i++) {
        const sl_setting_t *r = &rows[i];
        char env[128] = "IGGY_CLUSTER_NODES_<i>_";
        const char *key = r->name + strlen("cluster.nodes.");
        assert_true(strncmp(r->name, "cluster.nodes.", 14) == 0);
        size_t at = strlen(env);
        for (size_t k = 0; key[k]; k++)
            env[at++] = key[k] == '.' ? '_' : (char)toupper((unsigned char)key[k]);
        env[at] = '\0';
        assert_string_equal(r->env, env);
        assert_true(r->offset + r->size <= sizeof(sl_config_cluster_node_t));
        assert_true(strlen(r->description) > 10 &&
                    r->description[strlen(r->description) - 1] == '.');
        assert_null(sl_config_setting_find(r->name));
    }
}

static void test_cluster_roster(void **state)
{
    (void)state;
    sl_config_t cfg;
    sl_config_defaults(&cfg);
    assert_false(cfg.cluster.enabled);
    assert_string_equal(cfg.cluster.name, "iggy-cluster");
    assert_int_equal(cfg.cluster.nodes_count, 0);
    assert_null(sl_config_cluster_self(&cfg));
    apply_ok(&cfg, roster);
    assert_int_equal(cfg.cluster.nodes_count, 3);
    assert_string_equal(cfg.cluster.nodes[1].name, "n1");
    assert_int_equal(cfg.cluster.nodes[1].ports.tcp, 8091);
    assert_int_equal(cfg.cluster.nodes[1].ports.tcp_replica, 9091);
    assert_int_equal(cfg.cluster.nodes[2].ports.http, 3000);
    assert_string_equal(cfg.cluster.nodes[2].ip, "::1");
    /* The environment overrides an entry and can add one. */
    setenv("IGGY_CLUSTER_NODES_1_PORTS_TCP", "7001", 1);
    setenv("IGGY_CLUSTER_NODES_3_NAME", "n3", 1);
    setenv("IGGY_CLUSTER_NODES_3_IP", "127.0.0.2", 1);
    setenv("IGGY_CLUSTER_NODES_3_REPLICA_ID", "3", 1);
    setenv("IGGY_CLUSTER_NODES_3_PORTS_TCP", "8093", 1);
    setenv("IGGY_CLUSTER_NODES_3_PORTS_TCP_REPLICA", "9093", 1);
    char err[512];
    assert_int_equal(sl_config_apply_env(&cfg, err, sizeof(err)), 0);
    assert_int_equal(cfg.cluster.nodes_count, 4);
    assert_int_equal(cfg.cluster.nodes[1].ports.tcp, 7001);
    assert_string_equal(cfg.cluster.nodes[3].ip, "127.0.0.2");
    /* Validation wants to know which node this is. */
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(err, "--replica-id N");
    cfg.replica_id_given = true;
    cfg.replica_id = 2;
    assert_int_equal(sl_config_validate(&cfg, err, sizeof(err)), 0);
    assert_ptr_equal(sl_config_cluster_self(&cfg), &cfg.cluster.nodes[2]);
    setenv("IGGY_CLUSTER_NODES_16_NAME", "n16", 1);
    assert_int_equal(sl_config_apply_env(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "IGGY_CLUSTER_NODES_16_NAME: more than 16 [[cluster.nodes]] entries "
                             "(indexes 0 .. 15)");
    unsetenv("IGGY_CLUSTER_NODES_16_NAME");
    setenv("IGGY_CLUSTER_NODES_3_PORTS_TCP", "x", 1);
    assert_int_equal(sl_config_apply_env(&cfg, err, sizeof(err)), -SL_ERR_INVALID_CONFIGURATION);
    assert_string_equal(err, "IGGY_CLUSTER_NODES_3_PORTS_TCP=\"x\" (cluster.nodes[3].ports.tcp): "
                             "invalid character in an integer");
}

/* Each rule of validate_cluster, with its message. */
static void expect_invalid(const char *extra, const char *replica_id, const char *want)
{
    char path[] = "/tmp/sluice-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char text[4096];
    snprintf(text, sizeof(text), "%s%s", roster, extra);
    write_file(path, text);
    const char *args[] = {"--config", path, replica_id ? "--replica-id" : NULL, replica_id, NULL};
    sl_config_t cfg;
    loaded_t r = load(&cfg, args);
    unlink(path);
    free(r.out);
    if (r.rc != -SL_ERR_INVALID_CONFIGURATION)
        fail_msg("accepted <<%s>> (replica id %s), expected %s", extra, replica_id, want);
    assert_contains(r.err, want);
}

/* The roster with keys added to its [cluster] table. */
static void expect_invalid_timing(const char *keys, const char *want)
{
    char path[] = "/tmp/sluice-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    const char *rest = roster + strlen("[cluster]\n");
    char text[4096];
    snprintf(text, sizeof(text), "[cluster]\n%s%s", keys, rest);
    write_file(path, text);
    const char *args[] = {"--config", path, "--replica-id", "0", NULL};
    sl_config_t cfg;
    loaded_t r = load(&cfg, args);
    unlink(path);
    free(r.out);
    assert_int_equal(r.rc, -SL_ERR_INVALID_CONFIGURATION);
    assert_contains(r.err, want);
}

/* --format-cluster: set with --replica-id, refused without it. */
static void test_format_cluster_flag(void **state)
{
    (void)state;
    char path[] = "/tmp/sluice-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, roster);
    sl_config_t cfg;
    const char *with[] = {"--config", path, "--replica-id", "1", "--format-cluster", NULL};
    loaded_t r = load(&cfg, with);
    free(r.out);
    assert_int_equal(r.rc, 0);
    assert_true(cfg.format_cluster);
    const char *plain[] = {"--config", path, "--replica-id", "1", NULL};
    r = load(&cfg, plain);
    free(r.out);
    assert_int_equal(r.rc, 0);
    assert_false(cfg.format_cluster);
    const char *alone[] = {"--config", path, "--format-cluster", NULL};
    r = load(&cfg, alone);
    free(r.out);
    unlink(path);
    assert_int_not_equal(r.rc, 0);
    assert_contains(r.err, "--format-cluster is for a cluster node: give --replica-id N");
}

static void test_cluster_validation(void **state)
{
    (void)state;
    expect_invalid_timing("heartbeat_timeout = \"2 s\"\ncommit_broadcast_interval = \"600 ms\"\n",
                          "cluster.heartbeat_timeout (2000 ms) must be at least 4 x "
                          "cluster.commit_broadcast_interval (600 ms)");
    expect_invalid_timing("heartbeat_timeout = \"1 s\"\n", "cluster.heartbeat_timeout");
    expect_invalid("", NULL, "start sluiced with --replica-id N");
    expect_invalid("", "3", "--replica-id 3 is not in the roster: its replica ids run 0 .. 2");
    expect_invalid("", "x", "--replica-id 'x': expected a replica id 0 .. 15");
    expect_invalid("[[cluster.nodes]]\nname = \"n0\"\nip = \"127.0.0.9\"\nreplica_id = 3\n"
                   "ports = { tcp = 1, tcp_replica = 2 }\n",
                   "0", "cluster.nodes[0] and cluster.nodes[3] have the same name \"n0\"");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.9\"\nreplica_id = 1\n"
                   "ports = { tcp = 1, tcp_replica = 2 }\n",
                   "0", "cluster.nodes[1] and cluster.nodes[3] have the same replica_id 1");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.9\"\nreplica_id = 4\n"
                   "ports = { tcp = 1, tcp_replica = 2 }\n",
                   "0", "cluster.nodes[3].replica_id: 4 is not below the number of nodes (4)");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"localhost\"\nreplica_id = 3\n"
                   "ports = { tcp = 1, tcp_replica = 2 }\n",
                   "0", "cluster.nodes[3].ip: \"localhost\" is not an IPv4 or IPv6 address");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.1\"\nreplica_id = 3\n"
                   "ports = { tcp = 9091, tcp_replica = 2 }\n",
                   "0",
                   "cluster.nodes[1].ports.tcp_replica and cluster.nodes[3].ports.tcp both "
                   "claim 127.0.0.1:9091");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.3\"\nreplica_id = 3\n"
                   "ports = { tcp = 5, tcp_replica = 5 }\n",
                   "0",
                   "cluster.nodes[3].ports.tcp and cluster.nodes[3].ports.tcp_replica both "
                   "claim 127.0.0.3:5");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.3\"\nreplica_id = 3\n"
                   "ports = { tcp = 5 }\n",
                   "0",
                   "cluster.nodes[3].ports.tcp_replica is missing: every [[cluster.nodes]] "
                   "entry needs it (IGGY_CLUSTER_NODES_3_PORTS_TCP_REPLICA)");
    expect_invalid("[[cluster.nodes]]\nname = \"n3\"\nip = \"127.0.0.3\"\nreplica_id = 3\n"
                   "ports = { tcp = 0, tcp_replica = 5 }\n",
                   "0", "cluster.nodes[3].ports.tcp: port 0 is refused in the roster");
    expect_invalid("[cluster.auth]\nenabled = true\n", "0",
                   "cluster.auth.enabled is true but cluster.auth.shared_secret is empty");
    expect_invalid("[cluster.auth]\nshared_secret = \"short\"\n", "0",
                   "cluster.auth.shared_secret: must be 32..255 bytes long (got 5)");
    expect_invalid("[cluster.auth]\nprevious_shared_secret = \"0123456789\"\n", "0",
                   "cluster.auth.previous_shared_secret: must be 32..255 bytes long (got 10)");
    expect_invalid("[quic]\nenabled = true\n", "0",
                   "cluster.nodes[0].ports.quic is needed: quic.enabled is true");
    expect_invalid("[cluster.nodes.ports]\ntcp = 1\n", "0",
                   "duplicate key 'cluster.nodes.2.ports.tcp'");
    /* Without cluster mode the flag is a mistake, and the roster is inert. */
    setenv("IGGY_CLUSTER_ENABLED", "false", 1);
    expect_invalid("", "0", "--replica-id 0 is for cluster mode, but cluster.enabled is false");
}

/* --replica-id picks the entry, and the client listener takes its port. */
static void test_cluster_load(void **state)
{
    (void)state;
    char path[] = "/tmp/sluice-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, roster);
    const char *args[] = {"--config", path, "--replica-id=1", NULL};
    sl_config_t cfg;
    loaded_t r = load(&cfg, args);
    if (r.rc)
        fail_msg("%s", r.err);
    free(r.out);
    assert_true(cfg.replica_id_given);
    assert_int_equal(cfg.replica_id, 1);
    assert_string_equal(cfg.tcp.address.text, "127.0.0.1:8091");
    assert_int_equal(cfg.tcp.address.port, 8091);
    /* Printed and read back, the roster is the same. */
    char *text = print_to_string(&cfg);
    assert_contains(text, "[[cluster.nodes]]\n# Node name, unique in the roster. Env: "
                          "IGGY_CLUSTER_NODES_2_NAME\nname = \"n2\"\n");
    sl_config_t back;
    sl_config_defaults(&back);
    apply_ok(&back, text);
    assert_int_equal(back.cluster.nodes_count, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_string_equal(back.cluster.nodes[i].name, cfg.cluster.nodes[i].name);
        assert_string_equal(back.cluster.nodes[i].ip, cfg.cluster.nodes[i].ip);
        assert_memory_equal(&back.cluster.nodes[i].ports, &cfg.cluster.nodes[i].ports,
                            sizeof(cfg.cluster.nodes[i].ports));
    }
    free(text);
    unlink(path);
}

/* --- the sample file and the docs follow the table ----------------------------------------- */

static void test_sample_config_is_current(void **state)
{
    (void)state;
    size_t len;
    char *sample = read_source_file("config/sluiced.toml", &len);
    sl_config_t defaults;
    sl_config_defaults(&defaults);
    char *printed = print_to_string(&defaults);
    /* Regenerate with: sluiced --print-config > config/sluiced.toml (no IGGY_* set). */
    if (strcmp(sample, printed) != 0)
        fail_msg("config/sluiced.toml differs from the defaults' --print-config output");
    sl_config_t back;
    sl_config_defaults(&back);
    apply_ok(&back, sample);
    assert_same_settings(&defaults, &back, true);
    free(printed);
    free(sample);
}

static void test_docs_name_every_setting(void **state)
{
    (void)state;
    size_t len, n;
    char *docs = read_source_file("docs/configuration.md", &len);
    const sl_setting_t *rows = sl_config_settings(&n);
    for (size_t i = 0; i < n; i++) {
        char want[160];
        snprintf(want, sizeof(want), "`%s`", rows[i].name);
        if (!strstr(docs, want))
            fail_msg("docs/configuration.md does not mention %s", want);
        snprintf(want, sizeof(want), "`%s`", rows[i].env);
        if (!strstr(docs, want))
            fail_msg("docs/configuration.md does not mention %s", want);
    }
    rows = sl_config_node_settings(&n);
    for (size_t i = 0; i < n; i++) {
        char want[160];
        snprintf(want, sizeof(want), "`%s`", rows[i].name + strlen("cluster.nodes."));
        if (!strstr(docs, want))
            fail_msg("docs/configuration.md does not mention %s", want);
        snprintf(want, sizeof(want), "`%s`", rows[i].env);
        if (!strstr(docs, want))
            fail_msg("docs/configuration.md does not mention %s", want);
    }
    const char *flags[] = {"--config",       "--with-default-root-credentials",
                           "--print-config", "--help",
                           "--version",      "--replica-id"};
    for (size_t i = 0; i < SL_ARRAY_LEN(flags); i++)
        assert_contains(docs, flags[i]);
    free(docs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_table_shape, clear_env),
        cmocka_unit_test_setup(test_defaults, clear_env),
        cmocka_unit_test_setup(test_file_overrides, clear_env),
        cmocka_unit_test_setup(test_file_errors, clear_env),
        cmocka_unit_test_setup(test_apply_file, clear_env),
        cmocka_unit_test_setup(test_env_overrides, clear_env),
        cmocka_unit_test_setup(test_precedence, clear_env),
        cmocka_unit_test_setup(test_flags, clear_env),
        cmocka_unit_test_setup(test_root_credentials, clear_env),
        cmocka_unit_test_setup(test_validation, clear_env),
        cmocka_unit_test_setup(test_validation_http, clear_env),
        cmocka_unit_test_setup(test_validation_websocket, clear_env),
        cmocka_unit_test_setup(test_config_set, clear_env),
        cmocka_unit_test_setup(test_duration_parse, clear_env),
        cmocka_unit_test_setup(test_duration_format, clear_env),
        cmocka_unit_test_setup(test_byte_sizes, clear_env),
        cmocka_unit_test_setup(test_addresses, clear_env),
        cmocka_unit_test_setup(test_telemetry_settings, clear_env),
        cmocka_unit_test_setup(test_ratios, clear_env),
        cmocka_unit_test_setup(test_print_round_trip, clear_env),
        cmocka_unit_test_setup(test_encryption_keys, clear_env),
        cmocka_unit_test_setup(test_node_table_shape, clear_env),
        cmocka_unit_test_setup(test_cluster_roster, clear_env),
        cmocka_unit_test_setup(test_cluster_validation, clear_env),
        cmocka_unit_test_setup(test_format_cluster_flag, clear_env),
        cmocka_unit_test_setup(test_cluster_load, clear_env),
        cmocka_unit_test_setup(test_print_config_flag, clear_env),
        cmocka_unit_test_setup(test_sample_config_is_current, clear_env),
        cmocka_unit_test_setup(test_docs_name_every_setting, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
