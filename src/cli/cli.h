/* The sluice command-line tool: the types every part shares. One declarative
 * command table (table.c) describes every command, argument and option once;
 * the parser and --help (args.c) and the bash completion (complete.c) read it.
 * Handlers (cmd_*.c) reach the server through libsluice only. */
#ifndef SL_CLI_H
#define SL_CLI_H

#include <sluice/client.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes scripts can rely on (docs/cli.md lists them). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_SERVER = 1,     /* the server refused the request (its code is printed) */
    CLI_EXIT_USAGE = 2,      /* bad command line, missing credentials */
    CLI_EXIT_CONNECTION = 3, /* cannot connect, connection lost, timeout */
    CLI_EXIT_NOT_FOUND = 4,  /* the named stream, topic, user, ... does not exist */
    CLI_EXIT_AUTH = 5,       /* authentication failed (credentials, token) */
    CLI_EXIT_DENIED = 6,     /* authenticated, but not permitted */
    CLI_EXIT_LOCAL = 7,      /* a local failure: file, terminal, stdin, memory */
};

#define CLI_DEFAULT_SERVER "127.0.0.1:8090"
#define CLI_DEFAULT_WS_SERVER "127.0.0.1:8092"

/* Functions returning an exit code (or 0) must have it looked at. */
#define CLI_WUR __attribute__((warn_unused_result))

/* --- the command table ------------------------------------------------------ */

enum {
    CLI_OPT_REPEAT = 1u << 0, /* may be given more than once; every value is kept */
};

enum {
    CLI_ARG_OPTIONAL = 1u << 0,
    CLI_ARG_REST = 1u << 1, /* takes every remaining argument (0 or more) */
};

typedef struct cli_opt {
    const char *name;    /* long name without the dashes */
    const char *alias;   /* a second long name (Iggy's spelling), or NULL */
    char short_name;     /* 0: none */
    const char *value;   /* the value's placeholder ("ID"); NULL: a flag */
    const char *choices; /* space-separated allowed values, or NULL */
    uint8_t flags;       /* CLI_OPT_* */
    const char *help;
} cli_opt_t;

typedef struct cli_arg {
    const char *name; /* "STREAM" */
    uint8_t flags;    /* CLI_ARG_* */
    const char *choices;
    const char *help;
    /* The protocol's length rule in bytes, checked before anything is sent
     * and shown in --help; len_max 0: none. */
    uint8_t len_min;
    uint8_t len_max;
} cli_arg_t;

typedef struct cli_run cli_run_t;
typedef int (*cli_handler_t)(cli_run_t *run);

/* What a command needs before its handler runs. */
enum {
    CLI_NEEDS_NOTHING = 0, /* local: no connection */
    CLI_NEEDS_CONNECTION = 1,
    CLI_NEEDS_LOGIN = 2,
};

/* A command group (subs set, no handler) or a command (handler set).
 * Arrays end with an entry whose name is NULL. */
typedef struct cli_cmd {
    const char *name;
    const char *aliases; /* space-separated, or NULL */
    const char *summary;
    const char *details; /* more help text (examples), or NULL */
    const cli_arg_t *args;
    const cli_opt_t *opts;
    const struct cli_cmd *subs;
    cli_handler_t run;
    uint8_t needs;
} cli_cmd_t;

/* The top-level commands and the options every command accepts. */
extern const cli_cmd_t cli_commands[];
extern const cli_opt_t cli_global_opts[];

/* Bounds of the table, checked by the parser's assertions. */
#define CLI_OPTS_MAX 24
#define CLI_ARGS_MAX 8

/* --- a parsed invocation ----------------------------------------------------- */

typedef enum {
    CLI_FORMAT_TABLE = 0,
    CLI_FORMAT_JSON = 1,
    CLI_FORMAT_LIST = 2, /* Iggy's list mode: one line per item, fields joined by '|' */
} cli_format_t;

/* One option occurrence, in command-line order. */
typedef struct cli_optval {
    const cli_opt_t *opt;
    const char *value; /* NULL for flags */
} cli_optval_t;

