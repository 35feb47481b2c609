/* Handlers of message send (arguments, stdin, --input-file), poll (with
 * --follow, --output-file and as a consumer-group member) and flush. */
#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/limits.h"

#define COUNT(a)                 ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define SEND_BATCH_DEFAULT       1000
#define POLL_COUNT_DEFAULT       10
#define POLL_INTERVAL_MS_DEFAULT 250
#define POLL_RESYNCS_MAX         16 /* group re-syncs in a row before giving up */
#define FOLLOW_REDIALS_MAX       5  /* --follow: lost connections in a row before giving up */

/* Binary message files hold one record per message, the layout Iggy's CLI
 * writes with --output-file and reads with --input-file: a 64-byte
 * little-endian header (checksum u64, id u128, offset u64, timestamp u64,
 * origin timestamp u64, user-headers length u32, payload length u32, 8
 * reserved bytes), then the payload, then the user-headers block. */
#define RECORD_HEADER_SIZE 64
#define RECORD_PAYLOAD_MAX SL_PAYLOAD_MAX      /* the largest payload a message may have */
#define RECORD_HEADERS_MAX SL_USER_HEADERS_MAX /* the largest user-headers block */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

/* --file-format: binary unless "lines" is asked for. */
static bool file_binary(cli_run_t *run)
{
    const char *format = cli_opt(run, "file-format");
    return format == NULL || strcmp(format, "binary") == 0;
}

/* --- send -------------------------------------------------------------------------------- */

typedef struct send_plan {
    sl_send_partitioning_t partitioning;
    sl_header_t *headers;
    uint8_t **raw; /* storage of hex-decoded raw header values */
    uint32_t headers_count;
    uint32_t batch_size;
} send_plan_t;

static void plan_free(send_plan_t *p)
{
    for (uint32_t i = 0; i < p->headers_count; i++)
        free(p->raw[i]);
    free(p->raw);
    free(p->headers);
}

static int plan_partitioning(cli_run_t *run, send_plan_t *p)
{
    const char *partition = cli_opt(run, "partition-id"), *key = cli_opt(run, "key");
    int chosen = (partition != NULL) + (key != NULL) + cli_flag(run, "balanced");
    if (chosen > 1)
        return cli_usage(run, "give only one of --partition-id, --key and --balanced");
    p->partitioning = sl_partitioning_balanced();
    if (partition != NULL) {
        uint32_t id;
        if (!cli_u32(partition, &id))
            return cli_usage(run, "invalid --partition-id '%s' (a number)", partition);
        p->partitioning = sl_partitioning_partition(id);
    } else if (key != NULL) {
        size_t len = strlen(key);
        if (len == 0 || len > 255)
            return cli_usage(run, "--key must be 1..255 bytes");
        p->partitioning = sl_partitioning_messages_key(key, (uint32_t)len);
    }
    return 0;
}

static int plan_make(cli_run_t *run, send_plan_t *p)
{
    *p = (send_plan_t){.batch_size = SEND_BATCH_DEFAULT};
    int rc = plan_partitioning(run, p);
    if (rc != 0)
        return rc;
    const char *batch = cli_opt(run, "batch-size");
    if (batch != NULL && (!cli_u32(batch, &p->batch_size) || p->batch_size == 0))
        return cli_usage(run, "invalid --batch-size '%s' (a number from 1)", batch);
    /* Each -H value may hold several headers, comma-separated as in Iggy's
     * CLI; a comma not followed by KEY:KIND: belongs to the value. */
    uint32_t n = 0;
    for (const char *h; (h = cli_opt_nth(run, "header", n)) != NULL; n++)
        for (const char *c = cli_header_next(h); c != NULL; c = cli_header_next(c + 1))
            p->headers_count++;
    p->headers_count += n;
    p->headers = cli_xalloc((p->headers_count ? p->headers_count : 1) * sizeof(*p->headers));
    p->raw = cli_xalloc((p->headers_count ? p->headers_count : 1) * sizeof(*p->raw));
    uint32_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        const char *text = cli_opt_nth(run, "header", i), *why;
        while (text != NULL) {
            const char *comma = cli_header_next(text);
            size_t len = comma ? (size_t)(comma - text) : strlen(text);
            char *one = cli_xalloc(2 * len + 2); /* the text, then the raw value storage */
            memcpy(one, text, len);
            one[len] = '\0';
            p->raw[at] = (uint8_t *)one;
            if (!cli_header(one, (uint8_t *)one + len + 1, &p->headers[at++], &why)) {
                p->headers_count = at;
                return cli_usage(run, "invalid header '%s': %s", one, why);
            }
            text = comma ? comma + 1 : NULL;
        }
    }
    return 0;
}

