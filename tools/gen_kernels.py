#!/usr/bin/env python3
"""Makes the cubins the CUDA engine embeds, from crates/pdlaunch-kv/kernels/kv_gather.cu, with NVRTC
and no GPU: one for sm_90 (Hopper) and one for sm_100 (Blackwell), and a manifest naming the NVRTC
that made them, the options, the source's fingerprint and each cubin's.

    eval "$(scripts/setup/cuda-tools.sh)"       # a venv with the pinned nvidia-cuda-nvrtc-cu12
    "$PDLAUNCH_CUDA_PY" tools/gen_kernels.py            # writes the cubins and the manifest
    "$PDLAUNCH_CUDA_PY" tools/gen_kernels.py --check    # regenerates in memory, compares, exit 1 if stale

The embedded PTX (kv_gather.ptx, the fallback for every other GPU) is made by
crates/pdlaunch-kv/kernels/gen_ptx.py with CUDA 11.8's NVRTC, whose older PTX ISA more drivers accept.
"""
import argparse
import ctypes
import glob
import os
import sys
import sysconfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = os.path.join(ROOT, "crates", "pdlaunch-kv", "kernels")
SOURCE = os.path.join(KERNELS, "kv_gather.cu")
MANIFEST = os.path.join(KERNELS, "kv_gather.cubins")
# The architectures embedded as cubins: the GPUs SGLang's PD deployments run on.
ARCHS = ["sm_90", "sm_100"]
OPTIONS = ["--gpu-architecture={arch}", "--std=c++17"]
# The NVRTC the embedded cubins were made with; scripts/setup/cuda-tools.sh pins the same.
NVRTC_VERSION = (12, 9)


def fnv1a64(data):
    """FNV-1a, 64 bits: the fingerprint the CUDA engine's tests recompute."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def load_nvrtc():
    site = sysconfig.get_paths()["purelib"]
    libs = sorted(
        l for l in glob.glob(os.path.join(site, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*")) if "builtins" not in l
    )
    if not libs:
        sys.exit(
            "gen_kernels: libnvrtc not found under %s; run this with the python of scripts/setup/cuda-tools.sh "
            "($PDLAUNCH_CUDA_PY)" % site
        )
    nvrtc = ctypes.CDLL(libs[0])
    major, minor = ctypes.c_int(), ctypes.c_int()
    check(nvrtc, nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    if (major.value, minor.value) != NVRTC_VERSION:
        sys.exit(
            "gen_kernels: %s is NVRTC %d.%d; the embedded cubins are made with %d.%d (scripts/setup/cuda-tools.sh)"
            % (libs[0], major.value, minor.value, *NVRTC_VERSION)
        )
    return nvrtc, "%d.%d" % (major.value, minor.value)


def check(nvrtc, rc, what):
    if rc != 0:
        nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
        sys.exit("gen_kernels: %s failed: %s" % (what, nvrtc.nvrtcGetErrorString(rc).decode()))


def compile_cubin(nvrtc, src, arch):
    prog = ctypes.c_void_p()
    check(nvrtc, nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src, b"kv_gather.cu", 0, None, None), "nvrtcCreateProgram")
    opts = [o.format(arch=arch).encode() for o in OPTIONS]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit("gen_kernels: kv_gather.cu does not compile for %s:\n%s" % (arch, log.value.decode()))
    check(nvrtc, nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size)), "nvrtcGetCUBINSize")
    cubin = ctypes.create_string_buffer(size.value)
    check(nvrtc, nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin.raw


def cubin_path(arch):
    return os.path.join(KERNELS, "kv_gather.%s.cubin" % arch)


def generate():
    """The cubins and the manifest, as {path: bytes}."""
    nvrtc, version = load_nvrtc()
    src = open(SOURCE, "rb").read()
    out = {}
    lines = [
        "# Made by tools/gen_kernels.py from kv_gather.cu; do not edit. One line per cubin:",
        "# arch, bytes, FNV-1a 64 of the cubin.",
        "nvrtc %s" % version,
        "options %s" % " ".join(OPTIONS),
        "source %016x" % fnv1a64(src),
    ]
    for arch in ARCHS:
        cubin = compile_cubin(nvrtc, src, arch)
        out[cubin_path(arch)] = cubin
        lines.append("cubin %s %d %016x" % (arch, len(cubin), fnv1a64(cubin)))
    out[MANIFEST] = ("\n".join(lines) + "\n").encode()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and fail if the files differ")
    args = ap.parse_args()
    files = generate()
    if args.check:
        stale = []
        for path, data in files.items():
            have = open(path, "rb").read() if os.path.exists(path) else None
            if have != data:
                stale.append(os.path.relpath(path, ROOT) + (" (missing)" if have is None else ""))
        if stale:
            print("gen_kernels: stale, run tools/gen_kernels.py and commit: " + ", ".join(stale), file=sys.stderr)
            return 1
        print("gen_kernels: %d cubins are current" % len(ARCHS))
        return 0
    for path, data in files.items():
        with open(path, "wb") as f:
            f.write(data)
        print("wrote %s (%d bytes)" % (os.path.relpath(path, ROOT), len(data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
