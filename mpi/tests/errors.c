/* The MPI C interface's errors under MPI_ERRORS_RETURN: each refusal returns the
 * standard's error class, and MPI_Error_string gives a sentence naming the argument
 * and the rank. The last part refuses a collective on rank 1 only (a bad root): rank 1
 * gets MPI_ERR_ROOT and every other rank an error naming rank 1's reason, at once.
 * Run under zcoll_run with 2 or more ranks; exits 0 when every check held. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/tests/check.h"

static int rank = -1;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  check_rank = rank;
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
  if (handler != MPI_ERRORS_ARE_FATAL) return 1;
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  int value = 0;
  const int one_value = 1;
  Expect("type_size of MPI_DATATYPE_NULL", MPI_Type_size(MPI_DATATYPE_NULL, &value), MPI_ERR_TYPE,
         "datatype MPI_DATATYPE_NULL is not a datatype");
  MPI_Op sum = MPI_SUM;
  Expect("op_free of MPI_SUM", MPI_Op_free(&sum), MPI_ERR_OP, "predefined ops are never freed");
  Expect("comm_rank of a made-up handle", MPI_Comm_rank(12345, &value), MPI_ERR_COMM,
         "is not a communicator");
  MPI_Comm world = MPI_COMM_WORLD;
  Expect("comm_free of MPI_COMM_WORLD", MPI_Comm_free(&world), MPI_ERR_COMM,
         "comm is MPI_COMM_WORLD");
  float in = 1, inout = 2;
  Expect("reduce_local of MPI_LAND on float", MPI_Reduce_local(&in, &inout, 1, MPI_FLOAT, MPI_LAND),
         MPI_ERR_OP, "MPI_LAND");
  Expect("reduce_local with a negative count",
         MPI_Reduce_local(&in, &inout, -3, MPI_FLOAT, MPI_SUM), MPI_ERR_COUNT,
         "count -3 is negative");
  Expect("error_class of a class", MPI_ERR_TRUNCATE, MPI_ERR_TRUNCATE, "message truncated");
  int error_class = 0;
  Expect("error_class of no code", MPI_Error_class(-5, &error_class), MPI_ERR_ARG,
         "errorcode -5 is not an error code");

  /* Point-to-point refusals are local: the job goes on. */
  Expect("send to a rank outside the communicator",
         MPI_Send(&one_value, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "dest");
  Expect("send with a negative tag", MPI_Send(&one_value, 1, MPI_INT, 0, -4, MPI_COMM_WORLD),
         MPI_ERR_TAG, "sendtag -4 is negative");
  Expect("receive with a negative count",
         MPI_Recv(&value, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT,
         "recvcount -1 is negative");
  MPI_Request request = MPI_REQUEST_NULL;
  Expect("irecv of MPI_DATATYPE_NULL",
         MPI_Irecv(&value, 1, MPI_DATATYPE_NULL, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &request),
         MPI_ERR_TYPE, "recvtype");
  Expect("isend without a request", MPI_Isend(&one_value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL),
         MPI_ERR_ARG, "request is a null pointer");
  Expect("send of a null buffer", MPI_Send(NULL, 3, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER,
         "sendbuf is a null pointer");
  CHECK_EQ("no request from a refused irecv", request, MPI_REQUEST_NULL);

  /* The collectives still run after local refusals. */
  int one = 1, total = 0;
  if (MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS ||
      total != size) {
    fprintf(stderr, "rank %d: allreduce after refusals: %d\n", rank, total);
    return 1;
  }

  /* Rank 1 passes a root the communicator does not have. The root needs rank 1's
   * vector, so it hears why it will not come; another rank may complete first. */
  const double start = MPI_Wtime();
  const int code = MPI_Reduce(&one, &total, 1, MPI_INT, MPI_SUM, rank == 1 ? 7 : 0, MPI_COMM_WORLD);
  const double took = MPI_Wtime() - start;
  if (rank == 1) {
    Expect("reduce with root 7", code, MPI_ERR_ROOT,
           "MPI_Reduce: rank 1: root 7 is not a rank of the");
  } else if (rank == 0 || code != MPI_SUCCESS) {
    Expect("reduce while rank 1 refused its root", code, MPI_ERR_OTHER,
           "rank 1: root 7 is not a rank");
  }
  if (took > 5) {
    fprintf(stderr, "rank %d: the refusal took %.1f s to arrive\n", rank, took);
    return 1;
  }
  /* The job has failed: later calls say so, and so does MPI_Finalize. */
  Expect("barrier after the failure", MPI_Barrier(MPI_COMM_WORLD), MPI_ERR_OTHER,
         "root 7 is not a rank");
  Expect("finalize after the failure", MPI_Finalize(), MPI_ERR_OTHER, "root 7 is not a rank");
  printf("rank %d: errors.c passed\n", rank);
  return 0;
}
