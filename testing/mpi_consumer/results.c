/* An MPI C program that prints what its calls computed, one line per rank and call,
 * and nothing that depends on timing or the library: built unmodified against zcoll
 * (zcoll-mpicc, pkg-config), Open MPI (mpicc.openmpi) and MPICH (mpicc.mpich), its
 * sorted output must be the same under each (testing/mpi_consumer/run.sh). Values are
 * integers or small integers in doubles, so that every summation order gives the
 * same bits. Runs on 2 to 16 ranks; `results OUT` writes rank r's lines to OUT.r
 * (launchers interleave the ranks' output). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void Print(const char* what, const long long* values, int n) {
  printf("rank %d: %s:", rank, what);
  for (int i = 0; i < n; ++i) printf(" %lld", values[i]);
  printf("\n");
}

static void PrintInts(const char* what, const int* values, int n) {
  long long wide[64];
  for (int i = 0; i < n && i < 64; ++i) wide[i] = values[i];
  Print(what, wide, n < 64 ? n : 64);
}

/* 2x2 integer matrices, multiplied: not commutative, so the result shows the order. */
static void MatrixProduct(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  int* a = in;
  int* b = inout;
  for (int m = 0; m < *len / 4; ++m, a += 4, b += 4) {
    const int r0 = (a[0] * b[0] + a[1] * b[2]) % 1009, r1 = (a[0] * b[1] + a[1] * b[3]) % 1009;
    const int r2 = (a[2] * b[0] + a[3] * b[2]) % 1009, r3 = (a[2] * b[1] + a[3] * b[3]) % 1009;
    b[0] = r0, b[1] = r1, b[2] = r2, b[3] = r3;
  }
}

