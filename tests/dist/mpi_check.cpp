// Checks run by `mpirun -np 2` (tests/dist/run_mpi.py): tinyt's MPI communicator and
// Tensor::allreduce across two processes. Each mode prints "rank R: ok ..." on success and exits
// 0; a failed check prints what differs and exits 1.
//
//   mpi_check allreduce   values of every dtype and op against what each rank computes itself
//   mpi_check jit         an allreduce inside a TinyJit step, replayed with new inputs; of a
//                         symbolic shape, plain and replayed
//   mpi_check train       data-parallel training (the global batch split across the ranks)
//                         equals training on the whole batch in one process
//   mpi_check mismatch    ranks reducing different shapes: a ShapeError on every rank
//   mpi_check stuck       rank 1 never reduces: rank 0 gets a DeviceError after COMM_TIMEOUT
//                         seconds (from the environment), within a few seconds more
//   mpi_check dies        rank 1 fails (exit status 3) before reducing: mpirun ends the job and
//                         reports rank 1's status; rank 0 prints nothing
//   mpi_check leaves      rank 1 returns (finalizing MPI) before reducing: rank 0 gets a
//                         DeviceError after COMM_TIMEOUT, as for stuck
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <tinyt.hpp>

using namespace tinyt;

namespace {
int failures = 0;
int my_rank = 0;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      ++failures;                                                                                  \
      std::printf("rank %d: FAILED %s:%d: %s %s\n", my_rank, __FILE__, __LINE__, #cond,            \
                  detail::cat(__VA_ARGS__).c_str());                                               \
    }                                                                                              \
  } while (0)

// rank r's i-th value: exact in every dtype checked (small integers)
double value(int rank, size_t i) { return static_cast<double>((static_cast<int>(i) * 7 + rank * 3) % 11) - 3; }

template <class T> void check_dtype(const std::string& device) {
  dist::Communicator& world = dist::world();
  const size_t n = 37;
  std::vector<T> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<T>(value(world.rank(), i) + (std::is_unsigned_v<T> ? 3 : 0));
  const Tensor t = Tensor::from_vector(mine, {n}, device);
  for (dist::ReduceOp op : {dist::ReduceOp::sum, dist::ReduceOp::prod, dist::ReduceOp::max, dist::ReduceOp::min}) {
    const std::vector<T> got = t.allreduce(op).template to_vector<T>();
    for (size_t i = 0; i < n; ++i) {
      T want = 0;
      for (int r = 0; r < world.size(); ++r) {
        const T v = static_cast<T>(value(r, i) + (std::is_unsigned_v<T> ? 3 : 0));
        if (r == 0) want = v;
        else if (op == dist::ReduceOp::sum) want = static_cast<T>(want + v);
        else if (op == dist::ReduceOp::prod) want = static_cast<T>(want * v);
        else if (op == dist::ReduceOp::max) want = std::max(want, v);
        else want = std::min(want, v);
      }
      EXPECT(got[i] == want, dtype_of<T>().name(), " ", dist::to_string(op), " on ", device, " element ", i, ": got ",
             +got[i], ", want ", +want);
    }
  }
}

void check_allreduce() {
  dist::Communicator& world = dist::world();
  EXPECT(world.size() == 2, "size ", world.size());
  EXPECT(world.rank() == std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")), "rank ", world.rank());
  EXPECT(world.name().rfind("MPI (", 0) == 0, world.name());
  for (const std::string device : {"CPU", "CPU:1", "CL"}) {
    if (device == "CL" && std::getenv("MPI_CHECK_NO_CL")) continue;
    check_dtype<float>(device);
    check_dtype<double>(device);
    check_dtype<int32_t>(device);
    check_dtype<int64_t>(device);
    check_dtype<uint8_t>(device);
  }
  // fused with the kernels around it: (x * 2).allreduce() + 1, and a sharded tensor's parts
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}).mul(static_cast<float>(world.rank() + 1));
  const std::vector<float> y = x.mul(2).allreduce().add(1).to_vector<float>();
  EXPECT((y == std::vector<float>{7, 13, 19, 25}), y[0], " ", y[1], " ", y[2], " ", y[3]);
  const std::vector<float> s = x.shard({"CPU", "CPU:1"}, 0).allreduce(dist::ReduceOp::max).to_vector<float>();
  EXPECT((s == std::vector<float>{2, 4, 6, 8}), s[0], " ", s[1], " ", s[2], " ", s[3]);
  // the communicator itself: broadcast and barrier
  int64_t from_root = world.rank() == 0 ? 12345 : -1;
  world.broadcast(&from_root, sizeof from_root, 0);
  EXPECT(from_root == 12345, from_root);
  world.barrier();
}

