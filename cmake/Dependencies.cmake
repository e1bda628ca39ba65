# Finds every dependency and prints one line each: found (version) or missing (and what that
# disables). Results are exported as imported targets and ENGINE_HAVE_* variables.
include(CheckLanguage)

function(engine_report name found version consequence)
  if(found)
    message(STATUS "dependency ${name}: found (${version})")
  else()
    message(STATUS "dependency ${name}: missing (${consequence})")
  endif()
endfunction()

# Reads `#define NAME value` from a header; empty when the header or the macro is absent.
function(engine_header_define out header macro)
  set(value "")
  if(EXISTS "${header}")
    file(STRINGS "${header}" line REGEX "^#define[ \t]+${macro}[ \t]+")
    string(REGEX REPLACE "^#define[ \t]+${macro}[ \t]+" "" value "${line}")
    string(STRIP "${value}" value)
    string(REPLACE "\"" "" value "${value}")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# engine::<name>: an imported library at `library` with headers in `include_dir`.
function(engine_import_library name library include_dir)
  add_library(engine::${name} UNKNOWN IMPORTED)
  set_target_properties(engine::${name} PROPERTIES IMPORTED_LOCATION "${library}"
    INTERFACE_INCLUDE_DIRECTORIES "${include_dir}")
endfunction()

# --- CUDA toolkit -------------------------------------------------------------------------
# ENGINE_HAVE_CUDA: the CUDA toolkit's nvcc and libraries. ENGINE_SIM_DEVICE: the CUDA backend
# built with g++ for the sim device instead (no nvcc, no GPU, only CUDA's headers).
set(ENGINE_HAVE_CUDA OFF)
set(ENGINE_SIM_DEVICE OFF)
if(NOT ENGINE_CUDA MATCHES "^(AUTO|ON|OFF|SIM)$")
  message(FATAL_ERROR "ENGINE_CUDA='${ENGINE_CUDA}': use AUTO, ON, OFF or SIM")
endif()
if(ENGINE_CUDA STREQUAL "SIM")
  set(ENGINE_SIM_DEVICE ON)
