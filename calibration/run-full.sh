#!/usr/bin/env bash
# The full calibration run of `contend hw` on the lent nvidia-h200-x2
# machine, in one call (2 GPUs, then the 1-GPU set with
# CUDA_VISIBLE_DEVICES=0 on the same machine). Usage, from the repository
# root there, with target/release/contend carried along:
#   bash calibration/run-full.sh "$OUT"
# Writes at most 8 files into OUT (the device tool's limit): the combined
# JSON Lines per source, the two topologies and the log.
set -u
OUT=${1:-out}
T=/tmp/contend-cal
mkdir -p "$OUT" "$T"
B=target/release/contend
. "$(dirname "$0")/device-lib.sh"
add() { [ -f "$T/$1" ] && cat "$T/$1" >> "$OUT/$2"; }
{
  date -u; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,name,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  step topo 30 $B hw topo --out "$OUT/h200x2-topo.toml"
  step allreduce 200 $B hw run scenarios/hw-allreduce-h200x2.toml --out "$T/allreduce.jsonl"; add allreduce.jsonl h200x2-hw.jsonl
  step nccl 60 $B hw nccl scenarios/hw-allreduce-h200x2.toml --out "$T/nccl.jsonl"; add nccl.jsonl h200x2-nccl.jsonl
  step verify-step 60 $B hw run scenarios/hw-verify-h200x2.toml --out "$T/verify.jsonl"; add verify.jsonl h200x2-hw.jsonl
  step nccl-verify-step 30 $B hw nccl scenarios/hw-verify-h200x2.toml --out "$T/nccl-verify.jsonl"; add nccl-verify.jsonl h200x2-nccl.jsonl
  step probe 100 $B hw probe --out "$OUT/h200x2-probe.jsonl"
  step nccl-p2p-disabled 60 env NCCL_P2P_DISABLE=1 $B hw nccl scenarios/hw-allreduce-h200x2.toml --out "$T/nop2p.jsonl"; add nop2p.jsonl h200x2-nccl-p2p-disabled.jsonl
  step topo-1gpu 20 env CUDA_VISIBLE_DEVICES=0 $B hw topo --out "$OUT/h200x1-topo.toml"
  step probe-1gpu 60 env CUDA_VISIBLE_DEVICES=0 $B hw probe --out "$OUT/h200x1-probe.jsonl"
  step fp32 30 $B hw run scenarios/hw-allreduce-fp32-h200x2.toml --out "$T/fp32.jsonl"; add fp32.jsonl h200x2-hw.jsonl
  step transfer 20 $B hw run scenarios/hw-transfer-h200x2.toml --out "$T/transfer.jsonl"; add transfer.jsonl h200x2-hw.jsonl
  step nccl-p2p-disabled-verify-step 30 env NCCL_P2P_DISABLE=1 $B hw nccl scenarios/hw-verify-h200x2.toml --out "$T/nop2p-verify.jsonl"; add nop2p-verify.jsonl h200x2-nccl-p2p-disabled.jsonl
  date -u
} 2>&1 | tee "$OUT/log.txt"
