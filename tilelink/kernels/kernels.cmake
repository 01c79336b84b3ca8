# kernels.cmake — libtilelink's device kernels as C strings (generated/tilelink/gpu_kernels_text.h):
#   tl_gpu_coll_text            tilelink/kernels/gpu_coll.cu (hand-written CUDA C)
#   tl_gpu_convert_text         src/base/convert.h, the NVRTC header "convert.h" gpu_coll.cu includes
#   tl_gpu_reduce_text_{f32,f16,bf16}
#                               tilelink/kernels/reduce.tl through `tile emit --target cuda`
# The emitter is the `tile` CLI built without TileLink (tile_kernel_emitter: main.c + the
# compiler), so libtilelink never links libtile and there is no build cycle. Included once by
# the top-level CMakeLists after the tilelink targets.
if(NOT TARGET tilelink_obj OR TARGET tile_kernel_emitter)
  return()
endif()
add_executable(tile_kernel_emitter ${CMAKE_SOURCE_DIR}/tools/tile/main.c ${CMAKE_SOURCE_DIR}/tools/tile/cli_fuzz.c)
target_include_directories(tile_kernel_emitter PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/tools)
target_link_libraries(tile_kernel_emitter PRIVATE tile_fuzz tile_static)
set(TLINK_KERNELS_DIR ${CMAKE_BINARY_DIR}/generated/tilelink)
set(_out ${TLINK_KERNELS_DIR}/gpu_kernels_text.h)
add_custom_command(OUTPUT ${_out}
  COMMAND ${CMAKE_COMMAND} -DOUT=${_out} -DTILE=$<TARGET_FILE:tile_kernel_emitter>
          -DSRC=${CMAKE_SOURCE_DIR}/tilelink/kernels -DCONVERT=${CMAKE_SOURCE_DIR}/src/base/convert.h -P ${CMAKE_SOURCE_DIR}/tilelink/kernels/embed_kernels.cmake
  DEPENDS tile_kernel_emitter ${CMAKE_SOURCE_DIR}/tilelink/kernels/gpu_coll.cu ${CMAKE_SOURCE_DIR}/tilelink/kernels/reduce.tl
          ${CMAKE_SOURCE_DIR}/src/base/convert.h
          ${CMAKE_SOURCE_DIR}/tilelink/kernels/embed_kernels.cmake
  COMMENT "Embedding TileLink's device kernels (tile emit --target cuda tilelink/kernels/reduce.tl)" VERBATIM)
add_custom_target(tlink_gpu_kernels DEPENDS ${_out})
add_dependencies(tilelink_obj tlink_gpu_kernels)
target_include_directories(tilelink_obj PRIVATE ${TLINK_KERNELS_DIR})
