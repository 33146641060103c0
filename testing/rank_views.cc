#include "testing/rank_views.h"

#include "testing/block_layouts.h"

namespace zcoll::testing {

CollectiveArgs RankView(const CollectiveArgs& call, int rank, const PairCounts& pair_counts) {
  CollectiveArgs view = call;
  switch (call.collective) {
    case Collective::kScatterv:
    case Collective::kGatherv:
      // Their counts and displs are the root's only.
      view.count = call.counts[rank];
      if (rank != call.root) {
        view.counts.clear();
        view.displs.clear();
      }
      break;
    case Collective::kAllgatherv:
      view.count = call.counts[rank];
      break;
    case Collective::kAlltoallv:
      view.counts.clear();
      view.recv_counts.clear();
      for (int peer = 0; peer < call.size; ++peer) {
        view.counts.push_back(pair_counts(rank, peer));
        view.recv_counts.push_back(pair_counts(peer, rank));
      }
      view.displs = ReversedWithGaps(view.counts);
      view.recv_displs = ReversedWithGaps(view.recv_counts);
      break;
    default:
      break;
  }
  if ((rank != call.root && IsRooted(call.collective)) || call.collective == Collective::kBcast) {
    view.in_place = false;
  }
  return view;
}

}  // namespace zcoll::testing
