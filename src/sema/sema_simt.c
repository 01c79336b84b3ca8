/* sema_simt.c — thread-level (SIMT) code inside a T.Kernel.
 *
 * TileLang lets a kernel name its thread index (T.get_thread_binding, T.thread_binding) and
 * then write per-thread code: every thread runs the kernel's scalar statements with its own
 * T.alloc_local buffers and variables, threads meet at T.sync_threads(), and warp shuffles
 * (T.shfl_xor/_down/_up/_sync, T.tvm_warp_shuffle) read another lane's value. Tile IR
 * describes a block's work at block level, so this file turns such a kernel into block-level
 * IR, the way work-item loops do (PoCL):
 *
 *   - the kernel body is cut at the points where all threads meet: T.sync_threads(), a
 *     shuffle, a tile operation, a T.Parallel loop, an allocation of shared memory, and a
 *     uniform assignment (the same value in every thread); each run of per-thread statements
 *     between two cuts becomes one `for t in T.Parallel(threads)` loop, t the thread index;
 *   - per-thread state that lives across cuts (T.alloc_local buffers and scalar variables
 *     assigned in one loop and read in another, or inside a loop that runs again) gets one
 *     copy per thread: a fragment with a leading dimension of `threads`, indexed by t;
 *     variables start at zero, as scalars do;
 *   - loops and branches that contain a cut stay at block level: their bounds and conditions
 *     must be the same in every thread (they may not depend on the thread index, a per-thread
 *     buffer or variable), as a barrier in CUDA must be reached by all threads;
 *   - a shuffle stores the operand of every thread into a shared scratch buffer of one slot
 *     per thread, the threads meet, and each thread reads its source lane's slot: lanes are
 *     the thread index modulo 32 and warps the groups of 32 consecutive threads; a source
 *     lane outside the shuffle's width segment or past the last thread gives the thread's own
 *     value.
 *
 * Within one per-thread loop the iterations are the threads; the interpreter's race check
 * reports two threads touching one element without a T.sync_threads() between (one of them
 * writing), as for any T.Parallel loop. Block-level code after the cut sees thread 0's copy of
 * per-thread state. */
#include "sema_int.h"

#include <stdlib.h>
#include <string.h>

/* the marker T.sync_threads() leaves in the statement list (an empty SEQ with this msg) */
static const char SIMT_BARRIER[] = "T.sync_threads()";
static const char SIMT_NAMED[] = "T.sync_threads(id, count)"; /* also shuffles: among the threads that reach it */

bool simt_is_barrier(const ir_stmt *s) { return s && s->kind == IR_S_SEQ && s->nbody == 0 && (s->msg == SIMT_BARRIER || s->msg == SIMT_NAMED); }

static void emit_marker(sema_ctx *c, tile_loc loc, const char *kind) {
    ir_stmt *s = ir_seq(c->mod, NULL, 0, loc);
    s->msg = kind;
    emit(c, s);
}

void simt_emit_barrier(sema_ctx *c, tile_loc loc) { emit_marker(c, loc, SIMT_BARRIER); }

/* the first T.sync_threads() of the whole block in s (NULL: none) */
static const ir_stmt *full_barrier(const ir_stmt *s) {
    if (!s) return NULL;
    if (s->kind == IR_S_SEQ && s->nbody == 0 && s->msg == SIMT_BARRIER) return s;
    for (int i = 0; i < s->nbody; i++) {
        const ir_stmt *b = s->body ? full_barrier(s->body[i]) : NULL;
        if (b) return b;
    }
    return NULL;
}

/* ---------- the thread index ---------- */
static bool simt_where_ok(sema_ctx *c, const char *what, tile_loc loc) {
    if (!c->in_kernel || !c->kernel) {
        sema_err(c, loc, "%s is only meaningful inside a T.Kernel", what);
        return false;
    }
    if (c->par_depth) {
        sema_err(c, loc, "%s cannot be used inside a T.Parallel loop (T.Parallel already spreads its iterations over the threads); use it in the kernel's per-thread code", what);
        return false;
    }
    return true;
}

static ir_expr *tid_expr(sema_ctx *c, tile_loc loc) {
    if (!c->simt_tid) c->simt_tid = ir_var_new(c->mod, c->fn, "tid", IR_VAR_LOOP, TILE_DT_I32, loc);
    return ir_var_ref(c->mod, c->simt_tid, loc);
}

static ir_expr *ci(sema_ctx *c, int64_t v, tile_loc loc) { return ir_const_int(c->mod, TILE_DT_I32, v, loc); }

/* index along thread dimension d of threads=(x, y, z): x varies fastest */
static ir_expr *thread_dim_index(sema_ctx *c, int d, tile_loc loc) {
    ir_expr *t = tid_expr(c, loc);
    int nd = c->simt_ndims > 0 ? c->simt_ndims : 1;
    if (d >= nd) return ci(c, 0, loc);
    if (nd == 1) return t;
    int64_t below = 1;
    for (int i = 0; i < d; i++) below *= c->simt_dims[i];
    if (below > 1) t = int_binary(c, IR_B_FLOORDIV, t, ci(c, below, loc), loc);
    if (d + 1 < nd) t = int_binary(c, IR_B_FLOORMOD, t, ci(c, c->simt_dims[d], loc), loc);
    return t;
}

static int thread_dim_of(sema_ctx *c, sval *v, const char *fname, tile_loc loc) {
    if (!v) return 0;
    if (v->kind == SV_STRING) {
        const char *s = v->str;
        if (!strncmp(s, "threadIdx.", 10) && s[10] >= 'x' && s[10] <= 'z' && !s[11]) return s[10] - 'x';
        sema_err(c, loc, "T.%s: the thread must be \"threadIdx.x\", \"threadIdx.y\" or \"threadIdx.z\", got \"%s\"", fname, s);
        return -1;
    }
    int64_t d;
    if (!as_const_int(c, v, &d, "the thread dimension")) return -1;
    if (d < 0 || d > 2) { sema_err(c, loc, "T.%s: the thread dimension must be 0, 1 or 2, got %lld", fname, (long long)d); return -1; }
    return (int)d;
}

static sval *kw(call_args *a, const char *name) {
    for (int i = 0; i < a->nkw; i++)
        if (!strcmp(a->kw[i].name, name)) return a->kwv[i];
    return NULL;
}

static ir_expr *int_arg(sema_ctx *c, sval *v, const char *what) {
    ir_expr *x = as_int_expr(c, v, what);
    return x ? cast_to(c, x, TILE_DT_I32) : NULL;
}

/* a comparison / a logical and, folded where the operands are constants */
static ir_expr *cmp(sema_ctx *c, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc) {
    int64_t x, y;
    if (ir_const_int_value(a, &x) && ir_const_int_value(b, &y)) {
        bool r = op == IR_B_LT ? x < y : op == IR_B_LE ? x <= y : op == IR_B_GE ? x >= y : op == IR_B_GT ? x > y : op == IR_B_EQ ? x == y : x != y;
        return ir_const_int(c->mod, TILE_DT_BOOL, r, loc);
    }
    return ir_binary(c->mod, op, a, b, loc);
}

static ir_expr *land(sema_ctx *c, ir_expr *a, ir_expr *b, tile_loc loc) {
    int64_t x;
    if (ir_const_int_value(a, &x)) return x ? b : a;
    if (ir_const_int_value(b, &x)) return x ? a : b;
    return ir_binary(c->mod, IR_B_AND, a, b, loc);
}

/* Exchange through shared memory: a scratch buffer of one dtype element per thread
 * (allocated at the kernel's start), this thread's v stored at its index, then a named
 * barrier; other threads' values are loads of it. Returns the buffer, *tid the thread index. */
static ir_buffer *scratch_exchange(sema_ctx *c, const char *prefix, ir_expr *v, ir_expr **tid, tile_loc loc) {
    ir_expr *shape[1] = {ci(c, c->kernel->threads, loc)};
    ir_buffer *x = ir_buffer_new(c->mod, c->fn, tile_arena_printf(&c->mod->arena, "%s%d", prefix, c->tmp_counter++), v->dtype,
                                 IR_SCOPE_SHARED, 1, shape, IR_BUF_TEMP, loc);
    ir_stmt *al = ir_stmt_new(c->mod, IR_S_ALLOC, loc);
    al->buf = x;
    tile_vec_push(&c->simt_allocs, al);
    ir_expr *t = tid_expr(c, loc);
    ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, loc);
    st->buf = x;
    st->idx = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, 1);
    st->idx[0] = t;
    st->value = v;
    emit(c, st);
    emit_marker(c, loc, SIMT_NAMED);
    *tid = t;
    return x;
}

