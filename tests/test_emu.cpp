// EMU, the emulated GPU (backend/emu.hpp): hand-written listings run with a GPU's semantics and
// each mistake it exists to catch is a DeviceError naming the kernel, the buffer, the element and
// the work-items; kernels the code generator makes for EMU (GROUP's partials in local memory and
// its barrier) give the CPU's results. The forward suite runs on EMU too (ctest's emu_* runs).
#include <doctest/doctest.h>

#include <bit>
#include <sstream>

#include "helpers.hpp"

using namespace tinyt;

namespace {
backend::Device& emu() { return backend::device("EMU"); }

/// Device memory of EMU holding `values`.
struct EmuBuffer {
  void* handle = nullptr;
  size_t nbytes = 0;
  template <class T> explicit EmuBuffer(const std::vector<T>& values) : nbytes(values.size() * sizeof(T)) {
    handle = emu().allocator().alloc(nbytes);
    emu().allocator().copyin(handle, values.data(), nbytes);
  }
  EmuBuffer(const EmuBuffer&) = delete;
  EmuBuffer& operator=(const EmuBuffer&) = delete;
  ~EmuBuffer() { emu().allocator().free(handle, nbytes); }
  template <class T> std::vector<T> read() const {
    std::vector<T> out(nbytes / sizeof(T));
    emu().allocator().copyout(out.data(), handle, nbytes);
    return out;
  }
};

/// Compiles and launches a listing on EMU with `global` work-items in groups of `local` (dimension
/// 0); what its memory accesses would cost a GPU.
backend::emu::AccessStats run(const std::string& listing, const std::vector<void*>& bufs, int64_t global, int64_t local,
                              std::vector<int64_t> vars = {}) {
  backend::Device& d = emu();
  const std::unique_ptr<backend::Program> p = d.load(d.compiler().compile(listing, "k"), "k");
  backend::LaunchDims dims;
  dims.global = {global, 1, 1};
  dims.local = {local, 1, 1};
  p->launch(bufs, vars, dims, true);
  return dynamic_cast<const backend::emu::Program&>(*p).stats();
}

// out[i] = in[(i + shift) % n] for 8 work-items in one group, through local memory: each stores
// its input to temp[i], then (after a barrier, when `barrier`) reads its neighbour's.
std::string rotate_listing(bool barrier, int shift) {
  return tinyt::detail::cat("kernel rotate\n"
                            "%0 DEFINE_GLOBAL float32*global : 0\n"
                            "%1 DEFINE_GLOBAL float32*global : 1\n"
                            "%2 DEFINE_LOCAL float32*local[8] : 0\n"
                            "%3 CONST index : 8\n"
                            "%4 RANGE index %3 : global 0\n"
                            "%5 INDEX float32*global %1 %4\n"
                            "%6 LOAD float32 %5\n"
                            "%7 INDEX float32*local[8] %2 %4\n"
                            "%8 STORE void %7 %6\n",
                            barrier ? "%9 BARRIER void %8\n" : "%9 CONST index : 0\n",
                            "%10 CONST index : ", shift, "\n"
                            "%11 ADD index %4 %10\n"
                            "%12 MOD index %11 %3\n"
                            "%13 INDEX float32*local[8] %2 %12\n"
                            "%14 LOAD float32 %13 %9\n"
                            "%15 INDEX float32*global %0 %4\n"
                            "%16 STORE void %15 %14\n"
                            "%17 END void %4 %16\n");
}
}  // namespace

TEST_CASE("emu: a work-group shares local memory across a barrier") {
  EmuBuffer in(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}), out(std::vector<float>(8));
  run(rotate_listing(true, 1), {out.handle, in.handle}, 8, 8);
  CHECK(out.read<float>() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 0});
}

TEST_CASE("emu: counts what a GPU's memory makes of each warp's accesses: 32-byte sectors of global memory, conflicts in local memory's banks") {
  // 64 work-items (two warps) each read in[i * from] and write it to temp[i * to] of local memory
  const auto strided = [](int64_t from, int64_t to) {
    return tinyt::detail::cat("kernel strided\n"
                              "%0 DEFINE_GLOBAL float32*global : 0\n"
                              "%1 DEFINE_LOCAL float32*local[2048] : 0\n"
                              "%2 CONST index : 64\n"
                              "%3 RANGE index %2 : global 0\n"
                              "%4 CONST index : ", from, "\n"
                              "%5 MUL index %3 %4\n"
                              "%6 INDEX float32*global %0 %5\n"
                              "%7 LOAD float32 %6\n"
                              "%8 CONST index : ", to, "\n"
                              "%9 MUL index %3 %8\n"
                              "%10 INDEX float32*local[2048] %1 %9\n"
                              "%11 STORE void %10 %7\n"
                              "%12 END void %3 %11\n");
  };
  EmuBuffer in(std::vector<float>(64 * 8));
  struct Case {
    int64_t from, to, sectors, wavefronts;
  };
  // a warp's 32 floats: in 4 sectors when neighbours, 8 two floats apart, 32 eight apart, one when
  // all read one float. Its 32 words: in 32 banks when neighbours, 2 to a bank two apart, all in
  // one 32 apart
  for (const Case& c : {Case{1, 1, 2 * 4, 2 * 1}, Case{2, 2, 2 * 8, 2 * 2}, Case{8, 32, 2 * 32, 2 * 32}, Case{0, 1, 2 * 1, 2 * 1}}) {
    INFO("strides ", c.from, " and ", c.to);
    const backend::emu::AccessStats stats = run(strided(c.from, c.to), {in.handle}, 64, 64);
    CHECK(stats.global_loads.requests == 2);
    CHECK(stats.global_loads.bytes == 64 * 4);
    CHECK(stats.global_loads.sectors == c.sectors);
    CHECK(stats.global_loads.efficiency() == doctest::Approx(64.0 * 4 / (32.0 * static_cast<double>(c.sectors))));
    CHECK(stats.global_stores.requests == 0);
    CHECK(stats.local_stores.requests == 2);
    CHECK(stats.local_stores.wavefronts == c.wavefronts);
    CHECK(stats.local_stores.fewest == 2);  // a warp's 128 bytes: one cycle of the banks at best
  }
  // a 16-byte copy (STAGE's): work-item i moves in[4i .. 4i+3] at once, which must be aligned
  const auto wide = [](int64_t shift) {
    return tinyt::detail::cat("kernel wide\n"
                              "%0 DEFINE_GLOBAL float32*global : 0\n"
                              "%1 DEFINE_GLOBAL float32*global : 1\n"
                              "%2 CONST index : 32\n"
                              "%3 RANGE index %2 : global 0\n"
                              "%4 CONST index : 4\n"
                              "%5 MUL index %3 %4\n"
                              "%6 CONST index : ", shift, "\n"
                              "%7 ADD index %5 %6\n"
                              "%8 INDEX float32*global %1 %7\n"
                              "%9 LOAD float32.vec(4) %8\n"
                              "%10 INDEX float32*global %0 %5\n"
                              "%11 STORE void %10 %9\n"
                              "%12 END void %3 %11\n");
  };
  std::vector<float> values(4 * 33);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  EmuBuffer from(values), to(std::vector<float>(4 * 32));
  const backend::emu::AccessStats stats = run(wide(0), {to.handle, from.handle}, 32, 32);
  CHECK(to.read<float>() == std::vector<float>(values.begin(), values.begin() + 4 * 32));
  CHECK(stats.global_loads.requests == 1);
  CHECK(stats.global_loads.bytes == 512);
  CHECK(stats.global_loads.sectors == 16);
  CHECK(tinyt_test::message_of<DeviceError>([&] { run(wide(1), {to.handle, from.handle}, 32, 32); })
            .find("work-item (0, 0, 0) of group (0, 0, 0) moves 4 elements from element 1 of buffer 1: not aligned") != std::string::npos);
  std::string cast = wide(0);  // a 16-byte load's value is only stored: it is a copy's
  cast.replace(cast.find("%11 STORE void %10 %9"), 21, "%11 CAST float32 %9");
  CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile(cast, "k"); }).find("only stored") != std::string::npos);
}

