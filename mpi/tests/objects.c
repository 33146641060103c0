/* The objects around the collectives: contiguous datatypes (in data-moving and
 * reducing collectives, and their refusals), info objects, communicator names,
 * MPI_Alloc_mem memory in collectives, and MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
 * `objects NODES`: run under zcoll_run on NODES (emulated) nodes. Prints
 * "objects.c: N checks passed on R ranks". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

static int rank = 0;

static void AddInts(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type != MPI_INT) MPI_Abort(MPI_COMM_WORLD, 3);
  for (int i = 0; i < *len; ++i) ((int*)inout)[i] += ((const int*)in)[i];
}

static void Datatypes(int size) {
  MPI_Datatype quad, octet;
  CALL(MPI_Type_contiguous(4, MPI_INT, &quad));
  CALL(MPI_Type_contiguous(2, quad, &octet));
  int reduced = 0, bytes = 0;
  /* Not committed yet: refused (locally here, by MPI_Reduce_local). */
  CHECK_EQ("an uncommitted type is refused",
           ClassOf(MPI_Reduce_local(&reduced, &reduced, 1, quad, MPI_SUM)), MPI_ERR_TYPE);
  CALL(MPI_Type_commit(&quad));
  CALL(MPI_Type_commit(&octet));
  CALL(MPI_Type_size(quad, &bytes));
  CHECK_EQ("type_size of 4 ints", bytes, 16);
  CALL(MPI_Type_size(octet, &bytes));
  CHECK_EQ("type_size of 2 x 4 ints", bytes, 32);
  MPI_Aint lb = -1, extent = -1;
  CALL(MPI_Type_get_extent(octet, &lb, &extent));
  CHECK_EQ("extent", extent, 32);
  CHECK_EQ("lb", lb, 0);

  /* Bcast of 2 quads = 8 ints; Allreduce of 1 octet sums 8 ints element-wise. */
  int data[8], sums[8];
  for (int i = 0; i < 8; ++i) data[i] = rank == 1 % size ? 10 * i : -1;
  CALL(MPI_Bcast(data, 2, quad, 1 % size, MPI_COMM_WORLD));
  CHECK_EQ("bcast of a contiguous type", data[7], 70);
  for (int i = 0; i < 8; ++i) data[i] = rank + i;
  CALL(MPI_Allreduce(data, sums, 1, octet, MPI_SUM, MPI_COMM_WORLD));
  for (int i = 0; i < 8; ++i) {
    CHECK_EQ("allreduce of a contiguous type", sums[i], size * (size - 1) / 2 + size * i);
  }
  CALL(MPI_Reduce_local(data, sums, 2, quad, MPI_MAX));
  CHECK_EQ("reduce_local of a contiguous type", sums[7], size * (size - 1) / 2 + size * 7);
  /* One quad sent, four ints received: one signature. */
  int* blocks = malloc(sizeof(int) * 4 * size);
  int* received = malloc(sizeof(int) * 4 * size);
  for (int i = 0; i < 4 * size; ++i) blocks[i] = rank * 1000 + i;
  CALL(MPI_Alltoall(blocks, 1, quad, received, 4, MPI_INT, MPI_COMM_WORLD));
  CHECK_EQ("alltoall quad against 4 ints", received[4 * (size - 1) + 3],
           (size - 1) * 1000 + 4 * rank + 3);
  /* A user op takes predefined types only: a derived one is refused with a reason. */
  MPI_Op user;
  CALL(MPI_Op_create(AddInts, 1, &user));
  CHECK_EQ("a user op on a derived type", ClassOf(MPI_Reduce_local(data, sums, 1, quad, user)),
           MPI_ERR_TYPE);
  CALL(MPI_Reduce_local(data, sums, 4, MPI_INT, user));
  CHECK_EQ("the same user op on its base type", sums[3],
           size * (size - 1) / 2 + size * 3 + rank + 3);
  CALL(MPI_Op_free(&user));
  char name[MPI_MAX_OBJECT_NAME];
  int length = -1;
  CALL(MPI_Type_get_name(quad, name, &length));
  CHECK_EQ("a derived type has no name", length, 0);
  CALL(MPI_Type_get_name(MPI_INT, name, &length));
  CHECK_EQ("MPI_INT's name", strcmp(name, "MPI_INT"), 0);
  CALL(MPI_Type_free(&quad));
  CHECK_EQ("type_free nulls", quad, MPI_DATATYPE_NULL);
  /* The octet made from quad stays usable after quad is freed. */
  CALL(MPI_Allreduce(data, sums, 1, octet, MPI_MIN, MPI_COMM_WORLD));
  CHECK_EQ("a type outlives the one it was made from", sums[7], 7);
  MPI_Datatype freed = octet;
  CALL(MPI_Type_free(&octet));
  CHECK_EQ("a freed type is refused", ClassOf(MPI_Reduce_local(data, sums, 1, freed, MPI_SUM)),
           MPI_ERR_TYPE);
  MPI_Datatype predefined = MPI_INT;
  CHECK_EQ("a predefined type is never freed", ClassOf(MPI_Type_free(&predefined)), MPI_ERR_TYPE);
  CHECK_EQ("a negative contiguous count", ClassOf(MPI_Type_contiguous(-1, MPI_INT, &quad)),
           MPI_ERR_COUNT);
  free(blocks);
  free(received);
}

