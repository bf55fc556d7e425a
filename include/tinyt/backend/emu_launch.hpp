// One launch on EMU (backend/emu.hpp): its memory, whose blocks know their sizes, and a grid of
// work-groups run one after another, the work-items of each in lockstep, one op at a time for all
// of them, with every check the top of emu.hpp lists.
#pragma once

#include <bit>

#include <cstring>
#include <map>
#include <mutex>

#include "emu_listing.hpp"

namespace tinyt::inline v0 {
namespace backend {
namespace emu {

/// EMU's memory: host memory, filled with garbage when allocated, each block's size known so a
/// kernel's access past its end is caught.
class Memory final : public Allocator {
 public:
  void* alloc(size_t nbytes) override {
    void* p = std::aligned_alloc(64, (std::max<size_t>(nbytes, 1) + 63) / 64 * 64);
    if (!p) throw OutOfMemoryError(tinyt::detail::cat("EMU: cannot allocate ", nbytes, " bytes"));
    std::memset(p, 0xA5, nbytes);
    std::lock_guard lock(mu_);
    sizes_[p] = nbytes;
    return p;
  }
  void free(void* p, size_t) override {
    {
      std::lock_guard lock(mu_);
      sizes_.erase(p);
    }
    std::free(p);
  }
  void copyin(void* dst, const void* src, size_t nbytes) override { std::memcpy(checked(dst, nbytes, "copyin"), src, nbytes); }
  void copyout(void* dst, void* src, size_t nbytes) override { std::memcpy(dst, checked(src, nbytes, "copyout"), nbytes); }
  void copy(void* dst, void* src, size_t nbytes) override {
    std::memmove(checked(dst, nbytes, "copy"), checked(src, nbytes, "copy"), nbytes);
  }
  /// The size of the block `p` starts; DeviceError when it is no block of this memory.
  size_t size_of(void* p) const {
    std::lock_guard lock(mu_);
    const auto it = sizes_.find(p);
    if (it == sizes_.end()) throw DeviceError("EMU: a kernel was given memory EMU did not allocate");
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<void*, size_t> sizes_;
  void* checked(void* p, size_t nbytes, const char* what) const {
    if (nbytes > size_of(p)) throw DeviceError(tinyt::detail::cat("EMU: ", what, " of ", nbytes, " bytes into a block of ", size_of(p)));
    return p;
  }
};

/// How a launch's memory accesses would meet an NVIDIA GPU's memory, counted per op for each warp
/// of 32 consecutive work-items: global memory moves 32-byte sectors; local (shared) memory is 32
/// banks of 4-byte words, each bank serving one word a cycle (lanes reading one word share it).
/// A GPU-free measure of coalescing and bank conflicts, on which a kernel's speed depends.
struct AccessStats {
  struct Global {
    int64_t requests = 0;  // warp-wide ops (a lane at least active)
    int64_t bytes = 0;     // the bytes their lanes asked for
    int64_t sectors = 0;   // the 32-byte sectors they touched: bytes / 32 at best
    /// The bytes asked for over those moved: 1 when every sector moved is used whole (above 1
    /// where lanes read the same bytes).
    double efficiency() const { return sectors == 0 ? 1.0 : static_cast<double>(bytes) / (32.0 * static_cast<double>(sectors)); }
  };
  struct Local {
    int64_t requests = 0;    // warp-wide ops
    int64_t wavefronts = 0;  // the cycles the banks take for them
    int64_t fewest = 0;      // the fewest they could take: a cycle for each 128 distinct bytes (`requests` for scalars)
  };
  Global global_loads, global_stores;
  Local local_loads, local_stores;
  AccessStats& operator+=(const AccessStats& o) {
    for (auto [to, from] : {std::pair{&global_loads, &o.global_loads}, {&global_stores, &o.global_stores}})
      to->requests += from->requests, to->bytes += from->bytes, to->sectors += from->sectors;
    for (auto [to, from] : {std::pair{&local_loads, &o.local_loads}, {&local_stores, &o.local_stores}})
      to->requests += from->requests, to->wavefronts += from->wavefronts, to->fewest += from->fewest;
    return *this;
  }
};

/// One launch: the buffers and their sizes, the grid, and one work-group's state at a time.
class Launch {
 public:
  Launch(const Kernel& k, const Spec& spec, Memory& memory, const std::vector<void*>& bufs, const std::vector<int64_t>& vars,
         const LaunchDims& dims)
      : k_(k), vars_(vars), dims_(dims), warp_(static_cast<size_t>(std::max<int64_t>(spec.warp, 1))) {
    int64_t lanes = 1;
    for (size_t d = 0; d < 3; ++d) {
      if (dims.local[d] < 1 || dims.global[d] < 1 || dims.global[d] % dims.local[d] != 0)
        throw fail(tinyt::detail::cat("launch dimension ", d, ": ", dims.global[d], " work-items in groups of ", dims.local[d],
                                      " (the groups must divide them)"));
      lanes *= dims.local[d];
    }
    if (lanes > spec.max_threads)
      throw fail(tinyt::detail::cat("a work-group of ", lanes, " work-items; ", spec.name, " runs at most ", spec.max_threads));
    lanes_ = static_cast<size_t>(lanes);
    for (const Instr& ins : k.code)
      if (ins.op == Ops::DEFINE_GLOBAL) {
        const auto n = static_cast<size_t>(ins.number);
        if (n >= bufs.size()) throw fail(tinyt::detail::cat("buffer ", n, " was not given (", bufs.size(), " were)"));
        globals_.resize(std::max(globals_.size(), n + 1));
        globals_[n] = {static_cast<uint8_t*>(bufs[n]), memory.size_of(bufs[n]), ins.dtype.base(), {}};
      }
    for (const Instr& ins : k.code)
      if (ins.op == Ops::DEFINE_VAR && static_cast<size_t>(ins.number) >= vars.size())
        throw fail(tinyt::detail::cat("variable ", ins.number, " was not given (", vars.size(), " were)"));
    values_.resize(k.code.size() * lanes_);
  }