TEST_CASE("emu: ldmatrix gives each lane the values of its fragment as the PTX ISA lays them out, transposed or not") {
  // a warp writes 4 tiles of 8 x 8 halves into local memory (element e holds e), then each lane l
  // names row l (tile l/8's row l%8) and stores what it receives as out[8l .. 8l+7]
  for (const bool trans : {false, true}) {
    INFO((trans ? "transposed" : "not transposed"));
    std::string listing =
        "kernel ld\n"
        "%0 DEFINE_GLOBAL float32*global : 0\n"
        "%1 DEFINE_LOCAL float16*local[256] : 0\n"
        "%2 CONST index : 32\n"
        "%3 RANGE index %2 : global 0\n"
        "%4 CONST index : 8\n"
        "%5 RANGE index %4 : loop -1\n"
        "%6 MUL index %3 %4\n"
        "%7 ADD index %6 %5\n"
        "%8 CAST float16 %7\n"
        "%9 INDEX float16*local[256] %1 %7\n"
        "%10 STORE void %9 %8\n"
        "%11 END void %5 %10\n"
        "%12 BARRIER void %11\n"
        "%13 INDEX float16*local[256] %1 %6\n";
    listing += tinyt::detail::cat("%14 LDMATRIX float16.vec(8) %13 %12 : 4", trans ? " trans" : "", "\n");
    int next = 15, last = 0;
    for (int j = 0; j < 8; ++j) {
      const int gep = next++, cast = next++, offset = next++, at = next++, index = next++, store = next++;
      listing += tinyt::detail::cat("%", gep, " GEP float16 %14 : ", j, "\n%", cast, " CAST float32 %", gep, "\n%", offset, " CONST index : ", j,
                                    "\n%", at, " ADD index %6 %", offset, "\n%", index, " INDEX float32*global %0 %", at, "\n%", store,
                                    " STORE void %", index, " %", cast, "\n");
      last = store;
    }
    listing += tinyt::detail::cat("%", next, " END void %3 %", last, "\n");
    EmuBuffer out(std::vector<float>(256));
    const backend::emu::AccessStats stats = run(listing, {out.handle}, 32, 32);
    std::vector<float> want;
    for (int l = 0; l < 32; ++l)
      for (int m = 0; m < 4; ++m)
        for (int h = 0; h < 2; ++h)  // register m's halves: tile m's row l/4, values 2(l%4) and +1; transposed, rows 2(l%4) and +1, value l/4
          want.push_back(static_cast<float>(64 * m + (trans ? 8 * (2 * (l % 4) + h) + l / 4 : 8 * (l / 4) + 2 * (l % 4) + h)));
    CHECK(out.read<float>() == want);
    CHECK(stats.local_loads.requests == 4);  // a tile's 8 rows of 16 bytes a cycle
    CHECK(stats.local_loads.wavefronts == 4);
  }
}

TEST_CASE("emu: a shuffle reads the register of the lane whose number is this one's xor the mask") {
  const std::string listing =
      "kernel shuffle\n"
      "%0 DEFINE_GLOBAL float32*global : 0\n"
      "%1 CONST index : 64\n"
      "%2 RANGE index %1 : global 0\n"
      "%3 CAST float32 %2\n"
      "%4 SHFL_XOR float32 %3 : 5\n"
      "%5 INDEX float32*global %0 %2\n"
      "%6 STORE void %5 %4\n"
      "%7 END void %2 %6\n";
  EmuBuffer o(std::vector<float>(64));
  run(listing, {o.handle}, 64, 64);
  std::vector<float> want;
  for (int i = 0; i < 64; ++i) want.push_back(static_cast<float>(i ^ 5));
  CHECK(o.read<float>() == want);
}

