# ccache (CMakeLists.txt) pays off for what is compiled again: by rebuilds, and by the sim device
# build, whose host sources are this build's but for -D flags they never read. Code no other
# build compiles (the sanitized libraries and tests, the SIMT emulator tests) would only pay for
# it in a fresh build such as CI's: a miss costs a preprocessor run, about 9% of a compile here.
#
#   engine_compile_without_cache(<target>)
include_guard(GLOBAL)

function(engine_compile_without_cache target)
  set_target_properties(${target} PROPERTIES C_COMPILER_LAUNCHER "" CXX_COMPILER_LAUNCHER "")
endfunction()