static const cli_col_t batch_cols[] = {
    {"partition_id", "PARTITION", 0},
    {"base_offset", "FIRST OFFSET", 0},
    {"messages_count", "MESSAGES", 0},
};

typedef struct send_state {
    cli_run_t *run;
    send_plan_t *plan;
    sl_id_t stream;
    sl_id_t topic;
    const char *stream_text;
    const char *topic_text;
    cli_doc_t doc;
    cli_table_t *batches;
    uint64_t sent;
    bool open;
} send_state_t;

/* The stream, topic and (with --partition-id) partition sent to. */
static cli_target_t send_target(const send_state_t *s)
{
    cli_target_t t = {.stream = s->stream_text, .topic = s->topic_text};
    if (s->plan->partitioning.kind == SL_SEND_PARTITION_ID) {
        t.has_partition = true;
        t.partition = s->plan->partitioning.partition_id;
    }
    return t;
}

static int send_commit(send_state_t *s)
{
    sl_send_result_t r;
    s->open = false;
    int rc = sl_client_send_commit(s->run->client, &r);
    cli_target_t target = send_target(s);
    if (rc != 0 && s->sent == 0)
        return cli_fail_at(s->run, rc, &target, "send messages to topic '%s' of stream '%s'",
                           s->topic_text, s->stream_text);
    if (rc != 0)
        return cli_fail_at(s->run, rc, &target,
                           "send messages to topic '%s' of stream '%s' (%llu already sent)",
                           s->topic_text, s->stream_text, (unsigned long long)s->sent);
    s->sent += r.messages_count;
    if (r.confirmed) {
        cli_val_t v[] = {cli_u(r.partition_id), cli_u(r.base_offset), cli_u(r.messages_count)};
        cli_table_row(s->batches, v);
    }
    return 0;
}

static int send_begin(send_state_t *s)
{
    int rc = sl_client_send_begin(s->run->client, s->stream, s->topic, s->plan->partitioning);
    cli_target_t target = send_target(s);
    if (rc != 0)
        return cli_fail_at(s->run, rc, &target, "send messages to topic '%s' of stream '%s'",
                           s->topic_text, s->stream_text);
    s->open = true;
    return 0;
}

/* A message the client refused to add, with its sizes against the limits. */
static int fail_message(int rc, const sl_send_message_t *m, uint64_t number)
{
    char hint[200];
    const char *why = NULL;
    if (rc == -SL_ERR_TOO_BIG_MESSAGE_PAYLOAD) {
        snprintf(hint, sizeof(hint), "its payload is %zu bytes, at most %u are allowed",
                 m->payload_len, SL_PAYLOAD_MAX);
        why = hint;
    } else if (rc == -SL_ERR_TOO_BIG_USER_HEADERS) {
        snprintf(hint, sizeof(hint), "its user headers take more than the %u bytes allowed",
                 SL_USER_HEADERS_MAX);
        why = hint;
    }
    return cli_fail_hint(rc, why, "add message %llu", (unsigned long long)number);
}

/* Adds one message, committing full batches. An exit code. */
static int send_message(send_state_t *s, const sl_send_message_t *m)
{
    int code = s->open ? 0 : send_begin(s);
    if (code != 0)
        return code;
    int rc = sl_client_send_add(s->run->client, m);
    uint32_t pending;
    size_t bytes;
    sl_client_send_pending(s->run->client, &pending, &bytes);
    if (rc == -SL_ERR_COMMAND_LENGTH_ERROR && pending > 0) {
        /* The request frame is full: send it and start the next batch. */
        code = send_commit(s);
        if (code == 0)
            code = send_begin(s);
        if (code != 0)
            return code;
        rc = sl_client_send_add(s->run->client, m);
        sl_client_send_pending(s->run->client, &pending, &bytes);
    }
    if (rc != 0) {
        sl_client_send_abandon(s->run->client);
        s->open = false;
        return fail_message(rc, m, s->sent + pending + 1);
    }
    return pending >= s->plan->batch_size ? send_commit(s) : 0;
}

