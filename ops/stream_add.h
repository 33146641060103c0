// a[i] += b[i] over float: the memory-bound limit ReduceLocal is measured against.

#ifndef ZCOLL_OPS_STREAM_ADD_H_
#define ZCOLL_OPS_STREAM_ADD_H_

#include <cstddef>

namespace zcoll {

void StreamAdd(float* __restrict a, const float* __restrict b, size_t count);

}  // namespace zcoll

#endif  // ZCOLL_OPS_STREAM_ADD_H_
