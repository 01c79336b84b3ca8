/* topo.c — topology discovery, the topology file format, synthetic clusters and cost
 * predictions through cost.c's model (see topo.h, docs/tilelink-topology.md). */
#include "tl_internal.h"
#include "topo.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ====================================================================== basics */

static void seterr(char *err, size_t errlen, const char *fmt, ...) TL_PRINTF(3, 4);
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void set_default_cost(tlink_topo *t) {
    /* cost.c's defaults: a one-rank communicator gets them without any measurement */
    tlink_comm c;
    memset(&c, 0, sizeof c);
    c.size = 1;
    tl_cost_init(&c);
    memcpy(t->alpha_s, c.alpha, sizeof t->alpha_s);
    memcpy(t->beta_s, c.beta, sizeof t->beta_s);
    t->gamma_s = c.gamma;
}

static tlink_topo *topo_new(void) {
    tlink_topo *t = calloc(1, sizeof *t);
    if (t) set_default_cost(t);
    return t;
}

/* Appends a host; returns it (NULL on OOM). Ranks are added by the caller. */
static tlink_topo_host *add_host(tlink_topo *t, const char *name) {
    tlink_topo_host *h = realloc(t->hosts, (size_t)(t->nhosts + 1) * sizeof *h);
    if (!h) return NULL;
    t->hosts = h;
    h = &t->hosts[t->nhosts++];
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", name);
    return h;
}

static int host_add_rank(tlink_topo_host *h, int r) {
    int *nr = realloc(h->ranks, (size_t)(h->nranks + 1) * sizeof *nr);
    if (!nr) return -1;
    h->ranks = nr;
    h->ranks[h->nranks++] = r;
    return 0;
}

static int find_host(const tlink_topo *t, const char *name) {
    for (int i = 0; i < t->nhosts; i++)
        if (!strcmp(t->hosts[i].name, name)) return i;
    return -1;
}

void tlink_topo_free(tlink_topo *t) {
    if (!t) return;
    for (int i = 0; i < t->nhosts; i++) {
        free(t->hosts[i].ranks);
        free(t->hosts[i].numa);
        free(t->hosts[i].gpus);
        free(t->hosts[i].gpulinks);
    }
    free(t->hosts);
    free(t->links);
    free(t);
}

tlink_status tlink_topo_set_cost(tlink_topo *t, tlink_transport tr, double a, double b) {
    if (!t || (unsigned)tr >= TLINK_TRANSPORT_COUNT || !(a >= 0) || !(b > 0)) return TLINK_ERR_INVALID_ARG;
    t->alpha_s[tr] = a;
    t->beta_s[tr] = b;
    return TLINK_OK;
}

/* "0-3,8,10-11" -> count of members; -1 if malformed. Calls add(ctx, v) for each. */
static int parse_list(const char *s, int maxv, int (*add)(void *, int), void *ctx) {
    int n = 0;
    const char *p = s;
    if (!*p) return -1;
    while (*p) {
        char *e;
        if (!isdigit((unsigned char)*p)) return -1;
        long a = strtol(p, &e, 10), b = a;
        p = e;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p)) return -1;
            b = strtol(p, &e, 10);
            p = e;
        }
        if (b < a || b > maxv) return -1;
        for (long v = a; v <= b; v++) {
            if (add && add(ctx, (int)v)) return -1;
            n++;
        }
        if (*p == ',') {
            p++;
            if (!*p) return -1;
        } else if (*p) {
            return -1;
        }
    }
    return n;
}

/* Writes a sorted int array as a compact list "0-3,8". */
static void format_list(const int *v, int n, char *out, size_t len) {
    size_t off = 0;
    out[0] = 0;
    for (int i = 0; i < n && off < len; i++) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1) j++;
        int k = j > i ? snprintf(out + off, len - off, "%s%d-%d", i ? "," : "", v[i], v[j])
                      : snprintf(out + off, len - off, "%s%d", i ? "," : "", v[i]);
        if (k < 0) break;
        off += (size_t)k;
        i = j;
    }
}

/* ====================================================================== detection */

static int read_line_file(const char *path, char *buf, size_t n) {
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    if (!fgets(buf, (int)n, f)) buf[0] = 0;
    fclose(f);
    size_t l = strlen(buf);
    while (l > 0 && isspace((unsigned char)buf[l - 1])) buf[--l] = 0;
    return 0;
}

static void detect_cpu_model(char *out, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "re");
    char line[512];
    out[0] = 0;
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5)) continue;
        char *c = strchr(line, ':');
        if (!c) continue;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        size_t l = strlen(c);
        while (l > 0 && isspace((unsigned char)c[l - 1])) c[--l] = 0;
        snprintf(out, n, "%s", c);
        break;
    }
    fclose(f);
}

static int cmp_numa(const void *a, const void *b) {
    return ((const tlink_topo_numa *)a)->id - ((const tlink_topo_numa *)b)->id;
}

static void detect_numa(tlink_topo_host *h) {
    DIR *d = opendir("/sys/devices/system/node");
    struct dirent *e;
    int cap = 0;
    while (d && (e = readdir(d))) {
        int id;
        char tail;
        if (sscanf(e->d_name, "node%d%c", &id, &tail) != 1) continue;
        if (h->nnuma_detail == cap) {
            cap = cap ? cap * 2 : 4;
            tlink_topo_numa *nn = realloc(h->numa, (size_t)cap * sizeof *nn);
            if (!nn) break;
            h->numa = nn;
        }
        tlink_topo_numa *n = &h->numa[h->nnuma_detail++];
        memset(n, 0, sizeof *n);
        n->id = id;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/sys/devices/system/node/%s/cpulist", e->d_name);
        if (read_line_file(path, buf, sizeof buf) == 0) {
            snprintf(n->cpus, sizeof n->cpus, "%.255s", buf);
            int c = parse_list(buf, 1 << 20, NULL, NULL);
            n->ncpus = c > 0 ? c : 0;
        }
        snprintf(path, sizeof path, "/sys/devices/system/node/%s/meminfo", e->d_name);
        FILE *f = fopen(path, "re");
        if (f) {
            char line[256];
            long long kb;
            while (fgets(line, sizeof line, f)) {
                char *m = strstr(line, "MemTotal:");
                if (m && sscanf(m + 9, "%lld", &kb) == 1) { n->mem_mb = kb / 1024; break; }
            }
            fclose(f);
        }
    }
    if (d) closedir(d);
    if (h->nnuma_detail == 0) {
        /* no sysfs NUMA information (containers, non-NUMA kernels): one node, every CPU */
        h->numa = calloc(1, sizeof *h->numa);
        if (h->numa) {
            long n = sysconf(_SC_NPROCESSORS_ONLN);
            h->nnuma_detail = 1;
            h->numa[0].ncpus = n > 0 ? (int)n : 1;
            snprintf(h->numa[0].cpus, sizeof h->numa[0].cpus, "0-%d", h->numa[0].ncpus - 1);
            long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
            if (pages > 0 && psz > 0) h->numa[0].mem_mb = (long long)pages * psz / (1024 * 1024);
        }
    }
    if (h->nnuma_detail > 1) qsort(h->numa, (size_t)h->nnuma_detail, sizeof *h->numa, cmp_numa);
    h->nnuma = h->nnuma_detail;
}