void check_jit() {
  const int rank = dist::world().rank();
  TinyJit step([](Tensor x) { return x.mul(2).allreduce().relu(); });
  for (int i = 0; i < 5; ++i) {
    std::vector<float> v(8);
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(i + rank) - static_cast<float>(j);
    const std::vector<float> got = step(Tensor::from_vector(v, {8})).to_vector<float>();
    for (size_t j = 0; j < v.size(); ++j) {
      const float want = std::max(0.f, 2 * (static_cast<float>(i) - static_cast<float>(j)) + 2 * (static_cast<float>(i + 1) - static_cast<float>(j)));
      EXPECT(got[j] == want, "call ", i, " element ", j, ": got ", got[j], ", want ", want);
    }
  }
  // a symbolic shape: the ranks reduce (and agree on) the bound rows only, plain and replayed
  const UOp rows = Variable("rows", 1, 6);
  std::vector<float> v(6 * 2);
  for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(rank + 1) * static_cast<float>(j);
  const Tensor table = Tensor::from_vector(v, {6, 2}).realize();
  TinyJit prefix([&](const UOp& k) { return table[{Slice(0, k)}].allreduce().add(0); });
  for (int64_t k : {2, 5, 3, 6, 1}) {
    const std::vector<float> plain = table[{Slice(0, rows.bind(k))}].allreduce().to_vector<float>();
    const std::vector<float> jitted = prefix(rows.bind(k)).to_vector<float>();
    EXPECT(plain.size() == static_cast<size_t>(2 * k) && jitted.size() == plain.size(), "rows ", k, ": ", plain.size(), " and ",
           jitted.size(), " elements");
    for (size_t j = 0; j < plain.size() && j < jitted.size(); ++j) {
      const float want = 3.f * static_cast<float>(j);  // (1 + 2) j: ranks 0 and 1
      EXPECT(plain[j] == want && jitted[j] == want, "rows ", k, " element ", j, ": ", plain[j], " and ", jitted[j], ", want ", want);
    }
  }
}

// A small MLP trained with Adam for 3 steps on a global batch of 16: split across the ranks
// (each 8 samples, gradients averaged by allreduce), and whole in this process.
std::vector<std::vector<float>> train(bool parallel) {
  dist::Communicator& world = dist::world();
  const int64_t batch = 16, in = 12, hidden = 16, classes = 4, local = parallel ? batch / world.size() : batch;
  Tensor::manual_seed(7);  // the same weights and batches on every rank
  nn::Linear l1{in, hidden}, l2{hidden, classes};
  const std::vector<Tensor> params{l1.weight, l1.bias, l2.weight, l2.bias};
  nn::optim::Adam opt(params, 0.01);
  for (int step = 0; step < 3; ++step) {
    const Tensor x = Tensor::randn({batch, in}), y = Tensor::randint({batch}, 0, classes).cast(dtypes::int32);
    const int64_t first = parallel ? world.rank() * local : 0;
    const Tensor xs = x[{Slice(first, first + local)}], ys = y[{Slice(first, first + local)}];
    Tensor::Train on;
    opt.zero_grad();
    Tensor loss = l2(l1(xs).relu()).sparse_categorical_crossentropy(ys);
    loss.backward();
    if (parallel)
      for (Tensor p : opt.params()) p.set_grad(p.grad().allreduce().div(static_cast<float>(world.size())));
    opt.step();
  }
  std::vector<std::vector<float>> out;
  for (const Tensor& p : params) out.push_back(p.to_vector<float>());
  return out;
}

