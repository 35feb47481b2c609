#!/usr/bin/env python3
"""Per-trip breakdown of a SL_TRIP_TRACE log (src/server/trip_trace.h): pairs the points of each
replicated trip of `sluice-bench --only cluster` and prints, per topic, each point's median time
from the send and the per-step medians along the critical path (docs/benchmarks.md, "Messages on
3 nodes: one trip, step by step"). Usage: bench/trip_trace.py <trace file>"""
import sys, statistics
ev = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5: continue
    ev.append((int(f[0]), int(f[1]), f[2], int(f[4])))
ev.sort()
trips = []
i = 0
n = len(ev)
# trips: from client_send to the next client_done
sends = [k for k, e in enumerate(ev) if e[2] == 'client_send']
for k in sends:
    t0, cpid, _, topic = ev[k]
    j = k + 1
    while j < n and ev[j][2] != 'client_done': j += 1
    if j >= n: break
    t1 = ev[j][0]
    win = ev[k+1:j]
    lsp = [e for e in win if e[2] == 'loop_send_prep']
    if not lsp: continue  # the single node
    P = lsp[0][1]; op = lsp[0][3]
    def first(pid, name, after=0):
        for e in win:
            if e[1] == pid and e[2] == name and e[3] == op and e[0] >= after: return e[0]
        return None
    heads = [e for e in win if e[2] == 'bus_head_prep' and e[3] == op]
    if not heads: continue
    B1 = heads[0][1]
    oks = [e for e in win if e[1] == P and e[2] == 'bus_head_ok' and e[3] == op]
    if not oks: continue
    ack_t = oks[0][0]
    # which backup's ack came first: the one whose bus_sent_ok precedes
    sent_ok = [e for e in win if e[2] == 'bus_sent_ok' and e[3] == op and e[1] != P]
    A = sent_ok[0][1] if sent_ok else B1
    synced = lambda pid, after: next((e[0] for e in win if e[1]==pid and e[2]=='journal_synced' and e[0]>=after), None)
    pts = {
     'P loop_send': first(P,'loop_send_prep'),
     'P loop_sent': first(P,'loop_sent_prep'),
     'P plane_pop': first(P,'plane_pop_prep'),
     'P bus_sent': first(P,'bus_sent_prep'),
     'B1 bus_head': first(B1,'bus_head_prep'),
     'B1 bus_read': first(B1,'bus_read_prep'),
     'B1 inbox': first(B1,'plane_inbox_prep'),
     'B1 loop_in': first(B1,'loop_in_prep'),
     'B1 fwd_send': first(B1,'loop_send_prep'),
     'B1 fwd_sent': first(B1,'loop_sent_prep'),
     'B1 jwrite': first(B1,'journal_write_prep'),
     'B1 jwritten': first(B1,'journal_written_prep'),
     'A ok_send': first(A,'loop_send_ok'),
     'A plane_pop_ok': first(A,'plane_pop_ok'),
     'A bus_sent_ok': first(A,'bus_sent_ok'),
     'P bus_head_ok': ack_t,
     'P inbox_ok': first(P,'plane_inbox_ok'),
     'P loop_in_ok': first(P,'loop_in_ok'),
     'P loop_done_ok': first(P,'loop_done_ok'),
     'P jwrite': first(P,'journal_write_prep'),
     'P jwritten': first(P,'journal_written_prep'),
    }
    if A != B1:
        pts['A(B2) jwritten'] = first(A,'journal_written_prep')
    pts['B1 synced'] = synced(B1, pts['B1 jwritten'] or 0) if pts['B1 jwritten'] else None
    trips.append((topic, t0, t1, P, B1, A, pts))
for topic in (0, 1):
    T = [t for t in trips if t[0] == topic]
    if not T: continue
    print(f"topic {'plain' if topic==0 else 'fsync'}: {len(T)} trips; ack first from B1 in {sum(1 for t in T if t[5]==t[4])}")
    keys = list(T[0][6].keys()) + ['client_done']
    rows = {}
    for t in T:
        for kk in keys:
            v = t[2] if kk == 'client_done' else t[6].get(kk)
            if v is not None: rows.setdefault(kk, []).append((v - t[1]) / 1e6)
    order = sorted(rows, key=lambda kk: statistics.median(rows[kk]))
    prev = 0
    for kk in order:
        m = statistics.median(rows[kk])
        print(f"  {kk:16s} at {m:7.3f} ms (+{m-prev:6.3f})  n={len(rows[kk])}")
        prev = m

print("\nper-trip differences (median, p25-p75), critical path:")
chain = ['client_send','P loop_send','P plane_pop','P bus_sent','B1 bus_head','B1 bus_read','B1 inbox','B1 loop_in','B1 fwd_send','B1 fwd_sent','B1 jwrite','B1 jwritten','B1 synced','A ok_send','A plane_pop_ok','A bus_sent_ok','P bus_head_ok','P inbox_ok','P loop_in_ok','P loop_done_ok','client_done']
for topic in (0,1):
    T = [t for t in trips if t[0] == topic and t[5] == t[4]]
    if not T: continue
    print(f"topic {'plain' if topic==0 else 'fsync'}: {len(T)} trips acked first by B1; trip p50 {statistics.median([(t[2]-t[1])/1e6 for t in T]):.3f} ms")
    for a, b in zip(chain, chain[1:]):
        d = []
        for t in T:
            va = t[1] if a=='client_send' else t[6].get(a)
            vb = t[2] if b=='client_done' else t[6].get(b)
            if va is not None and vb is not None: d.append((vb-va)/1e6)
        if d:
            q = statistics.quantiles(d, n=4) if len(d) > 3 else [0,0,0]
            print(f"  {a:15s} -> {b:15s} {statistics.median(d):7.3f} ms  ({q[0]:.3f}-{q[2]:.3f})")
