// codegen/opt: every opt, the hand-coded choice and BEAM's choice compute what the unoptimized
// kernel computes, on a corpus of kernels (matmul, conv, reductions of odd sizes, views with
// pads and flips, integer sums, threaded elementwise); bad opts are OptErrors; the thread pool.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <tinyt.hpp>

#include "helpers.hpp"

using namespace tinyt;
using tinyt_test::input;
using codegen::Opt;
using codegen::OptOp;

namespace {

struct CorpusEntry {
  const char* name;
  Tensor value;
};
std::vector<CorpusEntry> corpus() {
  Tensor a = input({24, 40}, 1), b = input({40, 32}, 2), x = input({2, 3, 10, 12}, 3), w = input({4, 3, 3, 3}, 4);
  Tensor odd = input({33, 70}, 5), ints = input({12, 96}, 6).mul(8).cast(dtypes::int32).realize();
  Tensor big = input({1 << 17}, 7), g = input({2, 4, 8, 10}, 8), w5 = input({4, 3, 5, 5}, 9), g5 = input({2, 4, 6, 8}, 10);
  Tensor xc = input({2, 16, 8, 8}, 11), wc = input({8, 16, 3, 3}, 12), gc = input({2, 8, 6, 6}, 13);
  return {
      {"matmul", a.matmul(b)},
      {"matmul with a row of no whole vectors", a.matmul(input({40, 53}, 14))},
      {"matmul of a transposed view", b.T().matmul(a.T())},
      // a Linear's weight, (out, in), read across its rows; and attention's scores q k^T over 13
      // tokens, whose row of 13 is padded to whole vectors when k's gathers are copied
      {"matmul by a transposed weight, x W^T", a.matmul(input({48, 40}, 15).T())},
      {"attention scores over 13 tokens", input({2, 3, 13, 8}, 16).matmul(input({2, 3, 13, 8}, 17).transpose(-1, -2))},
      // a few rows by a wide weight: every row tile in the cache tile, the threads over the columns
      {"a few rows by a long reduction", input({8, 512}, 18).matmul(input({512, 96}, 19))},
      // a weight decoded where the matmul reads it (int8 values times a float16 scale per row, as
      // GGUF's Q8_0): on a CPU one kernel, whose copies (PACK) hold the decoded floats
      {"matmul by a decoded int8 weight", a.matmul((input({48, 40}, 20).mul(8).cast(dtypes::int8).realize().cast(dtypes::float32) *
                                                    input({48, 1}, 21).cast(dtypes::float16).realize().cast(dtypes::float32)).T())},
      {"conv2d with padding", x.conv2d(w, {}, 1, 1, 1, 1)},
      // the backward kernels: an input gradient reads the output gradient under a mask (a "full"
      // convolution), a weight gradient reduces over the batch and the output's rows
      {"conv2d input gradient", (x.conv2d(w) * g).sum().gradient({x})[0]},
      {"conv2d weight gradient", (x.conv2d(w) * g).sum().gradient({w})[0]},
      {"conv2d 5x5 gradients", (x.conv2d(w5) * g5).sum().gradient({x})[0] + (x.conv2d(w5) * g5).sum().gradient({w5})[0].sum()},
      // 16 input channels: the input gradient's tile is a vector along them on a CPU, its weights packed
      {"conv2d input gradient, 16 channels", (xc.conv2d(wc) * gc).sum().gradient({xc})[0]},
      {"max pool 2x2 backward", (xc.max_pool2d() * xc.max_pool2d().flip(3)).sum().gradient({xc})[0]},
      {"sum over odd sizes", odd.sum(1)},
      {"max over the first axis", odd.max(0)},
      {"padded and flipped views", (odd.pad({{1, 2}, {3, 0}}) * odd.flip(0).pad({{0, 3}, {2, 1}})).exp2()},
      {"integer sum of products", (ints * ints.flip(1)).sum(1)},
      {"threaded elementwise", (big * 3 + 1).relu()},
      {"row softmax", odd.softmax(-1)},
  };
}

// Runs the schedule for `t` unoptimized, then each kernel again with every variant of `variants`
// on the same buffers, comparing its output with the unoptimized one.
void check_variants(const Tensor& t, const std::function<std::vector<std::vector<Opt>>(const UOp&)>& variants) {
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({t.uop()});
  {
    Context noopt{{"NOOPT", 1}};
    run_schedule(kernels);
  }
  for (const schedule::Kernel& k : kernels) {
    std::vector<void*> ptrs;
    for (const UOp& b : k.buffers) ptrs.push_back(graph::buffer_of(b)->ptr());
    const std::shared_ptr<Buffer>& out = graph::buffer_of(k.buffers[0]);
    const std::vector<char> want(static_cast<char*>(out->ptr()), static_cast<char*>(out->ptr()) + out->nbytes());
    const DType dt = out->dtype();
    for (const std::vector<Opt>& opts : variants(k.ast)) {
      INFO(schedule::detail::kernel_name(k.ast), " with ", codegen::to_string(opts));
      std::memset(out->ptr(), 0x7f, out->nbytes());
      launch(*compile_kernel(k.ast, opts), ptrs);
      if (dt == dtypes::float32) {
        const auto* got = static_cast<const float*>(out->ptr());
        const auto* ref = reinterpret_cast<const float*>(want.data());
        // opts reorder sums (the longest here: the softmax's rows of 70) and the C compiler may
        // contract a*b+c differently in vector code: up to 70 roundings on each side; 1e-5 is 168
        size_t bad = 0, first_bad = 0;
        for (size_t i = out->size(); i-- > 0;)
          if (!(std::fabs(got[i] - ref[i]) <= 1e-5f + 1e-5f * std::fabs(ref[i]))) ++bad, first_bad = i;
        INFO("first wrong element ", first_bad, ": ", got[first_bad], " instead of ", ref[first_bad]);
        CHECK(bad == 0);
      } else {
        CHECK(std::memcmp(out->ptr(), want.data(), want.size()) == 0);
      }
    }
  }
}
}  // namespace

TEST_CASE("opt: every single opt computes what the unoptimized kernel computes") {
  const Context cpu{{"DEV", "CPU"}};  // the kernels are the CPU's, their buffers read on the host
  for (const CorpusEntry& e : corpus()) {
    INFO(e.name);
    check_variants(e.value, [](const UOp& ast) {
      std::vector<std::vector<Opt>> out;
      for (const Opt& o : codegen::beam_actions(2, true)) {
        // the amounts that apply to a kernel of this corpus, without compiling every one
        if (o.amount != 0 && o.amount != 2 && o.amount != 3 && o.amount != 8 && o.amount != 16) continue;
        try {
          codegen::apply_opt(ast, o);
          out.push_back({o});
        } catch (const codegen::OptError&) {
        }
      }
      return out;
    });
  }
}

