/* _fast.c — tile._fast: the per-call path of tile.Kernel in C (an optional CPython extension;
 * kernel.py keeps a pure-Python path for when it is absent).
 *
 * KernelBase is the base class of tile.Kernel. Its tp_call tries the kernel's cached launcher
 * (the member _last_fast) on the positional arguments and, when that answers MISS, calls the
 * Python method _call(*args, **kwargs), the general path that adapts, validates, specialises
 * and reports errors. So a call whose signature was seen costs no Python frame.
 *
 * Launcher is one specialisation's launcher: it holds the tile_spec, the expected signature of
 * every argument (exact type, dtype, shape, contiguity or strides, device) and how to allocate
 * outputs, checks each argument against it (MISS on any difference: the general path then
 * decides and reports), reads the data pointers, finds the stream (fixed, or torch's current
 * stream of a CUDA device, mapped to a tile_stream by a small cache in front of a Python
 * callback) and calls tile_spec_launch once, with the GIL released.
 *
 * Where the tensor type offers DLPack's C exchange API (the capsule __dlpack_c_exchange_api__
 * on the type: torch >= 2.10, or torch-c-dlpack-ext), one C call per tensor fills a DLTensor
 * (data, device, dtype, shape, strides) without allocating, and another gives the current
 * stream; otherwise torch tensors are read through their Python attributes (dtype, shape,
 * is_contiguous() or stride(), get_device(), data_ptr()) and NumPy arrays through the buffer
 * protocol. It does not link libtile: the addresses of tile_spec_launch and
 * tile_free come from the ctypes bindings. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "tile_dlpack.h"

#if PY_VERSION_HEX < 0x03090000
#error "tile._fast needs Python 3.9 or later (the package falls back to its pure-Python path)"
#endif
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *tile_new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}
#define Py_NewRef(o) tile_new_ref((PyObject *)(o))
#endif

/* the Launcher constructor's contract with kernel.py; kernel.py ignores a module of another */
#define TILE_FAST_ABI 1

/* DLPack's C exchange API (DLPack 1.x, dlpack.h's DLPackExchangeAPI): the functions used here
 * and the layout in front of them */
typedef struct DLPackExchangeAPIHeader_ {
    DLPackVersion version;
    struct DLPackExchangeAPIHeader_ *prev_api;
} DLPackExchangeAPIHeader_;
typedef struct {
    DLPackExchangeAPIHeader_ header;
    void *managed_tensor_allocator;
    void *managed_tensor_from_py_object_no_sync;
    void *managed_tensor_to_py_object_no_sync;
    int (*dltensor_from_py_object_no_sync)(void *py_object, DLTensor *out);
    int (*current_work_stream)(DLDeviceType device_type, int32_t device_id, void **out_current_stream);
} DLPackExchangeAPI_;

typedef int (*launch_fn)(void *spec, void *stream, void *const *data, const double *scalars, char **error);
typedef void (*free_fn)(void *);

enum { KIND_TORCH = 1, KIND_NUMPY = 2 };
#define MAX_RANK 8
#define STREAM_CACHE 4

static PyObject *MISS;  /* what a launcher returns for arguments it was not made for */
static PyObject *s_dtype, *s_shape, *s_is_contiguous, *s_stride, *s_get_device, *s_data_ptr, *s_call;

typedef struct {
    int index;       /* the view's position among the kernel's views */
    int rank;
    int contiguous;  /* 1: is_contiguous() must hold; 0: strides must equal `strides` */
    long long device;  /* torch: get_device() (-1 for cpu) */
    PyObject *dtype;
    DLDevice dl_device;  /* with the exchange API: the prototype's device and dtype */
    DLDataType dl_dtype;
    long long shape[MAX_RANK], strides[MAX_RANK];  /* torch: elements; NumPy: bytes */
} InSpec;

typedef struct {
    int index;
    PyObject *args, *kwargs;  /* empty(*args, **kwargs) */
} OutSpec;

