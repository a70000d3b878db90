# `cmake --install BUILD --prefix PREFIX`: kiln as a package other projects build against.
#   PREFIX/include/kiln/   the headers of ir/, passes/, runtime/ and compiler/ (not compiler/mlir/),
#                          and proto/*.pb.h, included as in kiln itself: "ir/builder.h"
#   PREFIX/lib/            the static libraries, and in lib/kiln/ the two registration objects
#                          (the JIT as the cpu backend's compiler; the session's graph rewrites)
#   PREFIX/lib/cmake/kiln/ kilnConfig.cmake: find_package(kiln) gives kiln::kiln (everything) and
#                          kiln::runtime (the runtime alone: no LLVM, MLIR or compiler)
#   PREFIX/lib/pkgconfig/  kiln-runtime.pc, for C programs of the C API (runtime/c_api/kiln_c.h)
#   PREFIX/bin/            kiln and kilnrt
include(CMakePackageConfigHelpers)

foreach(dir ir passes runtime compiler)
  if(dir STREQUAL "compiler" AND NOT KILN_BUILD_COMPILER)
    continue()
  endif()
  install(DIRECTORY ${dir}/ DESTINATION include/kiln/${dir} FILES_MATCHING PATTERN "*.h"
          PATTERN "mlir" EXCLUDE)
endforeach()
install(DIRECTORY ${CMAKE_BINARY_DIR}/proto/ DESTINATION include/kiln/proto
        FILES_MATCHING PATTERN "*.pb.h" PATTERN "CMakeFiles" EXCLUDE)

set(kiln_installed_libraries kiln_runtime kiln_ir kiln_proto)
if(KILN_BUILD_COMPILER)
  list(PREPEND kiln_installed_libraries kiln_compiler kiln_passes)
  install(FILES $<TARGET_OBJECTS:kiln_jit_registration> DESTINATION lib/kiln
          RENAME register_jit.o)
endif()
install(TARGETS ${kiln_installed_libraries} ARCHIVE DESTINATION lib)
install(FILES $<TARGET_OBJECTS:kiln_session_passes_registration> DESTINATION lib/kiln
        RENAME register_session_rewrite.o)  # needs kiln_passes: part of kiln::kiln only
# The installed tools keep finding the libraries they were linked with outside the system paths
# (LLVM and MLIR 16 under /usr/lib/llvm-16/lib).
set_target_properties(kiln kilnrt PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS kiln kilnrt RUNTIME DESTINATION bin)

# What the runtime library links besides its own archives, recorded for the package.
set(KILN_PACKAGE_HOST_LIBRARIES "")
set(KILN_PACKAGE_PC_HOST_LIBS "")
if(KILN_HOST_LIBRARIES)
  set(KILN_PACKAGE_HOST_LIBRARIES "${DNNL_LIBRARY};${OPENBLAS_LIBRARY}")
  set(KILN_PACKAGE_PC_HOST_LIBS "-ldnnl -lopenblas")
endif()
set(KILN_PACKAGE_HAS_COMPILER ${KILN_BUILD_COMPILER})
configure_file(cmake/kilnConfig.cmake.in ${CMAKE_BINARY_DIR}/package/kilnConfig.cmake @ONLY)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/kilnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
configure_file(cmake/kiln-runtime.pc.in ${CMAKE_BINARY_DIR}/package/kiln-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/kilnConfig.cmake
              ${CMAKE_BINARY_DIR}/package/kilnConfigVersion.cmake DESTINATION lib/cmake/kiln)
install(FILES ${CMAKE_BINARY_DIR}/package/kiln-runtime.pc DESTINATION lib/pkgconfig)
