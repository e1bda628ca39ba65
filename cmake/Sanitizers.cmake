# Interface targets that build a target under a sanitizer. Sanitized variants are compiled
# without OpenMP: libgomp is not instrumented, so its barriers would show as false races.
add_library(engine_sanitize_thread INTERFACE)
target_compile_options(engine_sanitize_thread INTERFACE -fsanitize=thread -g -O1)
target_link_options(engine_sanitize_thread INTERFACE -fsanitize=thread)

add_library(engine_sanitize_address INTERFACE)
target_compile_options(engine_sanitize_address INTERFACE
  -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1)
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
endfunction()
