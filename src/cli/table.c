/* The command table of the sluice tool: every command, its aliases, arguments,
 * options and help text, once. Names and aliases follow Apache Iggy's `iggy`
 * CLI so its users find their way; the parser, --help and the bash completion
 * are all driven from here. */
#include "cli/cli.h"

#include "base/limits.h"

#define ARGS(...) ((const cli_arg_t[]){__VA_ARGS__, {0}})
#define OPTS(...) ((const cli_opt_t[]){__VA_ARGS__, {0}})
#define CMD(name, aliases, summary, details, args, opts, handler)                                  \
    {                                                                                              \
        name, aliases, summary, details, args, opts, NULL, handler, CLI_NEEDS_LOGIN                \
    }

/* Length rules of the protocol (base/limits.h), checked by the parser. */
#define NAME_LEN     SL_NAME_LEN_MIN, SL_NAME_LEN_MAX
#define USERNAME_LEN SL_USERNAME_LEN_MIN, SL_USERNAME_LEN_MAX
#define PASSWORD_LEN SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX
#define NO_LEN       0, 0

#define A_STREAM                                                                                   \
    {                                                                                              \
        "STREAM", 0, NULL, "stream id or name", NAME_LEN                                           \
    }
#define A_TOPIC                                                                                    \
    {                                                                                              \
        "TOPIC", 0, NULL, "topic id or name", NAME_LEN                                             \
    }
#define A_GROUP                                                                                    \
    {                                                                                              \
        "GROUP", 0, NULL, "consumer group id or name", NAME_LEN                                    \
    }
#define A_USER                                                                                     \
    {                                                                                              \
        "USER", 0, NULL, "user id or username", NAME_LEN                                           \
    }
#define A_PARTITION                                                                                \
    {                                                                                              \
        "PARTITION", 0, NULL, "partition id", NO_LEN                                               \
    }
#define A_CONSUMER                                                                                 \
    {                                                                                              \
        "CONSUMER", 0, NULL, "consumer id or name (a group's when --kind consumer-group)",         \
            NAME_LEN                                                                               \
    }
#define A_COMPRESSION                                                                              \
    {                                                                                              \
        "COMPRESSION", CLI_ARG_OPTIONAL, "none gzip", "compression algorithm: none or gzip",       \
            NO_LEN                                                                                 \
    }
#define A_EXPIRY                                                                                   \
    {                                                                                              \
        "EXPIRY", CLI_ARG_OPTIONAL | CLI_ARG_REST, NULL,                                           \
            "message expiry, e.g. 7d or \"1h 30m\"; never, server_default", NO_LEN                 \
    }

#define O_KIND                                                                                     \
    {                                                                                              \
        "kind", NULL, 'k', "KIND", "consumer consumer-group", 0,                                   \
            "consumer (default) or consumer-group"                                                 \
    }
#define O_MAX_SIZE                                                                                 \
    {                                                                                              \
        "max-topic-size", NULL, 'm', "SIZE", NULL, 0,                                              \
            "largest size of the topic, e.g. 10GiB or unlimited (default: the server's)"           \
    }
#define O_LIST_MODE                                                                                \
    {                                                                                              \
        "list-mode", NULL, 'l', "MODE", "table list", 0,                                           \
            "table (default) or list: one line per item, fields separated by '|'"                  \
    }
#define O_REPLICATION                                                                              \
    {                                                                                              \
        "replication-factor", NULL, 'r', "N", NULL, 0,                                             \
            "accepted for Iggy compatibility (1..255) and not sent: protocol 0.11.0 has no "       \
            "replication factor field"                                                             \
    }
#define O_FILE_FORMAT                                                                              \
    {                                                                                              \
        "file-format", NULL, 0, "FORMAT", "binary lines", 0,                                       \
            "binary (default: Iggy's message records, headers and ids kept) or lines "             \
            "(payloads, one per line)"                                                             \
    }