/* A shuffle: kind 'x' xor, 'd' down, 'u' up, 's' sync (broadcast from a lane). */
static sval *shuffle(sema_ctx *c, char kind, sval *value, ir_expr *arg, ir_expr *width, const char *fname, tile_loc loc) {
    ir_expr *v = materialize(c, value);
    if (!v || !arg || !width) return sv_err(c, loc);
    if (v->dtype == TILE_DT_BOOL) v = cast_to(c, v, TILE_DT_I32);
    int64_t w;
    if (ir_const_int_value(width, &w) && (w < 1 || w > 32 || (w & (w - 1)))) {
        sema_err(c, loc, "T.%s: the width must be a power of two from 1 to 32, got %lld", fname, (long long)w);
        return sv_err(c, loc);
    }
    int threads = c->kernel->threads;
    ir_expr *t;
    ir_buffer *x = scratch_exchange(c, "shfl", v, &t, loc);
    /* lane, the start of the lane's width segment, the source lane and whether it exists */
    ir_expr *lane = int_binary(c, IR_B_FLOORMOD, t, ci(c, 32, loc), loc);
    int64_t wc;
    bool w32 = ir_const_int_value(width, &wc) && wc == 32;
    ir_expr *inseg = w32 ? lane : int_binary(c, IR_B_FLOORMOD, lane, width, loc);
    ir_expr *seg = w32 ? ci(c, 0, loc) : int_binary(c, IR_B_SUB, lane, inseg, loc);
    ir_expr *src = NULL, *ok = NULL, *zero = ci(c, 0, loc);
    switch (kind) {
    case 'x':
        src = ir_binary(c->mod, IR_B_BITXOR, lane, arg, loc);
        ok = land(c, cmp(c, IR_B_GE, src, zero, loc), cmp(c, IR_B_LT, src, int_binary(c, IR_B_ADD, seg, width, loc), loc), loc);
        break;
    case 'd':
        src = int_binary(c, IR_B_ADD, lane, arg, loc);
        ok = land(c, cmp(c, IR_B_GE, arg, zero, loc), cmp(c, IR_B_LT, int_binary(c, IR_B_ADD, inseg, arg, loc), width, loc), loc);
        break;
    case 'u':
        src = int_binary(c, IR_B_SUB, lane, arg, loc);
        ok = land(c, cmp(c, IR_B_GE, arg, zero, loc), cmp(c, IR_B_GE, int_binary(c, IR_B_SUB, inseg, arg, loc), zero, loc), loc);
        break;
    default:
        src = int_binary(c, IR_B_ADD, seg, int_binary(c, IR_B_FLOORMOD, arg, width, loc), loc);
        ok = ir_const_int(c->mod, TILE_DT_BOOL, 1, loc);
        break;
    }
    ir_expr *who = int_binary(c, IR_B_ADD, int_binary(c, IR_B_SUB, t, lane, loc), src, loc);
    ok = land(c, ok, cmp(c, IR_B_LT, who, ci(c, threads, loc), loc), loc);
    ir_expr *own = ir_load(c->mod, x, &t, loc);
    ir_expr *other = ir_load(c->mod, x, &who, loc);
    return sv_expr(c, ir_select(c->mod, ok, other, own, loc));
}

/* T.warp_reduce_<op>(v): op over v of every thread of the warp (its existing threads, lane
 * 0 first), the result in every thread of the warp */
static sval *warp_reduce(sema_ctx *c, const char *op, sval *value, tile_loc loc) {
    ir_expr *v = materialize(c, value);
    if (!v) return sv_err(c, loc);
    ir_binop bop = !strcmp(op, "sum") ? IR_B_ADD : !strcmp(op, "max") ? IR_B_MAX : !strcmp(op, "min") ? IR_B_MIN
                 : !strcmp(op, "bitand") ? IR_B_BITAND : !strcmp(op, "bitor") ? IR_B_BITOR : IR_B_COUNT;
    if (bop == IR_B_COUNT) { sema_err(c, loc, "T.warp_reduce_%s is not a warp reduction (sum, max, min, bitand, bitor)", op); return sv_err(c, loc); }
    tile_dtype ct = promote_arith(v->dtype == TILE_DT_BOOL ? TILE_DT_I32 : v->dtype);
    if ((bop == IR_B_BITAND || bop == IR_B_BITOR) && tile_dtype_is_float(ct)) {
        sema_err(c, loc, "T.warp_reduce_%s needs an integer value, got %s", op, tile_dtype_name(v->dtype));
        return sv_err(c, loc);
    }
    v = cast_to(c, v, ct);
    int threads = c->kernel->threads;
    ir_expr *t;
    ir_buffer *x = scratch_exchange(c, "wred", v, &t, loc);
    ir_expr *base = int_binary(c, IR_B_SUB, t, int_binary(c, IR_B_FLOORMOD, t, ci(c, 32, loc), loc), loc);
    ir_var *acc = ir_var_new(c->mod, c->fn, tile_arena_printf(&c->mod->arena, "wred%d_acc", c->tmp_counter++), IR_VAR_LOCAL, ct, loc);
    ir_stmt *a0 = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    a0->var = acc;
    a0->value = ir_load(c->mod, x, &base, loc);
    emit(c, a0);
    ir_var *j = ir_var_new(c->mod, c->fn, "lane", IR_VAR_LOOP, TILE_DT_I32, loc);
    ir_expr *src = int_binary(c, IR_B_ADD, base, ir_var_ref(c->mod, j, loc), loc);
    ir_stmt *up = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    up->var = acc;
    up->value = ir_binary(c->mod, bop, ir_var_ref(c->mod, acc, loc), ir_load(c->mod, x, &src, loc), loc);
    ir_stmt *g = ir_stmt_new(c->mod, IR_S_IF, loc);
    g->cond = cmp(c, IR_B_LT, src, ci(c, threads, loc), loc);
    g->body[0] = up;
    g->nbody = 1;
    ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, loc);
    f->var = j;
    f->lo = ci(c, 1, loc);
    f->extent = ci(c, 31, loc);
    f->loop_kind = IR_LOOP_SERIAL;
    f->body[0] = g;
    emit(c, f);
    return sv_expr(c, ir_var_ref(c->mod, acc, loc));
}

