# Shared by cmake/toolchain-<arch>.cmake: a Debian multiarch cross build for
# PERFTEST_CROSS_TRIPLE (e.g. aarch64-linux-gnu). The target's libraries and
# CMake package files live beside the host's, in /usr/lib/<triple>; the
# headers of the dev packages are the same files for every architecture
# (/usr/include), so nothing here sets a sysroot: CMAKE_LIBRARY_ARCHITECTURE
# points find_package()/find_library() at /usr/lib/<triple>, and the host's
# /usr/lib/<host triple> is ignored so that no amd64 library is ever picked.
set(CMAKE_C_COMPILER ${PERFTEST_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PERFTEST_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${PERFTEST_CROSS_TRIPLE})
# The host's pkg-config, reading only the target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${PERFTEST_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
execute_process(COMMAND dpkg-architecture -qDEB_BUILD_MULTIARCH OUTPUT_VARIABLE perftest_host_triple
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(perftest_host_triple AND NOT perftest_host_triple STREQUAL PERFTEST_CROSS_TRIPLE)
  list(APPEND CMAKE_IGNORE_PATH /usr/lib/${perftest_host_triple} /lib/${perftest_host_triple}
       /usr/lib/${perftest_host_triple}/cmake)
endif()
# Programs (code generators, python3) come from the host; libraries and
# headers never from the cross compiler's own tree alone.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)

# Static executables (scripts/cross-build sets PERFTEST_STATIC=ON): the hook
# runs right after project(perftest), before the project's find_package calls.
if(PERFTEST_STATIC)
  set(CMAKE_PROJECT_perftest_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/static-link.cmake)
endif()
