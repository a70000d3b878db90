# Fails when a Catch TEST_CASE name holds a ';': CTest's test list would split it into two names
# that match no Catch test, and both halves would "pass" without running anything.
# Usage: cmake -DDIR=<tests folder> -P check_test_names.cmake
file(GLOB_RECURSE sources "${DIR}/*.cc")
set(bad "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  string(REGEX MATCHALL "TEST_CASE\\([ \t\r\n]*\"[^\"]*;[^\"]*\"" found "${text}")
  if(found)
    list(APPEND bad "${source}")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "TEST_CASE names with ';' (CTest would not run them): ${bad}")
endif()