  void all_groups() {
    for (int64_t z = 0; z < dims_.global[2] / dims_.local[2]; ++z)
      for (int64_t y = 0; y < dims_.global[1] / dims_.local[1]; ++y)
        for (int64_t x = 0; x < dims_.global[0] / dims_.local[0]; ++x) group({x, y, z});
  }
  /// The memory accesses of the work-groups run so far.
  const AccessStats& stats() const { return stats_; }

 private:
  struct Global {
    uint8_t* data = nullptr;
    size_t nbytes = 0;
    DType dtype;
    std::vector<int64_t> writer;  // per element, the work-item that wrote it in this launch (-1: none)
  };
  struct Local {
    std::vector<Slot> data;
    // per element: who wrote and read it last, and in which interval between barriers
    std::vector<int32_t> writer, reader;  // reader -2: several work-items
    std::vector<int64_t> written, read;
  };
  const Kernel& k_;
  const std::vector<int64_t>& vars_;
  LaunchDims dims_;
  size_t warp_ = 1;
  size_t lanes_ = 1;
  std::array<int64_t, 3> group_{};
  int64_t epoch_ = 0;  // barriers passed in this work-group
  std::vector<Global> globals_;
  std::vector<Slot> values_;                   // per op, per work-item
  std::vector<Local> locals_;              // by DEFINE_LOCAL number
  std::vector<std::vector<Slot>> regs_;    // by DEFINE_REG number: per element, per work-item
  std::map<size_t, std::vector<Slot>> vectors_;  // by op with a vector result (WMMA, a wide load): per element, per work-item
  AccessStats stats_;
  static constexpr size_t memory_warp = 32;  // the lanes whose accesses the memory serves together

  DeviceError fail(const std::string& why) const { return DeviceError(tinyt::detail::cat("EMU: ", k_.name, ": ", why)); }
  Slot* at(size_t op) { return values_.data() + op * lanes_; }
  // a work-item's index in its group along dimension d (x fastest, as CUDA numbers threads)
  int64_t local_id(size_t lane, size_t d) const {
    const auto l = static_cast<int64_t>(lane);
    return d == 0 ? l % dims_.local[0] : d == 1 ? l / dims_.local[0] % dims_.local[1] : l / (dims_.local[0] * dims_.local[1]);
  }
  // ... and in the launch
  int64_t global_id(size_t lane, size_t d) const { return group_[d] * dims_.local[d] + local_id(lane, d); }
  // a work-item's position, as "(x, y, z) of group (x, y, z)"
  std::string who(size_t lane) const {
    return tinyt::detail::cat("work-item (", local_id(lane, 0), ", ", local_id(lane, 1), ", ", local_id(lane, 2), ") of group (",
                              group_[0], ", ", group_[1], ", ", group_[2], ")");
  }
  // a work-item's number in the whole launch
  int64_t launch_id(size_t lane) const {
    return global_id(lane, 0) + dims_.global[0] * (global_id(lane, 1) + dims_.global[1] * global_id(lane, 2));
  }