struct cli_run {
    const char *argv0;
    const cli_cmd_t *group; /* the top-level command, NULL when none was given */
    const cli_cmd_t *cmd;   /* the command whose handler runs (== group for leaves) */
    const char **pos;       /* positional arguments, in order */
    uint32_t pos_count;
    cli_optval_t *opts; /* every option given (global and command), in order */
    uint32_t opts_count;
    bool help;
    /* Settled before the handler runs. */
    cli_format_t format;
    bool quiet;
    char server[300];
    char host[256];
    uint16_t port;
    sl_client_t *client;
    FILE *out;
};

/* --- parser (args.c) ------------------------------------------------------------ */

/* Parses argv into run (which owns pos and opts afterwards: cli_run_free).
 * On a usage error prints it and returns CLI_EXIT_USAGE; else 0. */
int cli_parse(int argc, char **argv, cli_run_t *run) CLI_WUR;
void cli_run_free(cli_run_t *run);
/* Help for a command (cmd NULL: the overview). */
void cli_print_help(FILE *f, const cli_cmd_t *group, const cli_cmd_t *cmd);

/* The value of a named argument, or NULL when an optional one is absent. */
const char *cli_arg(const cli_run_t *run, const char *name);
/* The arguments from a CLI_ARG_REST argument on. */
const char *const *cli_rest(const cli_run_t *run, const char *name, uint32_t *count);
/* The last value of an option (global or command), or NULL. */
const char *cli_opt(const cli_run_t *run, const char *name);
bool cli_flag(const cli_run_t *run, const char *name);
/* The index-th value of a repeatable option, or NULL past the last. */
const char *cli_opt_nth(const cli_run_t *run, const char *name, uint32_t index);

/* Prints "sluice: <message>" and a pointer to --help; returns CLI_EXIT_USAGE. */
int cli_usage(const cli_run_t *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3))) CLI_WUR;

/* --- values (parse.c) ------------------------------------------------------------- */

/* A stream, topic, group or user: digits are a numeric id, anything else a name. */
sl_id_t cli_id(const char *text);
bool cli_u32(const char *text, uint32_t *out);
/* 0 when text is min..max bytes long, else a usage error that states the
 * rule: "<what> must be 1..255 bytes (got 300)". what never echoes text, so
 * secrets and unprintable names stay out of the message. */
int cli_check_len(const cli_run_t *run, const char *what, const char *text, size_t min,
                  size_t max) CLI_WUR;
bool cli_u64(const char *text, uint64_t *out);
/* "15m", "1h 30m", "2days 4hours"; "never"/"unlimited"/"none" -> UINT64_MAX,
 * "server_default"/"default" -> 0. Words are summed. Result in microseconds. */
bool cli_duration_us(const char *const *words, uint32_t count, uint64_t *out);
/* "10GB", "512MiB", "unlimited" -> UINT64_MAX, "server_default" -> 0. */
bool cli_size_bytes(const char *text, uint64_t *out);
/* "key:kind:value"; the key and String/Raw values point into text or into
 * storage (raw: hex-decoded bytes, at least strlen(text) bytes). */
bool cli_header(const char *text, uint8_t *storage, sl_header_t *out, const char **why);
const char *cli_header_kind_name(uint8_t kind);
/* Where the next header starts in a comma-separated -H value ("a:string:x,b:uint8:1"):
 * the first comma followed by KEY:KIND: with a known kind, or NULL. Commas
 * elsewhere stay in the value. */
const char *cli_header_next(const char *text);
/* Permission lists of user create / user permissions. */
bool cli_global_permissions(const char *text, sl_permission_set_t *set, const char **why);
/* "STREAM[:perms][#TOPIC[:perms]]..." into *out; topics come from storage
 * (at least as many entries as '#' in text). */
bool cli_stream_permission(const char *text, sl_topic_permission_t *storage,
                           sl_stream_permission_t *out, const char **why);

/* --- errors and the session (session.c) ------------------------------------------- */

/* The exit code for a libsluice error. */
int cli_exit_for(int rc) CLI_WUR;
/* Prints "sluice: error: <what>: <description> [<Name>]; <hint>" and returns
 * cli_exit_for(rc). The hint states the rule behind codes whose name does not
 * (limits, the root user's guards); it is left out for the others. */
int cli_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3))) CLI_WUR;
/* cli_fail with the caller's hint (NULL: the code's own, if any), for
 * handlers that know which object or value was wrong. */
