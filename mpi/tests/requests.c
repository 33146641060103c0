/* Nonblocking (MPI_I...) and persistent (..._init) collectives and the calls that
 * complete them. Every collective runs blocking, nonblocking and persistent (started
 * twice, with new contents in its fixed buffers) on the same inputs; the three must
 * give the same results (the blocking ones are checked against computed values by
 * collectives.c). Then: Waitall/Testall/Waitany/Testany over several requests, two
 * ranks waiting for two collectives in opposite orders (MPI's progress rule), a
 * blocking collective while a nonblocking one is pending, large-count _c forms, a
 * communicator freed while its request is pending, and the request errors.
 * Run under zcoll_run with any rank count; prints "requests.c: N checks passed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

/* Class of `code`, for the error checks. */
enum { kBlocking, kNonblocking, kPersistent, kModes };
enum {
  kBarrier,
  kBcast,
  kReduce,
  kAllreduce,
  kReduceScatterBlock,
  kReduceScatter,
  kScan,
  kExscan,
  kScatter,
  kScatterv,
  kGather,
  kGatherv,
  kAllgather,
  kAllgatherv,
  kAlltoall,
  kAlltoallv,
  kCollectives
};
static const char* const kNames[] = {
    "barrier",        "bcast",   "reduce",    "allreduce",  "reduce_scatter_block",
    "reduce_scatter", "scan",    "exscan",    "scatter",    "scatterv",
    "gather",         "gatherv", "allgather", "allgatherv", "alltoall",
    "alltoallv"};

enum { N = 5 };
static MPI_Comm comm;
static int rank, size;
static int *send, *recv, *counts, *displs;

/* Starts collective `which` in `mode` (blocking: runs it). The arguments are the same
 * in every mode; only the contents of `send` change between runs. */
