"""How long torch.distributed's eager all_reduce takes per call on an idle GPU.

A microbenchmark of the caller's software path, not of any fabric: one
process, world size 1, NCCL backend, so NCCL's kernel moves nothing across
GPUs. Three timings per size, each as CUDA events around a batch of calls
launched back to back (the GPU outruns the host, so the events measure the
host's time per call):

  torch-add      t.add_(1)                       torch's dispatch of one kernel
  torch-c10d     dist.all_reduce(t)              c10d + NCCL's enqueue + launch
  torch-c10d-one one all_reduce between events, after a sync and a barrier,
                 as b12x's overlap_probe times it (median over repeats)
  graph-c10d     dist.all_reduce captured BATCH times in one CUDA graph,
                 the graph replayed between two events. At one rank NCCL's
                 in-place allreduce enqueues no work (torch warns the graph
                 is empty), so this row measures nothing of NCCL's kernel;
                 kept as the check that says so
  graph-add      t.add_(1) captured the same way: a graph node's floor

Writes one JSON line per (op, size) to the path given as argv[1].
"""
import json, os, statistics, sys, time
import torch
import torch.distributed as dist

out = sys.argv[1]
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29531")
torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
BATCH, REPEATS = 200, 20
rows = []

def batch(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s.record()
    for _ in range(BATCH):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e6 / BATCH  # ns per call

def one(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    dist.barrier()
    s.record()
    fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e6

for size in (12288, 98304):
    t = torch.zeros(size // 2, dtype=torch.bfloat16, device="cuda")
    ops = {
        "torch-add": lambda: t.add_(1),
        "torch-c10d": lambda: dist.all_reduce(t),
    }
    for name, fn in ops.items():
        for _ in range(3):
            batch(fn)  # warm-up
        per = [batch(fn) for _ in range(REPEATS)]
        rows.append({"op": name, "size_bytes": size, "timing": f"per call, {BATCH} calls back to back between two CUDA events",
                     "per_op_ns": per, "median_ns": statistics.median(per)})
    for name, fn in (("graph-c10d", ops["torch-c10d"]), ("graph-add", ops["torch-add"])):
        try:
            g = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            with torch.cuda.graph(g):
                for _ in range(BATCH):
                    fn()
            for _ in range(3):
                g.replay()
            def replay_once():
                s_, e_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize()
                s_.record(); g.replay(); e_.record(); e_.synchronize()
                return s_.elapsed_time(e_) * 1e6 / BATCH
            per = [replay_once() for _ in range(REPEATS)]
            rows.append({"op": name, "size_bytes": size, "timing": f"per call, {BATCH} calls captured in one CUDA graph, one replay between two CUDA events",
                         "per_op_ns": per, "median_ns": statistics.median(per)})
        except Exception as e:  # a capture this torch/NCCL refuses: say so, go on
            print(f"{name}: capture failed: {e}")
    for _ in range(5):
        one(ops["torch-c10d"])
    per = [one(ops["torch-c10d"]) for _ in range(REPEATS * 5)]
    rows.append({"op": "torch-c10d-one", "size_bytes": size, "timing": "one call between two CUDA events after synchronize + barrier",
                 "per_op_ns": per, "median_ns": statistics.median(per)})

meta = {"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        "gpu": torch.cuda.get_device_name(0), "cuda": torch.version.cuda}
with open(out, "w") as f:
    for r in rows:
        r.update(meta)
        f.write(json.dumps(r) + "\n")
        print(f"{r['op']:15s} {r['size_bytes']:7d} B: median {r['median_ns']/1e3:.1f} us")
dist.destroy_process_group()
