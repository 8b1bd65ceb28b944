/* FAKE libascendcl for the pypto-rs tests; NOT the CANN runtime.
 *
 * Implements the ACL calls pypto-rt makes, with the signatures of the public
 * ACL headers, on host memory: "device memory" is host memory the fake
 * tracks, so kernels compiled by the fake bisheng can read it directly.
 * It checks what the real runtime requires of a caller (aclInit first, a
 * device set on the calling thread, copies that stay inside allocations and
 * go the direction they say) and can inject failures; see README.md. */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int aclError;
typedef void* aclrtStream;

enum {
    ACL_SUCCESS = 0,
    ACL_ERROR_INVALID_PARAM = 100000,
    ACL_ERROR_UNINITIALIZE = 100001,
    ACL_ERROR_REPEAT_INITIALIZE = 100002,
    ACL_ERROR_RT_INVALID_DEVICEID = 107001,
    ACL_ERROR_RT_CONTEXT_NULL = 107002,
    ACL_ERROR_RT_MEMORY_ALLOCATION = 207001,
    ACL_ERROR_RT_INTERNAL_ERROR = 507000,
    ACL_ERROR_RT_AICORE_EXCEPTION = 507015,
};

enum { HOST_TO_HOST, HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE };

struct allocation {
    char* base;
    size_t bytes;
    int device;
    struct allocation* next;
};

/* Work queued on a stream, run in order by the stream's worker thread. */
enum { TASK_RUN, TASK_RECORD, TASK_WAIT, TASK_COPY };
#define TASK_PTRS 64
struct event;
struct task {
    int kind;
    void (*run)(void*); /* TASK_RUN */
    void* ctx;
    struct event* event; /* TASK_RECORD, TASK_WAIT */
    long generation;     /* TASK_RECORD: which record; TASK_WAIT: the record waited for */
    void* dst;           /* TASK_COPY */
    const void* src;
    size_t bytes;
    const void* ptrs[TASK_PTRS]; /* device memory the task uses */
    uint32_t nptrs;
    struct task* next;
};

struct stream {
    int device;
    int error;
    char message[1100];
    pthread_t worker;
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct task* head;
    struct task* tail;
    struct task* running;
    int stop;
    struct stream* next_live; /* every live stream, for the ordering checks */
};

/* An event: records are numbered; `completed` is the last record its
 * stream has reached. */
