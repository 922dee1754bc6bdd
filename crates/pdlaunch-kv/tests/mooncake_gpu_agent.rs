//! The GPU pools of Mooncake's Python agent (`python/mooncake_agent.py`) on a machine without a
//! GPU: the driver calls go to a stand-in `libcuda.so.1` built here from
//! `tests/fixtures/fake_libcuda.c` (host memory as device memory), so the agent's own code runs
//! as it would on a GPU: every pool allocated and filled from its staging file, the device
//! addresses returned, `readback` copying what landed into the staging file, every allocation
//! and the context given back, and each failing call named with the driver's error and the way
//! out. Through the real agent process and the real non-CUDA wheel
//! (`PDLAUNCH_TEST_MOONCAKE_PYTHON`), GPU pools are refused with the CUDA wheel's install line.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use pdlaunch_kv::agent::mooncake::SCRIPT;
use serde_json::{json, Value};

const POOL: usize = 8192;

/// A folder of this test, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A folder holding the stand-in driver as `libcuda.so.1`, the agent script and a staging file
/// of `POOL` bytes (0, 1, 2, ... 255, 0, ...).
fn setup(name: &str) -> (Dir, PathBuf) {
    let dir = Dir(std::env::temp_dir().join(format!("pdlaunch-mooncake-gpu-{}-{name}", std::process::id())));
    std::fs::create_dir_all(dir.path()).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_libcuda.c");
    let o = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.path().join("libcuda.so.1"))
        .arg(&src)
        .output()
        .expect("a C compiler (cc) builds the stand-in driver");
    assert!(o.status.success(), "cc: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(dir.path().join("agent.py"), SCRIPT).unwrap();
    let staging = dir.path().join("pool");
    std::fs::write(&staging, (0..POOL).map(|i| i as u8).collect::<Vec<u8>>()).unwrap();
    (dir, staging)
}

