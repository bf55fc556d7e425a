// What an exec item runs besides a compiled kernel (realize.hpp): copies between buffers, and
// allreduces across processes (dist.hpp). Each runs on Buffers, output first.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "../backend/devices.hpp"
#include "../backend/nccl.hpp"
#include "../buffer.hpp"
#include "../dist.hpp"
#include "../shape.hpp"
#include "estimates.hpp"

namespace tinyt::inline v0 {
namespace engine {

/// What an exec item runs: a compiled kernel (realize.hpp), a copy, an allreduce across processes.
class Runner {
 public:
  virtual ~Runner() = default;
  /// Runs on `bufs` (output first) with the variables' values `vars`; when `timed`, waits and
  /// returns the seconds it took (else may return 0 at once).
  virtual double run(const std::vector<Buffer*>& bufs, const std::vector<int64_t>& vars, bool timed) = 0;
  /// Its name in DEBUG lines.
  virtual const std::string& name() const = 0;
  /// What one run costs.
  virtual Estimates estimates() const = 0;
};

/// Copies bufs[1] into bufs[0] (equal sizes): within a device by its allocator, between devices
/// through the host (straight into or out of host-addressable memory, else through a staging copy).
class BufferCopy final : public Runner {
 public:
  BufferCopy(size_t nbytes, const std::string& from, const std::string& to)
      : nbytes_(nbytes), name_(tinyt::detail::cat("copy ", nbytes, ", ", to, " <- ", from)) {}
  double run(const std::vector<Buffer*>& bufs, const std::vector<int64_t>&, bool timed) override {
    Buffer& dst = *bufs.at(0);
    Buffer& src = *bufs.at(1);
    if (dst.nbytes() != nbytes_ || src.nbytes() != nbytes_)
      throw InternalError(tinyt::detail::cat(name_, ": the buffers have ", dst.nbytes(), " and ", src.nbytes(), " bytes"));
    const auto start = std::chrono::steady_clock::now();
    backend::Allocator& to = dst.backend().allocator();
    backend::Allocator& from = src.backend().allocator();
    if (dst.device() == src.device()) {
      to.copy(dst.ptr(), src.ptr(), nbytes_);
      if (timed) dst.backend().synchronize();
    } else if (void* host = to.host_pointer(dst.ptr())) {
      from.copyout(host, src.ptr(), nbytes_);
    } else if (void* host = from.host_pointer(src.ptr())) {
      to.copyin(dst.ptr(), host, nbytes_);
    } else {
      std::vector<char> staging(nbytes_);
      from.copyout(staging.data(), src.ptr(), nbytes_);
      to.copyin(dst.ptr(), staging.data(), nbytes_);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const std::string& name() const override { return name_; }
  Estimates estimates() const override { return {0, static_cast<int64_t>(2 * nbytes_), static_cast<int64_t>(2 * nbytes_)}; }

 private:
  size_t nbytes_;
  std::string name_;
};

/// Every rank's bufs[1] combined by `op` into bufs[0], across dist::world()'s processes: GPU
/// memory by NCCL, host memory by MPI, other device memory through a host copy. First the ranks
/// check that they reduce the same shape, dtype and op (a ShapeError on every rank otherwise:
/// reducing different tensors would mix them, or wait forever). A symbolic shape reduces the
/// elements of its bound size: the variables' values come as a kernel's do.
class AllreduceRunner final : public Runner {
 public:
  AllreduceRunner(Shape shape, DType dtype, dist::ReduceOp op)
      : shape_(std::move(shape)), dtype_(dtype), op_(op),
        name_(tinyt::detail::cat("allreduce ", shape_, " ", dtype_.name(), " (", dist::to_string(op), ")")) {
    for (const sint& d : shape_)
      if (!d.is_int())
        for (const UOp& x : toposort(d.unbound()))
          if (x.op() == Ops::DEFINE_VAR && std::find(vars_.begin(), vars_.end(), x) == vars_.end()) vars_.push_back(x);
  }
  /// The variables of its shape, in the order run() takes their values.
  const std::vector<UOp>& vars() const { return vars_; }
  double run(const std::vector<Buffer*>& bufs, const std::vector<int64_t>& vars, bool timed) override {
    Buffer& dst = *bufs.at(0);
    Buffer& src = *bufs.at(1);
    const auto start = std::chrono::steady_clock::now();
    dist::Communicator& world = dist::world();
    // the buffers hold the largest size the variables allow; this run reduces the bound one
    const Shape shape = bound_shape(vars);
    const auto count = static_cast<size_t>(shape.numel().as_int());
    const size_t nbytes = count * static_cast<size_t>(dtype_.itemsize());
    if (nbytes > dst.nbytes() || nbytes > src.nbytes())
      throw InternalError(tinyt::detail::cat(name_, ": ", shape, " is more than its buffers hold"));
    count_ = count;
    backend::Allocator& memory = dst.backend().allocator();
    if (world.size() == 1) {  // the reduction of one value: a copy
      memory.copy(dst.ptr(), src.ptr(), nbytes);
      if (timed) dst.backend().synchronize();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    agree(world, shape);
    if (auto* gpu = dynamic_cast<backend::CudaDevice*>(&dst.backend())) {
      nccl_for(world, *gpu).allreduce(src.ptr(), dst.ptr(), count, dtype_, op_);
    } else if (void* to = memory.host_pointer(dst.ptr())) {
      world.allreduce(memory.host_pointer(src.ptr()), to, count, dtype_, op_);
    } else {
      std::vector<char> staging(nbytes);
      src.copyout(staging.data(), nbytes);
      world.allreduce(staging.data(), staging.data(), count, dtype_, op_);
      dst.copyin(staging.data(), nbytes);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const std::string& name() const override { return name_; }
  Estimates estimates() const override {  // of the last run (a symbolic shape's size is its values')
    const auto bytes = static_cast<int64_t>(count_) * dtype_.itemsize();
    return {0, 2 * bytes, 2 * bytes};
  }

 private:
  Shape bound_shape(const std::vector<int64_t>& values) const {
    if (vars_.empty()) return shape_;
    if (values.size() != vars_.size())
      throw InternalError(tinyt::detail::cat(name_, ": ", values.size(), " variable value(s) for ", vars_.size(), " variable(s)"));
    std::unordered_map<const UOpNode*, UOp> map;
    for (size_t i = 0; i < vars_.size(); ++i) map.emplace(vars_[i].get(), vars_[i].bind(values[i]));
    std::vector<sint> dims;
    for (const sint& d : shape_) dims.push_back(d.is_int() ? d : sint(sint(substitute(d.unbound(), map)).value()));
    return Shape(dims);
  }
  // Every rank reduces the same shape, dtype and op: the largest and the smallest of each across
  // the ranks (one allreduce of max over each and its negation) must be equal.
  void agree(dist::Communicator& world, const Shape& shape) const {
    uint64_t shape_hash = 1469598103934665603ull;  // FNV-1a over the dims
    for (const sint& d : shape) shape_hash = (shape_hash ^ static_cast<uint64_t>(d.as_int())) * 1099511628211ull;
    const int64_t mine[] = {shape.numel().as_int(), static_cast<int64_t>(dtype_.scalar_type()), static_cast<int64_t>(op_),
                            static_cast<int64_t>(shape_hash >> 2)};
    int64_t both[8], seen[8];
    for (size_t i = 0; i < 4; ++i) both[2 * i] = mine[i], both[2 * i + 1] = -mine[i];
    try {
      world.allreduce(both, seen, 8, dtypes::int64, dist::ReduceOp::max);
    } catch (const DeviceError& e) {
      throw DeviceError(tinyt::detail::cat(name_, ": checking that every rank reduces the same: ", e.what()));
    }
    for (size_t i = 0; i < 4; ++i)
      if (seen[2 * i] != -seen[2 * i + 1])
        throw ShapeError(tinyt::detail::cat("allreduce: the ranks' tensors differ: rank ", world.rank(), " of ", world.size(),
                                            " reduces ", shape, " ", dtype_.name(), " (", dist::to_string(op_),
                                            "), another rank another shape, dtype or op (", -seen[1], " to ", seen[0],
                                            " elements across the ranks)"));
  }
  // One NCCL communicator per GPU, made at its first allreduce (every rank makes its own then).
  static backend::NcclCommunicator& nccl_for(dist::Communicator& world, backend::CudaDevice& gpu) {
    static std::mutex mu;
    static auto* made = new std::map<std::string, std::unique_ptr<backend::NcclCommunicator>>;  // never destroyed
    std::lock_guard lock(mu);
    auto& comm = (*made)[gpu.name()];
    if (!comm) comm = std::make_unique<backend::NcclCommunicator>(world, gpu);
    return *comm;
  }

  Shape shape_;
  DType dtype_;
  dist::ReduceOp op_;
  std::string name_;
  std::vector<UOp> vars_;  // the DEFINE_VARs of shape_
  size_t count_ = 0;       // the elements the last run reduced
};

}  // namespace engine
}  // namespace tinyt::inline v0