struct event {
    pthread_mutex_t m;
    pthread_cond_t cv;
    long recorded;
    long completed;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream* live_streams;

/* What the runtime was asked to do, for tests that look for stalls:
 * pypto_fake_acl_counter(name) reads one. */
static long n_memcpy, n_memcpy_async, n_sync_stream, n_sync_event, n_launch, n_record, n_wait, n_malloc_calls,
    n_get_device;
static void counted(long* counter);
static int initialized;
static struct allocation* allocations;
static long mallocs, frees;
static __thread int current_device = -1;
static __thread char recent[1200];

static aclError fail(aclError code, const char* format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(recent, sizeof recent, format, args);
    va_end(args);
    return code;
}

/* PYPTO_FAKE_ACL_LOG=path: each lifecycle call and its result is appended
 * there, so tests can check who initialised, finalised and released what. */
static aclError note(const char* call, long arg, aclError rc)
{
    const char* path = getenv("PYPTO_FAKE_ACL_LOG");
    if (path != NULL) {
        pthread_mutex_lock(&lock);
        FILE* f = fopen(path, "a");
        if (f != NULL) {
            fprintf(f, "%s %ld -> %d\n", call, arg, rc);
            fclose(f);
        }
        pthread_mutex_unlock(&lock);
    }
    return rc;
}

/* PYPTO_FAKE_ACL_FAIL=call[@n]: true from the n-th use of `call` on. */
static int injected(const char* call)
{
    static long uses[8];
    static const char* names[8] = {"aclInit", "aclrtSetDevice", "aclrtMalloc", "aclrtMemcpy", "launch"};
    const char* spec = getenv("PYPTO_FAKE_ACL_FAIL");
    size_t len = strlen(call);
    if (spec == NULL || strncmp(spec, call, len) != 0 || (spec[len] != '\0' && spec[len] != '@')) {
        return 0;
    }
    long from = spec[len] == '@' ? atol(spec + len + 1) : 1;
    for (int i = 0; names[i] != NULL; ++i) {
        if (strcmp(names[i], call) == 0) {
            pthread_mutex_lock(&lock);
            long use = ++uses[i];
            pthread_mutex_unlock(&lock);
            return use >= from;
        }
    }
    return 0;
}

static int device_count(void)
{
    const char* v = getenv("PYPTO_FAKE_ACL_DEVICES");
    return v != NULL ? atoi(v) : 2;
}

/* Common preconditions of calls that need a device on this thread. */
static aclError need_device(const char* call)
{
    if (!initialized) {
        return fail(ACL_ERROR_UNINITIALIZE, "fake ACL: %s before aclInit", call);
    }
    if (current_device < 0) {
        return fail(ACL_ERROR_RT_CONTEXT_NULL, "fake ACL: %s on a thread with no device set (aclrtSetDevice)", call);
    }
    return ACL_SUCCESS;
}

/* The allocation holding [p, p + n), or NULL. Caller holds `lock`. */
static struct allocation* find(const void* p, size_t n)
{
    for (struct allocation* a = allocations; a != NULL; a = a->next) {
        const char* c = p;
        if (c >= a->base && c <= a->base + a->bytes) {
            return (size_t)(c - a->base) + n <= a->bytes ? a : NULL;
        }
    }
    return NULL;
}

aclError aclInit(const char* configPath)
{
    (void)configPath;
    if (injected("aclInit")) {
        return note("aclInit", 0, fail(ACL_ERROR_RT_INTERNAL_ERROR, "fake ACL: aclInit failed (injected)"));
    }
    if (initialized) {
        return note("aclInit", 0, fail(ACL_ERROR_REPEAT_INITIALIZE, "fake ACL: aclInit called twice"));
    }
    initialized = 1;
    return note("aclInit", 0, ACL_SUCCESS);
}

static long streams_live;

aclError aclFinalize(void)
{
    if (!initialized) {
        return note("aclFinalize", 0, fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclFinalize before aclInit"));
    }
    note("aclFinalize", streams_live, ACL_SUCCESS);
    const char* report = getenv("PYPTO_FAKE_ACL_REPORT");
    if (report != NULL) {
        long live = 0;
        for (struct allocation* a = allocations; a != NULL; a = a->next) {
            ++live;
        }
        FILE* f = fopen(report, "w");
        if (f != NULL) {
            fprintf(f, "mallocs %ld\nfrees %ld\nlive %ld\n", mallocs, frees, live);
            fclose(f);
        }
    }
    initialized = 0;
    return ACL_SUCCESS;
}

const char* aclGetRecentErrMsg(void)
{
    return recent[0] != '\0' ? recent : NULL;
}

aclError aclrtGetDeviceCount(uint32_t* count)
{
    if (!initialized) {
        return fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtGetDeviceCount before aclInit");
    }
    *count = (uint32_t)device_count();
    return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t deviceId)
{
    if (!initialized) {
        return fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtSetDevice before aclInit");
    }
    if (deviceId < 0 || deviceId >= device_count()) {
        return fail(ACL_ERROR_RT_INVALID_DEVICEID, "fake ACL: invalid device id %d", deviceId);
    }
    if (injected("aclrtSetDevice")) {
        return fail(ACL_ERROR_RT_INTERNAL_ERROR, "fake ACL: aclrtSetDevice failed (injected)");
    }
    current_device = deviceId;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* deviceId)
{
    if (!initialized) {
        return fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtGetDevice before aclInit");
    }
    counted(&n_get_device);
    if (current_device < 0) {
        return fail(ACL_ERROR_RT_CONTEXT_NULL, "fake ACL: aclrtGetDevice on a thread with no device set");
    }
    *deviceId = current_device;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId)
{
    if (!initialized) {
        return note("aclrtResetDevice", deviceId,
                    fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtResetDevice after aclFinalize"));
    }
    if (deviceId == current_device) {
        current_device = -1;
    }
    return note("aclrtResetDevice", deviceId, ACL_SUCCESS);
}

const char* aclrtGetSocName(void)
{
    const char* soc = getenv("PYPTO_FAKE_SOC");
    return soc != NULL ? soc : "Ascend910B3";
}

static void counted(long* counter)
{
    pthread_mutex_lock(&lock);
    ++*counter;
    pthread_mutex_unlock(&lock);
}

/* The stream's worker: runs its tasks in order, asynchronously from the
 * threads that queue them, as the device does. */
static void* stream_worker(void* arg)
{
    struct stream* s = arg;
    pthread_mutex_lock(&s->m);
    for (;;) {
        while (s->head == NULL && !s->stop) {
            pthread_cond_wait(&s->cv, &s->m);
        }
        if (s->head == NULL) {
            break;
        }
        struct task* t = s->head;
        s->head = t->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        s->running = t;
        pthread_mutex_unlock(&s->m);
        switch (t->kind) {
        case TASK_RUN:
            t->run(t->ctx);
            break;
        case TASK_COPY:
            memcpy(t->dst, t->src, t->bytes);
            break;
        case TASK_RECORD:
            pthread_mutex_lock(&t->event->m);
            if (t->generation > t->event->completed) {
                t->event->completed = t->generation;
            }
            pthread_cond_broadcast(&t->event->cv);
            pthread_mutex_unlock(&t->event->m);
            break;
        case TASK_WAIT:
            pthread_mutex_lock(&t->event->m);
            while (t->event->completed < t->generation) {
                pthread_cond_wait(&t->event->cv, &t->event->m);
            }
            pthread_mutex_unlock(&t->event->m);
            break;
        }
        pthread_mutex_lock(&s->m);
        s->running = NULL;
        free(t);
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->m);
    return NULL;
}

static void enqueue(struct stream* s, struct task* t)
{
    t->next = NULL;
    pthread_mutex_lock(&s->m);
    if (s->tail != NULL) {
        s->tail->next = t;
    } else {
        s->head = t;
    }
    s->tail = t;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
}

/* The stream with queued or running work that uses the allocation holding
 * `p`, or NULL: the host must not copy or free memory a pending task uses.
 * Caller holds `lock`. */
static int task_uses(const struct task* t, const struct allocation* a)
{
    for (uint32_t i = 0; t != NULL && i < t->nptrs; ++i) {
        const char* c = t->ptrs[i];
        if (c >= a->base && c < a->base + (a->bytes > 0 ? a->bytes : 1)) {
            return 1;
        }
    }
    return 0;
}

static struct stream* pending_user(const struct allocation* a)
{
    for (struct stream* s = live_streams; s != NULL; s = s->next_live) {
        pthread_mutex_lock(&s->m);
        int used = task_uses(s->running, a);
        for (const struct task* t = s->head; t != NULL && !used; t = t->next) {
            used = task_uses(t, a);
        }
        pthread_mutex_unlock(&s->m);
        if (used) {
            return s;
        }
    }
    return NULL;
}

aclError aclrtCreateStream(aclrtStream* stream)
{
    aclError e = need_device("aclrtCreateStream");
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct stream* s = calloc(1, sizeof *s);
    if (s == NULL) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of host memory");
    }
    s->device = current_device;
    pthread_mutex_init(&s->m, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->worker, NULL, stream_worker, s) != 0) {
        free(s);
        return fail(ACL_ERROR_RT_INTERNAL_ERROR, "fake ACL: no thread for the stream's worker");
    }
    *stream = s;
    pthread_mutex_lock(&lock);
    ++streams_live;
    s->next_live = live_streams;
    live_streams = s;
    pthread_mutex_unlock(&lock);
    return note("aclrtCreateStream", s->device, ACL_SUCCESS);
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!initialized) {
        return note("aclrtDestroyStream", -1,
                    fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtDestroyStream after aclFinalize"));
    }
    struct stream* s = stream;
    int device = s->device;
    pthread_mutex_lock(&s->m);
    s->stop = 1; /* the worker finishes what is queued, then ends */
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->m);
    pthread_join(s->worker, NULL);
    pthread_mutex_lock(&lock);
    --streams_live;
    for (struct stream** p = &live_streams; *p != NULL; p = &(*p)->next_live) {
        if (*p == s) {
            *p = s->next_live;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    free(s);
    return note("aclrtDestroyStream", device, ACL_SUCCESS);
}

aclError aclrtSynchronizeStream(aclrtStream stream)
{
    aclError e = need_device("aclrtSynchronizeStream");
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct stream* s = stream;
    if (s->device != current_device) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: stream of device %d synchronised from device %d",
                    s->device, current_device);
    }
    counted(&n_sync_stream);
    pthread_mutex_lock(&s->m);
    while (s->head != NULL || s->running != NULL) {
        pthread_cond_wait(&s->cv, &s->m);
    }
    aclError code = s->error;
    s->error = ACL_SUCCESS;
    pthread_mutex_unlock(&s->m);
    if (code != ACL_SUCCESS) {
        return fail(code, "%s", s->message);
    }
    return ACL_SUCCESS;
}

