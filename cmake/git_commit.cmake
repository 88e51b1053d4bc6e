# Writes OUTPUT, a header defining ATTNLAB_GIT_COMMIT as the source tree's commit (12 hex digits,
# "-dirty" when tracked files differ from it, "unknown" outside a git checkout) and
# ATTNLAB_GIT_DIFF_SHA256 as the SHA-256 of those differences (`git diff HEAD --binary`; "" for a
# clean tree or outside git), so two dirty builds of one commit can be told apart. Runs at every
# build (cmake -DSOURCE_DIR=... -DOUTPUT=... -P git_commit.cmake), so a run log names the commit the
# program was built from, not the one CMake was configured at; the file is rewritten only when the
# value changes, so an unchanged tree recompiles nothing.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                RESULT_VARIABLE status)
set(diff_sha256 "")
if(NOT status EQUAL 0 OR NOT commit)
  set(commit "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE changes ERROR_QUIET)
  if(changes)
    string(APPEND commit "-dirty")
    execute_process(COMMAND git diff HEAD --binary WORKING_DIRECTORY ${SOURCE_DIR}
                    OUTPUT_VARIABLE diff ERROR_QUIET)
    string(SHA256 diff_sha256 "${diff}")
  endif()
endif()
set(content "#define ATTNLAB_GIT_COMMIT \"${commit}\"\n#define ATTNLAB_GIT_DIFF_SHA256 \"${diff_sha256}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} previous)
endif()
if(NOT "${previous}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
