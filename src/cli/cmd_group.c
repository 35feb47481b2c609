/* Handlers of the consumer-group and consumer-offset commands. */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#define COUNT(a) ((uint32_t)(sizeof(a) / sizeof((a)[0])))

/* --- consumer groups ------------------------------------------------------------------- */

static const cli_col_t group_cols[] = {
    {"id", "ID", 0},
    {"name", "NAME", 0},
    {"partitions_count", "PARTITIONS", 0},
    {"members_count", "MEMBERS", 0},
};

static void group_row(cli_table_t *t, const sl_consumer_group_t *g)
{
    cli_val_t v[] = {cli_u(g->id), cli_str(g->name), cli_u(g->partitions_count),
                     cli_u(g->members_count)};
    cli_table_row(t, v);
}

static const cli_col_t member_cols[] = {
    {"id", "MEMBER", 0},
    {"partitions_count", "PARTITIONS", 0},
    {"partitions", "ASSIGNED", 0},
};

/* A list of ids as a JSON array and as "0, 1, 2". */
static cli_val_t id_list(cli_doc_t *doc, const uint32_t *ids, uint32_t n)
{
    char *json, *text;
    size_t json_len, text_len;
    FILE *j = cli_memstream(&json, &json_len), *t = cli_memstream(&text, &text_len);
    fputc('[', j);
    for (uint32_t i = 0; ids != NULL && i < n; i++) {
        fprintf(j, "%s%u", i ? ", " : "", ids[i]);
        fprintf(t, "%s%u", i ? ", " : "", ids[i]);
    }
    fputc(']', j);
    fclose(j);
    fclose(t);
    cli_val_t v = {.kind = CLI_VAL_JSON};
    v.s = cli_doc_adopt(doc, json);
    v.alt = cli_doc_adopt(doc, text);
    return v;
}

static void group_doc(cli_doc_t *doc, const sl_consumer_group_t *g)
{
    cli_doc_object(doc, group_cols, COUNT(group_cols));
    group_row(&doc->main, g);
    cli_table_t *members = cli_doc_sub(doc, "members", member_cols, COUNT(member_cols));
    for (uint32_t i = 0; g->members != NULL && i < g->members_count; i++) {
        const sl_consumer_group_member_t *m = &g->members[i];
        cli_val_t v[] = {cli_u(m->id), cli_u(m->partitions_count),
                         id_list(doc, m->partitions, m->partitions_count)};
        cli_table_row(members, v);
    }
}

