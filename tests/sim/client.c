/* Simulated clients, lockstep like the SDKs (framing.md 1): Register, then
 * numbered requests; a request is resent unchanged (same number, same
 * bytes) to another replica after a timeout or a TransientNotAccepted (58),
 * and to the same one after TransientNotCommitted (57). An eviction for a
 * stale or missing session parks the request, registers again and resends
 * it. Every success is checked against what the replicas committed. */
#include <string.h>

#include "sim.h"
#include "wire/header.h"

#define CLIENT_TIMEOUT_TICKS 60u

void client_init(client_t *c, sim_t *s, uint8_t index)
{
    memset(c, 0, sizeof(*c));
    c->index = index;
    c->node = (uint8_t)(s->n + index);
    c->id = (sl_u128_t){index + 1u, 0x51D0C0FFEEull};
    c->next_request = 1;
    c->requests_left = (uint32_t)prng_range(&s->prng, 20, 200);
    c->target = (uint8_t)prng_below(&s->prng, s->n);
    c->wake_at = prng_below(&s->prng, 50);
}

static void send_current(sim_t *s, client_t *c)
{
    uint8_t frame[SL_HEADER_SIZE + SIM_BODY_LEN];
    bool reg = c->operation == SL_OP_REGISTER;
    sl_request_header_t h = {.size = SL_HEADER_SIZE + c->body_len,
                             .client = c->id,
                             .request_checksum = sl_request_checksum(sl_span(c->body, c->body_len)),
                             .timestamp = s->tick,
                             .request = reg ? 0 : c->request,
                             .operation = c->operation,
                             .session = reg ? 0 : c->session};
    sl_request_header_encode(frame, &h);
    memcpy(frame + SL_HEADER_SIZE, c->body, c->body_len);
    c->sent_at = s->tick;
    c->retry_at = 0;
    sim_log(s, "client %u: send request %llu (op %u) to replica %u", c->index,
            (unsigned long long)c->request, c->operation, c->target);
    net_send(s, c->node, c->target, frame, SL_HEADER_SIZE + c->body_len);
}

static void start_register(sim_t *s, client_t *c)
{
    c->outstanding = true;
    c->operation = SL_OP_REGISTER;
    c->request = 0;
    memcpy(c->body, "register", 8);
    c->body_len = 8;
    send_current(s, c);
}

static void start_request(sim_t *s, client_t *c, uint64_t request, const uint8_t *body)
{
    c->outstanding = true;
    c->operation = SIM_OPERATION;
    c->request = request;
    memcpy(c->body, body, SIM_BODY_LEN);
    c->body_len = SIM_BODY_LEN;
    send_current(s, c);
}

void client_tick(sim_t *s, client_t *c)
{
    if (c->outstanding) {
        if (c->retry_at != 0 && s->tick >= c->retry_at) {
            c->retry_at = 0;
            send_current(s, c);
        } else if (s->tick - c->sent_at >= CLIENT_TIMEOUT_TICKS) {
            c->target = (uint8_t)((c->target + 1) % s->n);
            send_current(s, c);
        }
        return;
    }
    if (s->tick < c->wake_at)
        return;
    if (!c->registered) {
        start_register(s, c);
        return;
    }
    if (c->parked) {
        c->parked = false;
        start_request(s, c, c->parked_request, c->parked_body);
        return;
    }
    if (s->phase != PHASE_FAULTS || c->requests_left == 0)
        return;
    c->requests_left--;
    uint8_t body[SIM_BODY_LEN];
    body[0] = (uint8_t)prng_range(&s->prng, OP_SET, OP_GET);
    body[1] = (uint8_t)prng_below(&s->prng, SIM_KEYS);
    sl_store_u64(body + 2, prng_below(&s->prng, 1000));
    start_request(s, c, c->next_request++, body);
}

static void on_eviction(sim_t *s, client_t *c, const uint8_t *frame)
{
    sl_eviction_header_t e;
    if (sl_eviction_header_decode(frame, &e) != 0 || !sl_u128_eq(e.client, c->id) ||
        !c->outstanding)
        return;
    /* SessionTooLow: another Register of this id committed after ours.
     * NoSession: a primary that has not seen our Register (a stale one, cut
     * off from the view that committed it). Both: register again. The sim's
     * users never clash, so SessionError would be a bug. */
    if (e.reason != SL_EVICT_SESSION_TOO_LOW && e.reason != SL_EVICT_NO_SESSION) {
        sim_fail(s, "client %u evicted with reason %u", c->index, e.reason);
        return;
    }
    sim_log(s, "client %u: evicted (%u), registering again", c->index, e.reason);
    if (c->operation != SL_OP_REGISTER) {
        c->parked = true;
        c->parked_request = c->request;
        memcpy(c->parked_body, c->body, SIM_BODY_LEN);
    }
    c->registered = false;
    c->outstanding = false;
    c->wake_at = s->tick + 1;
}

/* A result-section rejection: 57 and 58 are transient, anything else is a
 * failure for the sim's operations. */
static void on_rejection(sim_t *s, client_t *c, const sl_reply_header_t *h, uint32_t code)
{
    if (code == 57) {
        c->retry_at = s->tick + 5; /* retry soon, same replica */
    } else if (code == 58) {
        uint8_t hint = (uint8_t)(h->view % s->n);
        c->target = hint != h->replica ? hint : (uint8_t)((c->target + 1) % s->n);
        c->retry_at = s->tick + 5;
    } else {
        sim_fail(s, "client %u: request %llu rejected with %u", c->index,
                 (unsigned long long)c->request, code);
    }
}

void client_on_frame(sim_t *s, client_t *c, const uint8_t *frame, uint32_t len)
{
    if (len < SL_HEADER_SIZE)
        return;
    if (frame[60] == SL_COMMAND_EVICTION) {
        on_eviction(s, c, frame);
        return;
    }
    sl_reply_header_t h;
    if (sl_reply_header_decode(frame, SL_FRAME_MAX_DEFAULT, &h) != 0 || h.size != len ||
        !c->outstanding || h.operation != c->operation ||
        h.request != (c->operation == SL_OP_REGISTER ? 0 : c->request))
        return; /* a duplicate or a reply to an earlier request */
    sl_span_t body = sl_span(frame + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
    if (body.len < 4) {
        sim_fail(s, "client %u: reply without a result section", c->index);
        return;
    }
    uint32_t count = sl_load_u32(body.ptr);
    sim_log(s, "client %u: reply to request %llu from replica %u: %s %u", c->index,
            (unsigned long long)h.request, h.replica, count ? "rejected" : "ok",
            count && body.len >= 12 ? sl_load_u32(body.ptr + 8) : 0);
    if (count != 0) {
        on_rejection(s, c, &h, body.len >= 12 ? sl_load_u32(body.ptr + 8) : 0);
        return;
    }
    check_client_reply(s, c, h.op, h.request, h.operation, body);
    if (c->operation == SL_OP_REGISTER) {
        c->registered = true;
        c->session = h.op;
    }
    c->outstanding = false;
    c->completed++;
    c->target = (uint8_t)(h.view % s->n);
    c->wake_at = s->tick + prng_below(&s->prng, 20);
}
