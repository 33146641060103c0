/* MPI_Reduce_local of an installed MPI, timed with the OSU method exactly like
 * tools/peers/mpi_coll_bench.c (which covers only float sum): in[i] = i % 7,
 * inout zeroed once, each call timed alone with MPI_Wtime, 1000 timed calls after
 * 100 warm-up ones up to 8 KiB, 100 after 10 above.
 * Usage: mpirun -np 1 mpi_reduce_local DTYPE OP MIN MAX
 *   DTYPE: float double int32   OP: sum max
 * Prints: reduce_local,DTYPE,OP,BYTES,USEC
 * Built and run by ops/compare_reduce_local.sh. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 5) {
    fprintf(stderr, "usage: mpi_reduce_local DTYPE OP MIN MAX\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* dtype_name = argv[1];
  const char* op_name = argv[2];
  MPI_Datatype type = !strcmp(dtype_name, "float")    ? MPI_FLOAT
                      : !strcmp(dtype_name, "double") ? MPI_DOUBLE
                      : !strcmp(dtype_name, "int32")  ? MPI_INT32_T
                                                      : MPI_DATATYPE_NULL;
  MPI_Op op = !strcmp(op_name, "sum") ? MPI_SUM : !strcmp(op_name, "max") ? MPI_MAX : MPI_OP_NULL;
  if (type == MPI_DATATYPE_NULL || op == MPI_OP_NULL) {
    fprintf(stderr, "unsupported %s %s\n", dtype_name, op_name);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int size;
  MPI_Type_size(type, &size);
  size_t lo = strtoull(argv[3], 0, 10), hi = strtoull(argv[4], 0, 10);
  for (size_t bytes = lo; bytes <= hi; bytes *= 4) {
    size_t count = bytes / size ? bytes / size : 1;
    char* in = calloc(count, size);
    char* inout = calloc(count, size);
    for (size_t i = 0; i < count; ++i) {
      if (type == MPI_FLOAT) ((float*)in)[i] = (float)(i % 7);
      else if (type == MPI_DOUBLE) ((double*)in)[i] = (double)(i % 7);
      else ((int32_t*)in)[i] = (int32_t)(i % 7);
    }
    int iters = bytes <= 8192 ? 1000 : 100, warm = iters / 10;
    double total = 0;
    for (int it = 0; it < warm + iters; ++it) {
      double t0 = MPI_Wtime();
      MPI_Reduce_local(in, inout, (int)count, type, op);
      double t1 = MPI_Wtime();
      if (it >= warm) total += t1 - t0;
    }
    printf("reduce_local,%s,%s,%zu,%.3f\n", dtype_name, op_name, bytes, total / iters * 1e6);
    fflush(stdout);
    free(in);
    free(inout);
  }
  MPI_Finalize();
  return 0;
}
