/* A TCP proxy for integration tests: it listens on an ephemeral loopback
 * port and forwards every connection to a target port, on a thread of its
 * own, until told to cut. A cut closes every forwarded connection and
 * closes each new one on accept until the link is restored: to both
 * processes it looks like the network between them failed and came back. */
#ifndef SL_TEST_PROXY_H
#define SL_TEST_PROXY_H

#include <stdint.h>

typedef struct th_proxy th_proxy_t;

/* Starts forwarding 127.0.0.1:<th_proxy_port> to 127.0.0.1:target_port.
 * Aborts the test on error. */
th_proxy_t *th_proxy_start(uint16_t target_port);
uint16_t th_proxy_port(const th_proxy_t *p);
/* Closes every forwarded connection and refuses new ones; returns once the
 * proxy thread has done it. */
void th_proxy_cut(th_proxy_t *p);
/* A one-way cut: what the dialer sends (TH_PROXY_FROM_DIALER) or what the
 * target sends (TH_PROXY_FROM_TARGET) is read and thrown away from now on,
 * while the other direction still flows and nothing is closed: one side
 * hears the other, which hears nothing back (it sees a link that stalls,
 * never one that closes). The dropped bytes break each stream's framing,
 * so th_proxy_restore closes the connections a one-way cut touched and
 * forwards new ones. Returns once the proxy thread applies it. */
typedef enum th_proxy_direction { TH_PROXY_FROM_DIALER, TH_PROXY_FROM_TARGET } th_proxy_direction_t;
void th_proxy_cut_one_way(th_proxy_t *p, th_proxy_direction_t dropped);
/* Forwards new connections again (returns once the thread has seen it). */
void th_proxy_restore(th_proxy_t *p);
/* Connections accepted and forwarded so far (refused ones not counted). */
uint32_t th_proxy_forwarded(th_proxy_t *p);
/* Stops the thread and closes everything. */
void th_proxy_stop(th_proxy_t *p);

#endif