typedef struct {
    PyObject_HEAD
    void *spec;
    launch_fn launch;
    free_fn tfree;
    int kind, nviews, nin, nout;
    const DLPackExchangeAPI_ *api;  /* the tensor type's exchange API, or NULL */
    int32_t cuda_device;            /* the device of torch's current stream (api) */
    InSpec *in;
    OutSpec *out;
    PyObject *tensor_type, *empty, *error_type, *keep;
    void *stream;                  /* a fixed tile_stream, or NULL: torch's current stream */
    PyObject *raw, *raw_index;     /* torch._C._cuda_getCurrentRawStream and the device index */
    PyObject *stream_of;           /* raw CUstream (int) -> tile_stream (int) */
    uintptr_t cache_raw[STREAM_CACHE];
    void *cache_stream[STREAM_CACHE];
    int cache_n, cache_next;
} Launcher;

static void *as_ptr(PyObject *o) {
    /* data_ptr() and stream handles are Python ints; a negative or huge value is an error */
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "expected an int address");
        return NULL;
    }
    return PyLong_AsVoidPtr(o);
}

static PyObject *call0(PyObject *obj, PyObject *name) {
    return PyObject_VectorcallMethod(name, &obj, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static int same_dtype(PyObject *got, PyObject *want) {
    if (got == want) return 1;
    int r = PyObject_RichCompareBool(got, want, Py_EQ);
    if (r < 0) PyErr_Clear();
    return r > 0;
}

/* 1: x matches spec and *ptr is its data; 0: it does not (no exception set); -1: error */
static int check_dltensor(const DLPackExchangeAPI_ *api, const InSpec *sp, PyObject *x, void **ptr) {
    DLTensor t;
    if (api->dltensor_from_py_object_no_sync(x, &t) != 0) return -1;
    if (t.device.device_type != sp->dl_device.device_type || t.device.device_id != sp->dl_device.device_id ||
        t.dtype.code != sp->dl_dtype.code || t.dtype.bits != sp->dl_dtype.bits || t.dtype.lanes != sp->dl_dtype.lanes ||
        t.ndim != sp->rank)
        return 0;
    for (int d = 0; d < sp->rank; d++)
        if (t.shape[d] != sp->shape[d]) return 0;
    if (t.strides) {
        if (sp->contiguous) {
            /* row-major, where dimensions of size 1 may have any stride (torch's
             * is_contiguous() and tile_view_is_contiguous agree on this) */
            int64_t want = 1;
            for (int d = sp->rank - 1; d >= 0; d--) {
                if (t.shape[d] != 1 && t.strides[d] != want) return 0;
                want *= t.shape[d];
            }
        } else {
            for (int d = 0; d < sp->rank; d++)
                if (t.strides[d] != sp->strides[d]) return 0;
        }
    } else if (!sp->contiguous) {
        return 0;
    }
    *ptr = (char *)t.data + t.byte_offset;
    return 1;
}

static int check_torch(const InSpec *sp, PyObject *x, void **ptr) {
    PyObject *o = PyObject_GetAttr(x, s_dtype);
    if (!o) return -1;
    int ok = same_dtype(o, sp->dtype);
    Py_DECREF(o);
    if (!ok) return 0;
    o = PyObject_GetAttr(x, s_shape);
    if (!o) return -1;
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != sp->rank) {
        Py_DECREF(o);
        return 0;
    }
    for (int d = 0; d < sp->rank; d++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(o, d));
        if (v != sp->shape[d]) {
            Py_DECREF(o);
            if (v == -1 && PyErr_Occurred()) return -1;
            return 0;
        }
    }
    Py_DECREF(o);
    if (sp->contiguous) {
        o = call0(x, s_is_contiguous);
        if (!o) return -1;
        ok = o == Py_True;
        Py_DECREF(o);
        if (!ok) return 0;
    } else {
        o = call0(x, s_stride);
        if (!o) return -1;
        ok = PyTuple_Check(o) && PyTuple_GET_SIZE(o) == sp->rank;
        for (int d = 0; ok && d < sp->rank; d++) {
            long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(o, d));
            if (v == -1 && PyErr_Occurred()) {
                Py_DECREF(o);
                return -1;
            }
            ok = v == sp->strides[d];
        }
        Py_DECREF(o);
        if (!ok) return 0;
    }
    o = call0(x, s_get_device);
    if (!o) return -1;
    long long dev = PyLong_AsLongLong(o);
    Py_DECREF(o);
    if (dev == -1 && PyErr_Occurred()) return -1;
    if (dev != sp->device) return 0;
    o = call0(x, s_data_ptr);
    if (!o) return -1;
    *ptr = as_ptr(o);
    Py_DECREF(o);
    return PyErr_Occurred() ? -1 : 1;
}

