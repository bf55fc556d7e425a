// Definitions of dist.hpp, compiled with the engine (config.hpp).
#pragma once

#include <climits>
#include <cstdlib>
#include <cstring>

#include "backend/mpi.hpp"
#include "dist.hpp"

namespace tinyt::inline v0 {
namespace dist {

namespace detail {
/// This process alone: rank 0 of 1, every collective a copy.
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }
  void allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp) override {
    if (send != recv && count) std::memmove(recv, send, count * static_cast<size_t>(dtype.itemsize()));
  }
  void broadcast(void*, size_t, int root) override {
    if (root != 0) throw DeviceError(tinyt::detail::cat("broadcast: root ", root, " of 1 rank (this process alone)"));
  }
  void barrier() override {}

 private:
  std::string name_ = "this process alone";
};
}  // namespace detail

TINYT_INLINE int detail::launched_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size || !*size) return 0;
  char* end = nullptr;
  const long n = std::strtol(size, &end, 10);
  if (*end != '\0' || n < 1 || n > INT_MAX)
    throw DeviceError(tinyt::detail::cat("dist::world: OMPI_COMM_WORLD_SIZE='", size, "' is not a number of ranks"));
  // mpirun (Open MPI 4 and 5 alike) starts each rank with its PMIx server's address; a copied
  // OMPI_COMM_WORLD_SIZE without it would make MPI start a world of this process alone
  if (!std::getenv("PMIX_RANK"))
    throw DeviceError(tinyt::detail::cat("dist::world: OMPI_COMM_WORLD_SIZE=", size, " but the ranks were not started by mpirun ",
                                         "(no PMIX_RANK); run them with mpirun -np ", size, ", or unset it for one process"));
  return static_cast<int>(n);
}

TINYT_INLINE Communicator& world() {
  static Communicator* const world = []() -> Communicator* {
    if (const int size = detail::launched_size()) {
      auto mpi = std::make_unique<backend::MpiCommunicator>();
      if (mpi->size() != size)
        throw DeviceError(tinyt::detail::cat("dist::world: mpirun started ", size, " ranks but MPI joined ", mpi->size(),
                                             ": the ranks were not started by this mpirun together"));
      return mpi.release();
    }
    return new detail::SelfCommunicator();
  }();
  return *world;
}

}  // namespace dist
}  // namespace tinyt::inline v0
