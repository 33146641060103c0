/* One refused collective per job: `refusal CASE`. Rank 1 makes the bad call and must
 * get CASE's error class and a message naming the argument; every other rank's call
 * must succeed or end with MPI_ERR_OTHER naming rank 1's reason, within seconds; then
 * MPI_Barrier reports the failed job on every rank. MPI_ERRORS_RETURN throughout.
 * Run under zcoll_run with 2 or more ranks (3 or more for the inter_ cases); prints
 * "refusal CASE passed" per rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

static int rank = -1;

/* A refusal's code on any rank: its class, and a message naming rank 1 (the refusing
 * rank) and saying `want_text`. */
static void ExpectFromRank1(const char* what, int code, int want_class, const char* want_text) {
  Expect(what, code, want_class, want_text);
  Expect(what, code, want_class, "rank 1: ");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* which = argc > 1 ? argv[1] : "";
  const int bad = rank == 1;
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  for (int r = 0; r < size; ++r) {
    counts[r] = 1;
    displs[r] = r;
  }
  int send[64] = {0}, recv[64] = {0};
  int code = MPI_SUCCESS, want_class = 0;
  const char* want = "";
  /* Every rank is past MPI_Init and has its handlers before rank 1 refuses (a failure
   * that reaches a rank inside MPI_Init is fatal there: no handler is set yet). Rank 1
   * may leave this barrier first and refuse before another rank has left it. */
  /* The inter_ cases: ranks 0 and 1 face the rest (so that rank 1 is rank 1 of its
   * group too, as refusals name a rank of the communicator they were made on). */
  MPI_Comm side = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  if (strncmp(which, "inter_", 6) == 0) {
    MPI_Comm_split(MPI_COMM_WORLD, rank >= 2, rank, &side);
    MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, rank >= 2 ? 0 : 2, 3, &inter);
  }
  const int synced = MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (synced != MPI_SUCCESS) which = "already";
  if (strcmp(which, "block_mismatch") == 0) {
    /* The root (rank 1) sends 2 ints into blocks of 1. */
    code = MPI_Gather(send, bad ? 2 : 1, MPI_INT, recv, 1, MPI_INT, 1, MPI_COMM_WORLD);
    want_class = MPI_ERR_COUNT;
    want = "recvcount x recvtype is 4 bytes but sendcount x sendtype is 8";
  } else if (strcmp(which, "negative_displ") == 0) {
    if (bad) displs[size - 1] = -1;
    code = MPI_Scatterv(send, counts, displs, MPI_INT, recv, 1, MPI_INT, 1, MPI_COMM_WORLD);
    want_class = MPI_ERR_ARG;
    want = "] = -1 is negative (zcoll takes displacements";
  } else if (strcmp(which, "null_counts") == 0) {
    code = MPI_Allgatherv(send, 1, MPI_INT, recv, bad ? NULL : counts, displs, MPI_INT,
                          MPI_COMM_WORLD);
    want_class = MPI_ERR_ARG;
    want = "recvcounts is a null pointer";
  } else if (strcmp(which, "bad_type") == 0) {
    code = MPI_Allreduce(send, recv, 1, bad ? MPI_DATATYPE_NULL : MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    want_class = MPI_ERR_TYPE;
    want = "datatype MPI_DATATYPE_NULL is not a datatype";
  } else if (strcmp(which, "bad_op") == 0) {
    float value = 1, result = 0;
    code = MPI_Allreduce(&value, &result, 1, MPI_FLOAT, bad ? MPI_BAND : MPI_SUM, MPI_COMM_WORLD);
    want_class = MPI_ERR_OP;
    want = "MPI_BAND";
  } else if (strcmp(which, "null_comm") == 0) {
    code = MPI_Allreduce(send, recv, 1, MPI_INT, MPI_SUM, bad ? MPI_COMM_NULL : MPI_COMM_WORLD);
    want_class = MPI_ERR_COMM;
    want = "comm is MPI_COMM_NULL";
  } else if (strcmp(which, "bad_info") == 0) {
    MPI_Request request = MPI_REQUEST_NULL;
    code = MPI_Allreduce_init(send, recv, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                              bad ? 0x5c0000ff : MPI_INFO_NULL, &request);
    if (code == MPI_SUCCESS) MPI_Request_free(&request);
    want_class = MPI_ERR_INFO;
    want = "info 0x5c0000ff is not MPI_INFO_NULL or an info object";
  } else if (strcmp(which, "null_request") == 0) {
    MPI_Request request = MPI_REQUEST_NULL;
    code = MPI_Ibcast(send, 1, MPI_INT, 0, MPI_COMM_WORLD, bad ? NULL : &request);
    if (code == MPI_SUCCESS) code = MPI_Wait(&request, MPI_STATUS_IGNORE);
    want_class = MPI_ERR_ARG;
    want = "request is a null pointer";
  } else if (strcmp(which, "uncommitted_type") == 0) {
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    if (!bad) MPI_Type_commit(&pair);
    code = MPI_Allgather(send, 1, pair, recv, 1, pair, MPI_COMM_WORLD);
    want_class = MPI_ERR_TYPE;
    want = "is not committed (MPI_Type_commit it first)";
  } else if (strcmp(which, "inter_scan") == 0) {
    code = bad ? MPI_Scan(send, recv, 1, MPI_INT, MPI_SUM, inter)
               : MPI_Allreduce(send, recv, 1, MPI_INT, MPI_SUM, inter);
    want_class = MPI_ERR_COMM;
    want = "comm is an intercommunicator, on which the standard defines no scan";
  } else if (strcmp(which, "inter_in_place") == 0) {
    code = MPI_Allreduce(bad ? MPI_IN_PLACE : send, recv, 1, MPI_INT, MPI_SUM, inter);
    want_class = MPI_ERR_BUFFER;
    want = "MPI_IN_PLACE on an intercommunicator";
  } else if (strcmp(which, "already") == 0) {
    code = synced;
    want_class = MPI_ERR_OTHER;
    want = "";
  } else {
    fprintf(stderr, "refusal: unknown case '%s'\n", which);
    return 2;
  }
  const double took = MPI_Wtime() - start;
  if (bad) {
    ExpectFromRank1(which, code, want_class, want);
  } else if (code != MPI_SUCCESS) {
    ExpectFromRank1(which, code, MPI_ERR_OTHER, want);
  }
  ExpectFromRank1("barrier after the refusal", MPI_Barrier(MPI_COMM_WORLD), MPI_ERR_OTHER, want);
  if (took > 10) {
    fprintf(stderr, "rank %d: the refusal took %.1f s to arrive\n", rank, took);
    return 1;
  }
  printf("rank %d: refusal %s passed\n", rank, argc > 1 ? argv[1] : "");
  free(counts);
  free(displs);
  return 0;
}
