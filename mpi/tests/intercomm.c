/* Groups, MPI_Comm_create(_group), and intercommunicators with their collectives:
 * the world's lower and upper halves face each other. Every result is checked against
 * values computed here. Run under zcoll_run with 2 or more ranks; prints
 * "intercomm.c: N checks passed on R ranks". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

static int rank = 0;

static void Groups(int size) {
  MPI_Group world, evens, odds, all, none, back;
  CALL(MPI_Comm_group(MPI_COMM_WORLD, &world));
  int n = -1, me = -1;
  CALL(MPI_Group_size(world, &n));
  CHECK_EQ("world group size", n, size);
  CALL(MPI_Group_rank(world, &me));
  CHECK_EQ("world group rank", me, rank);
  int ranges[1][3] = {{0, size - 1, 2}};
  CALL(MPI_Group_range_incl(world, 1, ranges, &evens));
  CALL(MPI_Group_range_excl(world, 1, ranges, &odds));
  CALL(MPI_Group_size(evens, &n));
  CHECK_EQ("evens", n, (size + 1) / 2);
  CALL(MPI_Group_rank(odds, &me));
  CHECK_EQ("rank in odds", me, rank % 2 ? rank / 2 : MPI_UNDEFINED);
  CALL(MPI_Group_union(odds, evens, &all));
  CALL(MPI_Group_size(all, &n));
  CHECK_EQ("union", n, size);
  int result = -1;
  CALL(MPI_Group_compare(all, world, &result));
  CHECK_EQ("odds then evens is similar to the world", result, size > 1 ? MPI_SIMILAR : MPI_IDENT);
  CALL(MPI_Group_intersection(odds, evens, &none));
  CALL(MPI_Group_size(none, &n));
  CHECK_EQ("intersection", n, 0);
  CALL(MPI_Group_difference(world, odds, &back));
  CALL(MPI_Group_compare(back, evens, &result));
  CHECK_EQ("world minus odds is the evens", result, MPI_IDENT);
  int from[2] = {0, size - 1}, to[2] = {-5, -5};
  CALL(MPI_Group_translate_ranks(world, 2, from, evens, to));
  CHECK_EQ("translate 0", to[0], 0);
  CHECK_EQ("translate last", to[1], (size - 1) % 2 ? MPI_UNDEFINED : (size - 1) / 2);
  int reversed_ranks[64];
  for (int r = 0; r < size; ++r) reversed_ranks[r] = size - 1 - r;
  MPI_Group reversed;
  CALL(MPI_Group_incl(world, size, reversed_ranks, &reversed));
  CALL(MPI_Group_rank(reversed, &me));
  CHECK_EQ("incl reversed", me, size - 1 - rank);
  int bad = size;
  MPI_Group unused;
  CHECK_EQ("incl of a rank outside", ClassOf(MPI_Group_incl(world, 1, &bad, &unused)),
           MPI_ERR_RANK);
  MPI_Group empty = MPI_GROUP_EMPTY;
  CHECK_EQ("MPI_GROUP_EMPTY is never freed", ClassOf(MPI_Group_free(&empty)), MPI_ERR_GROUP);

  /* Comm_create of the evens (the odds get MPI_COMM_NULL); Comm_create_group of the
   * odds, called by the odds only. */
  MPI_Comm made;
  CALL(MPI_Comm_create(MPI_COMM_WORLD, evens, &made));
  if (rank % 2) {
    CHECK_EQ("an odd rank gets no communicator", made, MPI_COMM_NULL);
    MPI_Comm odd_comm;
    CALL(MPI_Comm_create_group(MPI_COMM_WORLD, odds, 5, &odd_comm));
    int sum = 0;
    CALL(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, odd_comm));
    int want = 0;
    for (int r = 1; r < size; r += 2) want += r;
    CHECK_EQ("allreduce over the odds", sum, want);
    CALL(MPI_Comm_free(&odd_comm));
  } else {
    int sum = 0;
    CALL(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, made));
    int want = 0;
    for (int r = 0; r < size; r += 2) want += r;
    CHECK_EQ("allreduce over the evens", sum, want);
    CALL(MPI_Comm_free(&made));
  }
  const MPI_Group evens_handle = evens;
  int outside = size;
  CHECK_EQ("translate a rank outside",
           ClassOf(MPI_Group_translate_ranks(world, 1, &outside, evens, to)), MPI_ERR_RANK);
  MPI_Group* groups[] = {&world, &evens, &odds, &all, &none, &back, &reversed};
  for (size_t i = 0; i < sizeof groups / sizeof groups[0]; ++i) CALL(MPI_Group_free(groups[i]));
  CHECK_EQ("group_free nulls", world, MPI_GROUP_NULL);
  CHECK_EQ("a freed group is refused", ClassOf(MPI_Group_size(evens_handle, &n)), MPI_ERR_GROUP);
}