#define O_GLOBAL_PERMS                                                                             \
    {                                                                                              \
        "global-permissions", NULL, 'g', "LIST", NULL, 0,                                          \
            "comma-separated global permissions (manage_servers/m_srv, read_servers/r_srv, "       \
            "manage_users/m_usr, read_users/r_usr, manage_streams/m_str, read_streams/r_str, "     \
            "manage_topics/m_top, read_topics/r_top, poll_messages/p_msg, send_messages/s_msg)"    \
    }
#define O_STREAM_PERMS                                                                             \
    {                                                                                              \
        "stream-permissions", NULL, 's', "SPEC", NULL, CLI_OPT_REPEAT,                             \
            "permissions on one stream: STREAM_ID[:LIST][#TOPIC_ID[:LIST]]... (repeatable)"        \
    }

static const cli_cmd_t stream_cmds[] = {
    CMD("create", "c", "create a stream", "Example:\n  sluice stream create orders",
        ARGS({"NAME", 0, NULL, "name of the new stream", NAME_LEN}), NULL, cli_cmd_stream_create),
    CMD("delete", "d", "delete a stream with its topics and messages",
        "Example:\n  sluice stream delete orders", ARGS(A_STREAM), NULL, cli_cmd_stream_delete),
    CMD("update", "u", "rename a stream", "Example:\n  sluice stream update orders orders-v2",
        ARGS(A_STREAM, {"NAME", 0, NULL, "new name", NAME_LEN}), NULL, cli_cmd_stream_update),
    CMD("get", "g", "show one stream and its topics", "Example:\n  sluice stream get orders",
        ARGS(A_STREAM), NULL, cli_cmd_stream_get),
    CMD("list", "l", "list every stream", NULL, NULL, OPTS(O_LIST_MODE), cli_cmd_stream_list),
    CMD("purge", "p", "delete every message of a stream, keeping its topics",
        "Example:\n  sluice stream purge orders", ARGS(A_STREAM), NULL, cli_cmd_stream_purge),
    {0},
};

static const cli_cmd_t topic_cmds[] = {
    CMD("create", "c", "create a topic in a stream",
        "Examples:\n  sluice topic create orders events 3\n"
        "  sluice topic create orders audit 1 gzip 7d --max-topic-size 10GiB",
        ARGS(A_STREAM, {"NAME", 0, NULL, "name of the new topic", NAME_LEN},
             {"PARTITIONS", CLI_ARG_OPTIONAL, NULL, "number of partitions, 0..1000 (default 1)",
              NO_LEN},
             A_COMPRESSION, A_EXPIRY),
        OPTS(O_MAX_SIZE, O_REPLICATION), cli_cmd_topic_create),
    CMD("delete", "d", "delete a topic with its messages",
        "Example:\n  sluice topic delete orders events", ARGS(A_STREAM, A_TOPIC), NULL,
        cli_cmd_topic_delete),
    CMD("update", "u", "rename a topic and change its compression, expiry and size limit",
        "Example:\n  sluice topic update orders events events gzip 30d",
        ARGS(A_STREAM, A_TOPIC, {"NAME", 0, NULL, "new name (the current one keeps it)", NAME_LEN},
             A_COMPRESSION, A_EXPIRY),
        OPTS(O_MAX_SIZE, O_REPLICATION), cli_cmd_topic_update),
    CMD("get", "g", "show one topic, its settings and partitions",
        "Example:\n  sluice topic get orders events", ARGS(A_STREAM, A_TOPIC), NULL,
        cli_cmd_topic_get),
    CMD("list", "l", "list the topics of a stream", "Example:\n  sluice topic list orders",
        ARGS(A_STREAM), OPTS(O_LIST_MODE), cli_cmd_topic_list),
    CMD("purge", "p", "delete every message of a topic",
        "Example:\n  sluice topic purge orders events", ARGS(A_STREAM, A_TOPIC), NULL,
        cli_cmd_topic_purge),
    {0},
};

