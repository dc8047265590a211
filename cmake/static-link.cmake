# Static executables for cross builds (PERFTEST_STATIC=ON, set by
# scripts/cross-build; included right after project(perftest) through
# CMAKE_PROJECT_perftest_INCLUDE, see cmake/cross-multiarch.cmake). A suite
# binary then runs in a guest whose initramfs holds nothing but busybox and
# the binaries.
#
# Debian ships fmt as a shared library only (no libfmt.a in libfmt-dev), so
# fmt::fmt is defined here first as fmt's header-only form (FMT_HEADER_ONLY);
# fmt's own package file then finds its targets defined and keeps them.
# GoogleTest and libseccomp have static archives. Libraries that have none
# (Zydis, Google Benchmark) make the executables that need them fail to link;
# scripts/cross-build builds only those that do not.
set(CMAKE_EXE_LINKER_FLAGS "${CMAKE_EXE_LINKER_FLAGS} -static")
set(CMAKE_FIND_LIBRARY_SUFFIXES .a)
find_path(PERFTEST_FMT_INCLUDE_DIR fmt/format.h REQUIRED)
foreach(t fmt::fmt fmt::fmt-header-only)
  add_library(${t} INTERFACE IMPORTED)
  set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${PERFTEST_FMT_INCLUDE_DIR}
                                        INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endforeach()