  void group(std::array<int64_t, 3> g) {
    group_ = g;
    epoch_ = 0;
    const std::vector<Instr>& code = k_.code;
    for (size_t pc = 0; pc < code.size(); ++pc) {
      const Instr& ins = code[pc];
      Slot* out = at(pc);
      switch (ins.op) {
        case Ops::RANGE: {
          if (ins.work_item()) {
            const auto d = static_cast<size_t>(ins.number);
            for (size_t l = 0; l < lanes_; ++l)
              out[l].i = ins.index == Instr::Index::group ? group_[d] : ins.index == Instr::Index::local ? local_id(l, d) : global_id(l, d);
            break;
          }
          const int64_t end = uniform(at(static_cast<size_t>(ins.src[0])), "a loop's bound");
          if (end <= 0) {
            pc = static_cast<size_t>(ins.partner);  // no iteration: on after its END
            break;
          }
          for (size_t l = 0; l < lanes_; ++l) out[l].i = 0;
          break;
        }
        case Ops::END: {
          if (ins.partner < 0) break;  // a work-item's range
          const auto r = static_cast<size_t>(ins.partner);
          Slot* counter = at(r);
          const int64_t next = counter[0].i + 1;
          if (next < at(static_cast<size_t>(code[r].src[0]))[0].i) {
            for (size_t l = 0; l < lanes_; ++l) counter[l].i = next;
            pc = r;  // the loop's body again
          }
          break;
        }
        case Ops::CONST:
          for (size_t l = 0; l < lanes_; ++l) out[l] = ins.value;
          break;
        case Ops::DEFINE_VAR:
          for (size_t l = 0; l < lanes_; ++l) out[l].i = vars_[static_cast<size_t>(ins.number)];
          break;
        case Ops::DEFINE_GLOBAL: break;
        case Ops::DEFINE_LOCAL: {
          const auto n = static_cast<size_t>(ins.dtype.size());
          if (locals_.size() <= static_cast<size_t>(ins.number)) locals_.resize(static_cast<size_t>(ins.number) + 1);
          Local& mem = locals_[static_cast<size_t>(ins.number)];
          mem.data.assign(n, Slot{});
          for (Slot& s : mem.data) s.u = 0xA5A5A5A5A5A5A5A5ull;  // garbage, as a GPU's shared memory holds
          mem.writer.assign(n, -1), mem.reader.assign(n, -1), mem.written.assign(n, -1), mem.read.assign(n, -1);
          break;
        }
        case Ops::DEFINE_REG:
          if (regs_.size() <= static_cast<size_t>(ins.number)) regs_.resize(static_cast<size_t>(ins.number) + 1);
          regs_[static_cast<size_t>(ins.number)].assign(static_cast<size_t>(ins.dtype.size()) * lanes_, Slot{});
          break;
        case Ops::INDEX:
          std::copy_n(at(static_cast<size_t>(ins.src[1])), lanes_, out);
          break;
        case Ops::LOAD: load(pc, ins, out); break;
        case Ops::STORE: store(ins); break;
        case Ops::BARRIER: ++epoch_; break;
        case Ops::WMMA: tensor_core(pc, ins); break;
        case Ops::LDMATRIX: ldmatrix(pc, ins); break;
        case Ops::GEP: {
          const std::vector<Slot>& d = vectors_.at(static_cast<size_t>(ins.src[0]));
          std::copy_n(d.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(ins.number) * lanes_), lanes_, out);
          break;
        }
        case Ops::SHFL_XOR: {
          // lanes exchange within their warp: consecutive work-items, warp_ at a time
          if (lanes_ % warp_ != 0)
            throw fail(tinyt::detail::cat("a shuffle in a work-group of ", lanes_, " work-items, not whole warps of ", warp_));
          const Slot* v = at(static_cast<size_t>(ins.src[0]));
          for (size_t l = 0; l < lanes_; ++l) out[l] = v[l ^ static_cast<size_t>(ins.number)];
          break;
        }
        default: alu(ins, out);
      }
    }
  }