/* A payload with the -H headers. */
static int send_one(send_state_t *s, const void *payload, size_t len)
{
    sl_send_message_t m = {.payload = payload,
                           .payload_len = len,
                           .headers = s->plan->headers,
                           .headers_count = s->plan->headers_count};
    return send_message(s, &m);
}

/* One message per line of in (the newline is not part of it). */
static int send_lines(send_state_t *s, FILE *in, const char *what)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    uint64_t lines = 0;
    while (rc == 0 && (n = getline(&line, &cap, in)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        rc = send_one(s, line, (size_t)n);
        lines++;
    }
    if (rc == 0 && ferror(in))
        rc = cli_error(CLI_EXIT_LOCAL, "reading %s: %s", what, strerror(errno));
    free(line);
    if (rc == 0 && lines == 0)
        rc = cli_usage(s->run, "no messages to send (none given, %s empty)", what);
    return rc;
}

/* Reads n bytes into buf: 0 with *end set at a clean end of file (nothing
 * read), 0 when all n came, else an exit code (short read, I/O error). */
static int read_exact(FILE *in, void *buf, size_t n, const char *path, uint64_t at, bool *end)
{
    size_t got = fread(buf, 1, n, in);
    *end = got == 0 && !ferror(in) && n > 0;
    if (got == n || *end)
        return 0;
    if (ferror(in))
        return cli_error(CLI_EXIT_LOCAL, "reading '%s': %s", path, strerror(errno));
    return cli_error(CLI_EXIT_LOCAL, "'%s' ends inside the message record at byte %llu", path,
                     (unsigned long long)at);
}

/* The records of a binary message file, each sent with its id, origin
 * timestamp, payload and headers (the server gives new offsets). */
static int send_records(send_state_t *s, FILE *in, const char *path)
{
    uint8_t head[RECORD_HEADER_SIZE];
    uint8_t *body = NULL;
    size_t cap = 0;
    uint64_t at = 0, records = 0;
    bool end = false;
    int rc = 0;
    while (rc == 0) {
        rc = read_exact(in, head, sizeof(head), path, at, &end);
        if (rc != 0 || end)
            break;
        uint32_t headers_len = (uint32_t)get_le(head + 48, 4);
        uint32_t payload_len = (uint32_t)get_le(head + 52, 4);
        if (payload_len > RECORD_PAYLOAD_MAX || headers_len > RECORD_HEADERS_MAX) {
            rc = cli_error(CLI_EXIT_LOCAL,
                           "'%s' holds no message record at byte %llu (payload %u bytes, "
                           "headers %u bytes)",
                           path, (unsigned long long)at, payload_len, headers_len);
            break;
        }
        size_t need = (size_t)payload_len + headers_len;
        if (need > cap) {
            free(body);
            cap = need;
            body = cli_xalloc(cap);
        }
        rc = read_exact(in, body, need, path, at, &end);
        if (rc == 0 && end && need > 0)
            rc = cli_error(CLI_EXIT_LOCAL, "'%s' ends inside the message record at byte %llu", path,
                           (unsigned long long)at);
        if (rc != 0)
            break;
        sl_send_message_t m = {.id = {get_le(head + 8, 8), get_le(head + 16, 8)},
                               .origin_timestamp_us = get_le(head + 40, 8),
                               .payload = body,
                               .payload_len = payload_len,
                               .headers_raw = headers_len ? body + payload_len : NULL,
                               .headers_raw_len = headers_len};
        rc = send_message(s, &m);
        at += sizeof(head) + payload_len + headers_len;
        records++;
    }
    free(body);
    if (rc == 0 && records == 0)
        rc = cli_usage(s->run, "no messages to send ('%s' is empty)", path);
    return rc;
}

/* --input-file: records or lines. An exit code. */
static int send_file(send_state_t *s, const char *path)
{
    bool binary = file_binary(s->run);
    if (binary && s->plan->headers_count > 0)
        return cli_usage(s->run, "--header does not apply to --file-format binary (each record "
                                 "carries its own headers)");
    FILE *in = fopen(path, "rb");
    if (in == NULL)
        return cli_error(CLI_EXIT_LOCAL, "cannot open '%s': %s", path, strerror(errno));
    char what[300];
    snprintf(what, sizeof(what), "'%s'", path);
    int rc = binary ? send_records(s, in, path) : send_lines(s, in, what);
    fclose(in);
    return rc;
}