#define FORMS(Name, IName, ...)                         \
  (mode == kBlocking      ? Name(__VA_ARGS__)           \
   : mode == kNonblocking ? IName(__VA_ARGS__, request) \
                          : Name##_init(__VA_ARGS__, info, request))
static int Issue(int which, int mode, MPI_Info info, MPI_Request* request) {
  const int root = size - 1;
  switch (which) {
    case kBarrier:
      return FORMS(MPI_Barrier, MPI_Ibarrier, comm);
    case kBcast:
      return FORMS(MPI_Bcast, MPI_Ibcast, rank == 0 ? send : recv, N, MPI_INT, 0, comm);
    case kReduce:
      return FORMS(MPI_Reduce, MPI_Ireduce, send, recv, N, MPI_INT, MPI_SUM, root, comm);
    case kAllreduce:
      return FORMS(MPI_Allreduce, MPI_Iallreduce, send, recv, N, MPI_INT, MPI_MAX, comm);
    case kReduceScatterBlock:
      return FORMS(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, send, recv, N, MPI_INT,
                   MPI_SUM, comm);
    case kReduceScatter:
      return FORMS(MPI_Reduce_scatter, MPI_Ireduce_scatter, send, recv, counts, MPI_INT, MPI_SUM,
                   comm);
    case kScan:
      return FORMS(MPI_Scan, MPI_Iscan, send, recv, N, MPI_INT, MPI_SUM, comm);
    case kExscan:
      return FORMS(MPI_Exscan, MPI_Iexscan, send, recv, N, MPI_INT, MPI_SUM, comm);
    case kScatter:
      return FORMS(MPI_Scatter, MPI_Iscatter, send, N, MPI_INT, recv, N, MPI_INT, root, comm);
    case kScatterv:
      return FORMS(MPI_Scatterv, MPI_Iscatterv, send, counts, displs, MPI_INT, recv, counts[rank],
                   MPI_INT, 0, comm);
    case kGather:
      return FORMS(MPI_Gather, MPI_Igather, send, N, MPI_INT, recv, N, MPI_INT, root, comm);
    case kGatherv:
      return FORMS(MPI_Gatherv, MPI_Igatherv, send, counts[rank], MPI_INT, recv, counts, displs,
                   MPI_INT, 0, comm);
    case kAllgather:
      return FORMS(MPI_Allgather, MPI_Iallgather, send, N, MPI_INT, recv, N, MPI_INT, comm);
    case kAllgatherv:
      return FORMS(MPI_Allgatherv, MPI_Iallgatherv, send, counts[rank], MPI_INT, recv, counts,
                   displs, MPI_INT, comm);
    case kAlltoall:
      return FORMS(MPI_Alltoall, MPI_Ialltoall, send, 1, MPI_INT, recv, 1, MPI_INT, comm);
    case kAlltoallv:
      /* One int to every rank: counts of 1 at displacements 0..size-1. */
      return FORMS(MPI_Alltoallv, MPI_Ialltoallv, send, counts + size, displs + size, MPI_INT, recv,
                   counts + size, displs + size, MPI_INT, comm);
  }
  return -1;
}

/* Inputs of run `seed`: every rank's send buffer differs by rank and seed. */
static void Fill(int seed, int length) {
  for (int i = 0; i < length; ++i) send[i] = seed * 100000 + rank * 1000 + i;
  for (int i = 0; i < length; ++i) recv[i] = -1;
}

static void EveryCollectiveInEveryMode(void) {
  const int length = N * size + 2 * size;
  int* results = malloc(sizeof(int) * length * 2 * kModes);
  char what[160];
  /* Scatterv/Gatherv/Allgatherv/Reduce_scatter: counts r % 3 (zeros included), packed;
   * Alltoallv's ones after them. */
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = r % 3;
    displs[r] = total;
    total += counts[r];
    counts[size + r] = 1;
    displs[size + r] = r;
  }
  MPI_Info info;
  CALL(MPI_Info_create(&info));
  CALL(MPI_Info_set(info, "zcoll_test", "persistent collectives take an info object"));
  for (int which = 0; which < kCollectives; ++which) {
    for (int mode = 0; mode < kModes; ++mode) {
      MPI_Request request = MPI_REQUEST_NULL;
      if (mode == kPersistent) {
        CALL(Issue(which, mode, which % 2 ? info : MPI_INFO_NULL, &request));
        CHECK_EQ("persistent request made", request != MPI_REQUEST_NULL, 1);
      }
      for (int seed = 0; seed < 2; ++seed) {
        Fill(seed + 1, length);
        if (mode == kBlocking) {
          CALL(Issue(which, mode, MPI_INFO_NULL, NULL));
        } else if (mode == kNonblocking) {
          CALL(Issue(which, mode, MPI_INFO_NULL, &request));
          MPI_Status status;
          CALL(MPI_Wait(&request, &status));
          CHECK_EQ("a completed nonblocking request is MPI_REQUEST_NULL", request,
                   MPI_REQUEST_NULL);
          CHECK_EQ("a collective's status has MPI_ANY_SOURCE", status.MPI_SOURCE, MPI_ANY_SOURCE);
          CHECK_EQ("a collective's status has MPI_ANY_TAG", status.MPI_TAG, MPI_ANY_TAG);
        } else {
          CALL(MPI_Start(&request));
          /* Test until it completes, computing meanwhile (bounded: the deadline ends it). */
          int flag = 0;
          while (!flag) CALL(MPI_Test(&request, &flag, MPI_STATUS_IGNORE));
          CHECK_EQ("a completed persistent request stays", request != MPI_REQUEST_NULL, 1);
        }
        memcpy(results + ((size_t)mode * 2 + seed) * length, recv, sizeof(int) * length);
      }
      if (mode == kPersistent) {
        CALL(MPI_Request_free(&request));
        CHECK_EQ("request_free nulls", request, MPI_REQUEST_NULL);
      }
    }
    for (int mode = 1; mode < kModes; ++mode) {
      for (int seed = 0; seed < 2; ++seed) {
        const int* want = results + (size_t)seed * length;
        const int* got = results + ((size_t)mode * 2 + seed) * length;
        for (int i = 0; i < length; ++i) {
          snprintf(what, sizeof what, "%s %s run %d [%d] as blocking", kNames[which],
                   mode == kNonblocking ? "nonblocking" : "persistent", seed, i);
          CHECK_EQ(what, got[i], want[i]);
        }
      }
    }
    /* The blocking results moved data (a collective that did nothing leaves -1). */
    if (which == kAllreduce || which == kAllgather || which == kAlltoall) {
      CHECK_EQ("allreduce/allgather/alltoall wrote", results[0] != -1, 1);
    }
  }
  CALL(MPI_Info_free(&info));
  free(results);
}

