# Installs the already-configured build tree into a scratch prefix, then configures, builds and
# runs test/consumer against it.
set(build ${WORK_DIR}/lib-build)
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -DCMAKE_BUILD_TYPE=Release -DMONGOLOCK_BUILD_TESTS=OFF
    -DMONGOLOCK_BUILD_EXAMPLES=OFF -DMONGOLOCK_BUILD_TOOLS=OFF -DCMAKE_INSTALL_PREFIX=${prefix})
run(${CMAKE_COMMAND} --build ${build} -j2)
run(${CMAKE_COMMAND} --install ${build})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/test/consumer -B ${WORK_DIR}/consumer -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
