/* Handlers of the stream, topic, partition and segment commands. */
#include "cli/cli.h"

#include <string.h>

#include "base/limits.h"

#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* --- streams -------------------------------------------------------------------------- */

static const cli_col_t stream_cols[] = {
    {"id", "ID", 0},
    {"name", "NAME", 0},
    {"topics_count", "TOPICS", 0},
    {"messages_count", "MESSAGES", 0},
    {"size_bytes", "SIZE", 0},
    {"created_at_us", "CREATED", 0},
};

static void stream_row(cli_table_t *t, const sl_stream_t *s)
{
    cli_val_t v[] = {cli_u(s->id),
                     cli_str(s->name),
                     cli_u(s->topics_count),
                     cli_u(s->messages_count),
                     cli_typed(CLI_VAL_SIZE, s->size_bytes),
                     cli_typed(CLI_VAL_TIME_US, s->created_at_us)};
    cli_table_row(t, v);
}

static const cli_col_t topic_cols[] = {
    {"id", "ID", 0},
    {"name", "NAME", 0},
    {"partitions_count", "PARTITIONS", 0},
    {"messages_count", "MESSAGES", 0},
    {"size_bytes", "SIZE", 0},
    {"message_expiry_us", "EXPIRY", 0},
    {"max_topic_size", "MAX SIZE", 0},
    {"compression", "COMPRESSION", 0},
    {"created_at_us", "CREATED", 0},
};

static void topic_row(cli_table_t *t, const sl_topic_t *s)
{
    cli_val_t v[] = {cli_u(s->id),
                     cli_str(s->name),
                     cli_u(s->partitions_count),
                     cli_u(s->messages_count),
                     cli_typed(CLI_VAL_SIZE, s->size_bytes),
                     cli_typed(CLI_VAL_EXPIRY_US, s->message_expiry_us),
                     cli_typed(CLI_VAL_SIZE, s->max_topic_size),
                     cli_str(s->compression == SL_TOPIC_COMPRESSION_GZIP ? "gzip" : "none"),
                     cli_typed(CLI_VAL_TIME_US, s->created_at_us)};
    cli_table_row(t, v);
}