static const cli_cmd_t partition_cmds[] = {
    CMD("create", "c", "add partitions to a topic",
        "New partitions take the next ids.\nExample:\n  sluice partition create orders events 2",
        ARGS(A_STREAM, A_TOPIC, {"COUNT", 0, NULL, "how many partitions to add (1..1000)", NO_LEN}),
        NULL, cli_cmd_partition_create),
    CMD("delete", "d", "remove partitions from a topic (the highest ids go first)",
        "Example:\n  sluice partition delete orders events 1",
        ARGS(A_STREAM, A_TOPIC,
             {"COUNT", 0, NULL, "how many partitions to remove (1..1000)", NO_LEN}),
        NULL, cli_cmd_partition_delete),
    CMD("list", "l", "list the partitions of a topic",
        "Example:\n  sluice partition list orders events", ARGS(A_STREAM, A_TOPIC), NULL,
        cli_cmd_partition_list),
    {0},
};

static const cli_cmd_t segment_cmds[] = {
    CMD("delete", "d", "delete the oldest sealed segments of a partition",
        "Example:\n  sluice segment delete orders events 0 5",
        ARGS(A_STREAM, A_TOPIC, A_PARTITION,
             {"COUNT", 0, NULL, "how many segments to delete", NO_LEN}),
        NULL, cli_cmd_segment_delete),
    {0},
};

