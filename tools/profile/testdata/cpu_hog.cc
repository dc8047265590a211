// profile_cpu_hog: the CPU-bound program perftest profile's tests profile.
//
//   profile_cpu_hog SECONDS
//
// Runs on one thread for SECONDS (wall clock), spending about 97% of its CPU
// time in hog_hot() and about 3% in hog_cold(), both called from hog_loop(),
// called from main(). Built with frame pointers and without inlining
// (tools/profile/CMakeLists.txt), with C linkage, so a frame-pointer callchain
// reads main -> hog_loop -> hog_hot in every sample of the hot part.
#include <chrono>
#include <cstdio>
#include <cstdlib>

extern "C" {

volatile unsigned long hog_sink;

// Called once per round by hog_hot and hog_cold: it makes them non-leaf
// functions, which GCC 12 gives a frame (it drops the frame pointer of leaf
// functions even with -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer),
// so the unwinder sees hog_loop as their caller.
__attribute__((noinline)) void hog_publish(unsigned long x) { hog_sink = x; }

__attribute__((noinline)) void hog_hot(unsigned long rounds) {
  unsigned long x = hog_sink;
  for (unsigned long i = 0; i < rounds; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  hog_publish(x);
}

__attribute__((noinline)) void hog_cold(unsigned long rounds) {
  unsigned long x = hog_sink;
  for (unsigned long i = 0; i < rounds; ++i) x ^= x >> 7 ^ i;
  hog_publish(x);
}

__attribute__((noinline)) void hog_loop(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    hog_hot(970000);
    hog_cold(30000);
  }
}

}  // extern "C"

int main(int argc, char** argv) {
  if (argc != 2 || std::atof(argv[1]) <= 0) {
    std::fprintf(stderr, "usage: profile_cpu_hog SECONDS\n");
    return 2;
  }
  hog_loop(std::atof(argv[1]));
  return 0;
}