/* Several requests at once, completed by each multiple-completion call. */
static void CompletionCalls(void) {
  enum { M = 4 };
  int a[M], b[M], c[M * 64], d[M * 64];
  MPI_Request requests[4];
  MPI_Status statuses[4];
  for (int i = 0; i < M; ++i) a[i] = rank + i;
  for (int i = 0; i < M * size; ++i) c[i] = rank * 100 + i;
  CALL(MPI_Iallreduce(a, b, M, MPI_INT, MPI_SUM, comm, &requests[0]));
  CALL(MPI_Ialltoall(c, M, MPI_INT, d, M, MPI_INT, comm, &requests[1]));
  CALL(MPI_Ibarrier(comm, &requests[2]));
  requests[3] = MPI_REQUEST_NULL;
  CALL(MPI_Waitall(4, requests, statuses));
  for (int i = 0; i < 4; ++i) {
    CHECK_EQ("waitall nulls every request", requests[i], MPI_REQUEST_NULL);
    CHECK_EQ("waitall sets MPI_ERROR", statuses[i].MPI_ERROR, MPI_SUCCESS);
  }
  CHECK_EQ("waitall's allreduce", b[1], size * (size - 1) / 2 + size);
  CHECK_EQ("waitall's alltoall", d[(size - 1) * M + 1], (size - 1) * 100 + rank * M + 1);

  /* Testall: false until all completed (none retired), then true. */
  CALL(MPI_Iallreduce(a, b, M, MPI_INT, MPI_MIN, comm, &requests[0]));
  CALL(MPI_Ibcast(c, M, MPI_INT, size - 1, comm, &requests[1]));
  int flag = 0, rounds = 0;
  while (!flag) {
    CALL(MPI_Testall(2, requests, &flag, MPI_STATUSES_IGNORE));
    if (!flag) CHECK_EQ("testall retires none early", requests[0] != MPI_REQUEST_NULL, 1);
    ++rounds;
  }
  CHECK_EQ("testall's allreduce", b[2], 2);
  CHECK_EQ("testall's bcast", c[1], (size - 1) * 100 + 1);
  CHECK_EQ("testall nulls", requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL, 1);

  /* Waitany and Testany until every request is done; then MPI_UNDEFINED. */
  CALL(MPI_Iallreduce(a, b, M, MPI_INT, MPI_SUM, comm, &requests[0]));
  CALL(MPI_Ibarrier(comm, &requests[1]));
  int index = -1, seen = 0;
  for (int k = 0; k < 2; ++k) {
    CALL(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE));
    CHECK_EQ("waitany's index is a request", index == 0 || index == 1, 1);
    CHECK_EQ("waitany nulls it", requests[index], MPI_REQUEST_NULL);
    seen |= 1 << index;
  }
  CHECK_EQ("waitany completed both", seen, 3);
  CALL(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE));
  CHECK_EQ("waitany of nulls", index, MPI_UNDEFINED);
  CALL(MPI_Iallreduce(a, b, M, MPI_INT, MPI_SUM, comm, &requests[0]));
  flag = 0;
  while (!flag) CALL(MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE));
  CHECK_EQ("testany's index", index, 0);
  CHECK_EQ("testany's allreduce", b[1], size * (size - 1) / 2 + size);
  CALL(MPI_Testany(2, requests, &index, &flag, MPI_STATUS_IGNORE));
  CHECK_EQ("testany of nulls: flag", flag, 1);
  CHECK_EQ("testany of nulls: index", index, MPI_UNDEFINED);

  /* Startall of two persistent requests, three times. */
  MPI_Request persistent[2];
  CALL(MPI_Allreduce_init(a, b, M, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &persistent[0]));
  CALL(MPI_Allgather_init(a, 1, MPI_INT, d, 1, MPI_INT, comm, MPI_INFO_NULL, &persistent[1]));
  for (int round = 0; round < 3; ++round) {
    a[0] = rank * (round + 1);
    CALL(MPI_Startall(2, persistent));
    CALL(MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE));
    CHECK_EQ("startall's allreduce", b[0], (round + 1) * size * (size - 1) / 2);
    CHECK_EQ("startall's allgather", d[size - 1], (size - 1) * (round + 1));
  }
  CALL(MPI_Request_free(&persistent[0]));
  CALL(MPI_Request_free(&persistent[1]));
}

