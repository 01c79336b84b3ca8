/* layout.h — fragment layouts (ir.h, "fragment layouts"): the algebra the layout pass
 * (layout.c) builds them with and the GPU code generators read them with.
 *
 * In:  layouts (ir_layout) and the shapes of the fragments they describe.
 * Out: new layouts (blocked, projected, lifted, accumulator layouts of the GEMM lowerings),
 *      coordinates of a (thread, slot) pair, the slot of a projected access.
 *
 * A T.Parallel nest over register fragments iterates a layout of the nest's own index space
 * (its "nest layout", ir_lowering.layout of the FOR): thread t walks its slots s, the loop
 * variables take the coordinates of (t, s), and a fragment accessed as f[v_map[0], ...] (each
 * index one loop variable, or 0 for a dimension of extent 1) must have the layout
 * lay_project(nest, map): its slot is then a function of s alone (lay_project_slot). */
#ifndef TILE_OPT_LAYOUT_H
#define TILE_OPT_LAYOUT_H

#include "../ir/ir.h"

/* Two layouts hold the same elements in the same (thread, slot) places (origin, note and
 * the local flag are not compared). */
bool lay_equal(const ir_layout *a, const ir_layout *b);

/* The part of dimension dim's coordinate that slot s contributes (a constant). */
int64_t lay_slot_coord(const ir_layout *l, int dim, int64_t s);
/* Does dimension dim have holes: its digits reach past `extent`? */
bool lay_has_holes(const ir_layout *l, int dim, int64_t extent);

/* The layout of a rank-`rank` fragment accessed as f[nest var map[0], nest var map[1], ...]
 * in a nest of layout n (map[k] = -1: a constant 0 index into a dimension of extent 1): the
 * thread digits of dimensions not in map become replications, their slot digits are
 * dropped, the others renumbered. *bad is set when map repeats a dimension. */
ir_layout lay_project(const ir_layout *n, const int *map, int rank);
/* Slot of that fragment for slot s of the nest layout. */
int64_t lay_project_slot(const ir_layout *n, const int *map, int rank, int64_t s);
/* The C expression of lay_project_slot for a slot held in C variable `s` (appended to o). */
void lay_project_slot_c(const ir_layout *n, const int *map, int rank, const char *s, tile_strbuf *o);
/* Are all digits of n for dimensions outside map of size 1 (so a store through the
 * projection reaches every replica)? */
bool lay_project_writable(const ir_layout *n, const int *map, int rank);

/* The layout of a nest (or fragment) of `rank` dimensions with `extent`s, made from layout c
 * of a lower-rank access through map (c = lay_project(result, map, c->rank) holds): c's
 * replication digits are given to the dimensions outside map (in order, innermost first),
 * the rest of those dimensions become slot digits. */
ir_layout lay_lift(const ir_layout *c, const int *map, int crank, int rank, const int64_t *extent);

/* A blocked layout of a fragment of `rank` dimensions with `extent`s over `threads`
 * threads: `vec` consecutive elements of the last dimension per slot group (vec divides the
 * last extent), then the threads along the last dimension, then the earlier ones; the rest
 * are slots. Threads left over (a small fragment) replicate. */
ir_layout lay_blocked(int rank, const int64_t *extent, int threads, int vec);

/* The accumulator layout of the SIMT GEMM for C [bm, bn] with `threads` threads: each thread
 * a tm x tn block of elements strided by the thread grid (tm rows bm/ty apart, tn columns bn/tx
 * apart, tx x ty = threads), so a warp reads consecutive elements of A's column and B's row.
 * false when no such split exists. */
bool lay_simt_gemm(int64_t bm, int64_t bn, int threads, ir_layout *out);

/* wgmma's accumulator layout for C [wgs * mt * 64, n] (n a multiple of 8): warpgroup w holds
 * rows 64 mt w .. 64 mt (w + 1) - 1, thread t of it rows 16 (t / 32) + (t % 32) / 4 (+ 8) of
 * each m64 tile and column pairs 8 j + 2 (t % 4); slot = jj * 4 + h * 2 + e (+ n/2 per tile). */
ir_layout lay_wgmma(int wgs, int mt, int64_t n);

/* Elements one vector access moves in a T.copy between a register fragment of layout l
 * (dtype fd, last dimension of extent `last`) and memory of dtype md: 4 (16 bytes) for the
 * same 32-bit dtype; 8 or 4 for an f32 fragment of a 16-bit tensor (converted); for the same
 * 16- or 8-bit dtype the bits move as they are, 16 bytes or 8 (or 4 for 8-bit). The run of
 * consecutive slots (l->vec) and `last` must be multiples of it. 0: element by element. The
 * explain text (layout.c) and the code generators (simt.c) both decide with this. */
int lay_copy_vector(const ir_layout *l, tile_dtype fd, tile_dtype md, int64_t last);

/* Text of a layout for log lines (ir_print_layout). */
void lay_describe(const ir_layout *l, tile_strbuf *o);

/* The per-thread part of dimension dim's coordinate as a C expression of thread index
 * variable `t` (appended to o; "0" when no thread digit indexes dim). */
void lay_thread_coord_c(const ir_layout *l, int dim, const char *t, tile_strbuf *o);
/* A C condition "this thread is replica 0" (every replication digit 0) of thread variable t
 * ("1" when there is no replication). */
void lay_rep0_c(const ir_layout *l, const char *t, tile_strbuf *o);

/* rowgroup.c: a kernel whose fragments (frags) need more than `budget` registers a thread and
 * whose rows are independent runs them in a serial loop over groups of rows (the fragments'
 * dimension 0 shrinks); true when it rewrote k. The decision goes to --explain. */
bool opt_row_groups(ir_module *m, ir_func *f, ir_stmt *k, ir_buffer *const *frags, int nfrags, int threads, int budget);
int64_t opt_row_group_words(const ir_buffer *const *fr, const bool *row, int n, int64_t R, int64_t g, int threads);

#endif