/* The CUDA driver API, opened at run time by src/base's loader: no GPU toolkit is needed to build or run. */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_name_fn)(char *, int, int);
typedef int (*cu_pci_fn)(char *, int, int);
typedef int (*cu_mem_fn)(size_t *, int);
typedef int (*cu_p2p_fn)(int *, int, int, int);

static void detect_gpus(tlink_topo_host *h) {
    const char *lib = tb_knob_str(TB_K_TLINK_CUDA_LIBRARY);
    char why[256];
    void *dl = tb_dl_open(TB_DL_CUDA, lib, why, sizeof why);
    if (!dl) {
        tl_log(TL_LOG_DEBUG, "topology: %s: no GPUs", why);
        return;
    }
    cu_init_fn cu_init;
    cu_count_fn cu_count;
    cu_get_fn cu_get;
    cu_name_fn cu_name;
    cu_pci_fn cu_pci;
    cu_mem_fn cu_mem;
    cu_p2p_fn cu_p2p;
    const tb_dl_sym syms[] = {
        {(void **)&cu_init, "cuInit", NULL, true},           {(void **)&cu_count, "cuDeviceGetCount", NULL, true},
        {(void **)&cu_get, "cuDeviceGet", NULL, true},        {(void **)&cu_name, "cuDeviceGetName", NULL, true},
        {(void **)&cu_pci, "cuDeviceGetPCIBusId", NULL, true}, {(void **)&cu_mem, "cuDeviceTotalMem_v2", NULL, true},
        {(void **)&cu_p2p, "cuDeviceGetP2PAttribute", NULL, true},
    };
    tb_dl_syms(dl, TB_DL_CUDA, syms, (int)(sizeof syms / sizeof syms[0]), NULL, 0);
    int n = 0, rc;
    if (!cu_init || !cu_count || !cu_get) {
        tl_log(TL_LOG_WARN, "topology: %s lacks cuInit/cuDeviceGetCount/cuDeviceGet; ignoring it",
               lib ? lib : "libcuda.so.1");
        goto done;
    }
    if ((rc = cu_init(0)) != 0) {
        tl_log(TL_LOG_DEBUG, "topology: cuInit failed (CUDA error %d): no GPUs", rc);
        goto done;
    }
    if (cu_count(&n) != 0 || n <= 0) goto done;
    h->gpus = calloc((size_t)n, sizeof *h->gpus);
    if (!h->gpus) goto done;
    int *dev = calloc((size_t)n, sizeof *dev);
    if (!dev) goto done;
    for (int i = 0; i < n; i++) {
        tlink_topo_gpu *g = &h->gpus[i];
        g->index = i;
        g->numa = -1;
        if (cu_get(&dev[i], i) != 0) { snprintf(g->name, sizeof g->name, "unavailable"); continue; }
        if (cu_name && cu_name(g->name, (int)sizeof g->name, dev[i]) != 0) g->name[0] = 0;
        if (cu_pci && cu_pci(g->pci, (int)sizeof g->pci, dev[i]) == 0) {
            char path[128], buf[32], lower[32];
            size_t k = 0;
            for (; g->pci[k] && k < sizeof lower - 1; k++) lower[k] = (char)tolower((unsigned char)g->pci[k]);
            lower[k] = 0;
            snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", lower);
            if (read_line_file(path, buf, sizeof buf) == 0) g->numa = atoi(buf) >= 0 ? atoi(buf) : -1;
        } else {
            g->pci[0] = 0;
        }
        size_t bytes = 0;
        if (cu_mem && cu_mem(&bytes, dev[i]) == 0) g->mem_mb = (long long)(bytes >> 20);
    }
    h->ngpus = h->ngpu_detail = n;
    if (cu_p2p && n > 1) {
        h->gpulinks = calloc((size_t)n * (size_t)(n - 1), sizeof *h->gpulinks);
        for (int a = 0; h->gpulinks && a < n; a++)
            for (int b = 0; b < n; b++) {
                if (a == b) continue;
                tlink_topo_gpulink *l = &h->gpulinks[h->ngpulinks++];
                l->a = a;
                l->b = b;
                /* CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK = 1, ACCESS_SUPPORTED = 2,
                 * NATIVE_ATOMIC_SUPPORTED = 3 */
                if (cu_p2p(&l->perf_rank, 1, dev[a], dev[b]) != 0) l->perf_rank = -1;
                if (cu_p2p(&l->access, 2, dev[a], dev[b]) != 0) l->access = 0;
                if (cu_p2p(&l->atomics, 3, dev[a], dev[b]) != 0) l->atomics = 0;
            }
    }
    free(dev);
done:
    if (lib) dlclose(dl); /* the default driver's handle is the process's (src/base), never closed */
}

static tlink_status detect_host(tlink_topo_host *h) {
    snprintf(h->name, sizeof h->name, "%s", tl_hostname());
    tlink_host_identity(h->id, sizeof h->id);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) h->ncores = CPU_COUNT(&set);
    if (h->ncores <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        h->ncores = n > 0 ? (int)n : 1;
    }
    detect_cpu_model(h->cpu_model, sizeof h->cpu_model);
    detect_numa(h);
    detect_gpus(h);
    return TLINK_OK;
}

tlink_status tlink_topo_detect(tlink_topo **out) {
    if (!out) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    tlink_topo *t = topo_new();
    if (!t || !add_host(t, "")) { tlink_topo_free(t); return TLINK_ERR_NO_MEMORY; }
    tlink_topo_host *h = &t->hosts[0];
    detect_host(h);
    tlink_env_info e;
    tlink_env_parse(&e);
    int n = e.local_size > 0 ? e.local_size : 1;
    for (int r = 0; r < n; r++)
        if (host_add_rank(h, r)) { tlink_topo_free(t); return TLINK_ERR_NO_MEMORY; }
    t->nranks = n;
    snprintf(t->source, sizeof t->source, "detected");
    *out = t;
    return TLINK_OK;
}

/* What each rank contributes to tlink_topo_gather (fixed size, plain bytes). */
typedef struct gather_rec {
    char id[128];
    char name[64];
    char cpu_model[96];
    int32_t ncores, nnuma, ngpus, pad;
} gather_rec;

