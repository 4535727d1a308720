"""What added lines rely on: each form of positional initialisation, numeric uses of a constant
and not its other uses, calls with the arguments they pass; lines not added count for nothing."""

from __future__ import annotations

from patchkit.drift.declarations import read
from patchkit.drift.relies import reliances

SOURCE = b"""\
void f(bool a, int n) {
    auto * p = new some_input_text{text, a, true};
    some_input_text t = {text, a};
    some_input_text u{text};
    auto v = some_input_text{text, a, a};
    some_input_text w = {.text = text};
    int x = (int) MODE_B + arr[MODE_C] + static_cast<int>(kind::MODE_D) + (MODE_E < n);
    bool same = mode == MODE_F;
    tokenize(text);
    ctx.load(1, 2);
    LOG_INF("%d", n);
    some_input_text old = {text, a, a, a};
}
void c(void) { use((struct some_input_text){text, 1}); }
"""


def test_each_form_on_added_lines_and_nothing_else():
    found = {(r.kind, r.name, r.reach, r.line) for r in reliances(SOURCE, [*range(2, 12), 14])}
    assert {f for f in found if f[0] == "aggregate"} == {
        ("aggregate", "some_input_text", 3, 2), ("aggregate", "some_input_text", 2, 3),
        ("aggregate", "some_input_text", 1, 4), ("aggregate", "some_input_text", 3, 5),
        ("aggregate", "some_input_text", 2, 14)}
    assert {f[1] for f in found if f[0] == "numeric"} == {"MODE_B", "MODE_C", "MODE_D", "MODE_E"}
    assert {f[1] for f in found if f[0] == "name"} == {"MODE_F", "LOG_INF"}
    assert ("call", "tokenize", 1, 9) in found and ("method", "load", 2, 10) in found
    assert not any(f[3] == 12 for f in found)  # line 12 is not added


def test_declarations_never_read_bodies_and_keep_the_first_of_a_name():
    found = read(b"""\
struct s { int a; int (*cb)(int); void m(int k = 1) { int hidden = 2; } static int shared; };
typedef struct { float x; } alias;
#  define LIMIT \\
    (4 + 4)
enum e { A = 1 << 2, B, C = B + 1 };
int f(int n, const char * why = "x");
int f(double d);
""")
    assert found.members == {"s": (("int", "a"), ("int(*)(int)", "cb")), "alias": (("float", "x"),)}
    assert [m.text for m in found.macros["LIMIT"]] == ["#define LIMIT (4 + 4)"]
    assert {k: v[2] for k, v in found.enumerators.items()} == {"A": 4, "B": 5, "C": 6}
    assert [p.default for p in found.functions["s::m"][0]] == ["1"]  # by its qualified name
    assert len(found.functions["f"]) == 2


def test_a_library_header_as_llama_cpp_writes_it_is_read_whole():
    """Export macros, DEPRECATED(...) wrappers and `#  define` make tree-sitter misread the rest
    of a header (llama.h: 9 functions in 10): each declaration is still found."""
    found = read(b"""\
#ifdef LLAMA_SHARED
#    define LLAMA_API __attribute__ ((visibility ("default")))
#else
#    define LLAMA_API
#endif
#ifdef __cplusplus
extern "C" {
#endif
    DEPRECATED(LLAMA_API struct llama_model * llama_load_model_from_file(
                             const char * path_model,
              struct llama_model_params   params),
            "use llama_model_load_from_file instead");
    LLAMA_API struct llama_model * llama_model_load_from_file(const char * path_model, int32_t n = 4);
    struct llama_model_params { int32_t n_gpu_layers; bool use_mmap; };
#ifdef __cplusplus
}
#endif
""")
    assert [m.text for m in found.macros["LLAMA_API"]] == [
        '#define LLAMA_API __attribute__ ((visibility ("default")))', "#define LLAMA_API"]
    assert [p.name for p in found.functions["llama_load_model_from_file"][0]] == ["path_model", "params"]
    assert [(p.type, p.default) for p in found.functions["llama_model_load_from_file"][0]] == [
        ("const char*", None), ("int32_t", "4")]
    assert found.members["llama_model_params"] == (("int32_t", "n_gpu_layers"), ("bool", "use_mmap"))


def test_the_standard_library_is_no_reliance():
    """`std::` names and the C and C++ libraries' names used bare: upstream declares none of them."""
    source = b"""\
void f(int n, char * buf) {
    auto v = std::vector<int>(n);
    int m = std::min(n, 4) + abs(n);
    memcpy(buf, "x", 1);
    printf("%d", SIZE_MAX);
    std::sort(v.begin(), v.end());
    int k = lib::min(n, 2);
}
"""
    found = [(r.kind, r.scope, r.name) for r in reliances(source, list(range(2, 8)))]
    # A method is its class's, whatever its name: `v.begin()` may be the project's.
    assert found == [("method", "", "begin"), ("method", "", "end"), ("call", "lib", "min")]
