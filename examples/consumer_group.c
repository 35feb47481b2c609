/* Example: one member of a consumer group. It creates the group when
 * needed, joins it, prints "ready" with its partitions, then prints each
 * payload it polls on its own line. The server commits offsets as
 * messages are polled (auto-commit), and hands partitions over when members
 * join or leave; run two of these and together they print every message
 * once. Stops after IDLE_MS without messages.
 *
 *   consumer_group HOST PORT STREAM TOPIC GROUP IDLE_MS
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

static void print_ready(const sl_message_consumer_t *consumer)
{
    const uint32_t *partitions;
    uint32_t count;
    sl_consumer_partitions(consumer, &partitions, &count);
    printf("ready:");
    for (uint32_t i = 0; i < count; i++)
        printf(" %u", partitions[i]);
    printf("\n");
    fflush(stdout); /* whoever waits for "ready" reads a pipe */
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s HOST PORT STREAM TOPIC GROUP IDLE_MS\n", argv[0]);
        return 2;
    }
    uint16_t port = (uint16_t)atoi(argv[2]);
    uint32_t idle_ms = (uint32_t)strtoul(argv[6], NULL, 10);

    /* A group member that falls silent is evicted by the server; the
     * consumer's poll loop ticks the client, which pings when idle. */
    sl_client_options_t connection = {.reconnect_attempts = 5, .heartbeat_interval_ms = 5000};
    sl_client_t *client;
    int rc = sl_client_connect(argv[1], port, &connection, &client);
    if (rc == 0)
        rc = sl_client_login(client, env_or("SLUICE_USERNAME", "iggy"),
                             env_or("SLUICE_PASSWORD", "iggy"), NULL);
    if (rc != 0) {
        fprintf(stderr, "consumer_group: %s\n", sl_strerror(rc));
        sl_client_close(client);
        return 1;
    }

    sl_consumer_options_t options = {
        .stream = sl_id_name(argv[3]),
        .topic = sl_id_name(argv[4]),
        .kind = SL_CONSUMER_KIND_GROUP,
        .consumer_id = sl_id_name(argv[5]),
        .create_group = true,
        .commit = SL_CONSUMER_COMMIT_AUTO,
        .resync_interval_ms = 200, /* notice partitions handed over quickly */
    };
    sl_message_consumer_t *consumer;
    rc = sl_consumer_open(client, &options, &consumer);
    if (rc == 0)
        print_ready(consumer);

    while (rc == 0) {
        sl_polled_messages_t batch;
        rc = sl_consumer_poll(consumer, idle_ms, &batch);
        if (rc != 0 || batch.count == 0)
            break; /* an error, or nothing for idle_ms */
        for (uint32_t i = 0; i < batch.count; i++)
            printf("%.*s\n", (int)batch.messages[i].payload_len,
                   (const char *)batch.messages[i].payload);
    }
    if (rc != 0)
        fprintf(stderr, "consumer_group: %s\n", sl_strerror(rc));
    sl_consumer_close(consumer); /* leaves the group */
    sl_client_close(client);
    return rc == 0 ? 0 : 1;
}