static const cli_cmd_t message_cmds[] = {
    CMD("send", "s", "send messages to a topic",
        "Messages come from the arguments, from --input-file, or one per line from\n"
        "standard input when neither is given. Without --partition-id or --key the\n"
        "server balances them over the partitions.\n"
        "Examples:\n  sluice message send orders events \"order 1\" \"order 2\"\n"
        "  sluice message send orders events -m customer-42 -H source:string:web hello\n"
        "  seq 1 1000 | sluice message send orders events --partition-id 0\n"
        "  sluice message send orders replay --input-file saved.bin",
        ARGS(A_STREAM, A_TOPIC,
             {"MESSAGE", CLI_ARG_OPTIONAL | CLI_ARG_REST, NULL, "payloads (default: stdin lines)",
              NO_LEN}),
        OPTS({"partition-id", NULL, 'p', "ID", NULL, 0, "send to this partition"},
             {"key", "message-key", 'm', "KEY", NULL, 0,
              "messages key: the server hashes it to pick the partition"},
             {"balanced", NULL, 'b', NULL, NULL, 0, "let the server pick (the default)"},
             {"header", "headers", 'H', "KEY:KIND:VALUE", NULL, CLI_OPT_REPEAT,
              "a user header on every message (repeatable); KIND is raw (hex), string, bool, "
              "int8..int128, uint8..uint128, float32 or float64"},
             {"batch-size", NULL, 0, "N", NULL, 0,
              "messages per request when reading stdin or a file (default 1000)"},
             {"input-file", NULL, 0, "FILE", NULL, 0,
              "send the messages stored in FILE (as message poll --output-file writes them)"},
             O_FILE_FORMAT),
        cli_cmd_message_send),
    CMD("poll", "p", "read messages from a partition",
        "Give one strategy (default --first). --follow keeps polling for new\n"
        "messages until interrupted (Ctrl-C) or --follow-seconds pass.\n"
        "With --kind consumer-group, --consumer names the group: sluice joins it,\n"
        "polls a partition the group assigns to it (PARTITION must be one; default:\n"
        "the first assigned) and leaves at the end.\n"
        "Examples:\n  sluice message poll orders events 0 --offset 0 --count 100\n"
        "  sluice message poll orders events --next --consumer billing --auto-commit\n"
        "  sluice message poll orders events 1 --last --count 5 --show-headers\n"
        "  sluice message poll orders events -k consumer-group -c billing --next -a\n"
        "  sluice message poll orders events 0 --count 1000 --output-file saved.bin",
        ARGS(A_STREAM, A_TOPIC,
             {"PARTITION", CLI_ARG_OPTIONAL, NULL,
              "partition id (default 0; with --kind consumer-group the first one assigned)",
              NO_LEN}),
        OPTS({"offset", NULL, 'o', "OFFSET", NULL, 0, "start at this offset"},
             {"first", NULL, 'f', NULL, NULL, 0, "start at the first message"},
             {"last", NULL, 'l', NULL, NULL, 0, "the last --count messages"},
             {"next", NULL, 'n', NULL, NULL, 0, "after the consumer's stored offset"},
             {"timestamp", NULL, 0, "MICROS", NULL, 0,
              "from this append time (microseconds since the epoch)"},
             {"count", "message-count", 'm', "N", NULL, 0, "messages per poll (default 10)"},
             {"consumer", NULL, 'c', "ID", NULL, 0,
              "consumer id or name (default 1); the group with --kind consumer-group"},
             {"kind", "consumer-kind", 'k', "KIND", "consumer consumer-group", 0,
              "consumer (default) or consumer-group: poll as a member of the group"},
             {"auto-commit", NULL, 'a', NULL, NULL, 0,
              "store the offset of the last message returned"},
             {"show-headers", NULL, 's', NULL, NULL, 0, "add the user headers to the table"},
             {"follow", NULL, 'F', NULL, NULL, 0, "keep polling for new messages"},
             {"follow-seconds", NULL, 0, "SECONDS", NULL, 0, "stop following after this long"},
             {"interval-ms", NULL, 0, "MS", NULL, 0,
              "pause between polls that return nothing (default 250)"},
             {"output-file", NULL, 0, "FILE", NULL, 0,
              "append the messages to FILE instead of printing them"},
             O_FILE_FORMAT),
        cli_cmd_message_poll),
    CMD("flush", "f",
        "ask the server to flush a partition's unsaved messages (0.11.0 servers refuse it)",
        "Protocol 0.11.0 servers, sluiced and Apache Iggy's alike, always answer\n"
        "FeatureUnavailable (5), and the command then exits 1. It is here for parity\n"
        "with Iggy's CLI and for servers that offer it.\n"
        "Example:\n  sluice message flush orders events 0 --fsync",
        ARGS(A_STREAM, A_TOPIC, A_PARTITION),
        OPTS({"fsync", NULL, 'f', NULL, NULL, 0, "fsync the flushed data"}), cli_cmd_message_flush),
    {0},
};

static const cli_cmd_t group_cmds[] = {
    CMD("create", "c", "create a consumer group on a topic",
        "Example:\n  sluice consumer-group create orders events billing",
        ARGS(A_STREAM, A_TOPIC, {"NAME", 0, NULL, "name of the new group", NAME_LEN}), NULL,
        cli_cmd_group_create),
    CMD("delete", "d", "delete a consumer group",
        "Example:\n  sluice consumer-group delete orders events billing",
        ARGS(A_STREAM, A_TOPIC, A_GROUP), NULL, cli_cmd_group_delete),
    CMD("get", "g", "show a consumer group and its members",
        "Example:\n  sluice consumer-group get orders events billing",
        ARGS(A_STREAM, A_TOPIC, A_GROUP), NULL, cli_cmd_group_get),
    CMD("list", "l", "list the consumer groups of a topic",
        "Example:\n  sluice consumer-group list orders events", ARGS(A_STREAM, A_TOPIC),
        OPTS(O_LIST_MODE), cli_cmd_group_list),
    {0},
};

