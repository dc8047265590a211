# Cross-compiling perftest for arm64 (aarch64) on a Debian 12 amd64 host, with
# Debian's cross toolchain (g++-aarch64-linux-gnu) and the :arm64 dev packages,
# which co-install with the amd64 ones under /usr/lib/aarch64-linux-gnu
# (Debian multiarch). scripts/cross-build drives it; by hand:
#
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
#         -DPERFTEST_STATIC=ON
#
# PERFTEST_STATIC=ON links every executable statically (cmake/static-link.cmake),
# so a suite binary runs in a guest with nothing but a kernel and an initramfs.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(PERFTEST_CROSS_TRIPLE aarch64-linux-gnu)
include(${CMAKE_CURRENT_LIST_DIR}/cross-multiarch.cmake)
