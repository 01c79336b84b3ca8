# prelude.cmake — builds the CPU backend's prelude string (generated/codegen/prelude_text.h)
# from the real C files convert.h, cpu_abi.h and prelude.h, and makes libtile's objects
# depend on it. Included once, by the top-level CMakeLists next to tile_obj.
if(TARGET tile_cpu_prelude)
  return()
endif()
set(TILE_CPU_PRELUDE_DIR ${CMAKE_BINARY_DIR}/generated/codegen)
set(_out ${TILE_CPU_PRELUDE_DIR}/prelude_text.h)
set(_ins ${CMAKE_SOURCE_DIR}/src/base/convert.h
         ${CMAKE_SOURCE_DIR}/src/codegen/cpu_abi.h
         ${CMAKE_SOURCE_DIR}/src/codegen/prelude.h)
string(REPLACE ";" "|" _ins_arg "${_ins}")
add_custom_command(OUTPUT ${_out}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_out} "-DINS=${_ins_arg}" -P ${CMAKE_SOURCE_DIR}/src/codegen/embed.cmake
  DEPENDS ${_ins} ${CMAKE_SOURCE_DIR}/src/codegen/embed.cmake
  COMMENT "Embedding the CPU prelude" VERBATIM)
add_custom_target(tile_cpu_prelude DEPENDS ${_out})
if(TARGET tile_obj)
  add_dependencies(tile_obj tile_cpu_prelude)
  target_include_directories(tile_obj PRIVATE ${TILE_CPU_PRELUDE_DIR})
endif()
