#!/usr/bin/env python3
"""Tables from the committed calibration files (no GPU needed):
    python3 calibration/tables.py calibration/h200x2
Prints, per placement, size x each algorithm x NCCL (median per op from the
per-op events, and the batch mean), the verify step, and the sanity checks
against the first survey of this machine (2026-11-30, figures quoted here). Only reads the JSON Lines next to it."""
import json, sys, os

d = sys.argv[1] if len(sys.argv) > 1 else "calibration/h200x2"
load = lambda f: [json.loads(l) for l in open(os.path.join(d, f))] if os.path.exists(os.path.join(d, f)) else []
hw, nc, np2, pr = load("hw.jsonl"), load("nccl.jsonl"), load("nccl-p2p-disabled.jsonl"), load("probe.jsonl")
algs = ["one-shot-pull", "one-shot-push", "two-shot-pull", "two-shot-push", "hierarchical"]
us = lambda ns: ns / 1e3
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"

def ar(recs, alg, pl, s, dtype="bf16"):
    m = [r for r in recs if r["workload"] == "allreduce" and r["algorithm"] == alg and r.get("placement") == pl
         and r["size_bytes"] == s and r["extra"].get("dtype") == dtype]
    return m[0] if m else None

unverified = [r for r in hw + nc + np2 if r["workload"] != "transfer" and r.get("verified") is not True]
print(f"records: hw {len(hw)}, nccl {len(nc)}, nccl p2p-disabled {len(np2)}, probe {len(pr)}; unverified collectives: {len(unverified)}")
sizes = sorted({r["size_bytes"] for r in hw if r["workload"] == "allreduce" and r["extra"].get("dtype") == "bf16"})
for key, title in [("median", "median per op (us), events between ops"), ("batch", "batch mean per op (us), no events between ops")]:
    val = lambda r: (us(r["stats"]["median_ns"]) if key == "median" else us(r["extra"]["batch_mean_ns"])) if r else float("nan")
    for pl in ["peer", "host"]:
        print(f"\n### {pl} placement, bf16, 2x H200: {title}\n")
        print("| size | " + " | ".join(algs) + " | NCCL | NCCL P2P off |")
        print("|---:|" + "---:|" * (len(algs) + 2))
        for s in sizes:
            row = [val(ar(hw, a, pl, s)) for a in algs]
            n, n2 = ar(nc, "nccl", None, s), ar(np2, "nccl", None, s)
            best = min(row)
            cells = [("**%.1f**" if v == best else "%.1f") % v for v in row]
            print(f"| {size(s)} | " + " | ".join(cells) + f" | {val(n):.1f} | {val(n2):.1f} |")

print("\n### verify step: 122 x 43,008 B bf16 back to back (us per step, median; per allreduce in brackets)\n")
print("| algorithm | placement | eager | CUDA graph |")
print("|---|---|---:|---:|")
for src, lab in [(hw, None), (nc, "NCCL"), (np2, "NCCL P2P off")]:
    seen = []
    for r in src:
        if r["workload"] != "verify-step":
            continue
        k = (r["algorithm"], r.get("placement"))
        if k in seen:
            continue
        seen.append(k)
        cell = {}
        for q in src:
            if q["workload"] == "verify-step" and (q["algorithm"], q.get("placement")) == k:
                cell[q["launch"]] = f'{us(q["stats"]["median_ns"]):.0f} ({us(q["extra"]["per_allreduce_median_ns"]):.2f})'
        print(f'| {lab or k[0]} | {k[1] or "-"} | {cell.get("eager", "-")} | {cell.get("graph", "-")} |')

def probe(alg, target, b, blocks=None, group=None):
    m = [r for r in pr if r["algorithm"] == alg and r["extra"].get("target") == target and r["size_bytes"] == b
         and (blocks is None or r["extra"].get("blocks") == blocks) and (group is None or r["extra"].get("group") == group)]
    return m
print("\n### sanity checks against the first survey of this machine (2026-11-30, figures quoted here)\n")
big = 256 << 20
for alg, tgt, ref in [("copy-h2d", "host", "55.5"), ("copy-d2h", "host", "55.3"), ("copy-peer", "peer", "389 (cudaMemcpyPeer)")]:
    m = probe(alg, tgt, big, group="copy")
    if m: print(f"- {alg} 256 MiB: {m[0]['bandwidth_gbps']:.1f} GB/s (HARDWARE.md: {ref})")
for alg, tgt, ref in [("sm-load", "host", "51.3"), ("sm-store", "host", "52.4"), ("sm-load", "peer", "370"), ("sm-store", "peer", "370"), ("sm-load", "local", "-")]:
    m = [r for r in probe(alg, tgt, big, group="sm-vs-blocks")]
    if m:
        best = max(m, key=lambda r: r["bandwidth_gbps"])
        at132 = [r for r in m if r["extra"]["blocks"] == 132]
        print(f"- {alg} {tgt} 256 MiB: best {best['bandwidth_gbps']:.1f} GB/s at {best['extra']['blocks']} blocks; "
              f"{at132[0]['bandwidth_gbps']:.1f} GB/s at 132 blocks (HARDWARE.md: {ref})")
for grp in ["concurrent-host", "concurrent-peer"]:
    for alg in ["sm-load", "sm-store", "copy-h2d", "copy-d2h"]:
        m = [r for r in pr if r["extra"].get("group") == grp and r["algorithm"] == alg]
        if m:
            print(f"- {grp} {alg}: " + " + ".join(f'{r["bandwidth_gbps"]:.1f}' for r in m) + f" = {sum(r['bandwidth_gbps'] for r in m):.1f} GB/s together")
for r in pr:
    if r["algorithm"] == "ping-pong":
        print(f"- ping-pong {'->'.join(r['ranks'])} (flags in {r['extra']['flags']}): {us(r['stats']['median_ns']):.2f} us per round trip")
m = [r for r in pr if r["algorithm"] == "sm-load" and r["extra"].get("group") == "sm-load-vs-size" and r["extra"]["target"] == "host"]
if m:
    print("- sm-load host vs size (132 blocks), per op: " + ", ".join(f'{size(r["size_bytes"])} {us(r["stats"]["median_ns"]):.1f} us (sync {us(r["extra"]["sync_median_ns"]):.1f})' for r in m))
print("- NCCL vs the PyTorch-NCCL figures (HARDWARE.md: NVLink 8 KiB / 42 KiB / 1 MiB / 64 MiB = 40 / 40 / 39-67 / 250 us; P2P off 42 KiB / 8 MiB / 64 MiB = 47 / 314 / 2360 us):")
for lab, src, pts in [("NVLink", nc, [8192, 43008, 1 << 20, 64 << 20]), ("P2P off", np2, [43008, 8 << 20, 64 << 20])]:
    out = []
    for s in pts:
        r = ar(src, "nccl", None, s)
        if r:
            out.append(f'{size(s)}: median {us(r["stats"]["median_ns"]):.1f}, batch mean {us(r["extra"]["batch_mean_ns"]):.1f}, host-synced {us(r["extra"]["sync_median_ns"]):.1f}')
        elif s == 43008:
            v = [q for q in src if q["workload"] == "verify-step" and q["launch"] == "eager"]
            if v: out.append(f'42 KiB (verify step, eager, per allreduce): {us(v[0]["extra"]["per_allreduce_median_ns"]):.1f}')
    print(f"  - {lab}: " + "; ".join(out))