typedef void* aclrtEvent;

aclError aclrtCreateEvent(aclrtEvent* event)
{
    aclError e = need_device("aclrtCreateEvent");
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct event* ev = calloc(1, sizeof *ev);
    if (ev == NULL) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of host memory");
    }
    pthread_mutex_init(&ev->m, NULL);
    pthread_cond_init(&ev->cv, NULL);
    *event = ev;
    return ACL_SUCCESS;
}

aclError aclrtDestroyEvent(aclrtEvent event)
{
    struct event* ev = event;
    if (ev == NULL) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtDestroyEvent of a null event");
    }
    /* A record or wait still queued would touch freed memory: the caller
     * must not destroy an event before the streams using it pass it. */
    pthread_mutex_lock(&ev->m);
    int pending = ev->completed < ev->recorded;
    pthread_mutex_unlock(&ev->m);
    if (pending) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtDestroyEvent of an event its stream has not reached");
    }
    free(ev);
    return ACL_SUCCESS;
}

/* Queues a record of `event` (TASK_RECORD) or a wait for its last record
 * (TASK_WAIT) on `stream`. */
static aclError queue_event_task(const char* call, aclrtStream stream, aclrtEvent event, int kind)
{
    aclError e = need_device(call);
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct task* t = calloc(1, sizeof *t);
    if (t == NULL) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of host memory");
    }
    struct event* ev = event;
    pthread_mutex_lock(&ev->m);
    t->generation = kind == TASK_RECORD ? ++ev->recorded : ev->recorded;
    pthread_mutex_unlock(&ev->m);
    t->kind = kind;
    t->event = ev;
    counted(kind == TASK_RECORD ? &n_record : &n_wait);
    enqueue(stream, t);
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream)
{
    return queue_event_task("aclrtRecordEvent", stream, event, TASK_RECORD);
}