  // D = A·B (+ C) for each warp: the lanes' fragments put back into the tiles by the instruction's
  // layout (each element held by exactly one lane, rounded to the operands' type or to TF32, as the
  // hardware reads it), products summed in float32 in k's order, then C's element added where the
  // op has C (a lane's accumulators: 4 sources after the fragments); each lane given its 4 of D
  void tensor_core(size_t pc, const Instr& ins) {
    const TensorCore& tc = *ins.tc;
    const bool accumulates = ins.src.size() > static_cast<size_t>(tc.a_count + tc.b_count);
    if (lanes_ % TensorCore::warp != 0)
      throw fail(tinyt::detail::cat("a tensor-core op in a work-group of ", lanes_, " work-items, not whole warps of ", TensorCore::warp));
    // an operand as the hardware reads it: rounded to its 16-bit type, or to TF32
    const auto operand = [&](size_t src, size_t lane) {
      const float v = at(static_cast<size_t>(ins.src[src]))[lane].f;
      return ins.input == dtypes::float32 ? std::bit_cast<float>(round_tf32_bits(std::bit_cast<uint32_t>(v))) : round_narrow(v, ins.input);
    };
    std::vector<Slot>& d = vectors_[pc];
    d.assign(static_cast<size_t>(TensorCore::c_count) * lanes_, Slot{});
    std::vector<float> a(static_cast<size_t>(tc.m * tc.k)), b(static_cast<size_t>(tc.k * tc.n));  // row-major
    for (size_t w = 0; w < lanes_; w += TensorCore::warp) {
      for (int lane = 0; lane < TensorCore::warp; ++lane) {
        const size_t l = w + static_cast<size_t>(lane);
        for (int i = 0; i < tc.a_count; ++i) {
          const auto [row, col] = tc.a(lane, i);
          a[static_cast<size_t>(row * tc.k + col)] = operand(static_cast<size_t>(i), l);
        }
        for (int i = 0; i < tc.b_count; ++i) {
          const auto [kk, col] = tc.b(lane, i);
          b[static_cast<size_t>(kk * tc.n + col)] = operand(static_cast<size_t>(tc.a_count + i), l);
        }
      }
      for (int lane = 0; lane < TensorCore::warp; ++lane)
        for (int i = 0; i < TensorCore::c_count; ++i) {
          const auto [row, col] = TensorCore::c(lane, i);
          float sum = 0;
          for (int kk = 0; kk < tc.k; ++kk) sum = std::fma(a[static_cast<size_t>(row * tc.k + kk)], b[static_cast<size_t>(kk * tc.n + col)], sum);
          const size_t l = w + static_cast<size_t>(lane);
          if (accumulates) sum += at(static_cast<size_t>(ins.src[static_cast<size_t>(tc.a_count + tc.b_count + i)]))[l].f;
          d[static_cast<size_t>(i) * lanes_ + l].f = sum;
        }
    }
  }

  // ldmatrix (PTX ISA, m8n8 .b16): for each warp and each tile m, lanes 8m..8m+7 name the tiles'
  // rows (8 neighbouring values, 16 aligned bytes); lane l receives, as values 2m and 2m+1, row
  // l/4's values 2(l%4) and 2(l%4)+1 — transposed, value l/4 of rows 2(l%4) and 2(l%4)+1
  void ldmatrix(size_t pc, const Instr& ins) {
    if (lanes_ % TensorCore::warp != 0)
      throw fail(tinyt::detail::cat("an ldmatrix in a work-group of ", lanes_, " work-items, not whole warps of ", TensorCore::warp));
    const Instr& index = k_.code[static_cast<size_t>(ins.src[0])];
    const Instr& buffer = k_.code[static_cast<size_t>(index.src[0])];
    const Slot* row = at(static_cast<size_t>(index.src[1]));
    const auto tiles = static_cast<size_t>(ins.number);
    for (size_t l = 0; l < lanes_; ++l)
      if (l % TensorCore::warp < 8 * tiles && row[l].i % 8 != 0)
        throw fail(tinyt::detail::cat(who(l), " names row ", row[l].i, " of local buffer ", buffer.number, " for an ldmatrix: not 16-byte aligned"));
    std::vector<Slot>& d = vectors_[pc];
    d.assign(2 * tiles * lanes_, Slot{});
    std::vector<Slot> rows(8 * tiles * 8);
    for (size_t w = 0; w < lanes_; w += TensorCore::warp) {
      for (size_t r = 0; r < 8 * tiles; ++r)  // tile r/8's row r%8, as lane w+r names it
        for (size_t e = 0; e < 8; ++e) rows[r * 8 + e] = read_local(buffer, row[w + r].i + static_cast<int64_t>(e), w + r);
      for (size_t m = 0; m < tiles; ++m) {
        count_local_lanes(stats_.local_loads, row, nullptr, 2, 8, w + 8 * m, w + 8 * m + 8);
        for (size_t lane = 0; lane < TensorCore::warp; ++lane)
          for (size_t j = 0; j < 2; ++j) {
            const size_t r = ins.trans ? 2 * (lane % 4) + j : lane / 4, e = ins.trans ? lane / 4 : 2 * (lane % 4) + j;
            d[(2 * m + j) * lanes_ + w + lane] = rows[(8 * m + r) * 8 + e];
          }
      }
    }
  }

  int64_t uniform(const Slot* v, const char* what) const {
    for (size_t l = 1; l < lanes_; ++l)
      if (v[l].i != v[0].i)
        throw fail(tinyt::detail::cat(what, " differs across a work-group (", v[0].i, " for ", who(0), ", ", v[l].i, " for ",
                                      who(l), "): its work-items must run it together"));
    return v[0].i;
  }

  // the gate of an INDEX for lane l (no gate: every lane)
  bool gated_off(const Instr& index, size_t l) {
    return index.src.size() > 2 && at(static_cast<size_t>(index.src[2]))[l].i == 0;
  }

