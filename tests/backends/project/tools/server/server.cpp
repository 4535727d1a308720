#include "llama.h"

#include <cstdio>

int main() {
    std::printf("llama-server %s\n", llama_build_info());
    return 0;
}
