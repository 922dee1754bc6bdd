"""The Mooncake side of a pdlaunch transfer agent.

Mooncake's transfer engine has no C API; it is the Python extension SGLang imports
(`mooncake.engine.TransferEngine`). pdlaunch's agent (Rust) starts this script with the Python
of the user's own environment and drives it with one JSON request per line on stdin; each gets
one JSON reply on stdout. The pools are shared-memory files the Rust side created and filled;
this process maps them and registers its mapping, as SGLang registers its KV tensors.

With GPU pools (`map` with memory "vram") the memory Mooncake registers must belong to the
process that registers it, as in SGLang, where the KV tensors live in the process that calls
`register_memory`: this process allocates each pool on the GPU itself, through the CUDA driver
API (ctypes on libcuda.so.1, the device's primary context, which the CUDA runtime inside
Mooncake's CUDA build shares), copies the staging bytes of the shared-memory file in, and
returns the device addresses; Mooncake's CUDA build sees that they are device memory.
`readback` copies the device pools back into their shared-memory files before the Rust side
verifies them. Mooncake's non-CUDA wheel registers a device address without complaint but moves
it with plain socket calls, which fail on it with "Bad address", so GPU pools are refused with
that wheel, naming the CUDA wheel's install line.

Requests: init {host, protocol, device} -> {session}; map {pools: [[path, len]], memory, gpu}
-> {bases}; register {regions: [[addr, len]]}; write {session, descs: [[src, dst, len]], batch}
-> {seconds, batches}; readback {lens}; quit. A failed request answers {ok: false, kind, error}:
kind "environment" (Mooncake cannot be imported or started), "device" (the driver, the GPU or
the wheel cannot hold GPU pools; the message says what to do) or "transfer".
"""

import ctypes
import json
import mmap
import os
import sys
import time

CUDA_WHEEL = "pip install mooncake-transfer-engine==0.3.13.post1"


class DeviceError(Exception):
    """GPU pools cannot be had here; the message names the call, the error and the way out."""


def reply(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def mooncake_wheels():
    """The installed distributions that provide the `mooncake` package, e.g.
    ["mooncake-transfer-engine-non-cuda"]; empty for a build from source."""
    try:
        from importlib.metadata import packages_distributions

        return sorted(set(packages_distributions().get("mooncake", [])))
    except Exception:
        return []


def non_cuda_wheel():
    """The non-CUDA wheel's name when it is the only one providing `mooncake`, else None."""
    names = mooncake_wheels()
    plain = [n for n in names if n.lower().replace("_", "-").endswith("-non-cuda")]
    return plain[0] if plain and len(plain) == len(names) else None


class Driver:
    """GPU `gpu` through the CUDA driver API, on its primary context."""

    def __init__(self, gpu):
        self.gpu = gpu
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DeviceError(
                f"cannot load libcuda.so.1 ({e}): --backend cuda needs the CUDA driver and a GPU on this host; use --backend cpu"
            )
        u64, size, ptr, cint = ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
        sig = {
            "cuInit": [ctypes.c_uint],
            "cuDeviceGetCount": [ctypes.POINTER(cint)],
            "cuDeviceGet": [ctypes.POINTER(cint), cint],
            "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ptr), cint],
            "cuDevicePrimaryCtxRelease_v2": [cint],
            "cuCtxSetCurrent": [ptr],
            "cuCtxSynchronize": [],
            "cuMemAlloc_v2": [ctypes.POINTER(u64), size],
            "cuMemFree_v2": [u64],
            "cuMemcpyHtoD_v2": [u64, ptr, size],
            "cuMemcpyDtoH_v2": [ptr, u64, size],
            "cuGetErrorString": [cint, ctypes.POINTER(ctypes.c_char_p)],
        }
        for name, args in sig.items():
            try:
                f = getattr(lib, name)
            except AttributeError:
                raise DeviceError(f"libcuda.so.1 has no {name}: the CUDA driver is too old; update it, or use --backend cpu")
            f.argtypes, f.restype = args, cint
        self.lib = lib
        self.device = None
        self.ctx = None
        way_out = "--backend cuda needs a usable GPU; use --backend cpu"
        self.call("cuInit", 0, fix=way_out)
        count = cint()
        self.call("cuDeviceGetCount", ctypes.byref(count), fix=way_out)
        if gpu >= count.value:
            raise DeviceError(
                f"GPU {gpu} was asked for, the driver shows {count.value}: give --gpus indices below {count.value}, or use --backend cpu"
            )
        dev = cint()
        self.call("cuDeviceGet", ctypes.byref(dev), gpu, fix=way_out)
        ctx = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev, fix=way_out)
        self.device, self.ctx = dev, ctx
        self.call("cuCtxSetCurrent", ctx, fix=way_out)

    def error(self, code):
        s = ctypes.c_char_p()
        if self.lib.cuGetErrorString(code, ctypes.byref(s)) == 0 and s.value:
            return f"{s.value.decode(errors='replace')} (CUresult {code})"
        return f"CUresult {code}"

    def call(self, name, *args, fix=None):
        ret = getattr(self.lib, name)(*args)
        if ret != 0:
            msg = f"{name} on GPU {self.gpu} failed: {self.error(ret)}"
            raise DeviceError(f"{msg}; {fix}" if fix else msg)

    def alloc(self, length):
        p = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(p), length, fix=f"{length} bytes do not fit: use fewer --tokens")
        return p.value

    def to_device(self, dst, src, length):
        self.call("cuMemcpyHtoD_v2", dst, src, length)

    def to_host(self, dst, src, length):
        self.call("cuMemcpyDtoH_v2", dst, src, length)

    def synchronize(self):
        self.call("cuCtxSynchronize")

    def free(self, p):
        self.call("cuMemFree_v2", p)

    def close(self):
        if self.device is not None:
            self.lib.cuDevicePrimaryCtxRelease_v2(self.device)
            self.device = None


