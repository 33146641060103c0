/* Every collective of the MPI C interface on MPI_COMM_WORLD and on a split
 * communicator, with results checked against values computed here: integer data, so
 * every result is exact. Run it under zcoll_run (any rank count) or alone.
 * Prints "collectives.c: N checks passed on R ranks" and exits 0, or names the first
 * wrong element and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

/* The value rank r contributes at index i. */
static int Value(int r, int i) { return 1000 * (r + 1) + i; }

/* A non-commutative op: affine maps x -> a*x + b (mod kModulus) as MPI_2INT pairs,
 * composed left operand first. Composition is associative, not commutative, so the
 * result shows whether the operands came in rank order. */
enum { kModulus = 10007 };
typedef struct {
  int a;
  int b;
} Affine;

static Affine Compose(Affine first, Affine then) {
  Affine out = {(int)((long long)first.a * then.a % kModulus),
                (int)(((long long)then.a * first.b + then.b) % kModulus)};
  return out;
}

static void ComposeOp(void* in, void* inout, int* len, MPI_Datatype* type) {
  const Affine* left = (const Affine*)in;
  Affine* right = (Affine*)inout;
  if (*type != MPI_2INT) MPI_Abort(MPI_COMM_WORLD, 3);
  for (int i = 0; i < *len; ++i) right[i] = Compose(left[i], right[i]);
}

static Affine MapOf(int rank, int i) {
  Affine map = {rank + 2 + i, 3 * rank + 1};
  return map;
}

