#!/usr/bin/env bash
# Smoke test of `contend hw` on the lent GPU machine (short: every
# subcommand once, quick settings). Usage, from the repository root there:
#   bash calibration/run-smoke.sh "$OUT"      (target/release/contend carried along)
set -u
OUT=${1:-out}
mkdir -p "$OUT"
B=target/release/contend
export CONTEND_HW_WATCHDOG_MS=20000 NCCL_NVLS_ENABLE=0
# cudarc looks for NCCL by the name libnccl.so; some images have only libnccl.so.2.
if ! ldconfig -p | grep -q 'libnccl.so '; then
  n=$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')
  [ -n "$n" ] && mkdir -p /tmp/ncclink && ln -sf "$n" /tmp/ncclink/libnccl.so && export LD_LIBRARY_PATH=/tmp/ncclink:${LD_LIBRARY_PATH:-}
fi
{
  date -u; nvidia-smi -L; nvidia-smi topo -m; ldconfig -p | grep -E 'libnccl|libnvrtc|libcuda.so|libnvidia-ml' | head
  echo "== topo"; timeout 60 $B hw topo --out "$OUT/topo.toml"; echo "rc=$?"
  echo "== run smoke"; timeout 90 $B hw run scenarios/hw-smoke-h200x2.toml --quick --out "$OUT/smoke-run.jsonl"; echo "rc=$?"
  echo "== run verify"; timeout 60 $B hw run scenarios/hw-verify-h200x2.toml --quick --repeats 3 --out "$OUT/smoke-verify.jsonl"; echo "rc=$?"
  echo "== nccl smoke"; timeout 60 $B hw nccl scenarios/hw-smoke-h200x2.toml --quick --out "$OUT/smoke-nccl.jsonl"; echo "rc=$?"
  echo "== nccl verify"; timeout 40 $B hw nccl scenarios/hw-verify-h200x2.toml --repeats 3 --out "$OUT/smoke-nccl-verify.jsonl"; echo "rc=$?"
  echo "== probe"; timeout 90 $B hw probe --quick --out "$OUT/smoke-probe.jsonl"; echo "rc=$?"
} 2>&1 | tee "$OUT/smoke.log"
