# Runs a planted-bug program and passes only on the sanitizer's own report of that bug: the
# sanitizer's exit code, a report header of the right kind, and the report's first stack frame
# in the planted kernel. ctest's PASS_REGULAR_EXPRESSION cannot say this: it ignores the exit
# code and matches any text, the program's own "went unnoticed" line included.
#
#   cmake -DPROGRAM=<exe> -DEXIT_CODE=<n> "-DREPORT=<header>" "-DKERNEL=<function>" -P <this file>
#
# REPORT and KERNEL are plain text, not regular expressions. The same check runs on the
# program built without its sanitizer, as a WILL_FAIL test: that proves it rejects a blind run.
foreach(argument PROGRAM EXIT_CODE REPORT KERNEL)
  if("${${argument}}" STREQUAL "")
    message(FATAL_ERROR "check_sanitizer_report.cmake: -D${argument}=... is required")
  endif()
endforeach()

execute_process(COMMAND "${PROGRAM}" RESULT_VARIABLE exit_code OUTPUT_VARIABLE output ERROR_VARIABLE output)
message("${output}")
get_filename_component(program_name "${PROGRAM}" NAME)

if(NOT exit_code STREQUAL EXIT_CODE)
  message(FATAL_ERROR "${program_name} exited with '${exit_code}', not ${EXIT_CODE}: the exit code its "
                      "sanitizer is told to end a run that reported with")
endif()

string(FIND "${output}" "${REPORT}" report_start)
if(report_start EQUAL -1)
  message(FATAL_ERROR "${program_name} printed no '${REPORT}' report")
endif()
string(SUBSTRING "${output}" ${report_start} -1 report)

# The first frame after the header is where the bad access happened: ASan writes
# "#0 0x5562... in overflow_kernel(unsigned int) file:line", TSan "#0 void block_sum_kernel<true>(...".
string(FIND "${report}" "#0 " frame_start)
if(frame_start EQUAL -1)
  message(FATAL_ERROR "the '${REPORT}' report of ${program_name} has no stack")
endif()
string(SUBSTRING "${report}" ${frame_start} -1 frame)
string(FIND "${frame}" "\n" frame_end)
string(SUBSTRING "${frame}" 0 ${frame_end} frame)
string(FIND "${frame}" " ${KERNEL}(" kernel_in_frame)
if(kernel_in_frame EQUAL -1)
  message(FATAL_ERROR "the '${REPORT}' report of ${program_name} is not in ${KERNEL}: its access is at '${frame}'")
endif()
message(STATUS "${program_name}: '${REPORT}' in ${KERNEL}, exit code ${exit_code}")
