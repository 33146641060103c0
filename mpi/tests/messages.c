/* Point-to-point messages on zcoll's MPI interface, over 2 or more ranks: blocking and
 * nonblocking sends and receives, eager (small) and large messages, MPI_ANY_SOURCE and
 * MPI_ANY_TAG, the standard's order (non-overtaking), tag selection from waiting
 * messages, sends to itself, MPI_PROC_NULL, truncation, messages between collectives,
 * on an intercommunicator, on communicators freed and made again (their contexts
 * reused), and a send freed while active. Prints "messages.c: N checks passed on R
 * ranks" on every rank. */
#define _POSIX_C_SOURCE 199309L
#include <time.h>

#include "check.h"

/* Over the eager limit (4 KiB), so that the message waits for its receive. */
enum { kLarge = 300000, kSmall = 5 };

static int Value(int sender, int tag, int i) { return sender * 1000003 + tag * 7919 + i; }

static void Fill(int* data, int n, int sender, int tag) {
  for (int i = 0; i < n; ++i) data[i] = Value(sender, tag, i);
}

static void CheckFilled(const char* what, const int* data, int n, int sender, int tag) {
  for (int i = 0; i < n; ++i) {
    if (data[i] != Value(sender, tag, i)) {
      CHECK_EQ(what, data[i], Value(sender, tag, i));
    }
  }
  ++checks;
}

static void CheckStatus(const MPI_Status* status, int source, int tag, int count) {
  int got = -1;
  CHECK_EQ("status source", status->MPI_SOURCE, source);
  CHECK_EQ("status tag", status->MPI_TAG, tag);
  CALL(MPI_Get_count(status, MPI_INT, &got));
  CHECK_EQ("status count", got, count);
}

/* Every rank sends to the next and receives from the one before: small and large. */
static void Ring(int rank, int size, int* send, int* recv) {
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  const int counts[2] = {kSmall, kLarge};
  for (int c = 0; c < 2; ++c) {
    MPI_Status status;
    Fill(send, counts[c], rank, 10 + c);
    CALL(MPI_Sendrecv(send, counts[c], MPI_INT, next, 10 + c, recv, counts[c], MPI_INT, prev,
                      10 + c, MPI_COMM_WORLD, &status));
    CheckStatus(&status, prev, 10 + c, counts[c]);
    CheckFilled("ring", recv, counts[c], prev, 10 + c);
  }
}

