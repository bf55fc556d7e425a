#!/usr/bin/env python3
"""Runs a program as several MPI ranks (mpirun -np N) and checks how it ends: the exit status,
text its output must hold, and that it ends within a time limit (a rank that waits forever fails
the test instead of hanging it).

  run_mpi.py [--np 2] [--env K=V] [--expect TEXT]... [--expect-re REGEX]... [--reject TEXT]...
             [--exit 0|nonzero|N] [--within S] -- PROGRAM ARGS
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--env", action="append", default=[], help="K=V for every rank")
    p.add_argument("--expect", action="append", default=[], help="text the output must hold")
    p.add_argument("--expect-re", action="append", default=[], help="a regular expression the output must match")
    p.add_argument("--reject", action="append", default=[], help="text the output must not hold")
    p.add_argument("--exit", default="0", help="0, nonzero, or the exact status")
    p.add_argument("--within", type=float, default=600, help="seconds the run may take")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("run_mpi.py: mpirun not found (tools/setup.sh installs Debian's openmpi-bin)")
    # --oversubscribe: more ranks than cores is fine for a test; --bind-to none: each rank's thread
    # pool may use every core (Open MPI binds 2 ranks to a core each); as root (CI), Open MPI asks
    # to be told
    argv = [mpirun, "-np", str(a.np), "--oversubscribe", "--bind-to", "none"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    for kv in a.env:
        argv += ["-x", kv]
    env = dict(os.environ)
    env.update(kv.split("=", 1) for kv in a.env)
    start = time.monotonic()
    try:
        run = subprocess.run(argv + command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=a.within)
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
        print(out)
        sys.exit(f"run_mpi.py: still running after {a.within:.0f} s: {' '.join(command)}")
    took = time.monotonic() - start
    print(run.stdout)
    print(f"run_mpi.py: exit status {run.returncode} after {took:.1f} s")
    failed = []
    if not (run.returncode != 0 if a.exit == "nonzero" else run.returncode == int(a.exit)):
        failed.append(f"exit status {run.returncode}, expected {a.exit}")
    failed += [f"no '{text}' in the output" for text in a.expect if text not in run.stdout]
    failed += [f"nothing in the output matches '{regex}'" for regex in a.expect_re if not re.search(regex, run.stdout)]
    failed += [f"'{text}' in the output" for text in a.reject if text in run.stdout]
    if failed:
        sys.exit("run_mpi.py: " + "; ".join(failed))


if __name__ == "__main__":
    main()