sval *simt_builtin(sema_ctx *c, const char *fname, call_args *a, tile_loc loc, bool *handled) {
    *handled = true;
    char what[64];
    snprintf(what, sizeof what, "T.%s()", fname);
    if (!strcmp(fname, "get_thread_binding") || !strcmp(fname, "thread_binding")) {
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        int d = 0;
        ir_expr *start = NULL;
        if (fname[0] == 'g') {
            if (a->npos > 1) { sema_err(c, loc, "T.get_thread_binding() takes at most one argument (the dimension), got %d", a->npos); return sv_err(c, loc); }
            d = thread_dim_of(c, a->npos ? a->pos[0] : kw(a, "dim"), fname, loc);
        } else {
            /* T.thread_binding(start, extent, thread="threadIdx.x") or (extent, thread=...) */
            sval *th = a->npos >= 3 ? a->pos[2] : kw(a, "thread");
            if (!th) { sema_err(c, loc, "T.thread_binding() needs the thread it binds (thread=\"threadIdx.x\")"); return sv_err(c, loc); }
            d = thread_dim_of(c, th, fname, loc);
            if (a->npos >= 2) start = int_arg(c, a->pos[0], "the start of T.thread_binding");
            int64_t ext, have = d >= 0 && d < c->simt_ndims ? c->simt_dims[d] : d == 0 ? c->kernel->threads : 1;
            sval *ev = a->npos >= 2 ? a->pos[1] : a->npos == 1 ? a->pos[0] : kw(a, "extent");
            if (d >= 0 && ev && sv_is_const(ev) && as_const_int(c, ev, &ext, "the extent of T.thread_binding") && ext != have) {
                sema_err(c, loc, "T.thread_binding: the extent %lld of threadIdx.%c differs from the kernel's %lld threads along it (T.Kernel(..., threads=...))",
                         (long long)ext, 'x' + d, (long long)have);
                return sv_err(c, loc);
            }
        }
        if (d < 0) return sv_err(c, loc);
        ir_expr *t = thread_dim_index(c, d, loc);
        if (start) t = int_binary(c, IR_B_ADD, start, t, loc);
        return sv_expr(c, t);
    }
    if (!strncmp(fname, "warp_reduce_", 12)) {
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        if (a->npos != 1) { sema_err(c, loc, "T.%s() takes one value, got %d arguments", fname, a->npos); return sv_err(c, loc); }
        return warp_reduce(c, fname + 12, a->pos[0], loc);
    }
    if (!strcmp(fname, "get_warp_group_idx")) {
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        return sv_expr(c, int_binary(c, IR_B_FLOORDIV, tid_expr(c, loc), ci(c, 128, loc), loc));
    }
    if (!strcmp(fname, "any_sync") || !strcmp(fname, "all_sync") || !strcmp(fname, "ballot_sync") || !strcmp(fname, "ballot")) {
        /* warp votes over the lanes of the thread's warp: any / all non-zero (int32 0 or 1),
         * ballot the uint64 mask of lanes whose predicate is non-zero (bit n: lane n); the
         * mask must name the whole warp */
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        bool bal = fname[0] == 'b';
        sval *pred = a->npos > 0 ? a->pos[0] : kw(a, "predicate");
        sval *mask = a->npos > 1 ? a->pos[1] : kw(a, "mask");
        if (!pred || a->npos > (!strcmp(fname, "ballot") ? 1 : 2)) { sema_err(c, loc, "T.%s() takes a predicate%s", fname, strcmp(fname, "ballot") ? " and optionally a lane mask" : ""); return sv_err(c, loc); }
        if (mask) {
            int64_t m;
            if (!as_const_int(c, mask, &m, "the lane mask")) return sv_err(c, loc);
            if ((uint32_t)m != 0xFFFFFFFFu || (m >> 32 != 0 && m != -1)) {
                sema_err(c, mask->loc, "T.%s: a lane mask other than the whole warp (0xFFFFFFFF) is not supported yet, got 0x%llx", fname, (unsigned long long)m);
                return sv_err(c, loc);
            }
        }
        ir_expr *p = to_bool(c, materialize(c, pred));
        if (!p) return sv_err(c, loc);
        if (!bal) {
            sval *r = warp_reduce(c, !strcmp(fname, "any_sync") ? "bitor" : "bitand", sv_expr(c, cast_to(c, p, TILE_DT_I32)), loc);
            return r;
        }
        ir_expr *lane = cast_to(c, int_binary(c, IR_B_FLOORMOD, tid_expr(c, loc), ci(c, 32, loc), loc), TILE_DT_U64);
        ir_expr *bit = ir_binary(c->mod, IR_B_SHL, cast_to(c, p, TILE_DT_U64), lane, loc);
        return warp_reduce(c, "bitor", sv_expr(c, bit), loc);
    }
    if (!strcmp(fname, "shuffle_elect")) {
        /* T.shuffle_elect(n): true in one thread of each group of n consecutive threads (the
         * first, as TileLang's elect_one_sync picks lane 0), in thread 0 alone for n = 0 */
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        int64_t n;
        if (a->npos != 1 || a->nkw) { sema_err(c, loc, "T.shuffle_elect() takes one argument (the group size in threads)"); return sv_err(c, loc); }
        if (!as_const_int(c, a->pos[0], &n, "the group size of T.shuffle_elect")) return sv_err(c, loc);
        if (n < 0 || (n > 0 && n % 32)) {
            sema_err(c, loc, "T.shuffle_elect: the group size must be 0 (the whole block) or a multiple of 32 threads, got %lld", (long long)n);
            return sv_err(c, loc);
        }
        ir_expr *t = tid_expr(c, loc);
        if (n) t = int_binary(c, IR_B_FLOORMOD, t, ci(c, n, loc), loc);
        return sv_expr(c, ir_binary(c->mod, IR_B_EQ, t, ci(c, 0, loc), loc));
    }
    if (!strcmp(fname, "get_lane_idx") || !strcmp(fname, "get_warp_idx") || !strcmp(fname, "get_warp_idx_sync")) {
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        int64_t ws = 32;
        sval *wv = a->npos ? a->pos[0] : kw(a, "warp_size");
        if (wv && wv->kind != SV_NONE && !as_const_int(c, wv, &ws, "the warp size")) return sv_err(c, loc);
        if (ws != 32) { sema_err(c, loc, "T.%s: Tile's warps have 32 lanes, got warp_size=%lld", fname, (long long)ws); return sv_err(c, loc); }
        ir_expr *t = tid_expr(c, loc);
        return sv_expr(c, int_binary(c, strstr(fname, "lane") ? IR_B_FLOORMOD : IR_B_FLOORDIV, t, ci(c, 32, loc), loc));
    }
    if (!strcmp(fname, "sync_threads")) {
        /* a named barrier (barrier_id, arrive_count): the threads that reach it meet (those
         * of the branch on the thread index it is in) */
        if (c->in_kernel && !c->par_depth) emit_marker(c, loc, a->npos || a->nkw ? SIMT_NAMED : SIMT_BARRIER);
        return sv_none(c, loc);
    }
    if (!strncmp(fname, "shfl_", 5) || !strcmp(fname, "tvm_warp_shuffle")) {
        if (!simt_where_ok(c, what, loc)) return sv_err(c, loc);
        if (!strcmp(fname, "tvm_warp_shuffle")) {
            /* T.tvm_warp_shuffle(mask, value, lane, width, warp_size) */
            if (a->npos != 5) { sema_err(c, loc, "T.tvm_warp_shuffle() takes 5 arguments (mask, value, lane, width, warp_size), got %d", a->npos); return sv_err(c, loc); }
            int64_t ws;
            if (!as_const_int(c, a->pos[4], &ws, "the warp size")) return sv_err(c, loc);
            if (ws != 32) { sema_err(c, loc, "T.tvm_warp_shuffle: Tile's warps have 32 lanes, got warp_size=%lld", (long long)ws); return sv_err(c, loc); }
            return shuffle(c, 's', a->pos[1], int_arg(c, a->pos[2], "the source lane"), int_arg(c, a->pos[3], "the width"), fname, loc);
        }
        char k = !strcmp(fname, "shfl_xor") ? 'x' : !strcmp(fname, "shfl_down") ? 'd' : !strcmp(fname, "shfl_up") ? 'u' : !strcmp(fname, "shfl_sync") ? 's' : 0;
        if (!k) { *handled = false; return NULL; }
        if (a->npos < 2 || a->npos > 4) { sema_err(c, loc, "T.%s() takes 2 to 4 arguments (value, %s, width, mask), got %d", fname, k == 's' ? "src_lane" : "delta", a->npos); return sv_err(c, loc); }
        sval *wv = a->npos >= 3 ? a->pos[2] : kw(a, "width");
        ir_expr *w = wv ? int_arg(c, wv, "the width") : ci(c, 32, loc);
        return shuffle(c, k, a->pos[0], int_arg(c, a->pos[1], k == 's' ? "the source lane" : "the lane delta"), w, fname, loc);
    }
    *handled = false;
    return NULL;
}

/* ---------- the kernel rewrite ---------- */
typedef struct simt {
    sema_ctx *c;
    ir_module *m;
    ir_func *f;
    ir_stmt *k;
    ir_var *tid;
    int threads;
    int nv0, nb0;          /* vars/buffers that existed before the rewrite */
    bool *vary;            /* per var: its value may differ between threads */
    /* reference scan: per var / buffer, the per-thread loop that uses it (0: none, -1: several) */
    int *v_loop, *b_loop, *b_alloc;
    bool *v_asg_loop, *v_block, *b_block;
    int *v_def;            /* per var: the per-thread loop whose top level assigns it before any use */
    ir_buffer **v_exp, **b_exp;
    tile_vec loops;        /* the per-thread loops, in order (id = index + 1) */
    tile_vec in_loop;      /* per loop: (void *)1 when it runs inside a block-level loop */
    int cur;               /* scan: id of the per-thread loop being scanned (0: block level) */
    ir_var *cur_t;         /* rewrite: the loop variable of the per-thread loop being rewritten */
    ir_expr *guard;        /* cutting a branch whose condition depends on the thread: the
                              condition every per-thread loop made inside it is under */
    bool changed;
    bool ok;
} simt;