TEST_CASE("opt: the hand-coded opts and combinations of opts compute the same") {
  const Context cpu{{"DEV", "CPU"}};  // the kernels are the CPU's, their buffers read on the host
  for (const CorpusEntry& e : corpus()) {
    INFO(e.name);
    check_variants(e.value, [](const UOp& ast) {
      std::vector<std::vector<Opt>> out{codegen::hand_coded_opts(ast, {.threads = 2}), codegen::hand_coded_opts(ast, {.threads = 3, .vector_bytes = 64, .vector_registers = 32})};
      // a tile, an unroll and threads together, where they apply
      std::vector<Opt> combo;
      UOp k = ast;
      for (const Opt& o : {Opt{OptOp::UPCAST, 0, 4}, Opt{OptOp::UPCAST, 1, 2}, Opt{OptOp::UNROLL, 2, 4},
                           Opt{OptOp::UNROLL, 1, 2}, Opt{OptOp::LOCAL, 0, 2}, Opt{OptOp::THREAD, 0, 3}}) {
        try {
          k = codegen::apply_opt(k, o);
          combo.push_back(o);
        } catch (const codegen::OptError&) {
        }
      }
      out.push_back(combo);
      // and a copy (PACK) at each axis after them, where a load stays put along it
      for (int64_t axis = 0; axis < static_cast<int64_t>(codegen::axes(k).size()); ++axis) {
        try {
          codegen::apply_opt(k, {OptOp::PACK, axis, 0});
          out.push_back(combo);
          out.back().push_back({OptOp::PACK, axis, 0});
        } catch (const codegen::OptError&) {
        }
      }
      out.push_back(codegen::hand_coded_opts(ast, {.threads = 2, .vector_bytes = 64, .vector_registers = 32, .packs = true}));
      return out;
    });
  }
}

TEST_CASE("opt: a loop padded to split over the threads computes the same, and is not padded under a copied panel") {
  const Context cpu{{"DEV", "CPU"}};
  auto has = [](const std::vector<Opt>& opts, OptOp op) {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; });
  };
  // a 1x1 conv of 36 channels (9 tiles of 4) at 7x7 (every other row of 13: rows and columns
  // stay two loops): no output loop splits over 2 threads
  const Tensor conv = input({1, 64, 13, 7}, 11).conv2d(input({36, 64, 1, 1}, 12), {}, 1, {2, 1});
  const std::vector<Opt> opts = codegen::hand_coded_opts(schedule::create_schedule({conv.uop()}).back().ast, {.threads = 2});
  INFO(codegen::to_string(opts));
  CHECK(has(opts, OptOp::PADTO));
  CHECK(has(opts, OptOp::THREAD));
  check_variants(conv, [&](const UOp&) { return std::vector<std::vector<Opt>>{opts}; });
  // PaddleOCR's recognizer: a 1x1 conv of 240 channels, its panel copied (PACK) (here over rows of
  // 7, too short to pad to a vector; every other row, so that rows and columns stay two loops);
  // the copy holds the loop's turns as they were, so padding the loop after it wrote past it
  const Tensor packed = input({3, 128, 23, 7}, 13).conv2d(input({240, 128, 1, 1}, 14), {}, 1, {2, 1});
  const std::vector<Opt> packed_opts =
      codegen::hand_coded_opts(schedule::create_schedule({packed.uop()}).back().ast, {.threads = 2, .vector_bytes = 64, .vector_registers = 32, .packs = true});
  INFO(codegen::to_string(packed_opts));
  CHECK(has(packed_opts, OptOp::PACK));
  CHECK_FALSE(has(packed_opts, OptOp::PADTO));
  // nor does PADTO apply after a PACK when asked for (BEAM's actions): an odd loop is refused
  UOp k = schedule::create_schedule({packed.uop()}).back().ast;
  for (const Opt& o : packed_opts) k = codegen::apply_opt(k, o);
  int refused_for_the_copy = 0;
  for (int64_t axis = 0; axis < static_cast<int64_t>(codegen::axes(k).size()); ++axis)
    try {
      (void)codegen::apply_opt(k, {OptOp::PADTO, axis, 2});
      FAIL("PADTO applied after PACK");
    } catch (const codegen::OptError& e) {
      refused_for_the_copy += std::string(e.what()).find("PACK") != std::string::npos;
    }
  CHECK(refused_for_the_copy > 0);
}

TEST_CASE("opt: a padded copy's masked loads are selects on LLVM, not branches, and read zeros at the border") {
  const Context cpu{{"DEV", "CPU"}};
  const Tensor x = input({2, 3, 5, 7}, 21);
  const Tensor y = ((x * 2.0f).relu() + 1.0f).pad({{0, 0}, {0, 0}, {2, 2}, {1, 3}});
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({y.uop()});
  const auto k = compile_kernel(kernels.back().ast, {});
  if (k->source.find("define void") != std::string::npos) {  // (LLVM's IR; the C renderer writes its own)
    CHECK(k->source.find("label %load") == std::string::npos);
    CHECK(k->source.find("select i1") != std::string::npos);
  }
  const std::vector<float> xs = x.to_vector<float>(), got = y.to_vector<float>();
  size_t bad = 0;
  for (int64_t n = 0; n < 6; ++n)
    for (int64_t r = 0; r < 9; ++r)
      for (int64_t c = 0; c < 11; ++c) {
        const bool inside = r >= 2 && r < 7 && c >= 1 && c < 8;
        const double want = inside ? std::max(0.0, 2.0 * xs[static_cast<size_t>((n * 5 + r - 2) * 7 + c - 1)]) + 1.0 : 0.0;
        bad += got[static_cast<size_t>((n * 9 + r) * 11 + c)] != static_cast<float>(want);
      }
  CHECK(bad == 0);
}

TEST_CASE("opt: a loop whose masks hold on a stretch is split there, and the stretch has no masks") {
  const Context cpu{{"DEV", "CPU"}};
  auto gated = [](const UOp& store) {
    for (const UOp& u : toposort(store))
      if (u.op() == Ops::INDEX && u.src().size() > 2 && u.src(0).op() == Ops::DEFINE_GLOBAL) return true;
    return false;
  };
  // a padded copy: rows 2..6 and columns 1..7 of 9x11 hold the values, the rest zeros; the rows
  // split in three, the middle rows' columns in three again: 5 stores, none masked (the border
  // rows and columns store zeros)
  const Tensor x = input({2, 3, 5, 7}, 21);
  const Tensor y = ((x * 2.0f).relu() + 1.0f).pad({{0, 0}, {0, 0}, {2, 2}, {1, 3}});
  const UOp copy = schedule::create_schedule({y.uop()}).back().ast;
  const UOp parts = codegen::split_masked_loops(copy);
  REQUIRE(parts.src().size() == 5);
  CHECK(std::count_if(parts.src().begin(), parts.src().end(), gated) == 0);
  check_variants(y, [](const UOp& k) {
    return std::vector<std::vector<Opt>>{{}, {{OptOp::UPCAST, static_cast<int64_t>(codegen::axes(k).size()) - 1, 0}}};
  });

  // a matmul whose row of 100 is padded to 7 tiles of 16 on a machine with masked vectors: the
  // first 6 tiles are a loop without masks; the last is its own, and its reductions have their
  // own loop (not computed again inside the other tiles' loop)
  const Tensor mm = input({24, 40}, 22).matmul(input({40, 100}, 23));
  const UOp ast = schedule::create_schedule({mm.uop()}).back().ast;
  const std::vector<Opt> opts = codegen::hand_coded_opts(ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32});
  INFO(codegen::to_string(opts));
  CHECK(opts.at(0) == Opt{OptOp::PADTO, 1, 16});
  const UOp split = codegen::split_masked_loops(codegen::apply_opts(ast, opts));
  REQUIRE(split.src().size() == 2);
  CHECK_FALSE(gated(split.src(0)));
  CHECK(gated(split.src(1)));
  const codegen::Program p = codegen::linearize(codegen::expand_registers(split), "mm");
  CHECK(std::count_if(p.ops.begin(), p.ops.end(), [](const UOp& u) { return u.op() == Ops::RANGE && codegen::range_kind(u) == codegen::RangeKind::reduce; }) == 2);
  check_variants(mm, [&](const UOp&) { return std::vector<std::vector<Opt>>{opts}; });
  // (a GPU's rows are not padded: its lanes are work-items)
  CHECK(codegen::hand_coded_opts(ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32, .gpu = true}).at(0).op != OptOp::PADTO);
}

