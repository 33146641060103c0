#include "transport/bootstrap/file_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace zcoll {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int error) {
  return absl::UnavailableError(absl::StrCat(what, " ", path, ": ", std::strerror(error)));
}

// Closes a descriptor when it goes out of scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

class FileStore : public KeyValueStore {
 public:
  explicit FileStore(std::string directory) : directory_(std::move(directory)) {}

  absl::Status Set(absl::string_view key, absl::string_view value, absl::Time) override {
    RETURN_IF_ERROR(CheckStoreValue(key, value));
    return WriteValue(key, value);
  }

  absl::StatusOr<std::string> Get(absl::string_view key, absl::Time deadline) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    absl::Duration nap = absl::Milliseconds(1);
    while (true) {
      absl::StatusOr<std::string> value = ReadValue(key);
      if (value.ok() || !absl::IsNotFound(value.status())) return value;
      const absl::Time now = absl::Now();
      if (now >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("key '", key, "' was not set in ", url(), " before the deadline"));
      }
      absl::SleepFor(std::min(nap, deadline - now));
      nap = std::min(nap * 2, absl::Milliseconds(20));
    }
  }

  absl::StatusOr<int64_t> Add(absl::string_view key, int64_t delta, absl::Time) override {
    RETURN_IF_ERROR(CheckStoreKey(key));
    const std::string lock_path = absl::StrCat(directory_, "/.", key, ".lock");
    FileDescriptor lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (lock.get() < 0) return ErrnoError("cannot open", lock_path, errno);
    if (flock(lock.get(), LOCK_EX) != 0) return ErrnoError("cannot lock", lock_path, errno);
    int64_t sum = delta;
    absl::StatusOr<std::string> current = ReadValue(key);
    if (current.ok()) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(*current, &value)) {
        return absl::FailedPreconditionError(
            absl::StrCat("Add on key '", key, "' of ", url(), ": its value is not an integer"));
      }
      sum = static_cast<int64_t>(static_cast<uint64_t>(value) + static_cast<uint64_t>(delta));
    } else if (!absl::IsNotFound(current.status())) {
      return current.status();
    }
    RETURN_IF_ERROR(WriteValue(key, absl::StrCat(sum)));
    return sum;  // the lock is released when `lock` closes
  }

  std::string url() const override { return absl::StrCat("file://", directory_); }

 private:
  std::string PathOf(absl::string_view key) const { return absl::StrCat(directory_, "/", key); }

  absl::Status WriteValue(absl::string_view key, absl::string_view value) {
    const std::string path = PathOf(key);
    const std::string temporary = absl::StrCat(directory_, "/.", key, ".", getpid(), ".tmp");
    {
      FileDescriptor file(open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
      if (file.get() < 0) return ErrnoError("cannot create", temporary, errno);
      size_t written = 0;
      while (written < value.size()) {
        const ssize_t n = write(file.get(), value.data() + written, value.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return ErrnoError("cannot write", temporary, errno);
        written += static_cast<size_t>(n);
      }
    }
    if (rename(temporary.c_str(), path.c_str()) != 0) {
      const int error = errno;
      unlink(temporary.c_str());
      return ErrnoError("cannot rename into", path, error);
    }
    return absl::OkStatus();
  }

  // NotFound while the key is not set.
  absl::StatusOr<std::string> ReadValue(absl::string_view key) const {
    const std::string path = PathOf(key);
    FileDescriptor file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (file.get() < 0) {
      if (errno == ENOENT) return absl::NotFoundError(absl::StrCat("no key '", key, "'"));
      return ErrnoError("cannot open", path, errno);
    }
    std::string value;
    char buffer[65536];
    while (true) {
      const ssize_t n = read(file.get(), buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("cannot read", path, errno);
      if (n == 0) return value;
      if (value.size() + static_cast<size_t>(n) > kMaxStoreValueBytes) {
        return absl::DataLossError(absl::StrCat("the value of key '", key, "' in ", url(),
                                                " exceeds ", kMaxStoreValueBytes, " bytes"));
      }
      value.append(buffer, static_cast<size_t>(n));
    }
  }

  std::string directory_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<KeyValueStore>> OpenFileStore(absl::string_view directory) {
  if (directory.empty() || directory[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("file store directory '", directory,
                                                   "' is not an absolute path (file:///DIR)"));
  }
  std::string path(directory);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError("cannot create the file store directory", path, errno);
  }
  struct stat info {};
  if (stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("file store path ", path, " is not a directory"));
  }
  return std::make_unique<FileStore>(std::move(path));
}

}  // namespace zcoll
