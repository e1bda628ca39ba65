// The one translation unit that compiles stb_image's implementation, limited to the formats
// it serves here and with its warnings silenced (third-party code).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_PNM
#if !ENGINE_DATA_HAVE_LIBJPEG
#define STBI_ONLY_JPEG
#endif
#include <stb_image.h>
#pragma GCC diagnostic pop