static void Run(MPI_Comm comm, const char* name) {
  int rank, size;
  CALL(MPI_Comm_rank(comm, &rank));
  CALL(MPI_Comm_size(comm, &size));
  enum { N = 37 };
  int* send = malloc(sizeof(int) * N * size);
  int* recv = malloc(sizeof(int) * N * size);
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  char what[128];

  /* Allreduce, sum and max. */
  for (int i = 0; i < N; ++i) send[i] = Value(rank, i);
  CALL(MPI_Allreduce(send, recv, N, MPI_INT, MPI_SUM, comm));
  for (int i = 0; i < N; ++i) {
    long long want = 0;
    for (int r = 0; r < size; ++r) want += Value(r, i);
    snprintf(what, sizeof what, "%s allreduce sum [%d]", name, i);
    CHECK_EQ(what, recv[i], want);
  }
  CALL(MPI_Allreduce(send, recv, N, MPI_INT, MPI_MAX, comm));
  CHECK_EQ("allreduce max", recv[5], Value(size - 1, 5));
  /* In place. */
  for (int i = 0; i < N; ++i) recv[i] = rank + i;
  CALL(MPI_Allreduce(MPI_IN_PLACE, recv, N, MPI_INT, MPI_SUM, comm));
  CHECK_EQ("allreduce in place", recv[3], size * (size - 1) / 2 + 3 * size);

  /* Reduce at the last rank, with a non-commutative user op: canonical order. */
  MPI_Op concat;
  CALL(MPI_Op_create(ComposeOp, 0, &concat));
  int commute = -1;
  CALL(MPI_Op_commutative(concat, &commute));
  CHECK_EQ("op_commutative", commute, 0);
  Affine maps[N], composed[N];
  for (int i = 0; i < N; ++i) maps[i] = MapOf(rank, i);
  const int root = size - 1;
  CALL(MPI_Reduce(maps, composed, N, MPI_2INT, concat, root, comm));
  if (rank == root) {
    for (int i = 0; i < N; ++i) {
      Affine want = MapOf(0, i);
      for (int r = 1; r < size; ++r) want = Compose(want, MapOf(r, i));
      snprintf(what, sizeof what, "%s reduce non-commutative [%d]", name, i);
      CHECK_EQ(what, composed[i].a * (long long)kModulus + composed[i].b,
               want.a * (long long)kModulus + want.b);
    }
  }
  CALL(MPI_Allreduce(maps, composed, N, MPI_2INT, concat, comm));
  Affine want = MapOf(0, 4);
  for (int r = 1; r < size; ++r) want = Compose(want, MapOf(r, 4));
  CHECK_EQ("allreduce non-commutative", composed[4].b, want.b);
  CALL(MPI_Op_free(&concat));
  CHECK_EQ("op_free nulls", concat, MPI_OP_NULL);

  /* Reduce_scatter_block and Reduce_scatter. */
  for (int i = 0; i < N * size; ++i) send[i] = Value(rank, i);
  CALL(MPI_Reduce_scatter_block(send, recv, N, MPI_INT, MPI_SUM, comm));
  for (int i = 0; i < N; ++i) {
    long long want = 0;
    for (int r = 0; r < size; ++r) want += Value(r, rank * N + i);
    CHECK_EQ("reduce_scatter_block", recv[i], want);
  }
  int offset = 0, mine = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = (r * 7) % 5; /* zeros included */
    if (r < rank) offset += counts[r];
  }
  mine = counts[rank];
  CALL(MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, comm));
  for (int i = 0; i < mine; ++i) {
    long long want = 0;
    for (int r = 0; r < size; ++r) want += Value(r, offset + i);
    CHECK_EQ("reduce_scatter", recv[i], want);
  }

  /* Scan and Exscan. */
  for (int i = 0; i < N; ++i) send[i] = rank + 1;
  CALL(MPI_Scan(send, recv, N, MPI_INT, MPI_SUM, comm));
  CHECK_EQ("scan", recv[N - 1], (rank + 1) * (rank + 2) / 2);
  CALL(MPI_Exscan(send, recv, N, MPI_INT, MPI_SUM, comm));
  if (rank > 0) CHECK_EQ("exscan", recv[0], rank * (rank + 1) / 2);

  /* Bcast from rank 0 in doubles. */
  double values[N];
  for (int i = 0; i < N; ++i) values[i] = rank == 0 ? 0.5 * i : -1.0;
  CALL(MPI_Bcast(values, N, MPI_DOUBLE, 0, comm));
  CHECK_EQ("bcast", (long long)(values[N - 1] * 2), N - 1);

  /* Scatter and Gather from rank 0, Scatterv and Gatherv at the last rank. */
  for (int i = 0; i < N * size; ++i) send[i] = rank == 0 ? i : -1;
  CALL(MPI_Scatter(send, N, MPI_INT, recv, N, MPI_INT, 0, comm));
  CHECK_EQ("scatter", recv[N - 1], rank * N + N - 1);
  for (int i = 0; i < N; ++i) send[i] = Value(rank, i);
  CALL(MPI_Gather(send, N, MPI_INT, recv, N, MPI_INT, 0, comm));
  if (rank == 0) {
    for (int r = 0; r < size; ++r) CHECK_EQ("gather", recv[r * N + 2], Value(r, 2));
  }
  /* A send type and a receive type of one size (MPI_INT and MPI_INT32_T) meet. */
  CALL(MPI_Gather(send, N, MPI_INT32_T, recv, N, MPI_INT, 0, comm));
  if (rank == 0) CHECK_EQ("gather int32_t into int", recv[(size - 1) * N], Value(size - 1, 0));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] = r % 3 + 1;
    displs[r] = total + r; /* a gap of r elements before block r */
    total = displs[r] + counts[r];
  }
  for (int i = 0; i < total; ++i) send[i] = rank == root ? 100 + i : -1;
  CALL(MPI_Scatterv(send, counts, displs, MPI_INT, recv, counts[rank], MPI_INT, root, comm));
  CHECK_EQ("scatterv", recv[counts[rank] - 1], 100 + displs[rank] + counts[rank] - 1);
  for (int i = 0; i < counts[rank]; ++i) send[i] = Value(rank, i);
  for (int i = 0; i < total; ++i) recv[i] = -7;
  CALL(MPI_Gatherv(send, counts[rank], MPI_INT, recv, counts, displs, MPI_INT, root, comm));
  if (rank == root) {
    for (int r = 0; r < size; ++r) {
      CHECK_EQ("gatherv", recv[displs[r] + counts[r] - 1], Value(r, counts[r] - 1));
      if (r > 0) CHECK_EQ("gatherv leaves gaps", recv[displs[r] - 1], -7);
    }
  }

  /* Allgather, Allgatherv (in place), Alltoall, Alltoallv. */
  for (int i = 0; i < 3; ++i) send[i] = Value(rank, i);
  CALL(MPI_Allgather(send, 3, MPI_INT, recv, 3, MPI_INT, comm));
  for (int r = 0; r < size; ++r) CHECK_EQ("allgather", recv[r * 3 + 2], Value(r, 2));
  for (int i = 0; i < total; ++i) recv[i] = -7;
  for (int i = 0; i < counts[rank]; ++i) recv[displs[rank] + i] = Value(rank, i);
  CALL(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, comm));
  for (int r = 0; r < size; ++r) CHECK_EQ("allgatherv", recv[displs[r]], Value(r, 0));
  for (int s = 0; s < size; ++s) {
    for (int i = 0; i < 2; ++i) send[s * 2 + i] = Value(rank, s * 2 + i);
  }
  CALL(MPI_Alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, comm));
  for (int s = 0; s < size; ++s) CHECK_EQ("alltoall", recv[s * 2 + 1], Value(s, rank * 2 + 1));
  int* rcounts = malloc(sizeof(int) * size);
  int* rdispls = malloc(sizeof(int) * size);
  int sent = 0, received = 0;
  for (int peer = 0; peer < size; ++peer) {
    counts[peer] = (rank + peer) % 3; /* rank -> peer */
    displs[peer] = sent;
    sent += counts[peer];
    rcounts[peer] = (peer + rank) % 3; /* peer -> rank */
    rdispls[peer] = received;
    received += rcounts[peer];
  }
  for (int i = 0; i < sent; ++i) send[i] = Value(rank, i);
  CALL(MPI_Alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm));
  for (int peer = 0; peer < size; ++peer) {
    if (rcounts[peer] == 0) continue;
    /* Where peer put its block for this rank in its own send buffer. */
    int at = 0;
    for (int q = 0; q < rank; ++q) at += (peer + q) % 3;
    CHECK_EQ("alltoallv", recv[rdispls[peer]], Value(peer, at));
  }
  free(rcounts);
  free(rdispls);

  /* MINLOC over (value, index) pairs. */
  struct {
    double value;
    int index;
  } pair = {(double)((rank * 7) % size), rank}, best;
  CALL(MPI_Allreduce(&pair, &best, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm));
  CHECK_EQ("minloc value", (long long)best.value, 0);
  CHECK_EQ("minloc index", best.index, 0);

  CALL(MPI_Barrier(comm));
  free(send);
  free(recv);
  free(counts);
  free(displs);
}