int cli_cmd_stream_create(cli_run_t *run)
{
    const char *name = cli_arg(run, "NAME");
    const sl_stream_t *s;
    int rc = sl_client_create_stream(run->client, name, &s);
    if (rc != 0)
        return cli_fail(rc, "create stream '%s'", name);
    cli_doc_t doc;
    cli_doc_object(&doc, stream_cols, COUNT(stream_cols));
    stream_row(&doc.main, s);
    cli_created(run, &doc, "created stream '%s' with id %u", s->name, s->id);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_stream_delete(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM");
    int rc = sl_client_delete_stream(run->client, cli_id(stream));
    if (rc != 0)
        return cli_fail(rc, "delete stream '%s'", stream);
    cli_done(run, "deleted stream '%s'", stream);
    return 0;
}

int cli_cmd_stream_update(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *name = cli_arg(run, "NAME");
    int rc = sl_client_update_stream(run->client, cli_id(stream), name);
    if (rc != 0)
        return cli_fail(rc, "rename stream '%s'", stream);
    cli_done(run, "renamed stream '%s' to '%s'", stream, name);
    return 0;
}

int cli_cmd_stream_get(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM");
    const sl_stream_t *s;
    int rc = sl_client_get_stream(run->client, cli_id(stream), &s);
    if (rc != 0)
        return cli_fail(rc, "get stream '%s'", stream);
    if (s == NULL)
        return cli_error(CLI_EXIT_NOT_FOUND, "stream '%s' not found", stream);
    cli_doc_t doc;
    cli_doc_object(&doc, stream_cols, COUNT(stream_cols));
    stream_row(&doc.main, s);
    cli_table_t *topics = cli_doc_sub(&doc, "topics", topic_cols, COUNT(topic_cols));
    for (uint32_t i = 0; s->topics != NULL && i < s->topics_count; i++)
        topic_row(topics, &s->topics[i]);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_stream_list(cli_run_t *run)
{
    const sl_stream_t *items;
    uint32_t count;
    int rc = sl_client_get_streams(run->client, &items, &count);
    if (rc != 0)
        return cli_fail(rc, "list streams");
    cli_doc_t doc;
    cli_doc_list(&doc, stream_cols, COUNT(stream_cols));
    for (uint32_t i = 0; i < count; i++)
        stream_row(&doc.main, &items[i]);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_stream_purge(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM");
    int rc = sl_client_purge_stream(run->client, cli_id(stream));
    if (rc != 0)
        return cli_fail(rc, "purge stream '%s'", stream);
    cli_done(run, "purged stream '%s'", stream);
    return 0;
}

/* --- topics ---------------------------------------------------------------------------- */

/* COMPRESSION, EXPIRY... and --max-topic-size into o. An exit code. */
static int topic_options(cli_run_t *run, sl_topic_options_t *o)
{
    *o = (sl_topic_options_t){0};
    const char *compression = cli_arg(run, "COMPRESSION");
    if (compression != NULL) {
        o->set |= SL_TOPIC_OPT_COMPRESSION;
        o->compression = strcmp(compression, "gzip") == 0 ? SL_TOPIC_COMPRESSION_GZIP
                                                          : SL_TOPIC_COMPRESSION_NONE;
    }
    uint32_t words;
    const char *const *expiry = cli_rest(run, "EXPIRY", &words);
    if (words > 0) {
        if (!cli_duration_us(expiry, words, &o->message_expiry_us))
            return cli_usage(run, "invalid EXPIRY (e.g. 7d, \"1h 30m\", never, server_default)");
        if (o->message_expiry_us != 0)
            o->set |= SL_TOPIC_OPT_MESSAGE_EXPIRY;
    }
    /* Iggy's CLI takes a replication factor; protocol 0.11.0 has no field for
     * it (a cluster's replication is the server's setting), so it is checked
     * and not sent. */
    const char *replication = cli_opt(run, "replication-factor");
    uint32_t factor;
    if (replication != NULL && (!cli_u32(replication, &factor) || factor == 0 || factor > 255))
        return cli_usage(run, "invalid --replication-factor '%s' (1..255)", replication);
    const char *size = cli_opt(run, "max-topic-size");
    if (size != NULL) {
        if (!cli_size_bytes(size, &o->max_topic_size))
            return cli_usage(run, "invalid --max-topic-size '%s' (e.g. 10GiB, unlimited)", size);
        if (o->max_topic_size != 0)
            o->set |= SL_TOPIC_OPT_MAX_TOPIC_SIZE;
    }
    return 0;
}

static const cli_col_t partition_cols[] = {
    {"id", "ID", 0},
    {"segments_count", "SEGMENTS", 0},
    {"current_offset", "CURRENT OFFSET", 0},
    {"messages_count", "MESSAGES", 0},
    {"size_bytes", "SIZE", 0},
    {"created_at_us", "CREATED", 0},
};

static void partition_rows(cli_table_t *t, const sl_topic_t *topic)
{
    for (uint32_t i = 0; topic->partitions != NULL && i < topic->partitions_count; i++) {
        const sl_topic_partition_t *p = &topic->partitions[i];
        cli_val_t v[] = {cli_u(p->id),
                         cli_u(p->segments_count),
                         cli_u(p->current_offset),
                         cli_u(p->messages_count),
                         cli_typed(CLI_VAL_SIZE, p->size_bytes),
                         cli_typed(CLI_VAL_TIME_US, p->created_at_us)};
        cli_table_row(t, v);
    }
}

static const cli_col_t option_cols[] = {
    {"key", "KEY", 0},
    {"kind", "KIND", 0},
    {"value", "VALUE", 0},
    {"source", "SOURCE", 0},
};

static void option_rows(cli_doc_t *doc, cli_table_t *t, const sl_option_t *items, uint32_t n,
                        const char *source)
{
    for (uint32_t i = 0; items != NULL && i < n; i++) {
        cli_val_t v[] = {cli_str(items[i].key), cli_str(cli_header_kind_name(items[i].kind)),
                         cli_typed_value(doc, items[i].kind, items[i].value, items[i].value_len),
                         cli_str(source)};
        cli_table_row(t, v);
    }
}

int cli_cmd_topic_create(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *name = cli_arg(run, "NAME");
    const char *partitions_text = cli_arg(run, "PARTITIONS");
    uint32_t partitions = 1;
    if (partitions_text != NULL &&
        (!cli_u32(partitions_text, &partitions) || partitions > SL_PARTITIONS_PER_REQUEST_MAX))
        return cli_usage(run, "invalid PARTITIONS '%s' (a number, 0..%u)", partitions_text,
                         SL_PARTITIONS_PER_REQUEST_MAX);
    sl_topic_options_t o;
    int rc = topic_options(run, &o);
    if (rc != 0)
        return rc;
    const sl_topic_t *t;
    rc = sl_client_create_topic(run->client, cli_id(stream), name, partitions, &o, &t);
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream},
                           "create topic '%s' in stream '%s'", name, stream);
    cli_doc_t doc;
    cli_doc_object(&doc, topic_cols, COUNT(topic_cols));
    topic_row(&doc.main, t);
    partition_rows(cli_doc_sub(&doc, "partitions", partition_cols, COUNT(partition_cols)), t);
    cli_created(run, &doc, "created topic '%s' with id %u and %u partitions in stream '%s'",
                t->name, t->id, t->partitions_count, stream);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_topic_delete(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    int rc = sl_client_delete_topic(run->client, cli_id(stream), cli_id(topic));
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream, .topic = topic},
                           "delete topic '%s' of stream '%s'", topic, stream);
    cli_done(run, "deleted topic '%s' of stream '%s'", topic, stream);
    return 0;
}

