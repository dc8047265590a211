# cmake -DTOOL=perftest_pt -DBIN=x.bin -DEXPECTED=x.txt -P check_fixture.cmake
# Runs `perftest_pt dump BIN` with the options of EXPECTED's "# options:" line
# and compares its output with EXPECTED's lines that do not start with '#'.
file(STRINGS ${EXPECTED} lines ENCODING UTF-8)
set(options "")
set(expected "")
foreach(line IN LISTS lines)
  if(line MATCHES "^# options:(.*)$")
    separate_arguments(options UNIX_COMMAND "${CMAKE_MATCH_1}")
  elseif(NOT line MATCHES "^#")
    string(APPEND expected "${line}\n")
  endif()
endforeach()
execute_process(COMMAND ${TOOL} dump ${BIN} ${options}
                OUTPUT_VARIABLE actual RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} dump ${BIN} ${options}: exit ${rc}")
endif()
if(NOT actual STREQUAL expected)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/actual.txt "${actual}")
  message(FATAL_ERROR "${TOOL} dump ${BIN}: output differs from ${EXPECTED}\n--- actual:\n${actual}")
endif()