/* Work queued after the wait runs after the event's last record so far. */
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event)
{
    return queue_event_task("aclrtStreamWaitEvent", stream, event, TASK_WAIT);
}

aclError aclrtSynchronizeEvent(aclrtEvent event)
{
    aclError e = need_device("aclrtSynchronizeEvent");
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct event* ev = event;
    counted(&n_sync_event);
    pthread_mutex_lock(&ev->m);
    while (ev->completed < ev->recorded) {
        pthread_cond_wait(&ev->cv, &ev->m);
    }
    pthread_mutex_unlock(&ev->m);
    return ACL_SUCCESS;
}

long pypto_fake_acl_counter(const char* name)
{
    static const struct {
        const char* name;
        long* value;
    } all[] = {
        {"aclrtMemcpy", &n_memcpy},           {"aclrtMemcpyAsync", &n_memcpy_async},
        {"aclrtSynchronizeStream", &n_sync_stream}, {"aclrtSynchronizeEvent", &n_sync_event},
        {"launch", &n_launch},                 {"aclrtRecordEvent", &n_record},
        {"aclrtStreamWaitEvent", &n_wait},    {"aclrtMalloc", &n_malloc_calls},
        {"aclrtGetDevice", &n_get_device},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        if (strcmp(all[i].name, name) == 0) {
            pthread_mutex_lock(&lock);
            long v = *all[i].value;
            pthread_mutex_unlock(&lock);
            return v;
        }
    }
    return -1;
}

