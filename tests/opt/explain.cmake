# Golden test of `tile ir --explain`: run `TILE FILE ARGS... --explain` in WORKDIR (with
# TILE_CUDA_ARCH=ARCH, empty: none) and compare stdout with EXPECT.
#   cmake -DTILE=... -DFILE=examples/gemm.tl "-DARGS=-D M=4 --target cpu" -DARCH= -DEXPECT=... -DWORKDIR=... -P explain.cmake
# Set UPDATE=1 in the environment to rewrite the expected file instead (then review the diff!).
separate_arguments(args UNIX_COMMAND "${ARGS}")
set(ENV{TILE_CUDA_ARCH} "${ARCH}")
unset(ENV{TILE_LOG})
execute_process(COMMAND ${TILE} ir ${FILE} ${args} --explain
                WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\n--- stdout:\n${out}\n--- stderr:\n${err}")
endif()
if(DEFINED ENV{UPDATE})
  file(WRITE ${EXPECT} "${out}")
  message(STATUS "updated ${EXPECT}")
  return()
endif()
file(READ ${EXPECT} want)
if(NOT out STREQUAL want)
  message(FATAL_ERROR "output differs from ${EXPECT}\n--- expected:\n${want}\n--- got:\n${out}")
endif()