tlink_status tlink_topo_gather(tlink_comm *comm, tlink_topo **out) {
    if (!comm || !out) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    int n = tlink_comm_size(comm);
    tlink_topo_host me;
    memset(&me, 0, sizeof me);
    detect_host(&me);
    gather_rec mine;
    memset(&mine, 0, sizeof mine);
    snprintf(mine.id, sizeof mine.id, "%s", me.id);
    snprintf(mine.name, sizeof mine.name, "%s", me.name);
    snprintf(mine.cpu_model, sizeof mine.cpu_model, "%s", me.cpu_model);
    mine.ncores = me.ncores;
    mine.nnuma = me.nnuma;
    mine.ngpus = me.ngpus;
    gather_rec *all = calloc((size_t)n, sizeof *all);
    tlink_topo *t = topo_new();
    tlink_status st = TLINK_OK;
    if (!all || !t) { st = TLINK_ERR_NO_MEMORY; goto out; }
    st = tlink_allgather(comm, &mine, all, sizeof mine, TLINK_U8);
    if (st) goto out;
    t->nranks = n;
    for (int r = 0; r < n; r++) {
        int hi = -1;
        for (int i = 0; i < t->nhosts && hi < 0; i++)
            if (!strcmp(t->hosts[i].id, all[r].id)) hi = i;
        if (hi < 0) {
            all[r].name[sizeof all[r].name - 1] = 0;
            /* two hosts with one name (netns test hosts): keep names unique */
            char name[64];
            snprintf(name, sizeof name, "%s", all[r].name);
            for (int k = 2; find_host(t, name) >= 0; k++) snprintf(name, sizeof name, "%.50s#%d", all[r].name, k);
            tlink_topo_host *h = add_host(t, name);
            if (!h) { st = TLINK_ERR_NO_MEMORY; goto out; }
            memcpy(h->id, all[r].id, sizeof h->id - 1);
            memcpy(h->cpu_model, all[r].cpu_model, sizeof h->cpu_model - 1);
            h->ncores = all[r].ncores;
            h->nnuma = all[r].nnuma;
            h->ngpus = all[r].ngpus;
            hi = t->nhosts - 1;
        }
        if (host_add_rank(&t->hosts[hi], r)) { st = TLINK_ERR_NO_MEMORY; goto out; }
    }
    for (int tr = TLINK_TRANSPORT_SHM; tr < TLINK_TRANSPORT_COUNT; tr++)
        tlink_comm_get_cost(comm, (tlink_transport)tr, &t->alpha_s[tr], &t->beta_s[tr]);
    t->gamma_s = comm->gamma;
    snprintf(t->source, sizeof t->source, "gathered");
out:
    free(me.numa);
    free(me.gpus);
    free(me.gpulinks);
    free(all);
    if (st) tlink_topo_free(t);
    else *out = t;
    return st;
}

tlink_status tlink_topo_synthetic(int nhosts, int rph, int numa, int gpus, tlink_topo **out) {
    if (!out) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    if (nhosts < 1 || rph < 1 || numa < 0 || gpus < 0 || (long long)nhosts * rph > (1 << 24) || numa > 1024 ||
        gpus > 1024)
        return TLINK_ERR_INVALID_ARG;
    tlink_topo *t = topo_new();
    if (!t) return TLINK_ERR_NO_MEMORY;
    t->nranks = nhosts * rph;
    snprintf(t->source, sizeof t->source, "synthetic");
    for (int i = 0; i < nhosts; i++) {
        char name[32];
        snprintf(name, sizeof name, "node%03d", i);
        tlink_topo_host *h = add_host(t, name);
        if (!h) goto oom;
        h->ncores = rph;
        h->nnuma = numa;
        h->ngpus = gpus;
        for (int r = 0; r < rph; r++)
            if (host_add_rank(h, i * rph + r)) goto oom;
    }
    *out = t;
    return TLINK_OK;
oom:
    tlink_topo_free(t);
    return TLINK_ERR_NO_MEMORY;
}

/* ====================================================================== validation */

tlink_status tlink_topo_validate(const tlink_topo *t, char *err, size_t errlen) {
    if (!t) { seterr(err, errlen, "no topology"); return TLINK_ERR_INVALID_ARG; }
    if (t->nhosts < 1) { seterr(err, errlen, "the topology has no host"); return TLINK_ERR_INVALID_ARG; }
    if (t->nranks < 1) { seterr(err, errlen, "the topology has no rank"); return TLINK_ERR_INVALID_ARG; }
    int *owner = malloc((size_t)t->nranks * sizeof *owner);
    if (!owner) return TLINK_ERR_NO_MEMORY;
    for (int r = 0; r < t->nranks; r++) owner[r] = -1;
    tlink_status st = TLINK_ERR_INVALID_ARG;
    for (int i = 0; i < t->nhosts; i++) {
        const tlink_topo_host *h = &t->hosts[i];
        if (!h->name[0]) { seterr(err, errlen, "host %d has no name", i); goto out; }
        for (int j = 0; j < i; j++)
            if (!strcmp(t->hosts[j].name, h->name)) { seterr(err, errlen, "host '%s' is declared twice", h->name); goto out; }
        if (h->nranks < 1) { seterr(err, errlen, "host '%s' has no rank", h->name); goto out; }
        if (h->ncores < 0 || h->nnuma < 0 || h->ngpus < 0) { seterr(err, errlen, "host '%s': negative count", h->name); goto out; }
        if (h->nnuma_detail > h->nnuma || h->ngpu_detail > h->ngpus) {
            seterr(err, errlen, "host '%s': %d NUMA node(s) and %d GPU(s) described but it declares numa %d gpus %d",
                   h->name, h->nnuma_detail, h->ngpu_detail, h->nnuma, h->ngpus);
            goto out;
        }
        for (int k = 0; k < h->nranks; k++) {
            int r = h->ranks[k];
            if (r < 0 || r >= t->nranks) {
                seterr(err, errlen, "host '%s': rank %d is outside 0..%d", h->name, r, t->nranks - 1);
                goto out;
            }
            if (owner[r] >= 0) {
                seterr(err, errlen, "rank %d is on host '%s' and on host '%s'", r, t->hosts[owner[r]].name, h->name);
                goto out;
            }
            owner[r] = i;
        }
        for (int k = 0; k < h->ngpulinks; k++) {
            const tlink_topo_gpulink *l = &h->gpulinks[k];
            if (l->a == l->b || l->a < 0 || l->b < 0 || l->a >= h->ngpus || l->b >= h->ngpus) {
                seterr(err, errlen, "host '%s': GPU link %d-%d needs two different GPUs in 0..%d", h->name, l->a,
                       l->b, h->ngpus - 1);
                goto out;
            }
        }
    }
    for (int r = 0; r < t->nranks; r++)
        if (owner[r] < 0) { seterr(err, errlen, "rank %d of %d is on no host", r, t->nranks); goto out; }
    for (int i = 0; i < t->nlinks; i++) {
        const tlink_topo_link *l = &t->links[i];
        if (l->a < 0 || l->b < 0 || l->a >= t->nhosts || l->b >= t->nhosts || l->a == l->b) {
            seterr(err, errlen, "link %d must join two different hosts", i);
            goto out;
        }
        if (!(l->alpha_s >= 0) || !(l->beta_s > 0)) {
            seterr(err, errlen, "link %s-%s: alpha must be >= 0 and bandwidth > 0", t->hosts[l->a].name,
                   t->hosts[l->b].name);
            goto out;
        }
    }
    for (int tr = TLINK_TRANSPORT_SHM; tr < TLINK_TRANSPORT_COUNT; tr++)
        if (!(t->alpha_s[tr] >= 0) || !(t->beta_s[tr] > 0)) {
            seterr(err, errlen, "cost of transport %d: alpha must be >= 0 and bandwidth > 0", tr);
            goto out;
        }
    if (!(t->gamma_s > 0)) { seterr(err, errlen, "the reduction bandwidth must be > 0"); goto out; }
    st = TLINK_OK;
out:
    free(owner);
    return st;
}

