/* How the sluice tool reaches the server: the address and credentials from
 * flags, the environment, a named context or a stored login session, the
 * password prompt without echo, and the mapping of libsluice errors to
 * messages and exit codes. */
#include "cli/cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/limits.h"

/* --- errors ---------------------------------------------------------------------------- */

int cli_exit_for(int rc)
{
    int code = rc < 0 ? -rc : rc;
    switch (code) {
    case 0:
        return CLI_EXIT_OK;
    case SL_ERR_INVALID_SERVER_ADDRESS:
    case SL_ERR_CANNOT_ESTABLISH_CONNECTION:
    case SL_ERR_NOT_CONNECTED:
    case SL_ERR_DISCONNECTED:
    case SL_ERR_CONNECTION_CLOSED:
    case SL_ERR_EMPTY_RESPONSE:
    case SL_ERR_TASK_TIMEOUT:
    case SL_ERR_TCP_ERROR:
        return CLI_EXIT_CONNECTION;
    case SL_ERR_UNAUTHENTICATED:
    case SL_ERR_INVALID_CREDENTIALS:
    case SL_ERR_USER_INACTIVE:
    case SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN:
    case SL_ERR_PERSONAL_ACCESS_TOKEN_EXPIRED:
        return CLI_EXIT_AUTH;
    case SL_ERR_UNAUTHORIZED:
        return CLI_EXIT_DENIED;
    default:
        break;
    }
    const char *name = sl_err_name(code);
    size_t n = name ? strlen(name) : 0;
    if (n > 8 && strcmp(name + n - 8, "NotFound") == 0)
        return CLI_EXIT_NOT_FOUND;
    return CLI_EXIT_SERVER;
}

/* The rule or likely cause behind a code, where its name alone does not say
 * it, into buf; NULL otherwise. Handlers that know more pass their own. */
static const char *code_hint(int code, char *buf, size_t cap)
{
    switch (code < 0 ? -code : code) {
    case SL_ERR_FEATURE_UNAVAILABLE:
        return "the server does not offer this command";
    case SL_ERR_INVALID_USERNAME:
        snprintf(buf, cap, "a username is %u..%u bytes", SL_USERNAME_LEN_MIN, SL_USERNAME_LEN_MAX);
        return buf;
    case SL_ERR_INVALID_PASSWORD:
        snprintf(buf, cap, "a password is %u..%u bytes", SL_PASSWORD_LEN_MIN, SL_PASSWORD_LEN_MAX);
        return buf;
    case SL_ERR_CANNOT_DELETE_USER:
        return "the root user (id 0) cannot be deleted";
    case SL_ERR_CANNOT_CHANGE_PERMISSIONS:
        return "the root user's (id 0) permissions cannot be changed";
    case SL_ERR_PERSONAL_ACCESS_TOKENS_LIMIT_REACHED:
        return "the user holds as many tokens as the server allows "
               "(personal_access_token.max_tokens_per_user); delete one first";
    case SL_ERR_TRANSIENT_NOT_ACCEPTED:
        return "nothing was applied; try again";
    case SL_ERR_TRANSIENT_NOT_COMMITTED:
        return "the outcome is unknown; check before trying again";
    case SL_ERR_TOO_MANY_STREAMS:
        snprintf(buf, cap, "stream ids end at %u", SL_STREAMS_MAX - 1);
        return buf;
    case SL_ERR_TOO_MANY_TOPICS:
        snprintf(buf, cap, "a stream holds at most %u topics", SL_TOPICS_PER_STREAM_MAX);
        return buf;
    case SL_ERR_TOO_MANY_PARTITIONS:
        snprintf(buf, cap, "one request creates or deletes at most %u partitions",
                 SL_PARTITIONS_PER_REQUEST_MAX);
        return buf;
    case SL_ERR_INVALID_PARTITIONS_COUNT:
        return "a topic cannot lose more partitions than it has";
    case SL_ERR_INVALID_TOPIC_SIZE:
        return "--max-topic-size must be unlimited, server_default, or at least the topic's "
               "segment size";
    case SL_ERR_UNSUPPORTED_OPTION_KEY:
    case SL_ERR_INVALID_OPTION_VALUE:
        return "'sluice options' lists the keys and their values";
    case SL_ERR_INVALID_OFFSET:
        return "an offset can be stored only up to the partition's current offset";
    case SL_ERR_TOO_BIG_MESSAGE_PAYLOAD:
        snprintf(buf, cap, "a message payload is at most %u bytes", SL_PAYLOAD_MAX);
        return buf;
    case SL_ERR_TOO_BIG_USER_HEADERS:
        snprintf(buf, cap, "a message's user headers take at most %u bytes", SL_USER_HEADERS_MAX);
        return buf;
    default:
        return NULL;
    }
}

