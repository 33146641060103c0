// Under libFuzzer (--config=fuzz): seeds its corpus. With ZCOLL_FUZZ_SEEDS set to the
// corpus directory, the target's SeedInputs() are written there before libFuzzer
// reads it (fuzz/run.sh sets it), so a fresh corpus starts from valid inputs.

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* directory = std::getenv("ZCOLL_FUZZ_SEEDS");
  if (directory == nullptr || *directory == '\0') return 0;
  mkdir(directory, 0755);
  const std::vector<std::string> seeds = zcoll::fuzz::SeedInputs();
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(std::string(directory) + "/seed-" + std::to_string(i), std::ios::binary);
    out << seeds[i];
  }
  return 0;
}
