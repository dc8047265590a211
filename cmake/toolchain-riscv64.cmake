# Cross-compiling perftest for riscv64 on a Debian 12 amd64 host, with Debian's
# cross toolchain (g++-riscv64-linux-gnu) and the :riscv64 dev packages where
# the host's package sources carry them (Debian 12 has no riscv64 port: see
# scripts/install-cross-deps). scripts/cross-build drives it; by hand:
#
#   cmake -S . -B build-riscv64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-riscv64.cmake \
#         -DPERFTEST_STATIC=ON
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(PERFTEST_CROSS_TRIPLE riscv64-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-multiarch.cmake)