int cli_vfail(int rc, const char *hint, const char *fmt, va_list ap)
{
    char buf[160];
    fputs("sluice: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    const char *name = sl_err_name(rc);
    if (hint == NULL)
        hint = code_hint(rc, buf, sizeof(buf));
    fprintf(stderr, ": %s [%s]%s%s\n", sl_strerror(rc), name ? name : "unknown", hint ? "; " : "",
            hint ? hint : "");
    return cli_exit_for(rc);
}

int cli_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = cli_vfail(rc, NULL, fmt, ap);
    va_end(ap);
    return code;
}

int cli_fail_hint(int rc, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = cli_vfail(rc, hint, fmt, ap);
    va_end(ap);
    return code;
}

int cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return code;
}

/* --- the password prompt -------------------------------------------------------------- */

static struct termios saved_termios;
static volatile sig_atomic_t echo_off;

/* Ctrl-C at the prompt must not leave the terminal without echo. */
static void restore_terminal(int sig)
{
    if (echo_off)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
    signal(sig, SIG_DFL);
    raise(sig);
}

bool cli_read_secret(const char *prompt, char *buf, size_t cap)
{
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_termios) != 0)
        return false;
    struct termios quiet = saved_termios;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    quiet.c_lflag |= ECHONL;
    void (*old_int)(int) = signal(SIGINT, restore_terminal);
    void (*old_term)(int) = signal(SIGTERM, restore_terminal);
    echo_off = 1;
    bool ok = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
    if (ok) {
        fputs(prompt, stderr);
        fflush(stderr);
        ok = fgets(buf, (int)cap, stdin) != NULL;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_termios);
    }
    echo_off = 0;
    signal(SIGINT, old_int);
    signal(SIGTERM, old_term);
    if (!ok)
        return false;
    buf[strcspn(buf, "\r\n")] = '\0';
    return true;
}

/* --- address and credentials ------------------------------------------------------------- */

static const char *env(const char *a, const char *b)
{
    const char *v = getenv(a);
    if ((v == NULL || *v == '\0') && b != NULL)
        v = getenv(b);
    return v && *v ? v : NULL;
}

bool cli_split_server(const char *s, char *host, size_t cap, uint16_t *port)
{
    const char *name = s, *port_text = NULL;
    size_t host_len;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || (close[1] != '\0' && close[1] != ':'))
            return false;
        name = s + 1;
        host_len = (size_t)(close - name);
        port_text = close[1] == ':' ? close + 2 : NULL;
    } else {
        const char *colon = strrchr(s, ':');
        host_len = colon ? (size_t)(colon - s) : strlen(s);
        port_text = colon ? colon + 1 : NULL;
    }
    uint32_t p = 8090;
    if (host_len == 0 || host_len >= cap || (port_text && !cli_u32(port_text, &p)) || p == 0 ||
        p > 65535)
        return false;
    memcpy(host, name, host_len);
    host[host_len] = '\0';
    *port = (uint16_t)p;
    return true;
}

typedef struct creds {
    const char *username;
    const char *password;
    const char *token;
    const char *source; /* for messages */
    char typed[512];    /* a password typed at the prompt */
} creds_t;

