#!/usr/bin/env python3
"""An exported model's web page (TinyJit.export_webgpu) in a real browser: serves the folder on
127.0.0.1 (a free port), opens its index.html in headless Chromium with WebGPU on SwiftShader
(Chromium's CPU Vulkan), waits for the page's report (window.tinytReport), and checks it against
the CPU's reference that the exporting program wrote (reference.json): every key of the reference
is in the report, its numbers within float32 tolerance (|got - want| <= atol + rtol |want|). The
page must log no console error or warning and throw nothing. Then keeps a screenshot.

    check_page.py --screenshot OUT.png [--rtol R] [--atol A] [--timeout S] FOLDER

The browser is driven through the DevTools protocol over a pipe (--remote-debugging-pipe: JSON
messages ending in a NUL byte on file descriptors 3 and 4), which needs nothing outside Python's
standard library. Exits 1 with the reasons when a check fails.
"""
import argparse
import base64
import functools
import http.server
import json
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# WebGPU on SwiftShader (Vulkan on the CPU, inside Chromium; no shader-f16), whatever GPU there is
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--hide-scrollbars", "--mute-audio", "--no-first-run",
                  "--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--remote-debugging-pipe"]


def fail(problems):
    for p in problems:
        print(f"check_page: {p}", file=sys.stderr)
    sys.exit(1)


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    fail(["no Chromium here: run tools/setup.sh viz (Debian's chromium package)"])


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".js": "text/javascript",
                      ".wgsl": "text/plain", ".json": "application/json"}

    def log_message(self, *args):
        pass


def serve(folder):
    """An HTTP server of `folder` on 127.0.0.1, in a thread; its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Browser:
    """Headless Chromium and one page in it, driven through the DevTools protocol over a pipe."""

    def __init__(self, profile):
        to_browser, self.out = os.pipe()
        self.inp, from_browser = os.pipe()

        def fds():  # the browser reads commands on 3, writes replies on 4
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.log = open(os.path.join(profile, "chromium.log"), "w")
        self.proc = subprocess.Popen([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     pass_fds=(3, 4), preexec_fn=fds, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        os.close(to_browser)
        os.close(from_browser)
        self.buffer = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def receive(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.inp], [], [], left)
            if ready:
                chunk = os.read(self.inp, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its pipe (it exited)")
                self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, timeout=60, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self.receive(deadline)
            if reply is None:
                raise RuntimeError(f"Chromium did not answer {method} within {timeout} s")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url, width, height):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression, wait=False):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": wait})
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def messages(self):
        """The console errors and warnings, log entries and exceptions the page produced."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                out.append(f"console.{params['type']}: {text}")
            elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                out.append(f"log ({params['entry'].get('source')}): {params['entry'].get('text')} {params['entry'].get('url', '')}")
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                out.append(f"exception: {details.get('exception', {}).get('description', details.get('text'))}")
        return out

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=10)
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def flatten(x):
    if isinstance(x, list):
        return [y for item in x for y in flatten(item)]
    return [x]


def compare(name, got, want, rtol, atol):
    """The problems of `got` against `want` (numbers within tolerance, anything else equal)."""
    got, want = flatten(got), flatten(want)
    if len(got) != len(want):
        return [f"{name}: {len(got)} values, the reference has {len(want)}"], 0.0
    problems, worst = [], 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, (int, float)) and isinstance(g, (int, float)):
            err = abs(g - w)
            worst = max(worst, err / (atol + rtol * abs(w)))
            if not err <= atol + rtol * abs(w) or math.isnan(g) != math.isnan(w):
                problems.append(f"{name}[{i}]: the page computes {g}, the CPU {w}")
        elif g != w:
            problems.append(f"{name}[{i}]: the page has {g!r}, the reference {w!r}")
    return problems[:10] + ([f"{name}: ... {len(problems) - 10} more"] if len(problems) > 10 else []), worst


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--screenshot", required=True, help="where the PNG goes")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--timeout", type=float, default=300, help="seconds the page may take to report")
    p.add_argument("--size", default="1000,800", help="the window, width,height")
    p.add_argument("folder", help="the exported folder (index.html, model.js, reference.json)")
    args = p.parse_args()
    folder = os.path.abspath(args.folder)
    with open(os.path.join(folder, "reference.json")) as f:
        reference = json.load(f)
    width, height = (int(v) for v in args.size.split(","))
    server = serve(folder)
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    started = time.time()
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(profile)
        try:
            browser.open(url, width, height)
            report = None
            while report is None and time.time() - started < args.timeout:
                report = browser.evaluate("window.tinytReport === undefined ? null : JSON.stringify(window.tinytReport)")
                if report is None:
                    time.sleep(0.25)
            seconds = time.time() - started
            if report is None:
                fail(browser.messages() + [f"{url}: no report from the page within {args.timeout:.0f} s (window.tinytReport)"])
            problems = []
            report = json.loads(report)
            if "error" in report:
                problems.append(f"the page failed: {report['error']}")
            worst = 0.0
            for key, want in reference.items():
                if key not in report:
                    problems.append(f"the page reports no '{key}'")
                    continue
                found, w = compare(key, report[key], want, args.rtol, args.atol)
                problems += found
                worst = max(worst, w)
            adapter = browser.evaluate("navigator.gpu.requestAdapter().then((a) => a.info.vendor + ' ' + a.info.architecture)", wait=True)
            os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
            shot = browser.call("Page.captureScreenshot", {"format": "png"})
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            problems = browser.messages() + problems  # (those of the screenshot's time too)
        except RuntimeError as e:
            fail([str(e)])
        finally:
            browser.close()
            server.shutdown()
    if problems:
        fail(problems)
    print(f"check_page: {args.folder}: the page's {', '.join(reference)} on WebGPU ({adapter}) agree with the CPU's "
          f"(worst {worst:.2f} of the tolerance rtol {args.rtol:g} atol {args.atol:g}); {seconds:.1f} s to report; "
          f"screenshot {args.screenshot}")


if __name__ == "__main__":
    main()
