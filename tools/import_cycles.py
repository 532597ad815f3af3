#!/usr/bin/env python3
"""Import circles between the files of one Rust crate.

Usage: python3 tools/import_cycles.py crates/<crate>/src

Builds the graph of `crate::a::b` references between the crate's files:
every `use crate::...` (grouped forms `use crate::{a, b::{c, d}}` included)
and every inline `crate::x::y` path in code (comments and string literals
are skipped). Each path is resolved to the file that defines the deepest
module it names (`a.rs`, `a/mod.rs`, `a/b.rs`; `lib.rs` for the crate
root). A folder module's `mod.rs` and its children are separate files; the
edge from a parent to a child it declares with `mod` is not counted, only
`use` and paths are, and `super::`/`self::` paths (a folder's own interior)
are not counted. Prints every strongly connected component of more than one
file (Tarjan), one per line, and exits 1 if there is any.
"""

import os
import re
import sys


def module_path(src, path):
    """The module path of a file: `a/b.rs` -> ('a', 'b'), `a/mod.rs` -> ('a',)."""
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"] or rel == ["main"]:
        rel = []
    return tuple(rel)


def strip(text):
    """Code without comments, string and char literals (kept line-free)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            i = n if end < 0 else end + 1 + len(hashes)
            out.append('""')
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]) or (c == "'" and text.startswith("'\\", i)):
            end = text.find("'", i + 2)
            i = end + 1
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand(tree):
    """Paths of a use tree: `{a, b::{c, d}}` -> [['a'], ['b', 'c'], ['b', 'd']]."""
    tree = tree.strip()
    if not tree:
        return [[]]
    if tree.startswith("{"):
        body = tree[1 : tree.rfind("}")]
        parts, depth, cur = [], 0, ""
        for ch in body:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        return [p for part in parts if part.strip() for p in expand(part)]
    m = re.match(r"(\w+)\s*::\s*(.*)$", tree, re.S)
    if m:
        return [[m.group(1)] + rest for rest in expand(m.group(2))]
    name = re.match(r"(\w+|\*)", tree)
    return [[name.group(1)]] if name else [[]]


def references(code):
    """Every `crate::...` path in the code, as lists of segments."""
    paths = []
    for m in re.finditer(r"\buse\s+crate\s*::\s*([^;]*);", code, re.S):
        paths.extend(expand(m.group(1)))
    rest = re.sub(r"\buse\s+crate\s*::[^;]*;", "", code, flags=re.S)
    for m in re.finditer(r"\bcrate((?:\s*::\s*\w+)+)", rest):
        paths.append([s.strip() for s in m.group(1).split("::") if s.strip()])
    return paths


def resolve(modules, path):
    """The file of the deepest module a path names."""
    best = modules.get(())
    for k in range(1, len(path) + 1):
        key = tuple(path[:k])
        if key in modules:
            best = modules[key]
        else:
            break
    return best


def tarjan(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph_of(src):
    files = []
    for root, _, names in os.walk(src):
        files += [os.path.join(root, f) for f in names if f.endswith(".rs")]
    modules = {module_path(src, f): os.path.relpath(f, src) for f in files}
    graph = {os.path.relpath(f, src): set() for f in files}
    for f in files:
        me = os.path.relpath(f, src)
        with open(f, encoding="utf-8") as fh:
            code = strip(fh.read())
        for path in references(code):
            target = resolve(modules, path)
            if target and target != me:
                graph[me].add(target)
    return graph


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    graph = graph_of(argv[1])
    circles = [c for c in tarjan(graph) if len(c) > 1]
    for c in sorted(circles):
        print(" <-> ".join(c))
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
