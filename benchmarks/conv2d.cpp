// conv2d of an 8 x 64 x 56 x 56 fp32 input with 64 3x3 filters, stride 1, padding 1, no bias,
// in GFLOPS (2 * 8*64*56*56 outputs * 64*3*3 multiply-adds); 1 x 4 x 8 x 8 with 4 filters with
// --quick. `fp16`: input, filters and output float16 (float32 accumulation).
#include <algorithm>
#include <random>

#include <tinyt.hpp>

#include "bench.hpp"

using namespace tinyt;

int main(int argc, char** argv) {
  bench::Options opt(argc, argv);
  const bool fp16 = std::find(opt.args.begin(), opt.args.end(), "fp16") != opt.args.end();
  const DType dtype = fp16 ? dtypes::float16 : dtypes::float32;
  const int64_t batch = opt.quick ? 1 : 8, cin = opt.quick ? 4 : 64, cout = cin,
                h = opt.quick ? 8 : 56, w = h, k = 3;
  Tensor x = Tensor::rand({batch, cin, h, w}).cast(dtype).realize();
  Tensor wt = (Tensor::rand({cout, cin, k, k}) - 0.5).cast(dtype).realize(), y;
  const bench::Timing t = bench::measure(opt, [&] { y = x.conv2d(wt, {}, 1, 1, 1, 1).realize(); });
  const double flops = 2.0 * batch * cout * h * w * cin * k * k;
  const std::string what = "conv2d " + std::to_string(batch) + "x" + std::to_string(cin) + "x" +
                           std::to_string(h) + "x" + std::to_string(w) + ", " +
                           std::to_string(cout) + " 3x3 filters, pad 1" + (fp16 ? ", fp16" : "");
  const std::string name = std::string(opt.quick ? "conv2d_quick" : "conv2d") + (fp16 ? "_fp16" : "");
  bench::report(name, what, flops / t.best_s / 1e9, "GFLOPS", t);

  bench::check(y.shape() == Shape{batch, cout, h, w},
               "conv2d output shape " + to_string(y.shape()));
  const std::vector<float> xv = x.cast(dtypes::float32).to_vector<float>(), wv = wt.cast(dtypes::float32).to_vector<float>(),
                           yv = y.cast(dtypes::float32).to_vector<float>();
  std::mt19937 rng(1);
  for (int s = 0; s < 8; ++s) {
    // corners and edges too, where the padding matters
    const int64_t b = rng() % batch, o = rng() % cout, i = s < 2 ? 0 : rng() % h,
                  j = s < 2 ? s * (w - 1) : rng() % w;
    double want = 0;
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t di = 0; di < k; ++di)
        for (int64_t dj = 0; dj < k; ++dj) {
          const int64_t ii = i + di - 1, jj = j + dj - 1;
          if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
          want += double(xv[((b * cin + c) * h + ii) * w + jj]) *
                  double(wv[((o * cin + c) * k + di) * k + dj]);
        }
    bench::check(bench::close(yv[((b * cout + o) * h + i) * w + j], want, fp16 ? 2e-3 : 1e-3),
                 "conv2d output (" + std::to_string(b) + ", " + std::to_string(o) + ", " +
                     std::to_string(i) + ", " + std::to_string(j) + ")");
  }
  return 0;
}