int cli_cmd_topic_update(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const char *name = cli_arg(run, "NAME");
    sl_topic_options_t o;
    int rc = topic_options(run, &o);
    if (rc != 0)
        return rc;
    rc = sl_client_update_topic(run->client, cli_id(stream), cli_id(topic), name, &o);
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream, .topic = topic},
                           "update topic '%s' of stream '%s'", topic, stream);
    cli_done(run, "updated topic '%s' of stream '%s'", topic, stream);
    return 0;
}

/* get_topic, with "not found" as an error. An exit code. */
static int get_topic(cli_run_t *run, const sl_topic_t **t)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    int rc = sl_client_get_topic(run->client, cli_id(stream), cli_id(topic), t);
    if (rc != 0)
        return cli_fail(rc, "get topic '%s' of stream '%s'", topic, stream);
    if (*t == NULL) /* GetTopic says nothing when the stream is missing either */
        return cli_missing(run, &(cli_target_t){.stream = stream, .topic = topic},
                           "topic not found");
    return 0;
}

int cli_cmd_topic_get(cli_run_t *run)
{
    const sl_topic_t *t;
    int rc = get_topic(run, &t);
    if (rc != 0)
        return rc;
    cli_doc_t doc;
    cli_doc_object(&doc, topic_cols, COUNT(topic_cols));
    topic_row(&doc.main, t);
    cli_table_t *options = cli_doc_sub(&doc, "options", option_cols, COUNT(option_cols));
    option_rows(&doc, options, t->options, t->options_count, "explicit");
    option_rows(&doc, options, t->derived_options, t->derived_options_count, "derived");
    partition_rows(cli_doc_sub(&doc, "partitions", partition_cols, COUNT(partition_cols)), t);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_topic_list(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM");
    const sl_topic_t *items;
    uint32_t count;
    int rc = sl_client_get_topics(run->client, cli_id(stream), &items, &count);
    if (rc != 0)
        return cli_fail(rc, "list topics of stream '%s'", stream);
    /* The server lists nothing for a missing stream; say which it is. */
    const sl_stream_t *s = NULL;
    if (count == 0 && (rc = sl_client_get_stream(run->client, cli_id(stream), &s)) != 0)
        return cli_fail(rc, "get stream '%s'", stream);
    if (count == 0 && s == NULL)
        return cli_error(CLI_EXIT_NOT_FOUND, "stream '%s' not found", stream);
    cli_doc_t doc;
    cli_doc_list(&doc, topic_cols, COUNT(topic_cols));
    for (uint32_t i = 0; i < count; i++)
        topic_row(&doc.main, &items[i]);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_topic_purge(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    int rc = sl_client_purge_topic(run->client, cli_id(stream), cli_id(topic));
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream, .topic = topic},
                           "purge topic '%s' of stream '%s'", topic, stream);
    cli_done(run, "purged topic '%s' of stream '%s'", topic, stream);
    return 0;
}

/* --- partitions and segments --------------------------------------------------------------- */

