#include "collectives/intercommunicator.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collectives/communicator_state.h"
#include "collectives/communicator_transport.h"
#include "collectives/executor.h"
#include "core/status_macros.h"

namespace zcoll {

namespace {

// One process of a group, as Create tells the other group about it.
struct MemberRecord {
  int32_t job_rank;
  uint32_t context;  // its context id for the bridge; kMaxContexts: none left
  int32_t package;
  int32_t numa;
  char node[64];  // its node's name (the first 63 bytes)
};

// What the leaders swap first, and each leader then tells its group: the sizes, or
// why the swap failed (so that every rank of the group fails with the leader's reason).
struct Header {
  int32_t tag;
  int32_t size;  // the group's size; -1: the leaders' swap failed
  int32_t code;  // then: its absl::StatusCode, and its message (cut at 243 bytes)
  char problem[244];
};

std::string NodeName(const MemberRecord& record) {
  return std::string(record.node, strnlen(record.node, sizeof(record.node)));
}

absl::Status WithRank(int rank, absl::string_view call, absl::Status status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("rank ", rank, ": ", call, ": ", status.message()));
}

}  // namespace

Intercommunicator::Intercommunicator(Communicator local, Communicator bridge, bool local_is_first,
                                     int remote_size)
    : local_(std::move(local)),
      bridge_(std::move(bridge)),
      local_is_first_(local_is_first),
      remote_size_(remote_size) {}
Intercommunicator::Intercommunicator(Intercommunicator&&) noexcept = default;
Intercommunicator& Intercommunicator::operator=(Intercommunicator&&) noexcept = default;
Intercommunicator::~Intercommunicator() = default;

