#!/usr/bin/env python3
"""The VIZ page of a program, in a real browser: runs the program with VIZ=1 and DEBUG=2, opens
the page it wrote in headless Chromium (Debian's), and checks that the script ran to the end
without an error or a console message, and that every kernel the program launched (DEBUG=2's
table at exit names them) and the rewrites of every kernel's lowering are on the page. Then
keeps a screenshot.

    check_page.py --screenshot OUT.png [--hash 'kernel=NAME'] PROGRAM [ARGS...]

Exits 1 with the reasons when a check fails.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
                  "--virtual-time-budget=30000"]


def fail(problems):
    for p in problems:
        print(f"check_page: {p}", file=sys.stderr)
    sys.exit(1)


def run_program(argv, tmp):
    env = dict(os.environ, VIZ="1", DEBUG="2", TMPDIR=tmp)
    run = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        fail([f"{' '.join(argv)} exited with {run.returncode}:", run.stderr[-3000:]])
    page = re.search(r"tinyt: VIZ page written to (\S+)", run.stderr)
    if not page:
        fail([f"{' '.join(argv)} wrote no VIZ page; its output ends:", run.stderr[-2000:]])
    # DEBUG=2's table at exit: a header, a line per kernel, a total
    table = run.stderr[run.stderr.rfind("\nkernel ") + 1:]
    kernels = []
    for line in table.splitlines()[1:]:
        if line.startswith("total ("):
            break
        if not line.startswith("copy "):  # copies are not kernels
            kernels.append(line.split()[0])
    if not kernels:
        fail(["the program's DEBUG=2 table names no kernel"])
    return page.group(1), kernels


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    fail(["no Chromium here: run tools/setup.sh viz (Debian's chromium package)"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--screenshot", required=True, help="where the PNG goes")
    p.add_argument("--hash", default="", help="what the page shows (kernel=NAME, or g=G&r=R&s=S)")
    p.add_argument("--size", default="1600,1000", help="the window, width,height")
    p.add_argument("program", nargs=argparse.REMAINDER, help="the program and its arguments")
    args = p.parse_args()
    if not args.program:
        p.error("no program given")
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        page, kernels = run_program(args.program, tmp)
        url = "file://" + os.path.abspath(page)
        dom = subprocess.run([browser, *CHROMIUM_FLAGS, "--enable-logging=stderr", "--v=0", "--dump-dom", url],
                             capture_output=True, text=True, timeout=300)
        problems = []
        if dom.returncode != 0:
            problems.append(f"chromium exited with {dom.returncode}: {dom.stderr[-2000:]}")
        # the page logs nothing: any console line is an error or a warning from its script
        problems += [f"console: {line}" for line in dom.stderr.splitlines() if ":CONSOLE" in line]
        html = dom.stdout
        if 'data-viz-ready="1"' not in html:
            problems.append("the page's script did not finish (no data-viz-ready on the body)")
        error = re.search(r'data-viz-error="([^"]*)"', html)
        if error:
            problems.append(f"the page's script raised: {error.group(1)}")
        listed = set(re.findall(r'<div class="item kernel[^"]*">([^<]*?) +\(', html))
        problems += [f"kernel {k} is not listed on the page" for k in kernels if k not in listed]
        for rewrite in ("division_rules in lower_kernel", "schedule: "):
            if rewrite not in html:
                problems.append(f"no rewrite named '{rewrite}...' on the page")
        if problems:
            fail(problems)
        os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
        if os.path.exists(args.screenshot):
            os.remove(args.screenshot)
        shot = subprocess.run([browser, *CHROMIUM_FLAGS, f"--screenshot={os.path.abspath(args.screenshot)}",
                               f"--window-size={args.size}", url + ("#" + args.hash if args.hash else "")],
                              capture_output=True, text=True, timeout=300)
        if shot.returncode != 0 or not os.path.exists(args.screenshot):
            fail([f"no screenshot: {shot.stderr[-2000:]}"])
        size = os.path.getsize(page)
        print(f"check_page: {' '.join(args.program)}: {len(kernels)} kernels listed, the page ({size / 1e6:.1f} MB) "
              f"renders without a console message; screenshot {args.screenshot}")


if __name__ == "__main__":
    main()