static bool e_vary(simt *S, const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_E_VAR) return e->var->id < S->nv0 && S->vary[e->var->id];
    if (e->kind == IR_E_LOAD && e->buf->scope == IR_SCOPE_LOCAL) return true;
    for (int i = 0; i < e->nargs; i++)
        if (e_vary(S, e->args[i])) return true;
    return false;
}

static void mark(simt *S, const ir_var *v) {
    if (v && v->id < S->nv0 && !S->vary[v->id]) {
        S->vary[v->id] = true;
        S->changed = true;
    }
}

static void vary_walk(simt *S, const ir_stmt *s, bool vctx) {
    if (!s) return;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) vary_walk(S, s->body[i], vctx);
        return;
    case IR_S_FOR: {
        /* a T.Parallel loop acts for the whole block, whichever threads start it */
        if (s->loop_kind == IR_LOOP_PARALLEL) vctx = false;
        bool v = vctx || e_vary(S, s->lo) || e_vary(S, s->extent);
        if (v) mark(S, s->var);
        vary_walk(S, s->body[0], v);
        return;
    }
    case IR_S_WHILE: vary_walk(S, s->body[0], vctx || e_vary(S, s->cond)); return;
    case IR_S_IF: {
        bool v = vctx || e_vary(S, s->cond);
        vary_walk(S, s->body[0], v);
        if (s->nbody > 1) vary_walk(S, s->body[1], v);
        return;
    }
    case IR_S_ASSIGN:
        if (vctx || e_vary(S, s->value)) mark(S, s->var);
        return;
    case IR_S_ATOMIC:
        if (s->var) mark(S, s->var); /* the old value: each thread sees another one */
        return;
    default: return;
    }
}

static bool touches_local(const ir_stmt *s) {
    for (int i = 0; i < s->nregions; i++)
        if (s->regions[i].buf->scope == IR_SCOPE_LOCAL) return true;
    return false;
}

/* ---------- shared-memory hazards ----------
 * Threads of a block see each other's shared-memory writes only after they meet. TileLang's
 * thread-sync pass puts a barrier between a shared-memory access and an earlier conflicting
 * one (a write then a read or write, a read then a write) of the same buffer in per-thread
 * code; so does this lowering: a run of per-thread statements is cut there, as at a
 * T.sync_threads(). */
typedef struct bufset {
    const ir_buffer *b[32];
    int n;
    bool all; /* more than fit: treated as every shared buffer */
} bufset;

static void bs_add(bufset *s, const ir_buffer *b) {
    if (!b || b->scope != IR_SCOPE_SHARED) return;
    for (int i = 0; i < s->n; i++)
        if (s->b[i] == b) return;
    if (s->n == 32) { s->all = true; return; }
    s->b[s->n++] = b;
}

static bool bs_meet(const bufset *a, const bufset *b) {
    if ((a->all && (b->n || b->all)) || (b->all && a->n)) return true;
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++)
            if (a->b[i] == b->b[j]) return true;
    return false;
}

static void sh_e(const ir_expr *e, bufset *rd) {
    if (!e) return;
    if (e->kind == IR_E_LOAD) bs_add(rd, e->buf);
    for (int i = 0; i < e->nargs; i++) sh_e(e->args[i], rd);
}

static void sh_s(const ir_stmt *s, bufset *rd, bufset *wr) {
    if (!s) return;
    sh_e(s->lo, rd);
    sh_e(s->extent, rd);
    sh_e(s->cond, rd);
    sh_e(s->value, rd);
    if (s->idx && s->buf)
        for (int i = 0; i < s->buf->rank; i++) sh_e(s->idx[i], rd);
    if (s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) bs_add(wr, s->buf);
    if (s->kind == IR_S_ATOMIC) bs_add(rd, s->buf);
    for (int i = 0; i < s->nbody; i++)
        if (s->body && s->body[i] && s->body[i]->kind != IR_S_KERNEL) sh_s(s->body[i], rd, wr);
}

/* does x, after statements that read rd and wrote wr, need the threads to meet first? */
static bool shared_hazard(const bufset *rd, const bufset *wr, const ir_stmt *x) {
    bufset xr = {0}, xw = {0};
    sh_s(x, &xr, &xw);
    return bs_meet(wr, &xr) || bs_meet(wr, &xw) || bs_meet(rd, &xw);
}

/* is there a shared-memory hazard between two statements of one sequence inside s? */
static bool internal_hazard(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_SEQ) {
        bufset rd = {0}, wr = {0};
        for (int i = 0; i < s->nbody; i++) {
            if (!s->body[i]) continue;
            if (simt_is_barrier(s->body[i])) { memset(&rd, 0, sizeof rd); memset(&wr, 0, sizeof wr); continue; }
            if (shared_hazard(&rd, &wr, s->body[i]) || internal_hazard(s->body[i])) return true;
            sh_s(s->body[i], &rd, &wr);
        }
        return false;
    }
    if (s->kind == IR_S_FOR || s->kind == IR_S_WHILE) return s->loop_kind != IR_LOOP_PARALLEL && internal_hazard(s->body[0]);
    if (s->kind == IR_S_IF) return internal_hazard(s->body[0]) || (s->nbody > 1 && internal_hazard(s->body[1]));
    return false;
}

/* Must statement s (or something in it) run at block level? top: s is directly in the
 * sequence being cut; depth: loops between it and that sequence. */
static bool needs_block(simt *S, const ir_stmt *s, bool top, int depth) {
    if (!s) return false;
    /* a loop or branch, the same in every thread, with a shared-memory hazard inside: cut */
    if ((s->kind == IR_S_FOR && s->loop_kind != IR_LOOP_PARALLEL && !e_vary(S, s->lo) && !e_vary(S, s->extent)) ||
        (s->kind == IR_S_WHILE && !e_vary(S, s->cond)) || (s->kind == IR_S_IF && !e_vary(S, s->cond))) {
        if (internal_hazard(s)) return true;
    }
    switch (s->kind) {
    case IR_S_SEQ:
        if (simt_is_barrier(s)) return true;
        for (int i = 0; i < s->nbody; i++)
            if (needs_block(S, s->body[i], top && false, depth)) return true;
        return false;
    case IR_S_COPY: case IR_S_GEMM: case IR_S_REDUCE: return true;
    case IR_S_FILL: return !touches_local(s);
    case IR_S_ALLOC: return s->buf->scope != IR_SCOPE_LOCAL;
    case IR_S_ASSIGN: return top && !S->guard && !(s->var->id < S->nv0 && S->vary[s->var->id]) && !e_vary(S, s->value);
    case IR_S_BREAK: case IR_S_CONTINUE: return depth == 0;
    case IR_S_KERNEL: return true;
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) return true;
        return needs_block(S, s->body[0], false, depth + 1);
    case IR_S_WHILE: return needs_block(S, s->body[0], false, depth + 1);
    case IR_S_IF: return needs_block(S, s->body[0], false, depth) || (s->nbody > 1 && needs_block(S, s->body[1], false, depth));
    default: return false;
    }
}

static bool s_uses_vary(simt *S, const ir_stmt *s) {
    if (!s) return false;
    if (e_vary(S, s->lo) || e_vary(S, s->extent) || e_vary(S, s->cond) || e_vary(S, s->value)) return true;
    if (s->idx && s->buf)
        for (int i = 0; i < s->buf->rank; i++)
            if (e_vary(S, s->idx[i])) return true;
    for (int r = 0; r < s->nregions; r++)
        for (int d = 0; d < s->regions[r].buf->rank; d++)
            if (e_vary(S, s->regions[r].start[d]) || e_vary(S, s->regions[r].extent[d])) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && s->body[i] && s->body[i]->kind != IR_S_KERNEL && s_uses_vary(S, s->body[i])) return true;
    return false;
}

