/* placeholder replaced below */
#include <stdio.h>
#include "sluice_bench_peers.h"
bool sb_peer_start(sb_target_t target, const char *parent, sb_peer_t *out, char *why, size_t why_len)
{
    (void)target; (void)parent; (void)out;
    snprintf(why, why_len, "not yet");
    return false;
}
void sb_peer_stop(sb_peer_t *p) { (void)p; }
void sb_peer_run(sb_run_t *run, const sb_peer_t *peer) { (void)run; (void)peer; }