static const cli_cmd_t offset_cmds[] = {
    CMD("get", "g", "show a consumer's stored offset in a partition",
        "Example:\n  sluice consumer-offset get billing orders events 0",
        ARGS(A_CONSUMER, A_STREAM, A_TOPIC, A_PARTITION), OPTS(O_KIND), cli_cmd_offset_get),
    CMD("set", "s", "store a consumer's offset in a partition",
        "Example:\n  sluice consumer-offset set billing orders events 0 41",
        ARGS(A_CONSUMER, A_STREAM, A_TOPIC, A_PARTITION,
             {"OFFSET", 0, NULL, "the offset to store", NO_LEN}),
        OPTS(O_KIND), cli_cmd_offset_set),
    CMD("delete", "d", "forget a consumer's stored offset in a partition",
        "Example:\n  sluice consumer-offset delete billing orders events 0",
        ARGS(A_CONSUMER, A_STREAM, A_TOPIC, A_PARTITION), OPTS(O_KIND), cli_cmd_offset_delete),
    {0},
};

static const cli_cmd_t user_cmds[] = {
    CMD("create", "c", "create a user",
        "Examples:\n  sluice user create alice 's3cret!'\n"
        "  sluice user create bot p4ss -g p_msg,s_msg -s 1:r_str#2:s_msg",
        ARGS({"USERNAME", 0, NULL, "the new user's name", USERNAME_LEN},
             {"PASSWORD", 0, NULL, "the new user's password", PASSWORD_LEN}),
        OPTS({"user-status", NULL, 'u', "STATUS", "active inactive", 0,
              "active (default) or inactive"},
             O_GLOBAL_PERMS, O_STREAM_PERMS),
        cli_cmd_user_create),
    CMD("delete", "d", "delete a user", "Example:\n  sluice user delete alice", ARGS(A_USER), NULL,
        cli_cmd_user_delete),
    CMD("get", "g", "show a user and its permissions", "Example:\n  sluice user get alice",
        ARGS(A_USER), NULL, cli_cmd_user_get),
    CMD("list", "l", "list every user", NULL, NULL, OPTS(O_LIST_MODE), cli_cmd_user_list),
    CMD("name", "n", "change a user's username", "Example:\n  sluice user name alice alicia",
        ARGS(A_USER, {"USERNAME", 0, NULL, "the new username", USERNAME_LEN}), NULL,
        cli_cmd_user_name),
    CMD("status", "s", "activate or deactivate a user",
        "Example:\n  sluice user status alice inactive",
        ARGS(A_USER, {"STATUS", 0, "active inactive", "active or inactive", NO_LEN}), NULL,
        cli_cmd_user_status),
    CMD("password", "pwd", "change a user's password",
        "Passwords not given are asked for on the terminal, without echo.\n"
        "Example:\n  sluice user password alice old-secret new-secret",
        ARGS(A_USER,
             {"CURRENT", CLI_ARG_OPTIONAL, NULL, "the current password", 0, SL_PASSWORD_WIRE_MAX},
             {"NEW", CLI_ARG_OPTIONAL, NULL, "the new password", PASSWORD_LEN}),
        NULL, cli_cmd_user_password),
    CMD("permissions", "p", "replace a user's permissions",
        "Without options every permission is removed.\n"
        "Example:\n  sluice user permissions bot -g r_str -s 1:p_msg,s_msg",
        ARGS(A_USER), OPTS(O_GLOBAL_PERMS, O_STREAM_PERMS), cli_cmd_user_permissions),
    {0},
};

static const cli_cmd_t pat_cmds[] = {
    CMD("create", "c", "create a personal access token for the current user",
        "The token is printed once; log in with it using --token.\n"
        "Examples:\n  sluice pat create ci\n  sluice pat create deploy 30d",
        ARGS({"NAME", 0, NULL, "name of the token", NAME_LEN},
             {"EXPIRY", CLI_ARG_OPTIONAL | CLI_ARG_REST, NULL,
              "how long it stays valid, e.g. 1d or \"2h 30m\" (default: never expires)", NO_LEN}),
        NULL, cli_cmd_pat_create),
    CMD("delete", "d", "delete a personal access token", "Example:\n  sluice pat delete ci",
        ARGS({"NAME", 0, NULL, "name of the token", NAME_LEN}), NULL, cli_cmd_pat_delete),
    CMD("list", "l", "list the current user's tokens", NULL, NULL, OPTS(O_LIST_MODE),
        cli_cmd_pat_list),
    {0},
};

