// A main for the fuzz targets without libFuzzer (gcc builds, `bazel test`):
//
//   TARGET --write-seeds DIR      writes SeedInputs() to DIR (libFuzzer's corpus)
//   TARGET --runs N [--seed S]    runs every seed, then N inputs mutated from them
//                                 (bit flips, byte changes, insertions, cuts,
//                                 splices): a cheap search that needs no clang
//   TARGET FILE|DIR...            runs those inputs (a crash libFuzzer saved)
//
// Prints how many inputs ran. Any bug aborts, as under libFuzzer.

#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace zcoll::fuzz {
namespace {

void Run(const std::string& input) {
  // A copy of exactly the input's size, so that a read past its end is one a
  // sanitizer sees.
  std::vector<uint8_t> copy(input.begin(), input.end());
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
}

std::string Mutate(std::mt19937_64& random, const std::vector<std::string>& seeds) {
  std::string input = seeds[random() % seeds.size()];
  const int edits = 1 + static_cast<int>(random() % 4);
  for (int e = 0; e < edits; ++e) {
    const size_t at = input.empty() ? 0 : random() % (input.size() + 1);
    switch (random() % 6) {
      case 0:  // a bit
        if (!input.empty()) input[at % input.size()] ^= static_cast<char>(1u << (random() % 8));
        break;
      case 1:  // a byte, often an extreme one
        if (!input.empty()) {
          static constexpr unsigned char kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, '!', '+', ' '};
          input[at % input.size()] = static_cast<char>(
              random() % 2 ? kInteresting[random() % sizeof(kInteresting)] : random() % 256);
        }
        break;
      case 2:  // bytes inserted
        input.insert(at, std::string(1 + random() % 8, static_cast<char>(random() % 256)));
        break;
      case 3:  // cut short
        input.resize(at);
        break;
      case 4:  // a piece of another seed
      {
        const std::string& other = seeds[random() % seeds.size()];
        if (!other.empty()) {
          const size_t from = random() % other.size();
          input.insert(at, other.substr(from, 1 + random() % (other.size() - from)));
        }
        break;
      }
      default:  // a length-like word overwritten
        if (input.size() >= 4) {
          const uint32_t value =
              random() % 3 == 0 ? 0xffffffffu : static_cast<uint32_t>(random() % 70000);
          std::memcpy(&input[at % (input.size() - 3)], &value, 4);
        }
        break;
    }
  }
  return input;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

int Main(int argc, char** argv) {
  const std::vector<std::string> seeds = SeedInputs();
  if (argc == 3 && std::strcmp(argv[1], "--write-seeds") == 0) {
    mkdir(argv[2], 0755);
    for (size_t i = 0; i < seeds.size(); ++i) {
      std::ofstream out(std::string(argv[2]) + "/seed-" + std::to_string(i), std::ios::binary);
      out << seeds[i];
    }
    std::printf("%zu seeds written to %s\n", seeds.size(), argv[2]);
    return 0;
  }
  if (argc >= 3 && std::strcmp(argv[1], "--runs") == 0) {
    const uint64_t runs = std::strtoull(argv[2], nullptr, 10);
    const uint64_t seed =
        argc >= 5 && std::strcmp(argv[3], "--seed") == 0 ? std::strtoull(argv[4], nullptr, 10) : 1;
    for (const std::string& input : seeds) Run(input);
    std::mt19937_64 random(seed);
    for (uint64_t i = 0; i < runs; ++i) Run(Mutate(random, seeds));
    std::printf("%zu seeds and %llu mutated inputs ran without a failure (seed %llu)\n",
                seeds.size(), static_cast<unsigned long long>(runs),
                static_cast<unsigned long long>(seed));
    return 0;
  }
  size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat info {};
    if (stat(argv[i], &info) != 0) {
      std::fprintf(stderr, "no such input: %s\n", argv[i]);
      return 2;
    }
    if (S_ISDIR(info.st_mode)) {
      DIR* directory = opendir(argv[i]);
      while (dirent* entry = readdir(directory)) {
        if (entry->d_name[0] == '.') continue;
        Run(ReadFile(std::string(argv[i]) + "/" + entry->d_name));
        ++ran;
      }
      closedir(directory);
    } else {
      Run(ReadFile(argv[i]));
      ++ran;
    }
  }
  std::printf("%zu inputs ran without a failure\n", ran);
  return 0;
}

}  // namespace
}  // namespace zcoll::fuzz

int main(int argc, char** argv) { return zcoll::fuzz::Main(argc, argv); }
