#include "ggml.h"

const char * ggml_backend_name(void) {
#if defined(GGML_USE_CUDA)
    return "CUDA";
#elif defined(GGML_USE_VULKAN)
    return "Vulkan";
#elif defined(GGML_USE_BLAS)
    return "BLAS";
#else
    return "CPU";
#endif
}
