// The gather kernel of pdlaunch's KV smoke test: one launch executes a whole descriptor list
// (what sgl-kernel's kvcacheio kernels and SGLang's staging gather do), one warp per work item.
// The host splits long descriptors into items of at most 16 KiB so that every warp gets a
// similar share. 16-byte copies when source, destination and length allow, with four loads in
// flight per lane; 8-byte and byte loops otherwise.
//
// Compiled ahead of time, never on the user's machine: kv_gather.sm_90.cubin and
// kv_gather.sm_100.cubin (tools/gen_kernels.py, NVRTC 12.9) are loaded on GPUs of those
// architectures; kv_gather.ptx (gen_ptx.py, NVRTC 11.8, compute_70) on every other GPU, where the
// driver compiles it.

struct KvCopy {
    unsigned long long src;
    unsigned long long dst;
    unsigned long long len;
    unsigned long long pad;
};

extern "C" __global__ void kv_gather(const KvCopy* __restrict__ items, unsigned long long count)
{
    const unsigned int lane = threadIdx.x & 31u;
    unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const unsigned long long warps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
    for (; warp < count; warp += warps) {
        const KvCopy c = items[warp];
        const unsigned long long bits = c.src | c.dst | c.len;
        if ((bits & 15ull) == 0) {
            const uint4* s = (const uint4*)c.src;
            uint4* t = (uint4*)c.dst;
            const unsigned long long n = c.len >> 4;
            unsigned long long i = lane;
            for (; i + 96 < n; i += 128) {
                const uint4 a = s[i];
                const uint4 b = s[i + 32];
                const uint4 d = s[i + 64];
                const uint4 e = s[i + 96];
                t[i] = a;
                t[i + 32] = b;
                t[i + 64] = d;
                t[i + 96] = e;
            }
            for (; i < n; i += 32) {
                t[i] = s[i];
            }
        } else if ((bits & 7ull) == 0) {
            const unsigned long long* s = (const unsigned long long*)c.src;
            unsigned long long* t = (unsigned long long*)c.dst;
            const unsigned long long n = c.len >> 3;
            for (unsigned long long i = lane; i < n; i += 32) {
                t[i] = s[i];
            }
        } else {
            const unsigned char* s = (const unsigned char*)c.src;
            unsigned char* t = (unsigned char*)c.dst;
            for (unsigned long long i = lane; i < c.len; i += 32) {
                t[i] = s[i];
            }
        }
    }
}