/* Two collectives on two communicators, waited for in opposite orders by even and odd
 * ranks: each rank's wait must advance the other collective, which its peer waits in. */
static void OppositeOrders(void) {
  enum { kLarge = 1 << 16 };
  int* x = malloc(sizeof(int) * kLarge);
  int* y = malloc(sizeof(int) * kLarge);
  int* sum_x = malloc(sizeof(int) * kLarge);
  int* sum_y = malloc(sizeof(int) * kLarge);
  MPI_Comm other;
  CALL(MPI_Comm_dup(comm, &other));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kLarge; ++i) {
      x[i] = rank + i % 7;
      y[i] = 2 * rank + round;
    }
    MPI_Request first, second;
    CALL(MPI_Iallreduce(x, sum_x, kLarge, MPI_INT, MPI_SUM, comm, &first));
    CALL(MPI_Iallreduce(y, sum_y, kLarge, MPI_INT, MPI_SUM, other, &second));
    if (rank % 2 == 0) {
      CALL(MPI_Wait(&first, MPI_STATUS_IGNORE));
      CALL(MPI_Wait(&second, MPI_STATUS_IGNORE));
    } else {
      CALL(MPI_Wait(&second, MPI_STATUS_IGNORE));
      CALL(MPI_Wait(&first, MPI_STATUS_IGNORE));
    }
    CHECK_EQ("opposite orders: first", sum_x[kLarge - 1],
             size * (size - 1) / 2 + size * ((kLarge - 1) % 7));
    CHECK_EQ("opposite orders: second", sum_y[3], size * (size - 1) + size * round);
  }
  /* A blocking collective on one communicator while a nonblocking one is pending on the
   * other: odd ranks wait for the nonblocking one first. */
  MPI_Request pending;
  for (int i = 0; i < kLarge; ++i) y[i] = rank;
  CALL(MPI_Iallreduce(y, sum_y, kLarge, MPI_INT, MPI_SUM, other, &pending));
  if (rank % 2 == 1) CALL(MPI_Wait(&pending, MPI_STATUS_IGNORE));
  CALL(MPI_Allreduce(x, sum_x, kLarge, MPI_INT, MPI_MAX, comm));
  if (rank % 2 == 0) CALL(MPI_Wait(&pending, MPI_STATUS_IGNORE));
  CHECK_EQ("blocking beside pending: blocking", sum_x[0], size - 1);
  CHECK_EQ("blocking beside pending: nonblocking", sum_y[kLarge / 2], size * (size - 1) / 2);
  CALL(MPI_Comm_free(&other));
  free(x);
  free(y);
  free(sum_x);
  free(sum_y);
}

