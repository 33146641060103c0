// The two forms of every collective. Typed: spans, the datatype taken from T and the
// lengths checked against what the call reads and writes at this rank. Raw: pointers,
// a count and a DataType, as MPI's C interface (for buffers whose type is known only
// at run time, or memory from Communicator::AllocateBuffer). Also: a user-defined
// non-commutative op, and how a bad argument is reported.
//
//   bazel run //tools:zcoll_run -- -n 3 bazel-bin/examples/typed_and_raw

#include <cstdio>
#include <cstring>
#include <vector>

#include "zcoll/zcoll.h"

int main() {
  absl::StatusOr<zcoll::Communicator> comm = zcoll::Communicator::Create({});
  if (!comm.ok()) {
    std::fprintf(stderr, "Create: %s\n", comm.status().ToString().c_str());
    return 1;
  }
  const int rank = comm->rank(), size = comm->size();
  bool right = true;

  // Typed Allgather: each rank's block of 2 ints; recv holds size blocks.
  const int mine[2] = {rank, rank * 10};
  std::vector<int> all(2 * size);
  absl::Status status = comm->Allgather<int>(mine, absl::MakeSpan(all));
  for (int r = 0; status.ok() && r < size; ++r) right = right && all[2 * r + 1] == r * 10;

  // Raw Allreduce over memory the node's peers can map (zero copy within a node).
  absl::StatusOr<absl::Span<double>> shared = zcoll::Communicator::AllocateBuffer<double>(4);
  if (status.ok()) status = shared.status();
  if (status.ok()) {
    for (double& x : *shared) x = rank;
    status = comm->Allreduce(zcoll::kInPlace, shared->data(), shared->size(),
                             zcoll::DataType::kDouble, zcoll::PredefinedOp::kMax);
    right = right && (*shared)[3] == size - 1;
    (void)zcoll::Communicator::FreeBuffer(shared->data());
  }

  // A user op that is not commutative: "the left operand" (in op inout = in), whose
  // reduction in rank order is rank 0's value; in any other order it would not be.
  // The function gets `in` (the lower ranks' part) and `inout` element by element, on
  // any chunk of the vector.
  absl::StatusOr<zcoll::ReduceOp> first = zcoll::ReduceOp::CreateUser(
      [](const void* in, void* inout, size_t count, zcoll::DataType) {
        std::memcpy(inout, in, count * sizeof(double));
      },
      /*commutative=*/false, "first");
  if (status.ok()) status = first.status();
  const double contribution[3] = {rank * 10.0 + 1, rank * 10.0 + 2, rank * 10.0 + 3};
  double result[3] = {};
  if (status.ok()) status = comm->Allreduce<double>(contribution, absl::MakeSpan(result), *first);
  right = right && result[0] == 1 && result[2] == 3;

  // A bad argument is refused with InvalidArgument naming it and the rank, before
  // anything is sent. In a collective the peers have entered the call too, so the
  // refusal also fails the job (every rank's next call returns Aborted with this
  // cause); shown here on a local reduction, which has no peers: MAX on complex.
  float complex_in[2] = {1, 2}, complex_inout[2] = {3, 4};
  const absl::Status refused = zcoll::ReduceLocal(
      zcoll::PredefinedOp::kMax, zcoll::DataType::kCFloatComplex, complex_in, complex_inout, 1);
  if (rank == 0) std::printf("a bad argument is refused: %s\n", refused.ToString().c_str());
  right = right && refused.code() == absl::StatusCode::kInvalidArgument;
  if (!status.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, status.ToString().c_str());
    return 1;
  }
  std::printf("rank %d: typed, raw and a user op: %s\n", rank, right ? "ok" : "WRONG");
  return right ? 0 : 1;
}
