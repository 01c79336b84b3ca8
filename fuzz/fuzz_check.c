/* fuzz_check — libFuzzer harness: lexer + parser + semantic analysis (the checker) + IR
 * verifier and printer on arbitrary bytes. Every input gets fresh state, everything is freed.
 * A kernel that sema accepted must pass the IR verifier (sema_lower already verifies; the
 * harness checks again and traps otherwise), and printing its IR must not crash.
 *
 * Some inputs are lowered with -D bindings for the names kernels commonly use, taken from
 * the input's first bytes, so factory bodies and specialised shapes are exercised too. */
#include "front/front.h"
#include "ir/ir.h"
#include "sema/sema.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tile_source *src = tile_source_from_string("<fuzz>", (const char *)data, size);
    tile_arena arena;
    tile_arena_init(&arena);
    tile_diags diags;
    tile_diags_init(&diags);
    ast_module *m = tile_parse(src, &arena, &diags);
    if (diags.errors == 0) {
        static const char *names[] = {"M", "N", "K", "block_M", "block_N", "block_K", "dtype", "is_causal", "batch", "heads", "seq_len", "dim"};
        static const char *dtypes[] = {"float16", "bfloat16", "float32", "float8_e4m3", "float4_e2m1", "int8"};
        char vals[12][24];
        sema_define defs[12];
        int nd = 0;
        if (size > 2 && (data[size - 1] & 1)) {
            for (int i = 0; i < 12; i++) {
                unsigned v = data[(i + 1) % size];
                if (i == 6) snprintf(vals[i], sizeof vals[i], "%s", dtypes[v % 6]);
                else if (i == 7) snprintf(vals[i], sizeof vals[i], "%s", v & 1 ? "True" : "False");
                else snprintf(vals[i], sizeof vals[i], "%u", v % 200 + (v & 0x80 ? 0 : 1));
                defs[nd].name = names[i];
                defs[nd].value = vals[i];
                defs[nd].used = false;
                nd++;
            }
        }
        sema_options opt = {defs, nd, NULL};
        ir_module *ir = sema_lower(m, &opt, &diags);
        for (int i = 0; i < ir->nfuncs; i++) {
            tile_diags vd;
            tile_diags_init(&vd);
            if (!ir_verify_func(ir->funcs[i], &vd)) __builtin_trap();
            tile_diags_free(&vd);
            tile_strbuf sb = {0};
            ir_print_func(ir->funcs[i], &sb);
            tile_sb_free(&sb);
        }
        ir_module_free(ir);
    }
    tile_strbuf sb = {0};
    for (int i = 0; i < diags.len; i++) tile_diag_format(&diags.items[i], &sb);
    tile_sb_free(&sb);
    tile_diags_free(&diags);
    tile_arena_free(&arena);
    tile_source_free(src);
    return 0;
}
