// zcoll: MPI-semantics collective operations over libfabric, UCX and shared memory.
//
// The one header a user includes:
//
//   #include "zcoll/zcoll.h"      // with deps = ["@zcoll//:zcoll"]
//
// It brings the public types (DataType, ReduceOp, Group, Topology, the version) and the
// local reductions of ops/reduce.h (ReduceLocal = MPI_Reduce_local, ReduceTwo,
// ReduceMany, FinishAverage); the communicator and the collectives join it as they
// land. Everything else in the
// repository is internal and may change without notice.

#ifndef ZCOLL_ZCOLL_H_
#define ZCOLL_ZCOLL_H_

#include "collectives/communicator.h"                  // IWYU pragma: export
#include "collectives/intercommunicator.h"             // IWYU pragma: export
#include "core/datatype.h"                             // IWYU pragma: export
#include "core/group.h"                                // IWYU pragma: export
#include "core/reduce_op.h"                            // IWYU pragma: export
#include "core/topology.h"                             // IWYU pragma: export
#include "core/version.h"                              // IWYU pragma: export
#include "ops/reduce.h"                                // IWYU pragma: export
#include "transport/bootstrap/in_process_bootstrap.h"  // IWYU pragma: export
#include "transport/bootstrap/tcp_store.h"             // IWYU pragma: export
#include "transport/loopback/loopback_transport.h"     // IWYU pragma: export

#endif  // ZCOLL_ZCOLL_H_