void check_train() {
  const auto parallel = train(true), whole = train(false);
  for (size_t p = 0; p < whole.size(); ++p)
    for (size_t i = 0; i < whole[p].size(); ++i)
      EXPECT(std::fabs(parallel[p][i] - whole[p][i]) <= 1e-5f + 1e-4f * std::fabs(whole[p][i]), "param ", p, " element ", i,
             ": data-parallel ", parallel[p][i], ", one process ", whole[p][i]);
  // every rank holds the same weights, bit for bit
  for (const auto& w : parallel) {
    std::vector<float> root = w;
    dist::world().broadcast(root.data(), root.size() * sizeof(float), 0);
    EXPECT(root == w, "weights differ from rank 0's");
  }
}

void check_mismatch() {
  const int rank = dist::world().rank();
  const Tensor t = rank == 0 ? Tensor::ones({3, 4}) : Tensor::ones({2, 6});
  try {
    t.allreduce().realize();
    EXPECT(false, "no error for shapes (3, 4) and (2, 6)");
  } catch (const ShapeError& e) {
    const std::string message = e.what();
    EXPECT(message.find(rank == 0 ? "(3, 4)" : "(2, 6)") != std::string::npos, message);
    EXPECT(message.find("differ") != std::string::npos, message);
    std::printf("rank %d: error as expected: %s\n", rank, e.what());
  }
}

// Rank 0's allreduce while rank 1 never reduces: it must end in a DeviceError that names
// COMM_TIMEOUT, no sooner than COMM_TIMEOUT seconds and not much later (a wait that ignored the
// limit, or an error that came at once for another reason, is a failure). Prints "rank 0: ok
// <mode>" only then; exits without MPI_Finalize, which rank 1 never reaches.
void expect_timeout(const char* mode) {
  const char* limit_text = std::getenv("COMM_TIMEOUT");
  const double limit = limit_text ? std::atof(limit_text) : 0;
  EXPECT(limit > 0, "set COMM_TIMEOUT for mode ", mode);
  // the slack: rank 0's first kernels compile before it reduces, and the wait polls
  const double slack = 10;
  bool timed_out = false;
  const auto start = std::chrono::steady_clock::now();
  try {
    Tensor::ones({4}).allreduce().realize();
    EXPECT(false, "no error while rank 1 never reduced");
  } catch (const DeviceError& e) {
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    timed_out = true;
    EXPECT(message.find("COMM_TIMEOUT") != std::string::npos, message);
    EXPECT(waited >= limit && waited <= limit + slack, "the error came after ", waited, " s, COMM_TIMEOUT is ", limit,
           " s");
    std::printf("rank 0: error after %.1f s (COMM_TIMEOUT %.0f s): %s\n", waited, limit, e.what());
  }
  EXPECT(timed_out, "no DeviceError");
  if (failures) std::printf("rank 0: FAILED %s (%d checks)\n", mode, failures);
  else std::printf("rank 0: ok %s\n", mode);
  std::fflush(stdout);
  _exit(failures ? 1 : 0);
}

void check_stuck() {
  if (dist::world().rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(60));  // mpirun ends it when rank 0 is done
    return;
  }
  expect_timeout("stuck");
}

// mpirun must end the job when rank 1 exits with 3; run_mpi.py checks that it reports rank 1's
// status and that rank 0 printed nothing of its own (no result, no timeout).
void check_dies() {
  if (dist::world().rank() == 1) _exit(3);
  Tensor::ones({4}).allreduce().realize();
  std::printf("rank 0: FAILED dies: the allreduce returned although rank 1 died\n");
  std::fflush(stdout);
  _exit(1);
}

void check_leaves() {
  if (dist::world().rank() == 1) return;  // finalizes MPI at exit
  expect_timeout("leaves");
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    my_rank = dist::world().rank();
    if (mode == "allreduce") check_allreduce();
    else if (mode == "jit") check_jit();
    else if (mode == "train") check_train();
    else if (mode == "mismatch") check_mismatch();
    else if (mode == "stuck") check_stuck();
    else if (mode == "dies") check_dies();
    else if (mode == "leaves") check_leaves();
    else {
      std::fprintf(stderr, "usage: mpi_check allreduce|jit|train|mismatch|stuck|dies|leaves\n");
      return 2;
    }
  } catch (const Error& e) {
    std::printf("rank %d: FAILED with %s\n", my_rank, e.what());
    return 1;
  }
  if (!failures) std::printf("rank %d: ok %s\n", my_rank, mode.c_str());
  return failures ? 1 : 0;
}
