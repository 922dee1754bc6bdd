#!/usr/bin/env python3
"""Builds the payloads that the stand-in SGLang servers of `pdlaunch probe`'s tests answer with.

Every `/server_info` document is SGLang 0.5.23's own: this script asks the installed `sglang`
package for it, one fresh interpreter per server, the way `sglang serve` builds it:

    server_args = prepare_server_args(argv)       # its argparse, --config merging, launch_command
    server_args.resolve_once()                    # its resolution pipeline (page-size snaps, dtypes)
    build_server_info(server_args, scheduler_info) + the fields http_server.server_info() adds

and every bootstrap `/route` answer (`prefill_dp_rank=-1&...`) is `dataclasses.asdict` of SGLang's
own `PrefillServerInfo` (disaggregation/common/conn.py), filled the way its bootstrap server fills
it from the ranks' registrations (`_handle_route_put`, `_handle_route_get`): the attention TP, CP,
DP and PP sizes, the resolved page size and KV-cache dtype, the load-balance method, the HTTP port.

What is not SGLang's:
- torch and the GPU kernels' packages are not installed: a stand-in module (`_install_stubs`)
  answers for them, and tells SGLang's platform detection that the machine has eight H200s
  (SM 9.0, 141 GiB), or B200s (SM 10.0) for a server given `gpu: b200`. Resolution reads the GPU
  through torch.cuda, so a server's GPU decides what SGLang resolves, as on a real machine.
- the model is read from a Hugging Face cache made here from the repository's copies of the
  checkpoints' `config.json` (tests/fixtures/models), with HF_HUB_OFFLINE=1: `model_path`
  is the Hugging Face id, as in a real deployment.
- the scheduler's live state (`max_total_num_tokens`, `max_req_input_len`, `startup_time`,
  `internal_states`) comes from a running scheduler after it profiled the GPU's memory; those
  fields hold fixed numbers.
- the case `release` has one decode whose `version` is rewritten to 0.5.19, the release before
  it that pdlaunch knows: only one SGLang release is installed here. Its stand-in answers only
  the deprecated `/get_server_info`, as older releases do.
- the `hostile` documents are edited copies of the clean prefill's, written to break readers.

Run (about 15 s a server; rewrites tests/fixtures/probe/):

    python3 -m venv /work/venv-sglang
    /work/venv-sglang/bin/pip install --no-deps sglang==0.5.23
    /work/venv-sglang/bin/pip install msgspec pyyaml numpy orjson psutil pybase64 requests \
        packaging typing_extensions pydantic_core tqdm dill gguf transformers==5.19.0
    /work/venv-sglang/bin/python tools/gen_probe_fixtures.py
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "probe"
MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b-instruct",
    "deepseek-ai/DeepSeek-V3.2": "deepseek-v3.2",
}
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"
COMMON = ["--model-path", LLAMA, "--page-size", "16", "--disaggregation-transfer-backend", "mooncake",
          "--host", "0.0.0.0"]


def prefill(port, *extra, model=None):
    args = COMMON if model is None else ["--model-path", model] + COMMON[2:]
    return args + ["--disaggregation-mode", "prefill", "--port", str(port),
                   "--disaggregation-bootstrap-port", str(port + 1000), *extra]


def decode(port, *extra, model=None):
    args = COMMON if model is None else ["--model-path", model] + COMMON[2:]
    return args + ["--disaggregation-mode", "decode", "--port", str(port), "--base-gpu-id", "4", *extra]


def with_page(argv, page):
    argv = list(argv)
    argv[argv.index("--page-size") + 1] = page
    return argv


CLEAN = {"p0": prefill(30000), "p1": prefill(30010), "d0": decode(30001), "d1": decode(30011)}
DSV32 = "deepseek-ai/DeepSeek-V3.2"
# Each case: server name -> (argv, gpu). The same argv on both sides of `dtype`: only resolution
# on different GPUs (SM 10.0 against SM 9.0) tells the two KV-cache dtypes apart.
CASES = {
    "clean": {n: (a, "h200") for n, a in CLEAN.items()},
    "page-size": {**{n: (a, "h200") for n, a in CLEAN.items()}, "d1": (with_page(CLEAN["d1"], "1"), "h200")},
    "release": {n: (a, "h200") for n, a in CLEAN.items()},
    "dtype": {
        "p0": (prefill(30000, "--tp-size", "8", model=DSV32), "b200"),
        "d0": (decode(30001, "--tp-size", "8", model=DSV32), "h200"),
    },
}


def _install_stubs(gpu):
    """Stand-ins for torch and the kernel packages, with the accelerator `gpu` ("h200"/"b200")."""
    import abc, importlib, importlib.abc, importlib.machinery, sys, types

    STUBBED = ("tvm_ffi", "torch", "triton", "sgl_kernel", "flashinfer", "vllm", "cuda", "pynvml",
               "PIL", "zmq", "aiohttp", "fastapi", "uvicorn",
               "openai", "tiktoken", "sentencepiece", "numba", "cv2", "decord", "soundfile", "einops", "pydantic",
               "starlette", "prometheus_client", "setproctitle", "xgrammar", "outlines", "llguidance",
               "partial_json_parser", "modelscope", "compressed_tensors", "datasets", "IPython", "blobfile",
               "interegular", "uvloop", "hf_transfer", "grpc", "google", "scipy", "pandas", "matplotlib",
               "peft", "timm", "torchvision", "torchaudio", "deep_gemm", "mooncake", "nixl",
               "xxhash", "zstandard", "cuda_python", "nvtx", "sympy")
    _PROBED = {"__path__", "__file__", "__spec__", "__loader__", "__wrapped__", "__signature__", "__origin__",
               "__args__", "__parameters__", "__mro_entries__", "__set_name__", "__get__", "__set__",
               "__dataclass_fields__", "__fspath__", "__instancecheck__", "__subclasscheck__",
               "__class_getitem__", "__annotations__", "__qualname__", "__all__", "__abstractmethods__",
               "__isabstractmethod__", "__copy__", "__deepcopy__", "__reduce_ex__", "__getstate__",
               "__setstate__", "__await__", "__aiter__", "__len__", "__index__", "__int__", "__float__",
               "__enter__", "__exit__"}


    class _Meta(abc.ABCMeta):
        def __getattr__(cls, name):
            if name in _PROBED:
                raise AttributeError(name)
            return _Meta(name, (_Stub,), {})

        def __getitem__(cls, k):
            return cls

        def __or__(cls, o):
            return cls

        def __ror__(cls, o):
            return cls

        def __iter__(cls):
            return iter(())

        def __int__(cls):
            return 0

        def __index__(cls):
            return 0

        def __float__(cls):
            return 0.0

        def __bool__(cls):
            return True


    class _Stub(metaclass=_Meta):
        def __init__(self, *a, **k):
            pass

        def __call__(self, *a, **k):
            if len(a) == 1 and callable(a[0]) and not k:
                return a[0]
            return _Stub()

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            if name == "name":
                return "stub"
            return _Stub()

        def __bool__(self):
            return False

        def __iter__(self):
            return iter(())

        def __len__(self):
            return 0

        def __int__(self):
            return 0

        def __index__(self):
            return 0

        def __float__(self):
            return 0.0

        def __hash__(self):
            return id(self)

        def __eq__(self, o):
            return self is o

        def __lt__(self, o):
            return False

        __gt__ = __le__ = __ge__ = __lt__

        def __getitem__(self, k):
            return _Stub()

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False


    for _op in ("neg", "pos", "abs", "invert"):
        setattr(_Stub, f"__{_op}__", lambda self: _Stub())
    for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift", "matmul"):
        setattr(_Stub, f"__{_op}__", lambda self, o: _Stub())
        setattr(_Stub, f"__r{_op}__", lambda self, o: _Stub())

    ABSENT = {"npu", "hpu", "xpu", "musa", "mlu", "mps"}


    class _Mod(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__") or name in ABSENT:
                raise AttributeError(name)
            return _Meta(name, (_Stub,), {})


    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, fullname, path, target=None):
            if fullname.split(".")[0] in STUBBED:
                return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

        def create_module(self, spec):
            m = _Mod(spec.name)
            m.__path__ = []
            m.__version__ = "2.9.0"
            return m

        def exec_module(self, m):
            pass


    sys.meta_path.insert(0, _Finder())


    import torch

    cuda = importlib.import_module("torch.cuda")
    torch.cuda = cuda
    major, name, mib = {"h200": (9, "NVIDIA H200", 143771), "b200": (10, "NVIDIA B200", 183359)}[gpu]
    props = types.SimpleNamespace(total_memory=mib << 20, name=name, major=major, minor=0,
                                  multi_processor_count=132 if major == 9 else 148)
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 8
    cuda.get_device_name = lambda *a: name
    cuda.get_device_capability = lambda *a: (major, 0)
    cuda.current_device = lambda: 0
    cuda.get_device_properties = lambda *a: props
    cuda.mem_get_info = lambda *a: (props.total_memory, props.total_memory)
    ver = importlib.import_module("torch.version")
    torch.version = ver
    ver.cuda = "12.8"
    ver.hip = None
    ver.musa = None


def one_server(argv, gpu):
    """SGLang's /server_info and, for a prefill, its bootstrap /route answer, for `argv` on `gpu`."""
    _install_stubs(gpu)
    from sglang import __version__
    from sglang.srt.disaggregation.common.conn import PrefillServerInfo
    from sglang.srt.server_args import prepare_server_args
    from sglang.srt.utils.common import build_server_info

    server_args = prepare_server_args(argv)
    server_args.resolve_once()
    scheduler_info = {"status": "ready", "max_total_num_tokens": 1048576, "max_req_input_len": 131066,
                      "startup_time": 1764756000.0, "hicache_object_layout": None}
    info = {
        **build_server_info(server_args, scheduler_info),
        "startup_time": 1764756000.0,
        "internal_states": [{"last_gen_throughput": 0.0, "memory_usage": {}}],
        "version": __version__,
        "frontend": "python",
    }
    info = json.loads(json.dumps(info, default=str))
    route = None
    if info["disaggregation_mode"] == "prefill":
        attn_dp = max(1, info.get("attn_dp_size") or 1)
        attn_cp = max(1, info.get("attn_cp_size") or 1)
        system_dp = info["dp_size"] if attn_dp == 1 else 1
        bootstrap = PrefillServerInfo(
            attn_tp_size=info["tp_size"] // attn_dp // attn_cp,
            attn_cp_size=attn_cp,
            dp_size=attn_dp if system_dp == 1 else system_dp,
            pp_size=info["pp_size"],
            page_size=info["page_size"],
            kv_cache_dtype=info["kv_cache_dtype"],
            follow_bootstrap_room=info.get("load_balance_method", "follow_bootstrap_room") == "follow_bootstrap_room",
            prefill_http_port=info["port"],
        )
        route = dataclasses.asdict(bootstrap)
        for key in ("dsv41_spec_layout", "kv_layout"):
            if route.get(key) is None:
                route.pop(key)
    return {"server_info": info, "route": route}