int cli_cmd_message_send(cli_run_t *run)
{
    send_plan_t plan;
    int rc = plan_make(run, &plan);
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const char *input = cli_opt(run, "input-file");
    send_state_t s = {run,  &plan, cli_id(stream), cli_id(topic), stream, topic, {0},
                      NULL, 0,     false};
    static const cli_col_t sent_cols[] = {{"messages_count", "MESSAGES", 0}};
    cli_doc_object(&s.doc, sent_cols, COUNT(sent_cols));
    s.batches = cli_doc_sub(&s.doc, "batches", batch_cols, COUNT(batch_cols));
    uint32_t count;
    const char *const *messages = cli_rest(run, "MESSAGE", &count);
    if (rc == 0 && input != NULL && count > 0)
        rc = cli_usage(run, "give messages as arguments or with --input-file, not both");
    if (rc == 0 && input == NULL && cli_opt(run, "file-format") != NULL)
        rc = cli_usage(run, "--file-format goes with --input-file");
    if (rc == 0 && count > 0) {
        for (uint32_t i = 0; rc == 0 && i < count; i++)
            rc = send_one(&s, messages[i], strlen(messages[i]));
    } else if (rc == 0 && input != NULL) {
        rc = send_file(&s, input);
    } else if (rc == 0) {
        rc = send_lines(&s, stdin, "standard input");
    }
    if (rc == 0 && s.open)
        rc = send_commit(&s);
    if (s.open)
        sl_client_send_abandon(run->client);
    if (rc == 0) {
        cli_table_row(&s.doc.main, (cli_val_t[]){cli_u(s.sent)});
        cli_created(run, &s.doc, "sent %llu message%s to topic '%s' of stream '%s'",
                    (unsigned long long)s.sent, s.sent == 1 ? "" : "s", topic, stream);
    }
    cli_doc_free(&s.doc);
    plan_free(&plan);
    return rc;
}

/* --- poll -------------------------------------------------------------------------------- */

static const cli_col_t message_cols[] = {
    {"offset", "OFFSET", 0},
    {"timestamp_us", "TIMESTAMP", 0},
    {"origin_timestamp_us", "ORIGIN", CLI_COL_JSON_ONLY},
    {"id", "ID", 0},
    {"checksum", "CHECKSUM", CLI_COL_JSON_ONLY},
    {"payload_size", "SIZE", 0},
    {"headers", "HEADERS", 0}, /* table: only with --show-headers */
    {"payload", "PAYLOAD", 0},
    {"payload_hex", "PAYLOAD HEX", CLI_COL_JSON_ONLY},
};

/* The headers as a JSON array and as "k=v, ..." text. */
static cli_val_t headers_value(cli_doc_t *doc, const sl_polled_message_t *m)
{
    sl_header_iter_t it;
    sl_header_t h;
    char *json, *text;
    size_t json_len, text_len;
    FILE *j = cli_memstream(&json, &json_len), *t = cli_memstream(&text, &text_len);
    fputc('[', j);
    if (sl_polled_message_headers(m, &it) == 0) {
        for (uint32_t i = 0; sl_header_next(&it, &h); i++) {
            cli_val_t key = cli_typed_value(doc, h.key.kind, h.key.bytes, h.key.len);
            cli_val_t value = cli_typed_value(doc, h.value.kind, h.value.bytes, h.value.len);
            fprintf(j, "%s{\"key\": ", i ? ", " : "");
            cli_val_json(j, &key);
            fprintf(j, ", \"kind\": \"%s\", \"value\": ", cli_header_kind_name(h.value.kind));
            cli_val_json(j, &value);
            fputc('}', j);
            fputs(i ? ", " : "", t);
            cli_val_text(t, &key);
            fputc('=', t);
            cli_val_text(t, &value);
        }
    }
    fputc(']', j);
    fclose(j);
    fclose(t);
    cli_val_t v = {.kind = CLI_VAL_JSON};
    v.s = cli_doc_adopt(doc, json);
    v.alt = cli_doc_adopt(doc, text);
    return v;
}