aclError aclrtMalloc(void** devPtr, size_t size, int policy)
{
    (void)policy;
    aclError e = need_device("aclrtMalloc");
    if (e != ACL_SUCCESS) {
        return e;
    }
    if (size == 0) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtMalloc of 0 bytes");
    }
    counted(&n_malloc_calls);
    if (injected("aclrtMalloc")) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of device memory (injected)");
    }
    struct allocation* a = malloc(sizeof *a);
    void* base = NULL;
    if (a == NULL || posix_memalign(&base, 512, (size + 511) / 512 * 512) != 0) {
        free(a);
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of host memory");
    }
    a->base = base;
    a->bytes = size;
    a->device = current_device;
    pthread_mutex_lock(&lock);
    a->next = allocations;
    allocations = a;
    ++mallocs;
    pthread_mutex_unlock(&lock);
    *devPtr = base;
    return ACL_SUCCESS;
}

aclError aclrtFree(void* devPtr)
{
    aclError e = need_device("aclrtFree");
    if (e != ACL_SUCCESS) {
        return e;
    }
    pthread_mutex_lock(&lock);
    for (struct allocation** p = &allocations; *p != NULL; p = &(*p)->next) {
        if ((*p)->base == devPtr) {
            struct allocation* a = *p;
            if (pending_user(a) != NULL) {
                pthread_mutex_unlock(&lock);
                return fail(ACL_ERROR_INVALID_PARAM,
                            "fake ACL: aclrtFree of %p while work queued on a stream still uses it", devPtr);
            }
            *p = a->next;
            ++frees;
            pthread_mutex_unlock(&lock);
            free(a->base);
            free(a);
            return ACL_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtFree of %p, which aclrtMalloc did not return", devPtr);
}

/* The checks a copy of either kind passes; `call` names it in messages.
 * Sets the allocations of the two sides (NULL for host memory). */
static aclError check_copy(const char* call, void* dst, size_t destMax, const void* src, size_t count, int kind,
                           struct allocation** dp, struct allocation** sp)
{
    aclError e = need_device(call);
    if (e != ACL_SUCCESS) {
        return e;
    }
    if (count > destMax) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: %s of %zu bytes into %zu", call, count, destMax);
    }
    if (injected("aclrtMemcpy")) {
        return fail(ACL_ERROR_RT_INTERNAL_ERROR, "fake ACL: %s failed (injected)", call);
    }
    if (kind < HOST_TO_DEVICE || kind > DEVICE_TO_DEVICE) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: unsupported aclrtMemcpyKind %d", kind);
    }
    int dst_device = kind == HOST_TO_DEVICE || kind == DEVICE_TO_DEVICE;
    int src_device = kind == DEVICE_TO_HOST || kind == DEVICE_TO_DEVICE;
    pthread_mutex_lock(&lock);
    struct allocation* d = find(dst, count);
    struct allocation* s = find(src, count);
    pthread_mutex_unlock(&lock);
    if (dst_device != (d != NULL) || src_device != (s != NULL)) {
        return fail(ACL_ERROR_INVALID_PARAM,
                    "fake ACL: %s kind %d does not match its pointers (destination %s device memory, "
                    "source %s)", call, kind, d != NULL ? "in" : "not in", s != NULL ? "in" : "not in");
    }
    if ((d != NULL && d->device != current_device) || (s != NULL && s->device != current_device)) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: %s touches memory of another device than %d", call,
                    current_device);
    }
    *dp = d;
    *sp = s;
    return ACL_SUCCESS;
}

/* Synchronous for the host, and not ordered with any stream: memory that
 * work queued on a stream still uses is an error (the real device would
 * copy stale or half-written data). */
aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, int kind)
{
    struct allocation* d;
    struct allocation* s;
    aclError e = check_copy("aclrtMemcpy", dst, destMax, src, count, kind, &d, &s);
    if (e != ACL_SUCCESS) {
        return e;
    }
    counted(&n_memcpy);
    pthread_mutex_lock(&lock);
    struct stream* busy = d != NULL ? pending_user(d) : NULL;
    if (busy == NULL && s != NULL) {
        busy = pending_user(s);
    }
    pthread_mutex_unlock(&lock);
    if (busy != NULL) {
        return fail(ACL_ERROR_INVALID_PARAM,
                    "fake ACL: aclrtMemcpy of device memory that work queued on a stream still uses; "
                    "synchronise the stream first");
    }
    memcpy(dst, src, count);
    return ACL_SUCCESS;
}

/* Queued on `stream`, after the work before it. */
aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count, int kind, aclrtStream stream)
{
    struct allocation* d;
    struct allocation* s;
    aclError e = check_copy("aclrtMemcpyAsync", dst, destMax, src, count, kind, &d, &s);
    if (e != ACL_SUCCESS) {
        return e;
    }
    struct task* t = calloc(1, sizeof *t);
    if (t == NULL) {
        return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "fake ACL: out of host memory");
    }
    t->kind = TASK_COPY;
    t->dst = dst;
    t->src = src;
    t->bytes = count;
    if (d != NULL) {
        t->ptrs[t->nptrs++] = dst;
    }
    if (s != NULL) {
        t->ptrs[t->nptrs++] = src;
    }
    counted(&n_memcpy_async);
    enqueue(stream, t);
    return ACL_SUCCESS;
}

/* ---- for the fake launch in pypto_fake_npu.h ---- */

int pypto_fake_acl_allocation_bytes(const void* ptr, uint64_t* bytes)
{
    pthread_mutex_lock(&lock);
    int found = 1;
    for (struct allocation* a = allocations; a != NULL; a = a->next) {
        const char* c = ptr;
        /* A view's address lies inside its tensor's allocation: the
           kernel may touch the rest of it (a launch passes addresses only,
           as on an NPU, so the view's own length is not known here). */
        if (c >= a->base && c < a->base + a->bytes) {
            *bytes = (uint64_t)(a->base + a->bytes - c);
            found = 0;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
}

/* Queues a kernel launch: `run(ctx)` runs on the stream's worker, after
 * the work queued before it; `ptrs` is the device memory it uses. */
int pypto_fake_acl_enqueue(void* stream, void (*run)(void*), void* ctx, void* const* ptrs, uint32_t nptrs)
{
    struct task* t = calloc(1, sizeof *t);
    if (t == NULL || nptrs > TASK_PTRS) {
        free(t);
        return 1;
    }
    t->kind = TASK_RUN;
    t->run = run;
    t->ctx = ctx;
    for (uint32_t i = 0; i < nptrs; ++i) {
        t->ptrs[i] = ptrs[i];
    }
    t->nptrs = nptrs;
    counted(&n_launch);
    enqueue(stream, t);
    return 0;
}

int pypto_fake_acl_launch_begin(void* stream)
{
    struct stream* s = stream;
    if (injected("launch")) {
        pthread_mutex_lock(&s->m);
        s->error = ACL_ERROR_RT_AICORE_EXCEPTION;
        snprintf(s->message, sizeof s->message, "fake ACL: AI core exception (injected launch failure)");
        pthread_mutex_unlock(&s->m);
        return 1;
    }
    return 0;
}

void pypto_fake_acl_kernel_failed(void* stream, uint32_t block, const char* message)
{
    struct stream* s = stream;
    pthread_mutex_lock(&s->m);
    if (s->error == ACL_SUCCESS) { /* the first failure is the one reported */
        s->error = ACL_ERROR_RT_AICORE_EXCEPTION;
        snprintf(s->message, sizeof s->message, "fake ACL: AI core exception in block %u: %s", block, message);
    }
    pthread_mutex_unlock(&s->m);
}
