# gpu_common.cmake — shared by tests/opencl and tests/cuda: `tile-gpu`, a copy of the CLI
# built from only the files the GPU targets need (front end, sema, IR, TileOpt, interpreter,
# runtime, SIMT generator, OpenCL and CUDA runtimes; tests/opencl/cpu_stub.c stands in for
# the cpu backend), so that other backends being edited cannot break the GPU tests; and
# `nvrtc_check`, which compiles generated CUDA C with NVRTC (no GPU needed).
if(TARGET tile_gpu_cli)
  return()
endif()
include(${CMAKE_SOURCE_DIR}/src/codegen/simt_prelude.cmake)
file(GLOB _gpu_srcs CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/src/core/*.c ${CMAKE_SOURCE_DIR}/src/front/*.c ${CMAKE_SOURCE_DIR}/src/sema/*.c
  ${CMAKE_SOURCE_DIR}/src/ir/*.c ${CMAKE_SOURCE_DIR}/src/opt/*.c ${CMAKE_SOURCE_DIR}/src/interp/*.c)
add_library(tile_gpu_objs OBJECT ${_gpu_srcs}
  ${CMAKE_SOURCE_DIR}/src/runtime/runtime.c ${CMAKE_SOURCE_DIR}/src/runtime/backends.c
  ${CMAKE_SOURCE_DIR}/src/runtime/opencl.c ${CMAKE_SOURCE_DIR}/src/runtime/cuda.c
  ${CMAKE_SOURCE_DIR}/src/codegen/simt.c ${CMAKE_SOURCE_DIR}/tests/opencl/cpu_stub.c)
target_include_directories(tile_gpu_objs PUBLIC ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src PRIVATE ${TILE_SIMT_PRELUDE_DIR})
target_compile_definitions(tile_gpu_objs PRIVATE TILE_BUILDING_LIBRARY)
add_dependencies(tile_gpu_objs tile_simt_prelude)

add_executable(tile_gpu_cli ${CMAKE_SOURCE_DIR}/tools/tile/main.c $<TARGET_OBJECTS:tile_gpu_objs>)
set_target_properties(tile_gpu_cli PROPERTIES OUTPUT_NAME tile-gpu RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
target_include_directories(tile_gpu_cli PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(tile_gpu_cli PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)

add_executable(nvrtc_check ${CMAKE_SOURCE_DIR}/tests/cuda/nvrtc_check.c $<TARGET_OBJECTS:tile_gpu_objs>)
target_include_directories(nvrtc_check PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(nvrtc_check PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)

set(TILE_GPU_ENV "TILE_CACHE_DIR=${CMAKE_BINARY_DIR}/tile-cache")