static int partitions_change(cli_run_t *run, bool create)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    uint32_t count;
    if (!cli_u32(cli_arg(run, "COUNT"), &count) || count == 0 ||
        count > SL_PARTITIONS_PER_REQUEST_MAX)
        return cli_usage(run, "invalid COUNT '%s' (a number, 1..%u)", cli_arg(run, "COUNT"),
                         SL_PARTITIONS_PER_REQUEST_MAX);
    int rc = create
                 ? sl_client_create_partitions(run->client, cli_id(stream), cli_id(topic), count)
                 : sl_client_delete_partitions(run->client, cli_id(stream), cli_id(topic), count);
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream, .topic = topic},
                           "%s %u partitions %s topic '%s' of stream '%s'",
                           create ? "add" : "remove", count, create ? "to" : "from", topic, stream);
    cli_done(run, "%s %u partitions %s topic '%s' of stream '%s'", create ? "added" : "removed",
             count, create ? "to" : "from", topic, stream);
    return 0;
}

int cli_cmd_partition_create(cli_run_t *run)
{
    return partitions_change(run, true);
}

int cli_cmd_partition_delete(cli_run_t *run)
{
    return partitions_change(run, false);
}

int cli_cmd_partition_list(cli_run_t *run)
{
    const sl_topic_t *t;
    int rc = get_topic(run, &t);
    if (rc != 0)
        return rc;
    cli_doc_t doc;
    cli_doc_list(&doc, partition_cols, COUNT(partition_cols));
    partition_rows(&doc.main, t);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

/* The segments count of one partition as GetTopic reports it. An exit code;
 * a missing stream, topic or partition is named. */
static int segments_count(cli_run_t *run, uint32_t partition, uint32_t *count)
{
    const sl_topic_t *t;
    int rc = get_topic(run, &t);
    if (rc != 0)
        return rc;
    for (uint32_t i = 0; t->partitions != NULL && i < t->partitions_count; i++) {
        if (t->partitions[i].id == partition) {
            *count = t->partitions[i].segments_count;
            return 0;
        }
    }
    return cli_error(CLI_EXIT_NOT_FOUND, "topic '%s' of stream '%s' has no partition %u",
                     cli_arg(run, "TOPIC"), cli_arg(run, "STREAM"), partition);
}

/* DeleteSegments replies with no count, and deletes fewer segments than
 * asked when fewer are sealed (never the active one): the message reports
 * the segments count read back before and after, not the request. */
int cli_cmd_segment_delete(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    uint32_t partition, count, before, after;
    if (!cli_u32(cli_arg(run, "PARTITION"), &partition))
        return cli_usage(run, "invalid PARTITION '%s' (a number)", cli_arg(run, "PARTITION"));
    if (!cli_u32(cli_arg(run, "COUNT"), &count))
        return cli_usage(run, "invalid COUNT '%s' (a number)", cli_arg(run, "COUNT"));
    int rc = segments_count(run, partition, &before);
    if (rc != 0)
        return rc;
    rc = sl_client_delete_segments(run->client, cli_id(stream), cli_id(topic), partition, count);
    if (rc != 0)
        return cli_fail_at(
            run, rc,
            &(cli_target_t){
                .stream = stream, .topic = topic, .has_partition = true, .partition = partition},
            "delete %u segments of partition %u of topic '%s' of stream '%s'", count, partition,
            topic, stream);
    rc = segments_count(run, partition, &after);
    if (rc != 0)
        return rc;
    uint32_t deleted = before > after ? before - after : 0;
    static const cli_col_t cols[] = {{"partition_id", "PARTITION", 0},
                                     {"requested", "REQUESTED", 0},
                                     {"deleted", "DELETED", 0},
                                     {"segments_before", "BEFORE", 0},
                                     {"segments_after", "AFTER", 0}};
    cli_doc_t doc;
    cli_doc_object(&doc, cols, COUNT(cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_u(partition), cli_u(count), cli_u(deleted),
                                           cli_u(before), cli_u(after)});
    cli_created(run, &doc,
                "deleted %u of the %u segments asked for from partition %u of topic '%s' of "
                "stream '%s': it had %u segment%s, it has %u%s",
                deleted, count, partition, topic, stream, before, before == 1 ? "" : "s", after,
                deleted < count && after <= 1 ? " (the active segment is never deleted)" : "");
    cli_doc_free(&doc);
    return 0;
}