static void message_row(cli_doc_t *doc, cli_table_t *t, const sl_polled_message_t *m)
{
    cli_val_t payload = cli_bytes(m->payload, m->payload_len);
    cli_val_t hex = {.kind = CLI_VAL_ABSENT};
    if (!cli_utf8_valid(m->payload, m->payload_len)) {
        /* JSON has no byte strings: such payloads travel as hex; the table
         * shows them escaped. */
        char *text;
        size_t len;
        FILE *f = cli_memstream(&text, &len);
        cli_text_escaped(f, m->payload, m->payload_len);
        fclose(f);
        payload = (cli_val_t){.kind = CLI_VAL_JSON, .s = "null", .alt = cli_doc_adopt(doc, text)};
        hex = cli_str(cli_doc_hex(doc, m->payload, m->payload_len));
    }
    cli_val_t v[] = {cli_u(m->offset),
                     cli_typed(CLI_VAL_TIME_US, m->timestamp_us),
                     cli_u(m->origin_timestamp_us),
                     cli_str(cli_doc_printf(doc, "%016llx%016llx", (unsigned long long)m->id.hi,
                                            (unsigned long long)m->id.lo)),
                     cli_u(m->checksum),
                     cli_u(m->payload_len),
                     headers_value(doc, m),
                     payload,
                     hex};
    cli_table_row(t, v);
}

typedef struct poll_plan {
    sl_consumer_ref_t consumer;
    const char *consumer_text;
    bool group; /* poll as a member of the group consumer names */
    sl_id_t stream;
    sl_id_t topic;
    const char *stream_text;
    const char *topic_text;
    uint32_t partition;
    bool partition_given;
    sl_poll_strategy_t strategy;
    sl_poll_strategy_t first_strategy; /* again after a group moves us to another partition */
    uint32_t count;
    bool auto_commit;
    bool follow;
    uint64_t follow_ms; /* 0: until interrupted */
    uint32_t interval_ms;
    bool show_headers;
    const char *output_file; /* NULL: print the messages */
    bool binary;
} poll_plan_t;

static int plan_strategy(cli_run_t *run, poll_plan_t *p)
{
    const char *offset = cli_opt(run, "offset"), *ts = cli_opt(run, "timestamp");
    int chosen = (offset != NULL) + (ts != NULL) + cli_flag(run, "first") + cli_flag(run, "last") +
                 cli_flag(run, "next");
    if (chosen > 1)
        return cli_usage(run, "give only one of --offset, --first, --last, --next, --timestamp");
    p->strategy = sl_poll_first();
    uint64_t v;
    if (offset != NULL) {
        if (!cli_u64(offset, &v))
            return cli_usage(run, "invalid --offset '%s' (a number)", offset);
        p->strategy = sl_poll_offset(v);
    } else if (ts != NULL) {
        if (!cli_u64(ts, &v))
            return cli_usage(run, "invalid --timestamp '%s' (microseconds)", ts);
        p->strategy = sl_poll_timestamp(v);
    } else if (cli_flag(run, "last")) {
        p->strategy = sl_poll_last();
    } else if (cli_flag(run, "next")) {
        p->strategy = sl_poll_next();
    }
    return 0;
}

static int number_opt(cli_run_t *run, const char *name, uint32_t fallback, uint32_t *out)
{
    const char *text = cli_opt(run, name);
    *out = fallback;
    if (text != NULL && !cli_u32(text, out))
        return cli_usage(run, "invalid --%s '%s' (a number)", name, text);
    return 0;
}

static int poll_plan(cli_run_t *run, poll_plan_t *p)
{
    *p = (poll_plan_t){0};
    const char *consumer = cli_opt(run, "consumer"), *partition = cli_arg(run, "PARTITION");
    const char *kind = cli_opt(run, "kind");
    p->group = kind != NULL && strcmp(kind, "consumer-group") == 0;
    if (p->group && consumer == NULL)
        return cli_usage(run, "--kind consumer-group needs --consumer GROUP");
    p->consumer_text = consumer ? consumer : "1";
    p->consumer = p->group ? sl_consumer_in_group(cli_id(consumer))
                           : sl_consumer_single(cli_id(p->consumer_text));
    p->stream_text = cli_arg(run, "STREAM");
    p->topic_text = cli_arg(run, "TOPIC");
    p->stream = cli_id(p->stream_text);
    p->topic = cli_id(p->topic_text);
    p->partition_given = partition != NULL;
    if (partition != NULL && !cli_u32(partition, &p->partition))
        return cli_usage(run, "invalid PARTITION '%s' (a number)", partition);
    p->output_file = cli_opt(run, "output-file");
    p->binary = file_binary(run);
    if (p->output_file == NULL && cli_opt(run, "file-format") != NULL)
        return cli_usage(run, "--file-format goes with --output-file");
    p->auto_commit = cli_flag(run, "auto-commit");
    p->follow = cli_flag(run, "follow") || cli_opt(run, "follow-seconds") != NULL;
    p->show_headers = cli_flag(run, "show-headers");
    uint32_t seconds = 0;
    int rc = plan_strategy(run, p);
    if (rc == 0)
        rc = number_opt(run, "count", POLL_COUNT_DEFAULT, &p->count);
    if (rc == 0)
        rc = number_opt(run, "interval-ms", POLL_INTERVAL_MS_DEFAULT, &p->interval_ms);
    if (rc == 0)
        rc = number_opt(run, "follow-seconds", 0, &seconds);
    p->follow_ms = (uint64_t)seconds * 1000;
    p->first_strategy = p->strategy;
    return rc;
}

