// A modelled network link for emulated clusters: makes cross-node traffic on one
// machine take as long, relative to shared memory, as it would on a real fabric.
//
// Each rank has one outgoing link (its NIC). A send, put or get posted at time t
// starts when the link is free, occupies it for bytes / bandwidth, and is handed to
// the real transport `latency` later. Posts leave in the order they were made, so
// (peer, tag) ordering holds; receives are not delayed (their sender's link is).
// The model adds time, never removes it: the real transport's own cost comes on top,
// which is small beside the latencies worth modelling (1-5 us for InfiniBand).
//
// Configured by ZCOLL_LINK_LATENCY_US and ZCOLL_LINK_GBITS; CreateNodeAwareTransport
// wraps the network transport with it when either is set, so that `zcoll_run
// --nodes K` jobs see the modelled link between emulated nodes and shared memory
// within them.

#ifndef ZCOLL_TRANSPORT_LINK_MODEL_H_
#define ZCOLL_TRANSPORT_LINK_MODEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace zcoll {

struct LinkModel {
  absl::Duration latency = absl::ZeroDuration();
  // Bits per second; 0: unlimited.
  double bits_per_second = 0;

  bool enabled() const { return latency > absl::ZeroDuration() || bits_per_second > 0; }
  // "latency 2us, 100 Gbit/s".
  std::string ToString() const;
};

// ZCOLL_LINK_LATENCY_US (microseconds, may be fractional) and ZCOLL_LINK_GBITS
// (Gbit/s); unset or 0: no model. InvalidArgument naming the variable when one is
// not a non-negative number.
absl::StatusOr<LinkModel> LinkModelFromEnvironment();

// `network` with `model` applied to what this rank sends, puts and gets.
std::unique_ptr<Transport> CreateLinkModelTransport(std::unique_ptr<Transport> network,
                                                    const LinkModel& model);

}  // namespace zcoll

#endif  // ZCOLL_TRANSPORT_LINK_MODEL_H_