absl::StatusOr<Intercommunicator> Intercommunicator::Create(Communicator& local, int local_leader,
                                                            Communicator& peer, int remote_leader,
                                                            int tag,
                                                            std::optional<absl::Time> deadline) {
  if (local.state_ == nullptr) return MovedFromError("Intercommunicator::Create");
  const int rank = local.rank();
  if (local_leader < 0 || local_leader >= local.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank, ": Intercommunicator::Create: local_leader ", local_leader,
                     " is not a rank of the ", local.size(), "-rank local communicator"));
  }
  const absl::Time until = local.DeadlineOrDefault(deadline);
  // The local group's own communicator, and its tag space for what follows.
  ASSIGN_OR_RETURN(Communicator group, local.Dup(until));
  CommunicatorTransport& transport = *group.state_->transport;
  JobConnection& job = transport.job();
  // This process's context id for the bridge, and where it runs.
  MemberRecord mine{};
  mine.job_rank = transport.job_rank(transport.rank());
  mine.context = kMaxContexts;
  if (absl::StatusOr<uint32_t> context = job.AllocateContext(); context.ok()) {
    mine.context = *context;
  }
  auto release = [&] {
    if (mine.context != kMaxContexts) job.ReleaseContext(mine.context);
  };
  const Topology& topology = group.topology();
  const RankLocation& location = topology.location(group.rank());
  mine.package = location.package;
  mine.numa = location.numa;
  const absl::string_view node = topology.node_name(location.node);
  std::memcpy(mine.node, node.data(), std::min(node.size(), sizeof(mine.node) - 1));
  std::vector<MemberRecord> locals(static_cast<size_t>(group.size()));
  absl::Status status =
      group.Allgather(&mine, locals.data(), sizeof(MemberRecord), DataType::kByte, until);
  if (!status.ok()) {
    release();
    return status;
  }
  // The leaders swap their groups over `peer` (a two-rank exchange on its internal
  // tag), then each tells its group: the header first (a size of -1 says the swap
  // failed, so that the whole group fails with it), then the records.
  Header remote_header{tag, -1, 0, {}};
  std::vector<MemberRecord> remotes;
  absl::Status leaders_swap;
  if (group.rank() == local_leader) {
    leaders_swap = [&]() -> absl::Status {
      if (peer.state_ == nullptr) return MovedFromError("Intercommunicator::Create (peer)");
      CommunicatorTransport& bridge_of_leaders = *peer.state_->transport;
      if (remote_leader < 0 || remote_leader >= peer.size() || remote_leader == peer.rank()) {
        return absl::InvalidArgumentError(absl::StrCat("remote_leader ", remote_leader,
                                                       " is not another rank of the ", peer.size(),
                                                       "-rank peer communicator"));
      }
      if (tag < 0) return absl::InvalidArgumentError(absl::StrCat("tag ", tag, " is negative"));
      const int pair[] = {std::min(peer.rank(), remote_leader),
                          std::max(peer.rank(), remote_leader)};
      const int theirs = peer.rank() == pair[0] ? 1 : 0;
      const Header header{tag, group.size(), 0, {}};
      ASSIGN_OR_RETURN(
          std::vector<char> headers,
          ExchangeRecordsAmong(
              bridge_of_leaders, pair, InternalTag::kIntercommExchange,
              absl::string_view(reinterpret_cast<const char*>(&header), sizeof(header)), until));
      std::memcpy(&remote_header, headers.data() + theirs * sizeof(Header), sizeof(Header));
      // (Both leaders see both tags, so both refuse alike.)
      if (remote_header.tag != tag) {
        return absl::InvalidArgumentError(absl::StrCat("the leaders passed tags ", tag, " and ",
                                                       remote_header.tag, "; they must agree"));
      }
      // Records padded to the larger group, as an exchange's records are equally long.
      const size_t longest = static_cast<size_t>(std::max(group.size(), remote_header.size));
      std::vector<MemberRecord> padded(longest);
      std::copy(locals.begin(), locals.end(), padded.begin());
      ASSIGN_OR_RETURN(
          std::vector<char> records,
          ExchangeRecordsAmong(bridge_of_leaders, pair, InternalTag::kIntercommExchange,
                               absl::string_view(reinterpret_cast<const char*>(padded.data()),
                                                 longest * sizeof(MemberRecord)),
                               until));
      remotes.resize(static_cast<size_t>(remote_header.size));
      std::memcpy(remotes.data(), records.data() + theirs * longest * sizeof(MemberRecord),
                  remotes.size() * sizeof(MemberRecord));
      return absl::OkStatus();
    }();
    if (!leaders_swap.ok()) {
      remote_header.size = -1;
      remote_header.code = static_cast<int32_t>(leaders_swap.code());
      const absl::string_view message = leaders_swap.message();
      std::memcpy(remote_header.problem, message.data(),
                  std::min(message.size(), sizeof(remote_header.problem) - 1));
    }
  }
  status = group.Bcast(&remote_header, sizeof(Header), DataType::kByte, local_leader, until);
  if (status.ok() && remote_header.size < 0) {
    status =
        !leaders_swap.ok()
            ? leaders_swap
            : absl::Status(static_cast<absl::StatusCode>(remote_header.code),
                           absl::StrCat("the local leader (rank ", local_leader,
                                        ") could not swap the groups with the remote "
                                        "leader: ",
                                        absl::string_view(remote_header.problem,
                                                          strnlen(remote_header.problem,
                                                                  sizeof(remote_header.problem)))));
  }
  if (status.ok()) {
    remotes.resize(static_cast<size_t>(remote_header.size));
    status = group.Bcast(remotes.data(), remotes.size() * sizeof(MemberRecord), DataType::kByte,
                         local_leader, until);
  }
  // The groups are disjoint, and every process has a context id for the bridge.
  if (status.ok()) {
    std::map<int, bool> in_local;
    for (const MemberRecord& record : locals) in_local[record.job_rank] = true;
    for (const MemberRecord& record : remotes) {
      if (in_local.count(record.job_rank) > 0) {
        status = absl::InvalidArgumentError(
            absl::StrCat("job rank ", record.job_rank,
                         " is in both groups; an intercommunicator's groups are "
                         "disjoint"));
        break;
      }
    }
  }
  if (status.ok()) {
    for (const std::vector<MemberRecord>* records : {&locals, &remotes}) {
      for (const MemberRecord& record : *records) {
        if (record.context == kMaxContexts) {
          status = absl::ResourceExhaustedError(
              absl::StrCat("job rank ", record.job_rank, " has no free communicator context id (",
                           kMaxContexts, " are live)"));
        }
      }
    }
  }
  if (!status.ok()) {
    release();
    return WithRank(rank, "Intercommunicator::Create", status);
  }
  // The bridge: group A (the one holding the lower job rank) first.
  auto lowest = [](const std::vector<MemberRecord>& records) {
    int low = std::numeric_limits<int>::max();
    for (const MemberRecord& record : records) low = std::min(low, record.job_rank);
    return low;
  };
  const bool local_is_first = lowest(locals) < lowest(remotes);
  const std::vector<MemberRecord>& first = local_is_first ? locals : remotes;
  const std::vector<MemberRecord>& second = local_is_first ? remotes : locals;
  std::vector<int> job_ranks;
  std::vector<uint32_t> contexts;
  std::vector<RankLocation> placement;
  std::vector<std::string> names;
  std::map<std::string, int> node_of_name;
  for (const std::vector<MemberRecord>* records : {&first, &second}) {
    for (const MemberRecord& record : *records) {
      job_ranks.push_back(record.job_rank);
      contexts.push_back(record.context);
      const auto [entry, added] =
          node_of_name.emplace(NodeName(record), static_cast<int>(names.size()));
      if (added) names.push_back(NodeName(record));
      placement.push_back({entry->second, record.package, record.numa});
    }
  }
  absl::StatusOr<Topology> bridge_topology =
      Topology::Create(std::move(placement), std::move(names));
  if (!bridge_topology.ok()) {
    release();
    return WithRank(rank, "Intercommunicator::Create", bridge_topology.status());
  }
  const int bridge_rank =
      local_is_first ? group.rank() : static_cast<int>(remotes.size()) + group.rank();
  Communicator bridge(std::make_unique<Communicator::State>(Communicator::State{
      local.state_->bootstrap,
      std::make_unique<CommunicatorTransport>(transport.shared_job(), bridge_rank,
                                              std::move(job_ranks), std::move(contexts)),
      std::move(*bridge_topology), local.state_->timeout}));
  bridge.state_->timeout_source = local.state_->timeout_source;
  bridge.state_->hosts_oversubscribed = local.state_->hosts_oversubscribed;
  const int remote_size = static_cast<int>(remotes.size());
  return Intercommunicator(std::move(group), std::move(bridge), local_is_first, remote_size);
}

