"""Runtime smoke test: the built server, run with an interposer on libllama's sequence-state
calls, shows which flags really reach each checkpoint site.

`run` puts it in order (static sites, the smoke build, models, server runs, attribution);
`interpose` compiles the interposer (`interposer.c`), preloads it and reads its log; `model`
writes the tiny GGUF models; `scenario` and `driver` run llama-server through its requests;
`attribution` maps the recorded addresses to source lines and joins them to the static sites.
"""
