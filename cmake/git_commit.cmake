# Writes OUTPUT, a header defining ATTNLAB_GIT_COMMIT as the source tree's commit (12 hex digits,
# "-dirty" when tracked files differ from it, "unknown" outside a git checkout). Runs at every
# build (cmake -DSOURCE_DIR=... -DOUTPUT=... -P git_commit.cmake), so a run log names the commit the
# program was built from, not the one CMake was configured at; the file is rewritten only when the
# value changes, so an unchanged tree recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND commit "-dirty")
  endif()
endif()
set(content "#define ATTNLAB_GIT_COMMIT \"${commit}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
endif()
if(NOT "${previous}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
