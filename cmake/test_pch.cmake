# One precompiled header for every GoogleTest translation unit.
#
# GoogleTest and GoogleMock are parsed in each of the ~90 test sources (with
# the PCH a test source compiled 1.3-2 s faster, measured cold; the rest of
# its cost is -O2 code generation); they are parsed once here, into the PCH of perftest_test_pch, and
# every test target reuses it (REUSE_FROM: no PCH of its own). Only external
# headers go in, never the project's own, so that editing a harness header
# does not rebuild the PCH and with it every test.
#
# The test targets are found, not listed: perftest_use_test_pch() runs at the
# end of the top-level configure and gives the PCH to every executable or
# library that links GoogleTest or GoogleMock directly (or the suite support
# library), so a new test binary gets it without an edit here.
#
# The reusing targets are compiled with the PCH target's flags (language
# standard, optimization, -g level, definitions of the headers inside: fmt's
# FMT_SHARED); definitions of their own (PERFTEST_SUITE_NAME, ...) are fine,
# as no header in the PCH reads them. -DPERFTEST_TEST_PCH=OFF turns it off
# (e.g. to check that every test source includes what it uses).

option(PERFTEST_TEST_PCH "Precompile GoogleTest/GoogleMock once for all test targets" ON)

if(PERFTEST_TEST_PCH)
  add_library(perftest_test_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/test_pch.cc)
  target_link_libraries(perftest_test_pch PRIVATE GTest::gmock GTest::gtest fmt::fmt)
  target_precompile_headers(perftest_test_pch PRIVATE
    <gmock/gmock.h>
    <gtest/gtest.h>
  )
endif()

# Every build-system target in `dir` and below.
function(perftest_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    perftest_targets_below(${sub} sub_targets)
    list(APPEND targets ${sub_targets})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(perftest_use_test_pch)
  if(NOT PERFTEST_TEST_PCH)
    return()
  endif()
  perftest_targets_below(${PROJECT_SOURCE_DIR} targets)
  set(users)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(target STREQUAL "perftest_test_pch" OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(libs MATCHES "(^|;)(GTest::gtest|GTest::gmock|GTest::gtest_main|GTest::gmock_main|perftest_suite_support|perftest_gmock_backend)(;|$)")
      set_property(TARGET ${target} PROPERTY PRECOMPILE_HEADERS_REUSE_FROM perftest_test_pch)
      list(APPEND users ${target})
    endif()
  endforeach()
  list(LENGTH users n)
  message(STATUS "perftest: the GoogleTest PCH (perftest_test_pch) is used by ${n} targets")
endfunction()
