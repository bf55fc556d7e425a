// NCCL between the GPUs of several processes, opened at run time (the CUDA toolkit's libnccl.so.2),
// with nothing to link and no nccl.h. Its communicator is set up over another one (MPI): rank 0's
// ncclUniqueId is broadcast to the others. Allreduces run on device memory, on the legacy default
// stream every tinyt launch uses, and are waited for by polling until COMM_TIMEOUT: a rank that
// died is a DeviceError (and the NCCL communicator is aborted), not a hang.
#pragma once

#include <chrono>
#include <thread>

#include "../dist.hpp"
#include "cuda.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// NCCL's types and constants (values of nccl.h).
namespace nccl_c {
using ncclResult_t = int;
struct ncclComm;
using ncclComm_t = ncclComm*;
struct ncclUniqueId {
  char internal[128];
};
inline constexpr ncclResult_t ncclSuccess = 0, ncclInProgress = 7;
enum ncclDataType_t : int {
  ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
  ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9
};
enum ncclRedOp_t : int { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 };
}  // namespace nccl_c

// clang-format off
/// Every NCCL function used (all in NCCL 2.4 and later).
#define TINYT_NCCL_API(X)                                                                           \
  X(ncclGetVersion, ncclResult_t(int*))                                                             \
  X(ncclGetErrorString, const char*(ncclResult_t))                                                  \
  X(ncclGetUniqueId, ncclResult_t(ncclUniqueId*))                                                   \
  X(ncclCommInitRank, ncclResult_t(ncclComm_t*, int, ncclUniqueId, int))                            \
  X(ncclCommDestroy, ncclResult_t(ncclComm_t))                                                      \
  X(ncclCommAbort, ncclResult_t(ncclComm_t))                                                        \
  X(ncclCommGetAsyncError, ncclResult_t(ncclComm_t, ncclResult_t*))                                 \
  X(ncclAllReduce, ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,\
                                cuda_c::CUstream))
// clang-format on

namespace nccl_c {
/// NCCL, opened, with the table's functions.
struct Nccl {
  Library lib;
#define TINYT_NCCL_FIELD(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  TINYT_NCCL_API(TINYT_NCCL_FIELD)
#undef TINYT_NCCL_FIELD
  explicit Nccl(Library opened) : lib(std::move(opened)) {
#define TINYT_NCCL_BIND(name, ...) name = lib.symbol<__VA_ARGS__>(#name);
    TINYT_NCCL_API(TINYT_NCCL_BIND)
#undef TINYT_NCCL_BIND
  }
  /// "NCCL 2.28.9".
  std::string version() const {
    int v = 0;
    if (ncclGetVersion(&v) != nccl_c::ncclSuccess) return "NCCL (version unknown)";
    return detail::cat("NCCL ", v / 10000, ".", v / 100 % 100, ".", v % 100);
  }
};
}  // namespace nccl_c
using nccl_c::Nccl;

/// The process-wide NCCL, opened at first use (CUDA_PATH, then the toolkit's and the loader's
/// paths) and never closed.
inline const Nccl& nccl() {
  static const Nccl* loaded = [] {
    std::vector<std::string> candidates;
    if (const char* root = std::getenv("CUDA_PATH"); root && *root)
      candidates = {std::string(root) + "/lib64/libnccl.so.2", std::string(root) + "/lib/libnccl.so.2"};
    candidates.insert(candidates.end(), {"/usr/local/cuda/lib64/libnccl.so.2", "libnccl.so.2"});
    try {
      return new Nccl(Library::open_first(candidates));
    } catch (const DeviceError& e) {
      throw DeviceError(detail::cat("tinyt: an allreduce of GPU memory needs NCCL (libnccl.so.2): ",
                                    std::string_view(e.what()).substr(7)));
    }
  }();
  return *loaded;
}

/// The ranks of `over` (an MPI communicator), one GPU each: `device`, this rank's.
class NcclCommunicator {
 public:
  NcclCommunicator(dist::Communicator& over, CudaDevice& device) : api_(nccl()), device_(device), rank_(over.rank()) {
    nccl_c::ncclUniqueId id{};
    if (over.rank() == 0) check(api_.ncclGetUniqueId(&id), "ncclGetUniqueId");
    over.broadcast(&id, sizeof id, 0);
    device_.make_current();
    check(api_.ncclCommInitRank(&comm_, over.size(), id, over.rank()), "ncclCommInitRank");
    size_ = over.size();
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;
  ~NcclCommunicator() {
    if (comm_) api_.ncclCommDestroy(comm_);
  }

  /// Every rank's `count` elements of `dtype` at device memory `send` combined by `op` into `recv`.
  void allreduce(const void* send, void* recv, size_t count, DType dtype, dist::ReduceOp op) {
    device_.make_current();
    check(api_.ncclAllReduce(send, recv, count, type(dtype), static_cast<nccl_c::ncclRedOp_t>(op), comm_, cuda_c::CUstream{}),
          "ncclAllReduce");
    wait(detail::cat("allreduce of ", count, " ", dtype.name(), " (", dist::to_string(op), ")"));
  }

 private:
  void check(nccl_c::ncclResult_t r, const char* what) const {
    if (r != nccl_c::ncclSuccess && r != nccl_c::ncclInProgress)
      throw DeviceError(detail::cat(what, " failed on rank ", rank_, ": ", api_.ncclGetErrorString(r), " (ncclResult ", r, ")"));
  }
  // Polls the stream and NCCL's errors until the allreduce is done, or COMM_TIMEOUT: then the
  // communicator is aborted (its kernels would otherwise wait on the GPU forever).
  void wait(const std::string& what) {
    const double timeout = static_cast<double>(getenv_int("COMM_TIMEOUT", 300));
    const auto start = std::chrono::steady_clock::now();
    while (!device_.idle()) {
      nccl_c::ncclResult_t async = nccl_c::ncclSuccess;
      check(api_.ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      check(async, "ncclAllReduce (asynchronous error)");
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout) {
        api_.ncclCommAbort(std::exchange(comm_, nullptr));
        throw DeviceError(detail::cat(what, ": rank ", rank_, " of ", size_, " waited ", timeout,
                                      " s (COMM_TIMEOUT) for the other ranks; one of them died, hangs, or never made this call"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  static nccl_c::ncclDataType_t type(DType dtype) {
    switch (dtype.scalar_type()) {
      case ScalarType::int8: return nccl_c::ncclInt8;
      case ScalarType::uint8: return nccl_c::ncclUint8;
      case ScalarType::int32: return nccl_c::ncclInt32;
      case ScalarType::uint32: return nccl_c::ncclUint32;
      case ScalarType::int64: return nccl_c::ncclInt64;
      case ScalarType::uint64: return nccl_c::ncclUint64;
      case ScalarType::float16: return nccl_c::ncclFloat16;
      case ScalarType::float32: return nccl_c::ncclFloat32;
      case ScalarType::float64: return nccl_c::ncclFloat64;
      case ScalarType::bfloat16: return nccl_c::ncclBfloat16;
      default: throw DTypeError(detail::cat("allreduce: NCCL has no ", dtype.name()));
    }
  }

  const Nccl& api_;
  CudaDevice& device_;
  nccl_c::ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace backend
}  // namespace tinyt::inline v0
