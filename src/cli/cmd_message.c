/* Handlers of message send, poll (with --follow) and flush. */
#include "cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COUNT(a)                 ((uint32_t)(sizeof(a) / sizeof((a)[0])))
#define SEND_BATCH_DEFAULT       1000
#define POLL_COUNT_DEFAULT       10
#define POLL_INTERVAL_MS_DEFAULT 250

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
    uint32_t n = 0;
    while (cli_opt_nth(run, "header", n) != NULL)
        n++;
    p->headers = cli_xalloc((n ? n : 1) * sizeof(*p->headers));
    p->raw = cli_xalloc((n ? n : 1) * sizeof(*p->raw));
    for (uint32_t i = 0; i < n; i++) {
        const char *text = cli_opt_nth(run, "header", i), *why;
        p->raw[i] = cli_xalloc(strlen(text) + 1);
        p->headers_count = i + 1;
        if (!cli_header(text, p->raw[i], &p->headers[i], &why))
            return cli_usage(run, "invalid header '%s': %s", text, why);
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

static int send_commit(send_state_t *s)
{
    sl_send_result_t r;
    s->open = false;
    int rc = sl_client_send_commit(s->run->client, &r);
    if (rc != 0 && s->sent == 0)
        return cli_fail(rc, "send messages to topic '%s' of stream '%s'", s->topic_text,
                        s->stream_text);
    if (rc != 0)
        return cli_fail(rc, "send messages to topic '%s' of stream '%s' (%llu already sent)",
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
    if (rc != 0)
        return cli_fail(rc, "send messages to topic '%s' of stream '%s'", s->topic_text,
                        s->stream_text);
    s->open = true;
    return 0;
}

/* Adds one message, committing full batches. An exit code. */
static int send_one(send_state_t *s, const void *payload, size_t len)
{
    int code = s->open ? 0 : send_begin(s);
    if (code != 0)
        return code;
    sl_send_message_t m = {.payload = payload,
                           .payload_len = len,
                           .headers = s->plan->headers,
                           .headers_count = s->plan->headers_count};
    int rc = sl_client_send_add(s->run->client, &m);
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
        rc = sl_client_send_add(s->run->client, &m);
        sl_client_send_pending(s->run->client, &pending, &bytes);
    }
    if (rc != 0) {
        sl_client_send_abandon(s->run->client);
        s->open = false;
        return cli_fail(rc, "add message %llu", (unsigned long long)(s->sent + pending + 1));
    }
    return pending >= s->plan->batch_size ? send_commit(s) : 0;
}

/* One message per line of standard input (the newline is not part of it). */
static int send_stdin(send_state_t *s)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    uint64_t lines = 0;
    while (rc == 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        rc = send_one(s, line, (size_t)n);
        lines++;
    }
    if (rc == 0 && ferror(stdin))
        rc = cli_error(CLI_EXIT_LOCAL, "reading standard input: %s", strerror(errno));
    free(line);
    if (rc == 0 && lines == 0)
        rc = cli_usage(s->run, "no messages to send (none given, standard input empty)");
    return rc;
}

int cli_cmd_message_send(cli_run_t *run)
{
    send_plan_t plan;
    int rc = plan_make(run, &plan);
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    send_state_t s = {run,  &plan, cli_id(stream), cli_id(topic), stream, topic, {0},
                      NULL, 0,     false};
    static const cli_col_t sent_cols[] = {{"messages_count", "MESSAGES", 0}};
    cli_doc_object(&s.doc, sent_cols, COUNT(sent_cols));
    s.batches = cli_doc_sub(&s.doc, "batches", batch_cols, COUNT(batch_cols));
    uint32_t count;
    const char *const *messages = cli_rest(run, "MESSAGE", &count);
    if (rc == 0 && count > 0) {
        for (uint32_t i = 0; rc == 0 && i < count; i++)
            rc = send_one(&s, messages[i], strlen(messages[i]));
    } else if (rc == 0) {
        rc = send_stdin(&s);
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
    sl_id_t stream;
    sl_id_t topic;
    uint32_t partition;
    sl_poll_strategy_t strategy;
    uint32_t count;
    bool auto_commit;
    bool follow;
    uint64_t follow_ms; /* 0: until interrupted */
    uint32_t interval_ms;
    bool show_headers;
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
    p->consumer = sl_consumer_single(cli_id(consumer ? consumer : "1"));
    p->stream = cli_id(cli_arg(run, "STREAM"));
    p->topic = cli_id(cli_arg(run, "TOPIC"));
    if (partition != NULL && !cli_u32(partition, &p->partition))
        return cli_usage(run, "invalid PARTITION '%s' (a number)", partition);
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
    } else if (run->format == CLI_FORMAT_TABLE) {
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

int cli_cmd_message_poll(cli_run_t *run)
{
    poll_plan_t p;
    int rc = poll_plan(run, &p);
    if (rc != 0)
        return rc;
    /* Following ends on Ctrl-C or SIGTERM with exit code 0: that is how it is stopped. */
    struct sigaction sa = {.sa_handler = on_stop_signal}, old_int, old_term;
    if (p.follow) {
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }
    uint64_t deadline = p.follow && p.follow_ms ? now_ms() + p.follow_ms : 0;
    bool first = true;
    size_t widths[COUNT(message_cols)] = {0};
    do {
        sl_polled_messages_t got;
        rc = sl_client_poll_messages(run->client, p.consumer, p.stream, p.topic, p.partition,
                                     p.strategy, p.count, p.auto_commit, &got);
        if (rc != 0) {
            rc = cli_fail(rc, "poll messages");
            break;
        }
        if (got.count > 0 || !p.follow)
            print_batch(run, &p, &got, first, widths);
        if (got.count > 0) {
            /* Continue after the last message, whatever the first strategy was. */
            p.strategy = sl_poll_offset(got.messages[got.count - 1].offset + 1);
            first = false;
        }
        if (p.follow && got.count < p.count)
            pause_ms(p.interval_ms, deadline);
    } while (p.follow && !poll_stop && (deadline == 0 || now_ms() < deadline));
    if (p.follow) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    return rc;
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
    if (rc != 0)
        return cli_fail(rc, "flush partition %u of topic '%s' of stream '%s'", partition, topic,
                        stream);
    cli_done(run, "flushed partition %u of topic '%s' of stream '%s'", partition, topic, stream);
    return 0;
}
