// MPI between processes, opened at run time: Open MPI's libmpi (Debian's libopenmpi3; run with
// mpirun), with nothing to link and no mpi.h. MPI's C API names its handles (MPI_COMM_WORLD,
// MPI_FLOAT, MPI_SUM) by macros whose values are the implementation's: Open MPI's are the
// addresses of its predefined objects (ompi_mpi_comm_world, ompi_mpi_float, ompi_mpi_op_sum),
// which dlsym finds. (MPICH's are integer constants, another ABI: not supported.)
//
// Every collective is the non-blocking one (MPI_Iallreduce, ...) waited for with MPI_Test until
// COMM_TIMEOUT: a rank that died or hangs is a DeviceError on the others, not a wait forever.
#pragma once

#include <sched.h>

#include <chrono>
#include <climits>
#include <mutex>
#include <thread>

#include "../dist.hpp"
#include "../helpers.hpp"
#include "dlopen.hpp"

namespace tinyt::inline v0 {
namespace backend {

/// The MPI types this backend uses, as Open MPI defines them: handles are pointers.
namespace mpi_c {
using MPI_Comm = void*;
using MPI_Datatype = void*;
using MPI_Op = void*;
using MPI_Request = void*;
using MPI_Errhandler = void*;
inline constexpr int MPI_SUCCESS = 0, MPI_THREAD_SERIALIZED = 2, MPI_MAX_LIBRARY_VERSION_STRING = 256,
                     MPI_MAX_ERROR_STRING = 256;
}  // namespace mpi_c

// clang-format off
/// Every MPI function used (all MPI 3.0).
#define TINYT_MPI_API(X)                                                                            \
  X(MPI_Initialized, int(int*))                                                                     \
  X(MPI_Finalized, int(int*))                                                                       \
  X(MPI_Init_thread, int(int*, char***, int, int*))                                                 \
  X(MPI_Finalize, int())                                                                            \
  X(MPI_Get_library_version, int(char*, int*))                                                      \
  X(MPI_Error_string, int(int, char*, int*))                                                        \
  X(MPI_Comm_rank, int(MPI_Comm, int*))                                                             \
  X(MPI_Comm_size, int(MPI_Comm, int*))                                                             \
  X(MPI_Comm_set_errhandler, int(MPI_Comm, MPI_Errhandler))                                         \
  X(MPI_Iallreduce, int(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Request*))     \
  X(MPI_Ibcast, int(void*, int, MPI_Datatype, int, MPI_Comm, MPI_Request*))                         \
  X(MPI_Ibarrier, int(MPI_Comm, MPI_Request*))                                                      \
  X(MPI_Test, int(MPI_Request*, int*, void*))

/// Open MPI's predefined objects the handle macros name: X(field, symbol).
#define TINYT_MPI_OBJECTS(X)                                                                        \
  X(comm_world, ompi_mpi_comm_world) X(errors_return, ompi_mpi_errors_return)                       \
  X(op_sum, ompi_mpi_op_sum) X(op_prod, ompi_mpi_op_prod) X(op_max, ompi_mpi_op_max)                \
  X(op_min, ompi_mpi_op_min) X(op_lor, ompi_mpi_op_lor) X(op_land, ompi_mpi_op_land)                \
  X(type_byte, ompi_mpi_byte) X(type_float, ompi_mpi_float) X(type_double, ompi_mpi_double)         \
  X(type_int8, ompi_mpi_int8_t) X(type_uint8, ompi_mpi_uint8_t) X(type_int16, ompi_mpi_int16_t)     \
  X(type_uint16, ompi_mpi_uint16_t) X(type_int32, ompi_mpi_int32_t)                                 \
  X(type_uint32, ompi_mpi_uint32_t) X(type_int64, ompi_mpi_int64_t)                                 \
  X(type_uint64, ompi_mpi_uint64_t) X(type_bool, ompi_mpi_c_bool)
// clang-format on

namespace mpi_c {
/// Open MPI, opened, with the table's functions and objects.
struct Mpi {
  Library lib;
#define TINYT_MPI_FIELD(name, ...) std::add_pointer_t<__VA_ARGS__> name = nullptr;
  TINYT_MPI_API(TINYT_MPI_FIELD)
#undef TINYT_MPI_FIELD
#define TINYT_MPI_OBJECT_FIELD(field, name) void* field = nullptr;
  TINYT_MPI_OBJECTS(TINYT_MPI_OBJECT_FIELD)
#undef TINYT_MPI_OBJECT_FIELD