static int check_numpy(const InSpec *sp, PyObject *x, void **ptr) {
    PyObject *o = PyObject_GetAttr(x, s_dtype);
    if (!o) return -1;
    int ok = same_dtype(o, sp->dtype);
    Py_DECREF(o);
    if (!ok) return 0;
    Py_buffer b;
    if (PyObject_GetBuffer(x, &b, PyBUF_STRIDES) < 0) return -1;
    ok = b.ndim == sp->rank;
    for (int d = 0; ok && d < sp->rank; d++) ok = b.shape[d] == sp->shape[d] && b.strides[d] == sp->strides[d];
    *ptr = b.buf;
    PyBuffer_Release(&b);
    return ok;
}

static void *data_of_output(Launcher *L, PyObject *o) {
    if (L->kind == KIND_TORCH) {
        PyObject *p = call0(o, s_data_ptr);
        if (!p) return NULL;
        void *v = as_ptr(p);
        Py_DECREF(p);
        return v;
    }
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_STRIDES) < 0) return NULL;
    void *v = b.buf;
    PyBuffer_Release(&b);
    return v;
}

/* the tile_stream for this call; NULL with an exception set on error */
static void *current_stream(Launcher *L) {
    if (L->stream) return L->stream;
    uintptr_t raw;
    PyObject *r = NULL;
    if (L->api) {
        void *cur = NULL;
        if (L->api->current_work_stream(kDLCUDA, L->cuda_device, &cur) != 0) return NULL;
        raw = (uintptr_t)cur;
    } else {
        r = PyObject_CallOneArg(L->raw, L->raw_index);
        if (!r) return NULL;
        raw = (uintptr_t)PyLong_AsVoidPtr(r);
        if (PyErr_Occurred()) {
            Py_DECREF(r);
            return NULL;
        }
    }
    for (int i = 0; i < L->cache_n; i++)
        if (L->cache_raw[i] == raw) {
            Py_XDECREF(r);
            return L->cache_stream[i];
        }
    if (!r && !(r = PyLong_FromVoidPtr((void *)raw))) return NULL;
    PyObject *h = PyObject_CallOneArg(L->stream_of, r);
    Py_DECREF(r);
    if (!h) return NULL;
    void *s = as_ptr(h);
    Py_DECREF(h);
    if (!s) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tile._fast: the stream callback gave a NULL stream");
        return NULL;
    }
    int slot = L->cache_n < STREAM_CACHE ? L->cache_n++ : (L->cache_next++ % STREAM_CACHE);
    L->cache_raw[slot] = raw;
    L->cache_stream[slot] = s;
    return s;
}