/* The large-count forms: MPI_Count counts, MPI_Aint displacements. */
static void LargeCountForms(void) {
  MPI_Count* big_counts = malloc(sizeof(MPI_Count) * size);
  MPI_Aint* big_displs = malloc(sizeof(MPI_Aint) * size);
  int value[2] = {rank, rank * rank}, sums[2] = {0, 0};
  CALL(MPI_Allreduce_c(value, sums, (MPI_Count)2, MPI_INT, MPI_SUM, comm));
  CHECK_EQ("allreduce_c", sums[1], (size - 1) * size * (2 * size - 1) / 6);
  int* gathered = malloc(sizeof(int) * 2 * size);
  for (int r = 0; r < size; ++r) {
    big_counts[r] = 2;
    big_displs[r] = 2 * (size - 1 - r); /* blocks in reverse order */
  }
  MPI_Request request;
  CALL(MPI_Iallgatherv_c(value, 2, MPI_INT, gathered, big_counts, big_displs, MPI_INT, comm,
                         &request));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK_EQ("iallgatherv_c: the last rank's block first", gathered[1], (size - 1) * (size - 1));
  CHECK_EQ("iallgatherv_c: rank 0's block last", gathered[2 * size - 2], 0);
  int shared = rank == 0 ? 77 : 0;
  CALL(MPI_Bcast_init_c(&shared, 1, MPI_INT, 0, comm, MPI_INFO_NULL, &request));
  CALL(MPI_Start(&request));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK_EQ("bcast_init_c", shared, 77);
  CALL(MPI_Request_free(&request));
  free(big_counts);
  free(big_displs);
  free(gathered);
}

/* A communicator freed while its request is pending lives until it completes. */
static void FreedWhilePending(void) {
  MPI_Comm dup;
  CALL(MPI_Comm_dup(comm, &dup));
  int one = 1, total = 0;
  MPI_Request request;
  CALL(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, dup, &request));
  CALL(MPI_Comm_free(&dup));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK_EQ("a request outlives its freed communicator", total, size);
}

/* Request errors (returned: MPI_ERRORS_RETURN on MPI_COMM_SELF, which handles errors
 * tied to no communicator). None fails the job: they are local. */
static void RequestErrors(void) {
  MPI_Status status;
  MPI_Request none = MPI_REQUEST_NULL;
  CALL(MPI_Wait(&none, &status));
  CHECK_EQ("wait on MPI_REQUEST_NULL: empty status", status.MPI_TAG, MPI_ANY_TAG);
  int count = -1;
  CALL(MPI_Get_count(&status, MPI_INT, &count));
  CHECK_EQ("get_count of an empty status", count, 0);
  MPI_Request bogus = 12345;
  CHECK_EQ("wait on a bogus request", ClassOf(MPI_Wait(&bogus, MPI_STATUS_IGNORE)),
           MPI_ERR_REQUEST);
  MPI_Request request;
  int value = rank, sum = 0;
  CALL(MPI_Iallreduce(&value, &sum, 1, MPI_INT, MPI_SUM, comm, &request));
  CHECK_EQ("request_free of a nonblocking collective", ClassOf(MPI_Request_free(&request)),
           MPI_ERR_REQUEST);
  CHECK_EQ("start of a nonblocking collective", ClassOf(MPI_Start(&request)), MPI_ERR_REQUEST);
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK_EQ("wait after the refusals", sum, size * (size - 1) / 2);
  CHECK_EQ("the completed handle is no request", ClassOf(MPI_Request_free(&request)),
           MPI_ERR_REQUEST);
  CALL(MPI_Allreduce_init(&value, &sum, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &request));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE)); /* inactive: returns at once */
  CALL(MPI_Start(&request));
  CHECK_EQ("start of an active request", ClassOf(MPI_Start(&request)), MPI_ERR_REQUEST);
  CHECK_EQ("request_free of an active request", ClassOf(MPI_Request_free(&request)),
           MPI_ERR_REQUEST);
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CALL(MPI_Request_free(&request));
  CHECK_EQ("waitall with a negative count", ClassOf(MPI_Waitall(-1, &request, MPI_STATUSES_IGNORE)),
           MPI_ERR_COUNT);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  comm = MPI_COMM_WORLD;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  send = malloc(sizeof(int) * (N + 2) * size);
  recv = malloc(sizeof(int) * (N + 2) * size);
  counts = malloc(sizeof(int) * 2 * size);
  displs = malloc(sizeof(int) * 2 * size);
  EveryCollectiveInEveryMode();
  CompletionCalls();
  OppositeOrders();
  LargeCountForms();
  FreedWhilePending();
  RequestErrors();
  free(send);
  free(recv);
  free(counts);
  free(displs);
  CALL(MPI_Finalize());
  printf("requests.c: %d checks passed on %d ranks\n", checks, size);
  return 0;
}