  // RTLD_GLOBAL: Open MPI's components (dlopen'ed by libmpi) resolve their symbols against it
  explicit Mpi(const std::vector<std::string>& candidates = {"libmpi.so.40", "libmpi.so"})
      : lib(open(candidates)) {
#define TINYT_MPI_BIND(name, ...) name = lib.symbol<__VA_ARGS__>(#name);
    TINYT_MPI_API(TINYT_MPI_BIND)
#undef TINYT_MPI_BIND
#define TINYT_MPI_OBJECT_BIND(field, name) field = lib.symbol<char>(#name);
    TINYT_MPI_OBJECTS(TINYT_MPI_OBJECT_BIND)
#undef TINYT_MPI_OBJECT_BIND
  }
  /// "MPI_ERR_TRUNCATE: message truncated (error 15)".
  std::string error(int code) const {
    char text[mpi_c::MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    if (MPI_Error_string(code, text, &length) != mpi_c::MPI_SUCCESS) return detail::cat("MPI error ", code);
    return detail::cat(std::string(text, static_cast<size_t>(length)), " (error ", code, ")");
  }

 private:
  static Library open(const std::vector<std::string>& candidates) {
    try {
      return Library::open_first(candidates, RTLD_NOW | RTLD_GLOBAL);
    } catch (const DeviceError& e) {
      throw DeviceError(detail::cat("tinyt: MPI needs Open MPI's libmpi (Debian: apt-get install libopenmpi3 openmpi-bin): ",
                                    std::string_view(e.what()).substr(7)));
    }
  }
};
}  // namespace mpi_c
using mpi_c::Mpi;

/// The ranks of mpirun's MPI_COMM_WORLD. MPI is initialized by the first one made (unless the
/// program did it) and finalized at exit.
class MpiCommunicator final : public dist::Communicator {
 public:
  MpiCommunicator() : mpi_(new Mpi()) {
    int initialized = 0;
    check(mpi_->MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) {
      int provided = 0;
      check(mpi_->MPI_Init_thread(nullptr, nullptr, mpi_c::MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      std::atexit(finalize_at_exit);
      finalizer() = mpi_;
    }
    // errors are returned (and thrown), not fatal
    check(mpi_->MPI_Comm_set_errhandler(mpi_->comm_world, mpi_->errors_return), "MPI_Comm_set_errhandler");
    check(mpi_->MPI_Comm_rank(mpi_->comm_world, &rank_), "MPI_Comm_rank");
    check(mpi_->MPI_Comm_size(mpi_->comm_world, &size_), "MPI_Comm_size");
    char version[mpi_c::MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    check(mpi_->MPI_Get_library_version(version, &length), "MPI_Get_library_version");
    std::string text(version, static_cast<size_t>(length));
    name_ = detail::cat("MPI (", text.substr(0, text.find_first_of(",\n")), ")");
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return name_; }

  void allreduce(const void* send, void* recv, size_t count, DType dtype, dist::ReduceOp op) override {
    const auto [type, mpi_op] = type_and_op(dtype, op);
    std::lock_guard lock(mu_);  // MPI_THREAD_SERIALIZED: one call at a time
    const auto size = static_cast<size_t>(dtype.itemsize());
    // in pieces MPI's int counts can hold (once with none: every rank takes part)
    size_t done = 0;
    do {
      const size_t n = std::min<size_t>(count - done, INT_MAX / 2);
      const void* from = send == recv ? in_place() : static_cast<const char*>(send) + done * size;
      mpi_c::MPI_Request request = nullptr;
      check(mpi_->MPI_Iallreduce(from, static_cast<char*>(recv) + done * size, static_cast<int>(n), type, mpi_op,
                                 mpi_->comm_world, &request),
            "MPI_Iallreduce");
      wait(request, detail::cat("allreduce of ", count, " ", dtype.name(), " (", to_string(op), ")"));
      done += n;
    } while (done < count);
  }
  void broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) throw DeviceError(detail::cat("broadcast: root ", root, " of ", size_, " ranks"));
    std::lock_guard lock(mu_);
    for (size_t done = 0; done < bytes;) {
      const size_t n = std::min<size_t>(bytes - done, INT_MAX / 2);
      mpi_c::MPI_Request request = nullptr;
      check(mpi_->MPI_Ibcast(static_cast<char*>(data) + done, static_cast<int>(n), mpi_->type_byte, root, mpi_->comm_world, &request),
            "MPI_Ibcast");
      wait(request, detail::cat("broadcast of ", bytes, " bytes from rank ", root));
      done += n;
    }
  }
  void barrier() override {
    std::lock_guard lock(mu_);
    mpi_c::MPI_Request request = nullptr;
    check(mpi_->MPI_Ibarrier(mpi_->comm_world, &request), "MPI_Ibarrier");
    wait(request, "barrier");
  }

 private:
  // MPI_IN_PLACE is (void*)1 in Open MPI's mpi.h
  static const void* in_place() { return reinterpret_cast<const void*>(1); }
  static Mpi*& finalizer() {
    static Mpi* mpi = nullptr;
    return mpi;
  }
  static void finalize_at_exit() {
    Mpi* mpi = finalizer();
    int finalized = 1;
    if (mpi && mpi->MPI_Finalized(&finalized) == mpi_c::MPI_SUCCESS && !finalized) mpi->MPI_Finalize();
  }
  void check(int code, const char* what) const {
    if (code != mpi_c::MPI_SUCCESS) throw DeviceError(detail::cat(what, " failed on rank ", rank_, ": ", mpi_->error(code)));
  }
  // Polls until the request completes: spinning for the first 50 microseconds (a local allreduce
  // takes a few), then sleeping between tests; COMM_TIMEOUT seconds at most.
  void wait(mpi_c::MPI_Request& request, const std::string& what) const {
    const double timeout = static_cast<double>(getenv_int("COMM_TIMEOUT", 300));
    const auto start = std::chrono::steady_clock::now();
    for (int flag = 0;;) {
      check(mpi_->MPI_Test(&request, &flag, nullptr), "MPI_Test");
      if (flag) return;
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited > timeout)
        throw DeviceError(detail::cat(what, ": rank ", rank_, " of ", size_, " waited ", timeout,
                                      " s (COMM_TIMEOUT) for the other ranks; one of them died, hangs, or never made this call"));
      if (waited > 50e-6) std::this_thread::sleep_for(std::chrono::microseconds(20));
      else sched_yield();
    }
  }
  std::pair<mpi_c::MPI_Datatype, mpi_c::MPI_Op> type_and_op(DType dtype, dist::ReduceOp op) const {
    using dist::ReduceOp;
    if (dtype == dtypes::bool_) {  // a bool's sum and max are an or, its product and min an and
      const bool any = op == ReduceOp::sum || op == ReduceOp::max;
      return {mpi_->type_bool, any ? mpi_->op_lor : mpi_->op_land};
    }
    void* type = nullptr;
    switch (dtype.scalar_type()) {
      case ScalarType::float32: type = mpi_->type_float; break;
      case ScalarType::float64: type = mpi_->type_double; break;
      case ScalarType::int8: type = mpi_->type_int8; break;
      case ScalarType::uint8: type = mpi_->type_uint8; break;
      case ScalarType::int16: type = mpi_->type_int16; break;
      case ScalarType::uint16: type = mpi_->type_uint16; break;
      case ScalarType::int32: type = mpi_->type_int32; break;
      case ScalarType::uint32: type = mpi_->type_uint32; break;
      case ScalarType::int64: type = mpi_->type_int64; break;
      case ScalarType::uint64: type = mpi_->type_uint64; break;
      default:
        throw DTypeError(detail::cat("allreduce: MPI has no ", dtype.name(), " (reduce float32 or float64, ints, or bools)"));
    }
    void* const ops[] = {mpi_->op_sum, mpi_->op_prod, mpi_->op_max, mpi_->op_min};
    return {type, ops[static_cast<int>(op)]};
  }

  Mpi* mpi_;  // never freed: MPI is finalized at exit, after every communicator's last use
  int rank_ = 0, size_ = 1;
  std::string name_;
  mutable std::mutex mu_;
};

}  // namespace backend
}  // namespace tinyt::inline v0
