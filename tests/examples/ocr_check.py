#!/usr/bin/env python3
"""examples/ocr on text it has not seen: ImageMagick draws two lines in DejaVu Sans, black on
white (an 8-bit grey PNG), and ocr must read back every word, in order. PaddleOCR's recognizer
(trained on Chinese) may leave out the space between two words: on this picture rapidocr itself
reads "ONNX2026", from the same box; so a word read may be two or more of the words drawn, run
together, and nothing else.

Then the same picture turned upside down (an RGBA PNG): read without the direction classifier it
is nonsense (rapidocr with use_cls=False: "9207 XNNO"), with it every word drawn must be read,
whole, in one of the boxes. (The boxes come in the turned page's order, and the detector gives
"tinyt" a box of its own that overlaps its line's, as rapidocr's does, so order and extra
letters are not judged there.) Last, a file that is not a PNG must be an error that names it.

    ocr_check.py OCR_BINARY MODELS WORK_DIR    (MODELS: the ONNX fixture's folder, whose
                                                ppocr_{det,cls,rec}/model.txt name the models)
"""
import os
import subprocess
import sys

LINES = ["tinyt reads text", "ONNX 2026"]
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # Debian's fonts-dejavu-core


def draw(path: str, *options: str) -> None:
    """The lines, 36 pt, one under the other, on a white 480x200 picture."""
    command = ["convert", "-size", "480x200", "xc:white", "-font", FONT, "-pointsize", "36", "-fill", "black"]
    for i, line in enumerate(LINES):
        command += ["-annotate", f"+30+{70 + 80 * i}", line]
    subprocess.run(command + list(options) + [path], check=True)


def read(ocr: str, models: list, picture: str) -> str:
    """The text ocr reads in the picture (what it prints after its box lines)."""
    run = subprocess.run([ocr, *models, picture], capture_output=True, text=True)
    print(run.stdout + run.stderr, end="")
    if run.returncode != 0:
        raise SystemExit(f"FAIL: ocr exited with {run.returncode} on {picture}")
    return run.stdout.split("\n\n", 1)[-1]


def runs_of(found: list, wanted: list) -> bool:
    """Whether each word found is one or more of the wanted words run together, in order, all of them."""
    at = 0
    for word in found:
        run = ""
        while at < len(wanted) and len(run) < len(word):
            run += wanted[at]
            at += 1
        if run != word:
            return False
    return at == len(wanted)


def main() -> int:
    ocr, fixture, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    models = []
    for name in ("ppocr_det", "ppocr_cls", "ppocr_rec"):
        with open(os.path.join(fixture, name, "model.txt")) as f:
            models.append(f.read().strip())
    upright, upside_down = os.path.join(work, "upright.png"), os.path.join(work, "upside_down.png")
    draw(upright)
    draw(upside_down, "-rotate", "180", "-define", "png:color-type=6")  # RGBA, 8 bits a channel
    wanted = " ".join(LINES).split()
    failed = False
    found = read(ocr, models, upright).split()
    if not runs_of(found, wanted):
        print(f"FAIL: upright: read {found}, not {wanted} (or some of them run together)")
        failed = True
    found = read(ocr, models, upside_down).split()
    missed = [w for w in wanted if not any(w in f for f in found)]
    if missed:
        print(f"FAIL: upside down: {missed} not read (read {found})")
        failed = True

    not_png = os.path.join(work, "not.png")
    with open(not_png, "w") as f:
        f.write("plain text\n")
    run = subprocess.run([ocr, *models, not_png], capture_output=True, text=True)
    if run.returncode != 1 or f"{not_png}: not a PNG file" not in run.stderr:
        print(f"FAIL: a text file gave exit {run.returncode} and {run.stderr!r}")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
