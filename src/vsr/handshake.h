/* The replica-plane handshake of shared/protocol/cluster.md 4, as pure
 * functions: the cluster id, the MAC key and MACs, the acceptor's checks and
 * the three header-only frames. The transport (who dials whom, timeouts,
 * TLS exporters) belongs to the server; nothing here does I/O. */
#ifndef SL_VSR_HANDSHAKE_H
#define SL_VSR_HANDSHAKE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytes.h"
#include "vsr/frame.h"

#define SL_VSR_NONCE_LEN 32u
#define SL_VSR_MAC_LEN   32u

/* Acceptor verdicts carried in ReplicaChallenge's status byte. */
typedef enum sl_vsr_hello_status {
    SL_VSR_HELLO_OK = 0,
    SL_VSR_HELLO_UNKNOWN_COMMAND = 1,
    SL_VSR_HELLO_CLUSTER_MISMATCH = 2,
    SL_VSR_HELLO_DIRECTIONAL_RULE = 3,
    SL_VSR_HELLO_AUTH_REQUIRED = 4, /* refused, no frame sent */
    SL_VSR_HELLO_MAC_MISMATCH = 5,  /* refused, no frame sent */
} sl_vsr_hello_status_t;

/* `cluster` of every replica frame: the first 16 bytes of BLAKE3(name),
 * read as a little-endian u128. */
sl_u128_t sl_vsr_cluster_id(sl_span_t name);

/* The MAC key: BLAKE3 derive_key("apache-iggy replica-auth v1 psk->mac-key",
 * shared_secret). */
void sl_vsr_auth_key(sl_span_t shared_secret, uint8_t key[32]);

/* Direction byte of the MAC input. */
enum { SL_VSR_MAC_DIALER = 1, SL_VSR_MAC_ACCEPTOR = 2 };

typedef struct sl_vsr_mac_input {
    sl_u128_t cluster;
    uint8_t dialer;
    uint8_t acceptor;
    uint8_t dialer_nonce[SL_VSR_NONCE_LEN];
    uint8_t acceptor_nonce[SL_VSR_NONCE_LEN];
    uint8_t binding;      /* 0 plaintext, 1 TLS */
    uint8_t exporter[32]; /* TLS exporter ("iggy replica psk binding"), zeros in plaintext */
    uint8_t direction;    /* SL_VSR_MAC_DIALER or SL_VSR_MAC_ACCEPTOR */
} sl_vsr_mac_input_t;

/* BLAKE3 keyed hash of "apache-iggy replica-auth v1", the cluster id (16
 * bytes LE), dialer id, acceptor id, both nonces, binding mode, exporter and
 * direction, in that order. */
void sl_vsr_auth_mac(const uint8_t key[32], const sl_vsr_mac_input_t *in,
                     uint8_t mac[SL_VSR_MAC_LEN]);

/* True when mac matches the MAC under the current key or, during a secret
 * rotation, the previous one (NULL when there is none). Constant time in the
 * MAC bytes. */
bool sl_vsr_auth_verify(const uint8_t key[32], const uint8_t *previous_key,
                        const sl_vsr_mac_input_t *in, const uint8_t mac[SL_VSR_MAC_LEN]);

/* The acceptor's checks of a decoded first frame, in cluster.md's order:
 * the command, the cluster, the directional rule (peer < replica_count and
 * peer < own id), and with auth a non-zero nonce. */
sl_vsr_hello_status_t sl_vsr_hello_check(const sl_vsr_frame_t *hello, sl_u128_t cluster,
                                         uint8_t own_id, uint8_t replica_count, bool auth);

/* Writes one of the three handshake headers (size 256). */
void sl_vsr_handshake_encode(uint8_t out[SL_HEADER_SIZE], uint8_t command, sl_u128_t cluster,
                             uint8_t replica, const uint8_t nonce[SL_VSR_NONCE_LEN],
                             const uint8_t mac[SL_VSR_MAC_LEN], uint8_t status);

#endif
