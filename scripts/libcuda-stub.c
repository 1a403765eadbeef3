/* The project's stand-in for the CUDA driver library (libcuda.so.1).
 *
 * Two jobs:
 * - Link stub: `scripts/cuda-toolchain.sh` builds it where no driver library
 *   exists, for tools that link libcuda (the peer provers); c2-cuda itself
 *   loads the driver at run time and needs no library to build.
 * - Test driver: c2-cuda's tests (src/stub_tests.rs) load it in place of the
 *   driver and tell it what to answer, to see every driver result surface as
 *   a typed error (issue 38).
 *
 * Every entry point returns the current answer (100, CUDA_ERROR_NO_DEVICE,
 * until told otherwise), except those named in the "succeed" list, which
 * return 0 and write plausible outputs. `c2_stub_answer(code, "cuInit,...")`
 * sets both; `c2_stub_calls()` lists the calls made so far. The entry points c2-cuda calls are defined with cuda.h's
 * signatures; the rest (the names cuda-driver-sys 0.3 declares, for linking)
 * take no arguments and only return the answer. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int answer = 100;
static char succeed[4096] = ",";

/* What the next calls return: `code`, or 0 for the names in `ok`
 * (comma-separated, NULL = none). Not thread-safe: tests call it between
 * driver calls on one thread. */
void c2_stub_answer(int code, const char *ok) {
    answer = code;
    snprintf(succeed, sizeof succeed, ",%s,", ok ? ok : "");
}

/* Every call of a defined entry point, in order, each name followed by a
 * comma (a test reads it to see what happened in which order). Appended
 * without locks: space is claimed atomically, so concurrent callers never
 * write past the end (their names may interleave). */
static char calls[1 << 16];
static size_t used;

const char *c2_stub_calls(void) { return calls; }
void c2_stub_clear_calls(void) { memset(calls, 0, sizeof calls); used = 0; }

static void note(const char *name) {
    size_t n = strlen(name) + 1;
    size_t at = __atomic_fetch_add(&used, n, __ATOMIC_RELAXED);
    if (at + n < sizeof calls) {
        memcpy(calls + at, name, n - 1);
        calls[at + n - 1] = ',';
    }
}

static int result(const char *name) {
    char key[128];
    note(name);
    snprintf(key, sizeof key, ",%s,", name);
    return strstr(succeed, key) ? 0 : answer;
}

typedef unsigned long long dptr;
#define R(name) int r = result(#name); if (r) return r

int cuInit(unsigned flags) { (void)flags; return result("cuInit"); }
int cuDeviceGetCount(int *n) { R(cuDeviceGetCount); *n = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { R(cuDeviceGet); *d = ordinal; return 0; }
int cuDeviceGetName(char *s, int len, int d) { (void)d; R(cuDeviceGetName); snprintf(s, (size_t)len, "c2 stub device"); return 0; }
int cuDeviceTotalMem_v2(size_t *bytes, int d) { (void)d; R(cuDeviceTotalMem_v2); *bytes = (size_t)1 << 30; return 0; }
int cuDeviceGetAttribute(int *v, int attribute, int d) {
    (void)d;
    R(cuDeviceGetAttribute);
    switch (attribute) {
    case 75: *v = 9; break;                   /* compute capability 9.0 */
    case 76: *v = 0; break;
    case 16: *v = 2; break;                   /* multiprocessors */
    default: *v = 48 << 10; break;            /* shared memory sizes */
    }
    return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int d) { (void)d; R(cuDevicePrimaryCtxRetain); *ctx = (void *)0x1000; return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return result("cuDevicePrimaryCtxRelease_v2"); }
int cuCtxSetCurrent(void *ctx) { (void)ctx; return result("cuCtxSetCurrent"); }
int cuCtxSynchronize(void) { return result("cuCtxSynchronize"); }
int cuMemGetInfo_v2(size_t *free_bytes, size_t *total) { R(cuMemGetInfo_v2); *free_bytes = *total = (size_t)1 << 30; return 0; }
int cuModuleLoadData(void **m, const void *image) { (void)image; R(cuModuleLoadData); *m = (void *)0x2000; return 0; }
int cuModuleUnload(void *m) { (void)m; return result("cuModuleUnload"); }
int cuModuleGetFunction(void **f, void *m, const char *name) { (void)m; (void)name; R(cuModuleGetFunction); *f = (void *)0x3000; return 0; }
int cuFuncSetAttribute(void *f, int attribute, int value) { (void)f; (void)attribute; (void)value; return result("cuFuncSetAttribute"); }
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *f, int block, size_t shared) {
    (void)f; (void)block; (void)shared;
    R(cuOccupancyMaxActiveBlocksPerMultiprocessor);
    *blocks = 1;
    return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)stream; (void)params; (void)extra;
    return result("cuLaunchKernel");
}
/* Device memory is host memory here, so copies and fills really happen and
 * a test can read back what it wrote. */
