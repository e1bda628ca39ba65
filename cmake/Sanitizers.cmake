# Interface targets that build a target under a sanitizer. Sanitized variants are compiled
# without OpenMP: libgomp is not instrumented, so its barriers would show as false races.
# -g1 (line tables and function names) is what a sanitizer's stack trace reads; full -g only
# adds variables, and 12% to the compile (test_conv_simt.cpp under ASan: 62.5 -> 54.9 s).
add_library(engine_sanitize_thread INTERFACE)
target_compile_options(engine_sanitize_thread INTERFACE -fsanitize=thread -g1 -O1)
target_link_options(engine_sanitize_thread INTERFACE -fsanitize=thread)

# UBSan's null, object-size and pointer-overflow checks are left to ASan, which reports the
# access they would (a SEGV at a null address, an access outside its object): they cost 16% of
# the compile (the ASan conv SIMT test: 63 -> 53 s). Its alignment check stays: on x86 only it
# sees a kernel's misaligned 16-byte access, which a GPU faults on.
add_library(engine_sanitize_address INTERFACE)
target_compile_options(engine_sanitize_address INTERFACE
  -fsanitize=address,undefined -fno-sanitize=null,object-size,pointer-overflow
  -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g1 -O1)
target_link_options(engine_sanitize_address INTERFACE -fsanitize=address,undefined)

# engine_apply_sanitizer(<target> <none|thread|address>)
function(engine_apply_sanitizer target sanitizer)
  if(sanitizer STREQUAL "thread")
    target_link_libraries(${target} PUBLIC engine_sanitize_thread)
  elseif(sanitizer STREQUAL "address")
    target_link_libraries(${target} PUBLIC engine_sanitize_address)
  elseif(NOT sanitizer STREQUAL "none")
    message(FATAL_ERROR "unknown sanitizer '${sanitizer}' for ${target} (use none, thread or address)")
  endif()
  if(NOT sanitizer STREQUAL "none")
    engine_compile_without_cache(${target})  # no other build compiles a sanitized variant
  endif()
endfunction()