  // A load's or a store's elements: one, or a vector's `width` neighbours from element idx on (a
  // wide copy's), which a GPU moves at once and so must find aligned to the vector's size.
  size_t width_of(const Instr& value, const Slot* idx, const Slot* gate, const Instr& buffer) const {
    const auto width = static_cast<size_t>(value.dtype.count());
    if (width > 1) {
      if (buffer.op != Ops::DEFINE_GLOBAL && buffer.op != Ops::DEFINE_LOCAL) throw fail("a vector load or store of registers");
      for (size_t l = 0; l < lanes_; ++l)
        if ((!gate || gate[l].i) && idx[l].i % static_cast<int64_t>(width) != 0)
          throw fail(tinyt::detail::cat(who(l), " moves ", width, " elements from element ", idx[l].i, " of ",
                                        buffer.op == Ops::DEFINE_LOCAL ? "local buffer " : "buffer ", buffer.number,
                                        ": not aligned to the vector's size"));
    }
    return width;
  }

  void load(size_t pc, const Instr& ins, Slot* out) {
    const Instr& index = k_.code[static_cast<size_t>(ins.src[0])];
    const Instr& buffer = k_.code[static_cast<size_t>(index.src[0])];
    const Slot* idx = at(static_cast<size_t>(index.src[1]));
    const Slot* gate = index.src.size() > 2 ? at(static_cast<size_t>(index.src[2])) : nullptr;
    const Slot zero = convert(Slot{0}, dtypes::int32, ins.dtype.scalar());
    const size_t width = width_of(ins, idx, gate, buffer);
    if (width > 1) vectors_[pc].assign(width * lanes_, zero);
    // element k of lane l's value
    Slot* const values = width > 1 ? vectors_[pc].data() : out;
    switch (buffer.op) {
      case Ops::DEFINE_GLOBAL: {
        const Global& g = globals_[static_cast<size_t>(buffer.number)];
        const auto size = static_cast<size_t>(g.dtype.itemsize());
        for (size_t l = 0; l < lanes_; ++l)
          for (size_t k = 0; k < width; ++k) {
            if (gate && !gate[l].i) {
              values[k * lanes_ + l] = zero;
              continue;
            }
            const int64_t i = idx[l].i + static_cast<int64_t>(k);
            check_global(buffer, g, i, l, "reads");
            uint64_t bits = 0;
            std::memcpy(&bits, g.data + static_cast<size_t>(i) * size, size);
            values[k * lanes_ + l] = from_bits(bits, g.dtype);
          }
        count_global(stats_.global_loads, idx, gate, size, width);
        return;
      }
      case Ops::DEFINE_LOCAL: {
        for (size_t l = 0; l < lanes_; ++l)
          for (size_t k = 0; k < width; ++k)
            values[k * lanes_ + l] = gate && !gate[l].i ? zero : read_local(buffer, idx[l].i + static_cast<int64_t>(k), l);
        count_local(stats_.local_loads, idx, gate, static_cast<size_t>(buffer.dtype.base().itemsize()), width);
        return;
      }
      default: {
        Slot* regs = registers(buffer);
        for (size_t l = 0; l < lanes_; ++l) out[l] = gate && !gate[l].i ? zero : regs[reg_index(buffer, idx[l].i, l) + l];
        return;
      }
    }
  }

  // element i of local buffer `buffer`, as work-item l reads it
  Slot read_local(const Instr& buffer, int64_t i, size_t l) {
    Local& mem = locals_[static_cast<size_t>(buffer.number)];
    check_local(buffer, i, l, "reads");
    const auto e = static_cast<size_t>(i);
    const auto lane = static_cast<int32_t>(l);
    if (mem.written[e] == epoch_ && mem.writer[e] != lane)
      throw fail(tinyt::detail::cat(who(l), " reads element ", i, " of local buffer ", buffer.number, ", which ",
                                    who(static_cast<size_t>(mem.writer[e])), " wrote with no barrier between"));
    mem.reader[e] = mem.read[e] == epoch_ && mem.reader[e] != lane ? -2 : lane;
    mem.read[e] = epoch_;
    return mem.data[e];
  }