/// Runs `python` with the stand-in driver on the loader path and `env`; its stdout as JSON.
fn python(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut c = Command::new("python3");
    c.arg("-c").arg(program).args(args).env("LD_LIBRARY_PATH", dir).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

/// The agent's classes, loaded without running its main loop (which needs Mooncake).
const LOAD: &str = r#"
import ctypes, json, sys
agent = {"__name__": "pdlaunch_test"}
exec(open(sys.argv[1]).read(), agent)
def failure(f):
    try:
        f()
    except agent["DeviceError"] as e:
        return str(e)
    return None
"#;

#[test]
fn gpu_pools_are_staged_in_read_back_and_freed() {
    let (dir, staging) = setup("staged");
    let program = format!(
        "{LOAD}{}",
        r#"
cuda = ctypes.CDLL("libcuda.so.1")  # the stand-in's counters
out = {}
pools = agent["Pools"]()
bases = pools.map([[sys.argv[2], 8192]], "vram", 0)
out["live"], out["retained"] = cuda.fake_live(), cuda.fake_retained()
dev = bases[0]
out["staged"] = list(ctypes.string_at(dev, 8192))
ctypes.memmove(dev + 100, b"landed", 6)          # a write into the device pool
ctypes.memmove(dev + 5000, b"beyond", 6)         # past what is read back
pools.readback([4096])
out["left"] = cuda.fake_live()
pools.close(None)
out["live_after"], out["retained_after"] = cuda.fake_live(), cuda.fake_retained()
out["host"] = agent["Pools"]().map([[sys.argv[2], 8192]], "dram", 0)[0] != dev
print(json.dumps(out))
"#
    );
    let agent = dir.path().join("agent.py");
    let out = python(dir.path(), &program, &[agent.to_str().unwrap(), staging.to_str().unwrap()], &[]);
    assert_eq!(out["live"], 1, "one device allocation per pool");
    assert_eq!(out["retained"], 1, "the primary context is retained");
    let staged: Vec<u8> = out["staged"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u8).collect();
    assert_eq!(staged, (0..POOL).map(|i| i as u8).collect::<Vec<u8>>(), "the staging bytes are copied in whole");
    assert_eq!(out["left"], 1);
    assert_eq!(out["live_after"], 0, "quit frees the device memory");
    assert_eq!(out["retained_after"], 0, "and releases the context");
    assert_eq!(out["host"], true, "host pools are the mapping itself");
    let file = std::fs::read(&staging).unwrap();
    assert_eq!(&file[100..106], b"landed", "readback copies what landed into the staging file");
    assert_eq!(file[99], 99);
    assert_eq!(file[5000], (5000 % 256) as u8, "only the lengths asked are read back");
}

#[test]
fn each_failing_driver_call_is_named_with_its_error_and_the_way_out() {
    let (dir, staging) = setup("errors");
    let agent = dir.path().join("agent.py");
    let args = [agent.to_str().unwrap(), staging.to_str().unwrap()];
    let program = format!(
        "{LOAD}{}",
        r#"
cuda = ctypes.CDLL("libcuda.so.1")
pools = agent["Pools"]()
out = {"gpu1": failure(lambda: agent["Driver"](1)),
       "oom": failure(lambda: pools.map([[sys.argv[2], 4096], [sys.argv[2], 8192]], "vram", 0))}
pools.close(None)
out["live_after"], out["retained_after"] = cuda.fake_live(), cuda.fake_retained()
print(json.dumps(out))
"#
    );
    // The first pool fits, the second does not: both are given back.
    let out = python(dir.path(), &program, &args, &[("FAKE_CUDA_LIMIT", "4096")]);
    assert_eq!(
        out["gpu1"],
        "GPU 1 was asked for, the driver shows 1: give --gpus indices below 1, or use --backend cpu"
    );
    assert_eq!(
        out["oom"],
        "cuMemAlloc_v2 on GPU 0 failed: out of memory (CUresult 2); 8192 bytes do not fit: use fewer --tokens"
    );
    assert_eq!(out["live_after"], 0);
    assert_eq!(out["retained_after"], 0);

    let program = format!("{LOAD}{}", r#"print(json.dumps({"e": failure(lambda: agent["Driver"](0))}))"#);
    let out = python(dir.path(), &program, &args, &[("FAKE_CUDA_NO_DEVICE", "1")]);
    assert_eq!(
        out["e"],
        "cuInit on GPU 0 failed: no CUDA-capable device is detected (CUresult 100); --backend cuda needs a usable GPU; use --backend cpu"
    );

    // No driver at all (where this machine has none of its own).
    let installed = Command::new("sh").args(["-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).status();
    if installed.is_ok_and(|s| s.success()) {
        eprintln!("skipped the no-driver case: this machine has a CUDA driver");
        return;
    }
    let program = format!("{LOAD}{}", r#"print(json.dumps({"e": failure(lambda: agent["Driver"](0))}))"#);
    let out = python(&dir.path().join("nothing"), &program, &args, &[]);
    let e = out["e"].as_str().unwrap();
    assert!(e.starts_with("cannot load libcuda.so.1 ("), "{e}");
    assert!(e.ends_with("): --backend cuda needs the CUDA driver and a GPU on this host; use --backend cpu"), "{e}");
}

/// The real agent process with the real non-CUDA wheel, a driver present (the stand-in): `map`
/// of GPU pools is refused as the device kind, with the CUDA wheel's install line, the agent
/// stays up and quits cleanly, and host pools still map.
#[test]
fn the_non_cuda_wheel_refuses_gpu_pools_with_the_cuda_wheel_install_line() {
    let Some(python) = std::env::var("PDLAUNCH_TEST_MOONCAKE_PYTHON").ok().filter(|p| !p.is_empty()) else {
        eprintln!("skipped: PDLAUNCH_TEST_MOONCAKE_PYTHON is not set (scripts/test.sh installs Mooncake and sets it)");
        return;
    };
    let (dir, staging) = setup("wheel");
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .env("LD_LIBRARY_PATH", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut ask = |req: Value| -> Value {
        writeln!(stdin, "{req}").unwrap();
        let line = rx.recv_timeout(Duration::from_secs(60)).expect("the agent answers within 60 s");
        serde_json::from_str(&line).unwrap()
    };
    let r = ask(json!({"op": "init", "host": "127.0.0.1", "protocol": "tcp", "device": ""}));
    assert_eq!(r["ok"], true, "{r}");
    let pool = json!([[staging.to_str().unwrap(), POOL]]);
    let r = ask(json!({"op": "map", "pools": pool, "memory": "vram", "gpu": 0}));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["kind"], "device", "{r}");
    let e = r["error"].as_str().unwrap();
    assert!(
        e.starts_with(&format!("{python} has Mooncake's non-CUDA wheel (mooncake-transfer-engine-non-cuda)")),
        "{e}"
    );
    assert!(e.contains("fail on it (Bad address)"), "{e}");
    assert!(
        e.ends_with(
            "install the CUDA wheel there, pip install mooncake-transfer-engine==0.3.13.post1, or use --backend cpu"
        ),
        "{e}"
    );
    let r = ask(json!({"op": "map", "pools": pool, "memory": "dram", "gpu": 0}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(ask(json!({"op": "quit"}))["ok"], true);
    drop(stdin);
    let until = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success(), "{s}");
            break;
        }
        assert!(std::time::Instant::now() < until, "the agent did not exit after quit");
        std::thread::sleep(Duration::from_millis(20));
    }
}