int cuMemAlloc_v2(dptr *p, size_t bytes) { R(cuMemAlloc_v2); *p = (dptr)(size_t)calloc(bytes, 1); return *p ? 0 : 2; }
int cuMemFree_v2(dptr p) { R(cuMemFree_v2); free((void *)(size_t)p); return 0; }
int cuMemAllocHost_v2(void **p, size_t bytes) { R(cuMemAllocHost_v2); *p = calloc(bytes, 1); return *p ? 0 : 2; }
int cuMemFreeHost(void *p) { R(cuMemFreeHost); free(p); return 0; }
int cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) { (void)p; (void)bytes; (void)flags; return result("cuMemHostRegister_v2"); }
int cuMemHostUnregister(void *p) { (void)p; return result("cuMemHostUnregister"); }
int cuMemcpyHtoDAsync_v2(dptr dst, const void *src, size_t n, void *s) { (void)s; R(cuMemcpyHtoDAsync_v2); memcpy((void *)(size_t)dst, src, n); return 0; }
int cuMemcpyDtoHAsync_v2(void *dst, dptr src, size_t n, void *s) { (void)s; R(cuMemcpyDtoHAsync_v2); memcpy(dst, (void *)(size_t)src, n); return 0; }
int cuMemcpyDtoDAsync_v2(dptr dst, dptr src, size_t n, void *s) { (void)s; R(cuMemcpyDtoDAsync_v2); memmove((void *)(size_t)dst, (void *)(size_t)src, n); return 0; }
int cuMemsetD8Async(dptr dst, unsigned char v, size_t n, void *s) { (void)s; R(cuMemsetD8Async); memset((void *)(size_t)dst, v, n); return 0; }
int cuStreamCreate(void **s, unsigned flags) { (void)flags; R(cuStreamCreate); *s = malloc(1); return 0; }
int cuStreamCreateWithPriority(void **s, unsigned flags, int priority) {
    char seen[32];
    (void)flags;
    R(cuStreamCreateWithPriority);
    snprintf(seen, sizeof seen, "priority %d", priority); /* listed after the call, for the tests */
    note(seen);
    *s = malloc(1);
    return 0;
}
int cuCtxGetStreamPriorityRange(int *least, int *greatest) { R(cuCtxGetStreamPriorityRange); *least = 0; *greatest = -5; return 0; }
int cuStreamDestroy_v2(void *s) { R(cuStreamDestroy_v2); free(s); return 0; }
int cuStreamSynchronize(void *s) { (void)s; return result("cuStreamSynchronize"); }
int cuStreamWaitEvent(void *s, void *e, unsigned flags) { (void)s; (void)e; (void)flags; return result("cuStreamWaitEvent"); }
int cuEventCreate(void **e, unsigned flags) { (void)flags; R(cuEventCreate); *e = malloc(1); return 0; }
int cuEventDestroy_v2(void *e) { R(cuEventDestroy_v2); free(e); return 0; }
int cuEventRecord(void *e, void *s) { (void)e; (void)s; return result("cuEventRecord"); }
int cuEventSynchronize(void *e) { (void)e; return result("cuEventSynchronize"); }
int cuEventElapsedTime(float *ms, void *start, void *end) { (void)start; (void)end; R(cuEventElapsedTime); *ms = 0.0f; return 0; }