  void store(const Instr& ins) {
    const Instr& index = k_.code[static_cast<size_t>(ins.src[0])];
    const Instr& buffer = k_.code[static_cast<size_t>(index.src[0])];
    const Slot* idx = at(static_cast<size_t>(index.src[1]));
    const Slot* gate = index.src.size() > 2 ? at(static_cast<size_t>(index.src[2])) : nullptr;
    const auto from = static_cast<size_t>(ins.src[1]);
    const size_t width = width_of(k_.code[from], idx, gate, buffer);
    // element k of lane l's value
    const Slot* value = width > 1 ? vectors_.at(from).data() : at(from);
    switch (buffer.op) {
      case Ops::DEFINE_GLOBAL: {
        Global& g = globals_[static_cast<size_t>(buffer.number)];
        const auto size = static_cast<size_t>(g.dtype.itemsize());
        if (g.writer.empty()) g.writer.assign(g.nbytes / size, -1);
        for (size_t l = 0; l < lanes_; ++l)
          for (size_t k = 0; k < width; ++k) {
            if (gate && !gate[l].i) continue;
            const int64_t i = idx[l].i + static_cast<int64_t>(k);
            check_global(buffer, g, i, l, "writes");
            const auto e = static_cast<size_t>(i);
            const int64_t id = launch_id(l);
            if (g.writer[e] >= 0 && g.writer[e] != id)
              throw fail(tinyt::detail::cat(who(l), " writes element ", i, " of buffer ", buffer.number, ", which work-item ", g.writer[e],
                                            " of the launch wrote too"));
            g.writer[e] = id;
            const uint64_t bits = to_bits(value[k * lanes_ + l], g.dtype);
            std::memcpy(g.data + e * size, &bits, size);
          }
        count_global(stats_.global_stores, idx, gate, size, width);
        return;
      }
      case Ops::DEFINE_LOCAL: {
        Local& mem = locals_[static_cast<size_t>(buffer.number)];
        for (size_t l = 0; l < lanes_; ++l)
          for (size_t k = 0; k < width; ++k) {
            if (gate && !gate[l].i) continue;
            const int64_t i = idx[l].i + static_cast<int64_t>(k);
            check_local(buffer, i, l, "writes");
            const auto e = static_cast<size_t>(i);
            const auto lane = static_cast<int32_t>(l);
            if (mem.written[e] == epoch_ && mem.writer[e] != lane)
              throw fail(tinyt::detail::cat(who(l), " and ", who(static_cast<size_t>(mem.writer[e])), " both write element ", i,
                                            " of local buffer ", buffer.number, " with no barrier between"));
            if (mem.read[e] == epoch_ && mem.reader[e] != lane)
              throw fail(tinyt::detail::cat(who(l), " writes element ", i, " of local buffer ", buffer.number,
                                            ", which another work-item read with no barrier between"));
            mem.writer[e] = lane, mem.written[e] = epoch_;
            mem.data[e] = value[k * lanes_ + l];
          }
        count_local(stats_.local_stores, idx, gate, static_cast<size_t>(buffer.dtype.base().itemsize()), width);
        return;
      }
      default: {
        Slot* regs = registers(buffer);
        for (size_t l = 0; l < lanes_; ++l)
          if (!gate || gate[l].i) regs[reg_index(buffer, idx[l].i, l) + l] = value[l];
        return;
      }
    }
  }

  // each warp's access to global memory: the distinct 32-byte sectors its active lanes touch
  // (each lane `width` elements of `size` bytes from element idx on)
  void count_global(AccessStats::Global& stats, const Slot* idx, const Slot* gate, size_t size, size_t width) {
    std::vector<int64_t> sectors;
    const auto bytes = static_cast<int64_t>(size * width);
    for (size_t w = 0; w < lanes_; w += memory_warp) {
      sectors.clear();
      for (size_t l = w; l < std::min(lanes_, w + memory_warp); ++l)
        if (!gate || gate[l].i) {
          const int64_t first = idx[l].i * static_cast<int64_t>(size);
          for (int64_t b = first / 32; b <= (first + bytes - 1) / 32; ++b) sectors.push_back(b);
          stats.bytes += bytes;
        }
      std::sort(sectors.begin(), sectors.end());
      const auto n = static_cast<int64_t>(std::unique(sectors.begin(), sectors.end()) - sectors.begin());
      stats.requests += n > 0, stats.sectors += n;
    }
  }
  // each warp's access to local memory: the most distinct words its active lanes ask one bank
  // for; at best its bytes over the 128 the banks serve a cycle
  void count_local(AccessStats::Local& stats, const Slot* idx, const Slot* gate, size_t size, size_t width) {
    for (size_t w = 0; w < lanes_; w += memory_warp) count_local_lanes(stats, idx, gate, size, width, w, std::min(lanes_, w + memory_warp));
  }
  // ... of the lanes [from, to) together (an ldmatrix's 8 rows of a tile)
  void count_local_lanes(AccessStats::Local& stats, const Slot* idx, const Slot* gate, size_t size, size_t width, size_t from, size_t to) {
    std::vector<int64_t> words;
    const auto bytes = static_cast<int64_t>(size * width);
    int64_t asked = 0;
    for (size_t l = from; l < to; ++l)
      if (!gate || gate[l].i) {
        for (int64_t b = 0; b < bytes; b += 4) words.push_back((idx[l].i * static_cast<int64_t>(size) + b) / 4);
        asked += bytes;
      }
    if (words.empty()) return;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    std::array<int64_t, 32> per_bank{};
    for (int64_t word : words) ++per_bank[static_cast<size_t>(word % 32)];
    ++stats.requests, stats.wavefronts += *std::max_element(per_bank.begin(), per_bank.end());
    stats.fewest += std::max<int64_t>((std::min<int64_t>(asked, static_cast<int64_t>(words.size()) * 4) + 127) / 128, 1);
  }

