/* Built by install_check.sh against an installed libsluice (headers and
 * pkg-config from the staging directory), then run against sluiced: the
 * smallest program that touches the client, the producer and the consumer.
 *
 *   install_hello HOST PORT */
#include <sluice/client.h>
#include <sluice/consumer.h>
#include <sluice/error.h>
#include <sluice/producer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "install_hello: %s: %s\n", what, sl_strerror(rc));
    return 1;
}

static int produce(sl_client_t *client)
{
    sl_producer_options_t po = {.stream = sl_id_name("installed"), .topic = sl_id_name("t")};
    sl_producer_t *producer;
    int rc = sl_producer_open(client, &po, &producer);
    for (int i = 0; rc == 0 && i < 3; i++) {
        char text[16];
        int len = snprintf(text, sizeof(text), "hello-%d", i);
        rc = sl_producer_send_payload(producer, text, (size_t)len);
    }
    int closed = sl_producer_close(producer);
    return rc != 0 ? rc : closed;
}

static int consume(sl_client_t *client, int *count)
{
    sl_consumer_options_t co = {
        .stream = sl_id_name("installed"),
        .topic = sl_id_name("t"),
        .consumer_id = sl_id_num(1),
        .partition = 0,
    };
    sl_message_consumer_t *consumer;
    int rc = sl_consumer_open(client, &co, &consumer);
    *count = 0;
    while (rc == 0 && *count < 3) {
        sl_polled_messages_t batch;
        rc = sl_consumer_poll(consumer, 2000, &batch);
        if (rc == 0 && batch.count == 0)
            break;
        for (uint32_t i = 0; rc == 0 && i < batch.count; i++)
            printf("%.*s\n", (int)batch.messages[i].payload_len,
                   (const char *)batch.messages[i].payload);
        *count += rc == 0 ? (int)batch.count : 0;
    }
    sl_consumer_close(consumer);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    sl_client_t *client;
    int rc = sl_client_connect(argv[1], (uint16_t)atoi(argv[2]), NULL, &client);
    if (rc != 0)
        return fail("connect", rc);
    rc = sl_client_login(client, "iggy", "iggy", NULL);
    if (rc == 0) {
        rc = sl_client_create_stream(client, "installed", NULL);
        rc = rc == -SL_ERR_STREAM_NAME_ALREADY_EXISTS ? 0 : rc;
    }
    if (rc == 0) {
        rc = sl_client_create_topic(client, sl_id_name("installed"), "t", 1, NULL, NULL);
        rc = rc == -SL_ERR_TOPIC_NAME_ALREADY_EXISTS ? 0 : rc;
    }
    int count = 0;
    if (rc == 0)
        rc = produce(client);
    if (rc == 0)
        rc = consume(client, &count);
    sl_client_close(client);
    if (rc != 0)
        return fail("hello", rc);
    printf("read %d\n", count);
    return count >= 3 ? 0 : 1;
}