TEST_CASE("opt: a padded row of one tile has a constant mask per lane, and the masks a split leaves are masked vector accesses on LLVM") {
  const Context cpu{{"DEV", "CPU"}};
  auto gated_stores = [](const UOp& sink) {
    return std::count_if(sink.src().begin(), sink.src().end(), [](const UOp& s) { return s.src(0).src().size() > 2; });
  };
  // a row of 53 is padded to 56, one tile: lanes 0..52 store unmasked, 53..55 not at all
  const Tensor mm = input({24, 40}, 24).matmul(input({40, 53}, 25));
  const UOp ast = schedule::create_schedule({mm.uop()}).back().ast;
  const std::vector<Opt> opts = codegen::hand_coded_opts(ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32});
  INFO(codegen::to_string(opts));
  CHECK(opts.at(0) == Opt{OptOp::PADTO, 1, 8});
  const UOp expanded = codegen::expand_registers(codegen::split_masked_loops(codegen::apply_opts(ast, opts)));
  CHECK(expanded.src().size() == 53 * 4);
  CHECK(gated_stores(expanded) == 0);
  check_variants(mm, [&](const UOp&) { return std::vector<std::vector<Opt>>{opts}; });
  const std::vector<float> a = input({24, 40}, 24).to_vector<float>(), b = input({40, 53}, 25).to_vector<float>(), got = mm.to_vector<float>();
  size_t bad = 0;
  for (int i = 0; i < 24; ++i)
    for (int j = 0; j < 53; ++j) {
      double want = 0;
      for (int k = 0; k < 40; ++k) want += static_cast<double>(a[static_cast<size_t>(i * 40 + k)]) * b[static_cast<size_t>(k * 53 + j)];
      bad += !(std::fabs(got[static_cast<size_t>(i * 53 + j)] - want) <= 1e-5 + 1e-5 * std::fabs(want));
    }
  CHECK(bad == 0);

  // a 1x1 conv of 36 channels (9 tiles of 4) with a bias, padded to 10 tiles for 2 threads: each
  // thread's last tile is masked by its thread's number; the tile's 4 biases are one masked load,
  // its rows of 7 outputs masked stores of 4, 2 and 1 (every other row of 13: rows and columns
  // stay two loops)
  const Tensor conv = input({1, 64, 13, 7}, 26).conv2d(input({36, 64, 1, 1}, 27), input({36}, 28), 1, {2, 1});
  const UOp conv_ast = schedule::create_schedule({conv.uop()}).back().ast;
  const std::vector<Opt> conv_opts = codegen::hand_coded_opts(conv_ast, {.threads = 2});
  INFO(codegen::to_string(conv_opts));
  const auto k = compile_kernel(conv_ast, conv_opts);
  if (k->source.find("define void") != std::string::npos) {  // (LLVM's IR; the C renderer writes its own)
    CHECK(k->source.find("call <4 x float> @llvm.masked.load.v4f32") != std::string::npos);
    CHECK(k->source.find("call void @llvm.masked.store.v4f32") != std::string::npos);
    CHECK(k->source.find("call void @llvm.masked.store.v2f32") != std::string::npos);
  }
  check_variants(conv, [&](const UOp&) { return std::vector<std::vector<Opt>>{conv_opts}; });
}

TEST_CASE("schedule: a merged output loop stays within 2^24 iterations (a GPU launches it along one dimension)") {
  // WebGPU launches at most 65535 work-groups of at most 256 along a dimension: (8192, 4096) would
  // be one loop of 2^25; (4096, 4096) is one of 2^24
  const Context cpu{{"DEV", "CPU"}};
  auto name = [](const Tensor& t) { return schedule::detail::kernel_name(schedule::create_schedule({t.uop()}).back().ast); };
  CHECK(name(Tensor::empty({8192, 4096}) * 2) == "E_8192_4096");
  CHECK(name(Tensor::empty({4096, 4096}) * 2) == "E_16777216");
}