/* The other entry points, for linking only. */
#define STUB(name) int name(void) { return answer; }
STUB(name)
STUB(cuArray3DCreate_v2)
STUB(cuArray3DGetDescriptor_v2)
STUB(cuArrayCreate_v2)
STUB(cuArrayDestroy)
STUB(cuArrayGetDescriptor_v2)
STUB(cuCtxAttach)
STUB(cuCtxCreate_v2)
STUB(cuCtxDestroy_v2)
STUB(cuCtxDetach)
STUB(cuCtxDisablePeerAccess)
STUB(cuCtxEnablePeerAccess)
STUB(cuCtxGetApiVersion)
STUB(cuCtxGetCacheConfig)
STUB(cuCtxGetCurrent)
STUB(cuCtxGetDevice)
STUB(cuCtxGetFlags)
STUB(cuCtxGetLimit)
STUB(cuCtxGetSharedMemConfig)
STUB(cuCtxPopCurrent_v2)
STUB(cuCtxPushCurrent_v2)
STUB(cuCtxSetCacheConfig)
STUB(cuCtxSetLimit)
STUB(cuCtxSetSharedMemConfig)
STUB(cuDestroyExternalMemory)
STUB(cuDestroyExternalSemaphore)
STUB(cuDeviceCanAccessPeer)
STUB(cuDeviceComputeCapability)
STUB(cuDeviceGetByPCIBusId)
STUB(cuDeviceGetNvSciSyncAttributes)
STUB(cuDeviceGetP2PAttribute)
STUB(cuDeviceGetPCIBusId)
STUB(cuDeviceGetProperties)
STUB(cuDeviceGetUuid)
STUB(cuDevicePrimaryCtxGetState)
STUB(cuDevicePrimaryCtxRelease)
STUB(cuDevicePrimaryCtxReset)
STUB(cuDevicePrimaryCtxSetFlags)
STUB(cuDriverGetVersion)
STUB(cuEventQuery)
STUB(cuExternalMemoryGetMappedBuffer)
STUB(cuExternalMemoryGetMappedMipmappedArray)
STUB(cuFuncGetAttribute)
STUB(cuFuncSetBlockShape)
STUB(cuFuncSetCacheConfig)
STUB(cuFuncSetSharedMemConfig)
STUB(cuFuncSetSharedSize)
STUB(cuGetErrorName)
STUB(cuGetErrorString)
STUB(cuGetExportTable)
STUB(cuGraphAddChildGraphNode)
STUB(cuGraphAddDependencies)
STUB(cuGraphAddEmptyNode)
STUB(cuGraphAddHostNode)
STUB(cuGraphAddKernelNode)
STUB(cuGraphAddMemcpyNode)
STUB(cuGraphAddMemsetNode)
STUB(cuGraphChildGraphNodeGetGraph)
STUB(cuGraphClone)
STUB(cuGraphCreate)
STUB(cuGraphDestroy)
STUB(cuGraphDestroyNode)
STUB(cuGraphExecDestroy)
STUB(cuGraphExecHostNodeSetParams)
STUB(cuGraphExecKernelNodeSetParams)
STUB(cuGraphExecMemcpyNodeSetParams)
STUB(cuGraphExecMemsetNodeSetParams)
STUB(cuGraphExecUpdate)
STUB(cuGraphGetEdges)
STUB(cuGraphGetNodes)
STUB(cuGraphGetRootNodes)
STUB(cuGraphHostNodeGetParams)
STUB(cuGraphHostNodeSetParams)
STUB(cuGraphInstantiate)
STUB(cuGraphKernelNodeGetParams)
STUB(cuGraphKernelNodeSetParams)
STUB(cuGraphLaunch)
STUB(cuGraphMemcpyNodeGetParams)
STUB(cuGraphMemcpyNodeSetParams)
STUB(cuGraphMemsetNodeGetParams)
STUB(cuGraphMemsetNodeSetParams)
STUB(cuGraphNodeFindInClone)
STUB(cuGraphNodeGetDependencies)
STUB(cuGraphNodeGetDependentNodes)
STUB(cuGraphNodeGetType)
STUB(cuGraphRemoveDependencies)
STUB(cuGraphicsMapResources)
STUB(cuGraphicsResourceGetMappedMipmappedArray)
STUB(cuGraphicsResourceGetMappedPointer_v2)
STUB(cuGraphicsResourceSetMapFlags_v2)
STUB(cuGraphicsSubResourceGetMappedArray)
STUB(cuGraphicsUnmapResources)
STUB(cuGraphicsUnregisterResource)
STUB(cuImportExternalMemory)
STUB(cuImportExternalSemaphore)
STUB(cuIpcCloseMemHandle)
STUB(cuIpcGetEventHandle)
STUB(cuIpcGetMemHandle)
STUB(cuIpcOpenEventHandle)
STUB(cuIpcOpenMemHandle)
STUB(cuLaunch)
STUB(cuLaunchCooperativeKernel)
STUB(cuLaunchCooperativeKernelMultiDevice)
STUB(cuLaunchGrid)
STUB(cuLaunchGridAsync)
STUB(cuLaunchHostFunc)
STUB(cuLinkAddData_v2)
STUB(cuLinkAddFile_v2)
STUB(cuLinkComplete)
STUB(cuLinkCreate_v2)
STUB(cuLinkDestroy)
STUB(cuMemAddressFree)
STUB(cuMemAddressReserve)
STUB(cuMemAdvise)
STUB(cuMemAllocManaged)
STUB(cuMemAllocPitch_v2)
STUB(cuMemCreate)
STUB(cuMemExportToShareableHandle)
STUB(cuMemGetAccess)
STUB(cuMemGetAddressRange_v2)
STUB(cuMemGetAllocationGranularity)
STUB(cuMemGetAllocationPropertiesFromHandle)
STUB(cuMemHostAlloc)
STUB(cuMemHostGetDevicePointer_v2)
STUB(cuMemHostGetFlags)
STUB(cuMemImportFromShareableHandle)
STUB(cuMemMap)
STUB(cuMemPrefetchAsync)
STUB(cuMemRangeGetAttribute)
STUB(cuMemRangeGetAttributes)
STUB(cuMemRelease)
STUB(cuMemSetAccess)
STUB(cuMemUnmap)
STUB(cuMemcpy)
STUB(cuMemcpy2DAsync_v2)
STUB(cuMemcpy2DUnaligned_v2)
STUB(cuMemcpy2D_v2)
STUB(cuMemcpy3DAsync_v2)
STUB(cuMemcpy3DPeer)
STUB(cuMemcpy3DPeerAsync)
STUB(cuMemcpy3D_v2)
STUB(cuMemcpyAsync)
STUB(cuMemcpyAtoA_v2)
STUB(cuMemcpyAtoD_v2)
STUB(cuMemcpyAtoHAsync_v2)
STUB(cuMemcpyAtoH_v2)
STUB(cuMemcpyDtoA_v2)
STUB(cuMemcpyDtoD_v2)
STUB(cuMemcpyDtoH_v2)
STUB(cuMemcpyHtoAAsync_v2)
STUB(cuMemcpyHtoA_v2)
STUB(cuMemcpyHtoD_v2)
STUB(cuMemcpyPeer)
STUB(cuMemcpyPeerAsync)
STUB(cuMemsetD16Async)
STUB(cuMemsetD16_v2)
STUB(cuMemsetD2D16Async)
STUB(cuMemsetD2D16_v2)
STUB(cuMemsetD2D32Async)
STUB(cuMemsetD2D32_v2)
STUB(cuMemsetD2D8Async)
STUB(cuMemsetD2D8_v2)
STUB(cuMemsetD32Async)
STUB(cuMemsetD32_v2)
STUB(cuMemsetD8_v2)
STUB(cuMipmappedArrayCreate)
STUB(cuMipmappedArrayDestroy)
STUB(cuMipmappedArrayGetLevel)
STUB(cuModuleGetGlobal_v2)
STUB(cuModuleGetSurfRef)
STUB(cuModuleGetTexRef)
STUB(cuModuleLoad)
STUB(cuModuleLoadDataEx)
STUB(cuModuleLoadFatBinary)
STUB(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags)
STUB(cuOccupancyMaxPotentialBlockSize)
STUB(cuOccupancyMaxPotentialBlockSizeWithFlags)
STUB(cuParamSetSize)
STUB(cuParamSetTexRef)
STUB(cuParamSetf)
STUB(cuParamSeti)
STUB(cuParamSetv)
STUB(cuPointerGetAttribute)
STUB(cuPointerGetAttributes)
STUB(cuPointerSetAttribute)
STUB(cuProfilerInitialize)
STUB(cuProfilerStart)
STUB(cuProfilerStop)
STUB(cuSignalExternalSemaphoresAsync)
STUB(cuStreamAddCallback)
STUB(cuStreamAttachMemAsync)
STUB(cuStreamBatchMemOp)
STUB(cuStreamBeginCapture_v2)
STUB(cuStreamEndCapture)
STUB(cuStreamGetCaptureInfo)
STUB(cuStreamGetCtx)
STUB(cuStreamGetFlags)
STUB(cuStreamGetPriority)
STUB(cuStreamIsCapturing)
STUB(cuStreamQuery)
STUB(cuStreamWaitValue32)
STUB(cuStreamWaitValue64)
STUB(cuStreamWriteValue32)
STUB(cuStreamWriteValue64)
STUB(cuSurfObjectCreate)
STUB(cuSurfObjectDestroy)
STUB(cuSurfObjectGetResourceDesc)
STUB(cuSurfRefGetArray)
STUB(cuSurfRefSetArray)
STUB(cuTexObjectCreate)
STUB(cuTexObjectDestroy)
STUB(cuTexObjectGetResourceDesc)
STUB(cuTexObjectGetResourceViewDesc)
STUB(cuTexObjectGetTextureDesc)
STUB(cuTexRefCreate)
STUB(cuTexRefDestroy)
STUB(cuTexRefGetAddressMode)
STUB(cuTexRefGetAddress_v2)
STUB(cuTexRefGetArray)
STUB(cuTexRefGetBorderColor)
STUB(cuTexRefGetFilterMode)
STUB(cuTexRefGetFlags)
STUB(cuTexRefGetFormat)
STUB(cuTexRefGetMaxAnisotropy)
STUB(cuTexRefGetMipmapFilterMode)
STUB(cuTexRefGetMipmapLevelBias)
STUB(cuTexRefGetMipmapLevelClamp)
STUB(cuTexRefGetMipmappedArray)
STUB(cuTexRefSetAddress2D_v3)
STUB(cuTexRefSetAddressMode)
STUB(cuTexRefSetAddress_v2)
STUB(cuTexRefSetArray)
STUB(cuTexRefSetBorderColor)
STUB(cuTexRefSetFilterMode)
STUB(cuTexRefSetFlags)
STUB(cuTexRefSetFormat)
STUB(cuTexRefSetMaxAnisotropy)
STUB(cuTexRefSetMipmapFilterMode)
STUB(cuTexRefSetMipmapLevelBias)
STUB(cuTexRefSetMipmapLevelClamp)
STUB(cuTexRefSetMipmappedArray)
STUB(cuThreadExchangeStreamCaptureMode)
STUB(cuWaitExternalSemaphoresAsync)