/* The lower half (world ranks 0..half-1) and the upper half face each other. */
static void Intercommunicators(int size) {
  const int half = size / 2;
  const int upper = rank >= half;
  MPI_Comm side, inter;
  CALL(MPI_Comm_split(MPI_COMM_WORLD, upper, rank, &side));
  CALL(MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, upper ? 0 : half, 7, &inter));
  int flag = -1, local = -1, remote = -1, me = -1;
  CALL(MPI_Comm_test_inter(inter, &flag));
  CHECK_EQ("test_inter", flag, 1);
  CALL(MPI_Comm_size(inter, &local));
  CALL(MPI_Comm_rank(inter, &me));
  CALL(MPI_Comm_remote_size(inter, &remote));
  CHECK_EQ("local size", local, upper ? size - half : half);
  CHECK_EQ("remote size", remote, upper ? half : size - half);
  CHECK_EQ("rank in the local group", me, upper ? rank - half : rank);
  MPI_Group remote_group;
  int first = -1, zero = 0;
  CALL(MPI_Comm_remote_group(inter, &remote_group));
  MPI_Group world_group;
  CALL(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  CALL(MPI_Group_translate_ranks(remote_group, 1, &zero, world_group, &first));
  CHECK_EQ("the remote group's rank 0 in the world", first, upper ? 0 : half);
  CALL(MPI_Group_free(&remote_group));
  CALL(MPI_Group_free(&world_group));
  CHECK_EQ("an intracommunicator has no remote size",
           ClassOf(MPI_Comm_remote_size(MPI_COMM_WORLD, &remote)), MPI_ERR_COMM);
  CHECK_EQ("an intracommunicator has no remote group",
           ClassOf(MPI_Comm_remote_group(MPI_COMM_WORLD, &remote_group)), MPI_ERR_COMM);
  const int low_sum = half * (half - 1) / 2;
  const int high_sum = size * (size - 1) / 2 - low_sum;

  /* Bcast from the lower group's rank 0 to the upper group. */
  int values[4] = {-1, -1, -1, -1};
  if (!upper && me == 0) {
    for (int i = 0; i < 4; ++i) values[i] = 40 + i;
  }
  CALL(MPI_Bcast(values, 4, MPI_INT, upper ? 0 : (me == 0 ? MPI_ROOT : MPI_PROC_NULL), inter));
  if (upper) CHECK_EQ("intercomm bcast", values[3], 43);
  if (!upper && me != 0) CHECK_EQ("MPI_PROC_NULL ranks keep their buffer", values[0], -1);

  /* Reduce of the lower group's world ranks to the upper group's last rank. */
  int sum = -1;
  const int root = size - half - 1;
  CALL(MPI_Reduce(&rank, &sum, 1, MPI_INT, MPI_SUM,
                  upper ? (me == root ? MPI_ROOT : MPI_PROC_NULL) : root, inter));
  if (upper && me == root) CHECK_EQ("intercomm reduce", sum, low_sum);

  /* Allreduce: each group gets the other's sum. */
  CALL(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter));
  CHECK_EQ("intercomm allreduce", sum, upper ? low_sum : high_sum);

  /* Allgather with blocks of other sizes in the two groups: the lower group sends one
   * int each, the upper two. */
  int mine[2] = {rank, 100 + rank};
  int* gathered = malloc(sizeof(int) * 2 * size);
  CALL(MPI_Allgather(mine, upper ? 2 : 1, MPI_INT, gathered, upper ? 1 : 2, MPI_INT, inter));
  if (upper) {
    for (int r = 0; r < half; ++r) CHECK_EQ("allgather from the lower group", gathered[r], r);
  } else {
    for (int r = 0; r < size - half; ++r) {
      CHECK_EQ("allgather from the upper group", gathered[2 * r + 1], 100 + half + r);
    }
  }

  /* Alltoall: one int to each rank of the other group. */
  int* out = malloc(sizeof(int) * size);
  int* in = malloc(sizeof(int) * size);
  for (int r = 0; r < remote; ++r) out[r] = rank * 1000 + r;
  CALL(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter));
  for (int r = 0; r < remote; ++r) {
    const int sender = upper ? r : half + r;
    CHECK_EQ("intercomm alltoall", in[r], sender * 1000 + me);
  }

  /* Scatter from the upper group's rank 0 to the lower group; Gather back. */
  for (int r = 0; r < size; ++r) out[r] = 7 * r;
  int got = -1;
  CALL(MPI_Scatter(out, 1, MPI_INT, &got, 1, MPI_INT,
                   upper ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
  if (!upper) CHECK_EQ("intercomm scatter", got, 7 * me);
  CALL(MPI_Gather(&rank, 1, MPI_INT, in, 1, MPI_INT,
                  upper ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter));
  if (upper && me == 0) {
    for (int r = 0; r < half; ++r) CHECK_EQ("intercomm gather", in[r], r);
  }
  CALL(MPI_Barrier(inter));

  /* Nonblocking and persistent on the intercommunicator. */
  MPI_Request request;
  CALL(MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_MAX, inter, &request));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK_EQ("intercomm iallreduce", sum, upper ? half - 1 : size - 1);
  CALL(MPI_Allreduce_init(&rank, &sum, 1, MPI_INT, MPI_MIN, inter, MPI_INFO_NULL, &request));
  for (int round = 0; round < 2; ++round) {
    CALL(MPI_Start(&request));
    CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
    CHECK_EQ("intercomm allreduce_init", sum, upper ? 0 : half);
  }
  CALL(MPI_Request_free(&request));

  /* Dup (congruent), Split, Merge. */
  MPI_Comm dup, split, merged;
  CALL(MPI_Comm_dup(inter, &dup));
  int result = -1;
  CALL(MPI_Comm_compare(inter, dup, &result));
  CHECK_EQ("a dup is congruent", result, MPI_CONGRUENT);
  CALL(MPI_Comm_compare(inter, MPI_COMM_WORLD, &result));
  CHECK_EQ("an intercommunicator and an intracommunicator", result, MPI_UNEQUAL);
  CALL(MPI_Comm_split(dup, 0, -me, &split)); /* reversed order in each group */
  CALL(MPI_Comm_rank(split, &me));
  CHECK_EQ("split reverses", me, (upper ? size - half : half) - 1 - (upper ? rank - half : rank));
  CALL(MPI_Intercomm_merge(inter, upper, &merged));
  int merged_rank = -1, merged_size = -1;
  CALL(MPI_Comm_rank(merged, &merged_rank));
  CALL(MPI_Comm_size(merged, &merged_size));
  CHECK_EQ("merge: the low group first", merged_rank, rank);
  CHECK_EQ("merge: both groups", merged_size, size);
  CALL(MPI_Comm_test_inter(merged, &flag));
  CHECK_EQ("a merge is an intracommunicator", flag, 0);
  CALL(MPI_Comm_free(&merged));
  CALL(MPI_Comm_free(&split));
  CALL(MPI_Comm_free(&dup));
  CALL(MPI_Comm_free(&inter));
  CALL(MPI_Comm_free(&side));
  free(gathered);
  free(out);
  free(in);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2 || size > 64) {
    fprintf(stderr, "intercomm.c: needs 2 to 64 ranks, not %d\n", size);
    return 2;
  }
  Groups(size);
  Intercommunicators(size);
  CALL(MPI_Finalize());
  printf("intercomm.c: %d checks passed on %d ranks\n", checks, size);
  return 0;
}
