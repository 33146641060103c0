/* MPI_ERRORS_ARE_FATAL, the default: rank 1 passes a negative count to MPI_Allreduce.
 * It prints the reason and exits with an error; the other ranks' calls end at once,
 * naming it, and they exit too. mpi_test.sh checks the output and the exit status. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float value = 1, sum = 0;
  MPI_Allreduce(&value, &sum, rank == 1 ? -1 : 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d: returned from a fatal error\n", rank);
  MPI_Finalize();
  return 0;
}
