# gpu_common.cmake — shared by tests/opencl and tests/cuda: `nvrtc_check`, which compiles
# generated CUDA C with NVRTC (no GPU needed), and the cache directory the GPU tests use.
# The tests run the real `tile` CLI (tile_cli).
if(TARGET nvrtc_check)
  return()
endif()
add_executable(nvrtc_check ${CMAKE_SOURCE_DIR}/tests/cuda/nvrtc_check.c)
target_include_directories(nvrtc_check PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(nvrtc_check PRIVATE tile_static)

set(TILE_GPU_ENV "TILE_CACHE_DIR=${CMAKE_BINARY_DIR}/tile-cache")