Group Intercommunicator::remote_group() const {
  const Group both = bridge_.group();
  std::vector<int> ranks;
  for (int j = 0; j < remote_size_; ++j) {
    ranks.push_back(local_is_first_ ? size() + j : j);
  }
  // (Ranks of the bridge's own group: this cannot fail.)
  return *both.Incl(ranks);
}

absl::StatusOr<Communicator> Intercommunicator::Merge(bool high,
                                                      std::optional<absl::Time> deadline) {
  // One Split of the bridge: a key that puts the low group first (group A first when
  // both passed the same), each group's ranks in order.
  const int total = size() + remote_size_;
  const int key = (high ? 2 * total : 0) + (local_is_first_ ? 0 : total) + rank();
  ASSIGN_OR_RETURN(std::optional<Communicator> merged, bridge_.Split(0, key, deadline));
  return std::move(*merged);
}

absl::StatusOr<Intercommunicator> Intercommunicator::Dup(std::optional<absl::Time> deadline) {
  ASSIGN_OR_RETURN(Communicator local, local_.Dup(deadline));
  // The bridge's copy keeps its ranks' order (each rank's key is its rank there).
  ASSIGN_OR_RETURN(std::optional<Communicator> bridge, bridge_.Split(0, bridge_.rank(), deadline));
  return Intercommunicator(std::move(local), std::move(*bridge), local_is_first_, remote_size_);
}

absl::StatusOr<std::optional<Intercommunicator>> Intercommunicator::Split(
    int color, int key, std::optional<absl::Time> deadline) {
  const absl::Time until = bridge_.DeadlineOrDefault(deadline);
  ASSIGN_OR_RETURN(std::optional<Communicator> local, local_.Split(color, key, until));
  return Derive(std::move(local), color, until);
}

absl::StatusOr<std::optional<Intercommunicator>> Intercommunicator::Create(
    const Group& group, std::optional<absl::Time> deadline) {
  const absl::Time until = bridge_.DeadlineOrDefault(deadline);
  ASSIGN_OR_RETURN(std::optional<Communicator> local, local_.Create(group, until));
  // Each side makes one group at most: they face each other.
  return Derive(std::move(local), 0, until);
}

absl::StatusOr<std::optional<Intercommunicator>> Intercommunicator::Derive(
    std::optional<Communicator> local, int color, absl::Time until) {
  // The new bridge: the ranks of `color` on both sides, the first side's first, each
  // side in its new local order (its rank there, below 2^30, after the side's bit).
  const int key = local.has_value() ? (local_is_first_ ? 0 : 1 << 30) + local->rank() : 0;
  ASSIGN_OR_RETURN(std::optional<Communicator> bridge,
                   bridge_.Split(local.has_value() ? color : kUndefinedColor, key, until));
  if (!local.has_value()) return std::optional<Intercommunicator>();
  const int remote_size = bridge->size() - local->size();
  // A group whose color the other side does not have faces nobody.
  if (remote_size == 0) return std::optional<Intercommunicator>();
  return std::optional<Intercommunicator>(
      Intercommunicator(std::move(*local), std::move(*bridge), local_is_first_, remote_size));
}

// --- Collectives --------------------------------------------------------------------