int cli_cmd_group_create(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const char *name = cli_arg(run, "NAME");
    const sl_consumer_group_t *g;
    int rc = sl_client_create_consumer_group(run->client, cli_id(stream), cli_id(topic), name, &g);
    if (rc != 0)
        return cli_fail_at(run, rc, &(cli_target_t){.stream = stream, .topic = topic},
                           "create consumer group '%s' on topic '%s' of stream '%s'", name, topic,
                           stream);
    cli_doc_t doc;
    group_doc(&doc, g);
    cli_created(run, &doc, "created consumer group '%s' with id %u on topic '%s' of stream '%s'",
                g->name, g->id, topic, stream);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_group_delete(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const char *group = cli_arg(run, "GROUP");
    int rc =
        sl_client_delete_consumer_group(run->client, cli_id(stream), cli_id(topic), cli_id(group));
    if (rc != 0)
        return cli_fail_at(
            run, rc, &(cli_target_t){.stream = stream, .topic = topic, .group = group},
            "delete consumer group '%s' of topic '%s' of stream '%s'", group, topic, stream);
    cli_done(run, "deleted consumer group '%s' of topic '%s' of stream '%s'", group, topic, stream);
    return 0;
}

int cli_cmd_group_get(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const char *group = cli_arg(run, "GROUP");
    const sl_consumer_group_t *g;
    int rc =
        sl_client_get_consumer_group(run->client, cli_id(stream), cli_id(topic), cli_id(group), &g);
    cli_target_t target = {.stream = stream, .topic = topic, .group = group};
    if (rc != 0)
        return cli_fail_at(run, rc, &target, "get consumer group '%s' of topic '%s' of stream '%s'",
                           group, topic, stream);
    if (g == NULL) /* also when the stream or topic is missing */
        return cli_missing(run, &target, "consumer group not found");
    cli_doc_t doc;
    group_doc(&doc, g);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_group_list(cli_run_t *run)
{
    const char *stream = cli_arg(run, "STREAM"), *topic = cli_arg(run, "TOPIC");
    const sl_consumer_group_t *items;
    uint32_t count;
    int rc =
        sl_client_get_consumer_groups(run->client, cli_id(stream), cli_id(topic), &items, &count);
    cli_target_t target = {.stream = stream, .topic = topic};
    if (rc != 0)
        return cli_fail_at(run, rc, &target, "list consumer groups of topic '%s' of stream '%s'",
                           topic, stream);
    /* The server may list nothing for a missing stream or topic; say which.
     * The probe replaces the client's results, which were none. */
    char missing[1024];
    if (count == 0 && cli_find_missing(run, &target, missing, sizeof(missing)))
        return cli_error(CLI_EXIT_NOT_FOUND, "%s", missing);
    cli_doc_t doc;
    cli_doc_list(&doc, group_cols, COUNT(group_cols));
    for (uint32_t i = 0; i < count; i++)
        group_row(&doc.main, &items[i]);
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

/* --- consumer offsets ------------------------------------------------------------------- */

typedef struct offset_target {
    sl_consumer_ref_t consumer;
    sl_id_t stream;
    sl_id_t topic;
    cli_target_t names; /* as typed, for errors */
    uint32_t partition;
    const char *what; /* "consumer 'x'" for messages */
    char what_buf[300];
} offset_target_t;

static int offset_target(cli_run_t *run, offset_target_t *t)
{
    const char *consumer = cli_arg(run, "CONSUMER"), *kind = cli_opt(run, "kind");
    bool group = kind != NULL && strcmp(kind, "consumer-group") == 0;
    t->consumer =
        group ? sl_consumer_in_group(cli_id(consumer)) : sl_consumer_single(cli_id(consumer));
    t->stream = cli_id(cli_arg(run, "STREAM"));
    t->topic = cli_id(cli_arg(run, "TOPIC"));
    if (!cli_u32(cli_arg(run, "PARTITION"), &t->partition))
        return cli_usage(run, "invalid PARTITION '%s' (a number)", cli_arg(run, "PARTITION"));
    t->names = (cli_target_t){.stream = cli_arg(run, "STREAM"),
                              .topic = cli_arg(run, "TOPIC"),
                              .has_partition = true,
                              .partition = t->partition,
                              .group = group ? consumer : NULL};
    snprintf(t->what_buf, sizeof(t->what_buf),
             "%s '%s' in partition %u of topic '%s' of stream '%s'",
             group ? "consumer group" : "consumer", consumer, t->partition, t->names.topic,
             t->names.stream);
    t->what = t->what_buf;
    return 0;
}

/* A refused offset write. A group's offset is written only by the member
 * its partition is assigned to (errors.md 1.1, code 20), which this tool's
 * connection never is: when nothing named is missing, that is the reason. */
static int fail_offset_write(cli_run_t *run, int rc, const offset_target_t *t, const char *verb)
{
    char missing[1024];
    const char *hint = NULL;
    if (cli_exit_for(rc) == CLI_EXIT_NOT_FOUND &&
        cli_find_missing(run, &t->names, missing, sizeof(missing)))
        hint = missing;
    else if (rc == -SL_ERR_RESOURCE_NOT_FOUND && t->names.group != NULL)
        hint = "only the group member the partition is assigned to may write its offset "
               "(poll with --kind consumer-group --auto-commit does)";
    return cli_fail_hint(rc, hint, "%s the offset of %s", verb, t->what);
}

int cli_cmd_offset_get(cli_run_t *run)
{
    offset_target_t t;
    int rc = offset_target(run, &t);
    if (rc != 0)
        return rc;
    sl_consumer_offset_t o;
    rc = sl_client_get_consumer_offset(run->client, t.consumer, t.stream, t.topic, t.partition, &o);
    if (rc != 0)
        return cli_fail_at(run, rc, &t.names, "get the offset of %s", t.what);
    if (!o.found)
        return cli_error(CLI_EXIT_NOT_FOUND, "no offset stored for %s", t.what);
    static const cli_col_t cols[] = {
        {"partition_id", "PARTITION", 0},
        {"stored_offset", "STORED OFFSET", 0},
        {"current_offset", "CURRENT OFFSET", 0},
    };
    cli_doc_t doc;
    cli_doc_object(&doc, cols, COUNT(cols));
    cli_table_row(&doc.main, (cli_val_t[]){cli_u(o.partition_id), cli_u(o.stored_offset),
                                           cli_u(o.current_offset)});
    cli_doc_print(run, &doc);
    cli_doc_free(&doc);
    return 0;
}

int cli_cmd_offset_set(cli_run_t *run)
{
    offset_target_t t;
    int rc = offset_target(run, &t);
    if (rc != 0)
        return rc;
    uint64_t offset;
    if (!cli_u64(cli_arg(run, "OFFSET"), &offset))
        return cli_usage(run, "invalid OFFSET '%s' (a number)", cli_arg(run, "OFFSET"));
    rc = sl_client_store_consumer_offset(run->client, t.consumer, t.stream, t.topic, t.partition,
                                         offset, SL_ACK_LEVEL_QUORUM);
    if (rc != 0)
        return fail_offset_write(run, rc, &t, "store");
    cli_done(run, "stored offset %llu for %s", (unsigned long long)offset, t.what);
    return 0;
}

int cli_cmd_offset_delete(cli_run_t *run)
{
    offset_target_t t;
    int rc = offset_target(run, &t);
    if (rc != 0)
        return rc;
    rc = sl_client_delete_consumer_offset(run->client, t.consumer, t.stream, t.topic, t.partition,
                                          SL_ACK_LEVEL_QUORUM);
    if (rc != 0)
        return fail_offset_write(run, rc, &t, "delete");
    cli_done(run, "deleted the offset of %s", t.what);
    return 0;
}
