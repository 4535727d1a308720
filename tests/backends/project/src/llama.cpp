#include "llama.h"
#include "ggml.h"

#include <string>

#define LLAMA_STR2(x) #x
#define LLAMA_STR(x) LLAMA_STR2(x)

const char * llama_build_info() {
    static const std::string info = std::string("version: ") + LLAMA_STR(LLAMA_BUILD_NUMBER) +
                                    " (" + LLAMA_BUILD_COMMIT + ") " + ggml_backend_name();
    return info.c_str();
}
