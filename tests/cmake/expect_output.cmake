# Run `TILE SUB FILE [EXTRA...]` in WORKDIR and compare its stdout+stderr with EXPECT and its
# exit code with EXIT. Used for golden tests (diagnostics, IR dumps).
#   cmake -DTILE=... -DSUB=check -DFILE=errors/x.tl "-DEXTRA=-D M=4" -DEXPECT=... -DEXIT=1 -DWORKDIR=... -P expect_output.cmake
# Set UPDATE=1 in the environment to rewrite the expected file instead (then review the diff!).
separate_arguments(extra_args UNIX_COMMAND "${EXTRA}")
execute_process(COMMAND ${TILE} ${SUB} ${FILE} ${extra_args}
                WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(got "${out}${err}")
if(DEFINED ENV{UPDATE})
  file(WRITE ${EXPECT} "${got}")
  message(STATUS "updated ${EXPECT}")
  return()
endif()
file(READ ${EXPECT} want)
if(NOT rc EQUAL EXIT)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXIT}\n--- output:\n${got}")
endif()
if(NOT got STREQUAL want)
  message(FATAL_ERROR "output differs from ${EXPECT}\n--- expected:\n${want}\n--- got:\n${got}")
endif()