TEST_CASE("schedule: adjacent output loops are one loop where the index math folds the merge away") {
  const Context cpu{{"DEV", "CPU"}};
  auto name = [](const Tensor& t) { return schedule::detail::kernel_name(schedule::create_schedule({t.uop()}).back().ast); };
  // contiguous elementwise math and the rows of a reduction are one loop
  CHECK(name(input({4, 10, 14}, 1) * 2 + 1) == "E_560");
  CHECK(name(input({4, 6, 10}, 1).sum(2)) == "r_24_10");
  // a pad's masks read rows and columns apart, and a transpose's index is not one loop's
  CHECK(name(input({16, 5, 7}, 1).pad({{0, 0}, {1, 1}, {1, 1}})) == "E_16_7_9");
  CHECK(name(input({6, 10}, 1).permute({1, 0}) + 1) == "E_10_6");
  // a 1x1 conv's rows and columns are one loop of pixels; the batch and the channels stay apart
  // (the input is read along the batch, the weight along the channels)
  const Tensor x = input({2, 8, 5, 7}, 1), w = input({4, 8, 1, 1}, 2), conv = x.conv2d(w);
  CHECK(name(conv) == "r_2_4_35_8");
  const std::vector<float> xs = x.to_vector<float>(), ws = w.to_vector<float>(), got = conv.to_vector<float>();
  size_t bad = 0;
  for (size_t n = 0; n < 2; ++n)
    for (size_t o = 0; o < 4; ++o)
      for (size_t p = 0; p < 35; ++p) {
        double want = 0;
        for (size_t c = 0; c < 8; ++c) want += static_cast<double>(xs[(n * 8 + c) * 35 + p]) * ws[o * 8 + c];
        bad += !(std::fabs(got[(n * 4 + o) * 35 + p] - want) <= 1e-5 + 1e-5 * std::fabs(want));
      }
  CHECK(bad == 0);
  // with 16 registers (AVX2), the 46x46 pixels of PaddleOCR's detector (2116, half vectors) are
  // padded to a tile 16 wide
  const UOp det_ast = schedule::create_schedule({input({1, 16, 46, 46}, 3).conv2d(input({48, 16, 1, 1}, 4)).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(det_ast, {.threads = 1}).at(0) == Opt{OptOp::PADTO, 1, 16});
}

TEST_CASE("opt: the hand-coded opts tile matmuls, unroll contiguous reductions and thread big kernels") {
  auto opts_of = [](const Tensor& t) {
    const auto kernels = schedule::create_schedule({t.uop()});
    return codegen::hand_coded_opts(kernels.back().ast, {.threads = 2});
  };
  auto has = [](const std::vector<Opt>& opts, OptOp op) {
    return std::any_of(opts.begin(), opts.end(), [&](const Opt& o) { return o.op == op; });
  };
  const std::vector<Opt> mm = opts_of(input({64, 64}, 1).matmul(input({64, 64}, 2)));
  CHECK(std::count_if(mm.begin(), mm.end(), [](const Opt& o) { return o.op == OptOp::UPCAST; }) == 2);
  // the tile fills half the vector registers with accumulators, two vectors wide
  const UOp mm_ast = schedule::create_schedule({input({64, 64}, 1).matmul(input({64, 64}, 2)).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(mm_ast, {.threads = 1, .vector_bytes = 32, .vector_registers = 16}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}});
  CHECK(codegen::hand_coded_opts(mm_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 8}});
  // a bfloat16 matmul's tile is sized for its float32 accumulators
  const UOp bf16_ast = schedule::create_schedule({input({64, 64}, 1).cast(dtypes::bfloat16).matmul(input({64, 64}, 2).cast(dtypes::bfloat16)).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(bf16_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 8}});
  // a conv's tile: wide along the output row, tall along the output channels (which share the
  // input row's vector); with 16 registers (AVX2) as tall as the registers allow (12 accumulators,
  // of which 4 rows of 2 vectors divide 32), with 32 (AVX-512: a row of 1 vector) 8 tall and two
  // deep along the batch too (whose rows share the weights)
  const UOp conv_ast =
      schedule::create_schedule({input({8, 16, 16, 16}, 3).conv2d(input({32, 16, 3, 3}, 4), {}, 1, 1, 1, 1).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(conv_ast, {.threads = 1}) == std::vector<Opt>{{OptOp::UPCAST, 3, 16}, {OptOp::UPCAST, 1, 4}});
  CHECK(codegen::hand_coded_opts(conv_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}) ==
        std::vector<Opt>{{OptOp::UPCAST, 3, 16}, {OptOp::UPCAST, 1, 8}, {OptOp::UPCAST, 0, 2}});
  // a 1x1 conv with 48 output channels on AVX2 (its 4x16 pixels one loop): 6 rows of 2 vectors
  // (BLIS's Haswell tile)
  const UOp conv1_ast = schedule::create_schedule({input({2, 16, 4, 16}, 3).conv2d(input({48, 16, 1, 1}, 4)).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(conv1_ast, {.threads = 1}) == std::vector<Opt>{{OptOp::UPCAST, 2, 16}, {OptOp::UPCAST, 1, 6}});
  // with 256-bit rows on an AVX-512 machine: 8 wide, 8 tall, 2 deep (16 of its 32 registers)
  const UOp conv8_ast =
      schedule::create_schedule({input({4, 16, 8, 8}, 3).conv2d(input({32, 16, 3, 3}, 4), {}, 1, 1, 1, 1).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(conv8_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}) ==
        std::vector<Opt>{{OptOp::UPCAST, 3, 8}, {OptOp::UPCAST, 1, 8}, {OptOp::UPCAST, 0, 2}});
  // a padded input is copied padded first, so the convolution reads it without masks
  for (const UOp& u : toposort(conv_ast))
    CHECK_FALSE((u.op() == Ops::INDEX && u.src().size() > 2));
  // a weight gradient's row (a 3x3 kernel's) is no vector: a scalar tile, the row whole
  const Tensor wx = input({4, 8, 10, 10}, 5), ww = input({16, 8, 3, 3}, 6), wg = input({4, 16, 8, 8}, 7);
  const UOp wgrad_ast = schedule::create_schedule({(wx.conv2d(ww) * wg).sum().gradient({ww})[0].uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(wgrad_ast, {.threads = 1}) == std::vector<Opt>{{OptOp::UPCAST, 3, 3}, {OptOp::UPCAST, 0, 8}});
  // a conv's input gradient, masked along its output row: on a CPU, a vector along the input
  // channels, whose weights are copied so that they are neighbours, and a column along the batch,
  // which no mask depends on
  const Tensor ix = input({4, 32, 8, 8}, 5), iw = input({8, 32, 3, 3}, 6), ig = input({4, 8, 6, 6}, 7);
  const UOp igrad_ast = schedule::create_schedule({(ix.conv2d(iw) * ig).sum().gradient({ix})[0].uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(igrad_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32, .packs = true}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 4}, {OptOp::PACK, 0, 0}});
  CHECK_FALSE(has(codegen::hand_coded_opts(igrad_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}), OptOp::PACK));
  // a sum that cannot unroll (its contiguous axis has 3 taps) runs 8 outputs' chains side by side:
  // silero-vad's conv of 64 channels x 3 taps into 128 at one position
  const UOp taps_ast = schedule::create_schedule({input({1, 64, 1, 3}, 1).conv2d(input({128, 64, 1, 3}, 2)).uop()}).back().ast;
  const std::vector<Opt> taps = codegen::hand_coded_opts(taps_ast, {.threads = 1});
  INFO(codegen::to_string(taps));
  CHECK(std::count_if(taps.begin(), taps.end(), [](const Opt& o) { return o.op == OptOp::UNROLL; }) == 0);
  CHECK(std::count_if(taps.begin(), taps.end(), [](const Opt& o) { return o.op == OptOp::UPCAST && o.amount == 8; }) == 1);
  // of two sides a weight stays put along, the tile is tall along the one with more rows: 40
  // rows of 6 images (PaddleOCR's recognizer's classifier) make 8 rows, not 2 images
  const UOp rows_ast = schedule::create_schedule({input({40, 6, 24}, 1).permute({1, 0, 2}).matmul(input({24, 64}, 2)).uop()}).back().ast;
  INFO(codegen::to_string(codegen::hand_coded_opts(rows_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32})));
  CHECK(codegen::hand_coded_opts(rows_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}).at(1) == Opt{OptOp::UPCAST, 1, 8});
  // a row of one and a half vectors (24 on AVX-512) is a vector side whole
  const UOp conv24_ast = schedule::create_schedule({input({2, 4, 28, 28}, 3).conv2d(input({8, 4, 5, 5}, 4)).uop()}).back().ast;
  CHECK(codegen::hand_coded_opts(conv24_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32}).at(0) == Opt{OptOp::UPCAST, 3, 24});
  // and so is a row of three and a half (56), with a column of 4 and no third side or cache tile
  const UOp conv56_ast = schedule::create_schedule({input({1, 8, 58, 58}, 3).conv2d(input({16, 8, 3, 3}, 4)).uop()}).back().ast;
  const std::vector<Opt> opts56 = codegen::hand_coded_opts(conv56_ast, {.threads = 1, .vector_bytes = 64, .vector_registers = 32, .packs = true});
  INFO(codegen::to_string(opts56));
  CHECK(opts56 == std::vector<Opt>{{OptOp::UPCAST, 2, 56}, {OptOp::UPCAST, 0, 4}});
  // an elementwise kernel that reads x // 2 (an upsampling, a max pool's backward) gets copies
  // along x, which share the quotient: 8 of them
  const Tensor small = input({4, 8, 12, 12}, 8);
  const Tensor up = small.reshape({4, 8, 12, 1, 12, 1}).expand({4, 8, 12, 2, 12, 2}).reshape({4, 8, 24, 24});
  const std::vector<Opt> up_opts = opts_of(up * input({4, 8, 24, 24}, 9));
  INFO(codegen::to_string(up_opts));
  CHECK(up_opts == std::vector<Opt>{{OptOp::UPCAST, 2, 8}});  // (too little work for threads; batch and channels are one loop)
  // a long reduction also gets a cache tile over the tile's rows; on a CPU, its column panel is
  // copied (PACK) once for the whole tile loop
  const UOp long_ast = schedule::create_schedule({input({128, 2048}, 1).matmul(input({2048, 64}, 2)).uop()}).back().ast;
  CHECK(has(codegen::hand_coded_opts(long_ast, {.threads = 1}), OptOp::LOCAL));
  CHECK_FALSE(has(codegen::hand_coded_opts(long_ast, {.threads = 1}), OptOp::PACK));
  // (its 16 row tiles are all in the cache tile: the threads split the columns, each copying its own)
  CHECK(codegen::hand_coded_opts(long_ast, {.threads = 2, .vector_bytes = 64, .vector_registers = 32, .packs = true}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 32}, {OptOp::UPCAST, 0, 8}, {OptOp::LOCAL, 0, 16}, {OptOp::PACK, 1, 0}, {OptOp::THREAD, 0, 2}});
  CHECK(has(opts_of(input({8, 256}, 1).sum(1)), OptOp::UNROLL));
  // a short contiguous row is unrolled whole (a batchnorm's rows of 24: 10x faster than a chain
  // of adds waiting on each other)
  CHECK(opts_of(input({16, 24}, 1).sum(1)) == std::vector<Opt>{{OptOp::UNROLL, 1, 24}});
  CHECK(has(opts_of(input({1 << 17}, 1) + 1), OptOp::THREAD));
  CHECK_FALSE(has(opts_of(input({64}, 1) + 1), OptOp::THREAD));  // too little work to share
  // a big sum is split in two kernels, the first of which has parts for threads to share
  const auto kernels = schedule::create_schedule({input({1 << 17}, 1).sum().uop()});
  CHECK(kernels.size() == 2);
  CHECK(has(codegen::hand_coded_opts(kernels[0].ast, {.threads = 2}), OptOp::THREAD));
}

