"""The Mooncake side of a pdlaunch transfer agent.

Mooncake's transfer engine has no C API; it is the Python extension SGLang imports
(`mooncake.engine.TransferEngine`). pdlaunch's agent (Rust) starts this script with the Python
of the user's own environment and drives it with one JSON request per line on stdin; each gets
one JSON reply on stdout. The pools are shared-memory files the Rust side created and filled;
this process maps them and registers its mapping, as SGLang registers its KV tensors.

Requests: init {host, protocol, device} -> {session}; map {pools: [[path, len]]} -> {bases};
register {regions: [[addr, len]]}; write {session, descs: [[src, dst, len]], batch} ->
{seconds, batches}; quit.
"""

import ctypes
import json
import mmap
import os
import sys
import time


def reply(**kw):
    sys.stdout.write(json.dumps(kw) + "\n")
    sys.stdout.flush()


def main():
    try:
        from mooncake.engine import TransferEngine
    except Exception as e:  # ImportError, or a missing libibverbs at load time
        reply(ok=False, kind="environment", error=f"cannot import mooncake.engine with {sys.executable}: {e}")
        return 2
    engine = None
    maps = []
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
                bases = []
                for path, length in req["pools"]:
                    fd = os.open(path, os.O_RDWR)
                    try:
                        m = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
                    finally:
                        os.close(fd)
                    buf = (ctypes.c_char * length).from_buffer(m)
                    bases.append(ctypes.addressof(buf))
                    maps.append((m, buf))
                reply(ok=True, bases=bases)
            elif op == "register":
                ptrs = [r[0] for r in req["regions"]]
                lens = [r[1] for r in req["regions"]]
                ret = engine.batch_register_memory(ptrs, lens)
                if ret != 0:
                    reply(ok=False, kind="transfer", error=f"batch_register_memory of {len(ptrs)} region(s) returned {ret}")
                    continue
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
                        raise RuntimeError(
                            f"batch_transfer_sync_write to {session} of {len(chunk)} descriptor(s) returned {ret}"
                        )
                    batches += 1
                reply(ok=True, seconds=time.perf_counter() - t, batches=batches)
            elif op == "quit":
                reply(ok=True)
                return 0
            else:
                reply(ok=False, kind="transfer", error=f"unknown request {op!r}")
        except Exception as e:
            reply(ok=False, kind="transfer", error=str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
