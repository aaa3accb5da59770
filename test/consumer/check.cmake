# The two ways a downstream project uses mongolock, each built and run:
#   MODE=install (default): configure the README's install recipe (top level, Release; tests,
#     examples and benchmark off; Boost.Test not findable), then install the build tree BUILD_DIR
#     (the one under test) into a scratch prefix, and configure, build and run test/consumer
#     against it with find_package;
#   MODE=subdirectory: test/consumer_subdir adds the source tree with add_subdirectory, as a
#     shared library (BUILD_SHARED_LIBS=ON), in a project where Boost.Test cannot be found. No
#     build type: the check is about the build's wiring, and unoptimized code compiles fastest;
#     with clang 14 when there is one (the project's scripts install it): it compiles the library
#     in half GCC 12's time, and the install check above builds with the default compiler; and
#     as a unity build (CMAKE_UNITY_BUILD, which a consumer may ask for): its files' batches
#     compile in half the CPU of the files one by one.
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
if(MODE STREQUAL "subdirectory")
  find_program(clang NAMES clang++-14)
  set(compiler "")
  if(clang)
    set(compiler -DCMAKE_CXX_COMPILER=${clang})
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer_subdir -B ${WORK_DIR}/consumer
      -DMONGOLOCK_SOURCE_DIR=${SOURCE_DIR} ${compiler} -DCMAKE_UNITY_BUILD=ON
      # A consumer without Boost.Test: configuring fails if mongolock asks for it.
      -DCMAKE_DISABLE_FIND_PACKAGE_boost_unit_test_framework=ON)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer -j2)
  run(${WORK_DIR}/consumer/consumer)
  return()
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/readme-recipe -DCMAKE_BUILD_TYPE=Release
    -DMONGOLOCK_BUILD_TESTS=OFF -DMONGOLOCK_BUILD_BENCH=OFF -DMONGOLOCK_BUILD_EXAMPLES=OFF
    -DCMAKE_DISABLE_FIND_PACKAGE_boost_unit_test_framework=ON)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer -B ${WORK_DIR}/consumer -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
