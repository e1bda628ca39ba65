# libFuzzer targets, built with clang (libFuzzer + AddressSanitizer + UBSan) outside the g++
# build and run by ctest for a bounded time on a seed corpus.
#
#   engine_libfuzzer_usable(<var>)
#     <var> is ON when clang++ can link -fsanitize=fuzzer,address here (clang and its
#     fuzzer runtime, Debian's libclang-rt-dev, are installed). Sets ENGINE_CLANGXX.
#
#   engine_add_fuzz_test(<name> SOURCES <absolute .cpp files> [DEPENDS <headers>]
#                        [COMPILE_FLAGS <flags>] [LINK <libraries>] [RUN_FLAGS <flags>]
#                        SEEDS_DIR <dir> SEEDS_FIXTURE <ctest fixture> SECONDS <n>
#                        [LABELS <labels>])
#     Builds <binary dir>/fuzz/<name> (target <name>, part of ALL) and adds the ctest <name>:
#     a fresh work corpus each run (so a run's length does not grow with it), the seeds from
#     SEEDS_DIR (written by the test that sets up SEEDS_FIXTURE), SECONDS of fuzzing, crash
#     artifacts under <binary dir>/fuzz/.
include_guard(GLOBAL)

function(engine_libfuzzer_usable out_var)
  get_property(probed GLOBAL PROPERTY ENGINE_LIBFUZZER_PROBED)
  if(NOT probed)
    find_program(ENGINE_CLANGXX NAMES clang++ clang++-14)
    set(usable OFF)
    if(ENGINE_CLANGXX)
      set(probe ${CMAKE_BINARY_DIR}/libfuzzer_probe.cpp)
      file(WRITE ${probe} "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
      execute_process(COMMAND ${ENGINE_CLANGXX} -fsanitize=fuzzer,address ${probe}
                              -o ${CMAKE_BINARY_DIR}/libfuzzer_probe
                      RESULT_VARIABLE probe_result OUTPUT_QUIET ERROR_QUIET)
      if(probe_result EQUAL 0)
        set(usable ON)
      endif()
    endif()
    set_property(GLOBAL PROPERTY ENGINE_LIBFUZZER_PROBED ON)
    set_property(GLOBAL PROPERTY ENGINE_LIBFUZZER_USABLE ${usable})
  endif()
  get_property(usable GLOBAL PROPERTY ENGINE_LIBFUZZER_USABLE)
  set(${out_var} ${usable} PARENT_SCOPE)
endfunction()

function(engine_add_fuzz_test name)
  cmake_parse_arguments(ARG "" "SEEDS_DIR;SEEDS_FIXTURE;SECONDS"
                        "SOURCES;DEPENDS;COMPILE_FLAGS;LINK;RUN_FLAGS;LABELS" ${ARGN})
  foreach(required SOURCES SEEDS_DIR SEEDS_FIXTURE SECONDS)
    if(NOT ARG_${required})
      message(FATAL_ERROR "engine_add_fuzz_test(${name}): ${required} is required")
    endif()
  endforeach()
  set(fuzz_dir ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  set(binary ${fuzz_dir}/${name})
  add_custom_command(OUTPUT ${binary}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${fuzz_dir}
    COMMAND ${ENGINE_CLANGXX} -std=c++20 -O1 -g1 -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined ${ARG_COMPILE_FLAGS} -I${PROJECT_SOURCE_DIR}
            ${ARG_SOURCES} ${ARG_LINK} -o ${binary}
    DEPENDS ${ARG_SOURCES} ${ARG_DEPENDS}
    COMMENT "clang++ -fsanitize=fuzzer,address,undefined: ${name}"
    VERBATIM)
  add_custom_target(${name} ALL DEPENDS ${binary})

  set(corpus ${CMAKE_CURRENT_BINARY_DIR}/${name}_corpus)
  list(JOIN ARG_RUN_FLAGS " " run_flags)
  add_test(NAME ${name}
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
            sh -c "rm -rf '${corpus}' && mkdir -p '${corpus}' && exec '${binary}' -max_total_time=${ARG_SECONDS} -timeout=10 -rss_limit_mb=2048 ${run_flags} -print_final_stats=1 -artifact_prefix='${fuzz_dir}/' '${corpus}' '${ARG_SEEDS_DIR}'")
  set_tests_properties(${name} PROPERTIES
    FIXTURES_REQUIRED ${ARG_SEEDS_FIXTURE} LABELS "${ARG_LABELS}" TIMEOUT 300)
endfunction()
