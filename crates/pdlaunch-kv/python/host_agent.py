"""pdlaunch's KV smoke-test agent for the deployment's own nodes.

One side of `pdlaunch smoke --across hosts`: started on a prefill or a decode node with the plan
pdlaunch made (`plan.json`), it moves KV pages with the deployment's layout through the library
SGLang itself uses there, the image's own NIXL (`nixl._api`) or Mooncake
(`mooncake.engine.TransferEngine`), and prints one report line for `pdlaunch smoke --report`.
Only the image is sure to be on those nodes, so this needs nothing but Python, numpy (both in
SGLang's images) and the library.

The plan is resolved by pdlaunch: per case (the clean one and the negative controls) the pools'
sizes, the regions each side registers (every layer buffer, as SGLang's KV managers register
them) and, per prefill-decode rank pair, SGLang's write descriptors (source rank and offset,
destination rank and offset, length). This program adds no layout knowledge of its own.

Every 8-byte word of a pool says where it belongs: word `i` of prefill rank `r` holds
`MAGIC ^ ((r + 1) << 48 | i)`, word `i` of decode rank `q` holds `MAGIC ^ ((DECODE_TAG + q) << 48 | i)`.
After the transfer the decode reads its pools back as runs (untouched, from prefill rank `r` word
`j` on, or garbage) and reports them; pdlaunch rebuilds from them the pools a local run would
have, with its own canaries in place of the pattern, and verifies those, so the verdict, table
and figures are the same as a local run's.

The sides meet on the prefill's bootstrap host:port (the deployment's): the decode connects and
sends its pools' addresses and its library identity (JSON lines), retrying until the timeout,
so a pass proves that the decode reaches that port.

Usage: python3 host_agent.py prefill|decode PLAN.json [--bootstrap HOST:PORT] [--gpu N] [--pair I]
Exit 0: the side completed; 1: the sides did not meet or the transfer failed; 2: the environment
or the plan cannot run it.
"""

import argparse
import base64
import fcntl
import hashlib
import json
import os
import socket
import struct
import sys
import time
import lzma

REPORT = "PDLAUNCH-SMOKE-REPORT "
MAGIC = 0x5044_4C41_554E_4348
DECODE_TAG = 0x8000
INDEX_BITS = 48
INDEX_MASK = (1 << INDEX_BITS) - 1


