/* The replica plane's thread (server/replica_plane.h). */
#include "server/replica_plane.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "server/replica_bus.h"
#include "vsr/handshake.h"

/* How long one poll may sleep: the bound on how late a stop is seen. */
#define PLANE_POLL_MS 100

struct sl_replica_plane {
    sl_rbus_t *bus;
    pthread_t thread;
    atomic_bool stop;
    uint64_t frames; /* received; only the plane's thread touches it */
};

static void on_frame(void *ctx, uint8_t peer, const sl_vsr_frame_t *f, const uint8_t *bytes,
                     uint32_t len)
{
    sl_replica_plane_t *plane = ctx;
    (void)bytes;
    plane->frames++;
    const char *name = sl_vsr_command_name(f->h.command);
    sl_log_debug("replica plane: %s (%u bytes) from replica %u: no replica attached yet",
                 name ? name : "?", len, peer);
}

static void *plane_main(void *arg)
{
    sl_replica_plane_t *plane = arg;
    while (!atomic_load_explicit(&plane->stop, memory_order_acquire))
        sl_rbus_poll(plane->bus, PLANE_POLL_MS);
    return NULL;
}

static void bus_config(const sl_config_t *cfg, const sl_config_cluster_node_t *self,
                       sl_rbus_config_t *c)
{
    sl_rbus_config_init(c);
    c->self = (uint8_t)self->replica_id;
    c->replica_count = (uint8_t)cfg->cluster.nodes_count;
    snprintf(c->listen.host, sizeof(c->listen.host), "%s", self->ip);
    c->listen.port = (uint16_t)self->ports.tcp_replica;
    for (uint32_t i = 0; i < cfg->cluster.nodes_count; i++) {
        const sl_config_cluster_node_t *n = &cfg->cluster.nodes[i];
        snprintf(c->peers[n->replica_id].host, sizeof(c->peers[0].host), "%s", n->ip);
        c->peers[n->replica_id].port = (uint16_t)n->ports.tcp_replica;
    }
    c->cluster = sl_vsr_cluster_id(sl_span_str(cfg->cluster.name));
    c->auth = cfg->cluster.auth.enabled;
    if (cfg->cluster.auth.shared_secret[0])
        sl_vsr_auth_key(sl_span_str(cfg->cluster.auth.shared_secret), c->key);
    if (cfg->cluster.auth.previous_shared_secret[0]) {
        c->has_previous_key = true;
        sl_vsr_auth_key(sl_span_str(cfg->cluster.auth.previous_shared_secret), c->previous_key);
    }
    c->frame_max = (uint32_t)cfg->message_bus.max_message_size;
}

int sl_replica_plane_start(const sl_config_t *cfg, sl_replica_plane_t **out, char *err,
                           size_t err_len)
{
    const sl_config_cluster_node_t *self = sl_config_cluster_self(cfg);
    sl_assert(self != NULL);
    sl_replica_plane_t *plane = calloc(1, sizeof(*plane));
    if (!plane) {
        snprintf(err, err_len, "replica plane: out of memory");
        return -ENOMEM;
    }
    sl_rbus_config_t c;
    bus_config(cfg, self, &c);
    c.on_frame = on_frame;
    c.ctx = plane;
    int rc = sl_rbus_create(&c, &plane->bus);
    if (rc) {
        snprintf(err, err_len, "replica plane: cannot listen on %s port %u: %s", self->ip,
                 self->ports.tcp_replica, strerror(-rc));
        free(plane);
        return rc;
    }
    atomic_init(&plane->stop, false);
    rc = pthread_create(&plane->thread, NULL, plane_main, plane);
    if (rc) {
        snprintf(err, err_len, "replica plane: cannot start its thread: %s", strerror(rc));
        sl_rbus_destroy(plane->bus);
        free(plane);
        return -rc;
    }
    sl_log_info("replica plane: replica %u of %u in cluster \"%s\", listening on %s port %u "
                "(auth %s)",
                self->replica_id, cfg->cluster.nodes_count, cfg->cluster.name, self->ip,
                sl_rbus_port(plane->bus), c.auth ? "on" : "off");
    *out = plane;
    return 0;
}

void sl_replica_plane_stop(sl_replica_plane_t *plane)
{
    if (!plane)
        return;
    atomic_store_explicit(&plane->stop, true, memory_order_release);
    pthread_join(plane->thread, NULL);
    sl_rbus_destroy(plane->bus);
    free(plane);
}