/* Flags, then the environment, then the context, then a stored login session. */
static void find_creds(const cli_run_t *run, const cli_context_t *ctx,
                       const cli_login_session_t *session, creds_t *c)
{
    c->username = cli_opt(run, "username");
    c->password = cli_opt(run, "password");
    c->token = cli_opt(run, "token");
    c->source = "the command line";
    if (c->username == NULL && c->token == NULL) {
        c->username = env("SLUICE_USERNAME", "IGGY_USERNAME");
        c->token = env("SLUICE_TOKEN", NULL);
        c->source = "the environment";
    }
    if (c->password == NULL)
        c->password = env("SLUICE_PASSWORD", "IGGY_PASSWORD");
    if (c->username == NULL && c->token == NULL && ctx != NULL) {
        c->username = ctx->username[0] ? ctx->username : NULL;
        c->password = ctx->password[0] ? ctx->password : c->password;
        c->token = ctx->token[0] ? ctx->token : NULL;
        c->source = "the context";
    }
    if (c->username == NULL && c->token == NULL && session != NULL) {
        c->token = session->token;
        c->source = "the login session";
    }
}

/* Checks that there is something to log in with, asking for a missing
 * password on the terminal, before anything is sent. An exit code. */
static int complete_creds(creds_t *c)
{
    if (c->token != NULL)
        return 0;
    if (c->username == NULL)
        return cli_error(CLI_EXIT_USAGE,
                         "no credentials: give --username and --password or --token, set "
                         "SLUICE_USERNAME/SLUICE_PASSWORD, use a context, or run 'sluice login'");
    if (c->password != NULL)
        return 0;
    char prompt[300];
    snprintf(prompt, sizeof(prompt), "Password for %s: ", c->username);
    if (!cli_read_secret(prompt, c->typed, sizeof(c->typed)))
        return cli_error(CLI_EXIT_USAGE,
                         "no password for '%s' (give --password or SLUICE_PASSWORD, or run on "
                         "a terminal to be asked)",
                         c->username);
    c->password = c->typed;
    return 0;
}

/* The server answers a wrong password and an inactive user alike (42, or
 * 40 for a token), so the message names both causes. */
static int login(cli_run_t *run, const creds_t *c)
{
    int rc;
    if (c->token != NULL) {
        rc = sl_client_login_token(run->client, c->token, NULL);
        const char *why = rc == -SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN
                              ? "the token is unknown, expired or deleted"
                          : rc == -SL_ERR_UNAUTHENTICATED ? "the token's user may be inactive"
                                                          : NULL;
        return rc == 0 ? 0 : cli_fail_hint(rc, why, "log in with the token from %s", c->source);
    }
    rc = sl_client_login(run->client, c->username, c->password, NULL);
    const char *why = rc == -SL_ERR_INVALID_CREDENTIALS
                          ? "wrong username or password, or the user is inactive"
                          : NULL;
    return rc == 0 ? 0 : cli_fail_hint(rc, why, "log in as '%s'", c->username);
}

/* The server: --server, SLUICE_SERVER (or Iggy's IGGY_TCP_SERVER_ADDRESS),
 * the context's, the default. An exit code. */
static int find_server(cli_run_t *run, const cli_context_t *ctx)
{
    const char *server = cli_opt(run, "server");
    if (server == NULL)
        server = env("SLUICE_SERVER", "IGGY_TCP_SERVER_ADDRESS");
    if (server == NULL && ctx != NULL && ctx->server[0])
        server = ctx->server;
    const char *transport = cli_opt(run, "transport");
    if (transport == NULL)
        transport = env("SLUICE_TRANSPORT", NULL);
    bool ws = transport != NULL && strcmp(transport, "websocket") == 0;
    if (server == NULL)
        server = ws ? CLI_DEFAULT_WS_SERVER : CLI_DEFAULT_SERVER;
    snprintf(run->server, sizeof(run->server), "%s", server);
    if (!cli_split_server(run->server, run->host, sizeof(run->host), &run->port))
        return cli_usage(run, "invalid server address '%s' (expected HOST:PORT)", run->server);
    return 0;
}

