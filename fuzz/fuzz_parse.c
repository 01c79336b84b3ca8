/* fuzz_parse — libFuzzer harness: lexer + parser (+ AST dump and diagnostic formatting)
 * on arbitrary bytes, with a fresh arena and diagnostics per input, everything freed.
 *
 * Build (see docs/fuzzing.md):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc -Iinclude \
 *     fuzz/fuzz_parse.c src/front/lexer.c src/front/parser.c src/front/ast_dump.c \
 *     src/core/core.c -lpthread -lm -o fuzz_parse
 */
#include "front/front.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tile_source *src = tile_source_from_string("<fuzz>", (const char *)data, size);
    tile_arena arena;
    tile_arena_init(&arena);
    tile_diags diags;
    tile_diags_init(&diags);
    /* vary the error cap with the input so both the capped and the uncapped paths run */
    diags.max_errors = size ? 1 + data[0] % 40 : 20;

    ast_module *m = tile_parse(src, &arena, &diags);

    tile_strbuf sb = {0};
    ast_dump(m, &sb);
    for (int i = 0; i < diags.len; i++) tile_diag_format(&diags.items[i], &sb);
    /* a module without errors must have no NULL statements/expressions the dump flags */
    if (diags.errors == 0 && sb.data) {
        for (const char *p = sb.data; *p; p++)
            if (p[0] == '<' && p[1] == 'n' && p[2] == 'u' && p[3] == 'l' && p[4] == 'l' && p[5] == '>')
                __builtin_trap();
    }
    tile_sb_free(&sb);

    /* the lexer alone, too (its own entry point reports into the caller's diags) */
    tile_diags d2;
    tile_diags_init(&d2);
    token_list tl = tile_lex(src, &arena, &d2);
    if (tl.len < 1 || tl.toks[tl.len - 1].kind != TOK_EOF) __builtin_trap();
    tile_diags_free(&d2);

    tile_diags_free(&diags);
    tile_arena_free(&arena);
    tile_source_free(src);
    return 0;
}