static const char *kind_words(const ir_stmt *s) {
    switch (s->kind) {
    case IR_S_FOR: return s->loop_kind == IR_LOOP_PARALLEL ? "a T.Parallel loop" : "a loop";
    case IR_S_WHILE: return "a while loop";
    case IR_S_IF: return "a branch";
    default: return "a tile operation";
    }
}

static ir_stmt *cut_seq(simt *S, ir_stmt *s, bool in_loop);
static ir_stmt *cut_guarded(simt *S, ir_stmt *s, bool in_loop);
static ir_stmt *cut_block(simt *S, ir_stmt *s, bool in_loop);
static void flush(simt *S, tile_vec *seg, tile_vec *out, bool in_loop);

static ir_stmt *as_seq(simt *S, ir_stmt *s) {
    if (s && s->kind == IR_S_SEQ && !simt_is_barrier(s)) return s;
    return ir_seq(S->m, &s, s ? 1 : 0, s ? s->loc : S->k->loc);
}

static void flush(simt *S, tile_vec *seg, tile_vec *out, bool in_loop) {
    if (!seg->len) return;
    ir_stmt **items = (ir_stmt **)seg->items;
    ir_stmt *body = ir_seq(S->m, items, seg->len, items[0]->loc);
    tile_vec_free(seg);
    if (S->guard) {
        ir_stmt *g = ir_stmt_new(S->m, IR_S_IF, body->loc);
        g->cond = S->guard;
        g->body[0] = body;
        g->nbody = 1;
        body = ir_seq(S->m, &g, 1, body->loc);
    }
    ir_stmt *f = ir_stmt_new(S->m, IR_S_FOR, body->loc);
    f->var = ir_var_new(S->m, S->f, "tid", IR_VAR_LOOP, TILE_DT_I32, body->loc);
    f->lo = ir_const_int(S->m, TILE_DT_I32, 0, body->loc);
    f->extent = ir_const_int(S->m, TILE_DT_I32, S->threads, body->loc);
    f->loop_kind = IR_LOOP_PARALLEL;
    f->par_group_depth = 1;
    f->body[0] = body;
    f->note = "per-thread code: one iteration per thread of the block";
    tile_vec_push(&S->loops, f);
    tile_vec_push(&S->in_loop, in_loop ? (void *)1 : NULL);
    tile_vec_push(out, f);
}

/* A tile operation or T.Parallel loop under a branch on the thread index (TileLang's
 * `if tx < 128: T.copy(...)`: the threads that take the branch do the whole operation):
 * it runs once for the block when some thread takes the branch. The threads that do raise
 * a flag in shared memory (an atomic max, so several may), then the block tests it. */
static ir_stmt *masked(simt *S, ir_stmt *s, bool in_loop) {
    tile_loc loc = s->loc;
    ir_expr *one_shape[1] = {ir_const_int(S->m, TILE_DT_I32, 1, loc)};
    ir_buffer *flag = ir_buffer_new(S->m, S->f, tile_arena_printf(&S->m->arena, "taken%d", S->c->tmp_counter++), TILE_DT_I32,
                                    IR_SCOPE_SHARED, 1, one_shape, IR_BUF_TEMP, loc);
    ir_stmt *al = ir_stmt_new(S->m, IR_S_ALLOC, loc);
    al->buf = flag;
    tile_vec_push(&S->c->simt_allocs, al);
    ir_expr *zero = ir_const_int(S->m, TILE_DT_I32, 0, loc);
    ir_stmt *clr = ir_stmt_new(S->m, IR_S_FILL, loc);
    clr->regions[0].buf = flag;
    clr->regions[0].loc = loc;
    clr->regions[0].start = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
    clr->regions[0].extent = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
    clr->regions[0].start[0] = zero;
    clr->regions[0].extent[0] = ir_const_int(S->m, TILE_DT_I32, 1, loc);
    clr->value = zero;
    ir_stmt *raise = ir_stmt_new(S->m, IR_S_ATOMIC, loc);
    raise->buf = flag;
    raise->idx = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
    raise->idx[0] = zero;
    raise->value = ir_const_int(S->m, TILE_DT_I32, 1, loc);
    raise->atomic_op = IR_ATOMIC_MAX;
    tile_vec out = {0}, seg = {0};
    tile_vec_push(&out, clr);
    tile_vec_push(&seg, raise);
    flush(S, &seg, &out, in_loop);
    ir_expr *z = zero;
    ir_stmt *test = ir_stmt_new(S->m, IR_S_IF, loc);
    test->cond = ir_binary(S->m, IR_B_NE, ir_load(S->m, flag, &z, loc), zero, loc);
    ir_expr *saved = S->guard;
    S->guard = NULL; /* the operation itself acts for the whole block */
    test->body[0] = cut_block(S, s, in_loop);
    S->guard = saved;
    test->nbody = 1;
    tile_vec_push(&out, test);
    ir_stmt *r = ir_seq(S->m, (ir_stmt **)out.items, out.len, loc);
    tile_vec_free(&out);
    return r;
}

/* A statement that runs at block level, its parts cut in turn. */
static ir_stmt *cut_block(simt *S, ir_stmt *s, bool in_loop) {
    switch (s->kind) {
    case IR_S_SEQ: return cut_seq(S, s, in_loop);
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) break;
        if (e_vary(S, s->lo) || e_vary(S, s->extent)) goto divergent;
        s->body[0] = cut_seq(S, as_seq(S, s->body[0]), true);
        return s;
    case IR_S_WHILE:
        if (e_vary(S, s->cond)) goto divergent;
        s->body[0] = cut_seq(S, as_seq(S, s->body[0]), true);
        return s;
    case IR_S_IF:
        if (e_vary(S, s->cond)) return cut_guarded(S, s, in_loop);
        s->body[0] = cut_seq(S, as_seq(S, s->body[0]), in_loop);
        if (s->nbody > 1 && s->body[1]) s->body[1] = cut_seq(S, as_seq(S, s->body[1]), in_loop);
        return s;
    case IR_S_BREAK: case IR_S_CONTINUE:
        if (S->guard) {
            sema_err(S->c, s->loc, "a %s out of a loop that contains T.sync_threads() or a warp shuffle, inside a branch that depends on the thread index, is not supported", s->kind == IR_S_BREAK ? "break" : "continue");
            S->ok = false;
        }
        return s;
    default: break;
    }
    if (S->guard && s->kind == IR_S_ALLOC && s->buf->scope != IR_SCOPE_LOCAL) {
        sema_err(S->c, s->loc, "an allocation of shared memory inside a branch that depends on the thread index is not supported: it is made for the whole block; allocate it before the branch");
        S->ok = false;
        return s;
    }
    if (S->guard && (s->kind == IR_S_COPY || s->kind == IR_S_FILL || s->kind == IR_S_GEMM || s->kind == IR_S_REDUCE || s->kind == IR_S_FOR)) {
        if (s_uses_vary(S, s)) goto per_thread_value;
        return masked(S, s, in_loop);
    }
    if (s->kind != IR_S_ASSIGN && s->kind != IR_S_ALLOC && s_uses_vary(S, s)) {
    per_thread_value:
        sema_err(S->c, s->loc, "%s uses a per-thread value (the thread index, a T.alloc_local buffer or a variable assigned per thread); %s acts for the whole block: give it values that are the same in every thread",
                 kind_words(s), kind_words(s));
        S->ok = false;
    }
    return s;
divergent:
    sema_err(S->c, s->loc, "%s whose %s depends on the thread index contains T.sync_threads(), a warp shuffle or a block-level operation, which every thread of the block must reach; make the %s the same in all threads",
             kind_words(s), s->kind == IR_S_FOR ? "bounds" : "condition", s->kind == IR_S_FOR ? "bounds" : "condition");
    S->ok = false;
    return s;
}

/* does statement s assign variable v or store to buffer b (anywhere in it)? */
static bool writes(const ir_stmt *s, const ir_var *v, const ir_buffer *b) {
    if (!s) return false;
    if (v && (s->kind == IR_S_ASSIGN || s->kind == IR_S_ATOMIC || s->kind == IR_S_FOR) && s->var == v) return true;
    if (b && (s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf == b) return true;
    if (b && s->nregions && (s->kind == IR_S_COPY ? s->regions[1].buf == b : s->kind == IR_S_REDUCE ? s->regions[1].buf == b
                             : s->kind == IR_S_GEMM ? s->regions[2].buf == b : s->regions[0].buf == b)) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && writes(s->body[i], v, b)) return true;
    return false;
}