TEST_CASE("opt: the hand-coded opts read a weight once for a few rows, copy what a tile gathers or fills L1 with, for any row count") {
  const codegen::MachineShape avx2{.threads = 2, .packs = true};
  auto opts_of = [&](const Tensor& t, const codegen::MachineShape& machine) {
    const std::vector<Opt> opts = codegen::hand_coded_opts(schedule::create_schedule({t.uop()}).back().ast, machine);
    INFO(codegen::to_string(opts));
    return opts;
  };
  // One sentence's 16 tokens by MiniLM's 384x1536: the 4 row tiles of 4 are one cache tile, so
  // the weight's column tiles come from memory once, and the threads split the columns (axis 0 once
  // the rows are all local). Before, each thread took half the rows and read the whole weight.
  CHECK(opts_of(input({16, 384}, 1).matmul(input({384, 1536}, 2)), avx2) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 4}, {OptOp::THREAD, 0, 2}});
  // x W^T with W stored (out, in), as PyTorch's Linear: its columns are gathers along the tile's
  // row, so a CPU copies each panel (PACK) where they run contiguous, even one that fits in L1
  // (512: 55 -> 187 GFLOPS on Zen 3); without copies, no PACK
  const Tensor x = input({512, 512}, 3), w = input({512, 512}, 4);
  CHECK(opts_of(x.matmul(w.T()), avx2) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 64}, {OptOp::PACK, 2, 0}, {OptOp::THREAD, 0, 2}});
  CHECK(opts_of(x.matmul(w.T()), {.threads = 2}) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 16}, {OptOp::THREAD, 0, 2}});
  // laid out (in, out), the same: a panel of 512 x 16 floats fills L1 (32 KB) and is copied too
  CHECK(opts_of(x.matmul(w), avx2) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 64}, {OptOp::PACK, 2, 0}, {OptOp::THREAD, 0, 2}});
  // attention's scores over 58 tokens: k is read across its rows; its row of 58 is padded to 64
  // and k copied before the loop over q's rows (16 -> 79 GFLOPS); without copies the row stays a
  // scalar tile (masked gathers are slower than none)
  const Tensor q = input({2, 3, 58, 32}, 5), k = input({2, 3, 58, 32}, 6);
  CHECK(opts_of(q.matmul(k.transpose(-1, -2)), avx2) ==
        std::vector<Opt>{{OptOp::PADTO, 2, 16}, {OptOp::UPCAST, 2, 16}, {OptOp::UPCAST, 1, 2}, {OptOp::PACK, 1, 0}, {OptOp::THREAD, 0, 2}});
  CHECK(opts_of(q.matmul(k.transpose(-1, -2)), {.threads = 2}) ==
        std::vector<Opt>{{OptOp::UPCAST, 2, 2}, {OptOp::UPCAST, 1, 2}, {OptOp::THREAD, 0, 2}});
  // a strided conv whose weights are copied along its output channels keeps that tile; its input
  // row is not padded for a copy of its gathers
  const Tensor sx = input({8, 64, 20, 20}, 7), sw = input({128, 64, 3, 3}, 8);
  const std::vector<Opt> strided = opts_of(sx.conv2d(sw, {}, 1, 2, 2, 1), avx2);
  CHECK(std::none_of(strided.begin(), strided.end(), [](const Opt& o) { return o.op == OptOp::PADTO; }));
  CHECK(std::count_if(strided.begin(), strided.end(), [](const Opt& o) { return o.op == OptOp::PACK; }) == 1);
  // MiniLM's batch of 32 sentences of 58 tokens: 1856 rows, 464 tiles of 4; a panel serves a
  // thread's 232 in cache tiles of 116 (any divisor up to 128), not 8 (137 -> 168 GFLOPS)
  const std::vector<Opt> batch = opts_of(input({1856, 384}, 9).matmul(input({1536, 384}, 10).T()), avx2);
  CHECK(std::find(batch.begin(), batch.end(), Opt{OptOp::LOCAL, 0, 116}) != batch.end());
}

TEST_CASE("opt: an opt that does not apply is an OptError naming it") {
  const UOp ast = schedule::create_schedule({input({24, 40}, 1).sum(1).uop()}).back().ast;
  using tinyt_test::message_of;
  auto apply = [&](Opt o) { return [&ast, o] { codegen::apply_opt(ast, o); }; };
  CHECK(message_of<codegen::OptError>(apply({OptOp::UPCAST, 0, 7})) == "UPCAST(0,7): 7 does not divide the axis size 24");
  CHECK(message_of<codegen::OptError>(apply({OptOp::UPCAST, 5, 2})) == "UPCAST(5,2): the kernel has 2 axes");
  CHECK(message_of<codegen::OptError>(apply({OptOp::UNROLL, 0, 2})).find("UNROLL applies to reduce axes") != std::string::npos);
  CHECK(message_of<codegen::OptError>(apply({OptOp::UPCAST, 1, 2})).find("UNROLL splits reductions") != std::string::npos);
  CHECK(message_of<codegen::OptError>(apply({OptOp::THREAD, 1, 2})).find("THREAD applies to output loops") != std::string::npos);
  const UOp threaded = codegen::apply_opt(ast, {OptOp::THREAD, 0, 2});
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(threaded, {OptOp::THREAD, 0, 3}); }).find("already threaded") !=
        std::string::npos);
  // padding a reduction whose padded iterations would add exp(0) = 1 is refused
  const UOp exp_sum = schedule::create_schedule({input({4, 30}, 1).exp().sum(1).uop()}).back().ast;
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(exp_sum, {OptOp::PADTO, 1, 32}); }).find("change its result") !=
        std::string::npos);
  CHECK(codegen::apply_opt(ast, {OptOp::PADTO, 1, 16}) != ast);  // 40 -> 48: masked loads add zeros
}