static PyObject *launcher_run(Launcher *L, PyObject *args) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != L->nin) return Py_NewRef(MISS);
    void *stack[32];
    void **data = L->nviews <= 32 ? stack : PyMem_Calloc((size_t)L->nviews, sizeof(void *));
    if (!data) return PyErr_NoMemory();
    memset(data, 0, sizeof(void *) * (size_t)L->nviews);
    PyObject *res = NULL, *outs[8] = {0};
    PyObject **o = L->nout <= 8 ? outs : PyMem_Calloc((size_t)L->nout, sizeof(PyObject *));
    if (!o) {
        if (data != stack) PyMem_Free(data);
        return PyErr_NoMemory();
    }
    int rc = 1;
    for (int j = 0; j < L->nin && rc == 1; j++) {
        PyObject *x = PyTuple_GET_ITEM(args, j);
        if ((PyObject *)Py_TYPE(x) != L->tensor_type) {
            rc = 0;
            break;
        }
        void **p = &data[L->in[j].index];
        if (L->api) {
            rc = check_dltensor(L->api, &L->in[j], x, p);
            if (rc >= 0) continue;
            /* a tensor the exchange API refuses (one that requires grad, say): its attributes */
            PyErr_Clear();
        }
        rc = L->kind == KIND_TORCH ? check_torch(&L->in[j], x, p) : check_numpy(&L->in[j], x, p);
    }
    if (rc <= 0) {
        /* any difference, or an attribute that fails: the general path validates and reports */
        if (rc < 0) PyErr_Clear();
        res = Py_NewRef(MISS);
        goto done;
    }
    for (int m = 0; m < L->nout; m++) {
        o[m] = PyObject_Call(L->empty, L->out[m].args, L->out[m].kwargs);
        if (!o[m]) goto done;
        data[L->out[m].index] = data_of_output(L, o[m]);
        if (PyErr_Occurred()) goto done;
    }
    void *stream = current_stream(L);
    if (!stream) goto done;
    char *err = NULL;
    int st;
    Py_BEGIN_ALLOW_THREADS
    st = L->launch(L->spec, stream, data, NULL, &err);
    Py_END_ALLOW_THREADS
    if (st) {
        PyObject *msg = err ? PyUnicode_DecodeUTF8(err, (Py_ssize_t)strlen(err), "replace") : PyUnicode_FromFormat("tile: error %d", st);
        if (err) L->tfree(err);
        if (msg) {
            PyObject *e = PyObject_CallFunction(L->error_type, "Oi", msg, st);
            Py_DECREF(msg);
            if (e) {
                PyErr_SetObject(L->error_type, e);
                Py_DECREF(e);
            }
        }
        goto done;
    }
    if (err) L->tfree(err);
    if (L->nout == 0) {
        res = Py_NewRef(Py_None);
    } else if (L->nout == 1) {
        res = Py_NewRef(o[0]);
    } else {
        res = PyTuple_New(L->nout);
        for (int m = 0; res && m < L->nout; m++) PyTuple_SET_ITEM(res, m, Py_NewRef(o[m]));
    }
done:
    for (int m = 0; m < L->nout; m++) Py_XDECREF(o[m]);
    if (o != outs) PyMem_Free(o);
    if (data != stack) PyMem_Free(data);
    return res;
}

static PyObject *launcher_call(PyObject *self, PyObject *args, PyObject *kw) {
    PyObject *a;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "a launcher takes one tuple of arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!:launcher", &PyTuple_Type, &a)) return NULL;
    return launcher_run((Launcher *)self, a);
}

