# simt_prelude.cmake — embeds the device prelude of the SIMT generator (src/base/convert.h
# and src/codegen/simt_prelude.h) as strings in generated/codegen/simt_prelude_text.h, and
# makes libtile's objects depend on it. Included from tests/opencl and tests/cuda (it
# belongs in the top-level CMakeLists next to tile_obj). Defines TILE_SIMT_PRELUDE_DIR and
# the target tile_simt_prelude.
if(TARGET tile_simt_prelude)
  return()
endif()
set(TILE_SIMT_PRELUDE_DIR ${CMAKE_BINARY_DIR}/generated/codegen)
set(_out ${TILE_SIMT_PRELUDE_DIR}/simt_prelude_text.h)
set(_ins ${CMAKE_SOURCE_DIR}/src/base/convert.h ${CMAKE_SOURCE_DIR}/src/codegen/simt_prelude.h)
add_custom_command(OUTPUT ${_out}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_out}
          "-DPAIRS=simt_convert_h=${CMAKE_SOURCE_DIR}/src/base/convert.h|simt_prelude_h=${CMAKE_SOURCE_DIR}/src/codegen/simt_prelude.h"
          -P ${CMAKE_SOURCE_DIR}/src/codegen/simt_embed.cmake
  DEPENDS ${_ins} ${CMAKE_SOURCE_DIR}/src/codegen/simt_embed.cmake
  COMMENT "Embedding the SIMT device prelude" VERBATIM)
add_custom_target(tile_simt_prelude DEPENDS ${_out})
if(TARGET tile_obj)
  add_dependencies(tile_obj tile_simt_prelude)
  target_include_directories(tile_obj PRIVATE ${TILE_SIMT_PRELUDE_DIR})
endif()