TEST_CASE("opt: PACK copies a panel once before the tile loop that reads it, and says when it cannot") {
  const Context cpu{{"DEV", "CPU"}};  // the kernels are the CPU's, their buffers read on the host
  const Tensor a = input({64, 256}, 1), b = input({256, 64}, 2);
  const UOp ast = schedule::create_schedule({a.matmul(b).uop()}).back().ast;
  const std::vector<Opt> opts{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 4}, {OptOp::PACK, 2, 0}};
  const codegen::Program p = codegen::linearize(codegen::expand_registers(codegen::apply_opts(ast, opts)), "packed");
  // the copy: one buffer of the panel (256 rows of 16), filled by its own two loops, which close
  // before the tile loop opens; the reduction inside reads it, never b
  size_t fill = 0, tile = 0, fills = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    if (u.op() == Ops::DEFINE_LOCAL) CHECK(u.dtype().size() == 256 * 16);
    if (u.op() == Ops::STORE && u.src(0).src(0).op() == Ops::DEFINE_LOCAL) fill = i, ++fills;
    if (u.op() == Ops::END && codegen::range_kind(u.src(0)) == codegen::RangeKind::pack) fill = i;
    if (u.op() == Ops::RANGE && codegen::range_kind(u) == codegen::RangeKind::local) tile = i;
  }
  CHECK(fills == 1);
  REQUIRE(tile > 0);
  CHECK(fill < tile);
  size_t reads_of_b = 0;
  for (const UOp& u : p.ops) reads_of_b += u.op() == Ops::LOAD && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL && u.src(0).src(0).arg().as_int() == 2;
  CHECK(reads_of_b == 1);  // the fill's, in its loops over 256 x 16; the 16 columns of the tile read the copy
  // the C compiler's program computes it too
  std::vector<float> want;
  {
    Context noopt{{"NOOPT", 1}};
    want = a.matmul(b).to_vector<float>();
  }
  // (the corpus above checks PACK's kernels against NOOPT on LLVM; the C renderer's stack array too)
  {
    Context c{{"CPU_LLVM", 0}};
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({a.matmul(b).uop()});
    const auto k = compile_kernel(kernels.back().ast, opts);
    CHECK(k->source.find("__attribute__((aligned(64)))") != std::string::npos);
    Tensor out = Tensor::empty({64, 64});
    std::vector<void*> handles{graph::buffer_of(graph::base_buffer(out.realize().uop()))->ptr()};
    for (size_t i = 1; i < kernels.back().buffers.size(); ++i) handles.push_back(graph::buffer_of(kernels.back().buffers[i])->ptr());
    launch(*k, handles);
    const std::vector<float> got = out.to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }

  using tinyt_test::message_of;
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(ast, {OptOp::PACK, 0, 4}); }) == "PACK(0,4): PACK takes the amount 0 (a whole axis)");
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(ast, {OptOp::PACK, 2, 0}); }) == "PACK(2,0): PACK applies to output loops and tiles");
  // a row sum's load moves along every axis: nothing stays put to copy
  const UOp sum_ast = schedule::create_schedule({input({24, 40}, 1).sum(1).uop()}).back().ast;
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(sum_ast, {OptOp::PACK, 0, 0}); }) ==
        "PACK(0,0): no load that a reduction reads stays put along the axis");
  // a copy lives on a thread's stack: 4096 x 64 floats (1 MiB) is too big
  const UOp tall_ast = schedule::create_schedule({input({2, 4096}, 1).matmul(input({4096, 64}, 2)).uop()}).back().ast;
  CHECK(message_of<codegen::OptError>([&] { codegen::apply_opt(tall_ast, {OptOp::PACK, 0, 0}); }) ==
        "PACK(0,0): a copy of 262144 elements (1048576 bytes) outgrows the 524288 a thread's stack holds");
}

TEST_CASE("opt: PACK copies a weight decoded where its matmul reads it, so each panel is decoded once") {
  const Context cpu{{"DEV", "CPU"}};
  // int8 values times a float16 scale per row (GGUF's Q8_0, one block a row), read by 64 rows: on a
  // CPU not stored as floats first, but decoded in the matmul's kernel
  const Tensor x = input({64, 256}, 1);
  const Tensor q = input({64, 256}, 2).mul(8).cast(dtypes::int8).realize(), s = input({64, 1}, 3).cast(dtypes::float16).realize();
  const Tensor y = x.matmul((q.cast(dtypes::float32) * s.cast(dtypes::float32)).T());
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({y.uop()});
  REQUIRE(kernels.size() == 1);
  // the hand-coded opts copy its panels (its columns are gathers across the weight's rows)
  const std::vector<Opt> opts = codegen::hand_coded_opts(kernels[0].ast, {.threads = 2, .packs = true});
  INFO(codegen::to_string(opts));
  CHECK(std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::PACK; }));
  // the copy holds the decoded floats: the int8 values and the scales are read by its fill, which
  // closes before the tile loop opens, and nothing inside the tile reads them
  const std::vector<Opt> tile{{OptOp::UPCAST, 1, 16}, {OptOp::UPCAST, 0, 4}, {OptOp::LOCAL, 0, 4}, {OptOp::PACK, 2, 0}};
  const codegen::Program p = codegen::linearize(codegen::expand_registers(codegen::apply_opts(kernels[0].ast, tile)), "decoded");
  size_t tile_loop = 0, last_narrow_load = 0, copies = 0;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const UOp& u = p.ops[i];
    if (u.op() == Ops::DEFINE_LOCAL) {
      ++copies;
      CHECK(u.dtype().scalar() == dtypes::float32);
    }
    if (u.op() == Ops::RANGE && codegen::range_kind(u) == codegen::RangeKind::local) tile_loop = i;
    if (u.op() == Ops::LOAD && u.src(0).src(0).op() == Ops::DEFINE_GLOBAL && u.dtype().itemsize() < 4) last_narrow_load = i;
  }
  CHECK(copies == 1);
  REQUIRE(tile_loop > 0);
  CHECK(last_narrow_load < tile_loop);
  // and computes what a float64 loop over the decoded weight does
  const std::vector<float> xv = x.to_vector<float>(), qv = q.cast(dtypes::float32).to_vector<float>(), sv = s.cast(dtypes::float32).to_vector<float>();
  const std::vector<float> got = y.to_vector<float>();
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j) {
      double want = 0;
      for (int64_t k = 0; k < 256; ++k) want += double(xv[size_t(i * 256 + k)]) * qv[size_t(j * 256 + k)] * sv[size_t(j)];
      CHECK(got[size_t(i * 64 + j)] == doctest::Approx(want).epsilon(1e-5));
    }
}

