// Processes that compute together: the communicator of the processes a launcher started (mpirun),
// or of this process alone. `Tensor::allreduce(op)` reduces a tensor across them, as an item of
// the schedule (TinyJit replays it with the step's kernels). The backends are existing engines
// opened at first use: MPI (backend/mpi.hpp) between processes, NCCL (backend/nccl.hpp) between
// GPUs.
#pragma once

#include <cstddef>
#include <string>

#include "dtype.hpp"

namespace tinyt::inline v0 {
namespace dist {

/// How an allreduce combines the ranks' values, elementwise.
enum class ReduceOp { sum, prod, max, min };

/// "sum", "prod", "max", "min".
constexpr const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

/// A group of processes (ranks) that reduce together. Every rank must make the same calls in the
/// same order; a call that the others do not reach within COMM_TIMEOUT seconds (default 300) is a
/// DeviceError on the ranks waiting, not a hang.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// This process's rank, 0 to size() - 1.
  virtual int rank() const = 0;
  /// How many ranks there are.
  virtual int size() const = 0;
  /// What carries it: "MPI (Open MPI v4.1.4 ...)", "this process alone".
  virtual const std::string& name() const = 0;
  /// Every rank's `count` elements of `dtype` at `send` combined by `op` into `recv`, on every
  /// rank (host memory; `send` may be `recv`).
  virtual void allreduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op) = 0;
  /// Rank `root`'s `bytes` at `data` into `data` on every rank.
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  /// Returns once every rank has called it.
  virtual void barrier() = 0;
};

/// The ranks the launcher started, from its environment (mpirun's OMPI_COMM_WORLD_SIZE: MPI,
/// opened at first use), else this process alone (rank 0 of 1).
Communicator& world();

namespace detail {
/// The number of ranks the launcher's environment names (OMPI_COMM_WORLD_SIZE), 0 where there is
/// none; a DeviceError where the variable is there but mpirun did not start this process.
int launched_size();
}  // namespace detail

}  // namespace dist
}  // namespace tinyt::inline v0