/* the condition keeps its value through the branch: nothing in the branch changes what it reads */
static bool stable(const ir_expr *e, const ir_stmt *br) {
    if (!e) return true;
    if (e->kind == IR_E_VAR && writes(br, e->var, NULL)) return false;
    if (e->kind == IR_E_LOAD && writes(br, NULL, e->buf)) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!stable(e->args[i], br)) return false;
    return true;
}

/* A branch on a thread-dependent condition that contains a meeting point (T.sync_threads(),
 * a named barrier among the threads that take it, a shuffle): its parts are cut as at block
 * level, each per-thread loop made inside it running its statements only in the threads
 * where the condition holds. The other threads skip those loops; the threads that take the
 * branch meet at its barriers as they would among themselves. */
static ir_stmt *cut_guarded(simt *S, ir_stmt *s, bool in_loop) {
    bool then_b = needs_block(S, s->body[0], false, 0), else_b = s->nbody > 1 && needs_block(S, s->body[1], false, 0);
    if (then_b && else_b) {
        sema_err(S->c, s->loc, "both arms of a branch on the thread index contain T.sync_threads() or a shuffle (threads of one arm waiting for the other's, as in producer/consumer warp specialisation); this is not supported yet");
        S->ok = false;
        return s;
    }
    const ir_stmt *fb = full_barrier(then_b ? s->body[0] : s->body[1]);
    if (fb) {
        sema_err(S->c, fb->loc, "T.sync_threads() inside a branch that depends on the thread index: every thread of the block must reach it; for the threads of the branch use a named barrier, T.sync_threads(barrier_id, thread_count)");
        S->ok = false;
        return s;
    }
    if (!stable(s->cond, s)) {
        sema_err(S->c, s->loc, "a branch on the thread index that contains T.sync_threads() or a shuffle must not change what its condition reads (the condition is evaluated again after each barrier)");
        S->ok = false;
        return s;
    }
    ir_expr *saved = S->guard;
    ir_expr *cond = s->cond, *ncond = ir_unary(S->m, IR_U_NOT, s->cond, s->loc);
    ir_expr *g_then = saved ? ir_binary(S->m, IR_B_AND, saved, cond, s->loc) : cond;
    ir_expr *g_else = saved ? ir_binary(S->m, IR_B_AND, saved, ncond, s->loc) : ncond;
    tile_vec parts = {0};
    S->guard = then_b ? g_then : g_else;
    ir_stmt *cut = cut_seq(S, as_seq(S, then_b ? s->body[0] : s->body[1]), in_loop);
    tile_vec_push(&parts, cut);
    ir_stmt *other = then_b ? (s->nbody > 1 ? s->body[1] : NULL) : s->body[0];
    if (other) {
        /* the arm without meeting points: one per-thread loop under its condition */
        S->guard = then_b ? g_else : g_then;
        tile_vec seg = {0}, out = {0};
        tile_vec_push(&seg, other);
        flush(S, &seg, &out, in_loop);
        for (int i = 0; i < out.len; i++) tile_vec_push(&parts, out.items[i]);
        tile_vec_free(&out);
    }
    S->guard = saved;
    ir_stmt *r = ir_seq(S->m, (ir_stmt **)parts.items, parts.len, s->loc);
    tile_vec_free(&parts);
    return r;
}

static ir_stmt *cut_seq(simt *S, ir_stmt *s, bool in_loop) {
    tile_vec out = {0}, seg = {0};
    bufset rd = {0}, wr = {0}; /* shared memory the current run reads and writes */
    for (int i = 0; i < s->nbody; i++) {
        ir_stmt *x = s->body[i];
        if (!x) continue;
        if (simt_is_barrier(x)) {
            flush(S, &seg, &out, in_loop);
            memset(&rd, 0, sizeof rd);
            memset(&wr, 0, sizeof wr);
            continue;
        }
        if (needs_block(S, x, true, 0)) {
            flush(S, &seg, &out, in_loop);
            memset(&rd, 0, sizeof rd);
            memset(&wr, 0, sizeof wr);
            tile_vec_push(&out, cut_block(S, x, in_loop));
            continue;
        }
        if (seg.len && shared_hazard(&rd, &wr, x)) {
            /* the threads meet before x, as TileLang's thread-sync pass makes them */
            flush(S, &seg, &out, in_loop);
            memset(&rd, 0, sizeof rd);
            memset(&wr, 0, sizeof wr);
        }
        sh_s(x, &rd, &wr);
        tile_vec_push(&seg, x);
    }
    flush(S, &seg, &out, in_loop);
    ir_stmt *r = ir_seq(S->m, (ir_stmt **)out.items, out.len, s->loc);
    tile_vec_free(&out);
    return r;
}

/* ---------- per-thread FILLs become loops of stores ---------- */
static ir_stmt *fill_loops(simt *S, ir_stmt *s) {
    const ir_region *r = &s->regions[0];
    ir_buffer *b = r->buf;
    ir_expr **idx = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, b->rank ? b->rank : 1);
    ir_var **vs = TILE_NEW_ARRAY(&S->m->arena, ir_var *, b->rank ? b->rank : 1);
    ir_expr *guard = NULL;
    for (int d = 0; d < b->rank; d++) {
        vs[d] = ir_var_new(S->m, S->f, tile_arena_printf(&S->m->arena, "i%d", d), IR_VAR_LOOP, TILE_DT_I32, s->loc);
        ir_expr *st0 = cast_to(S->c, r->start[d], TILE_DT_I32), *ex = cast_to(S->c, r->extent[d], TILE_DT_I32);
        idx[d] = int_binary(S->c, IR_B_ADD, st0, ir_var_ref(S->m, vs[d], s->loc), s->loc);
        int64_t a0, n0, dim;
        if (ir_const_int_value(st0, &a0) && ir_const_int_value(ex, &n0) && ir_const_int_value(b->shape[d], &dim) && a0 >= 0 && a0 + n0 <= dim)
            continue; /* inside the buffer */
        /* regions clip at the buffer's bounds */
        ir_expr *in = ir_binary(S->m, IR_B_AND, ir_binary(S->m, IR_B_GE, idx[d], ir_const_int(S->m, TILE_DT_I32, 0, s->loc), s->loc),
                                ir_binary(S->m, IR_B_LT, idx[d], cast_to(S->c, b->shape[d], TILE_DT_I32), s->loc), s->loc);
        guard = guard ? ir_binary(S->m, IR_B_AND, guard, in, s->loc) : in;
    }
    ir_stmt *st = ir_stmt_new(S->m, IR_S_STORE, s->loc);
    st->buf = b;
    st->idx = idx;
    st->value = coerce_store(S->c, s->value, b->dtype, s->loc);
    ir_stmt *body = st;
    if (guard) {
        ir_stmt *g = ir_stmt_new(S->m, IR_S_IF, s->loc);
        g->cond = guard;
        g->body[0] = st;
        g->nbody = 1;
        body = g;
    }
    for (int d = b->rank - 1; d >= 0; d--) {
        ir_stmt *f = ir_stmt_new(S->m, IR_S_FOR, s->loc);
        f->var = vs[d];
        f->lo = ir_const_int(S->m, TILE_DT_I32, 0, s->loc);
        f->extent = cast_to(S->c, r->extent[d], TILE_DT_I32);
        f->loop_kind = IR_LOOP_SERIAL;
        f->body[0] = body;
        body = f;
    }
    return body;
}

static void local_tileops(simt *S, ir_stmt *s) {
    if (!s) return;
    for (int i = 0; i < s->nbody; i++) {
        ir_stmt *x = s->body ? s->body[i] : NULL;
        if (!x) continue;
        if (x->kind == IR_S_FILL && touches_local(x)) s->body[i] = fill_loops(S, x);
        else if ((x->kind == IR_S_COPY || x->kind == IR_S_GEMM || x->kind == IR_S_REDUCE) && touches_local(x)) {
            sema_err(S->c, x->loc, "in a kernel with per-thread code (T.get_thread_binding), a tile operation on a T.alloc_local buffer (one per thread) is not supported yet; write it as a loop over the buffer's elements");
            S->ok = false;
        } else local_tileops(S, x);
    }
}