TEST_CASE("emu: what a GPU would get wrong silently is a DeviceError") {
  EmuBuffer in(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}), out(std::vector<float>(8));
  SUBCASE("reading another work-item's local memory without a barrier") {
    const std::string m = tinyt_test::message_of<DeviceError>([&] { run(rotate_listing(false, 1), {out.handle, in.handle}, 8, 8); });
    CHECK(m.find("EMU: rotate: work-item (0, 0, 0) of group (0, 0, 0) reads element 1 of local buffer 0") == 0);
    CHECK(m.find("work-item (1, 0, 0) of group (0, 0, 0) wrote with no barrier between") != std::string::npos);
    // its own element needs no barrier
    run(rotate_listing(false, 0), {out.handle, in.handle}, 8, 8);
    CHECK(out.read<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  }
  SUBCASE("a work-group the kernel's local memory is too small for reads past its end") {
    // 16 work-items index temp[8] by their id
    const std::string m = tinyt_test::message_of<DeviceError>([&] {
      EmuBuffer big_in(std::vector<float>(16)), big_out(std::vector<float>(16));
      std::string listing = rotate_listing(true, 0);
      listing.replace(listing.find("%3 CONST index : 8"), 18, "%3 CONST index : 16");
      run(listing, {big_out.handle, big_in.handle}, 16, 16);
    });
    CHECK(m.find("work-item (8, 0, 0) of group (0, 0, 0) writes element 8 of local buffer 0, which has 8") != std::string::npos);
  }
  SUBCASE("reading past a global buffer's end") {
    EmuBuffer short_in(std::vector<float>(6));
    const std::string m = tinyt_test::message_of<DeviceError>([&] { run(rotate_listing(true, 1), {out.handle, short_in.handle}, 8, 8); });
    CHECK(m.find("work-item (6, 0, 0) of group (0, 0, 0) reads element 6 of buffer 1 (float32), which has 6") != std::string::npos);
  }
  SUBCASE("two work-items writing one element of a global buffer") {
    const std::string listing =
        "kernel collide\n"
        "%0 DEFINE_GLOBAL int32*global : 0\n"
        "%1 CONST index : 4\n"
        "%2 RANGE index %1 : global 0\n"
        "%3 CONST index : 2\n"
        "%4 IDIV index %2 %3\n"
        "%5 INDEX int32*global %0 %4\n"
        "%6 CAST int32 %2\n"
        "%7 STORE void %5 %6\n"
        "%8 END void %2 %7\n";
    EmuBuffer o(std::vector<int32_t>(2));
    const std::string m = tinyt_test::message_of<DeviceError>([&] { run(listing, {o.handle}, 4, 2); });
    CHECK(m.find("work-item (1, 0, 0) of group (0, 0, 0) writes element 0 of buffer 0, which work-item 0 of the launch wrote too") !=
          std::string::npos);
  }
  SUBCASE("a loop whose bound differs across a work-group") {
    const std::string listing =
        "kernel ragged\n"
        "%0 DEFINE_GLOBAL int32*global : 0\n"
        "%1 CONST index : 4\n"
        "%2 RANGE index %1 : global 0\n"
        "%3 RANGE index %2 : loop -1\n"
        "%4 END void %3 %3\n"
        "%5 INDEX int32*global %0 %2\n"
        "%6 CAST int32 %2\n"
        "%7 STORE void %5 %6\n"
        "%8 END void %2 %7\n";
    EmuBuffer o(std::vector<int32_t>(4));
    CHECK(tinyt_test::message_of<DeviceError>([&] { run(listing, {o.handle}, 4, 4); }).find("a loop's bound differs across a work-group") !=
          std::string::npos);
    run(listing, {o.handle}, 4, 1);  // one work-item per group: every loop is uniform
    CHECK(o.read<int32_t>() == std::vector<int32_t>{0, 1, 2, 3});
  }
  SUBCASE("a launch past the device's limits, and local memory past its size") {
    EmuBuffer big(std::vector<float>(2048));
    CHECK(tinyt_test::message_of<DeviceError>([&] { run(rotate_listing(true, 0), {big.handle, big.handle}, 2048, 2048); })
              .find("a work-group of 2048 work-items; cuda_sm80 runs at most 1024") != std::string::npos);
    CHECK(tinyt_test::message_of<DeviceError>([&] { run(rotate_listing(true, 0), {out.handle, in.handle}, 8, 3); })
              .find("8 work-items in groups of 3") != std::string::npos);
    std::string listing = rotate_listing(true, 0);
    listing.replace(listing.find("local[8]"), 8, "local[20000]");  // 80000 bytes
    CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile(listing, "k"); }).find("uses 80000 bytes of local memory; cuda_sm80 has 49152") !=
          std::string::npos);
  }
  SUBCASE("listings that are not programs") {
    CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile("kernel k\n%0 CONST float32 %3 : 1\n", "k"); })
              .find("a source that is not an earlier op") != std::string::npos);
    CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile("kernel k\n%0 CONST index : 4\n%1 RANGE index %0 : loop -1\n", "k"); })
              .find("a loop is never closed") != std::string::npos);
    CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile("kernel k\n%0 CONST float32.vec(4) : 1\n", "k"); })
              .find("EMU runs scalar programs") != std::string::npos);
  }
  SUBCASE("a shuffle past a warp, or in a work-group of part of a warp") {
    const std::string listing =
        "kernel shuffle\n"
        "%0 DEFINE_GLOBAL float32*global : 0\n"
        "%1 CONST index : 16\n"
        "%2 RANGE index %1 : global 0\n"
        "%3 CAST float32 %2\n"
        "%4 SHFL_XOR float32 %3 : 1\n"
        "%5 INDEX float32*global %0 %2\n"
        "%6 STORE void %5 %4\n"
        "%7 END void %2 %6\n";
    EmuBuffer o(std::vector<float>(16));
    CHECK(tinyt_test::message_of<DeviceError>([&] { run(listing, {o.handle}, 16, 16); }).find("a shuffle in a work-group of 16 work-items, not whole warps of 32") !=
          std::string::npos);
    std::string wide = listing;
    wide.replace(wide.find("SHFL_XOR float32 %3 : 1"), 23, "SHFL_XOR float32 %3 : 32");
    CHECK(tinyt_test::message_of<CompileError>([&] { (void)emu().compiler().compile(wide, "k"); }).find("a shuffle's mask must be within a warp of 32") !=
          std::string::npos);
  }
  CHECK_THROWS_AS(backend::emu::spec("sm_75"), DeviceError);
}

TEST_CASE("emu: integer and float semantics are C's, as the renderers spell them") {
  // int8 wraps, division by zero is 0 (the renderers guard it), INT_MIN / -1 is INT_MIN, float
  // to int8 truncates, a float16 cast rounds to nearest even, the NaN-propagating max
  const std::string listing =
      "kernel ops\n"
      "%0 DEFINE_GLOBAL int32*global : 0\n"
      "%1 DEFINE_GLOBAL float32*global : 1\n"
      "%2 CONST int8 : 100\n"
      "%3 ADD int8 %2 %2\n"
      "%4 CAST int32 %3\n"
      "%5 CONST index : 0\n"
      "%6 INDEX int32*global %0 %5\n"
      "%7 STORE void %6 %4\n"
      "%8 CONST int32 : 7\n"
      "%9 CONST int32 : 0\n"
      "%10 IDIV int32 %8 %9\n"
      "%11 CONST index : 1\n"
      "%12 INDEX int32*global %0 %11\n"
      "%13 STORE void %12 %10\n"
      "%14 CONST int32 : -2147483648\n"
      "%15 CONST int32 : -1\n"
      "%16 IDIV int32 %14 %15\n"
      "%17 CONST index : 2\n"
      "%18 INDEX int32*global %0 %17\n"
      "%19 STORE void %18 %16\n"
      "%20 CONST float32 : -0x1.b333333333333p+1\n"  // -3.4
      "%21 CAST int8 %20\n"
      "%22 CAST int32 %21\n"
      "%23 CONST index : 3\n"
      "%24 INDEX int32*global %0 %23\n"
      "%25 STORE void %24 %22\n"
      "%26 CONST float32 : 0x1.002p+0\n"  // 1 + 2^-11: halfway between two float16s, rounds to even (1)
      "%27 CAST float16 %26\n"
      "%28 CAST float32 %27\n"
      "%29 INDEX float32*global %1 %5\n"
      "%30 STORE void %29 %28\n"
      "%31 CONST float32 : nan\n"
      "%32 CONST float32 : 0x1p+0\n"
      "%33 MAX float32 %32 %31\n"
      "%34 INDEX float32*global %1 %11\n"
      "%35 STORE void %34 %33\n";
  EmuBuffer ints(std::vector<int32_t>(4)), floats(std::vector<float>(2));
  run(listing, {ints.handle, floats.handle}, 1, 1);
  CHECK(ints.read<int32_t>() == std::vector<int32_t>{-56, 0, INT32_MIN, -3});
  const std::vector<float> f = floats.read<float>();
  CHECK(f[0] == 1.0f);
  CHECK(std::isnan(f[1]));
}

