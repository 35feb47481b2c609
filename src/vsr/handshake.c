/* The replica-plane handshake's cryptography and checks (cluster.md 4). */
#include "vsr/handshake.h"

#include <string.h>

#include "vsr/blake3.h"

static const char mac_key_context[] = "apache-iggy replica-auth v1 psk->mac-key";
static const char mac_domain[] = "apache-iggy replica-auth v1";

sl_u128_t sl_vsr_cluster_id(sl_span_t name)
{
    uint8_t digest[SL_BLAKE3_OUT_LEN];
    sl_blake3_hash(name.ptr, name.len, digest);
    return sl_load_u128(digest);
}

void sl_vsr_auth_key(sl_span_t shared_secret, uint8_t key[32])
{
    sl_blake3_derive_key(mac_key_context, shared_secret.ptr, shared_secret.len, key);
}

void sl_vsr_auth_mac(const uint8_t key[32], const sl_vsr_mac_input_t *in,
                     uint8_t mac[SL_VSR_MAC_LEN])
{
    sl_blake3_t h;
    sl_blake3_init_keyed(&h, key);
    sl_blake3_update(&h, mac_domain, strlen(mac_domain));
    uint8_t cluster[16];
    sl_store_u128(cluster, in->cluster);
    sl_blake3_update(&h, cluster, sizeof(cluster));
    sl_blake3_update(&h, &in->dialer, 1);
    sl_blake3_update(&h, &in->acceptor, 1);
    sl_blake3_update(&h, in->dialer_nonce, SL_VSR_NONCE_LEN);
    sl_blake3_update(&h, in->acceptor_nonce, SL_VSR_NONCE_LEN);
    sl_blake3_update(&h, &in->binding, 1);
    sl_blake3_update(&h, in->exporter, sizeof(in->exporter));
    sl_blake3_update(&h, &in->direction, 1);
    sl_blake3_finalize(&h, mac, SL_VSR_MAC_LEN);
}

bool sl_vsr_auth_verify(const uint8_t key[32], const uint8_t *previous_key,
                        const sl_vsr_mac_input_t *in, const uint8_t mac[SL_VSR_MAC_LEN])
{
    uint8_t want[SL_VSR_MAC_LEN];
    sl_vsr_auth_mac(key, in, want);
    bool ok = sl_ct_equal(want, mac, SL_VSR_MAC_LEN);
    if (previous_key != NULL) {
        sl_vsr_auth_mac(previous_key, in, want);
        ok = sl_ct_equal(want, mac, SL_VSR_MAC_LEN) || ok;
    }
    return ok;
}

sl_vsr_hello_status_t sl_vsr_hello_check(const sl_vsr_frame_t *hello, sl_u128_t cluster,
                                         uint8_t own_id, uint8_t replica_count, bool auth)
{
    if (hello->h.command != SL_VSR_REPLICA_HELLO)
        return SL_VSR_HELLO_UNKNOWN_COMMAND;
    if (!sl_u128_eq(hello->h.cluster, cluster))
        return SL_VSR_HELLO_CLUSTER_MISMATCH;
    if (hello->h.replica >= replica_count || hello->h.replica >= own_id)
        return SL_VSR_HELLO_DIRECTIONAL_RULE;
    if (auth && sl_all_zero(hello->u.handshake.nonce, SL_VSR_NONCE_LEN))
        return SL_VSR_HELLO_AUTH_REQUIRED;
    return SL_VSR_HELLO_OK;
}

void sl_vsr_handshake_encode(uint8_t out[SL_HEADER_SIZE], uint8_t command, sl_u128_t cluster,
                             uint8_t replica, const uint8_t nonce[SL_VSR_NONCE_LEN],
                             const uint8_t mac[SL_VSR_MAC_LEN], uint8_t status)
{
    sl_assert(command >= SL_VSR_REPLICA_HELLO && command <= SL_VSR_REPLICA_FINISH);
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = command;
    f.h.cluster = cluster;
    f.h.replica = replica;
    if (nonce != NULL)
        memcpy(f.u.handshake.nonce, nonce, SL_VSR_NONCE_LEN);
    if (mac != NULL)
        memcpy(f.u.handshake.mac, mac, SL_VSR_MAC_LEN);
    f.u.handshake.status = status;
    sl_vsr_header_encode(out, &f, sl_span(NULL, 0));
}
