#!/usr/bin/env bash
# NCCL on the lent nvidia-h200-x2 machine, for the refit of issue 13: the
# probes that pin NCCL's costs (kernel launches back to back and as a CUDA
# graph; NCCL's allreduce of 4 to 256 B, with P2P and with
# NCCL_P2P_DISABLE=1), then NCCL's allreduce sweep and verify step again,
# each record now carrying NCCL's own decisions (the decision pass of
# `contend hw nccl` logs NCCL_DEBUG=INFO into NCCL_DEBUG_FILE), and the two
# INFO logs themselves, to check the replica against. The 1-GPU set last
# (CUDA_VISIBLE_DEVICES=0). Usage, from the repository root there, with
# target/release/contend carried along:
#   bash calibration/run-nccl.sh "$OUT"
# Writes 7 files into OUT (the device tool returns at most 8):
#   h200x2-probe-nccl.jsonl           launch-eager, launch-graph, nccl-latency (P2P and P2P off)
#   h200x2-nccl.jsonl                 NCCL sweep 1 KiB-64 MiB + verify step (eager, graph), decisions kept
#   h200x2-nccl-p2p-disabled.jsonl    the same with NCCL_P2P_DISABLE=1
#   h200x2-nccl-info.log              NCCL's INFO log of the sweep's decision pass
#   h200x2-nccl-p2p-disabled-info.log the same with NCCL_P2P_DISABLE=1
#   h200x1-probe-nccl.jsonl           launch probes and nccl-latency on one GPU
#   log.txt                           everything printed
set -u
OUT=${1:-out}
T=/tmp/contend-nccl
mkdir -p "$OUT" "$T"
B=target/release/contend
. "$(dirname "$0")/device-lib.sh"
add() { [ -f "$T/$1" ] && cat "$T/$1" >> "$OUT/$2"; }
{
  date -u; nvidia-smi -L; nvidia-smi topo -m
  step probe-nccl 60 $B hw probe --only launch,nccl-latency --out "$T/probe.jsonl"; add probe.jsonl h200x2-probe-nccl.jsonl
  step probe-nccl-p2p-disabled 40 env NCCL_P2P_DISABLE=1 $B hw probe --only nccl-latency --out "$T/probe-nop2p.jsonl"; add probe-nop2p.jsonl h200x2-probe-nccl.jsonl
  step nccl 90 $B hw nccl scenarios/hw-allreduce-h200x2.toml --nccl-log "$OUT/h200x2-nccl-info.log" --out "$T/nccl.jsonl"; add nccl.jsonl h200x2-nccl.jsonl
  step nccl-verify-step 40 $B hw nccl scenarios/hw-verify-h200x2.toml --out "$T/nccl-verify.jsonl"; add nccl-verify.jsonl h200x2-nccl.jsonl
  step nccl-p2p-disabled 90 env NCCL_P2P_DISABLE=1 $B hw nccl scenarios/hw-allreduce-h200x2.toml --nccl-log "$OUT/h200x2-nccl-p2p-disabled-info.log" --out "$T/nop2p.jsonl"; add nop2p.jsonl h200x2-nccl-p2p-disabled.jsonl
  step nccl-p2p-disabled-verify-step 40 env NCCL_P2P_DISABLE=1 $B hw nccl scenarios/hw-verify-h200x2.toml --out "$T/nop2p-verify.jsonl"; add nop2p-verify.jsonl h200x2-nccl-p2p-disabled.jsonl
  step probe-nccl-1gpu 40 env CUDA_VISIBLE_DEVICES=0 $B hw probe --only launch,nccl-latency --out "$OUT/h200x1-probe-nccl.jsonl"
  date -u
} 2>&1 | tee "$OUT/log.txt"