TEST_CASE("emu: memory holds garbage until written, as a GPU's does") {
  const Tensor t = Tensor::empty({4}, dtypes::int32, "EMU");
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>(4, static_cast<int32_t>(0xA5A5A5A5u)));
}

TEST_CASE("emu: GROUP's and GROUPTOP's partials, shuffled across warps and met in local memory, give the CPU's sums and maxima") {
  const Tensor x = Tensor::arange(6 * 1024).reshape({6, 1024}).cast(dtypes::float32) * 0.125f;  // exact in any order
  const std::vector<Tensor> on_cpu{x.sum(1), x.max(1), x.sum()};
  const Tensor on_emu = x.to("EMU").realize();
  const std::vector<Tensor> reductions{on_emu.sum(1), on_emu.max(1), on_emu.sum()};
  for (size_t c = 0; c < reductions.size(); ++c) {
    INFO("case ", c);
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({reductions[c].uop()});
    REQUIRE(kernels.size() == 1);
    const UOp& ast = kernels[0].ast;
    const int64_t reduce_axis = static_cast<int64_t>(codegen::axes(ast).size()) - 1;
    for (codegen::OptOp op : {codegen::OptOp::GROUP, codegen::OptOp::GROUPTOP})
      for (int64_t size : {16, 32, 64, 256}) {
        INFO(codegen::opt_op_name(op), " of ", size);
        const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(ast, {{op, reduce_axis, size}}, "EMU");
        // cuda_sm80's warps are 32: a group of whole warps shuffles, one warp needs no local memory
        CHECK((k->source.find("SHFL_XOR") != std::string::npos) == (size % 32 == 0));
        CHECK((k->source.find("BARRIER") != std::string::npos) == (size != 32));
        CHECK((k->source.find("DEFINE_LOCAL") != std::string::npos) == (size != 32));
        CHECK(k->dims().local[0] == size);
        Tensor out = Tensor::empty(reductions[c].shape(), dtypes::float32, "EMU");
        launch(*k, {graph::buffer_of(graph::base_buffer(out.realize().uop()))->ptr(), graph::buffer_of(kernels[0].buffers[1])->ptr()});
        CHECK(out.to_vector<float>() == on_cpu[c].to_vector<float>());
        // the CUDA device's kernel shuffles the same way
        backend::Target cuda = backend::device("EMU").target();
        cuda.language = backend::Language::cuda;
        const std::string source = engine::render(engine::lower_kernel(ast, {{op, reduce_axis, size}}, cuda, true), cuda);
        CHECK((source.find("__shfl_xor_sync(0xffffffffu, ") != std::string::npos) == (size % 32 == 0));
        // each shuffle is a statement of its own that every lane runs: inlined into the store gated
        // to lane 0, the other 31 lanes never arrive and the warp hangs (it did, on an H200)
        std::istringstream lines(source);
        for (std::string line; std::getline(lines, line);)
          if (line.find("__shfl_xor_sync") != std::string::npos) {
            INFO(line);
            CHECK(line.find(" = __shfl_xor_sync(") != std::string::npos);
            CHECK(line.find("if (") == std::string::npos);
          }
      }
  }
}