struct Intercommunicator::Call {
  // A call of `collective` on `inter` with these arguments; the type (and op), and a
  // rooted collective's root, checked.
  Call(const Intercommunicator& inter, const char* name, Collective collective, DataType type,
       const void* send, void* recv, size_t count, int root = kProcNull,
       const ReduceOp* op = nullptr)
      : name(name), rank(inter.rank()), type(type), op(op), send(send), recv(recv) {
    args.collective = collective;
    args.local_size = inter.size();
    args.remote_size = inter.remote_size();
    args.local_is_first = inter.local_is_first_;
    args.root = root;
    args.count = count;
    CheckType();
    if (IsRooted(collective)) CheckRoot();
  }

  const char* name;
  int rank;
  IntercommArgs args;
  DataType type = DataType::kUint8;
  const ReduceOp* op = nullptr;  // null: moves data only
  const void* send = nullptr;
  void* recv = nullptr;
  // Where AVG's result lies (count 0: none).
  size_t result_count = 0;
  absl::Status invalid;

  // The checks a single rank can make; the first refusal is kept.
  void Refuse(absl::string_view sentence) {
    if (invalid.ok()) {
      invalid = absl::InvalidArgumentError(
          absl::StrCat("rank ", rank, ": ", name, " (intercommunicator): ", sentence));
    }
  }
  void CheckType() {
    if (!IsValidDataType(type)) {
      Refuse(absl::StrCat("type ", static_cast<int>(type), " is not a zcoll DataType"));
    } else if (op != nullptr) {
      if (absl::Status status = CheckOpForDataType(*op, type); !status.ok()) {
        Refuse(status.message());
      }
    }
  }
  void CheckRoot() {
    const int root = args.root;
    if (root != kRoot && root != kProcNull && (root < 0 || root >= args.remote_size)) {
      Refuse(absl::StrCat("root ", root, " is neither kRoot, kProcNull nor a rank of the ",
                          args.remote_size, "-rank remote group"));
    }
  }
  void CheckBuffer(const char* what, const void* buffer, size_t count) {
    if (buffer == kInPlace) {
      Refuse(absl::StrCat("kInPlace is not allowed as `", what,
                          "`: the standard has no in-place form on intercommunicators"));
    } else if (buffer == nullptr && count > 0) {
      Refuse(absl::StrCat("`", what, "` is null but holds ", count, " elements"));
    }
  }
  // A v-form's counts and displacements (`entries` each), kept in `counts_out` and
  // `displs_out`; returns the elements they span.
  size_t Layout(const char* what, absl::Span<const size_t> counts, absl::Span<const size_t> displs,
                int entries, std::vector<size_t>& counts_out, std::vector<size_t>& displs_out) {
    if (counts.size() != static_cast<size_t>(entries) ||
        displs.size() != static_cast<size_t>(entries)) {
      Refuse(absl::StrCat(what, " need ", entries, " counts and displacements each; got ",
                          counts.size(), " and ", displs.size()));
      return 0;
    }
    counts_out.assign(counts.begin(), counts.end());
    displs_out.assign(displs.begin(), displs.end());
    return internal_collectives::SaturatingExtent(counts, displs);
  }
};

namespace {

// ZCOLL_CHECK's signature of an intercommunicator call.
struct InterSignature {
  uint32_t collective;
  uint32_t type;
  uint32_t op;
  int32_t root;
  uint32_t first_group;  // 1: group A
  uint32_t padding;
  uint64_t agreed;  // what both groups must pass alike (~0: nothing)
};

uint64_t Total(absl::Span<const size_t> values) {
  uint64_t total = 0;
  for (size_t value : values) total += value;
  return total;
}

}  // namespace