/* Rank 0 receives from everyone with MPI_ANY_SOURCE and MPI_ANY_TAG. */
static void AnySource(int rank, int size, int* send, int* recv) {
  for (int round = 0; round < 2; ++round) {
    const int n = round == 0 ? kSmall : kLarge;
    /* (A round's messages are all taken before the next round's are sent.) */
    CALL(MPI_Barrier(MPI_COMM_WORLD));
    if (rank != 0) {
      Fill(send, n, rank, 100 + rank);
      CALL(MPI_Send(send, n, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD));
      continue;
    }
    int seen = 0;
    for (int i = 1; i < size; ++i) {
      MPI_Status status;
      CALL(MPI_Recv(recv, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
      const int source = status.MPI_SOURCE;
      CHECK_EQ("any-source source in range", source > 0 && source < size, 1);
      CheckStatus(&status, source, 100 + source, n);
      CheckFilled("any source", recv, n, source, 100 + source);
      CHECK_EQ("each source once", (seen >> source) & 1, 0);
      seen |= 1 << source;
    }
  }
}

/* Messages of one sender with one tag arrive in the order sent, eager and large mixed;
 * a receive by tag takes a later message first. */
static void Order(int rank, int* send, int* recv) {
  const int counts[4] = {kSmall, kLarge, kSmall, kLarge};
  if (rank == 0) {
    for (int m = 0; m < 4; ++m) {
      Fill(send, counts[m], 0, 20 + m);
      CALL(MPI_Send(send, counts[m], MPI_INT, 1, 7, MPI_COMM_WORLD));
    }
    /* Tags 31 then 32, large and small; the receiver asks for 32 first. */
    for (int m = 0; m < 2; ++m) {
      Fill(send, counts[m + 1], 0, 31 + m);
      CALL(MPI_Send(send, counts[m + 1], MPI_INT, 1, 31 + m, MPI_COMM_WORLD));
    }
  } else if (rank == 1) {
    for (int m = 0; m < 4; ++m) {
      MPI_Status status;
      CALL(MPI_Recv(recv, kLarge, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
      CheckStatus(&status, 0, 7, counts[m]);
      CheckFilled("in order", recv, counts[m], 0, 20 + m);
    }
    /* The large message with tag 31 waits for its receive, so its sender blocks: tag
     * 32 cannot come first. So: receive 31 nonblocking, then 32, then wait. */
    MPI_Request first;
    MPI_Status status;
    int* other = recv + kLarge;
    CALL(MPI_Irecv(other, kLarge, MPI_INT, 0, 32, MPI_COMM_WORLD, &first));
    CALL(MPI_Recv(recv, kLarge, MPI_INT, 0, 31, MPI_COMM_WORLD, &status));
    CheckStatus(&status, 0, 31, kLarge);
    CALL(MPI_Wait(&first, &status));
    CheckStatus(&status, 0, 32, kSmall);
    CheckFilled("by tag, large", recv, kLarge, 0, 31);
    CheckFilled("by tag, small", other, kSmall, 0, 32);
    CHECK_EQ("a completed request is null", first, MPI_REQUEST_NULL);
  }
}

/* Small messages wait in the receiver until asked for by tag, in reverse order. */
static void Unexpected(int rank, int* send, int* recv) {
  if (rank == 0) {
    for (int t = 0; t < 5; ++t) {
      Fill(send, kSmall, 0, 40 + t);
      CALL(MPI_Send(send, kSmall, MPI_INT, 1, 40 + t, MPI_COMM_WORLD));
    }
  }
  CALL(MPI_Barrier(MPI_COMM_WORLD)); /* they are all sent (eager) before any receive */
  if (rank == 1) {
    for (int t = 4; t >= 0; --t) {
      MPI_Status status;
      CALL(MPI_Recv(recv, kSmall, MPI_INT, 0, 40 + t, MPI_COMM_WORLD, &status));
      CheckStatus(&status, 0, 40 + t, kSmall);
      CheckFilled("unexpected by tag", recv, kSmall, 0, 40 + t);
    }
  }
}

/* Nonblocking exchange with every rank, completed by Waitall and by Testall. */
static void Exchange(int rank, int size, int* send, int* recv, int use_test) {
  MPI_Request requests[64];
  MPI_Status statuses[64];
  const int n = use_test ? kSmall : 3000; /* 12 KB: large */
  int count = 0;
  for (int peer = 0; peer < size; ++peer) {
    CALL(MPI_Irecv(recv + peer * n, n, MPI_INT, peer, 50, MPI_COMM_WORLD, &requests[count++]));
  }
  for (int peer = size - 1; peer >= 0; --peer) {
    Fill(send + peer * n, n, rank, 50 + peer);
    CALL(MPI_Isend(send + peer * n, n, MPI_INT, peer, 50, MPI_COMM_WORLD, &requests[count++]));
  }
  if (use_test) {
    int flag = 0;
    for (long spins = 0; !flag && spins < 100000000L; ++spins) {
      CALL(MPI_Testall(count, requests, &flag, statuses));
    }
    CHECK_EQ("Testall completed", flag, 1);
  } else {
    CALL(MPI_Waitall(count, requests, statuses));
  }
  for (int peer = 0; peer < size; ++peer) {
    CheckStatus(&statuses[peer], peer, 50, n);
    CheckFilled("exchange", recv + peer * n, n, peer, 50 + rank);
    CHECK_EQ("request nulled", requests[peer], MPI_REQUEST_NULL);
  }
}

/* To itself (small blocking, large nonblocking), and to and from MPI_PROC_NULL. */
static void SelfAndNull(int rank, int* send, int* recv) {
  MPI_Status status;
  MPI_Request requests[2];
  Fill(send, kSmall, rank, 60);
  CALL(MPI_Send(send, kSmall, MPI_INT, rank, 60, MPI_COMM_WORLD));
  CALL(MPI_Recv(recv, kSmall, MPI_INT, rank, 60, MPI_COMM_WORLD, &status));
  CheckStatus(&status, rank, 60, kSmall);
  CheckFilled("to itself, small", recv, kSmall, rank, 60);
  Fill(send, kLarge, rank, 61);
  CALL(MPI_Isend(send, kLarge, MPI_INT, rank, 61, MPI_COMM_WORLD, &requests[0]));
  CALL(MPI_Irecv(recv, kLarge, MPI_INT, MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &requests[1]));
  CALL(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE));
  CheckFilled("to itself, large", recv, kLarge, rank, 61);

  recv[0] = -5;
  CALL(MPI_Send(send, kLarge, MPI_INT, MPI_PROC_NULL, 62, MPI_COMM_WORLD));
  CALL(MPI_Recv(recv, kLarge, MPI_INT, MPI_PROC_NULL, 62, MPI_COMM_WORLD, &status));
  CheckStatus(&status, MPI_PROC_NULL, MPI_ANY_TAG, 0);
  CHECK_EQ("MPI_PROC_NULL leaves the buffer", recv[0], -5);
  CALL(MPI_Irecv(recv, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &requests[0]));
  CALL(MPI_Wait(&requests[0], &status));
  CHECK_EQ("MPI_PROC_NULL request's source", status.MPI_SOURCE, MPI_PROC_NULL);
}

/* A receive buffer too small: MPI_ERR_TRUNCATE at the receiver, success at the sender;
 * the communicator goes on working. */
static void Truncation(int rank, int* send, int* recv) {
  MPI_Comm comm;
  CALL(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  CALL(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  const int counts[2] = {8, kLarge};
  for (int c = 0; c < 2; ++c) {
    if (rank == 0) {
      Fill(send, counts[c], 0, 70 + c);
      CALL(MPI_Send(send, counts[c], MPI_INT, 1, 70 + c, comm));
    } else if (rank == 1) {
      MPI_Status status;
      recv[4] = -7;
      const int code = MPI_Recv(recv, 4, MPI_INT, 0, 70 + c, comm, &status);
      Expect("a message longer than the buffer", code, MPI_ERR_TRUNCATE,
             "more than the receive buffer's 16");
      CHECK_EQ("truncated status source", status.MPI_SOURCE, 0);
#ifdef ZCOLL_MPI_H_
      /* zcoll's promise, beyond the standard's (which leaves only the buffer's contents
       * undefined): Open MPI 4.1.4 writes a truncated large message past the buffer. */
      CHECK_EQ("nothing past the buffer", recv[4], -7);
#endif
      if (c == 0) CheckFilled("an eager message's first bytes", recv, 4, 0, 70);
    }
  }
  /* Still usable: a message that fits. */
  if (rank == 0) {
    Fill(send, kLarge, 0, 72);
    CALL(MPI_Send(send, kLarge, MPI_INT, 1, 72, comm));
  } else if (rank == 1) {
    CALL(MPI_Recv(recv, kLarge, MPI_INT, 0, 72, comm, MPI_STATUS_IGNORE));
    CheckFilled("after truncation", recv, kLarge, 0, 72);
  }
  CALL(MPI_Comm_free(&comm));
}

/* A receive posted before collectives, its message sent after them; a large send
 * pending across a blocking collective. */
static void BesideCollectives(int rank, int size, int* send, int* recv) {
  MPI_Request request;
  const int from = (rank + size - 1) % size, to = (rank + 1) % size;
  CALL(MPI_Irecv(recv, kLarge, MPI_INT, from, 80, MPI_COMM_WORLD, &request));
  int one = 1, total = 0;
  CALL(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  CHECK_EQ("allreduce beside a receive", total, size);
  MPI_Request sent;
  Fill(send, kLarge, rank, 80);
  CALL(MPI_Isend(send, kLarge, MPI_INT, to, 80, MPI_COMM_WORLD, &sent));
  /* The peer may be in this barrier while our send waits for its receive. */
  CALL(MPI_Barrier(MPI_COMM_WORLD));
  CALL(MPI_Wait(&sent, MPI_STATUS_IGNORE));
  CALL(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CheckFilled("beside collectives", recv, kLarge, from, 80);
}

/* Communicators made and freed again and again: a freed one's context is reused, and
 * no message of one may reach another. */
static void Reuse(int rank, int size, int* send, int* recv) {
  for (int round = 0; round < 20; ++round) {
    MPI_Comm comm;
    CALL(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    const int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int n = round % 2 == 0 ? kSmall : 2000;
    Fill(send, n, rank, 90 + round);
    CALL(MPI_Sendrecv(send, n, MPI_INT, to, round, recv, n, MPI_INT, from, MPI_ANY_TAG, comm,
                      MPI_STATUS_IGNORE));
    CheckFilled("a reused context", recv, n, from, 90 + round);
    CALL(MPI_Comm_free(&comm));
  }
}

/* A send freed while active still arrives. */
static void FreedSend(int rank, int* send, int* recv) {
  if (rank == 0) {
    MPI_Request request;
    Fill(send, kLarge, 0, 95);
    CALL(MPI_Isend(send, kLarge, MPI_INT, 1, 95, MPI_COMM_WORLD, &request));
    CALL(MPI_Request_free(&request));
    CHECK_EQ("freed request is null", request, MPI_REQUEST_NULL);
    /* The buffer is the program's again only once a receive confirms it. */
    CALL(MPI_Recv(recv, 1, MPI_INT, 1, 96, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  } else if (rank == 1) {
    CALL(MPI_Recv(recv, kLarge, MPI_INT, 0, 95, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CheckFilled("a freed send", recv, kLarge, 0, 95);
    CALL(MPI_Send(recv, 1, MPI_INT, 0, 96, MPI_COMM_WORLD));
  }
}

/* Between the halves of the world: each rank of one group sends to the same-numbered
 * (modulo) rank of the other, which receives from any source of the other group. */
static void Intercomm(int rank, int size, int* send, int* recv) {
  const int upper = rank >= size / 2;
  MPI_Comm half, inter;
  CALL(MPI_Comm_split(MPI_COMM_WORLD, upper, rank, &half));
  CALL(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, upper ? 0 : size / 2, 5, &inter));
  int local = -1, remote = -1;
  CALL(MPI_Comm_rank(inter, &local));
  CALL(MPI_Comm_remote_size(inter, &remote));
  const int lower_size = size / 2;
  /* The lower group sends; each upper rank receives from lower rank (its rank mod the
   * lower size), so lower rank r sends to every upper rank u with u % lower == r. */
  if (!upper) {
    for (int u = local; u < remote; u += lower_size) {
      Fill(send, kLarge, local, 97);
      CALL(MPI_Send(send, kLarge, MPI_INT, u, 97, inter));
    }
  } else {
    MPI_Status status;
    CALL(MPI_Recv(recv, kLarge, MPI_INT, MPI_ANY_SOURCE, 97, inter, &status));
    CheckStatus(&status, local % lower_size, 97, kLarge);
    CheckFilled("across an intercommunicator", recv, kLarge, local % lower_size, 97);
  }
  CALL(MPI_Comm_free(&inter));
  CALL(MPI_Comm_free(&half));
}

/* `messages_c unmatched [waitall]`: rank 1 waits for a message nobody sends (alone by
 * MPI_Recv, or beside one that comes, by MPI_Waitall), the others in a barrier. At
 * ZCOLL_TIMEOUT rank 1's wait fails the job: rank 1 names the receive, every other rank
 * ends with that reason. Prints "unmatched passed" on every rank. */
static int Unmatched(int rank, int waitall) {
  CALL(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int value = 0, code = MPI_SUCCESS;
  if (rank == 0 && waitall) CALL(MPI_Send(&value, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
  if (rank == 1) {
    if (waitall) {
      MPI_Request requests[2];
      int other = 0;
      CALL(MPI_Irecv(&value, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, &requests[0]));
      CALL(MPI_Irecv(&other, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &requests[1]));
      MPI_Status statuses[2];
      code = MPI_Waitall(2, requests, statuses);
      CHECK_EQ("waitall's class", ClassOf(code), MPI_ERR_IN_STATUS);
      code = statuses[0].MPI_ERROR;
      CHECK_EQ("the message that came", statuses[1].MPI_ERROR, MPI_SUCCESS);
    } else {
      code = MPI_Recv(&value, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    Expect("a receive nothing matches", code, MPI_ERR_OTHER,
           "the receive from rank 0 with tag 99 (of MPI_");
  } else {
    /* A second later than rank 1's wait, so that the barrier's own deadline is later. */
    const struct timespec second = {1, 0};
    nanosleep(&second, NULL);
    code = MPI_Barrier(MPI_COMM_WORLD);
    Expect("a barrier beside it", code, MPI_ERR_OTHER,
           "the receive from rank 0 with tag 99 (of MPI_");
  }
  printf("rank %d: unmatched passed\n", rank);
  return 0;
}

int main(int argc, char** argv) {
  int rank = -1, size = 0;
  CALL(MPI_Init(&argc, &argv));
  CALL(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CALL(MPI_Comm_size(MPI_COMM_WORLD, &size));
  check_rank = rank;
  if (argc > 1 && strcmp(argv[1], "unmatched") == 0) {
    return Unmatched(rank, argc > 2 && strcmp(argv[2], "waitall") == 0);
  }
  if (size < 2 || size > 16) {
    fprintf(stderr, "messages.c runs on 2 to 16 ranks, not %d\n", size);
    return 1;
  }
  int* send = malloc(sizeof(int) * 2 * kLarge);
  int* recv = malloc(sizeof(int) * 2 * kLarge);
  Ring(rank, size, send, recv);
  AnySource(rank, size, send, recv);
  Order(rank, send, recv);
  Unexpected(rank, send, recv);
  Exchange(rank, size, send, recv, 0);
  Exchange(rank, size, send, recv, 1);
  SelfAndNull(rank, send, recv);
  Truncation(rank, send, recv);
  BesideCollectives(rank, size, send, recv);
  Reuse(rank, size, send, recv);
  FreedSend(rank, send, recv);
  Intercomm(rank, size, send, recv);
  free(send);
  free(recv);
  CALL(MPI_Finalize());
  printf("messages.c: %d checks passed on %d ranks\n", checks, size);
  return 0;
}
