#!/usr/bin/env python3
"""examples/vad on speech it has not heard: espeak-ng says a sentence, which this script puts
between two seconds of silence in a 16-bit WAV at espeak-ng's rate (22050 Hz: the example
resamples), then checks that vad finds one segment around the speech and none in the silence.

    vad_check.py VAD_BINARY MODEL_TXT WORK_DIR    (MODEL_TXT: a file naming silero_vad.onnx)
"""
import array
import os
import re
import subprocess
import sys
import wave


def main() -> int:
    vad, model_txt, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    with open(model_txt) as f:
        model = f.read().strip()
    said = os.path.join(work, "said.wav")
    subprocess.run(["espeak-ng", "-w", said, "Voice activity detection finds the spoken words in this recording."], check=True)
    with wave.open(said) as w:
        rate, width, frames = w.getframerate(), w.getsampwidth(), w.readframes(w.getnframes())
    assert width == 2, f"espeak-ng wrote {8 * width}-bit samples"
    speech = array.array("h", frames)
    silence = array.array("h", [0] * (2 * rate))
    padded = os.path.join(work, "padded.wav")
    with wave.open(padded, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(rate)
        w.writeframes((silence + speech + silence).tobytes())
    # where the speech is: its first and last samples above 1% of full scale
    loud = [i for i, s in enumerate(speech) if abs(s) > 327]
    begin, end = 2 + loud[0] / rate, 2 + loud[-1] / rate
    out = subprocess.run([vad, model, padded], check=True, capture_output=True, text=True).stdout
    print(out, end="")
    found = [(float(a), float(b)) for a, b in re.findall(r"speech ([0-9.]+) s - ([0-9.]+) s", out)]
    print(f"the speech is at {begin:.2f} s - {end:.2f} s")
    if not found:
        print("FAIL: no speech found")
        return 1
    # every segment overlaps the speech; together they cover it to within 0.3 s at each end
    if any(b < begin - 0.3 or a > end + 0.3 for a, b in found):
        print("FAIL: a segment in the silence")
        return 1
    if found[0][0] > begin + 0.3 or found[-1][1] < end - 0.3:
        print("FAIL: the segments miss the start or the end of the speech")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