TEST_CASE("emu: LOCAL makes tiles of work-items and STAGE copies each work-group's operands to local memory, as the heuristic chooses") {
  using codegen::OptOp;
  const backend::Target target = backend::device("EMU").target();
  backend::Target cuda = target;
  cuda.language = backend::Language::cuda;
  bool nvrtc = true;
  try {
    backend::nvrtc_version();
  } catch (const DeviceError& e) {
    MESSAGE("skipped part: NVRTC cannot be opened: ", e.what());
    nvrtc = false;
  }
  const auto has = [](const std::vector<codegen::Opt>& opts, OptOp op) {
    return std::any_of(opts.begin(), opts.end(), [&](const codegen::Opt& o) { return o.op == op; });
  };
  const Tensor a = (Tensor::rand({128, 48}) - 0.5f).realize(), b = (Tensor::rand({48, 64}) - 0.5f).realize();
  const Tensor c = (Tensor::rand({32, 16}) - 0.5f).realize(), d = (Tensor::rand({16, 32}) - 0.5f).realize();
  const Tensor x = (Tensor::rand({2, 16, 16, 16}) - 0.5f).realize(), w = (Tensor::rand({32, 16, 3, 3}) - 0.5f).realize();
  struct Case {
    std::string what;
    std::function<Tensor(const std::string&)> make;
    int64_t k;  // the length of each output's sum
  };
  const std::vector<Case> cases{
      {"matmul 128x48x64 (register tiles of 4x4, 2 work-groups)", [&](const std::string& dev) { return a.to(dev).matmul(b.to(dev)); }, 48},
      {"matmul 32x16x32 (register tiles of 2x2)", [&](const std::string& dev) { return c.to(dev).matmul(d.to(dev)); }, 16},
      {"conv2d 2x16x16x16, 32 3x3 filters, padded (pixels x channels)",
       [&](const std::string& dev) { return x.to(dev).conv2d(w.to(dev), {}, 1, 1, 1, 1); }, 144}};
  for (const Case& t : cases) {
    INFO(t.what);
    const Tensor on_emu = t.make("EMU");
    const UOp ast = schedule::create_schedule({on_emu.uop()}).back().ast;
    const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, target);
    INFO("opts ", codegen::to_string(chosen));
    CHECK(has(chosen, OptOp::LOCAL));
    CHECK(has(chosen, OptOp::STAGE));
    const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(ast, chosen, "EMU");
    CHECK(k->source.find(": local 1") != std::string::npos);  // two dimensions of work-items in a group
    CHECK(k->source.find("DEFINE_LOCAL") != std::string::npos);
    CHECK(k->dims().local[0] * k->dims().local[1] == 256);
    // float32 sums of k products of at most 0.25 in another order than the CPU's: k roundings of
    // partial sums up to 0.25 k each
    const std::vector<float> want = t.make("CPU").to_vector<float>();
    const tinyt_test::Tol tol{0.25 * static_cast<double>(t.k * t.k) * 0x1p-24, 0};
    tinyt_test::check_close(on_emu.to_vector<float>(), std::vector<double>(want.begin(), want.end()), tol);
    if (tinyt_test::device_available("CL")) {  // OpenCL's renderer, the same kernel on PoCL
      INFO("on CL");
      tinyt_test::check_close(t.make("CL").to_vector<float>(), std::vector<double>(want.begin(), want.end()), tol);
    }
    if (nvrtc) {  // CUDA's: shared memory and barriers, compiled by NVRTC
      const std::string source = engine::render(engine::lower_kernel(ast, chosen, cuda, true), cuda);
      CHECK(source.find("__shared__ __align__(16) float temp0[") != std::string::npos);
      CHECK(source.find("(int)threadIdx.y;") != std::string::npos);
      const std::string ptx = backend::CudaCompiler("sm_80").compile(source, k->program.name);
      CHECK(ptx.find("bar.sync") != std::string::npos);
      CHECK(ptx.find(".shared") != std::string::npos);
    }
  }
  // halves and bfloat16s staged as such (their 16 bits in local memory), on PoCL where no tensor cores take them
  if (tinyt_test::device_available("CL"))
    for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
      INFO("matmul 128x48x64 of ", dt.name(), " on CL");
      const Tensor an = a.cast(dt).realize(), bn = b.cast(dt).realize();
      const Tensor on_cl = an.to("CL").matmul(bn.to("CL"));
      CHECK(has(engine::detail::gpu_opts(schedule::create_schedule({on_cl.uop()}).back().ast, backend::device("CL").target()), OptOp::STAGE));
      const std::vector<float> want = an.matmul(bn).cast(dtypes::float32).to_vector<float>();
      tinyt_test::check_close(on_cl.cast(dtypes::float32).to_vector<float>(), std::vector<double>(want.begin(), want.end()),
                              tinyt_test::Tol{0.25 * 48 * 48 * 0x1p-24, tinyt_test::Tol::dtype(dt, 2).rtol});
    }
  const Tensor c_emu = c.to("EMU").realize(), d_emu = d.to("EMU").realize();
  const std::vector<schedule::Kernel> kernels = schedule::create_schedule({c_emu.matmul(d_emu).uop()});
  REQUIRE(kernels.size() == 1);
  const UOp& small = kernels[0].ast;
  const std::vector<float> want = c.matmul(d).to_vector<float>();
  // the kernel's buffers: a fresh output, and c and d
  const auto buffers = [&](const Tensor& out) {
    return std::vector<void*>{graph::buffer_of(graph::base_buffer(out.uop()))->ptr(), graph::buffer_of(kernels[0].buffers[1])->ptr(),
                              graph::buffer_of(kernels[0].buffers[2])->ptr()};
  };
  {  // LOCAL alone: 16 x 4 work-items a group, each reading global memory
    const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(small, {{OptOp::LOCAL, 1, 16}, {OptOp::LOCAL, 0, 4}}, "EMU");
    CHECK(k->dims().local == std::array<int64_t, 3>{16, 4, 1});
    CHECK(k->dims().global == std::array<int64_t, 3>{32, 32, 1});
    const Tensor out = Tensor::empty({32, 32}, dtypes::float32, "EMU").realize();
    launch(*k, buffers(out));
    tinyt_test::check_close(out.to_vector<float>(), std::vector<double>(want.begin(), want.end()), tinyt_test::Tol{0.25 * 256 * 0x1p-24, 0});
  }
  // a copy the group's 128 work-items do not divide (8 rows x 8 steps of A): the last pass is
  // masked; and without the barrier before each tile's copies a work-item overwrites what another
  // still reads, which EMU reports
  const std::vector<codegen::Opt> uneven{{OptOp::LOCAL, 1, 16}, {OptOp::LOCAL, 0, 8}, {OptOp::UPCAST, 1, 2}, {OptOp::STAGE, 3, 8}};
  const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(small, uneven, "EMU");
  const Tensor out = Tensor::empty({32, 32}, dtypes::float32, "EMU").realize();
  const std::vector<void*> bufs = buffers(out);
  launch(*k, bufs);
  tinyt_test::check_close(out.to_vector<float>(), std::vector<double>(want.begin(), want.end()), tinyt_test::Tol{0.25 * 256 * 0x1p-24, 0});
  std::string racy = k->source;
  const size_t bare = racy.find(" BARRIER void\n");  // the first barrier: before the copies (its line takes no sources)
  REQUIRE(bare != std::string::npos);
  racy.replace(bare, std::string(" BARRIER void\n").size(), " CONST index : 0\n");
  backend::Device& dev = emu();
  const std::unique_ptr<backend::Program> p = dev.load(dev.compiler().compile(racy, k->program.name), k->program.name);
  CHECK(tinyt_test::message_of<DeviceError>([&] { p->launch(bufs, {}, k->dims(), true); }).find("no barrier between") != std::string::npos);
  // misuse: STAGE with no work-group to share it, on a CPU, or followed by another opt
  CHECK(tinyt_test::message_of<codegen::OptError>([&] { (void)codegen::apply_opts(small, {{OptOp::STAGE, 2, 8}}); }).find("no work-group") !=
        std::string::npos);
  CHECK_THROWS_AS(compile_kernel(small, uneven, "CPU"), codegen::OptError);
  std::vector<codegen::Opt> after = uneven;
  after.push_back({OptOp::UPCAST, 0, 2});
  CHECK(tinyt_test::message_of<codegen::OptError>([&] { (void)codegen::apply_opts(small, after); }).find("last opt") != std::string::npos);
  // a work-group past the device's 256 work-items
  CHECK_THROWS_AS(compile_kernel(small, {{OptOp::LOCAL, 1, 32}, {OptOp::LOCAL, 0, 16}}, "EMU"), codegen::OptError);
}