TEST_CASE("opt: a kernel filling a buffer past STREAM_BYTES stores whole aligned vectors past the caches") {
  const Context cpu{{"DEV", "CPU"}};  // the kernels are the CPU's, their buffers read on the host
  const Tensor x = input({1 << 16}, 1);  // 256 KiB out
  const Tensor y = ((x * 2 + 1).relu() * x - 0.5).exp2();
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({y.uop()});
  const UOp ast = kernels.back().ast;
  // the heuristic gives such a kernel a cache line of copies along its contiguous axis (16
  // floats, whatever the vector registers); below the threshold, none
  CHECK(codegen::hand_coded_opts(ast, {.threads = 2, .vector_bytes = 32, .stream_bytes = 4096}) ==
        std::vector<Opt>{{OptOp::UPCAST, 0, 16}, {OptOp::THREAD, 0, 2}});
  CHECK(codegen::hand_coded_opts(ast, {.threads = 2, .vector_bytes = 64, .stream_bytes = 1 << 20}) ==
        std::vector<Opt>{{OptOp::THREAD, 0, 2}});
  // the expander makes each 16 copies one streaming store of a 16-vector: a whole cache line
  auto stores_of = [](const UOp& sink) {
    std::vector<UOp> out;
    for (const UOp& u : toposort(sink))
      if (u.op() == Ops::STORE) out.push_back(u);
    return out;
  };
  const UOp upcast = codegen::apply_opts(ast, {{OptOp::UPCAST, 0, 32}});
  const std::vector<UOp> streaming = stores_of(codegen::expand_registers(upcast, 4096));
  REQUIRE(streaming.size() == 2);
  for (const UOp& st : streaming) {
    CHECK(codegen::streams(st));
    CHECK(st.src(1).op() == Ops::VECTORIZE);
    CHECK(st.src(1).dtype() == dtypes::float32.vec(16));
  }
  CHECK(stores_of(codegen::expand_registers(upcast, 1 << 20)).size() == 32);  // a small buffer: plain stores
  // copies that do not fill whole lines (24 floats: a line and a half) store plainly
  const UOp upcast24 = codegen::apply_opts(schedule::create_schedule({Tensor(input({24 * 1024}, 2) + 1).uop()}).back().ast, {{OptOp::UPCAST, 0, 24}});
  for (const UOp& st : stores_of(codegen::expand_registers(upcast24, 4096))) CHECK_FALSE(codegen::streams(st));
  // an address that is not a multiple of the vector's length: plain stores too
  const UOp store = stores_of(upcast).at(0), idx = store.src(0);
  const UOp shifted = substitute(upcast, {{store.get(), store.replace({idx.replace({idx.src(0), idx.src(1) + schedule::index_const(1)}), store.src(1)})}});
  for (const UOp& st : stores_of(codegen::expand_registers(shifted, 4096))) CHECK_FALSE(codegen::streams(st));
  // on the CPU: the LLVM kernel's stores are non-temporal and fenced, and compute what NOOPT
  // computes (so does the C renderer's, lane by lane)
  Context small{{"STREAM_BYTES", 4096}};
  engine::OptSettings settings = engine::OptSettings::current("CPU");
  settings.target.stream_bytes = 4096;  // (as STREAM_BYTES sets it for LLVM; the C path has none of its own)
  const std::vector<Opt> opts = engine::detail::choose_opts(ast, {}, settings);
  INFO(codegen::to_string(opts));
  const auto k = compile_kernel(ast, opts);
  if (k->language == backend::Language::llvm_ir) {  // (CPU_LLVM=0: the C path, checked below)
    CHECK(k->source.find("store <16 x float>") != std::string::npos);
    CHECK(k->source.find(", align 64, !nontemporal") != std::string::npos);  // a line, as aligned as it is
    CHECK(k->source.find("fence seq_cst") != std::string::npos);
  }
  CHECK(k->estimates.lds == 2 * 4 * (1 << 16));  // each float read once, written once
  check_variants(y, [&](const UOp&) { return std::vector<std::vector<Opt>>{opts, {{OptOp::UPCAST, 0, 64}}}; });
  Context cc{{"CPU_LLVM", 0}};
  engine::OptSettings c = engine::OptSettings::current("CPU");
  c.target.stream_bytes = 4096;  // (the C path has no streaming stores of its own)
  const auto kc = compile_kernel(ast, opts, c);
  CHECK(kc->source.find("[(") != std::string::npos);
  Tensor out = Tensor::empty({1 << 16});
  std::vector<void*> handles{graph::buffer_of(graph::base_buffer(out.realize().uop()))->ptr()};
  for (size_t i = 1; i < kernels.back().buffers.size(); ++i) handles.push_back(graph::buffer_of(kernels.back().buffers[i])->ptr());
  launch(*kc, handles);
  const std::vector<float> xs = x.to_vector<float>(), got = out.to_vector<float>();
  size_t bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i], want = std::exp2(std::max(0.0, v * 2 + 1) * v - 0.5);
    bad += !(std::fabs(got[i] - want) <= 1e-6 * want);
  }
  CHECK(bad == 0);
}

TEST_CASE("opt: BEAM's choice computes what NOOPT computes, and is cached on disk") {
  tinyt_test::TempDir dir;
  tinyt_test::ScopedEnv env;
  env.set("TINYT_CACHE_DIR", dir.path.string());
  Tensor a = input({32, 48}, 8), b = input({48, 16}, 9);
  std::vector<float> want, got;
  {
    Context c{{"NOOPT", 1}};
    want = a.matmul(b).to_vector<float>();
  }
  {
    Context c{{"BEAM", 2}};
    got = a.matmul(b).to_vector<float>();
  }
  // values() on a grid of 1/8: sums of their products are exact in any order
  tinyt_test::check_close(got, std::vector<double>(want.begin(), want.end()), tinyt_test::Tol::exact());
  size_t cached = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path / "beam")) cached += entry.path().extension() == ".opts";
  CHECK(cached == 1);
  CHECK(codegen::deserialize_opts(codegen::serialize({{OptOp::UPCAST, 1, 4}, {OptOp::THREAD, 0, 2}})) ==
        std::vector<Opt>{{OptOp::UPCAST, 1, 4}, {OptOp::THREAD, 0, 2}});
  CHECK_FALSE(codegen::deserialize_opts("UPCAST 1 x;").has_value());
}

TEST_CASE("opt: BEAM searches on an OpenCL device too, timing candidates there") {
  const std::vector<std::string> here = Device::list();
  if (std::find(here.begin(), here.end(), "CL") == here.end()) {
    MESSAGE("opt: NOT CHECKED, no OpenCL device here");
    return;
  }
  tinyt_test::TempDir dir;
  tinyt_test::ScopedEnv env;
  env.set("TINYT_CACHE_DIR", dir.path.string());
  Tensor a = input({16, 24}, 8).to("CL"), b = input({24, 8}, 9).to("CL");
  std::vector<float> want, got;
  {
    Context c{{"NOOPT", 1}};
    want = a.matmul(b).to_vector<float>();
  }
  {
    Context c{{"BEAM", 1}};
    got = a.matmul(b).to_vector<float>();
  }
  tinyt_test::check_close(got, std::vector<double>(want.begin(), want.end()), tinyt_test::Tol::exact());
  size_t cached = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path / "beam")) cached += entry.path().extension() == ".opts";
  CHECK(cached == 1);  // the matmul's kernel, searched on CL (the copies to CL are not kernels)
}

