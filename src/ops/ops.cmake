# ops.cmake — embeds the operators' TileLang sources (src/ops/*.tl, src/ops/gen/*.tl) into
# libtile as generated/ops/ops_sources.h, rebuilt when one of them changes. Included once,
# by the top-level CMakeLists next to tile_obj.
if(TARGET tile_ops_sources)
  return()
endif()
set(TILE_OPS_GEN_DIR ${CMAKE_BINARY_DIR}/generated/ops)
set(_out ${TILE_OPS_GEN_DIR}/ops_sources.h)
file(GLOB _ins CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/ops/*.tl ${CMAKE_SOURCE_DIR}/src/ops/gen/*.tl)
list(SORT _ins)
string(REPLACE ";" "|" _ins_arg "${_ins}")
add_custom_command(OUTPUT ${_out}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_out} "-DINS=${_ins_arg}" -DROOT=${CMAKE_SOURCE_DIR}/src/ops -P ${CMAKE_SOURCE_DIR}/src/ops/embed_ops.cmake
  DEPENDS ${_ins} ${CMAKE_SOURCE_DIR}/src/ops/embed_ops.cmake
  COMMENT "Embedding the operators' TileLang sources" VERBATIM)
add_custom_target(tile_ops_sources DEPENDS ${_out})
if(TARGET tile_obj)
  add_dependencies(tile_obj tile_ops_sources)
  target_include_directories(tile_obj PRIVATE ${TILE_OPS_GEN_DIR})
endif()