TEST_CASE("emu: STAGE copies each operand's tile of a matmul whole, reading global memory in whole sectors and local memory without bank conflicts") {
  for (DType dt : {dtypes::float16, dtypes::float32}) {
    INFO(dt.name());
    const Tensor a = (Tensor::rand({128, 128}) - 0.5f).cast(dt).realize(), b = (Tensor::rand({128, 128}) - 0.5f).cast(dt).realize();
    const Tensor a_emu = a.to("EMU").realize(), b_emu = b.to("EMU").realize();
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({a_emu.matmul(b_emu).uop()});
    REQUIRE(kernels.size() == 1);
    const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(kernels[0].ast, emu().target());
    INFO("opts ", codegen::to_string(chosen));
    REQUIRE(chosen.back().op == codegen::OptOp::STAGE);
    const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(kernels[0].ast, chosen, "EMU");
    // one copy for each operand (not one for each of a work-item's loads)
    size_t copies = 0;
    for (size_t at = k->source.find(" DEFINE_LOCAL "); at != std::string::npos; at = k->source.find(" DEFINE_LOCAL ", at + 1)) ++copies;
    CHECK(copies == 2);
    const Tensor out = Tensor::empty({128, 128}, dt, "EMU").realize();
    backend::Device& dev = emu();
    const std::unique_ptr<backend::Program> p = dev.load(dev.compiler().compile(k->source, k->program.name), k->program.name);
    p->launch({graph::buffer_of(graph::base_buffer(out.uop()))->ptr(), graph::buffer_of(kernels[0].buffers[1])->ptr(),
               graph::buffer_of(kernels[0].buffers[2])->ptr()},
              {}, k->dims(), true);
    const backend::emu::AccessStats& stats = dynamic_cast<const backend::emu::Program&>(*p).stats();
    // only the copies read global memory: each work-item 16 bytes at once, each warp a row's
    // neighbouring elements
    CHECK(k->source.find(dt == dtypes::float16 ? " LOAD float16.vec(8) " : " LOAD float32.vec(4) ") != std::string::npos);
    CHECK(stats.global_loads.bytes == 16 * 32 * stats.global_loads.requests);
    CHECK(stats.global_loads.efficiency() == 1.0);
    CHECK(stats.local_stores.wavefronts == stats.local_stores.fewest);
    CHECK(stats.local_loads.wavefronts == stats.local_loads.fewest);
    const std::vector<float> want = a.matmul(b).cast(dtypes::float32).to_vector<float>();
    tinyt_test::check_close(out.cast(dtypes::float32).to_vector<float>(), std::vector<double>(want.begin(), want.end()),
                            tinyt_test::Tol{0.25 * 128 * 128 * 0x1p-24, tinyt_test::Tol::dtype(dt, 2).rtol});
  }
}

TEST_CASE("emu: a symbolic dimension is launched as wide as its value, not looped in each work-item") {
  const UOp i = Variable("i", 0, 16);
  std::vector<float> values(4 * 16);
  for (size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(k);
  const Tensor a = Tensor::from_vector(values, {4, 16}, "EMU").realize();
  for (int64_t n : {0, 1, 7, 16}) {
    INFO("i = ", n);
    const Tensor doubled = a[{Slice(), Slice(0, i.bind(n))}] * 2;
    const std::vector<schedule::Kernel> kernels = schedule::create_schedule({doubled.uop()});
    REQUIRE(kernels.size() == 1);
    const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(kernels[0].ast, {}, "EMU");
    REQUIRE(k->program.vars.size() == 1);
    const backend::LaunchDims dims = k->dims({n});
    CHECK(dims.global[0] == n);  // the row's work-items: as many as its length now
    CHECK(dims.global[1] == 4);
    CHECK(k->source.find("RANGE index") != std::string::npos);
    CHECK(k->source.find(": loop") == std::string::npos);  // no loop left in a work-item
    std::vector<float> want;
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < n; ++c) want.push_back(2 * values[static_cast<size_t>(r * 16 + c)]);
    CHECK(doubled.to_vector<float>() == want);
  }
}