static volatile sig_atomic_t poll_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    poll_stop = 1;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sleeps up to ms, returning early on a stop signal or at the deadline. */
static void pause_ms(uint32_t ms, uint64_t deadline)
{
    uint64_t until = now_ms() + ms;
    if (deadline != 0 && until > deadline)
        until = deadline;
    while (!poll_stop && now_ms() < until) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void print_batch(cli_run_t *run, const poll_plan_t *p, const sl_polled_messages_t *got,
                        bool first, size_t *widths)
{
    cli_doc_t doc;
    cli_col_t cols[COUNT(message_cols)];
    memcpy(cols, message_cols, sizeof(cols));
    if (!p->show_headers)
        cols[6].flags = CLI_COL_JSON_ONLY;
    static const cli_col_t head_cols[] = {{"partition_id", "PARTITION", CLI_COL_JSON_ONLY},
                                          {"current_offset", "CURRENT", CLI_COL_JSON_ONLY},
                                          {"messages_count", "COUNT", CLI_COL_JSON_ONLY}};
    if (p->follow)
        cli_doc_list(&doc, cols, COUNT(cols));
    else
        cli_doc_object(&doc, head_cols, COUNT(head_cols));
    cli_table_t *t = p->follow ? &doc.main : cli_doc_sub(&doc, "messages", cols, COUNT(cols));
    for (uint32_t i = 0; i < got->count; i++)
        message_row(&doc, t, &got->messages[i]);
    if (p->follow) {
        cli_table_print_rows(run->out, run->format, t, 0, first, widths);
    } else if (run->format != CLI_FORMAT_JSON) {
        if (got->count > 0)
            cli_table_print_rows(run->out, run->format, t, 0, true, NULL);
        else
            cli_done(run, "no messages");
    } else {
        cli_val_t head[] = {cli_u(got->partition_id), cli_u(got->current_offset),
                            cli_u(got->count)};
        cli_table_row(&doc.main, head);
        cli_doc_print(run, &doc);
    }
    cli_doc_free(&doc);
}

/* --- poll: output files and consumer groups ------------------------------------------------ */

typedef struct poll_sink {
    FILE *file; /* --output-file, or NULL */
    uint64_t messages;
    uint64_t bytes;
} poll_sink_t;

/* Appends the messages to the output file: binary records or payload lines. */
static int write_batch(const poll_plan_t *p, poll_sink_t *sink, const sl_polled_messages_t *got)
{
    for (uint32_t i = 0; i < got->count; i++) {
        const sl_polled_message_t *m = &got->messages[i];
        if (p->binary) {
            uint8_t head[RECORD_HEADER_SIZE] = {0};
            put_le(head, m->checksum, 8);
            put_le(head + 8, m->id.lo, 8);
            put_le(head + 16, m->id.hi, 8);
            put_le(head + 24, m->offset, 8);
            put_le(head + 32, m->timestamp_us, 8);
            put_le(head + 40, m->origin_timestamp_us, 8);
            put_le(head + 48, m->headers_len, 4);
            put_le(head + 52, m->payload_len, 4);
            fwrite(head, 1, sizeof(head), sink->file);
            sink->bytes += sizeof(head) + m->headers_len;
        }
        fwrite(m->payload, 1, m->payload_len, sink->file);
        if (p->binary)
            fwrite(m->headers, 1, m->headers_len, sink->file);
        else
            fputc('\n', sink->file);
        sink->bytes += m->payload_len + (p->binary ? 0 : 1);
    }
    sink->messages += got->count;
    if (fflush(sink->file) != 0 || ferror(sink->file))
        return cli_error(CLI_EXIT_LOCAL, "writing '%s': %s", p->output_file, strerror(errno));
    return 0;
}

static int sink_close(cli_run_t *run, const poll_plan_t *p, poll_sink_t *sink, int rc)
{
    if (sink->file == NULL)
        return rc;
    if (fclose(sink->file) != 0 && rc == 0)
        rc = cli_error(CLI_EXIT_LOCAL, "writing '%s': %s", p->output_file, strerror(errno));
    if (rc != 0)
        return rc;
    static const cli_col_t cols[] = {
        {"messages_count", "MESSAGES", 0}, {"bytes", "BYTES", 0}, {"file", "FILE", 0}};
    cli_doc_t doc;
    cli_doc_object(&doc, cols, COUNT(cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_u(sink->messages), cli_u(sink->bytes),
                                           cli_str(p->output_file)});
    cli_created(run, &doc, "stored %llu message%s (%llu bytes) in '%s'",
                (unsigned long long)sink->messages, sink->messages == 1 ? "" : "s",
                (unsigned long long)sink->bytes, p->output_file);
    cli_doc_free(&doc);
    return 0;
}

/* The stream, topic and group of a group poll, for error messages. */
static cli_target_t group_target(const poll_plan_t *p)
{
    return (cli_target_t){
        .stream = p->stream_text, .topic = p->topic_text, .group = p->consumer_text};
}

/* The partition to poll as a group member: PARTITION when the group assigns
 * it to this connection, else the first one assigned. An exit code. */
static int group_partition(cli_run_t *run, poll_plan_t *p)
{
    const sl_assignment_t *a;
    int rc = sl_client_sync_consumer_group(run->client, p->stream, p->topic, p->consumer.id, &a);
    cli_target_t target = group_target(p);
    if (rc != 0)
        return cli_fail_at(run, rc, &target, "sync with consumer group '%s'", p->consumer_text);
    if (a == NULL)
        return cli_error(CLI_EXIT_SERVER, "this connection is no member of consumer group '%s'",
                         p->consumer_text);
    for (uint32_t i = 0; i < a->partitions_count; i++) {
        if (!p->partition_given || a->partitions[i] == p->partition) {
            p->partition = a->partitions[i];
            return 0;
        }
    }
    if (a->partitions_count == 0)
        return cli_error(CLI_EXIT_SERVER,
                         "consumer group '%s' assigns no partition to this member (it has "
                         "more members than the topic has partitions)",
                         p->consumer_text);
    return cli_error(CLI_EXIT_SERVER,
                     "partition %u is assigned to another member of consumer "
                     "group '%s'",
                     p->partition, p->consumer_text);
}

static int group_join(cli_run_t *run, poll_plan_t *p, bool *joined)
{
    int rc = sl_client_join_consumer_group(run->client, p->stream, p->topic, p->consumer.id);
    cli_target_t target = group_target(p);
    if (rc != 0)
        return cli_fail_at(run, rc, &target,
                           "join consumer group '%s' of topic '%s' of stream '%s'",
                           p->consumer_text, p->topic_text, p->stream_text);
    *joined = true;
    return group_partition(run, p);
}

static int group_leave(cli_run_t *run, const poll_plan_t *p, int rc)
{
    int left = sl_client_leave_consumer_group(run->client, p->stream, p->topic, p->consumer.id);
    if (left != 0 && rc == 0)
        return cli_fail(left, "leave consumer group '%s'", p->consumer_text);
    return rc;
}

/* --- poll: the loop ----------------------------------------------------------------------------
 */

/* Polls until done (once, or until --follow ends). An exit code. */
static int poll_loop(cli_run_t *run, poll_plan_t *p, poll_sink_t *sink)
{
    uint64_t deadline = p->follow && p->follow_ms ? now_ms() + p->follow_ms : 0;
    bool first = true;
    size_t widths[COUNT(message_cols)] = {0};
    uint32_t resyncs = 0, redials = 0;
    for (;;) {
        sl_polled_messages_t got;
        int rc = sl_client_poll_messages(run->client, p->consumer, p->stream, p->topic,
                                         p->partition, p->strategy, p->count, p->auto_commit, &got);
        bool lost = rc == -SL_ERR_DISCONNECTED || rc == -SL_ERR_NOT_CONNECTED ||
                    rc == -SL_ERR_TRANSIENT_NOT_ACCEPTED;
        if (p->follow && lost && redials < FOLLOW_REDIALS_MAX && !poll_stop) {
            /* A failover outlasted the client's own reconnects and replays (a slow
             * election): a follower waits and dials again, polls being reads. */
            redials++;
            pause_ms(1000, deadline);
            int again = sl_client_reconnect(run->client);
            (void)again; /* the next poll says how it went */
            continue;
        }
        if (rc == 0)
            redials = 0;
        if (rc != 0)
            return cli_fail_at(run, rc,
                               &(cli_target_t){.stream = p->stream_text,
                                               .topic = p->topic_text,
                                               .has_partition = true,
                                               .partition = p->partition},
                               "poll messages from partition %u of topic '%s' of stream '%s'",
                               p->partition, p->topic_text, p->stream_text);
        if (got.resync_required) {
            /* The group moved its partitions (a member came or went). */
            if (++resyncs > POLL_RESYNCS_MAX)
                return cli_error(CLI_EXIT_SERVER, "consumer group '%s' keeps moving partitions",
                                 p->consumer_text);
            rc = group_partition(run, p);
            if (rc != 0)
                return rc;
            p->strategy = p->first_strategy;
            continue;
        }
        resyncs = 0;
        if (sink->file != NULL) {
            rc = write_batch(p, sink, &got);
            if (rc != 0)
                return rc;
        } else if (got.count > 0 || !p->follow) {
            print_batch(run, p, &got, first, widths);
        }
        if (got.count > 0) {
            /* Continue after the last message, whatever the first strategy was. */
            p->strategy = sl_poll_offset(got.messages[got.count - 1].offset + 1);
            first = false;
        }
        if (p->follow && got.count < p->count)
            pause_ms(p->interval_ms, deadline);
        if (!p->follow || poll_stop || (deadline != 0 && now_ms() >= deadline))
            return 0;
    }
}

int cli_cmd_message_poll(cli_run_t *run)
{
    poll_plan_t p;
    int rc = poll_plan(run, &p);
    if (rc != 0)
        return rc;
    poll_sink_t sink = {0};
    if (p.output_file != NULL) {
        /* Appended to, as Iggy's CLI does: several polls can fill one file. */
        sink.file = fopen(p.output_file, "ab");
        if (sink.file == NULL)
            return cli_error(CLI_EXIT_LOCAL, "cannot open '%s': %s", p.output_file,
                             strerror(errno));
    }
    /* Following ends on Ctrl-C or SIGTERM with exit code 0: that is how it is stopped. */
    struct sigaction sa = {.sa_handler = on_stop_signal}, old_int, old_term;
    if (p.follow) {
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }
    bool joined = false;
    rc = p.group ? group_join(run, &p, &joined) : 0;
    if (rc == 0)
        rc = poll_loop(run, &p, &sink);
    if (joined)
        rc = group_leave(run, &p, rc);
    if (p.follow) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    return sink_close(run, &p, &sink, rc);
}

/* --- flush --------------------------------------------------------------------------------- */

int cli_cmd_message_flush(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    uint32_t partition;
    if (!cli_u32(cli_arg(run, "PARTITION"), &partition))
        return cli_usage(run, "invalid PARTITION '%s' (a number)", cli_arg(run, "PARTITION"));
    int rc = sl_client_flush_unsaved_buffer(run->client, cli_id(stream), cli_id(topic), partition,
                                            cli_flag(run, "fsync"));
    if (rc == -SL_ERR_FEATURE_UNAVAILABLE)
        return cli_fail_hint(rc,
                             "protocol 0.11.0 servers (sluiced, Apache Iggy) do not offer "
                             "FlushUnsavedBuffer",
                             "flush partition %u of topic '%s' of stream '%s'", partition, topic,
                             stream);
    if (rc != 0)
        return cli_fail_at(
            run, rc,
            &(cli_target_t){
                .stream = stream, .topic = topic, .has_partition = true, .partition = partition},
            "flush partition %u of topic '%s' of stream '%s'", partition, topic, stream);
    cli_done(run, "flushed partition %u of topic '%s' of stream '%s'", partition, topic, stream);
    return 0;
}