static void Reductions(void) {
  int value = rank + 1, sum = 0, max = 0, prod = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&value, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&value, &prod, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
  const int results[3] = {sum, max, prod};
  PrintInts("allreduce sum max prod", results, 3);

  unsigned bits = 1u << rank, bor = 0, band = 0, bxor = 0;
  MPI_Allreduce(&bits, &bor, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
  MPI_Allreduce(&bits, &band, 1, MPI_UNSIGNED, MPI_BAND, MPI_COMM_WORLD);
  MPI_Allreduce(&bits, &bxor, 1, MPI_UNSIGNED, MPI_BXOR, MPI_COMM_WORLD);
  const int bitwise[3] = {(int)bor, (int)band, (int)bxor};
  PrintInts("allreduce bor band bxor", bitwise, 3);

  double halves[4] = {rank * 0.5, -rank * 0.25, 1.0, rank % 2 ? 2.0 : -2.0}, total[4];
  MPI_Reduce(halves, total, 4, MPI_DOUBLE, MPI_SUM, size - 1, MPI_COMM_WORLD);
  if (rank == size - 1) {
    const long long scaled[4] = {(long long)(total[0] * 4), (long long)(total[1] * 4),
                                 (long long)total[2], (long long)total[3]};
    Print("reduce doubles to the last rank (x4, x4, x1, x1)", scaled, 4);
  }

  struct {
    double value;
    int index;
  } mine = {(double)((rank * 7) % size), rank}, best;
  MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD);
  const int maxloc[2] = {(int)best.value, best.index};
  PrintInts("allreduce maxloc", maxloc, 2);
  MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD);
  const int minloc[2] = {(int)best.value, best.index};
  PrintInts("allreduce minloc", minloc, 2);

  MPI_Op product;
  MPI_Op_create(MatrixProduct, 0, &product);
  int matrix[4] = {1 + rank, 2, rank % 3, 1}, result[4];
  MPI_Allreduce(matrix, result, 4, MPI_INT, product, MPI_COMM_WORLD);
  PrintInts("allreduce of a non-commutative op", result, 4);
  MPI_Scan(matrix, result, 4, MPI_INT, product, MPI_COMM_WORLD);
  PrintInts("scan of a non-commutative op", result, 4);
  MPI_Op_free(&product);

  int scanned = 0, exscanned = -1;
  MPI_Scan(&value, &scanned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Exscan(&value, &exscanned, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) exscanned = 0; /* undefined on rank 0 */
  const int scans[2] = {scanned, exscanned};
  PrintInts("scan exscan", scans, 2);

  int* blocks = malloc(sizeof(int) * 2 * size);
  for (int i = 0; i < 2 * size; ++i) blocks[i] = rank * 100 + i;
  int mine_block[2];
  MPI_Reduce_scatter_block(blocks, mine_block, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  PrintInts("reduce_scatter_block", mine_block, 2);
  free(blocks);
}

static void Movement(void) {
  int root_value[3] = {0, 0, 0};
  if (rank == 1 % size) root_value[0] = 11, root_value[1] = 22, root_value[2] = 33;
  MPI_Bcast(root_value, 3, MPI_INT, 1 % size, MPI_COMM_WORLD);
  PrintInts("bcast from rank 1", root_value, 3);

  int* all = malloc(sizeof(int) * 3 * size);
  int mine[3] = {rank, rank * rank, -rank};
  MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
  PrintInts("allgather", all, 3 * size);
  MPI_Gather(mine, 3, MPI_INT, all, 3, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) PrintInts("gather to rank 0", all, 3 * size);
  for (int i = 0; i < 3 * size; ++i) all[i] = 1000 * rank + i;
  int piece[3];
  MPI_Scatter(all, 3, MPI_INT, piece, 3, MPI_INT, size - 1, MPI_COMM_WORLD);
  PrintInts("scatter from the last rank", piece, 3);

  int* to_all = malloc(sizeof(int) * size);
  int* from_all = malloc(sizeof(int) * size);
  for (int i = 0; i < size; ++i) to_all[i] = rank * size + i;
  MPI_Alltoall(to_all, 1, MPI_INT, from_all, 1, MPI_INT, MPI_COMM_WORLD);
  PrintInts("alltoall", from_all, size);

  /* Allgatherv: rank r gives r + 1 values. */
  int* counts = malloc(sizeof(int) * size);
  int* displs = malloc(sizeof(int) * size);
  int total = 0;
  for (int r = 0; r < size; ++r) counts[r] = r + 1, displs[r] = total, total += r + 1;
  int* gathered = malloc(sizeof(int) * total);
  int* contribution = malloc(sizeof(int) * (rank + 1));
  for (int i = 0; i <= rank; ++i) contribution[i] = rank * 10 + i;
  MPI_Allgatherv(contribution, rank + 1, MPI_INT, gathered, counts, displs, MPI_INT,
                 MPI_COMM_WORLD);
  PrintInts("allgatherv", gathered, total);
  free(all), free(to_all), free(from_all), free(counts), free(displs), free(gathered);
  free(contribution);
}

static void Messages(void) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int out[2] = {rank, rank * 3}, in[2] = {-1, -1};
  MPI_Status status;
  MPI_Sendrecv(out, 2, MPI_INT, next, 5, in, 2, MPI_INT, prev, 5, MPI_COMM_WORLD, &status);
  int count = 0;
  MPI_Get_count(&status, MPI_INT, &count);
  const int ring[5] = {in[0], in[1], status.MPI_SOURCE, status.MPI_TAG, count};
  PrintInts("sendrecv ring: values, source, tag, count", ring, 5);

  /* Rank 0 hears from everyone with MPI_ANY_SOURCE, and prints the sum of what came
   * (the order of arrival is the library's). */
  if (rank == 0) {
    long long sum = 0, tags = 0;
    for (int i = 1; i < size; ++i) {
      double large[2000];
      MPI_Recv(large, 2000, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
      MPI_Get_count(&status, MPI_DOUBLE, &count);
      for (int k = 0; k < count; ++k) sum += (long long)large[k];
      tags += status.MPI_TAG;
    }
    const long long heard[2] = {sum, tags};
    Print("any-source receives: sum of values, sum of tags", heard, 2);
  } else {
    double large[2000];
    for (int k = 0; k < 2000; ++k) large[k] = rank + k;
    MPI_Send(large, 1000 + rank, MPI_DOUBLE, 0, 40 + rank, MPI_COMM_WORLD);
  }
  /* Without it, rank 0's MPI_ANY_TAG receives could take the ring message below from
   * its predecessor (which may send it as soon as its own MPI_Send returns), and rank
   * 0's receive with tag 6 would then wait forever. */
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Request requests[2];
  int value = rank * 11, got = -1;
  MPI_Irecv(&got, 1, MPI_INT, prev, 6, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(&value, 1, MPI_INT, next, 6, MPI_COMM_WORLD, &requests[1]);
  MPI_Status statuses[2];
  MPI_Waitall(2, requests, statuses);
  PrintInts("isend irecv waitall", &got, 1);
}

static void Communicators(void) {
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
  int half_rank = -1, half_size = 0, sum = 0;
  MPI_Comm_rank(half, &half_rank);
  MPI_Comm_size(half, &half_size);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
  const int split[3] = {half_rank, half_size, sum};
  PrintInts("split by parity, reversed: rank size sum", split, 3);

  MPI_Request request;
  int value = rank + 1, total = 0;
  MPI_Iallreduce(&value, &total, 1, MPI_INT, MPI_SUM, half, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  PrintInts("iallreduce in the half", &total, 1);

  /* The halves face each other: an allreduce on the intercommunicator gives each
   * side the other side's sum. */
  MPI_Comm inter;
  int other_leader = size - 1; /* the other parity's highest rank leads its half */
  if (other_leader % 2 == rank % 2) --other_leader;
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, other_leader, 9, &inter);
  int remote = 0, other = 0;
  MPI_Comm_remote_size(inter, &remote);
  MPI_Allreduce(&value, &other, 1, MPI_INT, MPI_SUM, inter);
  const int facing[2] = {remote, other};
  PrintInts("intercommunicator: remote size, the other side's sum", facing, 2);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 1) {
    char path[4096];
    snprintf(path, sizeof(path), "%s.%d", argv[1], rank);
    if (freopen(path, "w", stdout) == NULL) {
      perror(path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* what a rank printed survives its end */
  }
  if (size < 2 || size > 16) {
    if (rank == 0) fprintf(stderr, "results.c runs on 2 to 16 ranks\n");
    MPI_Finalize();
    return 1;
  }
  int version = 0, subversion = 0;
  MPI_Get_version(&version, &subversion);
  if (version < 3) printf("rank %d: MPI version %d.%d is too old\n", rank, version, subversion);
  Reductions();
  Movement();
  Messages();
  Communicators();
  MPI_Finalize();
  return 0;
}
