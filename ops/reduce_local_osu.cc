// ReduceLocal timed with the OSU method (README, "Performance"), exactly as
// tools/peers/mpi_coll_bench.c and ops/peers/mpi_reduce_local.c time
// MPI_Reduce_local: `in[i] = i % 7`, `inout` zeroed once, each call timed alone with a
// monotonic clock, 1000 timed calls after 100 warm-up ones up to 8 KiB and 100 after
// 10 above. Prints `zcoll,reduce_local,<dtype>,<op>,<bytes>,<usec>` rows.
//
//   bazel run -c opt //ops:reduce_local_osu -- --dtype=float --op=sum --min=8 --max=67108864
//
// ops/compare_reduce_local.sh runs it next to the peers and prints the ratios.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/datatype.h"
#include "core/reduce_op.h"
#include "ops/reduce.h"

namespace zcoll {
namespace {

int Iterations(size_t bytes) { return bytes <= 8192 ? 1000 : 100; }

// in[i] = i % 7 in the element type (the peers' pattern), for the types compared.
void FillPattern(DataType type, void* data, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const int value = static_cast<int>(i % 7);
    switch (type) {
      case DataType::kFloat:
        static_cast<float*>(data)[i] = static_cast<float>(value);
        break;
      case DataType::kDouble:
        static_cast<double*>(data)[i] = value;
        break;
      case DataType::kInt32:
        static_cast<int32_t*>(data)[i] = value;
        break;
      default:
        std::memset(static_cast<char*>(data) + i * DataTypeSize(type), 0, DataTypeSize(type));
    }
  }
}

double TimeReduceLocal(PredefinedOp op, DataType type, size_t bytes) {
  const size_t count = std::max<size_t>(1, bytes / DataTypeSize(type));
  std::vector<unsigned char> in(count * DataTypeSize(type)), inout(count * DataTypeSize(type));
  FillPattern(type, in.data(), count);
  const int iterations = Iterations(bytes), warm_up = iterations / 10;
  double total_seconds = 0;
  for (int i = 0; i < warm_up + iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = ReduceLocal(op, type, in.data(), inout.data(), count);
    const auto stop = std::chrono::steady_clock::now();
    if (!status.ok()) {
      std::fprintf(stderr, "reduce_local_osu: %s\n", status.ToString().c_str());
      std::exit(1);
    }
    if (i >= warm_up) total_seconds += std::chrono::duration<double>(stop - start).count();
  }
  return total_seconds / iterations * 1e6;
}

int Main(int argc, char** argv) {
  std::string dtype_name = "float", op_name = "sum";
  size_t min_bytes = 8, max_bytes = size_t{1} << 24;
  for (int i = 1; i < argc; ++i) {
    const std::vector<std::string> parts = absl::StrSplit(argv[i], absl::MaxSplits('=', 1));
    const std::string value = parts.size() > 1 ? parts[1] : "";
    bool ok = parts.size() == 2;
    if (parts[0] == "--dtype") {
      dtype_name = value;
    } else if (parts[0] == "--op") {
      op_name = value;
    } else if (parts[0] == "--min") {
      ok = ok && absl::SimpleAtoi(value, &min_bytes);
    } else if (parts[0] == "--max") {
      ok = ok && absl::SimpleAtoi(value, &max_bytes);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "reduce_local_osu: bad argument '%s'\nusage: reduce_local_osu [--dtype=float] "
                   "[--op=sum] [--min=8] [--max=16777216]\n",
                   argv[i]);
      return 2;
    }
  }
  const absl::StatusOr<DataType> type = ParseDataType(dtype_name);
  const absl::StatusOr<PredefinedOp> op = ParsePredefinedOp(op_name);
  if (!type.ok() || !op.ok()) {
    std::fprintf(stderr, "reduce_local_osu: %s\n",
                 (!type.ok() ? type.status() : op.status()).ToString().c_str());
    return 2;
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    std::printf("zcoll,reduce_local,%s,%s,%zu,%.3f\n", dtype_name.c_str(), op_name.c_str(), bytes,
                TimeReduceLocal(*op, *type, bytes));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace zcoll

int main(int argc, char** argv) { return zcoll::Main(argc, argv); }