int cli_fail_hint(int rc, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4))) CLI_WUR;
/* cli_fail_hint with a va_list. */
int cli_vfail(int rc, const char *hint, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0))) CLI_WUR;
/* Prints "sluice: error: <message>" and returns code. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3))) CLI_WUR;

/* --- naming what is missing (explain.c) ------------------------------------------------- */

/* What a command addresses, as the user typed it; NULL / false for the parts
 * it does not name. */
typedef struct cli_target {
    const char *stream;
    const char *topic;
    bool has_partition;
    uint32_t partition;
    const char *group;
} cli_target_t;

/* Asks the server which part of t is missing, first the stream, and puts
 * "stream 'x' not found", "stream 'x' has no topic 'y'", ... in buf. False
 * when every part exists or the server would not say (no permission). It
 * replaces the client's earlier results. */
bool cli_find_missing(cli_run_t *run, const cli_target_t *t, char *buf, size_t cap);
/* Prints the missing part of t (or fallback when none is found) as an error
 * and returns CLI_EXIT_NOT_FOUND: for a get that found nothing. */
int cli_missing(cli_run_t *run, const cli_target_t *t, const char *fallback) CLI_WUR;
/* cli_fail, with the missing part of t as the hint when rc is a "not found"
 * error. */
int cli_fail_at(cli_run_t *run, int rc, const cli_target_t *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5))) CLI_WUR;

/* "host:port", "[v6]:port" or "host" (port 8090). */
bool cli_split_server(const char *server, char *host, size_t cap, uint16_t *port);
/* Resolves the server and credentials (flags, environment, context, login
 * session), connects and logs in as run->cmd->needs says. Returns an exit code. */
int cli_session_open(cli_run_t *run) CLI_WUR;
void cli_session_close(cli_run_t *run);
/* Reads a line from the terminal without echo (prompt on stderr). false when
 * stdin is not a terminal or on error. */
bool cli_read_secret(const char *prompt, char *buf, size_t cap);

/* --- local files (context.c) ----------------------------------------------------------- */

typedef struct cli_context {
    char name[64];
    char server[300];
    char username[256];
    char password[256];
    char token[512];
} cli_context_t;

typedef struct cli_contexts {
    uint32_t count;
    cli_context_t items[32];
} cli_contexts_t;

/* "$HOME/.sluice/<file>" into buf. false when HOME is unset or too long. */
bool cli_home_path(const char *file, char *buf, size_t cap);
/* Reads ~/.sluice/contexts.toml (a missing file is an empty list). Returns an
 * exit code (CLI_EXIT_LOCAL with a message on a syntax error). */
int cli_contexts_load(cli_contexts_t *out) CLI_WUR;
const cli_context_t *cli_context_find(const cli_contexts_t *list, const char *name);
/* The active context: --context, SLUICE_CONTEXT, ~/.sluice/active_context, "default". */
void cli_context_active(const cli_run_t *run, char *buf, size_t cap);
/* Writes the name `context use` chose to ~/.sluice/active_context. */
int cli_context_write_active(const char *name) CLI_WUR;

/* The stored login session (~/.sluice/session.toml). */
typedef struct cli_login_session {
    char server[300];
    char name[64];
    char token[512];
} cli_login_session_t;

bool cli_login_session_load(cli_login_session_t *out);
int cli_login_session_save(const cli_login_session_t *s) CLI_WUR;
int cli_login_session_remove(void) CLI_WUR;

/* --- output (out.c) ------------------------------------------------------------------ */

typedef enum {
    CLI_VAL_NULL = 0,
    CLI_VAL_STR, /* UTF-8 text (escaped in both formats) */
    CLI_VAL_U64,
    CLI_VAL_I64,
    CLI_VAL_F64,
    CLI_VAL_BOOL,
    CLI_VAL_TIME_US,     /* wall clock: a number in JSON, UTC date in a table; 0 is "-" */
    CLI_VAL_SIZE,        /* bytes: a number in JSON, "1.5 MiB" in a table */
    CLI_VAL_EXPIRY_US,   /* a duration: a number in JSON, "15m" / "never" in a table */
    CLI_VAL_DURATION_US, /* an elapsed time: a number in JSON, "1h 2m 3s" in a table */
    CLI_VAL_BYTES,       /* arbitrary bytes: text with escapes in a table, a string in JSON */
    CLI_VAL_JSON,        /* pre-rendered JSON (s) with its table text (alt) */
    CLI_VAL_ABSENT,      /* no key in JSON, an empty cell in a table */
} cli_val_kind_t;

