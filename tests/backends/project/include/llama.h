#pragma once
const char * llama_build_info();
