"""Shared helpers for writing calibration/public/<rig>/figures.toml and
topologies/public/<rig>.toml.

Every figure taken from local-inference-lab/rtx6kpro is cited as
`local-inference-lab/rtx6kpro@e2c2b95 <path>:<line> § <section>, <cell>`.
The line is looked up in the stored commit, and the printed value must occur
on that line, so a citation cannot point at the wrong row silently:
`cite()` raises if the needle or the value is missing.

Run from the repository root:  python3 calibration/public/tools/make.py
It needs a clone of https://github.com/local-inference-lab/rtx6kpro (its git
directory in RTX6KPRO_GIT, e.g. `git clone --bare ... rtx6kpro.git`) only to check citations;
the generated files are the artifact and are committed.
"""

import json
import os
import re
import subprocess

RTX6KPRO = "local-inference-lab/rtx6kpro"
COMMIT = "e2c2b9577c938525d99a4ff62ba4a8ecc47a9990"
SHORT = COMMIT[:7]
GIT = os.environ.get("RTX6KPRO_GIT")

_cache = {}


def lines_of(path, commit=COMMIT):
    key = (path, commit)
    if key not in _cache:
        if not GIT:
            raise SystemExit(
                "set RTX6KPRO_GIT to the git directory of a clone of "
                "https://github.com/local-inference-lab/rtx6kpro (citations are checked there)"
            )
        out = subprocess.run(
            ["git", "-C", GIT, "show", f"{commit}:{path}"],
            check=True, capture_output=True, text=True,
        ).stdout
        _cache[key] = out.split("\n")
    return _cache[key]


def find_line(path, needle, after=None, commit=COMMIT, nth=1):
    """1-based line number of the nth line containing `needle`, searching from
    the first line containing `after` (if given)."""
    ls = lines_of(path, commit)
    start = 0
    if after is not None:
        for i, l in enumerate(ls):
            if after in l:
                start = i
                break
        else:
            raise ValueError(f"{path}: section marker {after!r} not found")
    seen = 0
    for i in range(start, len(ls)):
        if needle in ls[i]:
            seen += 1
            if seen == nth:
                return i + 1
    raise ValueError(f"{path}: {needle!r} not found after {after!r}")


def fmt_value(v):
    return f"{v}"


def cite(path, needle, section, cell, value_text=None, after=None, commit=COMMIT, nth=1):
    """Source string `repo@commit path:line § section, cell`; checks that the
    value as printed (value_text) is on that line."""
    n = find_line(path, needle, after=after, commit=commit, nth=nth)
    line = lines_of(path, commit)[n - 1]
    if value_text is not None and value_text not in line:
        raise ValueError(f"{path}:{n}: value {value_text!r} not on line {line!r}")
    c = commit[:7]
    s = f"{RTX6KPRO}@{c} {path}:{n} § {section}"
    if cell:
        s += f", {cell}"
    return s


def matrix_row_values(path, row_prefix, after, commit=COMMIT, nth=1):
    """(line number, list of cell strings) of a matrix row: the line after
    `after` that starts (after stripping) with row_prefix."""
    ls = lines_of(path, commit)
    n = find_line(path, row_prefix, after=after, commit=commit, nth=nth)
    line = ls[n - 1]
    rest = line.strip()[len(row_prefix.strip()):]
    cells = rest.split()
    return n, cells


# ---------------------------------------------------------------- TOML out

