"""Runtime smoke test: the built server, run with an interposer on libllama's sequence-state
calls, shows which flags really reach each checkpoint site.

`interpose` compiles the interposer, preloads it and reads its log; `attribution` maps the
recorded addresses to source lines and joins them to the static sites of the site checks.
"""