static const cli_cmd_t client_cmds[] = {
    CMD("get", "g", "show one connected client", "Example:\n  sluice client get 42",
        ARGS({"CLIENT", 0, NULL, "client id (see client list)", NO_LEN}), NULL, cli_cmd_client_get),
    CMD("list", "l", "list the connected clients", NULL, NULL, OPTS(O_LIST_MODE),
        cli_cmd_client_list),
    {0},
};

static const cli_cmd_t cluster_cmds[] = {
    CMD("metadata", "m", "show the cluster's name and nodes", NULL, NULL, OPTS(O_LIST_MODE),
        cli_cmd_cluster_metadata),
    {0},
};

static const cli_cmd_t context_cmds[] = {
    {"list", "l", "list the contexts of ~/.sluice/contexts.toml", NULL, NULL, OPTS(O_LIST_MODE),
     NULL, cli_cmd_context_list, CLI_NEEDS_NOTHING},
    {"use", "u", "make a context the active one",
     "Examples:\n  sluice context use staging\n  sluice context use default",
     ARGS({"NAME", 0, NULL, "the context's name", NO_LEN}), NULL, NULL, cli_cmd_context_use,
     CLI_NEEDS_NOTHING},
    {0},
};

const cli_cmd_t cli_commands[] = {
    {"stream", "s", "stream operations", NULL, NULL, NULL, stream_cmds, NULL, 0},
    {"topic", "t", "topic operations", NULL, NULL, NULL, topic_cmds, NULL, 0},
    {"partition", "p", "partition operations", NULL, NULL, NULL, partition_cmds, NULL, 0},
    {"segment", "seg", "segment operations", NULL, NULL, NULL, segment_cmds, NULL, 0},
    {"message", "m", "message operations", NULL, NULL, NULL, message_cmds, NULL, 0},
    {"consumer-group", "g", "consumer group operations", NULL, NULL, NULL, group_cmds, NULL, 0},
    {"consumer-offset", "o", "consumer offset operations", NULL, NULL, NULL, offset_cmds, NULL, 0},
    {"user", "u", "user operations", NULL, NULL, NULL, user_cmds, NULL, 0},
    {"pat", NULL, "personal access token operations", NULL, NULL, NULL, pat_cmds, NULL, 0},
    {"client", "c", "connected client operations", NULL, NULL, NULL, client_cmds, NULL, 0},
    {"cluster", "cl", "cluster operations", NULL, NULL, NULL, cluster_cmds, NULL, 0},
    {"ping", NULL, "check that the server answers, and how fast",
     "Needs no credentials.\nExample:\n  sluice ping --count 3", NULL,
     OPTS({"count", NULL, 'c', "N", NULL, 0, "how many pings (default 1)"}), NULL, cli_cmd_ping,
     CLI_NEEDS_CONNECTION},
    CMD("me", NULL, "show this connection as the server sees it", NULL, NULL, NULL, cli_cmd_me),
    CMD("stats", NULL, "show server statistics", NULL, NULL, NULL, cli_cmd_stats),
    CMD("snapshot", NULL, "download a troubleshooting archive (ZIP) from the server",
        "Example:\n  sluice snapshot -c deflated -s resource_usage -s server_config -o /tmp", NULL,
        OPTS({"compression", NULL, 'c', "METHOD", "stored deflated bzip2 zstd lzma xz", 0,
              "archive compression (default deflated)"},
             {"snapshot-types", NULL, 's', "TYPE", NULL, CLI_OPT_REPEAT,
              "what to collect (repeatable or comma-separated): filesystem_overview, "
              "process_list, resource_usage, test, server_logs, server_config, all (default)"},
             {"out-dir", NULL, 'o', "DIR", NULL, 0, "where to write the archive (default .)"}),
        cli_cmd_snapshot),
    CMD("options", NULL, "list the options a resource's create command accepts",
        "Example:\n  sluice options topic",
        ARGS({"SCOPE", CLI_ARG_OPTIONAL, "topic stream user", "topic (default), stream or user",
              NO_LEN}),
        NULL, cli_cmd_options),
    {"context", "ctx", "context operations (named servers and credentials)", NULL, NULL, NULL,
     context_cmds, NULL, 0},
    {"login", "li", "log in and keep a session token for later commands",
     "Creates a personal access token that expires (default 15m) and stores it in\n"
     "~/.sluice/session.toml; later commands to the same server use it when no\n"
     "other credentials are given.\n"
     "Example:\n  sluice -u iggy login 1h",
     ARGS({"EXPIRY", CLI_ARG_OPTIONAL | CLI_ARG_REST, NULL,
           "how long the session lasts (default 15m; never for no expiry)", NO_LEN}),
     NULL, NULL, cli_cmd_login, CLI_NEEDS_LOGIN},
    {"logout", "lo", "end the stored session: delete its token on the server and locally", NULL,
     NULL, NULL, NULL, cli_cmd_logout, CLI_NEEDS_NOTHING},
    {0},
};

