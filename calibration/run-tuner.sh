#!/usr/bin/env bash
# Issue 16 on the lent 1-GPU nvidia-h200 (NCCL 2.28.3, which looks for
# ncclTunerPlugin_v5): NCCL loads contend's tuner plugin. With one GPU a
# communicator has one rank, so NCCL never asks the plugin about a call;
# the log shows the plugin found, loaded and initialised, and saying that
# its table (here the 2x H200 one, 2 ranks) has no 1-rank entry. Steps:
#   1. the table: contend advise --emit nccl-tuner-table for h200-2x with
#      calibration/h200x2/params.toml
#   2. contend hw nccl with --tuner and --tuner-table (decision pass log kept)
#   3. the same sweep without the plugin, to compare
#   4. a malformed table: NCCL's init fails, the WARN names file:line:column
#   5. a file that is no plugin: NCCL does not load it, the run stops saying so
# Binaries built here and stripped into target/device/ (the unstripped pair
# is over the 64 MiB a call carries):
#   cargo build --release -p contend -p contend-tuner
#   mkdir -p target/device && strip -o target/device/contend target/release/contend \
#     && strip -o target/device/libcontend_tuner.so target/release/libcontend_tuner.so
# then, with `target/device` carried:  bash calibration/run-tuner.sh "$OUT"
# Writes 7 files into OUT:
#   h200x1-tuner-table.toml         the table the plugin read
#   h200x1-nccl-tuner.jsonl         NCCL sweep 1 KiB-64 MiB with the plugin (extra.nccl_tuner)
#   h200x1-nccl-tuner-info.log      NCCL's INFO log of that sweep's decision pass
#   h200x1-nccl.jsonl               the same sweep without the plugin
#   h200x1-nccl-info.log            its INFO log
#   h200x1-tuner-malformed-info.log NCCL's INFO log with the malformed table
#   log.txt                         everything printed
set -u
OUT=${1:-out}
B=${CONTEND_BIN:-target/device/contend}
L=${CONTEND_TUNER:-target/device/libcontend_tuner.so}
T=/tmp/contend-tuner
mkdir -p "$OUT" "$T"
. "$(dirname "$0")/device-lib.sh"
TABLE="$OUT/h200x1-tuner-table.toml"
{
  date -u; nvidia-smi -L; ldconfig -p | grep libnccl
  ls -l "$B" "$L"
  step table 60 $B advise --topology h200-2x --params calibration/h200x2/params.toml --emit nccl-tuner-table --out "$TABLE"
  step nccl-tuner 150 $B hw nccl scenarios/hw-allreduce.toml --topology live --tuner "$L" --tuner-table "$TABLE" --nccl-log "$OUT/h200x1-nccl-tuner-info.log" --out "$OUT/h200x1-nccl-tuner.jsonl"
  grep -h "TUNER\|contend-tuner\|NCCL_TUNER" "$OUT/h200x1-nccl-tuner-info.log"
  step nccl 150 $B hw nccl scenarios/hw-allreduce.toml --topology live --nccl-log "$OUT/h200x1-nccl-info.log" --out "$OUT/h200x1-nccl.jsonl"
  sed 's/channels = 1 }/channels = 0 }/' "$TABLE" > "$T/malformed.toml"
  step tuner-malformed 60 $B hw nccl scenarios/hw-allreduce.toml --topology live --max-size 4096 --tuner "$L" --tuner-table "$T/malformed.toml" --nccl-log "$OUT/h200x1-tuner-malformed-info.log" --out "$T/malformed.jsonl"
  grep -h "TUNER\|contend-tuner" "$OUT/h200x1-tuner-malformed-info.log"
  step tuner-not-a-plugin 60 $B hw nccl scenarios/hw-allreduce.toml --topology live --max-size 4096 --tuner "$B" --nccl-log "$T/not-a-plugin.log" --out "$T/not-a-plugin.jsonl"
  grep -h "TUNER" "$T/not-a-plugin.log"
  date -u
} 2>&1 | tee "$OUT/log.txt"
