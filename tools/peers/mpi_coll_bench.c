/* The peers' side of tools/compare_peers.sh: times the collectives of an installed
 * MPI (Open MPI or MPICH, Debian packages) with the method tools/zcoll_bench uses
 * (docs in README, "Performance"): float sum; 1000 timed iterations after 100 warm-up
 * ones up to 8 KiB, 100 after 10 above; each iteration timed alone (reduce: barrier;
 * t0; coll; t1 -- the others: t0; coll; t1; barrier); the per-rank mean averaged over
 * the ranks. Message sizes as zcoll_bench counts them: the vector for reduce,
 * allreduce and bcast; the whole vector for reduce_scatter(_block); one rank's block
 * for scatter(v), gather, allgather and alltoall.
 *
 * Prints one CSV row per collective and size: coll,ranks,bytes,usec
 * Usage: mpirun -np N mpi_coll_bench MIN_BYTES MAX_BYTES COLL...   (sizes x4 apart)
 * COLL: reduce allreduce reduce_scatter_block reduce_scatter scatter scatterv bcast
 *       gather allgather alltoall reduce_local barrier scan exscan
 * (barrier: one row, bytes 0; each iteration t0; barrier; t1, as osu_barrier and
 * zcoll_bench time it)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct Buffers {
  float* send;
  float* recv;
  int* counts;
  int* displs;
  int block; /* elements of one rank's block, or the vector */
  int ranks;
};

typedef void (*Collective)(struct Buffers* b);

static void Reduce(struct Buffers* b) {
  MPI_Reduce(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
}
static void Allreduce(struct Buffers* b) {
  MPI_Allreduce(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void ReduceScatterBlock(struct Buffers* b) {
  MPI_Reduce_scatter_block(b->send, b->recv, b->counts[0], MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void ReduceScatter(struct Buffers* b) {
  MPI_Reduce_scatter(b->send, b->recv, b->counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void Scatter(struct Buffers* b) {
  MPI_Scatter(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, 0, MPI_COMM_WORLD);
}
static void Scatterv(struct Buffers* b) {
  MPI_Scatterv(b->send, b->counts, b->displs, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, 0,
               MPI_COMM_WORLD);
}
static void Bcast(struct Buffers* b) { MPI_Bcast(b->send, b->block, MPI_FLOAT, 0, MPI_COMM_WORLD); }
static void Gather(struct Buffers* b) {
  MPI_Gather(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, 0, MPI_COMM_WORLD);
}
static void Allgather(struct Buffers* b) {
  MPI_Allgather(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, MPI_COMM_WORLD);
}
static void Alltoall(struct Buffers* b) {
  MPI_Alltoall(b->send, b->block, MPI_FLOAT, b->recv, b->block, MPI_FLOAT, MPI_COMM_WORLD);
}
static void ReduceLocal(struct Buffers* b) {
  MPI_Reduce_local(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM);
}

static void Scan(struct Buffers* b) {
  MPI_Scan(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static void Exscan(struct Buffers* b) {
  MPI_Exscan(b->send, b->recv, b->block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void Barrier(struct Buffers* b) {
  (void)b;
  MPI_Barrier(MPI_COMM_WORLD);
}

static const struct {
  const char* name;
  Collective run;
  int whole_vector; /* bytes count the whole vector, split over the ranks */
} kCollectives[] = {
    {"reduce", Reduce, 0},
    {"allreduce", Allreduce, 0},
    {"reduce_scatter_block", ReduceScatterBlock, 1},
    {"reduce_scatter", ReduceScatter, 1},
    {"scatter", Scatter, 0},
    {"scatterv", Scatterv, 0},
    {"bcast", Bcast, 0},
    {"gather", Gather, 0},
    {"allgather", Allgather, 0},
    {"alltoall", Alltoall, 0},
    {"reduce_local", ReduceLocal, 0},
    {"barrier", Barrier, 0},
    {"scan", Scan, 0},
    {"exscan", Exscan, 0},
};

/* Microseconds per call on this rank, averaged over the ranks (at rank 0). */
static double Time(int which, size_t bytes, int ranks) {
  struct Buffers b;
  size_t elements = bytes / sizeof(float);
  if (elements == 0) elements = 1;
  b.ranks = ranks;
  b.block = (int)elements;
  const size_t total = elements * (size_t)ranks;
  b.send = malloc(total * sizeof(float));
  b.recv = malloc(total * sizeof(float));
  b.counts = malloc((size_t)ranks * sizeof(int));
  b.displs = malloc((size_t)ranks * sizeof(int));
  for (size_t i = 0; i < total; ++i) {
    b.send[i] = (float)(i % 7);
    b.recv[i] = 0;
  }
  const int share = kCollectives[which].whole_vector
                        ? ((int)elements / ranks > 0 ? (int)elements / ranks : 1)
                        : (int)elements;
  for (int r = 0; r < ranks; ++r) {
    b.counts[r] = share;
    b.displs[r] = r * (int)elements;
  }
  const int timed = bytes <= 8192 ? 1000 : 100, warm = timed / 10;
  const int barrier_before = kCollectives[which].run == Reduce;
  double sum = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < warm + timed; ++i) {
    if (barrier_before) MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    kCollectives[which].run(&b);
    const double took = MPI_Wtime() - start;
    if (i >= warm) sum += took;
    if (!barrier_before && kCollectives[which].run != Barrier) MPI_Barrier(MPI_COMM_WORLD);
  }
  double mine = sum / timed * 1e6, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  free(b.send);
  free(b.recv);
  free(b.counts);
  free(b.displs);
  return all / ranks;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpi_coll_bench MIN_BYTES MAX_BYTES COLL...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const size_t min = strtoull(argv[1], NULL, 10), max = strtoull(argv[2], NULL, 10);
  for (int a = 3; a < argc; ++a) {
    int which = -1;
    for (size_t c = 0; c < sizeof(kCollectives) / sizeof(kCollectives[0]); ++c) {
      if (strcmp(argv[a], kCollectives[c].name) == 0) which = (int)c;
    }
    if (which < 0) {
      if (rank == 0) fprintf(stderr, "mpi_coll_bench: unknown collective '%s'\n", argv[a]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int barrier = kCollectives[which].run == Barrier;
    for (size_t bytes = barrier   ? 0
                        : min > 0 ? min
                                  : 1;
         bytes <= max; bytes = barrier ? max + 1 : bytes * 4) {
      const double usec = Time(which, bytes, ranks);
      if (rank == 0) printf("%s,%d,%zu,%.3f\n", argv[a], ranks, bytes, usec);
      fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