def hf_cache(at):
    for repo, folder in MODELS.items():
        snap = at / "hub" / f"models--{repo.replace('/', '--')}"
        (snap / "refs").mkdir(parents=True)
        (snap / "refs" / "main").write_text("fixture")
        (snap / "snapshots" / "fixture").mkdir(parents=True)
        shutil.copy(ROOT / "tests" / "fixtures" / "models" / folder / "config.json", snap / "snapshots" / "fixture")


def write(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one_server(json.loads(sys.argv[3]), sys.argv[2])))
        return
    with tempfile.TemporaryDirectory() as tmp:
        hf_cache(Path(tmp))
        env = {**os.environ, "HF_HOME": tmp, "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin",
               "SGLANG_LOG_LEVEL": "error"}
        made = {}
        if OUT.exists():
            shutil.rmtree(OUT)
        for case, servers in CASES.items():
            for name, (argv, gpu) in servers.items():
                key = (json.dumps(argv), gpu)
                if key not in made:
                    run = subprocess.run([sys.executable, __file__, "--one", gpu, json.dumps(argv)], env=env,
                                         capture_output=True, text=True, timeout=600)
                    if run.returncode != 0:
                        sys.exit(f"{case}/{name}: SGLang refused {argv}:\n{run.stderr[-3000:]}")
                    made[key] = json.loads(run.stdout.strip().splitlines()[-1])
                    print(f"{case}/{name}: {gpu} {' '.join(argv)}", file=sys.stderr)
                got = json.loads(json.dumps(made[key]))
                if case == "release" and name == "d1":
                    got["server_info"]["version"] = "0.5.19"
                write(OUT / case / f"{name}.server_info.json", got["server_info"])
                if got["route"] is not None:
                    write(OUT / case / f"{name}.route.json", got["route"])
    clean = json.loads((OUT / "clean" / "p0.server_info.json").read_text())
    hostile = OUT / "hostile"
    wrong = dict(clean, page_size="sixteen", tp_size=-3, kv_cache_dtype=["auto"], disaggregation_mode=7,
                 version={"major": 0}, launch_command=42)
    write(hostile / "wrong-types.server_info.json", wrong)
    write(hostile / "not-an-object.server_info.json", [clean])
    write(hostile / "route-wrong-types.route.json",
          {"attn_tp_size": "one", "page_size": None, "kv_cache_dtype": 16, "dp_size": 1.5})
    (hostile / "truncated.server_info.json").write_text(json.dumps(clean)[:4000])


if __name__ == "__main__":
    main()