TEST_CASE("emu: TC puts a sum of products of float16 or bfloat16 values on tensor cores, as the heuristic chooses") {
  const backend::Target emu_target = backend::device("EMU").target();
  // on EMU, and on an NVIDIA GPU where one is: there the fragment layouts meet the hardware's
  for (const std::string device : {"EMU", "CUDA"}) {
    if (!tinyt_test::device_available(device) || !backend::device(device).target().tensor_cores) {
      MESSAGE("skipped part: ", device, " is not here, or has no tensor cores");
      continue;
    }
    INFO(device);
    const backend::Target target = backend::device(device).target();
    for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
      INFO(dt.name());
      // register tiles of 2 x 4 tensor-core tiles, of 2 x 1, none, and sizes padded to the tiles'
      const std::vector<std::pair<Shape, Shape>> shapes{
          {{64, 32}, {32, 64}}, {{64, 32}, {32, 48}}, {{2, 16, 32}, {2, 32, 8}}, {{60, 40}, {40, 44}}};
      for (const auto& operands : shapes) {
        const Shape& as = operands.first;
        const Shape& bs = operands.second;
        INFO("A ", as.to_vector().size(), "-d, K ", as.to_vector().back());
        const Tensor a = (Tensor::rand(as.to_vector()) - 0.5f).cast(dt).realize(), b = (Tensor::rand(bs.to_vector()) - 0.5f).cast(dt).realize();
        const Tensor on_device = a.to(device).matmul(b.to(device));
        const UOp ast = schedule::create_schedule({on_device.uop()}).back().ast;
        const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, target);
        REQUIRE(!chosen.empty());
        CHECK(chosen[0].op == codegen::OptOp::TC);
        INFO("opts ", codegen::to_string(chosen));
        const std::shared_ptr<engine::CompiledKernel> k = compile_kernel(ast, chosen, device);
        CHECK(k->source.find(device == "EMU" ? "WMMA float32.vec(4)" : "mma.sync.aligned.m16n8k16") != std::string::npos);
        CHECK(k->dims().local[0] == 32);  // whole warps
        // each lane counts its share of its warp's 2 x 16 x 8 x 16 operations (DEBUG=2's GFLOPS)
        const int64_t flops = 2 * graph::shape_of(on_device.uop()).numel().as_int() * as.to_vector().back();
        const auto up = [](int64_t v, int64_t tile) { return (v + tile - 1) / tile * tile; };
        const std::vector<int64_t> av = as.to_vector(), bv = bs.to_vector();
        const int64_t padded = flops / (av[av.size() - 2] * bv.back() * av.back()) * up(av[av.size() - 2], 16) * up(bv.back(), 8) * up(av.back(), 16);
        CHECK(k->estimates.ops >= flops);
        CHECK(k->estimates.ops < padded * 5 / 4);
        // the CPU's result, products of the same values summed in float32 and rounded once to dt
        const std::vector<float> want = a.matmul(b).cast(dtypes::float32).to_vector<float>();
        const std::vector<float> got = on_device.cast(dtypes::float32).to_vector<float>();
        const int64_t inner = as.to_vector().back();
        // two float32 sums of K products of at most 0.25 in different orders (K roundings of
        // partial sums up to 0.25 K each: 0.25 K^2 2^-24 apart at most, each), then each rounded
        // to dt: one ulp of dt apart where they straddle a rounding boundary
        const double k2 = static_cast<double>(inner * inner);
        tinyt_test::check_close(got, std::vector<double>(want.begin(), want.end()), tinyt_test::Tol{0.5 * k2 * 0x1p-24, tinyt_test::Tol::dtype(dt, 2).rtol});
      }
    }
    // a convolution: M its batch and output pixels, N its output channels, K its input channels and window
    for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
      INFO("conv2d of ", dt.name());
      const Tensor x = (Tensor::rand({2, 16, 10, 10}) - 0.5f).cast(dt).realize(), w = (Tensor::rand({16, 16, 3, 3}) - 0.5f).cast(dt).realize();
      const Tensor on_device = x.to(device).conv2d(w.to(device));
      const UOp ast = schedule::create_schedule({on_device.uop()}).back().ast;
      const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, target);
      REQUIRE(!chosen.empty());
      CHECK(chosen[0].op == codegen::OptOp::TC);
      const std::vector<float> want = x.conv2d(w).cast(dtypes::float32).to_vector<float>();
      const std::vector<float> got = on_device.cast(dtypes::float32).to_vector<float>();
      const double k2 = 144.0 * 144.0;  // K = 16 channels x 3 x 3, as above
      tinyt_test::check_close(got, std::vector<double>(want.begin(), want.end()), tinyt_test::Tol{0.5 * k2 * 0x1p-24, tinyt_test::Tol::dtype(dt, 2).rtol});
    }
  }
  {  // the benchmark's conv (8 x 64 x 56 x 56, 3 x 3, padded): its pixels are M, 8 x 56 x 56 = 16 x 1568
    const Tensor x = Tensor::empty({8, 64, 56, 56}, dtypes::float16, "EMU"), w = Tensor::empty({64, 64, 3, 3}, dtypes::float16, "EMU");
    const UOp ast = schedule::create_schedule({x.conv2d(w, {}, 1, 1, 1, 1).uop()}).back().ast;
    const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, emu_target);
    REQUIRE(!chosen.empty());
    CHECK(chosen[0].op == codegen::OptOp::TC);
  }
  // the heuristic leaves float32 alone (TF32 only when asked), the CPU has no tensor cores, and TC=0 turns them off
  const UOp f32 = schedule::create_schedule({Tensor::empty({64, 32}, dtypes::float32, "EMU").matmul(Tensor::empty({32, 48}, dtypes::float32, "EMU")).uop()}).back().ast;
  CHECK(tinyt_test::message_of<codegen::OptError>([&] { (void)codegen::apply_opts(f32, {{codegen::OptOp::TC, 2, 0}}); }).find("float16 or two bfloat16") !=
        std::string::npos);
  const UOp f16 = schedule::create_schedule({Tensor::empty({64, 32}, dtypes::float16, "EMU").matmul(Tensor::empty({32, 48}, dtypes::float16, "EMU")).uop()}).back().ast;
  CHECK_THROWS_AS(compile_kernel(f16, {{codegen::OptOp::TC, 2, 0}}, "CPU"), codegen::OptError);
  for (const codegen::Opt& o : engine::detail::gpu_opts(f16, emu_target, false)) CHECK(o.op != codegen::OptOp::TC);
  {
    Context no_tc{{"TC", 0}};
    CHECK(engine::OptSettings::current("EMU").tc == 0);
  }
  // sizes are padded to the instruction's 16 x 8 x 16 up to twice their size, not further (a matrix times a vector)
  const UOp odd = schedule::create_schedule({Tensor::empty({60, 32}, dtypes::float16, "EMU").matmul(Tensor::empty({32, 44}, dtypes::float16, "EMU")).uop()}).back().ast;
  CHECK_NOTHROW(codegen::apply_opts(odd, {{codegen::OptOp::TC, 2, 0}}));
  const UOp thin = schedule::create_schedule({Tensor::empty({4, 32}, dtypes::float16, "EMU").matmul(Tensor::empty({32, 44}, dtypes::float16, "EMU")).uop()}).back().ast;
  CHECK(tinyt_test::message_of<codegen::OptError>([&] { (void)codegen::apply_opts(thin, {{codegen::OptOp::TC, 2, 0}}); }).find("cannot be padded") !=
        std::string::npos);
}

