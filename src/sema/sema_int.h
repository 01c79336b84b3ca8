/* sema_int.h — internals shared by the files of src/sema (not a public interface). */
#ifndef TILE_SEMA_INT_H
#define TILE_SEMA_INT_H

#include "sema.h"

/* A value during analysis: compile-time things (constants, dtypes, strings, tuples,
 * functions, the T namespace) and run-time things (IR expressions, buffers, element
 * accesses) are both values, so factory code and kernel code share one evaluator. */
typedef enum sv_kind {
    SV_NONE = 0,   /* Python None / a statement with no value */
    SV_EXPR,       /* an IR expression (constants included) */
    SV_BUFFER,     /* a whole buffer */
    SV_ACCESS,     /* buf[...] before we know if it is a load or a region */
    SV_DTYPE,
    SV_STRING,
    SV_TUPLE,      /* tuple or list */
    SV_MODULE,     /* an imported module (the language namespace), str = dotted path */
    SV_BUILTIN,    /* a builtin function, str = its name */
    SV_FUNC,       /* a user def (helper, macro, kernel, factory) */
    SV_METHOD,     /* bound method: self.str (e.g. x.astype) */
    SV_OPAQUE,     /* something accepted and ignored (T.GemmWarpPolicy.FullRow); str = the
                      dotted name as written where known */
    SV_DICT,       /* dict: items = keys, vals = values (compile time only) */
    SV_BROKEN      /* a module-level name whose definition Tile could not evaluate; str =
                      the error, loc = where; using it reports that error */
} sv_kind;

typedef struct sema_env sema_env;
typedef struct sval sval;

typedef struct sv_access {
    ir_buffer *buf;
    int n;               /* number of subscript items (must equal rank) */
    ir_expr **start;     /* per dim */
    ir_expr **extent;    /* per dim: NULL for a point index */
    bool any_slice;
    /* an element of a view (T.reshape / T.view) rewritten onto its base: the view and the
     * indices as written, for tile operations that take it as a head element */
    ir_buffer *view;
    ir_expr **view_idx;
} sv_access;

typedef struct sema_fn {
    const ast_stmt *def;      /* a def, or NULL for a lambda */
    const ast_expr *lambda;   /* AST_E_LAMBDA */
    sema_env *closure;   /* environment the def was made in */
} sema_fn;

/* Evaluated arguments of a call. kw[i].name is never NULL here (`**d` is expanded). */
typedef struct call_args {
    sval **pos;
    int npos;
    const ast_keyword *kw;
    sval **kwv;
    int nkw;
} call_args;

struct sval {
    sv_kind kind;
    tile_loc loc;
    ir_expr *e;          /* SV_EXPR */
    bool weak;           /* SV_EXPR constant written as a literal: type not committed
                            (e->dtype is I64 for ints, F64 for floats, BOOL) */
    ir_buffer *buf;      /* SV_BUFFER */
    sv_access *acc;      /* SV_ACCESS */
    tile_dtype dt;       /* SV_DTYPE */
    const char *str;     /* SV_STRING, SV_MODULE, SV_BUILTIN, SV_METHOD (method name) */
    sval **items;        /* SV_TUPLE, SV_DICT (keys) */
    sval **vals;         /* SV_DICT values */
    int nitems;
    sema_fn *fn;         /* SV_FUNC */
    sval *self;          /* SV_METHOD */
    const char *display; /* SV_MODULE: the name as written (T.foo), for messages */
    bool poison;         /* SV_NONE standing for an expression that had an error */
    sval *list_root;     /* SV_TUPLE read through a name: the list it is (append/extend grow
                            the root, so every name for the list sees the change) */
    bool fresh_var;      /* SV_EXPR: a variable T.alloc_var just made; `x = T.alloc_var(...)`
                            names it instead of copying it */
};

/* Name bindings. A name bound to SV_EXPR of a LOCAL var is a mutable variable; other
 * bindings are aliases (constants, buffers, loop indices, pure index expressions). */
typedef struct sema_binding {
    const char *name;
    sval *val;
    int par_id;          /* LOCAL vars: the T.Parallel group that declared it (0 = none) */
    struct sema_binding *next;
} sema_binding;

