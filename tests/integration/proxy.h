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
/* Forwards new connections again (returns once the thread has seen it). */
void th_proxy_restore(th_proxy_t *p);
/* Connections accepted and forwarded so far (refused ones not counted). */
uint32_t th_proxy_forwarded(th_proxy_t *p);
/* Stops the thread and closes everything. */
void th_proxy_stop(th_proxy_t *p);

#endif
