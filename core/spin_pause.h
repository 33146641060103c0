// PauseWhileSpinning: what a thread that spins on memory another core writes does
// between polls (the node engine's waits, and tools/cache_line_ping, which times the
// floor under them with the same pause).

#ifndef ZCOLL_CORE_SPIN_PAUSE_H_
#define ZCOLL_CORE_SPIN_PAUSE_H_

namespace zcoll {

// Tells the core that this thread spins: it yields the pipeline to a sibling
// hyperthread and leaves the spin loop without a memory-order flush when the line
// changes.
inline void PauseWhileSpinning() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace zcoll

#endif  // ZCOLL_CORE_SPIN_PAUSE_H_
