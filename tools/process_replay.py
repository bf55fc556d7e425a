#!/usr/bin/env python3
"""Process replay: did a change alter any generated kernel?

Runs a test binary with DEBUG=4 (which prints the source of every kernel the engine compiles),
keeps each distinct kernel source, and compares two such captures: a refactor that should change
no kernel must show none added or removed.

  tools/process_replay.py capture BUILD/tests/tinyt_tests OUT_DIR [doctest arguments...]
  tools/process_replay.py diff BEFORE_DIR AFTER_DIR

A capture writes OUT_DIR/<sha1>.src per distinct source. `diff` prints, for each kernel name whose
sources differ, a unified diff of the first pair, and exits 1 when anything differs.
"""
import difflib
import hashlib
import os
import re
import subprocess
import sys
from collections import defaultdict

# where a kernel's source starts, per language the engine prints
STARTS = ("#include <math.h>", "; tinyt kernel", "#pragma OPENCL", "#define INFINITY")
# what else DEBUG=4 prints on stderr: a line like these ends a source
DEBUG_LINE = re.compile(r"^(schedule: |\*\*\* |beam: |tinyt: |compiled |TinyJit: |  \S+ opts: )")
NAME = re.compile(r"^; tinyt kernel (\w+)|void (?:__launch_bounds__\(\d+\) )?(\w+)\(", re.M)


def split_sources(text):
    sources, current = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith(STARTS):
            if current:
                sources.append("".join(current))
            current = [line]
        elif DEBUG_LINE.match(line):
            if current:
                sources.append("".join(current))
            current = None
        elif current is not None:
            current.append(line)
    if current:
        sources.append("".join(current))
    return [s.rstrip("\n") + "\n" for s in sources]


def capture(binary, out_dir, args):
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ, DEBUG="4")
    run = subprocess.run([binary, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         errors="replace")
    sources = set(split_sources(run.stderr))
    for src in sources:
        with open(os.path.join(out_dir, hashlib.sha1(src.encode()).hexdigest() + ".src"), "w") as f:
            f.write(src)
    print(f"{len(sources)} distinct kernel sources in {out_dir} (tests exited {run.returncode})")


def load(directory):
    by_name = defaultdict(set)
    for file in os.listdir(directory):
        with open(os.path.join(directory, file)) as f:
            src = f.read()
        match = NAME.search(src)
        by_name[(match.group(1) or match.group(2)) if match else "?"].add(src)
    return by_name


def diff(before_dir, after_dir):
    before, after = load(before_dir), load(after_dir)
    changed = 0
    for name in sorted(set(before) | set(after)):
        gone, new = sorted(before[name] - after[name]), sorted(after[name] - before[name])
        if not gone and not new:
            continue
        changed += 1
        print(f"== {name}: {len(gone)} source(s) only before, {len(new)} only after")
        if gone and new:
            # the closest pair: most kernels of a name differ in a few lines
            a, b = min(((x, y) for x in gone for y in new),
                       key=lambda p: -difflib.SequenceMatcher(None, p[0], p[1]).quick_ratio())
            sys.stdout.writelines(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "before", "after"))
    total = sum(len(v) for v in after.values())
    print(f"{changed} kernel name(s) differ; {total} distinct sources after")
    return 1 if changed else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "capture":
        capture(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
