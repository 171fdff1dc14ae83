/*
 * A caching allocator built like PyTorch's CUDACachingAllocator, on the CUDA
 * test double, for testing gcspy's PyTorch-aware mode without a GPU
 * (tests/integration/torch_aware.sh). Debian's PyTorch has no CUDA, so this
 * library stands in for the CUDA half of torch; the test's Python side
 * exposes it through torch.cuda.memory._snapshot() and friends.
 *
 * What matters is what gcspy sees, and that is kept as in PyTorch:
 *  - segments come from cudaMalloc (2 MiB for requests up to 1 MiB, the
 *    request rounded up to 2 MiB above), called from the allocator's code;
 *  - tensors are blocks carved out of segments (sizes rounded to 512 bytes),
 *    split and merged; freed blocks stay cached in the segment;
 *  - the bookkeeping lives on the C++ heap, allocated by functions of
 *    namespace c10::cuda::CUDACachingAllocator: a Block object per block
 *    (holding its device pointer), a map from device pointer to Block, a
 *    free set, a segment list; a global pointer roots it all. Left alone,
 *    a conservative scan finds every block reachable through it;
 *  - a "tensor" is a c10::StorageImpl on the C++ heap, allocated outside the
 *    allocator's code, whose data field points at its block's first byte.
 *
 * Two of PyTorch's other set-ups, chosen by TOY_MODE (read at the first
 * allocation):
 *  - "expandable" (expandable_segments:True): one address range reserved
 *    with cuMemAddressReserve, segments mapped into it one after the other
 *    with cuMemCreate + cuMemMap (no cudaMalloc at all); the Python side
 *    shows them as one segment with is_expandable, as PyTorch does for
 *    contiguous mapped pages;
 *  - "async" (backend:cudaMallocAsync): no segments and no Block objects:
 *    every tensor is its own cudaMallocAsync, called from namespace
 *    c10::cuda::CUDACachingAllocator::CudaMallocAsync, whose table of live
 *    pointers (on the C++ heap, allocated there) points at each; the Python
 *    side has no snapshot to give (PyTorch raises).
 *
 * The C entry points (for ctypes) return and take StorageImpl pointers.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#define NOINLINE __attribute__((noinline))

namespace c10 {
namespace cuda {
namespace CUDACachingAllocator {

struct Block {
    void *ptr;
    size_t size;
    size_t requested;
    bool allocated;
    bool small;
    Block *prev, *next;
};

struct BySize {
    bool operator()(const Block *a, const Block *b) const
    {
        return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
};

class DeviceCachingAllocator {
  public:
    NOINLINE Block *malloc(size_t request);
    NOINLINE void free(void *ptr);
    std::vector<Block *> segments; /* each segment's first block */
    std::map<void *, Block *> allocated_blocks;
    std::set<Block *, BySize> free_blocks;

  private:
    NOINLINE Block *new_segment(size_t bytes, bool small);
};

static DeviceCachingAllocator *the_allocator;
static const char *mode; /* TOY_MODE: "", "expandable" or "async" */

/* expandable_segments: the reserved range and how much of it is mapped */
static CUdeviceptr vmm_base;
static size_t vmm_mapped;
static const size_t vmm_reserved = 64u << 20;

static NOINLINE void *map_segment(size_t bytes)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    if (!vmm_base && (cuInit(0) != CUDA_SUCCESS ||
                      cuMemAddressReserve(&vmm_base, vmm_reserved, 0, 0, 0) != CUDA_SUCCESS))
        return nullptr;
    CUmemGenericAllocationHandle h;
    if (vmm_mapped + bytes > vmm_reserved || cuMemCreate(&h, bytes, &prop, 0) != CUDA_SUCCESS)
        return nullptr;
    CUdeviceptr at = vmm_base + vmm_mapped;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (cuMemMap(at, bytes, 0, h, 0) != CUDA_SUCCESS || cuMemSetAccess(at, bytes, &acc, 1) != CUDA_SUCCESS)
        return nullptr;
    vmm_mapped += bytes;
    return reinterpret_cast<void *>(at);
}

static size_t round_size(size_t n)
{
    return n < 512 ? 512 : (n + 511) / 512 * 512;
}

Block *DeviceCachingAllocator::new_segment(size_t bytes, bool small)
{
    void *p = nullptr;
    if (!strcmp(mode, "expandable")) {
        if (!(p = map_segment(bytes)))
            return nullptr;
    } else if (cudaMalloc(&p, bytes) != cudaSuccess) {
        return nullptr;
    }
    Block *b = new Block{p, bytes, 0, false, small, nullptr, nullptr};
    segments.push_back(b);
    return b;
}