int main(int argc, char** argv) {
  int provided = -1;
  CALL(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
  CHECK_EQ("provided", provided, MPI_THREAD_SERIALIZED);
  int flag = 0;
  CALL(MPI_Initialized(&flag));
  CHECK_EQ("initialized", flag, 1);
  int size;
  CALL(MPI_Comm_rank(MPI_COMM_WORLD, &check_rank));
  CALL(MPI_Comm_size(MPI_COMM_WORLD, &size));
  int self_size = 0;
  CALL(MPI_Comm_size(MPI_COMM_SELF, &self_size));
  CHECK_EQ("self size", self_size, 1);

  Run(MPI_COMM_WORLD, "world");
  Run(MPI_COMM_SELF, "self");
  /* Odd and even ranks, reversed by key. */
  MPI_Comm half;
  CALL(MPI_Comm_split(MPI_COMM_WORLD, check_rank % 2, -check_rank, &half));
  int half_rank, half_size;
  CALL(MPI_Comm_rank(half, &half_rank));
  CALL(MPI_Comm_size(half, &half_size));
  CHECK_EQ("split size", half_size, (size + 1 - check_rank % 2) / 2);
  CHECK_EQ("split rank (reversed)", half_rank, half_size - 1 - check_rank / 2);
  Run(half, "half");
  MPI_Comm dup;
  CALL(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  int compared = -1;
  CALL(MPI_Comm_compare(dup, MPI_COMM_WORLD, &compared));
  CHECK_EQ("dup is congruent", compared, MPI_CONGRUENT);
  CALL(MPI_Comm_compare(dup, dup, &compared));
  CHECK_EQ("ident", compared, MPI_IDENT);
  Run(dup, "dup");
  CALL(MPI_Comm_free(&dup));
  CHECK_EQ("comm_free nulls", dup, MPI_COMM_NULL);
  CALL(MPI_Comm_free(&half));
  MPI_Comm none;
  CALL(MPI_Comm_split(MPI_COMM_WORLD, check_rank == 0 ? MPI_UNDEFINED : 1, 0, &none));
  if (check_rank == 0) CHECK_EQ("undefined color", none, MPI_COMM_NULL);
  if (none != MPI_COMM_NULL) CALL(MPI_Comm_free(&none));

  float in[4] = {1, 2, 3, 4}, inout[4] = {10, 20, 30, 40};
  CALL(MPI_Reduce_local(in, inout, 4, MPI_FLOAT, MPI_SUM));
  CHECK_EQ("reduce_local", (long long)inout[3], 44);
  int type_size = 0;
  CALL(MPI_Type_size(MPI_DOUBLE_INT, &type_size));
  CHECK_EQ("type_size double_int", type_size, 16);
  char name[MPI_MAX_OBJECT_NAME];
  int length = 0;
  CALL(MPI_Type_get_name(MPI_UNSIGNED_LONG_LONG, name, &length));
  CHECK_EQ("type_get_name", strcmp(name, "MPI_UNSIGNED_LONG_LONG"), 0);
  int version, subversion;
  CALL(MPI_Get_version(&version, &subversion));
  CHECK_EQ("version", version * 10 + subversion, 41);
  if (MPI_Wtime() <= 0 || MPI_Wtick() <= 0 || MPI_Wtick() > 0.01) CHECK_EQ("wtime", 0, 1);

  CALL(MPI_Finalize());
  CALL(MPI_Finalized(&flag));
  CHECK_EQ("finalized", flag, 1);
  if (check_rank == 0) printf("collectives.c: %d checks passed on %d ranks\n", checks, size);
  return 0;
}