/* ====================================================================== writer */

static const char *const tr_names[TLINK_TRANSPORT_COUNT] = {"self", "shm", "tcp"};

static void put_quoted(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc((unsigned char)*s < ' ' ? ' ' : *s, f);
    }
    fputc('"', f);
}

/* is s a bare word in the file format (no quoting needed)? */
static int bare(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (isspace((unsigned char)*s) || *s == '"' || *s == '#' || *s == '=' || (unsigned char)*s < ' ') return 0;
    return 1;
}

static void put_word(FILE *f, const char *s) {
    if (bare(s)) fputs(s, f);
    else put_quoted(f, s);
}

tlink_status tlink_topo_write(const tlink_topo *t, FILE *f) {
    if (!t || !f) return TLINK_ERR_INVALID_ARG;
    fprintf(f, "# TileLink topology (format: docs/tilelink-topology.md)\n");
    fprintf(f, "topology %d\n", TLINK_TOPO_VERSION);
    fprintf(f, "ranks %d\n", t->nranks);
    for (int tr = TLINK_TRANSPORT_SHM; tr < TLINK_TRANSPORT_COUNT; tr++)
        fprintf(f, "cost %s alpha_us=%.6g beta_gbps=%.6g\n", tr_names[tr], t->alpha_s[tr] * 1e6, 1e-9 / t->beta_s[tr]);
    fprintf(f, "reduce gbps=%.6g\n", 1e-9 / t->gamma_s);
    for (int i = 0; i < t->nhosts; i++) {
        const tlink_topo_host *h = &t->hosts[i];
        int *sorted = malloc((size_t)h->nranks * sizeof *sorted);
        size_t cap = (size_t)h->nranks * 12 + 16;
        char *list = malloc(cap);
        if (!sorted || !list) { free(sorted); free(list); return TLINK_ERR_NO_MEMORY; }
        memcpy(sorted, h->ranks, (size_t)h->nranks * sizeof *sorted);
        for (int a = 1; a < h->nranks; a++) /* insertion sort: lists are short and mostly sorted */
            for (int b = a; b > 0 && sorted[b - 1] > sorted[b]; b--) { int x = sorted[b]; sorted[b] = sorted[b - 1]; sorted[b - 1] = x; }
        format_list(sorted, h->nranks, list, cap);
        fputs("host ", f);
        put_word(f, h->name);
        fprintf(f, " ranks %s cores %d numa %d gpus %d", list, h->ncores, h->nnuma, h->ngpus);
        if (h->id[0]) { fputs(" id ", f); put_word(f, h->id); }
        if (h->cpu_model[0]) { fputs(" cpu ", f); put_quoted(f, h->cpu_model); }
        fputc('\n', f);
        free(sorted);
        free(list);
        for (int k = 0; k < h->nnuma_detail; k++) {
            const tlink_topo_numa *n = &h->numa[k];
            fputs("numa ", f);
            put_word(f, h->name);
            fprintf(f, " %d cpus %s mem_mb %lld\n", n->id, n->cpus[0] ? n->cpus : "-", n->mem_mb);
        }
        for (int k = 0; k < h->ngpu_detail; k++) {
            const tlink_topo_gpu *g = &h->gpus[k];
            fputs("gpu ", f);
            put_word(f, h->name);
            fprintf(f, " %d pci %s numa %d mem_mb %lld name ", g->index, g->pci[0] ? g->pci : "-", g->numa, g->mem_mb);
            put_quoted(f, g->name);
            fputc('\n', f);
        }
        for (int k = 0; k < h->ngpulinks; k++) {
            const tlink_topo_gpulink *l = &h->gpulinks[k];
            fputs("gpulink ", f);
            put_word(f, h->name);
            fprintf(f, " %d %d access %d perf %d atomics %d\n", l->a, l->b, l->access, l->perf_rank, l->atomics);
        }
    }
    for (int i = 0; i < t->nlinks; i++) {
        const tlink_topo_link *l = &t->links[i];
        fputs("link ", f);
        put_word(f, t->hosts[l->a].name);
        fputc(' ', f);
        put_word(f, t->hosts[l->b].name);
        fprintf(f, " %s alpha_us=%.6g beta_gbps=%.6g\n", tr_names[l->transport], l->alpha_s * 1e6, 1e-9 / l->beta_s);
    }
    return ferror(f) ? TLINK_ERR_SYSTEM : TLINK_OK;
}

tlink_status tlink_topo_save(const tlink_topo *t, const char *path, char *err, size_t errlen) {
    if (!t || !path) return TLINK_ERR_INVALID_ARG;
    FILE *f = fopen(path, "we");
    if (!f) { seterr(err, errlen, "%s: cannot write: %s", path, strerror(errno)); return TLINK_ERR_SYSTEM; }
    tlink_status st = tlink_topo_write(t, f);
    if (fclose(f) != 0 && !st) st = TLINK_ERR_SYSTEM;
    if (st) seterr(err, errlen, "%s: write failed: %s", path, strerror(errno));
    return st;
}

/* ====================================================================== reader */

#define MAX_TOK 64

typedef struct parser {
    const char *file;
    int line;
    char *err;
    size_t errlen;
    tlink_topo *t;
    int have_version;
    int declared_ranks;   /* from "ranks N", -1 if absent */
    int ranks_line;
    int *owner;           /* [owner_cap] host index + 1 of each rank seen so far, 0: none */
    int owner_cap;
} parser;