struct sema_env {
    sema_env *parent;
    sema_binding *head;
    const ast_stmt *func; /* the def whose scope this is (NULL at module level) */
    /* assignment counts of the names of this scope (pre-scan), to tell constants from variables */
    const char **assigned_names;
    int *assigned_counts;
    int nassigned;
};

typedef struct sema_ctx {
    tile_arena *arena;       /* where svals and env live (freed after lowering) */
    ir_module *mod;
    ir_func *fn;             /* function being built (NULL at module level) */
    tile_diags *diags;
    sema_options *opt;
    const ast_module *ast;
    sema_env *module_env;
    tile_vec *stmts;         /* where statements are emitted */
    int in_kernel;           /* inside a T.Kernel body */
    ir_stmt *kernel;
    int par_depth;           /* nested T.Parallel groups */
    int par_ids[64];
    int next_par_id;
    int loop_depth;          /* enclosing loops that break/continue may target */
    int inline_depth;        /* helper/macro inlining depth */
    int bad;                 /* errors in the current function */
    int tmp_counter;
    /* ALLOC statements of global buffers, so `return C` can turn C into an output */
    ir_stmt **global_allocs;
    int nglobal_allocs, cap_global_allocs;
    ir_buffer **returned;
    int nreturned;
    bool returned_done;
    int out_idx[16];         /* @tilelang.jit(out_idx=...) */
    int nout_idx;
    sval *scratch;           /* a result passed out of a callback */
    /* T.alloc_reducer buffers and their operation (ir_atomic_kind) */
    ir_buffer *reducers[32];
    int reducer_ops[32];
    int nreducers;
    bool eager;              /* lowering an eager @tilelang.jit kernel (may `return` tensors) */
    bool use_callsites;      /* unbound entry parameters take values from the file's calls */
    bool callsite_used;
    /* factory-level asserts on values known only at run time: checked at kernel entry */
    const ast_stmt *pending_asserts[32];
    sema_env *pending_envs[32];
    int npending_asserts;
    const ast_stmt *eager_def;
    sema_env *tile_scope;        /* the scope of the tile operation being lowered */
    /* thread-level code of the kernel being lowered (sema_simt.c) */
    ir_var *simt_tid;            /* the thread index, made by its first use (NULL: none) */
    int simt_dims[3];            /* threads=(x, y, z) of the kernel */
    int simt_ndims;
    tile_vec simt_allocs;        /* shuffle scratch buffers, allocated at the kernel's start */
    /* per local variable id: 1 + the 16-bit float dtype every assignment to it rounded to
     * (h = T.cast(x, "float16") keeps h in f32), -1 when they differ, 0 unknown */
    int *var_narrow;
    int nvar_narrow;
    const ast_stmt *entry_outer; /* a kernel defined inside this (test) function: its scope */
    sema_env *entry_env;         /* ... evaluated at compile time (caller_env) */
    /* size variables that stand for a factory's (or eager kernel's) unbound Python int
     * parameters: '/' on them is Python's true division (TileLang computes it in Python) */
    const ir_var *py_sizes[64];
    int npy_sizes;
    /* views made by T.reshape / T.view: buffers of their own shape over the storage of
     * view_base[i] (row-major, the same elements in the same order). They live only in
     * sema: element accesses are rewritten onto the base, tile operations go through
     * copies (sema_stmt.c), so no IR node names a view. */
    ir_buffer *views[64];
    ir_buffer *view_base[64];
    int nviews;
    /* mbarriers of the kernel being lowered (T.alloc_barrier, sema_stmt.c): a local int32
     * buffer holding each barrier's arrivals so far, and each barrier's arrive count */
    ir_buffer *barriers[16];
    int64_t *bar_counts[16];
    int nbarriers;
    tile_loc sync_loc;           /* the first T.ws or barrier operation of the kernel */
    bool sync_used;
    int ws_threads;              /* threads of the T.ws(...) group being lowered (0: the block) */
    /* loop variables with constant bounds (lo..hi inclusive), to prove view indices in range */
    const ir_var *range_var[256];
    int64_t range_lo[256], range_hi[256];
    int nrange;
    /* T.annotate_safe_value({A: v}) in the kernel being lowered: element reads of the global
     * tensor A outside its bounds give v (of A's dtype), and so do the out-of-bounds source
     * elements of a T.copy from A (TileLang's safe memory legalisation with a chosen value) */
    ir_buffer *safe_buf[16];
    ir_expr *safe_val[16];       /* a constant of safe_buf[i]'s dtype (copied at each use) */
    int nsafe;
    /* global tensors the kernel has read so far (an annotation after a read is an error) */
    const ir_buffer *read_bufs[64];
    int nread_bufs;
    int read_mark;               /* read_bufs[read_mark..] are the reads of the current T.sblock */
} sema_ctx;

