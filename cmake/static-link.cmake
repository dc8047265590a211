# Static executables for cross builds (PERFTEST_STATIC=ON, set by
# scripts/cross-build; included right after project(perftest) through
# CMAKE_PROJECT_perftest_INCLUDE, see cmake/cross-multiarch.cmake). A suite
# binary then runs in a guest whose initramfs holds nothing but busybox and
# the binaries.
#
# Debian ships fmt as a shared library only (no libfmt.a in libfmt-dev), so
# fmt::fmt is defined here first as fmt's header-only form (FMT_HEADER_ONLY);
# fmt's own package file then finds its targets defined and keeps them.
# GoogleTest and libseccomp have static archives (.a first: CMAKE_FIND_LIBRARY_SUFFIXES).
#
# At the end of the configure step every executable whose link closure holds
# no imported shared library gets -static; the others (those that need
# libzydis or Google Benchmark, which Debian ships shared only) stay dynamic
# and are listed in build-<arch>/dynamic-executables.txt: they run where the
# target's libraries are (a guest with the host's root filesystem, whose
# /usr/lib/<triple> holds the :arch packages).
set(CMAKE_FIND_LIBRARY_SUFFIXES .a .so)
find_path(PERFTEST_FMT_INCLUDE_DIR fmt/format.h REQUIRED)
foreach(t fmt::fmt fmt::fmt-header-only)
  add_library(${t} INTERFACE IMPORTED)
  set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${PERFTEST_FMT_INCLUDE_DIR}
                                        INTERFACE_COMPILE_DEFINITIONS FMT_HEADER_ONLY=1)
endforeach()

# Packages found in subdirectories define their imported targets there, out of
# sight of the top-level check below: find the ones with shared-only libraries
# here first (their package files then keep these targets).
find_package(zydis QUIET)
find_package(benchmark QUIET)

# Every build-system target of `dir` and its subdirectories.
function(perftest_static_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    perftest_static_targets(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# The first imported shared library (or .so path) in the link closure of `item`, or "".
function(perftest_static_shared_dep item out)
  set(${out} "" PARENT_SCOPE)
  if(item MATCHES "^\\$<LINK_ONLY:(.+)>$")
    set(item ${CMAKE_MATCH_1})
  elseif(item MATCHES "^\\$<")
    return()
  endif()
  if(NOT TARGET ${item})
    if(item MATCHES "\\.so(\\.[0-9]+)*$")
      set(${out} ${item} PARENT_SCOPE)
    elseif(item MATCHES "::" AND NOT item MATCHES "^PkgConfig::")  # pkg-config's: paths, .a first
      message(WARNING "static-link: ${item} is an imported target defined out of the top level's sight; "
                      "find its package in cmake/static-link.cmake")
    endif()
    return()
  endif()
  get_property(seen GLOBAL PROPERTY perftest_static_seen_${item} SET)
  if(seen)
    get_property(dep GLOBAL PROPERTY perftest_static_seen_${item})
    set(${out} "${dep}" PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY perftest_static_seen_${item} "")
  get_target_property(type ${item} TYPE)
  get_target_property(imported ${item} IMPORTED)
  if(imported AND (type STREQUAL "SHARED_LIBRARY" OR type STREQUAL "UNKNOWN_LIBRARY"))
    get_target_property(location ${item} IMPORTED_LOCATION)
    foreach(config RELEASE RELWITHDEBINFO NONE NOCONFIG)
      if(NOT location)
        get_target_property(location ${item} IMPORTED_LOCATION_${config})
      endif()
    endforeach()
    if(type STREQUAL "SHARED_LIBRARY" OR location MATCHES "\\.so(\\.[0-9]+)*$")
      set_property(GLOBAL PROPERTY perftest_static_seen_${item} ${item})
      set(${out} ${item} PARENT_SCOPE)
      return()
    endif()
  endif()
  set(deps)
  if(NOT imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(direct ${item} LINK_LIBRARIES)
    if(direct)
      list(APPEND deps ${direct})
    endif()
  endif()
  get_target_property(iface ${item} INTERFACE_LINK_LIBRARIES)
  if(iface)
    list(APPEND deps ${iface})
  endif()
  foreach(dep ${deps})
    perftest_static_shared_dep("${dep}" found)
    if(found)
      set_property(GLOBAL PROPERTY perftest_static_seen_${item} ${found})
      set(${out} ${found} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

function(perftest_static_link_apply)
  perftest_static_targets(${CMAKE_SOURCE_DIR} targets)
  set(dynamic "")
  foreach(t ${targets})
    get_target_property(type ${t} TYPE)
    if(NOT type STREQUAL "EXECUTABLE")
      continue()
    endif()
    perftest_static_shared_dep(${t} shared)
    if(shared)
      string(APPEND dynamic "${t} ${shared}\n")
    else()
      target_link_options(${t} PRIVATE -static)
    endif()
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/dynamic-executables.txt "${dynamic}")
endfunction()

# Called at the end of the top-level CMakeLists.txt, when every executable
# is defined (no deferred call: the tree has none).