TEST_CASE("emu: TF32=1 puts a float32 matmul on tensor cores (m16n8k8), its inputs rounded to TF32 as cvt.rna.tf32.f32 rounds") {
  // to nearest with ties away from zero, 10 bits of mantissa kept
  const auto tf32 = [](float f) { return std::bit_cast<float>((std::bit_cast<uint32_t>(f) + 0x1000u) & ~0x1fffu); };
  CHECK(std::bit_cast<uint32_t>(tf32(1.0f + 0x1p-11f)) == std::bit_cast<uint32_t>(1.0f + 0x1p-10f));  // a tie, away
  CHECK(std::bit_cast<float>(round_tf32_bits(std::bit_cast<uint32_t>(1.0f + 0x1p-11f))) == 1.0f + 0x1p-10f);
  CHECK(std::bit_cast<float>(round_tf32_bits(std::bit_cast<uint32_t>(-1.0f - 0x1p-12f))) == -1.0f);
  CHECK(std::isinf(std::bit_cast<float>(round_tf32_bits(std::bit_cast<uint32_t>(INFINITY)))));
  const int64_t M = 40, K = 40, N = 56;  // M padded to the instruction's 16 x 8 x 8 along M
  const Tensor a = (Tensor::rand({M, K}) - 0.5f).realize(), b = (Tensor::rand({K, N}) - 0.5f).realize();
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  std::vector<double> rounded(static_cast<size_t>(M * N)), exact(rounded.size());
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) {
        const float x = av[static_cast<size_t>(i * K + k)], y = bv[static_cast<size_t>(k * N + j)];
        rounded[static_cast<size_t>(i * N + j)] += static_cast<double>(tf32(x)) * tf32(y);
        exact[static_cast<size_t>(i * N + j)] += static_cast<double>(x) * y;
      }
  const tinyt_test::Tol tol{0.25 * static_cast<double>(K * K) * 0x1p-24, 0};  // float32 sums of K products up to 0.25
  for (const std::string device : {"EMU", "CUDA"}) {
    if (!tinyt_test::device_available(device) || !backend::device(device).target().tensor_cores) {
      MESSAGE("skipped part: ", device, " is not here, or has no tensor cores");
      continue;
    }
    INFO(device);
    const Tensor on_device = a.to(device).matmul(b.to(device));
    const UOp ast = schedule::create_schedule({on_device.uop()}).back().ast;
    const backend::Target target = backend::device(device).target();
    for (const codegen::Opt& o : engine::detail::gpu_opts(ast, target)) CHECK(o.op != codegen::OptOp::TC);  // not unless asked
    const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, target, true, true);
    REQUIRE(!chosen.empty());
    CHECK(chosen[0] == codegen::Opt{codegen::OptOp::TC, 2, 1});
    Context asked{{"TF32", 1}};
    const std::vector<float> got = on_device.to_vector<float>();
    tinyt_test::check_close(got, rounded, tol);
    double from_float32 = 0;  // and not float32's: the inputs' rounding (2^-11 of each) shows
    for (size_t i = 0; i < got.size(); ++i) from_float32 = std::max(from_float32, std::abs(got[i] - exact[i]));
    CHECK(from_float32 > 10 * tol.atol);
  }
  try {
    backend::nvrtc_version();
  } catch (const DeviceError& e) {
    MESSAGE("skipped part: NVRTC cannot be opened: ", e.what());
    return;
  }
  const UOp ast = schedule::create_schedule({a.to("EMU").matmul(b.to("EMU")).uop()}).back().ast;
  backend::Target cuda = backend::device("EMU").target();
  const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, cuda, true, true);
  cuda.language = backend::Language::cuda;
  const std::string ptx = backend::CudaCompiler("sm_80").compile(engine::render(engine::lower_kernel(ast, chosen, cuda, true), cuda), "tf32");
  CHECK(ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") != std::string::npos);
  CHECK(ptx.find("cvt.rna.tf32.f32") != std::string::npos);
}

TEST_CASE("emu: a 256 x 256 x 256 float16 or bfloat16 matmul gets TC: copies of 16 bytes, fragments by ldmatrix, mma.sync accumulating in place, compiled by NVRTC for sm_80 and sm_90") {
  for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
    INFO(dt.name());
    const bool f16 = dt == dtypes::float16;
    const UOp ast = schedule::create_schedule({Tensor::empty({256, 256}, dt, "EMU").matmul(Tensor::empty({256, 256}, dt, "EMU")).uop()}).back().ast;
    backend::Target cuda = backend::device("EMU").target();
    const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(ast, cuda);
    // each lane: 2 x 4 tiles of 16 x 8; 2 x 2 warps a group, sharing fragments staged 32 steps of K at a time
    CHECK(codegen::to_string(chosen) == "TC(2,0) UPCAST(1,4) UPCAST(0,2) LOCAL(1,2) LOCAL(0,2) STAGE(4,2)");
    cuda.language = backend::Language::cuda;
    const std::string source = engine::render(engine::lower_kernel(ast, chosen, cuda, true), cuda);
    const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") + (f16 ? "f16.f16" : "bf16.bf16") + ".f32";
    CHECK(source.find("asm volatile(\"" + mma + " ") != std::string::npos);
    CHECK(source.find("__shared__ __align__(16) unsigned short temp0[") != std::string::npos);  // the staged fragments: 16 bits each
    // the copies to shared memory and the mma operands move the inputs' bits: no value goes to
    // float32 and back on its way (bfloat16's conversions are integer arithmetic)
    const std::string body = source.substr(source.find("extern \"C\""));
    CHECK(body.find(f16 ? "tinyt_f16_to_f32(" : "tinyt_bf16_to_f32(") == std::string::npos);
    CHECK(body.find("uint4 wide") != std::string::npos);  // the copies: 16 bytes a work-item
    // fragments from shared memory by ldmatrix: A's 16 x 16 tile in 4 8 x 8 tiles, B's 16 x 8 (rows
    // of N in memory) in 2 transposed; the mma takes their registers as they are
    CHECK(body.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
    CHECK(body.find("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") != std::string::npos);
    CHECK(body.find("tinyt_pack16(") == std::string::npos);
    // each mma adds to the lane's accumulators itself (its C operand), no float adds after it
    CHECK(body.find("\"f\"(acc") != std::string::npos);
    CHECK(body.find("\"f\"(0.0f)") == std::string::npos);
    CHECK(body.find(" + wmma") == std::string::npos);
    try {
      backend::nvrtc_version();
    } catch (const DeviceError& e) {
      MESSAGE("skipped part: NVRTC cannot be opened: ", e.what());
      return;
    }
    for (const char* arch : {"sm_80", "sm_90"}) {
      INFO(arch);
      backend::CudaCompiler compiler(arch);
      const std::string ptx = compiler.compile(source, "r_256_256_256");
      CHECK(ptx.find(mma) != std::string::npos);
      CHECK((ptx.find("ld.global.nc.v4.u32") != std::string::npos || ptx.find("ld.global.v4.u32") != std::string::npos));
      CHECK(ptx.find("st.shared.v4.u32") != std::string::npos);
      CHECK(ptx.find("ldmatrix.sync.aligned.m8n8.x4.shared.b16") != std::string::npos);
    }
  }
  // a convolution's fragments, read from global memory one value at a time, are packed from their
  // bits two to a register
  const UOp conv = schedule::create_schedule({Tensor::empty({2, 16, 16, 16}, dtypes::float16, "EMU")
                                                  .conv2d(Tensor::empty({32, 16, 3, 3}, dtypes::float16, "EMU"), {}, 1, 1, 1, 1)
                                                  .uop()})
                       .back()
                       .ast;
  backend::Target cuda = backend::device("EMU").target();
  const std::vector<codegen::Opt> chosen = engine::detail::gpu_opts(conv, cuda);
  REQUIRE(chosen.front().op == codegen::OptOp::TC);
  cuda.language = backend::Language::cuda;
  const std::string source = engine::render(engine::lower_kernel(conv, chosen, cuda, true), cuda);
  const std::string body = source.substr(source.find("extern \"C\""));
  CHECK(body.find("\"r\"(tinyt_pack16(bits") != std::string::npos);
  CHECK(body.find("tinyt_f16_to_f32(") == std::string::npos);
}
