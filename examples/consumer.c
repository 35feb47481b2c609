/* Example: read a topic from every partition as a single consumer and print
 * each message's payload on its own line. Offsets are committed explicitly
 * after each batch is printed, so a second run continues where this one
 * stopped. Stops after COUNT messages, or after IDLE_MS without any.
 *
 *   consumer HOST PORT STREAM TOPIC CONSUMER COUNT IDLE_MS
 *
 * Credentials come from SLUICE_USERNAME and SLUICE_PASSWORD (default
 * iggy/iggy). Uses the public API only. */
#include <sluice/client.h>
#include <sluice/consumer.h>
#include <stdio.h>
#include <stdlib.h>

static const char *env_or(const char *name, const char *fallback)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0' ? value : fallback;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: %s HOST PORT STREAM TOPIC CONSUMER COUNT IDLE_MS\n", argv[0]);
        return 2;
    }
    uint16_t port = (uint16_t)atoi(argv[2]);
    unsigned long want = strtoul(argv[6], NULL, 10);
    uint32_t idle_ms = (uint32_t)strtoul(argv[7], NULL, 10);

    sl_client_options_t connection = {.reconnect_attempts = 5, .heartbeat_interval_ms = 5000};
    sl_client_t *client;
    int rc = sl_client_connect(argv[1], port, &connection, &client);
    if (rc == 0)
        rc = sl_client_login(client, env_or("SLUICE_USERNAME", "iggy"),
                             env_or("SLUICE_PASSWORD", "iggy"), NULL);
    if (rc != 0) {
        fprintf(stderr, "consumer: %s\n", sl_strerror(rc));
        sl_client_close(client);
        return 1;
    }

    sl_consumer_options_t options = {
        .stream = sl_id_name(argv[3]),
        .topic = sl_id_name(argv[4]),
        .kind = SL_CONSUMER_KIND_SINGLE,
        .consumer_id = sl_id_name(argv[5]),
        .partition = SL_PARTITION_NONE, /* every partition */
        .commit = SL_CONSUMER_COMMIT_EXPLICIT,
    };
    sl_message_consumer_t *consumer;
    rc = sl_consumer_open(client, &options, &consumer);

    unsigned long got = 0;
    while (rc == 0 && got < want) {
        sl_polled_messages_t batch;
        rc = sl_consumer_poll(consumer, idle_ms, &batch);
        if (rc != 0 || batch.count == 0)
            break; /* an error, or nothing for idle_ms */
        /* The payloads point into the client's buffer: print them now. */
        for (uint32_t i = 0; i < batch.count; i++)
            printf("%.*s\n", (int)batch.messages[i].payload_len,
                   (const char *)batch.messages[i].payload);
        got += batch.count;
        rc = sl_consumer_commit(consumer); /* printed, so done with */
    }
    if (rc != 0)
        fprintf(stderr, "consumer: %s\n", sl_strerror(rc));
    sl_consumer_close(consumer);
    sl_client_close(client);
    return rc == 0 ? 0 : 1;
}