/* sema.c */
sval *sv_new(sema_ctx *c, sv_kind k, tile_loc loc);
sval *sv_expr(sema_ctx *c, ir_expr *e);
sval *sv_weak_int(sema_ctx *c, int64_t v, tile_loc loc);
sval *sv_weak_float(sema_ctx *c, double v, tile_loc loc);
sval *sv_weak_bool(sema_ctx *c, bool v, tile_loc loc);
sval *sv_none(sema_ctx *c, tile_loc loc);
sval *sv_err(sema_ctx *c, tile_loc loc); /* the value of an erroneous expression: later uses stay silent */
const char *sv_describe(const sval *v);
void env_bind(sema_ctx *c, sema_env *env, const char *name, sval *v, int par_id);
sema_binding *env_lookup(sema_env *env, const char *name);
sema_env *env_new(sema_ctx *c, sema_env *parent, const ast_stmt *func);
int env_assign_count(sema_env *env, const char *name);
void emit(sema_ctx *c, ir_stmt *s);
/* s, or `if cond: s` when cond is not NULL (an element statement kept inside a tensor's bounds) */
ir_stmt *guard_stmt(sema_ctx *c, ir_expr *cond, ir_stmt *s, tile_loc loc);
void push_stmts(sema_ctx *c, tile_vec *save, tile_vec *fresh);
ir_stmt *pop_stmts(sema_ctx *c, tile_vec *save, tile_vec *fresh, tile_loc loc);
void sema_err(sema_ctx *c, tile_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

sval *sema_symbol(sema_ctx *c, const char *name, tile_loc loc); /* -D value or size variable */
bool sema_is_py_int(const sema_ctx *c, const ir_expr *e); /* a Python int of the factory, not an int PrimExpr */
void sema_declare_eager_tensor(sema_ctx *c, sema_env *env, const ast_stmt *ann);

/* sema_expr.c */
bool par_active(sema_ctx *c, int id); /* is T.Parallel group id (0: none) enclosing the code being lowered? */
sval *lower_expr(sema_ctx *c, sema_env *env, const ast_expr *e);
ir_expr *materialize(sema_ctx *c, sval *v);             /* scalar value or NULL (error reported) */
ir_expr *as_int_expr(sema_ctx *c, sval *v, const char *what); /* integer expression (i32 default) */
bool as_const_int(sema_ctx *c, sval *v, int64_t *out, const char *what);
bool sv_is_const(const sval *v);
tile_dtype as_dtype(sema_ctx *c, sval *v, const char *what); /* SV_DTYPE or dtype string */
ir_expr *to_bool(sema_ctx *c, ir_expr *e);
ir_expr *cast_to(sema_ctx *c, ir_expr *e, tile_dtype dt);
ir_expr *coerce_store(sema_ctx *c, ir_expr *v, tile_dtype dst, tile_loc loc);
/* views (T.reshape / T.view, sema_stmt.c): the base buffer of a view (NULL: not a view), and
 * the base indices of one of its elements */
ir_buffer *sema_view_base(sema_ctx *c, const ir_buffer *b);
/* T.annotate_safe_value: the safe value of b (a fresh constant of b's dtype), NULL: none */
ir_expr *sema_safe_value(sema_ctx *c, const ir_buffer *b, tile_loc loc);
void sema_note_read(sema_ctx *c, const ir_buffer *b);
sval *sema_annotate_safe_value(sema_ctx *c, call_args *a, tile_loc loc);
sval *sema_any_all_of(sema_ctx *c, const char *fname, sval *arg, tile_loc loc);
sval *sema_getattr(sema_ctx *c, sval *base, const char *name, tile_loc loc);
sval *sema_fresh_var(sema_ctx *c, tile_dtype dt, tile_loc loc);
/* the condition that every index of ix lies inside b's shape; NULL where provably so */
ir_expr *sema_in_bounds(sema_ctx *c, const ir_buffer *b, ir_expr **ix, tile_loc loc);
ir_expr **sema_view_index(sema_ctx *c, const ir_buffer *v, ir_expr *const *idx, tile_loc loc);
sval *sema_shape_tuple(sema_ctx *c, ir_buffer *b, tile_loc loc);
sval *sema_make_view(sema_ctx *c, sval *src, sval *shape, sval *dtype, const char *what, tile_loc loc);
sval *binary_op(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc);
ir_expr *int_binary(sema_ctx *c, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc); /* folds */
ir_expr *ceildiv_expr(sema_ctx *c, ir_expr *a, ir_expr *b, tile_loc loc);
sval *call_value(sema_ctx *c, sema_env *env, sval *fn, const ast_expr *call);
sval *inline_call(sema_ctx *c, sema_fn *fn, sval **args, int nargs, const ast_keyword *kw,
                  sval **kwvals, int nkw, tile_loc loc);
bool lookup_builtin_exists(const char *name);
tile_dtype promote_arith(tile_dtype a);

/* sema_py.c: compile-time Python */
bool py_truth(const sval *v, bool *t);                  /* false: not known at compile time */
bool py_equal(const sval *a, const sval *b, bool *eq);  /* false: not comparable at compile time */
bool py_iter(sema_ctx *c, sval *v, sval ***items, int *n, tile_loc loc);
sval *py_dict_get(const sval *d, const sval *key);
sval *py_comprehension(sema_ctx *c, sema_env *env, const ast_expr *e);
sval *py_display(sema_ctx *c, sema_env *env, const ast_expr *e); /* DICT SET *COMP LAMBDA ELLIPSIS */
sval *py_contains(sema_ctx *c, sval *needle, sval *hay, bool negate, tile_loc loc);
bool py_has_method(const sval *self, const char *name);
sval *py_method(sema_ctx *c, sval *self, const char *name, call_args *a, tile_loc loc);
bool py_is_builtin(const char *name);
sval *py_argparser(sema_ctx *c, tile_loc loc); /* argparse.ArgumentParser(): defaults of its arguments */
sval *py_builtin(sema_ctx *c, const char *name, call_args *a, tile_loc loc);
sval *py_torch_call(sema_ctx *c, const char *path, call_args *a, tile_loc loc); /* a host tensor or NULL */
sval *py_host_tensor_binary(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc); /* NULL: not on host tensors */
sval *py_device_query(sema_ctx *c, const char *path, call_args *a, tile_loc loc); /* torch.cuda.*, get_num_sms */
sval *py_product(sema_ctx *c, call_args *a, tile_loc loc); /* itertools.product */
bool py_host_tensor_has(const sval *self, const char *name);
sval *py_host_tensor_attr(sema_ctx *c, sval *self, const char *a, tile_loc loc);

tile_dtype sema_var_narrow(sema_ctx *c, const ir_var *v); /* TILE_DT_INVALID: none */

/* sema_simt.c: thread-level code */
sval *simt_builtin(sema_ctx *c, const char *fname, call_args *a, tile_loc loc, bool *handled);
void simt_emit_barrier(sema_ctx *c, tile_loc loc);
bool simt_is_barrier(const ir_stmt *s);
void simt_lower_kernel(sema_ctx *c, ir_stmt *kernel); /* after the body is lowered */

/* sema_stmt.c */
void lower_block(sema_ctx *c, sema_env *env, const ast_block *b);
void lower_stmt(sema_ctx *c, sema_env *env, const ast_stmt *s);
sval *lower_tile_call(sema_ctx *c, sema_env *env, const char *name, const ast_expr *call,
                      sval **args, int nargs, bool *handled);
ir_buffer *declare_buffer(sema_ctx *c, const char *name, tile_dtype dt, ir_scope scope, sval *shape,
                          tile_loc loc);
void prescan_assignments(sema_ctx *c, sema_env *env, const ast_block *b);

#endif