TEST_CASE("opt: GROUP splits a reduction across a work-group on OpenCL, and is refused on the CPU") {
  const Tensor x = input({6, 1024}, 10);  // a grid of 1/8: every sum is exact, in any order
  const std::vector<std::pair<std::string, Tensor>> cases{
      {"row sums", x.sum(1)}, {"row maxima", x.max(1)}, {"the whole sum", x.sum()}, {"column sums", x.sum(0)}};
  for (const auto& c : cases) {
    const std::string& what = c.first;  // not a structured binding: clang 14 cannot capture one in INFO
    INFO(what);
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({c.second.uop()});
    REQUIRE(kernels.size() == 1);
    const UOp& ast = kernels[0].ast;
    const std::vector<Opt> group{{OptOp::GROUP, static_cast<int64_t>(codegen::axes(ast).size()) - 1, 64}};
    CHECK_THROWS_AS(compile_kernel(ast, group, "CPU"), codegen::OptError);  // the CPU has no work-groups
  }
  // and a GPU's local memory is the work-group's, not one thread's: no PACK there
  const UOp mm = schedule::create_schedule({input({8, 64}, 1).matmul(input({64, 16}, 2)).uop()}).back().ast;
  engine::OptSettings gpu = engine::OptSettings::current("CPU");
  gpu.target.gpu = true;
  CHECK(tinyt_test::message_of<codegen::OptError>([&] { engine::lower_kernel(mm, {{OptOp::PACK, 0, 0}}, gpu.target, false); }).find("PACK") == 0);
  const std::vector<std::string> here = Device::list();
  if (std::find(here.begin(), here.end(), "CL") == here.end()) {
    MESSAGE("opt: GROUP NOT RUN, no OpenCL device here");
    return;
  }
  for (const auto& c : cases) {
    const std::string& what = c.first;
    INFO(what);
    std::vector<float> want;
    {
      Context noopt{{"NOOPT", 1}};
      want = c.second.to_vector<float>();
    }
    const Tensor on_cl = x.to("CL").realize();
    const Tensor r = what == "row sums" ? on_cl.sum(1) : what == "row maxima" ? on_cl.max(1) : what == "the whole sum" ? on_cl.sum() : on_cl.sum(0);
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({r.uop()});
    REQUIRE(kernels.size() == 1);
    const UOp& ast = kernels[0].ast;
    const int64_t reduce_axis = static_cast<int64_t>(codegen::axes(ast).size()) - 1;
    for (int64_t size : {16, 64, 256}) {
      INFO("GROUP of ", size);
      const std::vector<Opt> group{{OptOp::GROUP, reduce_axis, size}};
      std::shared_ptr<engine::CompiledKernel> k;
      try {
        k = compile_kernel(ast, group, "CL");
      } catch (const codegen::OptError& e) {
        // column sums have 1024 outputs in one launch dimension and a reduction of 6: GROUP of
        // 16 and more does not divide it
        CHECK(what == "column sums");
        continue;
      }
      CHECK(k->source.find("barrier(CLK_LOCAL_MEM_FENCE)") != std::string::npos);
      CHECK(k->dims().local[0] == size);
      Tensor out = Tensor::empty(r.shape(), dtypes::float32, "CL");
      std::vector<void*> handles{graph::buffer_of(graph::base_buffer(out.realize().uop()))->ptr(),
                                 graph::buffer_of(kernels[0].buffers[1])->ptr()};
      launch(*k, handles);
      CHECK(out.to_vector<float>() == want);
    }
  }
}

TEST_CASE("opt: the thread pool runs every part once, also when two threads launch at once") {
  backend::ThreadPool pool(3);
  CHECK(pool.size() == 3);
  auto launch_many = [&](std::vector<std::atomic<int>>& hits) {
    for (int round = 0; round < 200; ++round)
      pool.run(static_cast<int>(hits.size()), [&](int i) { hits[static_cast<size_t>(i)].fetch_add(1); });
  };
  std::vector<std::atomic<int>> first(7), second(5);
  std::thread other([&] { launch_many(second); });
  launch_many(first);
  other.join();
  for (auto& h : first) CHECK(h.load() == 200);
  for (auto& h : second) CHECK(h.load() == 200);
}

TEST_CASE("opt: BEAM's choice computes what NOOPT computes for a reduction, a convolution and an elementwise kernel") {
  tinyt_test::TempDir dir;  // BEAM's choices are cached on disk: here, not in the user's cache
  tinyt_test::ScopedEnv env;
  env.set("TINYT_CACHE_DIR", dir.path.string());
  // the graph is built anew for each setting: a node realized once is not computed again
  auto both = [](const std::function<Tensor()>& build) {
    std::pair<std::vector<float>, std::vector<float>> out;
    {
      Context c{{"NOOPT", 1}};
      out.first = build().to_vector<float>();
    }
    {
      Context c{{"BEAM", 2}};
      out.second = build().to_vector<float>();
    }
    return out;
  };
  constexpr double eps = 1.0 / (1 << 24);  // float32's unit roundoff
  // a sum of n terms in any order is within (n-1) * eps * sum|x| of the exact sum; BEAM may
  // split or reorder it (UNROLL, UPCAST of the reduce, GROUP), so two orders differ by at most
  // twice that. Values on a 1/24 grid are not exact in float32, so the orders do round apart.
  const int64_t R = 12, n = 70;
  std::vector<float> xs = tinyt_test::values(R * n, 21);
  for (float& x : xs) x /= 3;
  auto [want, got] = both([&] { return Tensor::from_vector(xs, {R, n}).sum(1); });
  REQUIRE(got.size() == static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(xs[static_cast<size_t>(r * n + i)]);
    INFO("row ", r);
    CHECK(std::fabs(double(got[static_cast<size_t>(r)]) - want[static_cast<size_t>(r)]) <= 2 * (n - 1) * eps * abs_sum);
  }
  // a padded 3x3 convolution: sums of 27 products, each product rounded the same way in both,
  // so only the order of the sum differs: 2 * 26 * eps * 27 * max|x| * max|w| bounds it
  std::vector<float> cx = tinyt_test::values(2 * 3 * 7 * 7, 22), cw = tinyt_test::values(4 * 3 * 3 * 3, 23);
  for (float& x : cx) x /= 3;
  for (float& w : cw) w /= 5;
  auto [cwant, cgot] = both([&] {
    return Tensor::from_vector(cx, {2, 3, 7, 7}).conv2d(Tensor::from_vector(cw, {4, 3, 3, 3}), {}, 1, 1, 1, 1);
  });
  REQUIRE(cgot.size() == size_t{2 * 4 * 7 * 7});
  const double bound = 2 * 26 * eps * 27 * (2.0 / 3) * (2.0 / 5);
  std::vector<double> cwant_d(cwant.begin(), cwant.end());
  tinyt_test::check_close(cgot, cwant_d, bound, 0);
  // elementwise: every element is computed by the same ops whatever the opts (they only choose
  // which loop iteration computes it), and a max of a product and a sum leaves nothing to fuse
  // into an FMA: the same bits
  auto [ewant, egot] = both([] {
    // big enough that vectors and threads pay (BEAM chose no opts for 1000 elements)
    const Tensor a = Tensor::from_vector(tinyt_test::values(1 << 15, 24)) / 3, b = Tensor::from_vector(tinyt_test::values(1 << 15, 25)) / 7;
    return (a * b).maximum(a + b).reshape({128, 256});
  });
  CHECK(egot == ewant);
  size_t cached = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path / "beam")) cached += entry.path().extension() == ".opts";
  CHECK(cached >= 3);  // each kernel was searched (none came from a cache outside this test)
}