static int read_ints(PyObject *seq, long long *out, int *n, const char *what) {
    PyObject *f = PySequence_Fast(seq, what);
    if (!f) return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (k > MAX_RANK) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "%s: more than %d dimensions", what, MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        out[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(f, i));
        if (out[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
    }
    if (n) *n = (int)k;
    Py_DECREF(f);
    return 0;
}

static void launcher_clear_specs(Launcher *L) {
    for (int j = 0; L->in && j < L->nin; j++) Py_CLEAR(L->in[j].dtype);
    for (int m = 0; L->out && m < L->nout; m++) {
        Py_CLEAR(L->out[m].args);
        Py_CLEAR(L->out[m].kwargs);
    }
    PyMem_Free(L->in);
    PyMem_Free(L->out);
    L->in = NULL;
    L->out = NULL;
}

/* Launcher(spec, launch, free, nviews, kind, tensor_type, inputs, outputs, empty, stream,
 *          error_type, keep, protos=None)
 *   spec, launch, free: addresses (int) of the tile_spec, tile_spec_launch and tile_free;
 *   kind: 1 torch, 2 NumPy; inputs: [(view index, dtype, shape, strides or None for
 *   contiguous, device)]; outputs: [(view index, args, kwargs or None)] for empty(...);
 *   stream: a tile_stream address (int), or (raw_fn, device index, stream_of) for torch's
 *   current CUDA stream; keep: an object kept alive with the launcher (the spec's owner);
 *   protos: the arguments the signature was taken from, to use the tensor type's DLPack
 *   exchange API where it has one (None: the attribute path). */
static int launcher_init(PyObject *self, PyObject *args, PyObject *kw) {
    Launcher *L = (Launcher *)self;
    PyObject *spec, *launch, *tfree, *ttype, *inputs, *outputs, *empty, *stream, *etype, *keep, *protos = Py_None;
    int nviews, kind;
    static char *names[] = {"spec", "launch", "free", "nviews", "kind", "tensor_type", "inputs", "outputs", "empty",
                            "stream", "error_type", "keep", "protos", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOiiOOOOOOO|O:Launcher", names, &spec, &launch, &tfree, &nviews, &kind, &ttype,
                                     &inputs, &outputs, &empty, &stream, &etype, &keep, &protos))
        return -1;
    if (kind != KIND_TORCH && kind != KIND_NUMPY) {
        PyErr_Format(PyExc_ValueError, "Launcher: kind %d (1: torch, 2: NumPy)", kind);
        return -1;
    }
    if (nviews < 0) {
        PyErr_SetString(PyExc_ValueError, "Launcher: nviews < 0");
        return -1;
    }
    launcher_clear_specs(L);
    L->spec = as_ptr(spec);
    L->launch = (launch_fn)as_ptr(launch);
    L->tfree = (free_fn)as_ptr(tfree);
    if (PyErr_Occurred()) return -1;
    if (!L->spec || !L->launch || !L->tfree) {
        PyErr_SetString(PyExc_ValueError, "Launcher: spec, launch and free must be non-NULL addresses");
        return -1;
    }
    L->kind = kind;
    L->nviews = nviews;
    PyObject *fin = PySequence_Fast(inputs, "Launcher: inputs must be a sequence");
    if (!fin) return -1;
    L->nin = (int)PySequence_Fast_GET_SIZE(fin);
    L->in = PyMem_Calloc((size_t)L->nin + 1, sizeof(InSpec));
    for (int j = 0; L->in && j < L->nin; j++) {
        InSpec *sp = &L->in[j];
        PyObject *dt, *shape, *strides;
        long long dev;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fin, j), "iOOOL:input", &sp->index, &dt, &shape, &strides, &dev)) break;
        sp->dtype = Py_NewRef(dt);
        sp->device = dev;
        if (read_ints(shape, sp->shape, &sp->rank, "input shape") < 0) break;
        sp->contiguous = strides == Py_None;
        int rs = sp->rank;
        if (!sp->contiguous && read_ints(strides, sp->strides, &rs, "input strides") < 0) break;
        if (rs != sp->rank) {
            PyErr_SetString(PyExc_ValueError, "Launcher: an input's strides and shape differ in length");
            break;
        }
        if (sp->index < 0 || sp->index >= nviews) {
            PyErr_Format(PyExc_ValueError, "Launcher: input view index %d outside 0..%d", sp->index, nviews - 1);
            break;
        }
    }
    Py_DECREF(fin);
    if (!L->in) PyErr_NoMemory();
    if (PyErr_Occurred()) return -1;
    PyObject *fout = PySequence_Fast(outputs, "Launcher: outputs must be a sequence");
    if (!fout) return -1;
    L->nout = (int)PySequence_Fast_GET_SIZE(fout);
    L->out = PyMem_Calloc((size_t)L->nout + 1, sizeof(OutSpec));
    for (int m = 0; L->out && m < L->nout; m++) {
        OutSpec *op = &L->out[m];
        PyObject *a, *k;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fout, m), "iO!O:output", &op->index, &PyTuple_Type, &a, &k)) break;
        if (k != Py_None && !PyDict_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "Launcher: an output's kwargs must be a dict or None");
            break;
        }
        op->args = Py_NewRef(a);
        op->kwargs = k == Py_None ? NULL : Py_NewRef(k);
        if (op->index < 0 || op->index >= nviews) {
            PyErr_Format(PyExc_ValueError, "Launcher: output view index %d outside 0..%d", op->index, nviews - 1);
            break;
        }
    }
    Py_DECREF(fout);
    if (!L->out) PyErr_NoMemory();
    if (PyErr_Occurred()) return -1;
    L->stream = NULL;
    Py_CLEAR(L->raw);
    Py_CLEAR(L->raw_index);
    Py_CLEAR(L->stream_of);
    L->cache_n = L->cache_next = 0;
    if (PyLong_Check(stream)) {
        L->stream = as_ptr(stream);
        if (!L->stream) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Launcher: stream is NULL");
            return -1;
        }
    } else {
        PyObject *raw, *idx, *of;
        if (!PyArg_ParseTuple(stream, "OOO:stream", &raw, &idx, &of)) return -1;
        L->raw = Py_NewRef(raw);
        L->raw_index = Py_NewRef(idx);
        L->stream_of = Py_NewRef(of);
    }
    L->api = NULL;
    L->cuda_device = 0;
    if (protos != Py_None && PyType_Check(ttype)) {
        PyObject *cap = PyObject_GetAttrString(ttype, "__dlpack_c_exchange_api__");
        const DLPackExchangeAPI_ *api = NULL;
        if (cap && PyCapsule_CheckExact(cap)) api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
        Py_XDECREF(cap);
        PyErr_Clear();  /* no exchange API: the attribute path */
        if (api && api->header.version.major == DLPACK_MAJOR_VERSION && api->dltensor_from_py_object_no_sync && api->current_work_stream) {
            if (!PyTuple_Check(protos) || PyTuple_GET_SIZE(protos) != L->nin) {
                PyErr_SetString(PyExc_ValueError, "Launcher: protos must be a tuple of one tensor per input");
                return -1;
            }
            for (int j = 0; j < L->nin; j++) {
                InSpec *sp = &L->in[j];
                DLTensor t;
                PyObject *x = PyTuple_GET_ITEM(protos, j);
                if ((PyObject *)Py_TYPE(x) != ttype) {
                    PyErr_Format(PyExc_TypeError, "Launcher: protos[%d] is not of tensor_type", j);
                    return -1;
                }
                if (api->dltensor_from_py_object_no_sync(x, &t) != 0) return -1;
                sp->dl_device = t.device;
                sp->dl_dtype = t.dtype;
                int same = t.ndim == sp->rank;
                for (int d = 0; same && d < sp->rank; d++) same = t.shape[d] == sp->shape[d];
                if (!same) {
                    PyErr_Format(PyExc_ValueError, "Launcher: protos[%d] does not have the input's shape", j);
                    return -1;
                }
                if (t.device.device_type == kDLCUDA) L->cuda_device = t.device.device_id;
            }
            L->api = api;
        }
    }
    Py_XSETREF(L->tensor_type, Py_NewRef(ttype));
    Py_XSETREF(L->empty, Py_NewRef(empty));
    Py_XSETREF(L->error_type, Py_NewRef(etype));
    Py_XSETREF(L->keep, Py_NewRef(keep));
    return 0;
}