  void check_global(const Instr& buffer, const Global& g, int64_t i, size_t l, const char* what) const {
    const auto size = static_cast<int64_t>(g.dtype.itemsize());
    if (i < 0 || (i + 1) * size > static_cast<int64_t>(g.nbytes))
      throw fail(tinyt::detail::cat(who(l), " ", what, " element ", i, " of buffer ", buffer.number, " (", g.dtype.name(), "), which has ",
                                    static_cast<int64_t>(g.nbytes) / size));
  }
  void check_local(const Instr& buffer, int64_t i, size_t l, const char* what) const {
    if (i < 0 || i >= buffer.dtype.size())
      throw fail(tinyt::detail::cat(who(l), " ", what, " element ", i, " of local buffer ", buffer.number, ", which has ", buffer.dtype.size()));
  }
  Slot* registers(const Instr& buffer) { return regs_[static_cast<size_t>(buffer.number)].data(); }
  // where element i of an accumulator is, for lane l (plus l)
  size_t reg_index(const Instr& buffer, int64_t i, size_t l) const {
    if (i < 0 || i >= buffer.dtype.size())
      throw fail(tinyt::detail::cat(who(l), " uses register ", i, " of accumulator ", buffer.number, ", which has ", buffer.dtype.size()));
    return static_cast<size_t>(i) * lanes_;
  }

  template <class F> void each(Slot* out, F&& f) {
    for (size_t l = 0; l < lanes_; ++l) out[l] = f(l);
  }
  static Slot f32(float f) {
    Slot s;
    s.f = f;
    return s;
  }
  static Slot f64(double d) {
    Slot s;
    s.d = d;
    return s;
  }
  static Slot boolean(bool b) {
    Slot s;
    s.i = b;
    return s;
  }

  // a float op in T (float: float32 and the narrow floats held in it; double: float64), computed
  // as C computes it in T; false when it is no float op
  template <class T> bool float_alu(Ops op, const Slot* a, const Slot* b, const Slot* c, Slot* out) {
    const auto v = [](const Slot& s) -> T {
      if constexpr (std::is_same_v<T, float>) return s.f;
      else return s.d;
    };
    const auto put = [](T x) { return std::is_same_v<T, float> ? f32(static_cast<float>(x)) : f64(static_cast<double>(x)); };
    switch (op) {
      case Ops::ADD: each(out, [&](size_t l) { return put(v(a[l]) + v(b[l])); }); return true;
      case Ops::SUB: each(out, [&](size_t l) { return put(v(a[l]) - v(b[l])); }); return true;
      case Ops::MUL: each(out, [&](size_t l) { return put(v(a[l]) * v(b[l])); }); return true;
      case Ops::FDIV: each(out, [&](size_t l) { return put(v(a[l]) / v(b[l])); }); return true;
      case Ops::MAX: each(out, [&](size_t l) { return put(v(a[l]) != v(a[l]) || v(a[l]) > v(b[l]) ? v(a[l]) : v(b[l])); }); return true;
      case Ops::CMPLT: each(out, [&](size_t l) { return boolean(v(a[l]) < v(b[l])); }); return true;
      case Ops::CMPNE: each(out, [&](size_t l) { return boolean(v(a[l]) != v(b[l])); }); return true;
      case Ops::CMPEQ: each(out, [&](size_t l) { return boolean(v(a[l]) == v(b[l])); }); return true;
      case Ops::NEG: each(out, [&](size_t l) { return put(-v(a[l])); }); return true;
      case Ops::RECIPROCAL: each(out, [&](size_t l) { return put(T(1) / v(a[l])); }); return true;
      case Ops::EXP2: each(out, [&](size_t l) { return put(std::exp2(v(a[l]))); }); return true;
      case Ops::LOG2: each(out, [&](size_t l) { return put(std::log2(v(a[l]))); }); return true;
      case Ops::SIN: each(out, [&](size_t l) { return put(std::sin(v(a[l]))); }); return true;
      case Ops::SQRT: each(out, [&](size_t l) { return put(std::sqrt(v(a[l]))); }); return true;
      case Ops::TRUNC: each(out, [&](size_t l) { return put(std::trunc(v(a[l]))); }); return true;
      case Ops::POW: each(out, [&](size_t l) { return put(std::pow(v(a[l]), v(b[l]))); }); return true;
      case Ops::MULACC: each(out, [&](size_t l) { return put(std::fma(v(a[l]), v(b[l]), v(c[l]))); }); return true;
      default: return false;
    }
  }