Block *DeviceCachingAllocator::malloc(size_t request)
{
    size_t size = round_size(request);
    bool small = size <= (1u << 20);
    Block *best = nullptr;
    for (Block *b : free_blocks)
        if (b->small == small && b->size >= size) {
            best = b;
            break;
        }
    if (best) {
        free_blocks.erase(best);
    } else {
        size_t seg = small ? (2u << 20) : (size + (2u << 20) - 1) / (2u << 20) * (2u << 20);
        best = new_segment(seg, small);
        if (!best)
            return nullptr;
    }
    if (best->size - size >= 512) { /* split: the rest stays cached */
        Block *rest = new Block{static_cast<char *>(best->ptr) + size, best->size - size, 0, false,
                                small, best, best->next};
        if (best->next)
            best->next->prev = rest;
        best->next = rest;
        best->size = size;
        free_blocks.insert(rest);
    }
    best->allocated = true;
    best->requested = request;
    allocated_blocks[best->ptr] = best;
    return best;
}

void DeviceCachingAllocator::free(void *ptr)
{
    auto it = allocated_blocks.find(ptr);
    if (it == allocated_blocks.end())
        return;
    Block *b = it->second;
    allocated_blocks.erase(it);
    b->allocated = false;
    b->requested = 0;
    /* merge with free neighbours inside the segment */
    if (b->next && !b->next->allocated) {
        Block *n = b->next;
        free_blocks.erase(n);
        b->size += n->size;
        b->next = n->next;
        if (n->next)
            n->next->prev = b;
        delete n;
    }
    if (b->prev && !b->prev->allocated) {
        Block *p = b->prev;
        free_blocks.erase(p);
        p->size += b->size;
        p->next = b->next;
        if (b->next)
            b->next->prev = p;
        delete b;
        b = p;
    }
    free_blocks.insert(b);
}

namespace CudaMallocAsync {

/* backend:cudaMallocAsync: the live pointers and their sizes */
static std::map<void *, size_t> *ptr_info;

NOINLINE void *malloc(size_t n)
{
    void *p = nullptr;
    if (cudaMallocAsync(&p, n, 0) != cudaSuccess)
        return nullptr;
    if (!ptr_info)
        ptr_info = new std::map<void *, size_t>();
    (*ptr_info)[p] = n;
    return p;
}

NOINLINE void free(void *p)
{
    if (ptr_info && ptr_info->erase(p))
        cudaFreeAsync(p, 0);
}

} // namespace CudaMallocAsync

NOINLINE void *raw_alloc(size_t n)
{
    if (!mode)
        mode = getenv("TOY_MODE") ? getenv("TOY_MODE") : "";
    if (!strcmp(mode, "async"))
        return CudaMallocAsync::malloc(n);
    if (!the_allocator)
        the_allocator = new DeviceCachingAllocator();
    Block *b = the_allocator->malloc(n);
    return b ? b->ptr : nullptr;
}

NOINLINE void raw_delete(void *p)
{
    if (mode && !strcmp(mode, "async"))
        CudaMallocAsync::free(p);
    else if (the_allocator)
        the_allocator->free(p);
}

} // namespace CUDACachingAllocator
} // namespace cuda

struct StorageImpl {
    void *data;
    size_t nbytes;
    long refcount;
};

} // namespace c10

using namespace c10;

/* What the test's Python side turns into torch.cuda.memory._snapshot(). */
struct toy_block { uint64_t seg, addr, size, requested; int32_t allocated, small; };

extern "C" {

NOINLINE void *toy_tensor_new(size_t nbytes)
{
    void *data = cuda::CUDACachingAllocator::raw_alloc(nbytes);
    if (!data)
        return nullptr;
    return new StorageImpl{data, nbytes, 1};
}

void *toy_tensor_data(void *storage)
{
    return static_cast<StorageImpl *>(storage)->data;
}

/* The tensor's last reference goes: storage deleted, block back to the cache. */
void toy_tensor_free(void *storage)
{
    StorageImpl *s = static_cast<StorageImpl *>(storage);
    cuda::CUDACachingAllocator::raw_delete(s->data);
    delete s;
}

/* The planted bug: the storage goes, its block is never given back. */
void toy_tensor_drop_storage(void *storage)
{
    delete static_cast<StorageImpl *>(storage);
}

/* Every block of every segment, in address order per segment; returns the
 * number written (at most max). */
size_t toy_blocks(toy_block *out, size_t max)
{
    size_t n = 0;
    if (!cuda::CUDACachingAllocator::the_allocator)
        return 0;
    for (auto *seg : cuda::CUDACachingAllocator::the_allocator->segments)
        for (auto *b = seg; b && n < max; b = b->next)
            out[n++] = toy_block{reinterpret_cast<uint64_t>(seg->ptr),
                                 reinterpret_cast<uint64_t>(b->ptr), b->size, b->requested,
                                 b->allocated, b->small};
    return n;
}

} // extern "C"