static int launcher_traverse(PyObject *self, visitproc visit, void *arg) {
    Launcher *L = (Launcher *)self;
    for (int j = 0; L->in && j < L->nin; j++) Py_VISIT(L->in[j].dtype);
    for (int m = 0; L->out && m < L->nout; m++) {
        Py_VISIT(L->out[m].args);
        Py_VISIT(L->out[m].kwargs);
    }
    Py_VISIT(L->tensor_type);
    Py_VISIT(L->empty);
    Py_VISIT(L->error_type);
    Py_VISIT(L->keep);
    Py_VISIT(L->raw);
    Py_VISIT(L->raw_index);
    Py_VISIT(L->stream_of);
    return 0;
}

static int launcher_clear(PyObject *self) {
    Launcher *L = (Launcher *)self;
    launcher_clear_specs(L);
    L->nin = L->nout = 0;
    Py_CLEAR(L->tensor_type);
    Py_CLEAR(L->empty);
    Py_CLEAR(L->error_type);
    Py_CLEAR(L->keep);
    Py_CLEAR(L->raw);
    Py_CLEAR(L->raw_index);
    Py_CLEAR(L->stream_of);
    return 0;
}

static void launcher_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    launcher_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tile._fast.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One specialisation's launcher: launcher(args) launches or returns MISS.",
    .tp_new = PyType_GenericNew,
    .tp_init = launcher_init,
    .tp_call = launcher_call,
    .tp_traverse = launcher_traverse,
    .tp_clear = launcher_clear,
    .tp_dealloc = launcher_dealloc,
};