absl::StatusOr<Request> Intercommunicator::Start(const Call& call) {
  const IntercommArgs& args = call.args;
  if (!call.invalid.ok()) return bridge_.Failed(call.invalid);
  if (ArgumentCheckEnabled()) {
    InterSignature mine{};
    mine.collective = static_cast<uint32_t>(args.collective);
    mine.type = static_cast<uint32_t>(call.type);
    mine.op = call.op == nullptr         ? 0
              : call.op->is_predefined() ? static_cast<uint32_t>(call.op->predefined()) + 1
                                         : 1000 + (call.op->commutative() ? 1 : 0);
    mine.root = args.root;
    mine.first_group = local_is_first_ ? 1 : 0;
    mine.agreed = ~uint64_t{0};
    switch (args.collective) {
      case Collective::kAllreduce:
      case Collective::kAllgather:
      case Collective::kAlltoall:
        mine.agreed = args.count;
        break;
      case Collective::kReduce:
      case Collective::kBcast:
        if (args.root != kProcNull) mine.agreed = args.count;
        break;
      case Collective::kReduceScatterBlock:
        mine.agreed = args.count * static_cast<uint64_t>(args.local_size);
        break;
      case Collective::kReduceScatter:
        mine.agreed = Total(args.counts);
        break;
      default:
        break;
    }
    absl::StatusOr<std::vector<char>> all =
        ExchangeRecords(*bridge_.state_->transport,
                        absl::string_view(reinterpret_cast<const char*>(&mine), sizeof(mine)),
                        bridge_.DefaultDeadline());
    if (!all.ok()) return bridge_.Failed(all.status());
    std::vector<InterSignature> signatures(all->size() / sizeof(InterSignature));
    std::memcpy(signatures.data(), all->data(), all->size());
    const size_t first_size = static_cast<size_t>(local_is_first_ ? size() : remote_size_);
    std::string problem;
    int roots = 0;
    for (size_t r = 0; r < signatures.size() && problem.empty(); ++r) {
      const InterSignature& theirs = signatures[r];
      // Bridge rank r is group A's rank r, or group B's rank r - |A|.
      const bool same_group = theirs.first_group == mine.first_group;
      const std::string who = absl::StrCat(same_group ? "local" : "remote", " rank ",
                                           r < first_size ? r : r - first_size);
      if (theirs.collective != mine.collective || theirs.type != mine.type ||
          theirs.op != mine.op) {
        problem = absl::StrCat(who, " called another collective, type or op");
      } else if (theirs.agreed != ~uint64_t{0} && mine.agreed != ~uint64_t{0} &&
                 theirs.agreed != mine.agreed) {
        problem =
            absl::StrCat(who, "'s counts make ", theirs.agreed, " elements where this rank's make ",
                         mine.agreed, "; both groups must agree");
      }
      roots += theirs.root == kRoot;
    }
    if (problem.empty() && IsRooted(args.collective)) {
      if (roots != 1) {
        problem = roots == 0 ? "no rank passed kRoot"
                             : absl::StrCat(roots,
                                            " ranks passed kRoot (MPI_ROOT in both groups, or "
                                            "twice in one); exactly one rank is the root");
      }
    }
    if (!problem.empty()) {
      return bridge_.Failed(absl::InvalidArgumentError(absl::StrCat(
          "rank ", rank(), ": ", call.name, " (intercommunicator, ZCOLL_CHECK): ", problem)));
    }
  }
  // The last call's plan serves a loop of equal calls (a schedule depends on the
  // arguments and the element size only).
  const size_t element_bytes = DataTypeSize(call.type);
  if (last_plan_ == nullptr || !(last_args_ == args) || last_element_bytes_ != element_bytes) {
    last_plan_ =
        std::make_shared<const ExecutionPlan>(IntercommSchedule(args, rank()), element_bytes);
    last_args_ = args;
    last_element_bytes_ = element_bytes;
  }
  // What both groups compute alike: the collective and the bridge's shape.
  const uint32_t plan_check = MixCheck({static_cast<uint64_t>(args.collective), 0x1e7e4c0dull,
                                        static_cast<uint64_t>(args.bridge_size())});
  static const ReduceOp kSum(PredefinedOp::kSum);
  return bridge_.StartPlan(call.name, args.collective, last_plan_, plan_check, call.type,
                           call.op != nullptr ? *call.op : kSum, call.send, call.recv, call.recv,
                           call.result_count, static_cast<size_t>(remote_size_));
}

absl::Status Intercommunicator::RefuseSpan(const char* call, const char* span, size_t holds,
                                           size_t needs) {
  return bridge_.Failed(absl::InvalidArgumentError(
      absl::StrCat("rank ", rank(), ": ", call, " (intercommunicator): `", span, "` holds ", holds,
                   " elements; this call needs ", needs)));
}

absl::Status Intercommunicator::RefuseBlocks(const char* call, const char* span, size_t elements) {
  return bridge_.Failed(absl::InvalidArgumentError(
      absl::StrCat("rank ", rank(), ": ", call, " (intercommunicator): `", span, "` holds ",
                   elements, " elements, which do not split into ", remote_size_,
                   " equal blocks (one per rank of the remote group)")));
}

absl::Status Intercommunicator::Blocking(std::optional<absl::Time> deadline,
                                         absl::StatusOr<Request> request) {
  if (!request.ok()) return request.status();
  return request->Wait(deadline);
}

