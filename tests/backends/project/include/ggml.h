#pragma once
#ifdef __cplusplus
extern "C" {
#endif
const char * ggml_backend_name(void);
#ifdef __cplusplus
}
#endif