  void alu(const Instr& ins, Slot* out) {
    const Slot* a = at(static_cast<size_t>(ins.src[0]));
    const Slot* b = ins.src.size() > 1 ? at(static_cast<size_t>(ins.src[1])) : nullptr;
    const Slot* c = ins.src.size() > 2 ? at(static_cast<size_t>(ins.src[2])) : nullptr;
    const DType dt = ins.dtype;
    // what the operands are: a WHERE's are its branches, a comparison's are not its bool result
    const DType in = k_.code[static_cast<size_t>(ins.op == Ops::WHERE ? ins.src[1] : ins.src[0])].dtype;
    const Kind k = kind_of(in);
    if (ins.op == Ops::CAST) return each(out, [&](size_t l) { return convert(a[l], in, dt); });
    if (ins.op == Ops::BITCAST) return each(out, [&](size_t l) { return from_bits(to_bits(a[l], in), dt); });
    if (ins.op == Ops::WHERE) return each(out, [&](size_t l) { return a[l].i ? b[l] : c[l]; });
    if (k == Kind::f32 || k == Kind::f64) {
      if (k == Kind::f32 ? float_alu<float>(ins.op, a, b, c, out) : float_alu<double>(ins.op, a, b, c, out)) return;
    } else {
      const bool u = k == Kind::uint;
      const DType s = in.scalar();
      const int bits = s.is_index() ? 64 : 8 * std::max(s.itemsize(), 1);
      switch (ins.op) {
        case Ops::ADD: return each(out, [&](size_t l) { return wrap(a[l].u + b[l].u, dt); });
        case Ops::SUB: return each(out, [&](size_t l) { return wrap(a[l].u - b[l].u, dt); });
        case Ops::MUL: return each(out, [&](size_t l) { return wrap(a[l].u * b[l].u, dt); });
        case Ops::NEG: return each(out, [&](size_t l) { return wrap(0 - a[l].u, dt); });
        case Ops::AND: return each(out, [&](size_t l) { return wrap(a[l].u & b[l].u, dt); });
        case Ops::OR: return each(out, [&](size_t l) { return wrap(a[l].u | b[l].u, dt); });
        case Ops::XOR: return each(out, [&](size_t l) { return wrap(a[l].u ^ b[l].u, dt); });
        case Ops::SHL:  // a shift past the width is undefined in C: 0 here
          return each(out, [&](size_t l) { return b[l].i < 0 || b[l].i >= bits ? wrap(0, dt) : wrap(a[l].u << b[l].i, dt); });
        case Ops::SHR:
          return each(out, [&](size_t l) {
            if (b[l].i < 0 || b[l].i >= bits) return wrap(0, dt);
            return u ? wrap(a[l].u >> b[l].i, dt) : wrap(static_cast<uint64_t>(a[l].i >> b[l].i), dt);
          });
        case Ops::IDIV:  // as the renderers guard it: x/0 is 0, x/-1 is -x
          return each(out, [&](size_t l) {
            if (b[l].u == 0) return wrap(0, dt);
            if (u) return wrap(a[l].u / b[l].u, dt);
            if (b[l].i == -1) return wrap(0 - a[l].u, dt);
            return wrap(static_cast<uint64_t>(a[l].i / b[l].i), dt);
          });
        case Ops::MOD:
          return each(out, [&](size_t l) {
            if (b[l].u == 0) return wrap(0, dt);
            if (u) return wrap(a[l].u % b[l].u, dt);
            if (b[l].i == -1) return wrap(0, dt);
            return wrap(static_cast<uint64_t>(a[l].i % b[l].i), dt);
          });
        case Ops::MAX: return each(out, [&](size_t l) { return (u ? a[l].u > b[l].u : a[l].i > b[l].i) ? a[l] : b[l]; });
        case Ops::CMPLT: return each(out, [&](size_t l) { return boolean(u ? a[l].u < b[l].u : a[l].i < b[l].i); });
        case Ops::CMPNE: return each(out, [&](size_t l) { return boolean(a[l].u != b[l].u); });
        case Ops::CMPEQ: return each(out, [&](size_t l) { return boolean(a[l].u == b[l].u); });
        case Ops::MULACC: return each(out, [&](size_t l) { return wrap(a[l].u * b[l].u + c[l].u, dt); });
        default: break;
      }
    }
    throw fail(tinyt::detail::cat("cannot run ", op_name(ins.op), " of ", in.name()));
  }
};

}  // namespace emu
}  // namespace backend
}  // namespace tinyt::inline v0
