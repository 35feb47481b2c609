/* Example: send COUNT messages ("message-0", "message-1", ...) to a topic
 * with a background producer: batches of up to 100 messages, 5 ms linger,
 * the server choosing partitions round robin. The stream and the topic (3
 * partitions) are created when they do not exist yet.
 *
 *   producer HOST PORT STREAM TOPIC COUNT
 *
 * Credentials come from SLUICE_USERNAME and SLUICE_PASSWORD (default
 * iggy/iggy). Uses the public API only. */
#include <sluice/client.h>
#include <sluice/producer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env_or(const char *name, const char *fallback)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0' ? value : fallback;
}

/* Creates the stream and the topic unless they exist, on a short-lived
 * client of its own. */
static int ensure_topic(const char *host, uint16_t port, const sl_credentials_t *login,
                        const char *stream, const char *topic)
{
    sl_client_t *client;
    int rc = sl_client_connect(host, port, NULL, &client);
    if (rc != 0)
        return rc;
    rc = sl_client_login(client, login->username, login->password, NULL);
    if (rc == 0) {
        rc = sl_client_create_stream(client, stream, NULL);
        if (rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS)
            rc = 0;
    }
    if (rc == 0) {
        rc = sl_client_create_topic(client, sl_id_name(stream), topic, 3, NULL, NULL);
        if (rc == -SL_ERR_TOPIC_NAME_ALREADY_EXISTS)
            rc = 0;
    }
    sl_client_close(client);
    return rc;
}

/* Called from the producer's thread once per batch. */
static void batch_done(void *ctx, const sl_producer_report_t *report)
{
    (void)ctx;
    if (report->error != 0)
        fprintf(stderr, "producer: a batch of %u messages failed: %s\n", report->count,
                sl_strerror(report->error));
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: %s HOST PORT STREAM TOPIC COUNT\n", argv[0]);
        return 2;
    }
    const char *host = argv[1], *stream = argv[3], *topic = argv[4];
    uint16_t port = (uint16_t)atoi(argv[2]);
    unsigned count = (unsigned)strtoul(argv[5], NULL, 10);
    sl_credentials_t login = {
        .username = env_or("SLUICE_USERNAME", "iggy"),
        .password = env_or("SLUICE_PASSWORD", "iggy"),
    };

    int rc = ensure_topic(host, port, &login, stream, topic);
    if (rc != 0) {
        fprintf(stderr, "producer: cannot prepare %s/%s: %s\n", stream, topic, sl_strerror(rc));
        return 1;
    }

    /* The producer's own connection reconnects and replays transient
     * refusals by itself. */
    sl_client_options_t connection = {.reconnect_attempts = 5, .transient_retries = 3};
    sl_producer_options_t options = {
        .stream = sl_id_name(stream),
        .topic = sl_id_name(topic),
        .partitioning = SL_PRODUCER_BALANCED,
        .batch_count = 100,
        .linger_ms = 5,
        .batch_done = batch_done,
    };
    sl_producer_t *producer;
    rc = sl_producer_open_background(host, port, &connection, &login, &options, &producer);
    if (rc != 0) {
        fprintf(stderr, "producer: %s\n", sl_strerror(rc));
        return 1;
    }

    for (unsigned i = 0; i < count && rc == 0; i++) {
        char text[32];
        int len = snprintf(text, sizeof(text), "message-%u", i);
        rc = sl_producer_send_payload(producer, text, (size_t)len); /* copied */
    }
    if (rc == 0)
        rc = sl_producer_flush(producer); /* waits until everything is stored */

    sl_producer_stats_t stats;
    sl_producer_stats(producer, &stats);
    int closed = sl_producer_close(producer);
    if (rc == 0)
        rc = closed;
    if (rc != 0) {
        fprintf(stderr, "producer: %s\n", sl_strerror(rc));
        return 1;
    }
    printf("sent %llu messages in %llu batches\n", (unsigned long long)stats.sent,
           (unsigned long long)stats.batches);
    return 0;
}
