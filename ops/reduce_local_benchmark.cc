// Throughput of ReduceLocal for every datatype, op and size, next to the memory-bound
// limit of a plain float add over the same buffers.
//
//   bazel run -c opt //ops:reduce_local_benchmark --
//       --benchmark_filter='BM_(ReduceLocal/(float|double|int32)/(sum|max)|StreamAdd)/'
//   (one command line)
//
// Cases: BM_ReduceLocal/<dtype>/<op>/<bytes> (dtype and op named as in core/, bytes
// 8 B .. 32 MiB by powers of 4, and 64 MiB) and BM_StreamAdd/<bytes>. bytes/s counts
// the bytes of one vector, as OSU's reduce_local does. Comparisons with Open MPI and
// MPICH are made by ops/compare_reduce_local.sh, which times every call alone the way
// the peers' benchmark does; this program is for looking across types and ops.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "ops/reduce.h"
#include "ops/stream_add.h"

namespace zcoll {
namespace {

struct FreeDeleter {
  void operator()(void* pointer) const { std::free(pointer); }
};
using AlignedBytes = std::unique_ptr<unsigned char, FreeDeleter>;

// Page-aligned and zero-filled: zero is a normal value for every type (no
// denormals or NaNs that could slow a kernel), and the kernels' speed does not
// depend on the values otherwise.
AlignedBytes Allocate(size_t bytes) {
  const size_t rounded = (bytes + 4095) / 4096 * 4096;
  AlignedBytes buffer(static_cast<unsigned char*>(std::aligned_alloc(4096, rounded)));
  std::memset(buffer.get(), 0, rounded);
  return buffer;
}

std::vector<size_t> Sizes() {
  std::vector<size_t> sizes;
  for (size_t bytes = 8; bytes <= (size_t{32} << 20); bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(size_t{64} << 20);
  return sizes;
}

void ReduceLocalCase(benchmark::State& state, PredefinedOp op, DataType type, size_t bytes) {
  const size_t count = std::max<size_t>(1, bytes / DataTypeSize(type));
  const size_t vector_bytes = count * DataTypeSize(type);
  AlignedBytes in = Allocate(vector_bytes), inout = Allocate(vector_bytes);
  for (auto _ : state) {
    const absl::Status status = ReduceLocal(op, type, in.get(), inout.get(), count);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(inout.get());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * vector_bytes));
  state.SetLabel(std::string(ReduceKernelTarget()));
}

void StreamAddCase(benchmark::State& state, size_t bytes) {
  const size_t count = std::max<size_t>(1, bytes / sizeof(float));
  AlignedBytes a = Allocate(count * sizeof(float)), b = Allocate(count * sizeof(float));
  for (auto _ : state) {
    StreamAdd(reinterpret_cast<float*>(a.get()), reinterpret_cast<const float*>(b.get()), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * count * sizeof(float)));
}

void RegisterAll() {
  for (size_t bytes : Sizes()) {
    benchmark::RegisterBenchmark(absl::StrCat("BM_StreamAdd/", bytes).c_str(), StreamAddCase,
                                 bytes);
  }
  for (DataType type : AllDataTypes()) {
    for (PredefinedOp op : AllPredefinedOps()) {
      if (!IsOpDefinedFor(op, type)) continue;
      for (size_t bytes : Sizes()) {
        const std::string name = absl::StrCat("BM_ReduceLocal/", DataTypeName(type), "/",
                                              PredefinedOpName(op), "/", bytes);
        benchmark::RegisterBenchmark(name.c_str(), ReduceLocalCase, op, type, bytes);
      }
    }
  }
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) {
  zcoll::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