static tlink_status perr(parser *p, const char *fmt, ...) TL_PRINTF(2, 3);
static tlink_status perr(parser *p, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->line > 0) seterr(p->err, p->errlen, "%s:%d: error: %s", p->file, p->line, msg);
    else seterr(p->err, p->errlen, "%s: error: %s", p->file, msg);
    return TLINK_ERR_INVALID_ARG;
}

/* Splits one line (modified in place) into tokens; "k=v" gives two tokens; quoted strings
 * keep their spaces. Returns the count, or -1 with an error set. */
static int tokenize(parser *p, char *s, char **tok) {
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\r') s++;
        if (!*s || *s == '#') break;
        if (n >= MAX_TOK - 1) { perr(p, "too many words on one line"); return -1; }
        if (*s == '"') {
            char *w = ++s, *o = s;
            while (*s && *s != '"') {
                if (*s == '\\' && s[1]) s++;
                *o++ = *s++;
            }
            if (*s != '"') { perr(p, "unterminated string"); return -1; }
            s++;
            *o = 0;
            tok[n++] = w;
            if (*s && *s != ' ' && *s != '\t' && *s != '\r') { perr(p, "expected a space after a string"); return -1; }
            continue;
        }
        tok[n++] = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '=' && *s != '"' && *s != '#') s++;
        if (*s == '=') {
            *s++ = 0;
            if (!*s || *s == ' ' || *s == '\t') { perr(p, "'%s=' needs a value", tok[n - 1]); return -1; }
            continue; /* the value is the next token */
        }
        if (*s == '"') { perr(p, "unexpected '\"' in '%s'", tok[n - 1]); return -1; }
        if (*s == '#') { *s = 0; break; }
        if (*s) *s++ = 0;
    }
    tok[n] = NULL;
    return n;
}