class Failure(Exception):
    """A reason to stop, with the exit status."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def log(msg):
    sys.stderr.write(f"pdlaunch agent: {msg}\n")
    sys.stderr.flush()


np = None  # numpy, imported in main() so that its absence is reported like any other


def unpack(text, columns):
    """A table the plan carries: per column the difference from the row before (wrapping), as
    little-endian u64s, xz, base64 (pdlaunch's `hosts::pack`)."""
    raw = lzma.decompress(base64.b64decode(text)) if text else b""
    d = np.frombuffer(raw, dtype="<u8").reshape(-1, columns)
    return np.cumsum(d, axis=0, dtype="<u8")  # wraps modulo 2^64, as the differences do


def pack(rows, columns):
    rows = np.ascontiguousarray(rows, dtype="<i8").reshape(-1, columns).view("<u8")
    d = rows.copy()
    d[1:] -= rows[:-1]
    return base64.b64encode(lzma.compress(d.tobytes(), preset=6)).decode()


# ---- what this node looks like -------------------------------------------------------------


def interface_of(address):
    """The network interface holding `address` (IPv4), if any."""
    try:
        names = [n for _, n in socket.if_nameindex()]
    except OSError:
        return None
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for name in names:
            try:
                req = struct.pack("256s", name.encode()[:15])
                got = socket.inet_ntoa(fcntl.ioctl(s.fileno(), 0x8915, req)[20:24])  # SIOCGIFADDR
            except OSError:
                continue
            if got == address:
                return name
    finally:
        s.close()
    return None


def ib_devices():
    """The RDMA devices this node shows, with their ports' state and link layer."""
    root = "/sys/class/infiniband"
    out = []
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return out
    for dev in names:
        ports = []
        try:
            for p in sorted(os.listdir(f"{root}/{dev}/ports")):
                read = lambda f: open(f"{root}/{dev}/ports/{p}/{f}").read().strip()
                try:
                    ports.append({"port": int(p), "state": read("state"), "link_layer": read("link_layer")})
                except OSError:
                    ports.append({"port": int(p)})
        except OSError:
            pass
        out.append({"name": dev, "ports": ports})
    return out


ENV_KEYS = ("UCX_TLS", "UCX_NET_DEVICES", "UCX_IB_GID_INDEX", "NCCL_IB_HCA", "MOONCAKE_PROTOCOL", "MC_FORCE_TCP", "MC_TCP_BIND_ADDRESS")


def network(local_address):
    return {
        "hostname": socket.gethostname(),
        "address": local_address,
        "interface": interface_of(local_address) if local_address else None,
        "ib_devices": ib_devices(),
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
    }


def ib_device_for(plan, role, gpu):
    """This side's IB devices as SGLang reads `--disaggregation-ib-device`: one list for every GPU,
    or a JSON mapping (inline or a file on this node) from GPU id to a list."""
    text = ((plan.get("ib_device") or {}).get(role) or "").strip()
    if not text:
        return ""
    if text.startswith("{") or text.endswith(".json"):
        try:
            mapping = json.load(open(text)) if text.endswith(".json") else json.loads(text)
        except (OSError, ValueError) as e:
            raise Failure(2, f"the deployment's ib_device {text!r} cannot be read here: {e}")
        text = str({str(k): v for k, v in mapping.items()}.get(str(gpu), ""))
        if not text:
            raise Failure(2, f"the deployment's ib_device mapping names no device for GPU {gpu}")
    return ",".join(d.strip() for d in text.split(",") if d.strip())


def check_devices(device):
    """Refuses IB device names this node does not have, before any library picks them."""
    wanted = [d for d in device.split(",") if d]
    for entry in os.environ.get("UCX_NET_DEVICES", "").split(","):
        dev = entry.split(":")[0].strip()
        if dev and dev != "all":
            wanted.append(dev)
    have = {d["name"] for d in ib_devices()}
    missing = [d for d in dict.fromkeys(wanted) if d not in have and not os.path.exists(f"/sys/class/net/{d}")]
    if missing:
        shown = ", ".join(sorted(have)) or "none"
        raise Failure(
            1,
            f"IB device {', '.join(missing)} is not on {socket.gethostname()} (it shows: {shown}); check the "
            "deployment's ib_device (--disaggregation-ib-device) and UCX_NET_DEVICES against `ibv_devinfo` on this node",
        )


# ---- pools ---------------------------------------------------------------------------------


class Pools:
    """One side's pools for one case: a buffer per rank, then the reference region."""

    def __init__(self, sizes, reference, tag, memory, gpu):
        self.host = []
        self.dev = []
        for k, n in enumerate(list(sizes) + [reference]):
            words = (n + 7) // 8
            a = np.empty(words, dtype="<u8")
            if k < len(sizes):
                a[:] = np.arange(words, dtype="<u8") | np.uint64((tag + k) << INDEX_BITS)
                a ^= np.uint64(MAGIC)
            else:
                a[:] = 0
            self.host.append(a)
        if memory == "vram":
            try:
                import torch
            except ImportError as e:
                raise Failure(2, f"GPU pools need torch in this Python ({e}); run with --backend cpu") from None
            if not torch.cuda.is_available() or gpu >= torch.cuda.device_count():
                raise Failure(2, f"GPU {gpu} is not usable here (torch sees {torch.cuda.device_count()}); use --backend cpu")
            self.dev = [torch.from_numpy(a.view(np.uint8)).to(f"cuda:{gpu}") for a in self.host]
            torch.cuda.synchronize(gpu)

    def addrs(self):
        if self.dev:
            return [t.data_ptr() for t in self.dev]
        return [a.ctypes.data for a in self.host]

    def words(self, k):
        if self.dev:
            return self.dev[k].cpu().numpy().view("<u8")
        return self.host[k]


def runs(words, rank, prefill_ranks, prefill_words):
    """The decode pool's words as runs [rank, word, count, kind, source rank, source word]:
    kind 0 untouched, 1 from the prefill, 2 garbage."""
    x = words ^ np.uint64(MAGIC)
    tag = (x >> np.uint64(INDEX_BITS)).astype(np.int64)
    idx = (x & np.uint64(INDEX_MASK)).astype(np.int64)
    j = np.arange(len(words), dtype=np.int64)
    src = tag - 1
    limit = np.asarray(prefill_words + [0], dtype=np.int64)
    from_prefill = (tag >= 1) & (tag <= prefill_ranks)
    from_prefill &= idx < limit[np.clip(src, 0, prefill_ranks)]
    untouched = (tag == DECODE_TAG + rank) & (idx == j)
    kind = np.where(untouched, 0, np.where(from_prefill, 1, 2))
    delta = np.where(kind == 1, idx - j, 0)
    srck = np.where(kind == 1, src, -1)
    if len(words) == 0:
        return np.zeros((0, 6), dtype=np.int64)
    cut = np.flatnonzero((kind[1:] != kind[:-1]) | (delta[1:] != delta[:-1]) | (srck[1:] != srck[:-1])) + 1
    starts = np.concatenate(([0], cut))
    counts = np.diff(np.concatenate((starts, [len(words)])))
    k = kind[starts]
    return np.stack(
        [np.full(len(starts), rank), starts, counts, k, srck[starts], np.where(k == 1, starts + delta[starts], 0)], axis=1
    )


# ---- the libraries -------------------------------------------------------------------------


def ucx_lanes(path):
    """The transports and devices UCX chose for remote writes to another process, from its
    protocol tables (`UCX_PROTO_INFO=y`), e.g. `tcp/eth0` or `rc_mlx5/mlx5_0:1`."""
    import re

    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return []
    lanes = []
    for k, line in enumerate(lines):
        if "remote memory write" not in line or k == 0 or " self " in lines[k - 1]:
            continue
        rules = 0  # the table's horizontal rules: under the title, under the header, at its end
        for row in lines[k + 1 : k + 40]:
            if "+-" in row:
                rules += 1
                if rules == 3:
                    break
                continue
            cells = [c.strip() for c in row.split("|")]
            if len(cells) >= 4 and ".." in cells[1]:
                for lane in re.findall(r"[a-z_0-9]+/[A-Za-z0-9_.:\-]+", cells[3]):
                    if lane not in lanes:
                        lanes.append(lane)
    return lanes


class Nixl:
    def __init__(self, name, memory, gpu):
        # UCX says which transport and device it picked for the writes in its protocol tables;
        # they go to a file of this agent's unless the environment asks otherwise.
        self.log = None
        if "UCX_PROTO_INFO" not in os.environ and "UCX_LOG_FILE" not in os.environ:
            import tempfile

            self.log = os.path.join(tempfile.mkdtemp(prefix="pdlaunch-ucx-"), "ucx.log")
            os.environ["UCX_PROTO_INFO"] = "y"
            os.environ["UCX_LOG_FILE"] = self.log
        try:
            from nixl._api import nixl_agent, nixl_agent_config
        except Exception as e:
            raise Failure(2, f"cannot import nixl._api with {sys.executable}: {e} (SGLang's NIXL backend needs it too)")
        self.agent = nixl_agent(name, nixl_agent_config(backends=["UCX"]))
        if "UCX" not in self.agent.backends:
            raise Failure(2, "NIXL has no UCX backend here (its plugin did not load; check NIXL_PLUGIN_DIR)")
        self.mem = "VRAM" if memory == "vram" else "DRAM"
        self.gpu = gpu if memory == "vram" else 0
        self.peer = None
        self.peer_gpu = 0
        self.reg = None
        self.seen = 0

    def lanes(self):
        return ucx_lanes(self.log) if self.log else []

    def describe(self):
        return f"NIXL agent (Python), UCX backend ({os.environ.get('UCX_TLS', 'UCX default transports')}), {self.mem}_SEG regions"

    def register(self, regions):
        rows = np.array([(a, n, self.gpu) for a, n in regions], dtype=np.uint64)
        if self.reg is not None:
            self.agent.deregister_memory(self.reg)
        self.reg = self.agent.register_memory(rows, self.mem)

    def identity(self):
        return {"name": self.agent.name, "metadata": base64.b64encode(self.agent.get_agent_metadata()).decode()}

    def connect(self, peer, gpu):
        if self.peer:
            self.agent.remove_remote_agent(self.peer)
        self.peer = self.agent.add_remote_agent(base64.b64decode(peer["metadata"]))
        self.peer_gpu = gpu if self.mem == "VRAM" else 0

    def write(self, descs, notify, deadline):
        src = self.agent.get_xfer_descs(np.stack([descs[:, 0], descs[:, 2], np.full(len(descs), self.gpu, np.uint64)], 1), self.mem)
        dst = self.agent.get_xfer_descs(
            np.stack([descs[:, 1], descs[:, 2], np.full(len(descs), self.peer_gpu, np.uint64)], 1), self.mem
        )
        t = time.perf_counter()
        h = self.agent.initialize_xfer("WRITE", src, dst, self.peer, notify.encode())
        state = self.agent.transfer(h)
        while state == "PROC":
            if time.monotonic() > deadline:
                raise Failure(1, f"NIXL WRITE of {len(descs)} descriptor(s) did not complete within the timeout")
            state = self.agent.check_xfer_state(h)
        seconds = time.perf_counter() - t
        self.agent.release_xfer_handle(h)
        if state != "DONE":
            raise Failure(1, f"NIXL WRITE of {len(descs)} descriptor(s) to {self.peer} failed ({state})")
        return seconds, 1, True

    def await_notifications(self, n, deadline):
        while self.seen < n:
            for msgs in self.agent.get_new_notifs().values():
                self.seen += len(msgs)
            if self.seen >= n:
                break
            if time.monotonic() > deadline:
                raise Failure(1, f"NIXL: {self.seen} of {n} notification(s) from the prefill arrived within the timeout")
            time.sleep(0.001)


class Mooncake:
    BATCH = 2048

    def __init__(self, host, protocol, device):
        try:
            from mooncake.engine import TransferEngine
        except Exception as e:
            raise Failure(2, f"cannot import mooncake.engine with {sys.executable}: {e} (SGLang's Mooncake backend needs it too)")
        self.engine = TransferEngine()
        self.protocol = protocol
        ret = self.engine.initialize(host, "P2PHANDSHAKE", protocol, device)
        if ret != 0:
            raise Failure(1, f"TransferEngine.initialize({host!r}, 'P2PHANDSHAKE', {protocol!r}, {device!r}) returned {ret}")
        self.session = f"{host}:{self.engine.get_rpc_port()}"
        self.peer = None
        self.regs = []

    def lanes(self):
        return []  # Mooncake says nothing of its choice; its protocol is in the environment

    def describe(self):
        return f"Mooncake transfer engine (Python, {self.protocol}, P2PHANDSHAKE), batches of at most {self.BATCH}"

    def register(self, regions):
        if self.regs:
            self.engine.batch_unregister_memory(self.regs)
        self.regs = [a for a, _ in regions]
        ret = self.engine.batch_register_memory(self.regs, [n for _, n in regions])
        if ret != 0:
            raise Failure(1, f"Mooncake batch_register_memory of {len(regions)} region(s) returned {ret}")

    def identity(self):
        return {"session": self.session}

    def connect(self, peer, gpu):
        self.peer = peer["session"]

    def write(self, descs, notify, deadline):
        t = time.perf_counter()
        calls = 0
        for i in range(0, len(descs), self.BATCH):
            c = descs[i : i + self.BATCH]
            ret = self.engine.batch_transfer_sync_write(self.peer, c[:, 0].tolist(), c[:, 1].tolist(), c[:, 2].tolist())
            if ret < 0:
                raise Failure(1, f"Mooncake batch_transfer_sync_write to {self.peer} of {len(c)} descriptor(s) returned {ret}")
            calls += 1
        return time.perf_counter() - t, calls, False

    def await_notifications(self, n, deadline):
        pass  # batch_transfer_sync_write returns once the bytes are in the peer's memory


# ---- the meeting ---------------------------------------------------------------------------


OPEN = []  # the connection to the other side, told of a failure before this side reports


class Conn:
    def __init__(self, sock, deadline):
        OPEN.append(self)
        self.sock = sock
        self.file = sock.makefile("rwb")
        self.deadline = deadline

    def send(self, obj):
        self.file.write(json.dumps(obj).encode() + b"\n")
        self.file.flush()

    def recv(self, what):
        self.sock.settimeout(max(0.001, self.deadline - time.monotonic()))
        try:
            line = self.file.readline()
        except socket.timeout:
            raise Failure(1, f"no {what} from the other side within the timeout") from None
        if not line:
            raise Failure(1, f"the other side closed the connection before sending {what}")
        msg = json.loads(line)
        if msg.get("error"):
            raise Failure(1, f"the other side failed: {msg['error']}")
        return msg


def split(bootstrap):
    host, _, port = bootstrap.rpartition(":")
    if not host or not port.isdigit():
        raise Failure(2, f"bootstrap address {bootstrap!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def listen(bootstrap, deadline):
    host, port = split(bootstrap)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
    except OSError as e:
        raise Failure(1, f"cannot listen on port {port} for the bootstrap ({e}): is a server or another agent using it?")
    s.listen(1)
    log(f"prefill listening on port {port}, for the decode to reach as {host}:{port}")
    s.settimeout(max(0.001, deadline - time.monotonic()))
    try:
        c, peer = s.accept()
    except socket.timeout:
        raise Failure(
            1,
            f"no decode agent reached {host}:{port} within the timeout: start the decode side, and check that the "
            f"decode node can reach this node's port {port} (firewall, NetworkPolicy, host network)",
        ) from None
    finally:
        s.close()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def connect(bootstrap, deadline):
    host, port = split(bootstrap)
    last = None
    while True:
        try:
            c = socket.create_connection((host, port), timeout=max(0.001, min(5.0, deadline - time.monotonic())))
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return c
        except OSError as e:
            last = e
        if time.monotonic() + 0.2 > deadline:
            why = (
                "connection refused (nothing listens there, or a firewall rejects it: is the prefill agent started, "
                "on that port, and open to this node?)"
            )
            if not isinstance(last, ConnectionRefusedError):
                why = f"{last} (is the host right and reachable from here: route, firewall, NetworkPolicy?)"
            raise Failure(1, f"cannot reach the prefill's bootstrap {host}:{port} within the timeout: {why}")
        time.sleep(0.2)


def local_address(sock):
    try:
        return sock.getsockname()[0]
    except OSError:
        return None


# ---- the sides -----------------------------------------------------------------------------


def regions_of(table, addrs):
    return [(addrs[int(r)] + int(off), int(n)) for r, off, n in table]


def prefill(plan, args, report, deadline):
    sock = listen(args.bootstrap, deadline)
    report["network"] = network(local_address(sock))
    conn = Conn(sock, deadline)
    hello = conn.recv("hello")
    if hello.get("plan") != report["plan"]:
        raise Failure(2, "the decode agent runs another plan than this prefill (render both sides from one `pdlaunch smoke --across hosts`)")
    host = report["network"]["address"] or split(args.bootstrap)[0]
    link = open_link(plan, host, args)
    report["library"] = link.describe()
    iterations = max(2, int(plan["iterations"]))
    for case in plan["cases"]:
        pools = Pools(case["prefill_pools"], case["reference"], 1, plan["memory"], args.gpu)
        addrs = pools.addrs()
        regs = regions_of(unpack(case["prefill_regions"], 3), addrs) + [(addrs[-1], case["reference"])]
        link.register(regs)
        peer = conn.recv(f"the decode's transfer info for case {case['label']}")
        link.connect(peer["identity"], peer["gpu"])
        dbase = peer["bases"]
        work = []
        for pair in case["pairs"]:
            t = unpack(pair["descs"], 5).astype("<u8")
            d = t.copy()[:, :3]
            d[:, 0] = t[:, 1] + np.asarray(addrs, dtype="<u8")[t[:, 0].astype(int)]
            d[:, 1] = t[:, 3] + np.asarray(dbase, dtype="<u8")[t[:, 2].astype(int)]
            d[:, 2] = t[:, 4]
            work.append((pair["index"], d))
        out = {"library": link.describe(), "pair_times": [[] for _ in range(case["pair_count"])], "totals": [],
               "reference": [], "reference_bytes": case["reference"], "calls": 0}
        notes = 0
        for it in range(iterations):
            total, calls = 0.0, 0
            for i, d in work:
                s, c, notified = link.write(d, f"{case['label']}:{it}:{i}", deadline)
                out["pair_times"][i].append(s)
                total += s
                calls += c
                notes += int(notified)
            out["totals"].append(total)
            out["calls"] = calls
        if case["reference"] > 0:
            ref = np.array([[addrs[-1], peer["reference"], case["reference"]]], dtype="<u8")
            for it in range(iterations):
                s, _, notified = link.write(ref, f"{case['label']}:reference:{it}", deadline)
                out["reference"].append(s)
                notes += int(notified)
        report["network"]["lanes"] = link.lanes()
        conn.send({"done": case["label"], "notifications": notes})
        conn.recv(f"the decode's check of case {case['label']}")
        report["cases"].append({"label": case["label"], "prefill": out})
    conn.send({"bye": True})


def decode(plan, args, report, deadline):
    sock = connect(args.bootstrap, deadline)
    report["network"] = network(local_address(sock))
    conn = Conn(sock, deadline)
    conn.send({"plan": report["plan"]})
    link = open_link(plan, report["network"]["address"] or "127.0.0.1", args)
    report["library"] = link.describe()
    for case in plan["cases"]:
        pools = Pools(case["decode_pools"], case["reference"], DECODE_TAG, plan["memory"], args.gpu)
        addrs = pools.addrs()
        regs = regions_of(unpack(case["decode_regions"], 3), addrs) + [(addrs[-1], case["reference"])]
        link.register(regs)
        conn.send({"identity": link.identity(), "bases": addrs[:-1], "reference": addrs[-1], "gpu": args.gpu})
        done = conn.recv(f"the prefill's completion of case {case['label']}")
        link.await_notifications(done["notifications"], deadline)
        words = [(n + 7) // 8 for n in case["prefill_pools"]]
        table = np.concatenate(
            [runs(pools.words(q)[: n // 8], q, len(words), words) for q, n in enumerate(case["decode_pools"])]
        ) if case["decode_pools"] else np.zeros((0, 6))
        report["cases"].append({"label": case["label"], "runs": pack(table, 6), "notifications": done["notifications"]})
        conn.send({"checked": case["label"]})
    conn.recv("the prefill's goodbye")


def open_link(plan, host, args):
    if plan["transport"] == "nixl":
        return Nixl(f"pdlaunch-{args.role}-{args.pair}-{os.getpid()}", plan["memory"], args.gpu)
    if plan["transport"] == "mooncake":
        # As SGLang's MooncakeTransferEngine: MOONCAKE_PROTOCOL (rdma unless set), and no device
        # under MC_FORCE_TCP=1.
        protocol = os.environ.get("MOONCAKE_PROTOCOL", "rdma")
        device = "" if os.environ.get("MC_FORCE_TCP") == "1" else args.device
        return Mooncake(host, protocol, device)
    raise Failure(2, f"transport {plan['transport']!r} is not one this agent knows (nixl, mooncake)")


def main(argv):
    p = argparse.ArgumentParser(prog="host_agent.py", description=__doc__.split("\n\n")[0])
    p.add_argument("role", choices=["prefill", "decode"])
    p.add_argument("plan")
    p.add_argument("--bootstrap", help="the prefill's bootstrap HOST:PORT (default: the plan's)")
    p.add_argument("--gpu", type=int, default=0, help="the GPU of this side's pools (GPU memory only)")
    p.add_argument("--pair", type=int, default=0, help="which agent pair this is (reports)")
    args = p.parse_args(argv)
    report = {"schema": "pdlaunch-smoke-report/1", "role": args.role, "pair": args.pair, "cases": []}
    code = 0
    global np
    try:
        try:
            import numpy
        except ImportError as e:
            raise Failure(2, f"numpy is missing in {sys.executable} ({e}); run the agent with SGLang's Python")
        np = numpy
        try:
            text = open(args.plan, "rb").read()
        except OSError as e:
            raise Failure(2, f"cannot read the plan {args.plan}: {e}")
        report["plan"] = hashlib.sha256(text).hexdigest()[:16]
        plan = json.loads(text)
        report["context"] = plan.get("context")
        args.bootstrap = args.bootstrap or plan["bootstrap"]
        report["bootstrap"] = args.bootstrap
        deadline = time.monotonic() + float(plan.get("timeout_s", 300))
        args.device = ib_device_for(plan, args.role, args.gpu)
        check_devices(args.device)
        (prefill if args.role == "prefill" else decode)(plan, args, report, deadline)
    except Failure as e:
        code = e.code
        report["error"] = {"code": e.code, "message": str(e)}
    except Exception as e:  # a library's own error: report it, with where it came from
        code = 1
        report["error"] = {"code": 1, "message": f"{type(e).__name__}: {e}"}
    if report.get("error") and OPEN:
        try:
            OPEN[0].send({"error": f"{args.role} agent: {report['error']['message']}"})
        except OSError:
            pass
    report.setdefault("network", network(None))
    sys.stdout.write(REPORT + json.dumps(report) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stderr.flush()
    # NIXL 1.5.1's Python bindings crash (SIGSEGV) in the interpreter's teardown once an agent has
    # transferred; the report is out, so leave without it.
    os._exit(status)