static bool env_true(const char *a, const char *b)
{
    const char *v = env(a, b);
    return v != NULL && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

/* Transport and TLS: flags first, then SLUICE_* / Iggy's IGGY_TCP_TLS_*
 * variables. Verification stays on unless --tls-insecure. */
static void transport_options(const cli_run_t *run, sl_client_options_t *o)
{
    const char *transport = cli_opt(run, "transport");
    if (transport == NULL)
        transport = env("SLUICE_TRANSPORT", NULL);
    if (transport != NULL && strcmp(transport, "websocket") == 0)
        o->transport = SL_CLIENT_WEBSOCKET;
    o->tls_enabled = cli_flag(run, "tls") || env_true("SLUICE_TLS", "IGGY_TCP_TLS_ENABLED");
    o->tls_domain = cli_opt(run, "tls-domain");
    if (o->tls_domain == NULL)
        o->tls_domain = env("IGGY_TCP_TLS_DOMAIN", NULL);
    o->tls_ca_file = cli_opt(run, "tls-ca-file");
    if (o->tls_ca_file == NULL)
        o->tls_ca_file = env("IGGY_TCP_TLS_CA_FILE", NULL);
    if (cli_flag(run, "tls-insecure"))
        o->tls_validate_certificate = SL_CLIENT_TLS_VALIDATE_OFF;
}

static int connect_and_login(cli_run_t *run, const cli_context_t *ctx)
{
    int rc = 0;
    creds_t *c = cli_xalloc(sizeof(*c));
    cli_login_session_t *session = cli_xalloc(sizeof(*session));
    if (run->cmd->needs >= CLI_NEEDS_LOGIN) {
        bool have = cli_login_session_load(session) && strcmp(session->server, run->server) == 0;
        find_creds(run, ctx, have ? session : NULL, c);
        rc = complete_creds(c);
    }
    if (rc == 0) {
        /* A failover (docs/cli.md, "Clusters"): a connection lost after
         * the login (the node died, a cluster's leader among them) is
         * dialled again through the roster and the client settles anew
         * (the first connect stays one attempt), and a 57/58 refusal (no
         * leader yet, a group changing views) is replayed for about 10 s. */
        sl_client_options_t opts = {.connect_timeout_ms = 5000,
                                    .sdk_name = "sluice-cli",
                                    .reconnect_attempts = 10,
                                    .reconnect_delay_ms = 100,
                                    .reconnect_delay_max_ms = 1000,
                                    .transient_retries = 15,
                                    .transient_delay_ms = 20};
        transport_options(run, &opts);
        rc = sl_client_connect(run->host, run->port, &opts, &run->client);
        if (rc != 0)
            rc = cli_fail(rc, "connect to %s", run->server);
    }
    if (rc == 0 && run->cmd->needs >= CLI_NEEDS_LOGIN)
        rc = login(run, c);
    memset(c, 0, sizeof(*c));
    memset(session, 0, sizeof(*session));
    free(c);
    free(session);
    return rc;
}

int cli_session_open(cli_run_t *run)
{
    cli_contexts_t *contexts = cli_xalloc(sizeof(*contexts));
    int rc = cli_contexts_load(contexts);
    char active[64];
    cli_context_active(run, active, sizeof(active));
    const cli_context_t *ctx = rc == 0 ? cli_context_find(contexts, active) : NULL;
    /* The context commands themselves must work while the active one is missing. */
    if (rc == 0 && ctx == NULL && strcmp(active, "default") != 0 &&
        run->cmd->needs >= CLI_NEEDS_CONNECTION)
        rc = cli_error(CLI_EXIT_NOT_FOUND, "context '%s' not found in ~/.sluice/contexts.toml",
                       active);
    if (rc == 0)
        rc = find_server(run, ctx);
    if (rc == 0 && run->cmd->needs >= CLI_NEEDS_CONNECTION)
        rc = connect_and_login(run, ctx);
    memset(contexts, 0, sizeof(*contexts));
    free(contexts);
    return rc;
}

void cli_session_close(cli_run_t *run)
{
    sl_client_close(run->client);
    run->client = NULL;
}
