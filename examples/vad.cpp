// Voice activity: the speech segments of a WAV file, by silero-vad's ONNX model run through tinyt.
//
//   vad silero_vad.onnx speech.wav
//
// Reads 16-bit PCM (the first channel; any rate, resampled linearly to 16 kHz) and feeds the model
// windows of 512 samples, each after the 64 before it (as silero's own wrapper does), its state
// carried from one window to the next. The probabilities become segments as silero's
// get_speech_timestamps makes them: speech starts at 0.5, ends after 100 ms below 0.35, segments
// under 250 ms are dropped, and each is widened by 30 ms. Prints "speech <start> s - <end> s".
#include <tinyt/onnx.hpp>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>

using namespace tinyt;

namespace {

constexpr int64_t rate = 16000, window = 512, context = 64;

// a little-endian unsigned integer of `n` bytes at `at`
uint32_t le(const std::string& b, size_t at, int n) {
  uint32_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + static_cast<size_t>(i)])) << (8 * i);
  return v;
}

// The samples of a 16-bit PCM WAV file in [-1, 1), its first channel, at 16 kHz
std::vector<float> read_wav(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("vad: cannot read " + path);
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (b.size() < 12 || b.compare(0, 4, "RIFF") != 0 || b.compare(8, 4, "WAVE") != 0) throw Error("vad: " + path + " is not a WAV file");
  uint32_t channels = 0, sample_rate = 0, bits = 0, format = 0;
  std::vector<float> samples;
  for (size_t at = 12; at + 8 <= b.size();) {  // chunks: id, size, data (padded to an even size)
    const std::string id = b.substr(at, 4);
    const size_t size = le(b, at + 4, 4), data = at + 8;
    if (data + size > b.size()) throw Error("vad: " + path + ": chunk '" + id + "' runs past the file");
    if (id == "fmt " && size >= 16) {
      format = le(b, data, 2), channels = le(b, data + 2, 2), sample_rate = le(b, data + 4, 4), bits = le(b, data + 14, 2);
    } else if (id == "data") {
      if (format != 1 || bits != 16 || channels == 0)
        throw Error("vad: " + path + ": format " + std::to_string(format) + ", " + std::to_string(bits) + " bits; 16-bit PCM is read");
      for (size_t i = data; i + 2 * channels <= data + size; i += 2 * channels)
        samples.push_back(static_cast<float>(static_cast<int16_t>(le(b, i, 2))) / 32768.0f);
    }
    at = data + size + (size & 1);
  }
  if (sample_rate == 0) throw Error("vad: " + path + ": no fmt chunk");
  if (sample_rate == rate) return samples;
  // linear resampling to 16 kHz
  std::vector<float> out;
  const double step = static_cast<double>(sample_rate) / rate;
  for (double x = 0; x + 1 < static_cast<double>(samples.size()); x += step) {
    const auto i = static_cast<size_t>(x);
    const auto t = static_cast<float>(x - static_cast<double>(i));
    out.push_back(samples[i] * (1 - t) + samples[i + 1] * t);
  }
  return out;
}

struct Segment {
  int64_t start, end;  // in samples
};

// silero's get_speech_timestamps on the windows' probabilities
std::vector<Segment> segments(const std::vector<float>& p, int64_t total) {
  const float on = 0.5f, off = 0.35f;
  const int64_t min_speech = rate * 250 / 1000, min_silence = rate * 100 / 1000, pad = rate * 30 / 1000;
  std::vector<Segment> found;
  bool speaking = false;
  int64_t start = 0, quiet_since = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const int64_t at = static_cast<int64_t>(i) * window;
    if (p[i] >= on) quiet_since = -1;
    if (p[i] >= on && !speaking) {
      speaking = true, start = at;
      continue;
    }
    if (p[i] < off && speaking) {
      if (quiet_since < 0) quiet_since = at;
      if (at - quiet_since < min_silence) continue;
      if (quiet_since - start > min_speech) found.push_back({start, quiet_since});
      speaking = false, quiet_since = -1;
    }
  }
  if (speaking && total - start > min_speech) found.push_back({start, total});
  for (Segment& s : found) s.start = std::max<int64_t>(0, s.start - pad), s.end = std::min(total, s.end + pad);
  return found;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::cerr << "usage: vad silero_vad.onnx speech.wav\n";
    return 2;
  }
  const onnx::Model model = onnx::load(argv[1]);
  const std::vector<float> audio = read_wav(argv[2]);
  const auto total = static_cast<int64_t>(audio.size());
  Tensor state = Tensor::zeros({2, 1, 128});
  const Tensor sr = Tensor::full(Shape{}, rate, dtypes::int64);
  std::vector<float> probabilities, chunk(static_cast<size_t>(context + window), 0.0f);
  for (int64_t at = 0; at < total; at += window) {
    // the last `context` samples of the window before, then this window (zeros past the end)
    std::copy(chunk.end() - context, chunk.end(), chunk.begin());
    for (int64_t i = 0; i < window; ++i) chunk[static_cast<size_t>(context + i)] = at + i < total ? audio[static_cast<size_t>(at + i)] : 0.0f;
    const std::map<std::string, Tensor> out = model.run({{"input", Tensor::from_vector(chunk, {1, context + window})}, {"state", state}, {"sr", sr}});
    probabilities.push_back(out.at("output").item<float>());
    state = out.at("stateN");
    state.realize();  // (each window reads the state the one before made)
  }
  std::cout << std::fixed << std::setprecision(2);
  std::cout << audio.size() / static_cast<double>(rate) << " s of audio, " << probabilities.size() << " windows\n";
  for (const Segment& s : segments(probabilities, total))
    std::cout << "speech " << s.start / static_cast<double>(rate) << " s - " << s.end / static_cast<double>(rate) << " s\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << e.what() << "\n";
  return 1;
}