const cli_opt_t cli_global_opts[] = {
    {"server", "tcp-server-address", 0, "HOST:PORT", NULL, 0,
     "server address (default 127.0.0.1:8090; env SLUICE_SERVER or IGGY_TCP_SERVER_ADDRESS)"},
    {"transport", NULL, 0, "KIND", "tcp websocket", 0,
     "tcp (default) or websocket (default server 127.0.0.1:8092; env SLUICE_TRANSPORT)"},
    {"tls", "tcp-tls-enabled", 0, NULL, NULL, 0,
     "connect with TLS, verifying the server's certificate (env SLUICE_TLS=true or "
     "IGGY_TCP_TLS_ENABLED=true)"},
    {"tls-domain", "tcp-tls-domain", 0, "NAME", NULL, 0,
     "server name to verify and send as SNI (default: the host of --server; env "
     "IGGY_TCP_TLS_DOMAIN)"},
    {"tls-ca-file", "tcp-tls-ca-file", 0, "PATH", NULL, 0,
     "PEM file of the CAs to trust (default: the system's; env IGGY_TCP_TLS_CA_FILE)"},
    {"tls-insecure", NULL, 0, NULL, NULL, 0,
     "accept any server certificate, e.g. a self-signed one (development only)"},
    {"username", NULL, 'u', "NAME", NULL, 0, "username (env SLUICE_USERNAME or IGGY_USERNAME)"},
    {"password", NULL, 'p', "PASSWORD", NULL, 0,
     "password (env SLUICE_PASSWORD or IGGY_PASSWORD; asked for on a terminal)"},
    {"token", NULL, 't', "TOKEN", NULL, 0, "personal access token (env SLUICE_TOKEN)"},
    {"context", NULL, 0, "NAME", NULL, 0,
     "context of ~/.sluice/contexts.toml to use (env SLUICE_CONTEXT)"},
    {"output", NULL, 'o', "FORMAT", "table json list", 0,
     "table (default), json, or list (one line per item, fields separated by '|')"},
    {"quiet", NULL, 'q', NULL, NULL, 0, "print no confirmations, only results"},
    {"help", NULL, 'h', NULL, NULL, 0, "show help"},
    {"version", NULL, 'V', NULL, NULL, 0, "show the version"},
    {"generate", NULL, 0, "WHAT", "bash markdown", 0,
     "print the bash completion script, or the command reference of docs/cli.md"},
    {0},
};
