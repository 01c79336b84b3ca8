# Golden test of the TileOpt decisions: run `DRIVER ir FILE EXTRA... --after rowfuse` (the whole cpu pipeline) with
# TILE_LOG=debug in WORKDIR; the expected text is the IR (stdout) followed by the TileOpt log
# lines (the `deps:`, `autoschedule:`, `cpugemm:` and `rowfuse:` ones, without their "tile[host:pid] LEVEL " prefix).
#   cmake -DDRIVER=... -DFILE=cases/x.tl "-DEXTRA=-D M=4" -DEXPECT=... -DWORKDIR=... -P golden.cmake
# Set UPDATE=1 in the environment to rewrite the expected file instead (then review the diff!).
separate_arguments(extra_args UNIX_COMMAND "${EXTRA}")
set(ENV{TILE_LOG} debug)
execute_process(COMMAND ${DRIVER} ir ${FILE} ${extra_args} --after rowfuse
                WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "tile\\[[^]\n]*\\] [A-Z]+ (deps|autoschedule|cpugemm|rowfuse): " "@KEEP@\\1: " err "${err}")
string(REGEX REPLACE "tile\\[[^\n]*\n" "" err "${err}")
string(REPLACE "@KEEP@" "" err "${err}")
set(got "${out}--- log\n${err}")
if(DEFINED ENV{UPDATE})
  file(WRITE ${EXPECT} "${got}")
  message(STATUS "updated ${EXPECT}")
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit code ${rc}\n--- output:\n${got}")
endif()
file(READ ${EXPECT} want)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "output differs from ${EXPECT}\n--- expected:\n${want}\n--- got:\n${got}")
endif()
