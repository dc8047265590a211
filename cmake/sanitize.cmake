# PERFTEST_SANITIZE=ON: every target (harness, mock, suites, fidelity, tools,
# their unit tests) built with AddressSanitizer and UndefinedBehaviorSanitizer.
# UBSan aborts on its first finding (-fno-sanitize-recover=all), so a finding
# fails the test that hit it rather than printing a line nobody reads.
# scripts/test builds this in its own tree (build-asan) and runs the unit tests,
# fidelity's tests and every suite on the mock under it:
#   cmake -S . -B build-asan -G Ninja -DPERFTEST_SANITIZE=ON \
#         -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1"
# (-O1: ASan's own recommendation, fast to compile and still fast to run; no
# -DNDEBUG, so the tree's assert()s are checked too). The kernel suites are not
# run from this tree: they measure real events, and ASan's slower code and
# shadow memory would change their timing, not their memory safety.
option(PERFTEST_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(PERFTEST_SANITIZE)
  set(perftest_sanitizers -fsanitize=address,undefined -fno-sanitize-recover=all)
  add_compile_options(${perftest_sanitizers} -fno-omit-frame-pointer)
  add_link_options(${perftest_sanitizers})
endif()