/* ---------- reference scan ---------- */
static void ref_var(simt *S, const ir_var *v, bool asg) {
    if (!v || v->id >= S->nv0 || v->kind != IR_VAR_LOCAL) return;
    if (!S->cur) { S->v_block[v->id] = true; return; }
    if (S->v_loop[v->id] == 0) S->v_loop[v->id] = S->cur;
    else if (S->v_loop[v->id] != S->cur) S->v_loop[v->id] = -1;
    if (asg) S->v_asg_loop[v->id] = true;
}

static void ref_buf(simt *S, const ir_buffer *b) {
    if (!b || b->id >= S->nb0 || b->scope != IR_SCOPE_LOCAL) return;
    if (!S->cur) { S->b_block[b->id] = true; return; }
    if (S->b_loop[b->id] == 0) S->b_loop[b->id] = S->cur;
    else if (S->b_loop[b->id] != S->cur) S->b_loop[b->id] = -1;
}

static void scan_e(simt *S, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_E_VAR) ref_var(S, e->var, false);
    if (e->kind == IR_E_LOAD) ref_buf(S, e->buf);
    for (int i = 0; i < e->nargs; i++) scan_e(S, e->args[i]);
}

static int loop_id(simt *S, const ir_stmt *s) {
    for (int i = 0; i < S->loops.len; i++)
        if (S->loops.items[i] == s) return i + 1;
    return 0;
}

static void scan_s(simt *S, const ir_stmt *s);

/* the body of per-thread loop id: a variable whose first reference is an assignment at the
 * top level is defined before any use in every run of the loop */
static void scan_loop_body(simt *S, const ir_stmt *b, int id) {
    int saved = S->cur;
    S->cur = id;
    if (b && b->kind == IR_S_SEQ && !simt_is_barrier(b)) {
        for (int i = 0; i < b->nbody; i++) {
            const ir_stmt *x = b->body[i];
            if (x && x->kind == IR_S_ASSIGN && x->var->id < S->nv0 && S->v_loop[x->var->id] != id && S->v_loop[x->var->id] != -1) {
                scan_e(S, x->value);
                if (S->v_loop[x->var->id] != id) S->v_def[x->var->id] = id;
                ref_var(S, x->var, true);
                continue;
            }
            scan_s(S, x);
        }
    } else scan_s(S, b);
    S->cur = saved;
}

static void scan_s(simt *S, const ir_stmt *s) {
    if (!s) return;
    int saved = S->cur;
    if (s->kind == IR_S_FOR && !S->cur) {
        int id = loop_id(S, s);
        if (id) {
            scan_loop_body(S, s->body[0], id);
            return;
        }
    }
    scan_e(S, s->lo);
    scan_e(S, s->extent);
    scan_e(S, s->cond);
    scan_e(S, s->value);
    if (s->kind == IR_S_ASSIGN) ref_var(S, s->var, true);
    if (s->kind == IR_S_ATOMIC && s->var) ref_var(S, s->var, true);
    if (s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) {
        ref_buf(S, s->buf);
        for (int i = 0; i < s->buf->rank; i++) scan_e(S, s->idx[i]);
    }
    if (s->kind == IR_S_ALLOC && s->buf->id < S->nb0) S->b_alloc[s->buf->id] = S->cur;
    for (int r = 0; r < s->nregions; r++) {
        ref_buf(S, s->regions[r].buf);
        for (int d = 0; d < s->regions[r].buf->rank; d++) {
            scan_e(S, s->regions[r].start[d]);
            scan_e(S, s->regions[r].extent[d]);
        }
    }
    for (int i = 0; i < s->nbody; i++) scan_s(S, s->body ? s->body[i] : NULL);
    S->cur = saved;
}

/* ---------- rewrite ---------- */
static ir_expr *who(simt *S, tile_loc loc) {
    return S->cur_t ? ir_var_ref(S->m, S->cur_t, loc) : ir_const_int(S->m, TILE_DT_I32, 0, loc);
}

static ir_expr **prepend(simt *S, ir_expr *first, ir_expr **rest, int n) {
    ir_expr **a = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, n + 1);
    a[0] = first;
    for (int i = 0; i < n; i++) a[i + 1] = rest[i];
    return a;
}

static ir_expr *rw_e(simt *S, ir_expr *e) {
    if (!e) return e;
    if (e->kind == IR_E_VAR) {
        if (e->var == S->tid) {
            if (!S->cur_t) return e; /* reported by the block-level checks */
            return ir_var_ref(S->m, S->cur_t, e->loc);
        }
        if (e->var->id < S->nv0 && S->v_exp[e->var->id]) {
            ir_expr *i = who(S, e->loc);
            return ir_load(S->m, S->v_exp[e->var->id], &i, e->loc);
        }
        return e;
    }
    ir_expr **na = NULL;
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *x = rw_e(S, e->args[i]);
        if (x != e->args[i] && !na) {
            na = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, e->nargs);
            for (int j = 0; j < e->nargs; j++) na[j] = e->args[j];
        }
        if (na) na[i] = x;
    }
    bool exp = e->kind == IR_E_LOAD && e->buf->id < S->nb0 && S->b_exp[e->buf->id];
    if (!na && !exp) return e;
    ir_expr *n = TILE_NEW(&S->m->arena, ir_expr);
    *n = *e;
    n->args = na ? na : e->args;
    if (exp) {
        n->buf = S->b_exp[e->buf->id];
        n->args = prepend(S, who(S, e->loc), n->args, e->nargs);
        n->nargs = e->nargs + 1;
    }
    return n;
}

static void rw_s(simt *S, ir_stmt *s) {
    if (!s) return;
    ir_var *saved = S->cur_t;
    if (s->kind == IR_S_FOR && !S->cur_t && loop_id(S, s)) S->cur_t = s->var;
    s->lo = rw_e(S, s->lo);
    s->extent = rw_e(S, s->extent);
    s->cond = rw_e(S, s->cond);
    s->value = rw_e(S, s->value);
    if (s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) {
        for (int i = 0; i < s->buf->rank; i++) s->idx[i] = rw_e(S, s->idx[i]);
        if (s->buf->id < S->nb0 && S->b_exp[s->buf->id]) {
            s->idx = prepend(S, who(S, s->loc), s->idx, s->buf->rank);
            s->buf = S->b_exp[s->buf->id];
        }
    }
    for (int r = 0; r < s->nregions; r++) {
        ir_region *g = &s->regions[r];
        int rank = g->buf->rank;
        for (int d = 0; d < rank; d++) {
            g->start[d] = rw_e(S, g->start[d]);
            g->extent[d] = rw_e(S, g->extent[d]);
        }
        if (g->buf->id < S->nb0 && S->b_exp[g->buf->id]) {
            g->start = prepend(S, who(S, g->loc), g->start, rank);
            g->extent = prepend(S, ir_const_int(S->m, TILE_DT_I32, 1, g->loc), g->extent, rank);
            g->buf = S->b_exp[g->buf->id];
        }
    }
    if (s->kind == IR_S_ASSIGN && s->var->id < S->nv0 && S->v_exp[s->var->id]) {
        ir_buffer *v = S->v_exp[s->var->id];
        if (S->cur_t) {
            s->kind = IR_S_STORE;
            s->buf = v;
            s->idx = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
            s->idx[0] = who(S, s->loc);
        } else {
            /* a uniform value set at block level: every thread's copy */
            ir_expr *val = s->value;
            s->kind = IR_S_FILL;
            s->nregions = 1;
            s->regions = TILE_NEW_ARRAY(&S->m->arena, ir_region, 1);
            s->regions[0].buf = v;
            s->regions[0].loc = s->loc;
            s->regions[0].start = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
            s->regions[0].extent = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
            s->regions[0].start[0] = ir_const_int(S->m, TILE_DT_I32, 0, s->loc);
            s->regions[0].extent[0] = ir_const_int(S->m, TILE_DT_I32, S->threads, s->loc);
            s->value = val;
        }
        s->var = NULL;
    }
    if (s->kind == IR_S_ATOMIC && s->var && s->var->id < S->nv0 && S->v_exp[s->var->id]) {
        /* the old value lives across a cut: the atomic update, then the thread's copy */
        ir_buffer *v = S->v_exp[s->var->id];
        ir_stmt *at = ir_stmt_new(S->m, IR_S_ATOMIC, s->loc);
        *at = *s;
        at->var = ir_var_new(S->m, S->f, s->var->name, IR_VAR_LOCAL, s->var->dtype, s->loc);
        ir_stmt *cp = ir_stmt_new(S->m, IR_S_STORE, s->loc);
        cp->buf = v;
        cp->idx = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
        cp->idx[0] = who(S, s->loc);
        cp->value = ir_var_ref(S->m, at->var, s->loc);
        ir_stmt **two = TILE_NEW_ARRAY(&S->m->arena, ir_stmt *, 2);
        two[0] = at;
        two[1] = cp;
        memset(s, 0, sizeof *s);
        s->kind = IR_S_SEQ;
        s->loc = at->loc;
        s->body = two;
        s->nbody = 2;
        S->cur_t = saved;
        return;
    }
    if (s->kind == IR_S_ALLOC && s->buf->id < S->nb0 && S->b_exp[s->buf->id]) {
        /* replaced by the per-thread copies allocated at the kernel's start */
        s->kind = IR_S_SEQ;
        s->buf = NULL;
        s->nbody = 0;
        s->body = NULL;
    }
    for (int i = 0; i < s->nbody; i++) rw_s(S, s->body ? s->body[i] : NULL);
    S->cur_t = saved;
}

