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

struct stream {
    int device;
    int error;
    char message[1100];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
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
    *stream = s;
    pthread_mutex_lock(&lock);
    ++streams_live;
    pthread_mutex_unlock(&lock);
    return note("aclrtCreateStream", s->device, ACL_SUCCESS);
}

aclError aclrtDestroyStream(aclrtStream stream)
{
    if (!initialized) {
        return note("aclrtDestroyStream", -1,
                    fail(ACL_ERROR_UNINITIALIZE, "fake ACL: aclrtDestroyStream after aclFinalize"));
    }
    int device = ((struct stream*)stream)->device;
    free(stream);
    pthread_mutex_lock(&lock);
    --streams_live;
    pthread_mutex_unlock(&lock);
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
    if (s->error != ACL_SUCCESS) {
        aclError code = s->error;
        s->error = ACL_SUCCESS;
        return fail(code, "%s", s->message);
    }
    return ACL_SUCCESS;
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

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, int kind)
{
    aclError e = need_device("aclrtMemcpy");
    if (e != ACL_SUCCESS) {
        return e;
    }
    if (count > destMax) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtMemcpy of %zu bytes into %zu", count, destMax);
    }
    if (injected("aclrtMemcpy")) {
        return fail(ACL_ERROR_RT_INTERNAL_ERROR, "fake ACL: aclrtMemcpy failed (injected)");
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
                    "fake ACL: aclrtMemcpy kind %d does not match its pointers (destination %s device memory, "
                    "source %s)", kind, d != NULL ? "in" : "not in", s != NULL ? "in" : "not in");
    }
    if ((d != NULL && d->device != current_device) || (s != NULL && s->device != current_device)) {
        return fail(ACL_ERROR_INVALID_PARAM, "fake ACL: aclrtMemcpy touches memory of another device than %d",
                    current_device);
    }
    memcpy(dst, src, count);
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

int pypto_fake_acl_launch_begin(void* stream)
{
    struct stream* s = stream;
    if (injected("launch")) {
        s->error = ACL_ERROR_RT_AICORE_EXCEPTION;
        snprintf(s->message, sizeof s->message, "fake ACL: AI core exception (injected launch failure)");
        return 1;
    }
    return 0;
}

void pypto_fake_acl_kernel_failed(void* stream, uint32_t block, const char* message)
{
    struct stream* s = stream;
    s->error = ACL_ERROR_RT_AICORE_EXCEPTION;
    snprintf(s->message, sizeof s->message, "fake ACL: AI core exception in block %u: %s", block, message);
}