typedef struct cli_val {
    uint8_t kind;
    size_t len; /* CLI_VAL_BYTES */
    const char *alt;
    union {
        const char *s;
        uint64_t u;
        int64_t i;
        double f;
        bool b;
    };
} cli_val_t;

static inline cli_val_t cli_str(const char *s)
{
    cli_val_t v = {.kind = s ? CLI_VAL_STR : CLI_VAL_NULL, .s = s};
    return v;
}
static inline cli_val_t cli_u(uint64_t u)
{
    cli_val_t v = {.kind = CLI_VAL_U64, .u = u};
    return v;
}
static inline cli_val_t cli_i(int64_t i)
{
    cli_val_t v = {.kind = CLI_VAL_I64, .i = i};
    return v;
}
static inline cli_val_t cli_f(double f)
{
    cli_val_t v = {.kind = CLI_VAL_F64, .f = f};
    return v;
}
static inline cli_val_t cli_b(bool b)
{
    cli_val_t v = {.kind = CLI_VAL_BOOL, .b = b};
    return v;
}
static inline cli_val_t cli_typed(uint8_t kind, uint64_t u)
{
    cli_val_t v = {.kind = kind, .u = u};
    return v;
}
static inline cli_val_t cli_bytes(const void *p, size_t len)
{
    cli_val_t v = {.kind = CLI_VAL_BYTES, .len = len, .s = (const char *)p};
    return v;
}

enum {
    CLI_COL_JSON_ONLY = 1u << 0,
    CLI_COL_TABLE_ONLY = 1u << 1,
};

typedef struct cli_col {
    const char *key;   /* JSON key */
    const char *title; /* table heading */
    uint8_t flags;
} cli_col_t;

/* Rows of values under fixed columns: a list result, or one nested list. */
typedef struct cli_table {
    const char *key; /* JSON key of a nested list; its title in a table */
    const cli_col_t *cols;
    uint32_t cols_count;
    uint32_t rows_count;
    uint32_t rows_cap;
    cli_val_t *cells;
} cli_table_t;

#define CLI_DOC_SUBS_MAX 4

/* A command's result: one object (fields and nested lists) or a list. It
 * borrows strings (client results stay valid until the next client call)
 * and owns what cli_doc_printf makes. */
typedef struct cli_doc {
    bool object;
    cli_table_t main; /* object: a single row */
    cli_table_t subs[CLI_DOC_SUBS_MAX];
    uint32_t subs_count;
    char **owned;
    uint32_t owned_count;
    uint32_t owned_cap;
} cli_doc_t;

void cli_doc_list(cli_doc_t *doc, const cli_col_t *cols, uint32_t cols_count);
void cli_doc_object(cli_doc_t *doc, const cli_col_t *cols, uint32_t cols_count);
cli_table_t *cli_doc_sub(cli_doc_t *doc, const char *key, const cli_col_t *cols,
                         uint32_t cols_count);
