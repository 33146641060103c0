/* What the C test programs of the MPI interface share.
 *
 * CHECK_EQ(what, got, want) counts a check and, on a mismatch, names it, the rank and
 * the line, and aborts the job; CALL(expr) checks that a call returned MPI_SUCCESS.
 * ClassOf gives an error code's class; Expect checks a code's class and that its
 * message (MPI_Error_string) says `want_text` (zcoll's words: not checked when built
 * against another MPI). Messages name `check_rank`: set it after MPI_Init. */
#ifndef ZCOLL_MPI_TESTS_CHECK_H_
#define ZCOLL_MPI_TESTS_CHECK_H_

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int checks __attribute__((unused)) = 0;
static int check_rank __attribute__((unused)) = -1;

#define CHECK_EQ(what, got, want)                                                             \
  do {                                                                                        \
    long long got_ = (long long)(got), want_ = (long long)(want);                             \
    ++checks;                                                                                 \
    if (got_ != want_) {                                                                      \
      fprintf(stderr, "rank %d: %s: got %lld, want %lld (line %d)\n", check_rank, what, got_, \
              want_, __LINE__);                                                               \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                           \
    }                                                                                         \
  } while (0)

#define CALL(expr) CHECK_EQ(#expr, (expr), MPI_SUCCESS)

static inline int ClassOf(int code) {
  int error_class = -1;
  MPI_Error_class(code, &error_class);
  return error_class;
}

/* `code` has class `want_class`, and its message contains `want_text` and is as long as
 * MPI_Error_string says; exits 1 otherwise. Prints the message. */
static inline void Expect(const char* what, int code, int want_class, const char* want_text) {
#ifndef ZCOLL_MPI_H_
  want_text = ""; /* built against another MPI (a cross-check): its words are its own */
#endif
  int error_class = -1, length = 0;
  char text[MPI_MAX_ERROR_STRING] = "";
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS ||
      MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    fprintf(stderr, "rank %d: %s: code %d has no class or string\n", check_rank, what, code);
    exit(1);
  }
  if (error_class != want_class || strstr(text, want_text) == NULL || (int)strlen(text) != length) {
    fprintf(stderr, "rank %d: %s: code %d, class %d, \"%s\"; want class %d and \"%s\"\n",
            check_rank, what, code, error_class, text, want_class, want_text);
    exit(1);
  }
  printf("rank %d: %s: \"%s\"\n", check_rank, what, text);
}

#endif /* ZCOLL_MPI_TESTS_CHECK_H_ */