elseif(NOT ENGINE_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # CMake 3.25 does not know that nvcc 12+ takes -std=c++20; tell it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(ENGINE_HAVE_CUDA ON)
  elseif(ENGINE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ENGINE_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "put nvcc on PATH or configure with -DENGINE_CUDA=OFF")
  endif()
endif()
if(ENGINE_HAVE_CUDA)
  engine_report("CUDA Toolkit" ON "${CUDAToolkit_VERSION}, archs ${CMAKE_CUDA_ARCHITECTURES}" "")
elseif(ENGINE_CUDA STREQUAL "OFF")
  engine_report("CUDA Toolkit" OFF "" "disabled by ENGINE_CUDA=OFF: CPU backend only")
elseif(ENGINE_SIM_DEVICE)
  engine_report("CUDA Toolkit" OFF "" "not used by ENGINE_CUDA=SIM: the CUDA backend runs on the sim device")
else()
  engine_report("CUDA Toolkit" OFF "" "no nvcc: CPU backend only, CUDA kernels run only under the SIMT emulator")
endif()

# CUDA's headers are also used without nvcc: the SIMT emulator compiles kernels with g++
# and takes dim3, __half, __nv_bfloat16 and the WMMA types from them. Without them the
# emulator tier, the only test of the CUDA kernels on a machine without a GPU, would vanish
# from ctest unnoticed, so configure stops unless ENGINE_SIMT_TESTS=OFF says to build without it.
set(ENGINE_SIMT_HEADERS cuda_bf16.h cuda_fp16.h cuda_runtime.h mma.h vector_types.h)
find_path(ENGINE_CUDA_INCLUDE_DIR cuda_bf16.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include ENV CUDA_HOME PATH_SUFFIXES include)
set(missing_simt_headers "")
foreach(header ${ENGINE_SIMT_HEADERS})
  if(NOT EXISTS "${ENGINE_CUDA_INCLUDE_DIR}/${header}")
    list(APPEND missing_simt_headers ${header})
  endif()
endforeach()
if(ENGINE_CUDA_INCLUDE_DIR AND NOT missing_simt_headers)
  set(ENGINE_HAVE_CUDA_HEADERS ON)
  set(cuda_headers_found "${ENGINE_CUDA_INCLUDE_DIR}")
  engine_header_define(cudart_version "${ENGINE_CUDA_INCLUDE_DIR}/cuda_runtime_api.h" CUDART_VERSION)
  if(cudart_version MATCHES "^[0-9]+$")
    math(EXPR cuda_headers_major "${cudart_version} / 1000")
    math(EXPR cuda_headers_minor "${cudart_version} % 1000 / 10")
    set(cuda_headers_found "CUDA ${cuda_headers_major}.${cuda_headers_minor}, ${ENGINE_CUDA_INCLUDE_DIR}")
  endif()
else()
  set(ENGINE_HAVE_CUDA_HEADERS OFF)
endif()
if(ENGINE_SIMT_TESTS)
  engine_report("CUDA headers for the SIMT emulator" ${ENGINE_HAVE_CUDA_HEADERS} "${cuda_headers_found}"
    "configure stops: ENGINE_SIMT_TESTS is ON")
  if(NOT ENGINE_HAVE_CUDA_HEADERS)
    list(JOIN missing_simt_headers ", " missing_list)
    list(JOIN ENGINE_SIMT_HEADERS ", " needed_list)
    message(FATAL_ERROR
      "The SIMT emulator tests need CUDA's headers: ${missing_list} not found in "
      "ENGINE_CUDA_INCLUDE_DIR='${ENGINE_CUDA_INCLUDE_DIR}' (when unset, configure searches "
      "the CUDA toolkit, /usr/local/cuda/include, $CUDA_HOME/include and the system include "
      "directories for it). "
      "Run scripts/install-deps (it installs them or says what to install), or pass "
      "-DENGINE_CUDA_INCLUDE_DIR=<dir> holding ${needed_list}, or configure with "
      "-DENGINE_SIMT_TESTS=OFF to build without the emulator tier (the CUDA kernels are then "
      "tested only on a GPU).")
  endif()
else()
  engine_report("CUDA headers for the SIMT emulator" ${ENGINE_HAVE_CUDA_HEADERS}
    "${cuda_headers_found}; the emulator tests are off: ENGINE_SIMT_TESTS=OFF"
    "the emulator tests are off: ENGINE_SIMT_TESTS=OFF")
endif()

if(ENGINE_SIM_DEVICE AND NOT ENGINE_HAVE_CUDA_HEADERS)
  message(FATAL_ERROR "ENGINE_CUDA=SIM compiles the CUDA backend against CUDA's headers, but "
                      "they were not found (see the SIMT emulator's line above): run "
                      "scripts/install-deps or pass -DENGINE_CUDA_INCLUDE_DIR=<dir>")
endif()
if(ENGINE_SIM_DEVICE)
  engine_report("sim device" ON "CUDA backend under the SIMT emulator, emulated runtime, NCCL shim" "")
endif()

# --- NCCL, cuDNN, cuBLAS (only meaningful with CUDA) ---------------------------------------
set(ENGINE_HAVE_NCCL OFF)
set(ENGINE_HAVE_CUDNN OFF)
if(ENGINE_HAVE_CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(ENGINE_HAVE_NCCL ON)
    engine_header_define(nccl_major "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_MAJOR)
    engine_header_define(nccl_minor "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_MINOR)
    engine_header_define(nccl_patch "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_PATCH)
    engine_import_library(nccl "${NCCL_LIBRARY}" "${NCCL_INCLUDE_DIR}")
  endif()
  engine_report("NCCL" ${ENGINE_HAVE_NCCL} "${nccl_major}.${nccl_minor}.${nccl_patch}"
    "disables NcclTransport and NcclCommunicator")

  find_path(CUDNN_INCLUDE_DIR cudnn_version.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV CUDNN_HOME PATH_SUFFIXES include)
  find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} ENV CUDNN_HOME PATH_SUFFIXES lib lib64)
  if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
    set(ENGINE_HAVE_CUDNN ON)
    engine_header_define(cudnn_major "${CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_MAJOR)
    engine_header_define(cudnn_minor "${CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_MINOR)
    engine_header_define(cudnn_patch "${CUDNN_INCLUDE_DIR}/cudnn_version.h" CUDNN_PATCHLEVEL)
    engine_import_library(cudnn "${CUDNN_LIBRARY}" "${CUDNN_INCLUDE_DIR}")
  endif()
  engine_report("cuDNN" ${ENGINE_HAVE_CUDNN} "${cudnn_major}.${cudnn_minor}.${cudnn_patch}"
    "disables --conv-impl cudnn and the cuDNN benchmark baselines")
  engine_report("cuBLAS" ON "${CUDAToolkit_VERSION}" "")
elseif(ENGINE_SIM_DEVICE)
  # The sim device's NCCL shim (sim/nccl/: between the processes of an mpirun job on
  # one host) is engine::nccl; NVIDIA's nccl.h declares it (CUDA 13's toolkit and libnccl-dev
  # ship it; Debian's nvidia-cuda-dev alone does not).
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${ENGINE_CUDA_INCLUDE_DIR} ENV NCCL_HOME PATH_SUFFIXES include)
  if(NCCL_INCLUDE_DIR)
    set(ENGINE_HAVE_NCCL ON)
    engine_header_define(nccl_major "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_MAJOR)
    engine_header_define(nccl_minor "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_MINOR)
    engine_header_define(nccl_patch "${NCCL_INCLUDE_DIR}/nccl.h" NCCL_PATCH)
  endif()
  engine_report("NCCL" ${ENGINE_HAVE_NCCL}
    "the sim device's shim, declared by nccl.h ${nccl_major}.${nccl_minor}.${nccl_patch}"
    "no nccl.h: disables NcclTransport and NcclCommunicator on the sim device")
  engine_report("cuDNN" OFF "" "never on the sim device: disables --conv-impl cudnn and cuDNN baselines")
  engine_report("cuBLAS" OFF "" "never on the sim device: disables the cuBLAS baselines")
else()
  engine_report("NCCL" OFF "" "needs CUDA: disables NcclTransport and NcclCommunicator")
  engine_report("cuDNN" OFF "" "needs CUDA: disables --conv-impl cudnn and cuDNN baselines")
  engine_report("cuBLAS" OFF "" "needs CUDA: disables the cuBLAS baselines")
endif()

# --- MPI ----------------------------------------------------------------------------------
find_package(MPI QUIET COMPONENTS C)
engine_report("MPI" "${MPI_C_FOUND}" "MPI ${MPI_C_VERSION}"
  "multi-process runs, MpiTransport and the distributed tests are disabled")
set(ENGINE_HAVE_MPI ${MPI_C_FOUND})
find_program(ENGINE_MPIEXEC NAMES mpirun mpiexec)

# --- OpenMP, OpenBLAS ----------------------------------------------------------------------
find_package(OpenMP QUIET COMPONENTS CXX)
engine_report("OpenMP" "${OpenMP_CXX_FOUND}" "${OpenMP_CXX_VERSION}" "CPU ops run on one thread")

find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas-pthread openblas
  PATHS /usr/include/x86_64-linux-gnu /usr/include/aarch64-linux-gnu)
find_library(OPENBLAS_LIBRARY NAMES openblas)
set(ENGINE_HAVE_OPENBLAS OFF)
if(OPENBLAS_INCLUDE_DIR AND OPENBLAS_LIBRARY)
  set(ENGINE_HAVE_OPENBLAS ON)
  find_file(OPENBLAS_CONFIG openblas_config.h HINTS ${OPENBLAS_INCLUDE_DIR})
  engine_header_define(openblas_version "${OPENBLAS_CONFIG}" OPENBLAS_VERSION)
  string(REGEX MATCH "[0-9.]+" openblas_version "${openblas_version}")
  engine_import_library(openblas "${OPENBLAS_LIBRARY}" "${OPENBLAS_INCLUDE_DIR}")
endif()
engine_report("OpenBLAS" ${ENGINE_HAVE_OPENBLAS} "${openblas_version}"
  "CPU GEMM/convolution fall back to the built-in blocked GEMM")

# --- Image decoders ------------------------------------------------------------------------
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TURBOJPEG_LIBRARY turbojpeg)
set(ENGINE_HAVE_TURBOJPEG OFF)
if(TURBOJPEG_INCLUDE_DIR AND TURBOJPEG_LIBRARY)
  set(ENGINE_HAVE_TURBOJPEG ON)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(TURBOJPEG_PC QUIET libturbojpeg)
  endif()
  engine_import_library(turbojpeg "${TURBOJPEG_LIBRARY}" "${TURBOJPEG_INCLUDE_DIR}")
endif()
engine_report("libjpeg-turbo" ${ENGINE_HAVE_TURBOJPEG} "${TURBOJPEG_PC_VERSION}"
  "the data/ tests are not built (they write their JPEGs through TurboJPEG)")

# libjpeg-turbo's libjpeg API: data/ decodes JPEG regions with it (jpeg_skip_scanlines and
# jpeg_crop_scanline exist in libjpeg-turbo only, so its version macro is required).
find_path(LIBJPEG_INCLUDE_DIR jpeglib.h)
find_library(LIBJPEG_LIBRARY jpeg)
find_file(LIBJPEG_CONFIG jconfig.h HINTS ${LIBJPEG_INCLUDE_DIR} PATH_SUFFIXES x86_64-linux-gnu aarch64-linux-gnu)
engine_header_define(libjpeg_turbo_version "${LIBJPEG_CONFIG}" LIBJPEG_TURBO_VERSION)
set(ENGINE_HAVE_LIBJPEG OFF)
if(LIBJPEG_INCLUDE_DIR AND LIBJPEG_LIBRARY AND libjpeg_turbo_version)
  set(ENGINE_HAVE_LIBJPEG ON)
  engine_import_library(jpeg "${LIBJPEG_LIBRARY}" "${LIBJPEG_INCLUDE_DIR}")
endif()
engine_report("libjpeg API of libjpeg-turbo" ${ENGINE_HAVE_LIBJPEG} "${libjpeg_turbo_version}"
  "data/ decodes JPEG with stb_image (slower, no region or DCT-scaled decoding)")

find_path(STB_INCLUDE_DIR stb_image.h PATH_SUFFIXES stb)
set(ENGINE_HAVE_STB OFF)
if(STB_INCLUDE_DIR)
  set(ENGINE_HAVE_STB ON)
  file(STRINGS "${STB_INCLUDE_DIR}/stb_image.h" stb_line REGEX "stb_image - v[0-9.]+" LIMIT_COUNT 1)
  string(REGEX MATCH "v[0-9.]+" stb_version "${stb_line}")
  add_library(engine::stb INTERFACE IMPORTED)
  set_target_properties(engine::stb PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${STB_INCLUDE_DIR}")
endif()
engine_report("stb_image" ${ENGINE_HAVE_STB} "${stb_version}" "data/ is not built (it decodes PNG, BMP, PPM with it)")

find_path(TIFF_INCLUDE_DIR tiffio.h PATH_SUFFIXES x86_64-linux-gnu aarch64-linux-gnu)
find_library(TIFF_LIBRARY tiff)
set(ENGINE_HAVE_TIFF OFF)
# tiffvers.h names its version from 4.5 on, the first with per-handle error handlers (needed).
engine_header_define(tiff_version "${TIFF_INCLUDE_DIR}/tiffvers.h" TIFFLIB_MAJOR_VERSION)
engine_header_define(tiff_minor "${TIFF_INCLUDE_DIR}/tiffvers.h" TIFFLIB_MINOR_VERSION)
engine_header_define(tiff_micro "${TIFF_INCLUDE_DIR}/tiffvers.h" TIFFLIB_MICRO_VERSION)
if(TIFF_INCLUDE_DIR AND TIFF_LIBRARY AND tiff_version)
  set(ENGINE_HAVE_TIFF ON)
  engine_import_library(tiff "${TIFF_LIBRARY}" "${TIFF_INCLUDE_DIR}")
endif()
engine_report("libtiff" ${ENGINE_HAVE_TIFF} "${tiff_version}.${tiff_minor}.${tiff_micro}"
  "TIFF images are skipped with a warning (needs libtiff >= 4.5)")

find_path(WEBP_INCLUDE_DIR webp/decode.h)
find_library(WEBP_LIBRARY webp)
set(ENGINE_HAVE_WEBP OFF)
if(WEBP_INCLUDE_DIR AND WEBP_LIBRARY)
  set(ENGINE_HAVE_WEBP ON)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(WEBP_PC QUIET libwebp)
  endif()
  engine_import_library(webp "${WEBP_LIBRARY}" "${WEBP_INCLUDE_DIR}")
endif()
engine_report("libwebp" ${ENGINE_HAVE_WEBP} "${WEBP_PC_VERSION}" "WebP images are skipped with a warning")

# --- CLI11 -------------------------------------------------------------------------------
# Every binary's command line (train/cli_command.h) is parsed by CLI11, header-only: without
# it nothing that takes a flag can be built, so configure stops and says what to install.
find_package(CLI11 QUIET CONFIG)
engine_report("CLI11" "${CLI11_FOUND}" "${CLI11_VERSION}" "every binary's command line needs it")
if(NOT CLI11_FOUND)
  message(FATAL_ERROR "CLI11 is missing: apt-get install libcli11-dev (scripts/install-deps)")
endif()

# --- nlohmann-json -------------------------------------------------------------------------
# Required: safetensors headers and checkpoint metadata are read and written with it (nn/json.cpp).
find_package(nlohmann_json 3.11 QUIET)
engine_report("nlohmann-json" "${nlohmann_json_FOUND}" "${nlohmann_json_VERSION}"
  "required: install nlohmann-json3-dev (scripts/install-deps)")
if(NOT nlohmann_json_FOUND)
  message(FATAL_ERROR "nlohmann-json 3.11 or newer is required (nn/ reads and writes "
                      "safetensors headers with it): install nlohmann-json3-dev")
endif()

# --- GoogleTest ----------------------------------------------------------------------------
find_package(GTest QUIET)
engine_report("GoogleTest" "${GTest_FOUND}" "${GTest_VERSION}" "no tests are built")