static int get_int(parser *p, const char *what, const char *s, long lo, long hi, long *out) {
    char *e;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > hi) {
        perr(p, "%s: expected an integer in %ld..%ld, got '%s'", what, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int get_pos(parser *p, const char *what, const char *s, double *out) {
    char *e;
    double v = strtod(s, &e);
    if (e == s || *e || !(v > 0) || v > 1e12) {
        perr(p, "%s: expected a positive number, got '%s'", what, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int get_nonneg(parser *p, const char *what, const char *s, double *out) {
    char *e;
    double v = strtod(s, &e);
    if (e == s || *e || !(v >= 0) || v > 1e12) {
        perr(p, "%s: expected a number >= 0, got '%s'", what, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int host_ref(parser *p, const char *name) {
    int h = find_host(p->t, name);
    if (h < 0) perr(p, "unknown host '%s' (declare it with a 'host' line first)", name);
    return h;
}

static int transport_of(parser *p, const char *s) {
    for (int tr = TLINK_TRANSPORT_SHM; tr < TLINK_TRANSPORT_COUNT; tr++)
        if (!strcmp(s, tr_names[tr])) return tr;
    perr(p, "unknown transport '%s' (expected shm or tcp)", s);
    return -1;
}

/* alpha_us / beta_gbps pairs starting at tok[i]; both required */
static int parse_ab(parser *p, char **tok, int i, int n, double *alpha_s, double *beta_s) {
    int have_a = 0, have_b = 0;
    for (; i < n; i += 2) {
        if (i + 1 >= n) { perr(p, "'%s' needs a value", tok[i]); return -1; }
        double v;
        if (!strcmp(tok[i], "alpha_us")) {
            if (get_nonneg(p, "alpha_us", tok[i + 1], &v)) return -1;
            *alpha_s = v * 1e-6;
            have_a = 1;
        } else if (!strcmp(tok[i], "beta_gbps")) {
            if (get_pos(p, "beta_gbps", tok[i + 1], &v)) return -1;
            *beta_s = 1e-9 / v;
            have_b = 1;
        } else {
            perr(p, "unknown attribute '%s' (expected alpha_us or beta_gbps)", tok[i]);
            return -1;
        }
    }
    if (!have_a || !have_b) { perr(p, "needs both alpha_us=... and beta_gbps=..."); return -1; }
    return 0;
}

static int add_rank_cb(void *ctx, int r) { return host_add_rank(ctx, r); }

static tlink_status parse_line(parser *p, char **tok, int n) {
    tlink_topo *t = p->t;
    const char *d = tok[0];
    long v;
    if (!p->have_version && strcmp(d, "topology"))
        return perr(p, "the file must start with 'topology %d'", TLINK_TOPO_VERSION);
    if (!strcmp(d, "topology")) {
        if (p->have_version) return perr(p, "'topology' given twice");
        if (n != 2) return perr(p, "expected 'topology %d'", TLINK_TOPO_VERSION);
        if (get_int(p, "topology version", tok[1], 0, 1000000, &v)) return TLINK_ERR_INVALID_ARG;
        if (v != TLINK_TOPO_VERSION)
            return perr(p, "topology version %ld is not supported (this library reads version %d)", v, TLINK_TOPO_VERSION);
        p->have_version = 1;
        return TLINK_OK;
    }
    if (!strcmp(d, "ranks")) {
        if (n != 2) return perr(p, "expected 'ranks N'");
        if (p->declared_ranks >= 0) return perr(p, "'ranks' given twice");
        if (get_int(p, "ranks", tok[1], 1, 1 << 24, &v)) return TLINK_ERR_INVALID_ARG;
        p->declared_ranks = (int)v;
        p->ranks_line = p->line;
        return TLINK_OK;
    }
    if (!strcmp(d, "cost")) {
        if (n < 2) return perr(p, "expected 'cost shm|tcp alpha_us=A beta_gbps=B'");
        int tr = transport_of(p, tok[1]);
        if (tr < 0 || parse_ab(p, tok, 2, n, &t->alpha_s[tr], &t->beta_s[tr])) return TLINK_ERR_INVALID_ARG;
        return TLINK_OK;
    }
    if (!strcmp(d, "reduce")) {
        double g;
        if (n != 3 || strcmp(tok[1], "gbps")) return perr(p, "expected 'reduce gbps=G'");
        if (get_pos(p, "reduce gbps", tok[2], &g)) return TLINK_ERR_INVALID_ARG;
        t->gamma_s = 1e-9 / g;
        return TLINK_OK;
    }
    if (!strcmp(d, "host")) {
        if (n < 2) return perr(p, "expected 'host NAME ranks LIST [cores N] [numa N] [gpus N] [id ID] [cpu MODEL]'");
        if (strlen(tok[1]) >= sizeof t->hosts[0].name) return perr(p, "host name '%s' is too long", tok[1]);
        if (find_host(t, tok[1]) >= 0) return perr(p, "host '%s' is declared twice", tok[1]);
        tlink_topo_host *h = add_host(t, tok[1]);
        if (!h) return perr(p, "out of memory");
        int have_ranks = 0;
        for (int i = 2; i < n; i += 2) {
            const char *k = tok[i];
            if (i + 1 >= n) return perr(p, "'%s' needs a value", k);
            const char *val = tok[i + 1];
            if (!strcmp(k, "ranks")) {
                if (have_ranks) return perr(p, "'ranks' given twice");
                if (parse_list(val, (1 << 24) - 1, add_rank_cb, h) < 0)
                    return perr(p, "ranks: expected a list like 0-3,8,10-11, got '%s'", val);
                have_ranks = 1;
            } else if (!strcmp(k, "cores")) {
                if (get_int(p, "cores", val, 0, 1 << 20, &v)) return TLINK_ERR_INVALID_ARG;
                h->ncores = (int)v;
            } else if (!strcmp(k, "numa")) {
                if (get_int(p, "numa", val, 0, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
                h->nnuma = (int)v;
            } else if (!strcmp(k, "gpus")) {
                if (get_int(p, "gpus", val, 0, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
                h->ngpus = (int)v;
            } else if (!strcmp(k, "id")) {
                snprintf(h->id, sizeof h->id, "%s", val);
            } else if (!strcmp(k, "cpu")) {
                snprintf(h->cpu_model, sizeof h->cpu_model, "%s", val);
            } else {
                return perr(p, "unknown host attribute '%s' (expected ranks, cores, numa, gpus, id, cpu)", k);
            }
        }
        if (!have_ranks) return perr(p, "host '%s' needs 'ranks LIST'", tok[1]);
        /* report overlaps and out-of-range ranks at this line */
        for (int k = 0; k < h->nranks; k++) {
            int r = h->ranks[k];
            if (p->declared_ranks >= 0 && r >= p->declared_ranks)
                return perr(p, "host '%s': rank %d is outside 0..%d (ranks %d)", h->name, r, p->declared_ranks - 1,
                            p->declared_ranks);
            if (r >= p->owner_cap) {
                int ncap = p->owner_cap ? p->owner_cap : 64;
                while (ncap <= r) ncap *= 2;
                int *no = realloc(p->owner, (size_t)ncap * sizeof *no);
                if (!no) return perr(p, "out of memory");
                memset(no + p->owner_cap, 0, (size_t)(ncap - p->owner_cap) * sizeof *no);
                p->owner = no;
                p->owner_cap = ncap;
            }
            int hi = t->nhosts; /* this host's index + 1 */
            if (p->owner[r] == hi) return perr(p, "host '%s': rank %d is listed twice", h->name, r);
            if (p->owner[r]) return perr(p, "rank %d is on host '%s' and on host '%s'", r, t->hosts[p->owner[r] - 1].name, h->name);
            p->owner[r] = hi;
        }
        return TLINK_OK;
    }
    if (!strcmp(d, "numa")) {
        if (n < 3) return perr(p, "expected 'numa HOST ID cpus LIST [mem_mb M]'");
        int hi = host_ref(p, tok[1]);
        if (hi < 0) return TLINK_ERR_INVALID_ARG;
        tlink_topo_host *h = &t->hosts[hi];
        if (get_int(p, "numa node id", tok[2], 0, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
        for (int k = 0; k < h->nnuma_detail; k++)
            if (h->numa[k].id == v) return perr(p, "host '%s': NUMA node %ld described twice", h->name, v);
        if (h->nnuma_detail >= h->nnuma)
            return perr(p, "host '%s' declares numa %d: no room for another NUMA node", h->name, h->nnuma);
        tlink_topo_numa *nn = realloc(h->numa, (size_t)(h->nnuma_detail + 1) * sizeof *nn);
        if (!nn) return perr(p, "out of memory");
        h->numa = nn;
        tlink_topo_numa *x = &h->numa[h->nnuma_detail++];
        memset(x, 0, sizeof *x);
        x->id = (int)v;
        for (int i = 3; i < n; i += 2) {
            if (i + 1 >= n) return perr(p, "'%s' needs a value", tok[i]);
            if (!strcmp(tok[i], "cpus")) {
                if (strcmp(tok[i + 1], "-")) {
                    int c = parse_list(tok[i + 1], 1 << 20, NULL, NULL);
                    if (c < 0 || strlen(tok[i + 1]) >= sizeof x->cpus)
                        return perr(p, "cpus: expected a list like 0-7,16-23, got '%s'", tok[i + 1]);
                    snprintf(x->cpus, sizeof x->cpus, "%s", tok[i + 1]);
                    x->ncpus = c;
                }
            } else if (!strcmp(tok[i], "mem_mb")) {
                if (get_int(p, "mem_mb", tok[i + 1], 0, 1L << 40, &v)) return TLINK_ERR_INVALID_ARG;
                x->mem_mb = v;
            } else {
                return perr(p, "unknown numa attribute '%s' (expected cpus, mem_mb)", tok[i]);
            }
        }
        return TLINK_OK;
    }
    if (!strcmp(d, "gpu")) {
        if (n < 3) return perr(p, "expected 'gpu HOST INDEX [pci BUSID] [numa N] [mem_mb M] [name \"...\"]'");
        int hi = host_ref(p, tok[1]);
        if (hi < 0) return TLINK_ERR_INVALID_ARG;
        tlink_topo_host *h = &t->hosts[hi];
        if (get_int(p, "gpu index", tok[2], 0, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
        if (v != h->ngpu_detail)
            return perr(p, "host '%s': GPUs must be listed in order: expected gpu %d, got %ld", h->name, h->ngpu_detail, v);
        if (h->ngpu_detail >= h->ngpus) return perr(p, "host '%s' declares gpus %d: no room for gpu %ld", h->name, h->ngpus, v);
        tlink_topo_gpu *ng = realloc(h->gpus, (size_t)(h->ngpu_detail + 1) * sizeof *ng);
        if (!ng) return perr(p, "out of memory");
        h->gpus = ng;
        tlink_topo_gpu *g = &h->gpus[h->ngpu_detail++];
        memset(g, 0, sizeof *g);
        g->index = (int)v;
        g->numa = -1;
        for (int i = 3; i < n; i += 2) {
            if (i + 1 >= n) return perr(p, "'%s' needs a value", tok[i]);
            const char *k = tok[i], *val = tok[i + 1];
            if (!strcmp(k, "pci")) {
                if (strcmp(val, "-")) snprintf(g->pci, sizeof g->pci, "%s", val);
            } else if (!strcmp(k, "numa")) {
                if (get_int(p, "numa", val, -1, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
                g->numa = (int)v;
            } else if (!strcmp(k, "mem_mb")) {
                if (get_int(p, "mem_mb", val, 0, 1L << 40, &v)) return TLINK_ERR_INVALID_ARG;
                g->mem_mb = v;
            } else if (!strcmp(k, "name")) {
                snprintf(g->name, sizeof g->name, "%s", val);
            } else {
                return perr(p, "unknown gpu attribute '%s' (expected pci, numa, mem_mb, name)", k);
            }
        }
        return TLINK_OK;
    }
    if (!strcmp(d, "gpulink")) {
        if (n < 4) return perr(p, "expected 'gpulink HOST A B [access 0|1] [perf N] [atomics 0|1]'");
        int hi = host_ref(p, tok[1]);
        if (hi < 0) return TLINK_ERR_INVALID_ARG;
        tlink_topo_host *h = &t->hosts[hi];
        long a, b;
        if (get_int(p, "gpu", tok[2], 0, h->ngpus - 1, &a) || get_int(p, "gpu", tok[3], 0, h->ngpus - 1, &b))
            return TLINK_ERR_INVALID_ARG;
        if (a == b) return perr(p, "a GPU link needs two different GPUs");
        tlink_topo_gpulink *nl = realloc(h->gpulinks, (size_t)(h->ngpulinks + 1) * sizeof *nl);
        if (!nl) return perr(p, "out of memory");
        h->gpulinks = nl;
        tlink_topo_gpulink *l = &h->gpulinks[h->ngpulinks++];
        memset(l, 0, sizeof *l);
        l->a = (int)a;
        l->b = (int)b;
        l->access = 1;
        for (int i = 4; i < n; i += 2) {
            if (i + 1 >= n) return perr(p, "'%s' needs a value", tok[i]);
            const char *k = tok[i], *val = tok[i + 1];
            if (!strcmp(k, "access")) {
                if (get_int(p, "access", val, 0, 1, &v)) return TLINK_ERR_INVALID_ARG;
                l->access = (int)v;
            } else if (!strcmp(k, "perf")) {
                if (get_int(p, "perf", val, -1, 1 << 16, &v)) return TLINK_ERR_INVALID_ARG;
                l->perf_rank = (int)v;
            } else if (!strcmp(k, "atomics")) {
                if (get_int(p, "atomics", val, 0, 1, &v)) return TLINK_ERR_INVALID_ARG;
                l->atomics = (int)v;
            } else {
                return perr(p, "unknown gpulink attribute '%s' (expected access, perf, atomics)", k);
            }
        }
        return TLINK_OK;
    }
    if (!strcmp(d, "link")) {
        if (n < 4) return perr(p, "expected 'link HOSTA HOSTB tcp alpha_us=A beta_gbps=B'");
        int a = host_ref(p, tok[1]);
        if (a < 0) return TLINK_ERR_INVALID_ARG;
        int b = host_ref(p, tok[2]);
        if (b < 0) return TLINK_ERR_INVALID_ARG;
        if (a == b) return perr(p, "a link joins two different hosts (inside a host, use 'cost shm ...')");
        int tr = transport_of(p, tok[3]);
        if (tr < 0) return TLINK_ERR_INVALID_ARG;
        tlink_topo_link l = {a, b, (tlink_transport)tr, 0, 0};
        if (parse_ab(p, tok, 4, n, &l.alpha_s, &l.beta_s)) return TLINK_ERR_INVALID_ARG;
        for (int i = 0; i < t->nlinks; i++)
            if ((t->links[i].a == a && t->links[i].b == b) || (t->links[i].a == b && t->links[i].b == a))
                return perr(p, "link %s-%s is given twice", tok[1], tok[2]);
        tlink_topo_link *nl = realloc(t->links, (size_t)(t->nlinks + 1) * sizeof *nl);
        if (!nl) return perr(p, "out of memory");
        t->links = nl;
        t->links[t->nlinks++] = l;
        return TLINK_OK;
    }
    return perr(p, "unknown directive '%s' (expected topology, ranks, cost, reduce, host, numa, gpu, gpulink, link)", d);
}

tlink_status tlink_topo_parse(const char *filename, const char *text, tlink_topo **out, char *err, size_t errlen) {
    if (!out || !text) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    parser p;
    memset(&p, 0, sizeof p);
    p.file = filename ? filename : "<topology>";
    p.err = err;
    p.errlen = errlen;
    p.declared_ranks = -1;
    p.t = topo_new();
    if (!p.t) return TLINK_ERR_NO_MEMORY;
    snprintf(p.t->source, sizeof p.t->source, "%s", p.file);
    tlink_status st = TLINK_OK;
    const char *s = text;
    char *line = NULL;
    size_t cap = 0;
    while (*s && !st) {
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        p.line++;
        if (len + 1 > cap) {
            cap = len + 1;
            char *nl = realloc(line, cap);
            if (!nl) { st = perr(&p, "out of memory"); break; }
            line = nl;
        }
        memcpy(line, s, len);
        line[len] = 0;
        char *tok[MAX_TOK];
        int n = tokenize(&p, line, tok);
        if (n < 0) st = TLINK_ERR_INVALID_ARG;
        else if (n > 0) st = parse_line(&p, tok, n);
        s += len + (e ? 1 : 0);
    }
    free(line);
    free(p.owner);
    if (!st && !p.have_version) {
        p.line = 0;
        st = perr(&p, "empty topology (the file must start with 'topology %d')", TLINK_TOPO_VERSION);
    }
    if (!st) {
        tlink_topo *t = p.t;
        int maxr = -1;
        for (int i = 0; i < t->nhosts; i++) {
            for (int k = 0; k < t->hosts[i].nranks; k++)
                if (t->hosts[i].ranks[k] > maxr) maxr = t->hosts[i].ranks[k];
        }
        t->nranks = p.declared_ranks >= 0 ? p.declared_ranks : maxr + 1;
        char msg[400];
        if (tlink_topo_validate(t, msg, sizeof msg)) {
            p.line = p.declared_ranks >= 0 ? p.ranks_line : 0;
            st = perr(&p, "%s", msg);
        }
    }
    if (st) tlink_topo_free(p.t);
    else *out = p.t;
    return st;
}

tlink_status tlink_topo_read(const char *path, tlink_topo **out, char *err, size_t errlen) {
    if (!path || !out) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    FILE *f = fopen(path, "re");
    if (!f) { seterr(err, errlen, "%s: error: cannot open: %s", path, strerror(errno)); return TLINK_ERR_SYSTEM; }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (cap - len < 2) {
            if (cap > ((size_t)1 << 30)) { free(buf); buf = NULL; break; }
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf || rerr) {
        free(buf);
        seterr(err, errlen, "%s: error: cannot read (too large or I/O error)", path);
        return TLINK_ERR_SYSTEM;
    }
    buf[len] = 0;
    if (strlen(buf) != len) {
        free(buf);
        seterr(err, errlen, "%s: error: not a text file (NUL byte)", path);
        return TLINK_ERR_INVALID_ARG;
    }
    tlink_status st = tlink_topo_parse(path, buf, out, err, errlen);
    free(buf);
    return st;
}

/* ====================================================================== printing */

void tlink_topo_print(const tlink_topo *t, FILE *f) {
    if (!t || !f) return;
    int ngpus = 0;
    for (int i = 0; i < t->nhosts; i++) ngpus += t->hosts[i].ngpus;
    fprintf(f, "topology (%s): %d host%s, %d rank%s, %d GPU%s\n", t->source, t->nhosts, t->nhosts == 1 ? "" : "s",
            t->nranks, t->nranks == 1 ? "" : "s", ngpus, ngpus == 1 ? "" : "s");
    int shown = 0;
    for (int i = 0; i < t->nhosts; i++) {
        const tlink_topo_host *h = &t->hosts[i];
        if (shown == 8 && t->nhosts > 10) {
            fprintf(f, "  ... %d more hosts\n", t->nhosts - 9);
            i = t->nhosts - 1;
            h = &t->hosts[i];
        }
        shown++;
        char list[128];
        format_list(h->ranks, h->nranks, list, sizeof list);
        if (strlen(list) >= sizeof list - 1) snprintf(list + sizeof list - 5, 5, "...");
        fprintf(f, "  host %s: ranks %s (%d), %d core%s, %d NUMA node%s, %d GPU%s\n", h->name, list, h->nranks,
                h->ncores, h->ncores == 1 ? "" : "s", h->nnuma, h->nnuma == 1 ? "" : "s", h->ngpus,
                h->ngpus == 1 ? "" : "s");
        if (h->id[0]) fprintf(f, "    identity %s\n", h->id);
        if (h->cpu_model[0]) fprintf(f, "    cpu %s\n", h->cpu_model);
        for (int k = 0; k < h->nnuma_detail; k++)
            fprintf(f, "    numa %d: cpus %s (%d), %lld MB\n", h->numa[k].id, h->numa[k].cpus[0] ? h->numa[k].cpus : "?",
                    h->numa[k].ncpus, h->numa[k].mem_mb);
        for (int k = 0; k < h->ngpu_detail; k++) {
            const tlink_topo_gpu *g = &h->gpus[k];
            fprintf(f, "    gpu %d: %s, pci %s, numa %d, %lld MB\n", g->index, g->name[0] ? g->name : "?",
                    g->pci[0] ? g->pci : "?", g->numa, g->mem_mb);
        }
        int nacc = 0;
        for (int k = 0; k < h->ngpulinks; k++) nacc += h->gpulinks[k].access;
        if (h->ngpulinks) fprintf(f, "    gpu peer access: %d of %d ordered pairs\n", nacc, h->ngpulinks);
        if (h->ngpus == 0 && !strcmp(t->source, "detected")) fprintf(f, "    (no CUDA driver or no GPU)\n");
    }
    fprintf(f, "  cost model: shm alpha %.2f us, %.2f GB/s; tcp alpha %.2f us, %.2f GB/s; reduce %.2f GB/s\n",
            t->alpha_s[TLINK_TRANSPORT_SHM] * 1e6, 1e-9 / t->beta_s[TLINK_TRANSPORT_SHM],
            t->alpha_s[TLINK_TRANSPORT_TCP] * 1e6, 1e-9 / t->beta_s[TLINK_TRANSPORT_TCP], 1e-9 / t->gamma_s);
    for (int i = 0; i < t->nlinks && i < 16; i++)
        fprintf(f, "  link %s - %s: %s alpha %.2f us, %.2f GB/s\n", t->hosts[t->links[i].a].name,
                t->hosts[t->links[i].b].name, tr_names[t->links[i].transport], t->links[i].alpha_s * 1e6,
                1e-9 / t->links[i].beta_s);
    if (t->nlinks > 16) fprintf(f, "  ... %d more links\n", t->nlinks - 16);
}

/* ====================================================================== predictions */

int tlink_topo_predict(const tlink_topo *t, tlink_coll coll, size_t bytes, tlink_topo_cost *out, int max,
                       tlink_algo *best) {
    if (!t || (unsigned)coll >= TLINK_COLL_COUNT || max < 0 || (max > 0 && !out) || t->nhosts < 1 || t->nranks < 1)
        return -1;
    /* cost.c's model reads these fields of a communicator: give it a model communicator */
    tlink_comm *c = calloc(1, sizeof *c);
    int *nr = calloc((size_t)t->nhosts, sizeof *nr);
    if (!c || !nr) { free(c); free(nr); return -1; }
    c->size = t->nranks;
    c->nhosts = t->nhosts;
    c->host_nranks = nr;
    for (int i = 0; i < t->nhosts; i++) nr[i] = t->hosts[i].nranks;
    memcpy(c->alpha, t->alpha_s, sizeof c->alpha);
    memcpy(c->beta, t->beta_s, sizeof c->beta);
    c->gamma = t->gamma_s;
    if (t->nlinks > 0 && t->nhosts > 1) {
        /* the slowest hop sets the pace; the default applies unless every pair is listed */
        long long pairs = (long long)t->nhosts * (t->nhosts - 1) / 2;
        double a = t->nlinks >= pairs ? 0 : c->alpha[TLINK_TRANSPORT_TCP];
        double b = t->nlinks >= pairs ? 0 : c->beta[TLINK_TRANSPORT_TCP];
        for (int i = 0; i < t->nlinks; i++) {
            if (t->links[i].alpha_s > a) a = t->links[i].alpha_s;
            if (t->links[i].beta_s > b) b = t->links[i].beta_s;
        }
        c->alpha[TLINK_TRANSPORT_TCP] = a;
        c->beta[TLINK_TRANSPORT_TCP] = b;
    }
    /* hosts with more ranks than cores: the model's oversubscription terms, estimated */
    for (int i = 0; i < t->nhosts; i++)
        if (t->hosts[i].ncores > 0 && (double)t->hosts[i].nranks / t->hosts[i].ncores > c->ranks_per_core)
            c->ranks_per_core = (double)t->hosts[i].nranks / t->hosts[i].ncores;
    tl_cost_sync_estimate(c, c->alpha[TLINK_TRANSPORT_SHM]);
    int n = 0;
    for (int a = 1; a < TLINK_ALGO_COUNT; a++) {
        double us = tlink_predict_us(c, coll, (tlink_algo)a, bytes, NULL);
        if (us < 0) continue;
        if (n < max) {
            out[n].algo = (tlink_algo)a;
            out[n].us = us;
        }
        n++;
    }
    if (best) {
        tlink_algo ch = TLINK_ALGO_AUTO;
        tlink_predict_us(c, coll, TLINK_ALGO_AUTO, bytes, &ch);
        *best = ch;
    }
    free(nr);
    free(c);
    return n;
}