/* Drops the per-thread loops left empty (their statements were allocations moved to the
 * kernel's start). */
static void drop_empty(ir_module *m, ir_stmt *s) {
    if (!s || !s->body) return;
    int n = 0;
    for (int i = 0; i < s->nbody; i++) {
        ir_stmt *x = s->body[i];
        drop_empty(m, x);
        bool empty = x && x->kind == IR_S_FOR && x->loop_kind == IR_LOOP_PARALLEL && x->note && x->body[0]->kind == IR_S_SEQ;
        if (empty) {
            const ir_stmt *b = x->body[0];
            for (int j = 0; j < b->nbody && empty; j++) empty = b->body[j]->kind == IR_S_SEQ && b->body[j]->nbody == 0;
        }
        if (s->kind == IR_S_SEQ && empty) continue;
        s->body[n++] = x;
    }
    if (s->kind == IR_S_SEQ) s->nbody = n;
    (void)m;
}

static ir_buffer *per_thread(simt *S, const char *name, tile_dtype dt, int rank, ir_expr **shape, tile_loc loc) {
    ir_expr **sh = prepend(S, ir_const_int(S->m, TILE_DT_I32, S->threads, loc), shape, rank);
    return ir_buffer_new(S->m, S->f, tile_arena_printf(&S->m->arena, "%s_t", name), dt, IR_SCOPE_FRAGMENT, rank + 1, sh, IR_BUF_TEMP, loc);
}

/* block-level code: T.sync_threads() has no effect (tile operations synchronise) */
static void drop_barriers(ir_stmt *s) {
    if (!s || !s->body) return;
    int n = 0;
    for (int i = 0; i < s->nbody; i++) {
        ir_stmt *x = s->body[i];
        if (s->kind == IR_S_SEQ && simt_is_barrier(x)) continue;
        drop_barriers(x);
        s->body[n++] = x;
    }
    if (s->kind == IR_S_SEQ) s->nbody = n;
}

void simt_lower_kernel(sema_ctx *c, ir_stmt *k) {
    ir_stmt *body = k->body[0];
    if (!c->simt_tid) {
        tile_vec_free(&c->simt_allocs);
        drop_barriers(body);
        return;
    }
    simt S0, *S = &S0;
    memset(S, 0, sizeof *S);
    S->c = c;
    S->m = c->mod;
    S->f = c->fn;
    S->k = k;
    S->tid = c->simt_tid;
    S->threads = k->threads;
    S->ok = true;
    S->nv0 = c->fn->nvars;
    S->nb0 = c->fn->nbuffers;
    size_t nv = (size_t)S->nv0 + 1, nb = (size_t)S->nb0 + 1;
    S->vary = tile_xcalloc(nv, sizeof(bool));
    S->v_loop = tile_xcalloc(nv, sizeof(int));
    S->v_asg_loop = tile_xcalloc(nv, sizeof(bool));
    S->v_block = tile_xcalloc(nv, sizeof(bool));
    S->v_exp = tile_xcalloc(nv, sizeof(ir_buffer *));
    S->v_def = tile_xcalloc(nv, sizeof(int));
    S->b_loop = tile_xcalloc(nb, sizeof(int));
    S->b_alloc = tile_xcalloc(nb, sizeof(int));
    S->b_block = tile_xcalloc(nb, sizeof(bool));
    S->b_exp = tile_xcalloc(nb, sizeof(ir_buffer *));
    S->vary[S->tid->id] = true;
    do {
        S->changed = false;
        vary_walk(S, body, false);
    } while (S->changed);
    ir_stmt *top = as_seq(S, body);
    local_tileops(S, top);
    ir_stmt *cut = S->ok ? cut_seq(S, top, false) : top;
    scan_s(S, cut);
    tile_vec pre = {0};
    for (int i = 0; i < c->simt_allocs.len; i++) tile_vec_push(&pre, c->simt_allocs.items[i]);
    for (int i = 0; i < S->nv0; i++) {
        ir_var *v = c->fn->vars[i];
        int l = S->v_loop[i];
        if (v->kind != IR_VAR_LOCAL || !S->v_asg_loop[i]) continue;
        if (l != -1 && !S->v_block[i] && !(l > 0 && S->in_loop.items[l - 1] && S->v_def[i] != l)) continue;
        S->v_exp[i] = per_thread(S, v->name, v->dtype, 0, NULL, v->loc);
        ir_stmt *al = ir_stmt_new(S->m, IR_S_ALLOC, v->loc);
        al->buf = S->v_exp[i];
        tile_vec_push(&pre, al);
        ir_stmt *z = ir_stmt_new(S->m, IR_S_FILL, v->loc);
        z->regions[0].buf = S->v_exp[i];
        z->regions[0].loc = v->loc;
        z->regions[0].start = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
        z->regions[0].extent = TILE_NEW_ARRAY(&S->m->arena, ir_expr *, 1);
        z->regions[0].start[0] = ir_const_int(S->m, TILE_DT_I32, 0, v->loc);
        z->regions[0].extent[0] = ir_const_int(S->m, TILE_DT_I32, S->threads, v->loc);
        z->value = tile_dtype_is_float(v->dtype) ? ir_const_float(S->m, v->dtype, 0, v->loc) : ir_const_int(S->m, v->dtype, 0, v->loc);
        tile_vec_push(&pre, z);
    }
    for (int i = 0; i < S->nb0; i++) {
        ir_buffer *b = c->fn->buffers[i];
        int l = S->b_loop[i];
        if (b->scope != IR_SCOPE_LOCAL || l == 0) continue;
        if (l != -1 && !S->b_block[i] && S->b_alloc[i] == l) continue;
        S->b_exp[i] = per_thread(S, b->name, b->dtype, b->rank, b->shape, b->loc);
        ir_stmt *al = ir_stmt_new(S->m, IR_S_ALLOC, b->loc);
        al->buf = S->b_exp[i];
        tile_vec_push(&pre, al);
    }
    rw_s(S, cut);
    drop_empty(S->m, cut);
    tile_vec_push(&pre, cut);
    k->body[0] = ir_seq(S->m, (ir_stmt **)pre.items, pre.len, body->loc);
    tile_vec_free(&pre);
    tile_vec_free(&S->loops);
    tile_vec_free(&S->in_loop);
    free(S->vary);
    free(S->v_loop);
    free(S->v_asg_loop);
    free(S->v_block);
    free(S->v_exp);
    free(S->v_def);
    free(S->b_loop);
    free(S->b_alloc);
    free(S->b_block);
    free(S->b_exp);
    tile_vec_free(&c->simt_allocs);
    c->simt_tid = NULL;
}