/* Appends a row; vals has cols_count entries. */
void cli_table_row(cli_table_t *t, const cli_val_t *vals);
/* A string the document owns. */
const char *cli_doc_printf(cli_doc_t *doc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hands a malloc'd string to the document, which frees it. */
const char *cli_doc_adopt(cli_doc_t *doc, char *s);
/* open_memstream, exiting on failure. */
FILE *cli_memstream(char **buf, size_t *len);
void cli_doc_print(const cli_run_t *run, const cli_doc_t *doc);
void cli_doc_free(cli_doc_t *doc);
/* Prints the rows of t from `from` on (no heading when with_heading is false):
 * streaming output of message poll --follow. widths (cols_count entries,
 * zeroed at first, or NULL) keeps columns aligned from one call to the next. */
void cli_table_print_rows(FILE *f, cli_format_t format, const cli_table_t *t, uint32_t from,
                          bool with_heading, size_t *widths);

/* "done" messages: text in a table, {"status":"ok","message":...} in JSON;
 * nothing with --quiet. */
void cli_done(const cli_run_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A create's confirmation: the new object in JSON, the message in a table. */
void cli_created(const cli_run_t *run, const cli_doc_t *doc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An option or header value (kind and little-endian bytes) as table text and as JSON. */
cli_val_t cli_typed_value(cli_doc_t *doc, uint8_t kind, const uint8_t *bytes, size_t len);

/* The permissions set in *base (scope 0: sl_permission_set_t, 1:
 * sl_stream_permission_t, 2: sl_topic_permission_t) as a JSON array of
 * names and as a comma-separated list (parse.c, beside the names). */
cli_val_t cli_permission_list(cli_doc_t *doc, int scope, const void *base);

/* One value as table text / as JSON. */
void cli_val_text(FILE *f, const cli_val_t *v);
void cli_val_json(FILE *f, const cli_val_t *v);

/* JSON string escaping (invalid UTF-8 becomes U+FFFD). */
void cli_json_string(FILE *f, const void *s, size_t len);
/* Table text of bytes: printable UTF-8 as is, the rest as escapes. */
void cli_text_escaped(FILE *f, const void *s, size_t len);
/* Lowercase hex into a document-owned string. */
const char *cli_doc_hex(cli_doc_t *doc, const void *p, size_t len);
bool cli_utf8_valid(const void *p, size_t len);

void *cli_xalloc(size_t n);

/* --- completion (complete.c) ----------------------------------------------------------- */

void cli_completion_bash(FILE *f);
/* The command reference table of docs/cli.md, in markdown. */
void cli_reference_markdown(FILE *f);

/* --- handlers (cmd_*.c) ------------------------------------------------------------------ */

int cli_cmd_stream_create(cli_run_t *run) CLI_WUR;
int cli_cmd_stream_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_stream_update(cli_run_t *run) CLI_WUR;
int cli_cmd_stream_get(cli_run_t *run) CLI_WUR;
int cli_cmd_stream_list(cli_run_t *run) CLI_WUR;
int cli_cmd_stream_purge(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_create(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_update(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_get(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_list(cli_run_t *run) CLI_WUR;
int cli_cmd_topic_purge(cli_run_t *run) CLI_WUR;
int cli_cmd_partition_create(cli_run_t *run) CLI_WUR;
int cli_cmd_partition_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_partition_list(cli_run_t *run) CLI_WUR;
int cli_cmd_segment_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_message_send(cli_run_t *run) CLI_WUR;
int cli_cmd_message_poll(cli_run_t *run) CLI_WUR;
int cli_cmd_message_flush(cli_run_t *run) CLI_WUR;
int cli_cmd_group_create(cli_run_t *run) CLI_WUR;
int cli_cmd_group_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_group_get(cli_run_t *run) CLI_WUR;
int cli_cmd_group_list(cli_run_t *run) CLI_WUR;
int cli_cmd_offset_get(cli_run_t *run) CLI_WUR;
int cli_cmd_offset_set(cli_run_t *run) CLI_WUR;
int cli_cmd_offset_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_user_create(cli_run_t *run) CLI_WUR;
int cli_cmd_user_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_user_get(cli_run_t *run) CLI_WUR;
int cli_cmd_user_list(cli_run_t *run) CLI_WUR;
int cli_cmd_user_name(cli_run_t *run) CLI_WUR;
int cli_cmd_user_status(cli_run_t *run) CLI_WUR;
int cli_cmd_user_password(cli_run_t *run) CLI_WUR;
int cli_cmd_user_permissions(cli_run_t *run) CLI_WUR;
int cli_cmd_pat_create(cli_run_t *run) CLI_WUR;
int cli_cmd_pat_delete(cli_run_t *run) CLI_WUR;
int cli_cmd_pat_list(cli_run_t *run) CLI_WUR;
int cli_cmd_client_get(cli_run_t *run) CLI_WUR;
int cli_cmd_client_list(cli_run_t *run) CLI_WUR;
int cli_cmd_cluster_metadata(cli_run_t *run) CLI_WUR;
int cli_cmd_ping(cli_run_t *run) CLI_WUR;
int cli_cmd_me(cli_run_t *run) CLI_WUR;
int cli_cmd_stats(cli_run_t *run) CLI_WUR;
int cli_cmd_snapshot(cli_run_t *run) CLI_WUR;
int cli_cmd_options(cli_run_t *run) CLI_WUR;
int cli_cmd_context_list(cli_run_t *run) CLI_WUR;
int cli_cmd_context_use(cli_run_t *run) CLI_WUR;
int cli_cmd_login(cli_run_t *run) CLI_WUR;
int cli_cmd_logout(cli_run_t *run) CLI_WUR;

#endif