class Pools:
    """The mapped shared-memory files and, with GPU pools, one device allocation each."""

    def __init__(self):
        self.maps = []  # (mmap, ctypes buffer, device address or None, length)
        self.driver = None
        self.registered = []

    def map(self, pools, memory, gpu):
        if memory == "vram":
            self.driver = Driver(gpu)
            wheel = non_cuda_wheel()
            if wheel:
                raise DeviceError(
                    f"{sys.executable} has Mooncake's non-CUDA wheel ({wheel}), which registers GPU memory but moves it with plain socket calls that fail on it (Bad address): install the CUDA wheel there, {CUDA_WHEEL}, or use --backend cpu"
                )
        bases = []
        for path, length in pools:
            fd = os.open(path, os.O_RDWR)
            try:
                m = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(fd)
            buf = (ctypes.c_char * length).from_buffer(m)
            host = ctypes.addressof(buf)
            dev = None
            if self.driver:
                dev = self.driver.alloc(length)
                self.maps.append((m, buf, dev, length))
                self.driver.to_device(dev, host, length)
            else:
                self.maps.append((m, buf, None, length))
            bases.append(dev if dev is not None else host)
        if self.driver:
            # A copy from pageable memory may return before its DMA is done.
            self.driver.synchronize()
        return bases

    def readback(self, lens):
        if not self.driver:
            return
        self.driver.synchronize()
        for (_m, buf, dev, length), n in zip(self.maps, lens):
            self.driver.to_host(ctypes.addressof(buf), dev, min(n, length))

    def close(self, engine):
        if engine is not None and self.registered:
            engine.batch_unregister_memory(self.registered)
        self.registered = []
        if self.driver:
            try:
                for _m, _buf, dev, _n in self.maps:
                    self.driver.free(dev)
            finally:
                self.driver.close()
        self.maps = []


def main():
    try:
        from mooncake.engine import TransferEngine
    except Exception as e:  # ImportError, or a missing libibverbs at load time
        reply(ok=False, kind="environment", error=f"cannot import mooncake.engine with {sys.executable}: {e}")
        return 2
    engine = None
    pools = Pools()
    try:
        for line in sys.stdin:
            req = json.loads(line)
            op = req["op"]
            try:
                if op == "init":
                    engine = TransferEngine()
                    # As SGLang's MooncakeTransferEngine.initialize.
                    ret = engine.initialize(req["host"], "P2PHANDSHAKE", req["protocol"], req["device"])
                    if ret != 0:
                        reply(
                            ok=False,
                            kind="environment",
                            error=f"TransferEngine.initialize({req['host']!r}, 'P2PHANDSHAKE', {req['protocol']!r}) returned {ret}",
                        )
                        continue
                    reply(ok=True, session=f"{req['host']}:{engine.get_rpc_port()}")
                elif op == "map":
                    bases = pools.map(req["pools"], req.get("memory", "dram"), int(req.get("gpu", 0)))
                    reply(ok=True, bases=bases)
                elif op == "register":
                    ptrs = [r[0] for r in req["regions"]]
                    lens = [r[1] for r in req["regions"]]
                    ret = engine.batch_register_memory(ptrs, lens)
                    if ret != 0:
                        reply(ok=False, kind="transfer", error=f"batch_register_memory of {len(ptrs)} region(s) returned {ret}")
                        continue
                    pools.registered = ptrs
                    reply(ok=True)
                elif op == "write":
                    descs = req["descs"]
                    batch = req["batch"]
                    session = req["session"]
                    batches = 0
                    t = time.perf_counter()
                    for i in range(0, len(descs), batch):
                        chunk = descs[i : i + batch]
                        ret = engine.batch_transfer_sync_write(
                            session, [d[0] for d in chunk], [d[1] for d in chunk], [d[2] for d in chunk]
                        )
                        if ret < 0:
                            hint = ""
                            if pools.driver:
                                # A build from source leaves no wheel name to refuse by.
                                hint = f"; with GPU pools, a Mooncake built without CUDA fails every write (its log says Bad address): install the CUDA wheel, {CUDA_WHEEL}"
                            raise RuntimeError(
                                f"batch_transfer_sync_write to {session} of {len(chunk)} descriptor(s) returned {ret}{hint}"
                            )
                        batches += 1
                    reply(ok=True, seconds=time.perf_counter() - t, batches=batches)
                elif op == "readback":
                    pools.readback(req["lens"])
                    reply(ok=True)
                elif op == "quit":
                    pools.close(engine)
                    reply(ok=True)
                    return 0
                else:
                    reply(ok=False, kind="transfer", error=f"unknown request {op!r}")
            except DeviceError as e:
                reply(ok=False, kind="device", error=str(e))
            except Exception as e:
                reply(ok=False, kind="transfer", error=str(e))
    finally:
        # Also when stdin closes without a quit: the device memory goes back.
        try:
            pools.close(engine)
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