/* ---------- KernelBase ---------- */
typedef struct {
    PyObject_HEAD
    PyObject *fast;  /* _last_fast: a Launcher, a Python callable(args), or None */
} KernelBase;

static PyObject *kernel_call(PyObject *self, PyObject *args, PyObject *kw) {
    KernelBase *k = (KernelBase *)self;
    if ((!kw || !PyDict_GET_SIZE(kw)) && k->fast && k->fast != Py_None) {
        PyObject *f = Py_NewRef(k->fast);  /* another thread may replace it meanwhile */
        PyObject *r = Py_TYPE(f) == &LauncherType ? launcher_run((Launcher *)f, args) : PyObject_CallOneArg(f, args);
        Py_DECREF(f);
        if (!r) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
            PyErr_Clear();  /* an argument that is not a tensor: the general path says so */
        } else if (r != MISS) {
            return r;
        } else {
            Py_DECREF(r);
        }
    }
    PyObject *m = PyObject_GetAttr(self, s_call);
    if (!m) return NULL;
    PyObject *r = PyObject_Call(m, args, kw);
    Py_DECREF(m);
    return r;
}

static int kernel_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((KernelBase *)self)->fast);
    return 0;
}

static int kernel_clear(PyObject *self) {
    Py_CLEAR(((KernelBase *)self)->fast);
    return 0;
}

static void kernel_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    kernel_clear(self);
    Py_TYPE(self)->tp_free(self);
}

static PyMemberDef kernel_members[] = {
    {"_last_fast", T_OBJECT, offsetof(KernelBase, fast), 0, "the launcher the next call tries first"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject KernelBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tile._fast.KernelBase",
    .tp_basicsize = sizeof(KernelBase),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Base of tile.Kernel: calls try _last_fast(args), then self._call(*args, **kwargs).",
    .tp_new = PyType_GenericNew,
    .tp_call = kernel_call,
    .tp_members = kernel_members,
    .tp_traverse = kernel_traverse,
    .tp_clear = kernel_clear,
    .tp_dealloc = kernel_dealloc,
};

/* a launch function that does nothing: benchmarks swap it in to measure the Python side alone */
static int noop_launch(void *spec, void *stream, void *const *data, const double *scalars, char **error) {
    (void)spec, (void)stream, (void)data, (void)scalars;
    *error = NULL;
    return 0;
}

static PyObject *noop_launch_address(PyObject *self, PyObject *unused) {
    (void)self, (void)unused;
    return PyLong_FromVoidPtr((void *)(uintptr_t)&noop_launch);
}

static PyMethodDef module_methods[] = {
    {"noop_launch_address", noop_launch_address, METH_NOARGS,
     "The address of a launch function with tile_spec_launch's signature that does nothing (for benchmarks)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {PyModuleDef_HEAD_INIT, "tile._fast", "The per-call path of tile.Kernel in C.", -1,
                                         module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
    if (PyType_Ready(&LauncherType) < 0 || PyType_Ready(&KernelBaseType) < 0) return NULL;
#define INTERN(var, text) \
    if (!(var = PyUnicode_InternFromString(text))) return NULL;
    INTERN(s_dtype, "dtype")
    INTERN(s_shape, "shape")
    INTERN(s_is_contiguous, "is_contiguous")
    INTERN(s_stride, "stride")
    INTERN(s_get_device, "get_device")
    INTERN(s_data_ptr, "data_ptr")
    INTERN(s_call, "_call")
#undef INTERN
    PyObject *m = PyModule_Create(&fast_module);
    if (!m) return NULL;
    MISS = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (!MISS || PyModule_AddIntConstant(m, "ABI", TILE_FAST_ABI) < 0 || PyModule_AddObject(m, "MISS", Py_NewRef(MISS)) < 0 ||
        PyModule_AddObject(m, "Launcher", Py_NewRef((PyObject *)&LauncherType)) < 0 ||
        PyModule_AddObject(m, "KernelBase", Py_NewRef((PyObject *)&KernelBaseType)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