static void Infos(void) {
  MPI_Info info, copy;
  CALL(MPI_Info_create(&info));
  CALL(MPI_Info_set(info, "alpha", "1"));
  CALL(MPI_Info_set(info, "beta", "two"));
  CALL(MPI_Info_set(info, "alpha", "one")); /* replaces */
  int nkeys = -1, flag = -1, buflen = 0;
  CALL(MPI_Info_get_nkeys(info, &nkeys));
  CHECK_EQ("nkeys", nkeys, 2);
  char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
  CALL(MPI_Info_get_nthkey(info, 1, key));
  CHECK_EQ("second key", strcmp(key, "beta"), 0);
  CALL(MPI_Info_get_string(info, "alpha", &buflen, value, &flag));
  CHECK_EQ("buflen 0 learns the size", buflen, 4);
  CHECK_EQ("flag", flag, 1);
  buflen = sizeof value;
  CALL(MPI_Info_get_string(info, "alpha", &buflen, value, &flag));
  CHECK_EQ("the replaced value", strcmp(value, "one"), 0);
  buflen = 3;
  CALL(MPI_Info_get_string(info, "beta", &buflen, value, &flag));
  CHECK_EQ("truncated to buflen - 1", strcmp(value, "tw"), 0);
  CALL(MPI_Info_dup(info, &copy));
  CALL(MPI_Info_delete(info, "alpha"));
  CALL(MPI_Info_get_string(info, "alpha", &buflen, value, &flag));
  CHECK_EQ("deleted", flag, 0);
  CHECK_EQ("deleting a missing key", ClassOf(MPI_Info_delete(info, "alpha")), MPI_ERR_INFO);
  CALL(MPI_Info_get_nkeys(copy, &nkeys));
  CHECK_EQ("the copy keeps its keys", nkeys, 2);
  const MPI_Info freed = info;
  CALL(MPI_Info_free(&info));
  CHECK_EQ("info_free nulls", info, MPI_INFO_NULL);
  CHECK_EQ("a freed info is refused", ClassOf(MPI_Info_get_nkeys(freed, &nkeys)), MPI_ERR_INFO);
  CALL(MPI_Info_free(&copy));
}

static void Names(void) {
  char name[MPI_MAX_OBJECT_NAME];
  int length = -1;
  CALL(MPI_Comm_get_name(MPI_COMM_WORLD, name, &length));
  CHECK_EQ("world's name", strcmp(name, "MPI_COMM_WORLD"), 0);
  MPI_Comm dup;
  CALL(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  CALL(MPI_Comm_get_name(dup, name, &length));
  CHECK_EQ("a new communicator has no name", length, 0);
  CALL(MPI_Comm_set_name(dup, "solver"));
  CALL(MPI_Comm_get_name(dup, name, &length));
  CHECK_EQ("set_name", strcmp(name, "solver"), 0);
  CHECK_EQ("its length", length, 6);
  CALL(MPI_Comm_free(&dup));
}

static void Memory(int size) {
  int* shared = NULL;
  CALL(MPI_Alloc_mem((MPI_Aint)(sizeof(int) * 1024), MPI_INFO_NULL, &shared));
  CHECK_EQ("alloc_mem gives memory", shared != NULL, 1);
  for (int i = 0; i < 1024; ++i) shared[i] = rank * i;
  CALL(MPI_Allreduce(MPI_IN_PLACE, shared, 1024, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK_EQ("allreduce in alloc_mem memory", shared[1023], 1023 * size * (size - 1) / 2);
  CALL(MPI_Free_mem(shared));
  void* empty = NULL;
  CALL(MPI_Alloc_mem(0, MPI_INFO_NULL, &empty));
  CALL(MPI_Free_mem(empty));
  int on_stack = 0;
  CHECK_EQ("free_mem of other memory", ClassOf(MPI_Free_mem(&on_stack)), MPI_ERR_BUFFER);
}

static void SharedSplit(int size, int nodes) {
  MPI_Comm node;
  CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int node_size = 0, node_rank = -1;
  CALL(MPI_Comm_size(node, &node_size));
  CALL(MPI_Comm_rank(node, &node_rank));
  /* Every node's ranks sum 1 each over its leader: the count of leaders is the nodes'. */
  int leader = node_rank == 0, leaders = 0, total = 0;
  CALL(MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK_EQ("one leader per node", leaders, nodes);
  CALL(MPI_Allreduce(&node_size, &total, 1, MPI_INT, MPI_SUM, node));
  CHECK_EQ("a node communicator's ranks agree on its size", total, node_size * node_size);
  CHECK_EQ("ranks per node", node_size * nodes, size);
  CALL(MPI_Comm_free(&node));
  MPI_Comm none = MPI_COMM_WORLD;
  CALL(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none));
  CHECK_EQ("MPI_UNDEFINED gives MPI_COMM_NULL", none, MPI_COMM_NULL);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int nodes = argc > 1 ? atoi(argv[1]) : 1;
  Datatypes(size);
  Infos();
  Names();
  Memory(size);
  SharedSplit(size, nodes);
  CALL(MPI_Finalize());
  printf("objects.c: %d checks passed on %d ranks\n", checks, size);
  return 0;
}
