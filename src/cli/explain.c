/* Errors that name what the user typed. The protocol's "not found" codes do
 * not always say which object is missing (ResourceNotFound never does, and a
 * GetTopic of a missing stream is just "no topic"), so after one the tool
 * asks the server, link by link: the stream, its topic, the topic's
 * partition, the topic's consumer group. */
#include "cli/cli.h"

#include <stdarg.h>

/* True (and the phrase in buf) when the partition is not in the topic. */
static bool partition_missing(const cli_target_t *t, const sl_topic_t *topic, char *buf, size_t cap)
{
    for (uint32_t i = 0; topic->partitions != NULL && i < topic->partitions_count; i++)
        if (topic->partitions[i].id == t->partition)
            return false;
    snprintf(buf, cap, "topic '%s' of stream '%s' has no partition %u (it has %u)", t->topic,
             t->stream, t->partition, topic->partitions_count);
    return true;
}

/* True (and the phrase in buf) when the group is not on the topic. */
static bool group_missing(cli_run_t *run, const cli_target_t *t, char *buf, size_t cap)
{
    const sl_consumer_group_t *g;
    if (sl_client_get_consumer_group(run->client, cli_id(t->stream), cli_id(t->topic),
                                     cli_id(t->group), &g) != 0 ||
        g != NULL)
        return false;
    snprintf(buf, cap, "topic '%s' of stream '%s' has no consumer group '%s'", t->topic, t->stream,
             t->group);
    return true;
}

bool cli_find_missing(cli_run_t *run, const cli_target_t *t, char *buf, size_t cap)
{
    const sl_stream_t *s;
    if (t->stream == NULL || sl_client_get_stream(run->client, cli_id(t->stream), &s) != 0)
        return false;
    if (s == NULL) {
        snprintf(buf, cap, "stream '%s' not found", t->stream);
        return true;
    }
    const sl_topic_t *topic;
    if (t->topic == NULL ||
        sl_client_get_topic(run->client, cli_id(t->stream), cli_id(t->topic), &topic) != 0)
        return false;
    if (topic == NULL) {
        snprintf(buf, cap, "stream '%s' has no topic '%s'", t->stream, t->topic);
        return true;
    }
    if (t->has_partition && partition_missing(t, topic, buf, cap))
        return true;
    return t->group != NULL && group_missing(run, t, buf, cap);
}

int cli_missing(cli_run_t *run, const cli_target_t *t, const char *fallback)
{
    char what[1024];
    if (cli_find_missing(run, t, what, sizeof(what)))
        return cli_error(CLI_EXIT_NOT_FOUND, "%s", what);
    return cli_error(CLI_EXIT_NOT_FOUND, "%s", fallback);
}

int cli_fail_at(cli_run_t *run, int rc, const cli_target_t *t, const char *fmt, ...)
{
    char what[1024];
    const char *hint = NULL;
    /* Probing changes the client's results, so it comes after the caller
     * is done with the failed call's. */
    if (cli_exit_for(rc) == CLI_EXIT_NOT_FOUND && cli_find_missing(run, t, what, sizeof(what)))
        hint = what;
    va_list ap;
    va_start(ap, fmt);
    int code = cli_vfail(rc, hint, fmt, ap);
    va_end(ap);
    return code;
}
