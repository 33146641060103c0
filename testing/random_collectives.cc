#include "testing/random_collectives.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "collectives/algorithms.h"
#include "ops/half.h"
#include "testing/block_layouts.h"
#include "testing/reference.h"

namespace zcoll::testing {
namespace {

// How inputs are made, and with what a reduction combines them. Every value is small,
// so every association of any of these gives the reference's bits.
struct ValueCase {
  const char* name;
  DataType type;
  ReduceOp op;
  bool scans;  // usable by Scan and Exscan (AVG's divisor is not theirs)
};

const std::vector<ValueCase>& ReductionCases() {
  static const std::vector<ValueCase> cases = {
      {"float_sum", DataType::kFloat, PredefinedOp::kSum, true},
      {"double_max", DataType::kDouble, PredefinedOp::kMax, true},
      {"int32_bxor", DataType::kInt32, PredefinedOp::kBxor, true},
      {"uint8_sum", DataType::kUint8, PredefinedOp::kSum, true},
      {"int64_digits", DataType::kInt64, DigitsInRankOrder(), true},
      {"float_int_minloc", DataType::kFloatInt, PredefinedOp::kMinloc, true},
      {"double_avg", DataType::kDouble, PredefinedOp::kAvg, false},
      {"float16_sum", DataType::kFloat16, PredefinedOp::kSum, true},
      {"bfloat16_min", DataType::kBfloat16, PredefinedOp::kMin, true},
      {"uint64_prod", DataType::kUint64, PredefinedOp::kProd, true},
      {"int16_bor", DataType::kInt16, PredefinedOp::kBor, true},
  };
  return cases;
}

// Data movement: any element size; the bytes are arbitrary.
const std::vector<DataType>& MovedTypes() {
  static const std::vector<DataType> types = {DataType::kUint8, DataType::kInt16, DataType::kFloat,
                                              DataType::kDouble, DataType::kCDoubleComplex};
  return types;
}

constexpr Collective kCollectives[] = {
    Collective::kReduce,        Collective::kAllreduce,  Collective::kReduceScatterBlock,
    Collective::kReduceScatter, Collective::kScatter,    Collective::kScatterv,
    Collective::kBcast,         Collective::kGather,     Collective::kGatherv,
    Collective::kAllgather,     Collective::kAllgatherv, Collective::kAlltoall,
    Collective::kAlltoallv,     Collective::kBarrier,    Collective::kScan,
    Collective::kExscan,
};

template <typename T>
void Put(char* at, T value) {
  std::memcpy(at, &value, sizeof(T));
}

enum class Values {
  kBytes,
  kFloatSum,
  kDoubleSmall,
  kInt32Bits,
  kUint8Bits,
  kInt64Digit,
  kFloatIntTies,
  kFloat16Sum,
  kBfloat16Min,
  kUint64Prod,
  kInt16Bits
};

Values ValuesNamed(absl::string_view name) {
  if (name == "float_sum") return Values::kFloatSum;
  if (name == "double_max" || name == "double_avg") return Values::kDoubleSmall;
  if (name == "int32_bxor") return Values::kInt32Bits;
  if (name == "uint8_sum") return Values::kUint8Bits;
  if (name == "int64_digits") return Values::kInt64Digit;
  if (name == "float_int_minloc") return Values::kFloatIntTies;
  if (name == "float16_sum") return Values::kFloat16Sum;
  if (name == "bfloat16_min") return Values::kBfloat16Min;
  if (name == "uint64_prod") return Values::kUint64Prod;
  if (name == "int16_bor") return Values::kInt16Bits;
  return Values::kBytes;
}

// Rank `rank`'s `elements` inputs of the call with `salt`.
Bytes MakeInput(const char* values, DataType type, int rank, size_t elements, uint64_t salt) {
  const size_t width = DataTypeSize(type);
  Bytes bytes(elements * width);
  uint32_t x = static_cast<uint32_t>(salt * 0x9E3779B97F4A7C15ull >> 32) ^
               (static_cast<uint32_t>(rank) * 0x85EBCA6Bu);
  const Values kind = ValuesNamed(values);
  for (size_t i = 0; i < elements; ++i) {
    x = x * 1664525u + 1013904223u;  // one LCG step per element: cheap at 2^20
    const uint32_t bits = x >> 8;
    const int small = static_cast<int>(bits % 13);  // 0..12
    char* at = bytes.data() + i * width;
    switch (kind) {
      case Values::kBytes:
        for (size_t b = 0; b < width; ++b) at[b] = static_cast<char>(bits >> (b % 3 * 8));
        break;
      case Values::kFloatSum:
        Put(at, static_cast<float>(small - 6));
        break;
      case Values::kDoubleSmall:
        Put(at, static_cast<double>(small * 4));
        break;
      case Values::kInt32Bits:
        Put(at, static_cast<int32_t>(x));
        break;
      case Values::kUint8Bits:
        Put(at, static_cast<uint8_t>(bits));
        break;
      case Values::kInt64Digit:  // one digit: exact up to 18 ranks
        Put(at, static_cast<int64_t>(small % 9 + 1));
        break;
      case Values::kFloatIntTies:  // ties on purpose
        Put(at, FloatInt{static_cast<float>(small % 3), rank});
        break;
      case Values::kFloat16Sum:
        Put(at, FloatToFloat16(static_cast<float>(small - 6)));
        break;
      case Values::kBfloat16Min:
        Put(at, FloatToBfloat(static_cast<float>(small - 6)));
        break;
      case Values::kUint64Prod:
        Put(at, static_cast<uint64_t>(small % 3 + 1));
        break;
      case Values::kInt16Bits:
        Put(at, static_cast<int16_t>(bits));
        break;
    }
  }
  return bytes;
}

RankBytes MakeInputs(const RandomCall& call, int size, size_t elements) {
  RankBytes inputs;
  inputs.reserve(size);
  for (int r = 0; r < size; ++r) {
    inputs.push_back(MakeInput(call.values, call.type, r, elements, call.salt));
  }
  return inputs;
}

size_t Sum(const std::vector<size_t>& counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  return total;
}

// The first differing element of `got` against `expected`, as a sentence; empty when
// they are equal.
std::string Compare(const RandomCall& call, int rank, const Bytes& got, const Bytes& expected) {
  if (got == expected) return "";
  const size_t width = DataTypeSize(call.type);
  if (got.size() != expected.size()) {
    return absl::StrCat("rank ", rank, ": ", call.Describe(), ": the result has ", got.size(),
                        " bytes, the reference ", expected.size());
  }
  size_t at = 0;
  while (got[at] == expected[at]) ++at;
  size_t differing = 0;
  for (size_t i = 0; i < got.size(); i += width) {
    differing += std::memcmp(got.data() + i, expected.data() + i, width) != 0;
  }
  return absl::StrCat("rank ", rank, ": ", call.Describe(), ": element ", at / width,
                      " differs from the reference (", differing, " of ", got.size() / width,
                      " elements differ)");
}

// Runs the blocking form, or the nonblocking one and waits.
template <typename Blocking, typename Nonblocking>
absl::Status Run(const RandomCall& call, Blocking blocking, Nonblocking nonblocking) {
  if (!call.nonblocking) return blocking();
  absl::StatusOr<Request> request = nonblocking();
  if (!request.ok()) return request.status();
  return request->Wait();
}

}  // namespace

std::string RandomCall::Describe() const {
  std::string text = absl::StrCat(CollectiveName(collective), " ", values, " ", DataTypeName(type),
                                  " count ", count);
  if (!counts.empty()) absl::StrAppend(&text, " counts [", absl::StrJoin(counts, ","), "]");
  if (!pair_counts.empty()) {
    absl::StrAppend(&text, " pair counts [", absl::StrJoin(pair_counts, ","), "]");
  }
  absl::StrAppend(&text, " root ", root, in_place ? " in place" : "",
                  nonblocking ? " nonblocking" : "", " salt ", salt);
  return text;
}

RandomCalls::RandomCalls(uint64_t seed, int size, size_t max_elements)
    : random_(seed), size_(size), max_elements_(max_elements) {}

size_t RandomCalls::Elements() {
  // None now and then; else log-uniform up to max_elements_.
  if (random_() % 20 == 0 || max_elements_ == 0) return 0;
  int bits = 0;
  while ((size_t{2} << bits) <= max_elements_) ++bits;  // 2^bits <= max < 2^(bits+1)
  const int exponent = static_cast<int>(random_() % (bits + 1));
  const size_t top = std::min(max_elements_, size_t{1} << exponent);
  return 1 + random_() % top;
}

RandomCall RandomCalls::Next() {
  RandomCall call;
  call.salt = ++calls_ ^ (random_() << 20);
  call.collective = kCollectives[random_() % std::size(kCollectives)];
  if (IsReduction(call.collective)) {
    const bool scan =
        call.collective == Collective::kScan || call.collective == Collective::kExscan;
    std::vector<const ValueCase*> usable;
    for (const ValueCase& value_case : ReductionCases()) {
      if (scan && !value_case.scans) continue;
      // The digits stay exact while a fold has at most 18 digits.
      if (absl::string_view(value_case.name) == "int64_digits" && size_ > 18) continue;
      usable.push_back(&value_case);
    }
    const ValueCase& value_case = *usable[random_() % usable.size()];
    call.values = value_case.name;
    call.type = value_case.type;
    call.op = value_case.op;
  } else {
    call.values = "bytes";
    call.type = MovedTypes()[random_() % MovedTypes().size()];
    call.op = PredefinedOp::kSum;
  }
  call.root = static_cast<int>(random_() % size_);
  call.in_place = random_() % 4 == 0;
  call.nonblocking = random_() % 3 == 0;
  const size_t elements = Elements();
  const size_t per_rank = elements / size_;
  // A varied count per rank, some zero, about `elements` in all.
  auto varied = [&](size_t mean) {
    std::vector<size_t> counts(size_);
    for (size_t& c : counts) c = random_() % 4 == 0 ? 0 : random_() % (2 * mean + 1);
    return counts;
  };
  switch (call.collective) {
    case Collective::kReduce:
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan:
    case Collective::kBcast:
      call.count = elements;
      break;
    case Collective::kReduceScatterBlock:
    case Collective::kScatter:
    case Collective::kGather:
    case Collective::kAllgather:
    case Collective::kAlltoall:
      call.count = per_rank;
      break;
    case Collective::kReduceScatter:
    case Collective::kScatterv:
    case Collective::kGatherv:
    case Collective::kAllgatherv:
      call.counts = varied(per_rank);
      break;
    case Collective::kAlltoallv: {
      const size_t mean = per_rank / size_;
      call.pair_counts.assign(static_cast<size_t>(size_) * size_, 0);
      for (int from = 0; from < size_; ++from) {
        for (int to = 0; to < size_; ++to) {
          // In place, what a rank sends a peer must equal what it receives from it.
          if (call.in_place && to < from) {
            call.pair_counts[from * size_ + to] = call.pair_counts[to * size_ + from];
          } else {
            call.pair_counts[from * size_ + to] =
                random_() % 4 == 0 ? 0 : random_() % (2 * mean + 1);
          }
        }
      }
      break;
    }
    default:
      break;
  }
  return call;
}

CallOutcome RunRandomCall(Communicator& comm, const RandomCall& call, bool check) {
  const int size = comm.size(), rank = comm.rank();
  const size_t width = DataTypeSize(call.type);
  const bool root = rank == call.root;
  constexpr char kJunk = 0x5a;
  CallOutcome outcome;
  auto finish = [&](absl::Status status, const Bytes& got, auto expected) {
    outcome.status = std::move(status);
    if (check && outcome.status.ok()) outcome.mismatch = Compare(call, rank, got, expected());
    return outcome;
  };
  const DataType type = call.type;
  const ReduceOp& op = call.op;
  switch (call.collective) {
    case Collective::kReduce:
    case Collective::kAllreduce:
    case Collective::kScan:
    case Collective::kExscan: {
      const size_t count = call.count;
      const Bytes send = MakeInput(call.values, type, rank, count, call.salt);
      const bool in_place = call.in_place && (call.collective != Collective::kReduce || root);
      Bytes recv = in_place ? send : Bytes(count * width, kJunk);
      const void* source = in_place ? kInPlace : send.data();
      absl::Status status;
      switch (call.collective) {
        case Collective::kReduce:
          status = Run(
              call, [&] { return comm.Reduce(source, recv.data(), count, type, op, call.root); },
              [&] { return comm.IReduce(source, recv.data(), count, type, op, call.root); });
          break;
        case Collective::kAllreduce:
          status = Run(
              call, [&] { return comm.Allreduce(source, recv.data(), count, type, op); },
              [&] { return comm.IAllreduce(source, recv.data(), count, type, op); });
          break;
        case Collective::kScan:
          status = Run(
              call, [&] { return comm.Scan(source, recv.data(), count, type, op); },
              [&] { return comm.IScan(source, recv.data(), count, type, op); });
          break;
        default:
          status = Run(
              call, [&] { return comm.Exscan(source, recv.data(), count, type, op); },
              [&] { return comm.IExscan(source, recv.data(), count, type, op); });
          break;
      }
      // Results defined here only: the root's Reduce, and no rank 0 Exscan.
      const bool defined = (call.collective != Collective::kReduce || root) &&
                           (call.collective != Collective::kExscan || rank > 0);
      if (!defined) return finish(std::move(status), recv, [&] { return recv; });
      return finish(std::move(status), recv, [&] {
        const RankBytes inputs = MakeInputs(call, size, count);
        if (call.collective == Collective::kReduce || call.collective == Collective::kAllreduce) {
          return *ReferenceReduce(op, type, inputs, count);
        }
        return (
            *ReferenceScan(op, type, inputs, count, call.collective == Collective::kExscan))[rank];
      });
    }
    case Collective::kReduceScatterBlock:
    case Collective::kReduceScatter: {
      const bool block = call.collective == Collective::kReduceScatterBlock;
      const std::vector<size_t> counts =
          block ? std::vector<size_t>(size, call.count) : call.counts;
      const size_t total = Sum(counts);
      const Bytes send = MakeInput(call.values, type, rank, total, call.salt);
      Bytes recv = call.in_place ? send : Bytes(counts[rank] * width, kJunk);
      const void* source = call.in_place ? kInPlace : send.data();
      absl::Status status =
          block
              ? Run(
                    call,
                    [&] {
                      return comm.ReduceScatterBlock(source, recv.data(), call.count, type, op);
                    },
                    [&] {
                      return comm.IReduceScatterBlock(source, recv.data(), call.count, type, op);
                    })
              : Run(
                    call, [&] { return comm.ReduceScatter(source, recv.data(), counts, type, op); },
                    [&] { return comm.IReduceScatter(source, recv.data(), counts, type, op); });
      recv.resize(counts[rank] * width);  // in place: the result is at the start
      return finish(std::move(status), recv, [&] {
        return (*ReferenceReduceScatter(op, type, MakeInputs(call, size, total), counts))[rank];
      });
    }
    case Collective::kBcast: {
      Bytes buffer = root ? MakeInput(call.values, type, rank, call.count, call.salt)
                          : Bytes(call.count * width, kJunk);
      absl::Status status = Run(
          call, [&] { return comm.Bcast(buffer.data(), call.count, type, call.root); },
          [&] { return comm.IBcast(buffer.data(), call.count, type, call.root); });
      return finish(std::move(status), buffer,
                    [&] { return MakeInput(call.values, type, call.root, call.count, call.salt); });
    }
    case Collective::kScatter:
    case Collective::kScatterv: {
      const bool v = call.collective == Collective::kScatterv;
      const std::vector<size_t> counts = v ? call.counts : std::vector<size_t>(size, call.count);
      size_t extent = 0;
      const std::vector<size_t> displs =
          v ? ReversedWithGaps(counts, &extent) : PackedInRankOrder(counts, &extent);
      const Bytes send = root ? MakeInput(call.values, type, rank, extent, call.salt) : Bytes();
      const bool in_place = call.in_place && root;
      Bytes recv(counts[rank] * width, kJunk);
      void* target = in_place ? kInPlace : recv.data();
      absl::Status status =
          v ? Run(
                  call,
                  [&] {
                    return comm.Scatterv(send.data(), counts, displs, target, counts[rank], type,
                                         call.root);
                  },
                  [&] {
                    return comm.IScatterv(send.data(), counts, displs, target, counts[rank], type,
                                          call.root);
                  })
            : Run(
                  call,
                  [&] { return comm.Scatter(send.data(), target, call.count, type, call.root); },
                  [&] { return comm.IScatter(send.data(), target, call.count, type, call.root); });
      if (in_place) return finish(std::move(status), recv, [&] { return recv; });
      return finish(std::move(status), recv, [&] {
        const Bytes root_send = MakeInput(call.values, type, call.root, extent, call.salt);
        return (*ReferenceScatterv(type, root_send, counts, displs))[rank];
      });
    }
    case Collective::kGather:
    case Collective::kGatherv:
    case Collective::kAllgather:
    case Collective::kAllgatherv: {
      const bool v =
          call.collective == Collective::kGatherv || call.collective == Collective::kAllgatherv;
      const bool all =
          call.collective == Collective::kAllgather || call.collective == Collective::kAllgatherv;
      const std::vector<size_t> counts = v ? call.counts : std::vector<size_t>(size, call.count);
      size_t extent = 0;
      // Allgatherv's displacements are each rank's own: odd ranks pack theirs.
      const std::vector<size_t> displs =
          !v ? PackedInRankOrder(counts, &extent)
             : (all && rank % 2 == 1 ? PackedInRankOrder(counts, &extent)
                                     : ReversedWithGaps(counts, &extent));
      const Bytes send = MakeInput(call.values, type, rank, counts[rank], call.salt);
      const bool in_place = call.in_place && (all || root);
      const bool receives = all || root;
      Bytes recv(receives ? extent * width : 0, kJunk);
      if (in_place && counts[rank] > 0) {
        std::memcpy(recv.data() + displs[rank] * width, send.data(), send.size());
      }
      const void* source = in_place ? kInPlace : send.data();
      absl::Status status;
      switch (call.collective) {
        case Collective::kGather:
          status = Run(
              call, [&] { return comm.Gather(source, recv.data(), call.count, type, call.root); },
              [&] { return comm.IGather(source, recv.data(), call.count, type, call.root); });
          break;
        case Collective::kGatherv:
          status = Run(
              call,
              [&] {
                return comm.Gatherv(source, counts[rank], recv.data(), counts, displs, type,
                                    call.root);
              },
              [&] {
                return comm.IGatherv(source, counts[rank], recv.data(), counts, displs, type,
                                     call.root);
              });
          break;
        case Collective::kAllgather:
          status = Run(
              call, [&] { return comm.Allgather(source, recv.data(), call.count, type); },
              [&] { return comm.IAllgather(source, recv.data(), call.count, type); });
          break;
        default:
          status = Run(
              call,
              [&] {
                return comm.Allgatherv(source, counts[rank], recv.data(), counts, displs, type);
              },
              [&] {
                return comm.IAllgatherv(source, counts[rank], recv.data(), counts, displs, type);
              });
          break;
      }
      if (!receives) return finish(std::move(status), recv, [&] { return recv; });
      return finish(std::move(status), recv, [&] {
        RankBytes inputs;
        for (int r = 0; r < size; ++r) {
          inputs.push_back(MakeInput(call.values, type, r, counts[r], call.salt));
        }
        return *ReferenceGatherv(type, inputs, counts, displs, Bytes(extent * width, kJunk));
      });
    }
    case Collective::kAlltoall: {
      const size_t elements = call.count * size;
      const Bytes send = MakeInput(call.values, type, rank, elements, call.salt);
      Bytes recv = call.in_place ? send : Bytes(elements * width, kJunk);
      const void* source = call.in_place ? kInPlace : send.data();
      absl::Status status = Run(
          call, [&] { return comm.Alltoall(source, recv.data(), call.count, type); },
          [&] { return comm.IAlltoall(source, recv.data(), call.count, type); });
      return finish(std::move(status), recv, [&] {
        return (*ReferenceAlltoall(type, MakeInputs(call, size, elements), call.count))[rank];
      });
    }
    case Collective::kAlltoallv: {
      // Rank r sends pair_counts[r][s] to s, packed in rank order; it receives
      // pair_counts[s][r] from s, in reverse rank order with gaps. In place, the input
      // lies in `recv` in the receive layout (the counts are symmetric then).
      auto pair = [&](int from, int to) { return call.pair_counts[from * size + to]; };
      std::vector<size_t> send_counts(size), recv_counts(size);
      for (int s = 0; s < size; ++s) {
        send_counts[s] = pair(rank, s);
        recv_counts[s] = pair(s, rank);
      }
      size_t send_extent = 0, recv_extent = 0;
      const std::vector<size_t> recv_displs = ReversedWithGaps(recv_counts, &recv_extent);
      const std::vector<size_t> send_displs =
          call.in_place ? recv_displs : PackedInRankOrder(send_counts, &send_extent);
      if (call.in_place) send_extent = recv_extent;
      const Bytes send = MakeInput(call.values, type, rank, send_extent, call.salt);
      Bytes recv = call.in_place ? send : Bytes(recv_extent * width, kJunk);
      const void* source = call.in_place ? kInPlace : send.data();
      absl::Status status = Run(
          call,
          [&] {
            return comm.Alltoallv(source, send_counts, send_displs, recv.data(), recv_counts,
                                  recv_displs, type);
          },
          [&] {
            return comm.IAlltoallv(source, send_counts, send_displs, recv.data(), recv_counts,
                                   recv_displs, type);
          });
      return finish(std::move(status), recv, [&] {
        // Block from s: s's elements at its send displacement for this rank.
        Bytes expected = call.in_place ? send : Bytes(recv_extent * width, kJunk);
        for (int s = 0; s < size; ++s) {
          std::vector<size_t> their_counts(size);
          for (int t = 0; t < size; ++t) their_counts[t] = pair(s, t);
          size_t their_extent = 0;
          std::vector<size_t> their_displs;
          if (call.in_place) {
            std::vector<size_t> their_recv(size);
            for (int t = 0; t < size; ++t) their_recv[t] = pair(t, s);
            their_displs = ReversedWithGaps(their_recv, &their_extent);
          } else {
            their_displs = PackedInRankOrder(their_counts, &their_extent);
          }
          const Bytes theirs = MakeInput(call.values, type, s, their_extent, call.salt);
          if (recv_counts[s] > 0) {
            std::memcpy(expected.data() + recv_displs[s] * width,
                        theirs.data() + their_displs[rank] * width, recv_counts[s] * width);
          }
        }
        return expected;
      });
    }
    case Collective::kBarrier: {
      outcome.status = Run(
          call, [&] { return comm.Barrier(); }, [&] { return comm.IBarrier(); });
      return outcome;
    }
    default:
      outcome.status = absl::UnimplementedError(
          absl::StrCat("no random form of ", CollectiveName(call.collective)));
      return outcome;
  }
}

size_t ResidentKiB() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long total = 0, resident = 0;
  const int read = std::fscanf(statm, "%lu %lu", &total, &resident);
  std::fclose(statm);
  if (read != 2) return 0;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

}  // namespace zcoll::testing
