# Sourced by the device scripts (run-full.sh, run-nccl.sh, run-tuner.sh):
# NCCL's library under the name cudarc looks for, and `step`, which runs
# one command of the call without ever passing the call's budget.
export NCCL_NVLS_ENABLE=0 CONTEND_HW_WATCHDOG_MS=20000
# cudarc looks for NCCL by the name libnccl.so; some images have only libnccl.so.2.
if ! ldconfig -p | grep -q 'libnccl.so '; then
  n=$(ldconfig -p | awk '/libnccl.so.2 /{print $NF; exit}')
  [ -n "$n" ] && mkdir -p /tmp/ncclink && ln -sf "$n" /tmp/ncclink/libnccl.so && export LD_LIBRARY_PATH=/tmp/ncclink:${LD_LIBRARY_PATH:-}
fi
BUDGET=${BUDGET:-560}
step() { # name limit_s command...; never runs past the call's budget
  local name=$1 lim=$2; shift 2
  local rem=$((BUDGET - SECONDS))
  if [ "$rem" -lt 10 ]; then echo "== $name: skipped (out of time)"; return; fi
  [ "$lim" -gt "$rem" ] && lim=$rem
  echo "== $name (limit ${lim}s): $*"
  timeout "$lim" "$@"
  echo "== $name: rc=$? at ${SECONDS}s"
}