absl::StatusOr<Request> Intercommunicator::IReduce(const void* send, void* recv, size_t count,
                                                   DataType type, const ReduceOp& op, int root) {
  Call call(*this, "Reduce", Collective::kReduce, type, send, recv, count, root, &op);
  if (root == kRoot) {
    call.CheckBuffer("recv", recv, count);
    call.result_count = count;
  } else if (root != kProcNull) {
    call.CheckBuffer("send", send, count);
  }
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IAllreduce(const void* send, void* recv, size_t count,
                                                      DataType type, const ReduceOp& op) {
  Call call(*this, "Allreduce", Collective::kAllreduce, type, send, recv, count, kProcNull, &op);
  call.result_count = count;
  call.CheckBuffer("send", send, count);
  call.CheckBuffer("recv", recv, count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IReduceScatterBlock(const void* send, void* recv,
                                                               size_t recv_count, DataType type,
                                                               const ReduceOp& op) {
  Call call(*this, "ReduceScatterBlock", Collective::kReduceScatterBlock, type, send, recv,
            recv_count, kProcNull, &op);
  call.result_count = recv_count;
  call.CheckBuffer("send", send, recv_count * static_cast<size_t>(size()));
  call.CheckBuffer("recv", recv, recv_count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IReduceScatter(const void* send, void* recv,
                                                          absl::Span<const size_t> recv_counts,
                                                          DataType type, const ReduceOp& op) {
  Call call(*this, "ReduceScatter", Collective::kReduceScatter, type, send, recv, 0, kProcNull,
            &op);
  if (recv_counts.size() != static_cast<size_t>(size())) {
    call.Refuse(absl::StrCat("recv_counts has ", recv_counts.size(), " entries for the ", size(),
                             "-rank local group"));
  } else {
    call.args.counts.assign(recv_counts.begin(), recv_counts.end());
    call.result_count = recv_counts[rank()];
    call.CheckBuffer("send", send, internal_collectives::SaturatingSum(recv_counts));
    call.CheckBuffer("recv", recv, recv_counts[rank()]);
  }
  return Start(call);
}

// Scatter and Gather: the root's buffer of remote_size() blocks, and the other
// group's block.
absl::StatusOr<Request> Intercommunicator::IScatter(const void* send, void* recv, size_t count,
                                                    DataType type, int root) {
  Call call(*this, "Scatter", Collective::kScatter, type, send, recv, count, root);
  if (root == kRoot) call.CheckBuffer("send", send, count * static_cast<size_t>(remote_size_));
  if (root >= 0) call.CheckBuffer("recv", recv, count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IGather(const void* send, void* recv, size_t count,
                                                   DataType type, int root) {
  Call call(*this, "Gather", Collective::kGather, type, send, recv, count, root);
  if (root == kRoot) call.CheckBuffer("recv", recv, count * static_cast<size_t>(remote_size_));
  if (root >= 0) call.CheckBuffer("send", send, count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IScatterv(const void* send,
                                                     absl::Span<const size_t> send_counts,
                                                     absl::Span<const size_t> displs, void* recv,
                                                     size_t recv_count, DataType type, int root) {
  Call call(*this, "Scatterv", Collective::kScatterv, type, send, recv, recv_count, root);
  if (root == kRoot) {
    call.CheckBuffer("send", send,
                     call.Layout("send_counts and displs", send_counts, displs, remote_size_,
                                 call.args.counts, call.args.displs));
  }
  if (root >= 0) call.CheckBuffer("recv", recv, recv_count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IGatherv(const void* send, size_t send_count, void* recv,
                                                    absl::Span<const size_t> recv_counts,
                                                    absl::Span<const size_t> displs, DataType type,
                                                    int root) {
  Call call(*this, "Gatherv", Collective::kGatherv, type, send, recv, send_count, root);
  if (root == kRoot) {
    call.CheckBuffer("recv", recv,
                     call.Layout("recv_counts and displs", recv_counts, displs, remote_size_,
                                 call.args.counts, call.args.displs));
  }
  if (root >= 0) call.CheckBuffer("send", send, send_count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IBcast(void* buffer, size_t count, DataType type,
                                                  int root) {
  Call call(*this, "Bcast", Collective::kBcast, type, nullptr, buffer, count, root);
  if (root != kProcNull) call.CheckBuffer("buffer", buffer, count);
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IAllgather(const void* send, void* recv, size_t count,
                                                      DataType type) {
  Call call(*this, "Allgather", Collective::kAllgather, type, send, recv, count);
  call.CheckBuffer("send", send, count);
  call.CheckBuffer("recv", recv, count * static_cast<size_t>(remote_size_));
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IAllgatherv(const void* send, size_t send_count,
                                                       void* recv,
                                                       absl::Span<const size_t> recv_counts,
                                                       absl::Span<const size_t> displs,
                                                       DataType type) {
  Call call(*this, "Allgatherv", Collective::kAllgatherv, type, send, recv, send_count);
  call.CheckBuffer("send", send, send_count);
  call.CheckBuffer("recv", recv,
                   call.Layout("recv_counts and displs", recv_counts, displs, remote_size_,
                               call.args.counts, call.args.displs));
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IAlltoall(const void* send, void* recv, size_t count,
                                                     DataType type) {
  Call call(*this, "Alltoall", Collective::kAlltoall, type, send, recv, count);
  call.CheckBuffer("send", send, count * static_cast<size_t>(remote_size_));
  call.CheckBuffer("recv", recv, count * static_cast<size_t>(remote_size_));
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IAlltoallv(
    const void* send, absl::Span<const size_t> send_counts, absl::Span<const size_t> send_displs,
    void* recv, absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
    DataType type) {
  Call call(*this, "Alltoallv", Collective::kAlltoallv, type, send, recv, 0);
  call.CheckBuffer("send", send,
                   call.Layout("send_counts and send_displs", send_counts, send_displs,
                               remote_size_, call.args.counts, call.args.displs));
  call.CheckBuffer("recv", recv,
                   call.Layout("recv_counts and recv_displs", recv_counts, recv_displs,
                               remote_size_, call.args.recv_counts, call.args.recv_displs));
  return Start(call);
}

absl::StatusOr<Request> Intercommunicator::IBarrier() {
  Call call(*this, "Barrier", Collective::kBarrier, DataType::kUint8, nullptr, nullptr, 0);
  return Start(call);
}

absl::Status Intercommunicator::Reduce(const void* send, void* recv, size_t count, DataType type,
                                       const ReduceOp& op, int root,
                                       std::optional<absl::Time> deadline) {
  return Blocking(deadline, IReduce(send, recv, count, type, op, root));
}
absl::Status Intercommunicator::Allreduce(const void* send, void* recv, size_t count, DataType type,
                                          const ReduceOp& op, std::optional<absl::Time> deadline) {
  return Blocking(deadline, IAllreduce(send, recv, count, type, op));
}
absl::Status Intercommunicator::ReduceScatterBlock(const void* send, void* recv, size_t recv_count,
                                                   DataType type, const ReduceOp& op,
                                                   std::optional<absl::Time> deadline) {
  return Blocking(deadline, IReduceScatterBlock(send, recv, recv_count, type, op));
}
absl::Status Intercommunicator::ReduceScatter(const void* send, void* recv,
                                              absl::Span<const size_t> recv_counts, DataType type,
                                              const ReduceOp& op,
                                              std::optional<absl::Time> deadline) {
  return Blocking(deadline, IReduceScatter(send, recv, recv_counts, type, op));
}
absl::Status Intercommunicator::Scatter(const void* send, void* recv, size_t count, DataType type,
                                        int root, std::optional<absl::Time> deadline) {
  return Blocking(deadline, IScatter(send, recv, count, type, root));
}
absl::Status Intercommunicator::Scatterv(const void* send, absl::Span<const size_t> send_counts,
                                         absl::Span<const size_t> displs, void* recv,
                                         size_t recv_count, DataType type, int root,
                                         std::optional<absl::Time> deadline) {
  return Blocking(deadline, IScatterv(send, send_counts, displs, recv, recv_count, type, root));
}
absl::Status Intercommunicator::Bcast(void* buffer, size_t count, DataType type, int root,
                                      std::optional<absl::Time> deadline) {
  return Blocking(deadline, IBcast(buffer, count, type, root));
}
absl::Status Intercommunicator::Gather(const void* send, void* recv, size_t count, DataType type,
                                       int root, std::optional<absl::Time> deadline) {
  return Blocking(deadline, IGather(send, recv, count, type, root));
}
absl::Status Intercommunicator::Gatherv(const void* send, size_t send_count, void* recv,
                                        absl::Span<const size_t> recv_counts,
                                        absl::Span<const size_t> displs, DataType type, int root,
                                        std::optional<absl::Time> deadline) {
  return Blocking(deadline, IGatherv(send, send_count, recv, recv_counts, displs, type, root));
}
absl::Status Intercommunicator::Allgather(const void* send, void* recv, size_t count, DataType type,
                                          std::optional<absl::Time> deadline) {
  return Blocking(deadline, IAllgather(send, recv, count, type));
}
absl::Status Intercommunicator::Allgatherv(const void* send, size_t send_count, void* recv,
                                           absl::Span<const size_t> recv_counts,
                                           absl::Span<const size_t> displs, DataType type,
                                           std::optional<absl::Time> deadline) {
  return Blocking(deadline, IAllgatherv(send, send_count, recv, recv_counts, displs, type));
}
absl::Status Intercommunicator::Alltoall(const void* send, void* recv, size_t count, DataType type,
                                         std::optional<absl::Time> deadline) {
  return Blocking(deadline, IAlltoall(send, recv, count, type));
}
absl::Status Intercommunicator::Alltoallv(const void* send, absl::Span<const size_t> send_counts,
                                          absl::Span<const size_t> send_displs, void* recv,
                                          absl::Span<const size_t> recv_counts,
                                          absl::Span<const size_t> recv_displs, DataType type,
                                          std::optional<absl::Time> deadline) {
  return Blocking(deadline,
                  IAlltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, type));
}
absl::Status Intercommunicator::Barrier(std::optional<absl::Time> deadline) {
  return Blocking(deadline, IBarrier());
}

// The persistent forms: the I-form, kept at init on the bridge (Communicator::Persistent).
absl::StatusOr<PersistentRequest> Intercommunicator::ReduceInit(const void* send, void* recv,
                                                                size_t count, DataType type,
                                                                const ReduceOp& op, int root) {
  return bridge_.Persistent([&] { return IReduce(send, recv, count, type, op, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::AllreduceInit(const void* send, void* recv,
                                                                   size_t count, DataType type,
                                                                   const ReduceOp& op) {
  return bridge_.Persistent([&] { return IAllreduce(send, recv, count, type, op); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::ReduceScatterBlockInit(
    const void* send, void* recv, size_t recv_count, DataType type, const ReduceOp& op) {
  return bridge_.Persistent([&] { return IReduceScatterBlock(send, recv, recv_count, type, op); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::ReduceScatterInit(
    const void* send, void* recv, absl::Span<const size_t> recv_counts, DataType type,
    const ReduceOp& op) {
  return bridge_.Persistent([&] { return IReduceScatter(send, recv, recv_counts, type, op); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::ScatterInit(const void* send, void* recv,
                                                                 size_t count, DataType type,
                                                                 int root) {
  return bridge_.Persistent([&] { return IScatter(send, recv, count, type, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::ScattervInit(
    const void* send, absl::Span<const size_t> send_counts, absl::Span<const size_t> displs,
    void* recv, size_t recv_count, DataType type, int root) {
  return bridge_.Persistent(
      [&] { return IScatterv(send, send_counts, displs, recv, recv_count, type, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::BcastInit(void* buffer, size_t count,
                                                               DataType type, int root) {
  return bridge_.Persistent([&] { return IBcast(buffer, count, type, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::GatherInit(const void* send, void* recv,
                                                                size_t count, DataType type,
                                                                int root) {
  return bridge_.Persistent([&] { return IGather(send, recv, count, type, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::GathervInit(
    const void* send, size_t send_count, void* recv, absl::Span<const size_t> recv_counts,
    absl::Span<const size_t> displs, DataType type, int root) {
  return bridge_.Persistent(
      [&] { return IGatherv(send, send_count, recv, recv_counts, displs, type, root); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::AllgatherInit(const void* send, void* recv,
                                                                   size_t count, DataType type) {
  return bridge_.Persistent([&] { return IAllgather(send, recv, count, type); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::AllgathervInit(
    const void* send, size_t send_count, void* recv, absl::Span<const size_t> recv_counts,
    absl::Span<const size_t> displs, DataType type) {
  return bridge_.Persistent(
      [&] { return IAllgatherv(send, send_count, recv, recv_counts, displs, type); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::AlltoallInit(const void* send, void* recv,
                                                                  size_t count, DataType type) {
  return bridge_.Persistent([&] { return IAlltoall(send, recv, count, type); });
}
absl::StatusOr<PersistentRequest> Intercommunicator::AlltoallvInit(
    const void* send, absl::Span<const size_t> send_counts, absl::Span<const size_t> send_displs,
    void* recv, absl::Span<const size_t> recv_counts, absl::Span<const size_t> recv_displs,
    DataType type) {
  return bridge_.Persistent([&] {
    return IAlltoallv(send, send_counts, send_displs, recv, recv_counts, recv_displs, type);
  });
}
absl::StatusOr<PersistentRequest> Intercommunicator::BarrierInit() {
  return bridge_.Persistent([&] { return IBarrier(); });
}

}  // namespace zcoll
