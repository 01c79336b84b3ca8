#!/bin/sh
# build.sh SRC OUT — builds the TileLink libFuzzer harnesses (fuzz/fuzz_store.c, fuzz/fuzz_tcp.c)
# with clang, -fsanitize=fuzzer,address,undefined, into OUT (the library once, as an archive).
# Exit 77 when clang cannot build a libFuzzer program here (no clang, or no libFuzzer runtime).
src="$1"; out="$2"
CC="${TLINK_FUZZ_CC:-clang}"
FLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -std=gnu11"
mkdir -p "$out/obj"
command -v "$CC" >/dev/null 2>&1 || { echo "no $CC: skipping the fuzz harnesses"; exit 77; }
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$out/probe.c"
if ! "$CC" $FLAGS "$out/probe.c" -o "$out/probe" >"$out/probe.log" 2>&1; then
    echo "$CC cannot build a libFuzzer program here (see $out/probe.log): skipping"; exit 77
fi
libsrc="util auth store p2p transport comm coll cost async compress ft ckpt topo status moe"
# rebuild when a source is newer than the harnesses
stale=0
for h in store tcp; do [ -x "$out/fuzz_$h" ] || stale=1; done
if [ $stale = 0 ]; then
    for f in "$src"/tilelink/src/*.c "$src"/tilelink/src/*.h "$src"/src/base/*.c "$src"/src/base/*.h "$src"/include/tlink.h "$src"/fuzz/fuzz_store.c "$src"/fuzz/fuzz_tcp.c; do
        [ "$f" -nt "$out/fuzz_store" ] || [ "$f" -nt "$out/fuzz_tcp" ] && stale=1
    done
fi
[ $stale = 0 ] && exit 0
rm -f "$out"/obj/*.o "$out/libtl.a"
for s in $libsrc; do
    [ -f "$src/tilelink/src/$s.c" ] || continue
    "$CC" $FLAGS -DTLINK_BUILDING_LIBRARY -I"$src/include" -I"$src/tilelink/src" -c "$src/tilelink/src/$s.c" \
        -o "$out/obj/$s.o" || exit 1
done
# src/base: the foundation libtilelink shares with libtile (knobs, logging, conversions)
for f in "$src"/src/base/*.c; do
    "$CC" $FLAGS -I"$src/include" -I"$src/src" -c "$f" -o "$out/obj/base_$(basename "$f" .c).o" || exit 1
done
ar rcs "$out/libtl.a" "$out"/obj/*.o || exit 1
for h in store tcp; do
    "$CC" $FLAGS -I"$src/include" -I"$src/tilelink/src" "$src/fuzz/fuzz_$h.c" "$out/libtl.a" -lpthread -lm -lrt -ldl \
        -o "$out/fuzz_$h" || exit 1
done
