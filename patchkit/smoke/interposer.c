/* patchkit smoke: records libllama's sequence-state calls, passes each one on unchanged.
 *
 * Preloaded (LD_PRELOAD) into the program under test. Compiled at run time by
 * patchkit/smoke/interpose.py; the log format is read by the same module, keep both in step.
 *
 * One line per call, appended to the file named by PATCHKIT_SMOKE_LOG, fields separated by tabs:
 *   call  PID  FUNCTION  FLAGS  SEQ  SIZE  FRAME...
 * FLAGS is "-" for the variants without a flags argument (distinct from 0); SIZE is what the
 * call returned; each FRAME is "ADDRESS OFFSET MODULE": a return address, innermost first, its
 * address in the module's own ELF address space, and the module's path (the path goes last, so
 * spaces in it need no quoting). Nothing is ever written to stdout or stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* llama.h's types, declared here: the interposer is built without a llama.cpp tree. */
struct llama_context;
typedef int32_t llama_seq_id;
typedef int32_t llama_token;
typedef uint32_t llama_state_seq_flags;

#define MAX_FRAMES 48
#define LINE_MAX_BYTES 16384

static int log_fd = -1;
static char exe_path[PATH_MAX];
static struct link_map *own_map;
/* Plain variants call the _ext ones through libllama's PLT, which lands here again: count the
 * nesting per thread so such a call is recorded once, at the outermost entry. */
static __thread int depth;

__attribute__((constructor)) static void smoke_init(void) {
    const char *path = getenv("PATCHKIT_SMOKE_LOG");
    if (path == NULL || *path == '\0') {
        return;
    }
    /* Created at load time, so an absent log tells the reader the preload never happened. */
    log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    Dl_info info;
    dladdr1((void *) &smoke_init, &info, (void **) &own_map, RTLD_DL_LINKMAP);
    /* The first backtrace() loads the unwinder (dlopen, malloc): do it now, not inside a call. */
    void *warm[1];
    backtrace(warm, 1);
}

/* The next definition of NAME (libllama's), looked up once; threads may race to store the same
 * value, hence the atomics. */
static void *resolve(void **cache, const char *name) {
    void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (fn == NULL) {
        fn = dlsym(RTLD_NEXT, name);
        if (fn == NULL) {
            abort(); /* only when the program calls a function no later library defines */
        }
        __atomic_store_n(cache, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

static void record(const char *function, long long flags, int has_flags, llama_seq_id seq, size_t size) {
    if (log_fd < 0) {
        return;
    }
    void *frames[MAX_FRAMES];
    int count = backtrace(frames, MAX_FRAMES);
    char line[LINE_MAX_BYTES];
    char flag_text[24] = "-";
    if (has_flags) {
        snprintf(flag_text, sizeof flag_text, "%lld", flags);
    }
    size_t used = (size_t) snprintf(line, sizeof line, "call\t%d\t%s\t%s\t%d\t%zu", (int) getpid(),
                                    function, flag_text, (int) seq, size);
    for (int i = 0; i < count; i++) {
        Dl_info info;
        struct link_map *map = NULL;
        if (!dladdr1(frames[i], &info, (void **) &map, RTLD_DL_LINKMAP) || map == NULL || map == own_map) {
            continue; /* the interposer's own frames, or an address no module claims */
        }
        /* l_addr is the load bias: the return address minus it is the address in the ELF file
         * (dli_fbase would be wrong for a non-PIE executable). The main program has no name. */
        const char *module = map->l_name[0] != '\0' ? map->l_name : exe_path;
        int n = snprintf(line + used, sizeof line - used, "\t%#lx %#lx %s", (unsigned long) frames[i],
                         (unsigned long) ((uintptr_t) frames[i] - map->l_addr), module);
        if (n < 0 || (size_t) n >= sizeof line - used - 1) {
            break; /* the innermost frames, the ones attribution needs, are already in */
        }
        used += (size_t) n;
    }
    line[used++] = '\n';
    /* One write per line on an O_APPEND descriptor: lines of concurrent threads never mix. */
    ssize_t ignored = write(log_fd, line, used);
    (void) ignored;
}

#define ENTER(type, name, params) \
    type name params { \
        static void *cache; \
        type (*next) params = (type (*) params) resolve(&cache, #name); \
        depth++;
#define LEAVE(name, flags, has_flags, seq) \
        depth--; \
        if (depth == 0) { \
            record(#name, (long long) (flags), has_flags, seq, result); \
        } \
        return result; \
    }

ENTER(size_t, llama_state_seq_get_data_ext,
      (struct llama_context *ctx, uint8_t *dst, size_t size, llama_seq_id seq_id, llama_state_seq_flags flags))
    size_t result = next(ctx, dst, size, seq_id, flags);
LEAVE(llama_state_seq_get_data_ext, flags, 1, seq_id)

ENTER(size_t, llama_state_seq_set_data_ext,
      (struct llama_context *ctx, const uint8_t *src, size_t size, llama_seq_id dest_seq_id,
       llama_state_seq_flags flags))
    size_t result = next(ctx, src, size, dest_seq_id, flags);
LEAVE(llama_state_seq_set_data_ext, flags, 1, dest_seq_id)

ENTER(size_t, llama_state_seq_get_data,
      (struct llama_context *ctx, uint8_t *dst, size_t size, llama_seq_id seq_id))
    size_t result = next(ctx, dst, size, seq_id);
LEAVE(llama_state_seq_get_data, 0, 0, seq_id)

ENTER(size_t, llama_state_seq_set_data,
      (struct llama_context *ctx, const uint8_t *src, size_t size, llama_seq_id dest_seq_id))
    size_t result = next(ctx, src, size, dest_seq_id);
LEAVE(llama_state_seq_set_data, 0, 0, dest_seq_id)

ENTER(size_t, llama_state_seq_save_file,
      (struct llama_context *ctx, const char *filepath, llama_seq_id seq_id, const llama_token *tokens,
       size_t n_token_count))
    size_t result = next(ctx, filepath, seq_id, tokens, n_token_count);
LEAVE(llama_state_seq_save_file, 0, 0, seq_id)

ENTER(size_t, llama_state_seq_load_file,
      (struct llama_context *ctx, const char *filepath, llama_seq_id dest_seq_id, llama_token *tokens_out,
       size_t n_token_capacity, size_t *n_token_count_out))
    size_t result = next(ctx, filepath, dest_seq_id, tokens_out, n_token_capacity, n_token_count_out);
LEAVE(llama_state_seq_load_file, 0, 0, dest_seq_id)