def q(s):
    return json.dumps(s, ensure_ascii=False)


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v)
        return r
    if isinstance(v, str):
        return q(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


FIG_ORDER = [
    "id", "what", "source", "topology", "tool", "engine", "op", "source_op",
    "harness", "streams", "pattern", "timed_by", "bytes", "value", "metric",
    "summary", "fit", "box", "note",
]

METRICS = {
    "per-stream-gbps", "aggregate-gbps", "mean-per-stream-gbps",
    "one-way-latency-ns", "round-trip-latency-us", "copy-latency-us", "score",
}
ENGINES = {"copy", "sm", "unknown"}
OPS = {"write", "read", "bidirectional", "ping-pong", "h2d", "d2h"}


def check_fig(f, gpus):
    for k in ("id", "what", "source", "tool", "engine", "op", "value", "metric", "fit"):
        assert k in f, (f.get("id"), k)
    assert f["metric"] in METRICS, f
    assert f["engine"] in ENGINES, f
    assert f["op"] in OPS, f
    assert ("streams" in f) != ("pattern" in f), f["id"]
    ids = set(gpus)
    if "streams" in f:
        for a, b in f["streams"]:
            assert a in ids or a.startswith("mem"), (f["id"], a)
            assert b in ids or b.startswith("mem"), (f["id"], b)
    if "pattern" in f:
        p = f["pattern"]
        for key in ("gpus",):
            for g in p.get(key, []):
                assert g in ids, (f["id"], g)
    if f["metric"] == "score":
        assert f["fit"] is False, f["id"]
    if not f["fit"]:
        assert f.get("note"), f"{f['id']}: fit = false needs a note saying why"


def write_figures(path, rig, topology, figs, gpus, header):
    seen = set()
    out = []
    for line in header.strip("\n").split("\n"):
        out.append(("# " + line).rstrip())
    out.append(f"rig = {q(rig)}")
    if topology:
        out.append(f"topology = {q(topology)}")
    out.append("")
    for f in figs:
        check_fig(f, gpus)
        assert f["id"] not in seen, f["id"]
        seen.add(f["id"])
        out.append("[[figure]]")
        for k in FIG_ORDER:
            if k in f:
                out.append(f"{k} = {toml_value(f[k])}")
        extra = set(f) - set(FIG_ORDER)
        assert not extra, (f["id"], extra)
        out.append("")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("\n".join(out))
    nfit = sum(1 for f in figs if f["fit"])
    return nfit, len(figs) - nfit


def g(i):
    return f"gpu{i}"


def pairs_streams(pairs):
    return [[g(a), g(b)] for a, b in pairs]


# --------------------------------------------------- torch copy_ harnesses

TORCH_HARNESS_NOTE = (
    "torch harness: dst.copy_(src) per pair on a stream created on the pair's first GPU; "
    "PyTorch runs a cross-device copy_ on the source tensor's device (current stream there) "
    "and chains an event barrier through the destination device's current stream, so copies "
    "into one destination run one at a time; the clock stops at torch.cuda.synchronize() of "
    "the current device only (timed_by). See calibration/public/README.md § torch copy_ harness."
)


def torch_fig(fid, what, source, pairs, mode, value, script, iters, metric="aggregate-gbps",
              topology=None, note="", fit=None, impossible=None, extra=None, nbytes="256 MiB",
              assumed_pairs=None):
    """A figure from the rtx6kpro PyTorch harness (concurrent_write/_read,
    run(), bw_pair()). mode 'write' or 'read' as the source labels it.

    write: pair (s, d) -> copy_ on s's stream: GPU s's copy engine pushes s->d.
    read:  pair (s, d) -> dst on s, src on d; PyTorch issues the copy on d's
           current (default) stream: GPU d's copy engine pushes d->s. The source
           calls it a read; as executed it is a posted write d->s.
    """
    assert mode in ("write", "read")
    f = {"id": fid, "what": what, "source": source}
    if topology:
        f["topology"] = topology
    f["tool"] = f"torch copy_ ({script}, {iters} iterations)"
    f["engine"] = "copy"
    notes = []
    if mode == "write":
        f["op"] = "write"
        f["harness"] = "torch-copy-write"
        streams = [(s, d) for s, d in pairs]
        serial_key = [d for s, d in pairs]
        serial_what = "destination"
    else:
        f["op"] = "write"
        f["source_op"] = "read"
        f["harness"] = "torch-copy-read"
        streams = [(d, s) for s, d in pairs]
        serial_key = [d for s, d in pairs]
        serial_what = "source (as executed)"
        notes.append(
            "labelled READ in the source; the harness puts dst on the first GPU and src on the "
            "second, and PyTorch issues a cross-device copy_ on the source tensor's device "
            "(its default stream), so as executed the second GPU's copy engine pushes posted "
            "writes to the first (streams list the executed direction)")
    f["streams"] = pairs_streams(streams)
    if len(pairs) > 1:
        f["timed_by"] = g(pairs[-1][0])
    f["bytes"] = nbytes
    f["value"] = value
    f["metric"] = metric
    auto_fit = True
    dup = sorted({x for x in serial_key if serial_key.count(x) > 1})
    if dup:
        auto_fit = False
        notes.append(
            f"not every stream runs at once: the harness serialises copies that share a "
            f"{serial_what} ({', '.join(g(x) for x in dup)}), one at a time in issue order")
    if impossible:
        auto_fit = False
        notes.append(impossible)
    if assumed_pairs:
        notes.append(assumed_pairs)
    if note:
        notes.append(note)
    if len(pairs) > 1:
        notes.append(f"clock stops at torch.cuda.synchronize() of {g(pairs[-1][0])} only")
    f["fit"] = auto_fit if fit is None else fit
    f["note"] = "; ".join(notes)
    if extra:
        f.update(extra)
    return f


# ------------------------------------------------------------ topologies

RTX = "RTX PRO 6000 Blackwell"


class Topo:
    def __init__(self, name, source, platform, comment):
        self.name, self.source, self.platform, self.comment = name, source, platform, comment
        self.nodes, self.links = [], []

    def node(self, id, kind, note=None, collapse=None, **kw):
        n = {"id": id, "kind": kind}
        n.update(kw)
        if note:
            n["note"] = note
        self.nodes.append((n, collapse))
        return id

    def gpu(self, i, variant, note):
        return self.node(g(i), "gpu", model=f"{RTX} {variant}", sms=188,
                         memory_bandwidth_gbps=1792, note=note)

    def link(self, a, b, kind, note=None, **kw):
        l = {"a": a, "b": b, "kind": kind}
        l.update(kw)
        if note:
            l["note"] = note
        self.links.append(l)

    def pcie5(self, a, b, note, **kw):
        self.link(a, b, "pcie", note=note, gen=5, width=16, **kw)

    def gpu_ids(self):
        return [n["id"] for n, _ in self.nodes if n["kind"] == "gpu"]

    def write(self, path):
        out = [("# " + l).rstrip() for l in self.comment.strip("\n").split("\n")]
        out.append(f"name = {q(self.name)}")
        out.append(f"source = {q(self.source)}")
        out.append(f"platform = {q(self.platform)}")
        out.append("")
        ids = set()
        for n, col in self.nodes:
            assert n["id"] not in ids, n["id"]
            ids.add(n["id"])
            out.append("[[node]]")
            for k, v in n.items():
                out.append(f"{k} = {toml_value(v)}")
            if col:
                out.append("[node.collapse]")
                for k, v in col.items():
                    out.append(f"{k} = {toml_value(v)}")
        for l in self.links:
            assert l["a"] in ids and l["b"] in ids, l
            out.append("[[link]]")
            for k, v in l.items():
                out.append(f"{k} = {toml_value(v)}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write("\n".join(out) + "\n")


def matrix_cells(path, after, row_labels, commit=COMMIT, label_fn=None):
    """Parse a printed matrix: for each row label, the line (after `after`)
    whose first token is the label, and the cells that follow it.
    Returns {label: (line_no, [cells])}."""
    ls = lines_of(path, commit)
    start = find_line(path, after, commit=commit)
    res = {}
    for lab in row_labels:
        for i in range(start, len(ls)):
            toks = ls[i].split()
            if toks and toks[0] == lab:
                res[lab] = (i + 1, toks[1:])
                break
        else:
            raise ValueError(f"{path}: row {lab!r} not found after {after!r}")
    return res


def src_at(path, line_no, section, cell, commit=COMMIT):
    s = f"{RTX6KPRO}@{commit[:7]} {path}:{line_no} § {section}"
    return s + (f", {cell}" if cell else "")


def one_at_a_time(pairs, summary):
    return {"kind": "one-at-a-time", "pairs": pairs_streams(pairs), "summary": summary}


def cite_line(path, needle, after=None, commit=COMMIT):
    return f"{RTX6KPRO}@{commit[:7]} {path}:{find_line(path, needle, after=after, commit=commit)}"


def table_row(path, needle, after=None, commit=COMMIT):
    """(line number, [cell texts]) of a markdown table row containing needle."""
    n = find_line(path, needle, after=after, commit=commit)
    line = lines_of(path, commit)[n - 1]
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return n, cells


def wr(cell):
    """'56.4 / 58.7 — 0.96×' -> ('56.4', '58.7'); bold and ~ stripped."""
    c = cell.replace("*", "").replace("~", "")
    c = c.split("—")[0].strip()
    a, b = [x.strip() for x in c.split("/")]
    return a, b


P2PBLT_NOTE = {
    "uni": ("p2pBandwidthLatencyTest 'P2P Writes': cudaMemcpyPeerAsync pushed on the source GPU's stream, 5 copies of "
            "40,000,000 int32 (sample defaults; not restated by the source)"),
    "bidi": ("p2pBandwidthLatencyTest bidirectional: both directions at once, each a cudaMemcpyPeerAsync push on its source GPU's "
             "stream, 5 copies of 40,000,000 int32 each (sample defaults); value = sum of both directions"),
    "lat": ("p2pBandwidthLatencyTest 'P2P=Enabled Latency (P2P Writes)': 100 back-to-back cudaMemcpyPeerAsync of one int4 (16 B) on "
            "the row GPU's stream behind a blocking kernel; value = GPU time / 100, i.e. per small copy-engine copy, not a flag round trip"),
}


def p2pblt_matrix(path, after, labels, kind, rel, prefix, tool="p2pBandwidthLatencyTest", topology=None, extra_note="", commit=COMMIT,
                  gpu_of=None, section=None, fit=True):
    """Figures for every off-diagonal cell of a p2pBandwidthLatencyTest-style
    matrix. labels: row labels as printed ('0'..'7'); gpu_of maps the label
    index to a GPU number (default identity)."""
    gpu_of = gpu_of or (lambda k: k)
    rows = matrix_cells(path, after, labels, commit=commit)
    out = []
    for r, lab in enumerate(labels):
        ln, cells = rows[lab]
        for c, v in enumerate(cells):
            if v in ("—", "-"):
                continue
            i, j = gpu_of(int(lab)), gpu_of(c)
            if i == j:
                continue
            f = {"id": f"{prefix}-{i}-{j}", "source": src_at(path, ln, section or after, f"row {lab} column {c}", commit=commit)}
            if topology:
                f["topology"] = topology
            f["tool"] = tool
            f["engine"] = "copy"
            if kind == "uni":
                f.update(what=f"unidirectional P2P write GPU{i}→GPU{j} alone ({rel(i, j)})", op="write", streams=[[g(i), g(j)]],
                         bytes="160 MB", value=float(v), metric="per-stream-gbps")
            elif kind == "bidi":
                f.update(what=f"bidirectional P2P GPU{i}↔GPU{j}, both directions at once ({rel(i, j)})", op="bidirectional",
                         streams=[[g(i), g(j)], [g(j), g(i)]], bytes="160 MB", value=float(v), metric="aggregate-gbps")
            else:
                f.update(what=f"P2P write latency GPU{i}→GPU{j}: one 16-byte copy-engine copy, back to back ({rel(i, j)})", op="write",
                         streams=[[g(i), g(j)]], bytes="16 B", value=float(v), metric="copy-latency-us")
            f["fit"] = fit
            f["note"] = P2PBLT_NOTE[kind] + (("; " + extra_note) if extra_note else "")
            out.append(f)
    return out


def p2pmark_stagger(path, needle_fmt, values, section, topology, n=8, op="read", tool="p2pmark 3c39f36", fit=True, note="", prefix="probe", commit=COMMIT):
    out = []
    for k, v in values.items():
        ln = find_line(path, needle_fmt.format(k=k, v=v), commit=commit)
        if op == "read":
            streams = [[g(i), g((i + k) % n)] for i in range(n)]
            what = f"p2pmark staggered reads, distance +{k}: every GPU i reads GPU (i+{k}) mod {n}, all at once"
            base = ("cudaMemcpyPeerAsync on the reader's stream (pull), 20 × 64 MiB per GPU, each GPU timed with its own events; "
                    "value = mean of the per-GPU rates")
        else:
            streams = [[g(i), g((i + k) % n)] for i in range(n)]
            what = f"p2pmark staggered writes, distance +{k}: GPU i → GPU (i+{k}) mod {n}, all at once"
            base = "value = mean of the per-GPU rates"
        f = {"id": f"{prefix}-plus{k}", "what": what, "source": src_at(path, ln, section, f"+{k}", commit=commit)}
        if topology:
            f["topology"] = topology
        f.update(tool=tool, engine="copy", op=op, streams=streams, bytes="64 MiB", value=float(v),
                 metric="mean-per-stream-gbps", fit=fit, note=base + (("; " + note) if note else ""))
        out.append(f)
    return out
