#!/usr/bin/env python3
"""Process replay: did a change alter any generated kernel?

A run with PROCESS_REPLAY=<dir> records every kernel it compiles (its AST, opts, device and source;
include/tinyt/engine/replay.hpp). build/tools/process_replay re-renders such records with the code
of its own build and prints the kernels whose source changed. This script drives both:

  tools/process_replay.py record DIR -- COMMAND [ARGS...]   run COMMAND, recording into DIR
  tools/process_replay.py replay DIR                        re-render DIR's records with build/
  tools/process_replay.py ci [--base REF]                   the merge base of HEAD and REF (main by
      default) built in build-replay/, its test suite and examples recorded, replayed with build/:
      prints the count of kernels this change alters. Skips, saying why, when there is no merge
      base other than HEAD or the base cannot record.

A refactor that should change no kernel shows "0 changed".
"""
import argparse
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "build", "tools", "process_replay")
WORK = os.path.join(ROOT, "build-replay")


def log(*args):
    print("process_replay:", *args, flush=True)


def git(*args, check=True):
    run = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    if check and run.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {run.stderr.strip()}")
    return run.stdout.strip() if run.returncode == 0 else None


def record(directory, command, cwd=None, timeout=3600):
    """Runs `command` with PROCESS_REPLAY=directory; its exit status does not matter here."""
    os.makedirs(directory, exist_ok=True)
    env = dict(os.environ, PROCESS_REPLAY=os.path.abspath(directory))
    run = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    return run.returncode


def replay(directory, tool=TOOL):
    if not os.path.exists(tool):
        sys.exit(f"process_replay: no {tool}; build it (cmake --build build --target process_replay)")
    return subprocess.run([tool, directory]).returncode


def ci(base_ref):
    ref = base_ref or next((r for r in ("origin/main", "main") if git("rev-parse", "--verify", "-q", r, check=False)), None)
    if ref is None:
        return log("skipped: no main branch to compare with")
    base, head = git("merge-base", "HEAD", ref, check=False), git("rev-parse", "HEAD")
    if not base:
        return log(f"skipped: HEAD and {ref} have no merge base")
    if base == head:
        return log(f"skipped: HEAD is the merge base with {ref}: nothing to compare")
    if git("cat-file", "-e", f"{base}:include/tinyt/engine/replay.hpp", check=False) is None:
        return log(f"skipped: the merge base {base[:12]} cannot record kernels (it predates process replay)")
    src, build, records = os.path.join(WORK, "src"), os.path.join(WORK, "build"), os.path.join(WORK, "records")
    shutil.rmtree(records, ignore_errors=True)
    if os.path.exists(src):
        git("worktree", "remove", "--force", src, check=False)
        shutil.rmtree(src, ignore_errors=True)
    git("worktree", "add", "--detach", src, base)
    try:
        log(f"building the merge base {base[:12]} in {build}")
        targets = ["tinyt_tests", "demo", "kv_cache", "llm", "fashion_mnist"]
        subprocess.run(["cmake", "--log-level=WARNING", "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-S", src, "-B", build], check=True)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2), "--target", *targets], check=True)
        log("recording its test suite and examples")
        record(records, [os.path.join(build, "tests", "tinyt_tests")], cwd=build)
        for example in (["demo"], ["kv_cache"], ["llm", "--max-tokens", "8"], ["fashion_mnist", "20", "32"]):
            record(records, [os.path.join(build, "examples", example[0]), *example[1:]], cwd=build)
        log(f"replaying its {len(os.listdir(records))} kernels with this build (HEAD {head[:12]})")
        return replay(records)
    finally:
        git("worktree", "remove", "--force", src, check=False)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("record", help="run a command, recording its kernels")
    r.add_argument("dir")
    r.add_argument("command", nargs=argparse.REMAINDER)
    sub.add_parser("replay", help="re-render recorded kernels with build/").add_argument("dir")
    sub.add_parser("ci", help="compare HEAD with its merge base").add_argument("--base", help="the branch (main)")
    args = p.parse_args()
    if args.what == "record":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command:
            p.error("record: no command")
        sys.exit(record(args.dir, command))
    if args.what == "replay":
        sys.exit(replay(args.dir))
    sys.exit(ci(args.base) or 0)


if __name__ == "__main__":
    main()
