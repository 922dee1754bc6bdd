//! `pdlaunch model` and `--model-config` through the real binary, on the real `config.json`
//! texts in `tests/fixtures/models/`: the KV bytes per token it prints against hand computations,
//! clear errors for bad files, and the TP-pairing rules driven by the geometry a config gives.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_pdlaunch");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    root().join("tests/fixtures/models").join(name).join("config.json").to_str().unwrap().to_owned()
}

fn pdl(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env("NO_COLOR", "1").stdin(Stdio::null()).output().expect("pdlaunch runs")
}

fn out(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[track_caller]
fn exit(o: &Output, code: i32) {
    assert_eq!(o.status.code(), Some(code), "expected exit {code}:\n{}", out(o));
    assert!(!out(o).contains("panicked"), "{}", out(o));
}

/// The number on the `bytes/token` line of the human output.
#[track_caller]
fn bytes_per_token(o: &Output) -> u64 {
    let text = out(o);
    let line = text.lines().find(|l| l.trim_start().starts_with("bytes/token")).expect("a bytes/token line");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

#[test]
fn llama_kv_bytes_match_the_hand_computation() {
    // Llama 3.1 8B: 32 layers, 8 KV heads of 128, bf16 (2 bytes), K and V.
    let (layers, kv_heads, head_dim, bytes) = (32u64, 8u64, 128u64, 2u64);
    let o = pdl(&["model", &fixture("llama-3.1-8b-instruct")]);
    exit(&o, 0);
    assert_eq!(bytes_per_token(&o), layers * 2 * kv_heads * head_dim * bytes);
    assert_eq!(bytes_per_token(&o), 131_072);
    assert!(out(&o).contains("gqa: 32 heads, 8 KV heads, head_dim 128"), "{}", out(&o));
    assert!(out(&o).contains("bytes/token    131072 (32 layers x 4096 B)"), "{}", out(&o));
    // TP 8: one KV head per rank.
    let o = pdl(&["model", &fixture("llama-3.1-8b-instruct"), "--tp", "8"]);
    assert_eq!(bytes_per_token(&o), layers * 2 * (kv_heads / 8) * head_dim * bytes);
    // TP 16: still one head per rank (replicated), not zero.
    let o = pdl(&["model", &fixture("llama-3.1-8b-instruct"), "--tp", "16"]);
    assert_eq!(bytes_per_token(&o), layers * 2 * head_dim * bytes);
    // PP 2 halves the layers; FP8 halves the element.
    let o = pdl(&["model", &fixture("llama-3.1-8b-instruct"), "--pp", "2", "--kv-cache-dtype", "fp8_e4m3"]);
    assert_eq!(bytes_per_token(&o), (layers / 2) * 2 * kv_heads * head_dim);
}

#[test]
fn mla_and_hybrid_kv_bytes_match_the_hand_computation() {
    // DeepSeek-V3: 61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes, not sharded by TP.
    for tp in ["1", "8"] {
        let o = pdl(&["model", &fixture("deepseek-v3"), "--tp", tp, "--format", "json"]);
        exit(&o, 0);
        let v = json(&o);
        assert_eq!(v["kv"]["bytes_per_token"], 61 * (512 + 64) * 2);
        assert_eq!(v["geometry"]["attention"], "mla");
        assert_eq!(v["geometry"]["quant_method"], "fp8");
    }
    // gpt-oss-120b: 36 layers (18 full, 18 sliding) x 2 x 8 KV heads x 64 x 1 byte in FP8.
    let o = pdl(&["model", &fixture("gpt-oss-120b"), "--kv-cache-dtype", "fp8_e4m3"]);
    exit(&o, 0);
    assert_eq!(bytes_per_token(&o), 36 * 2 * 8 * 64);
    assert!(out(&o).contains("36 (18 full attention, 18 sliding window of 128)"), "{}", out(&o));
    // The multimodal Kimi K2.5 reads its text_config.
    let o = pdl(&["model", &fixture("kimi-k2.5"), "--format", "json"]);
    exit(&o, 0);
    assert_eq!(json(&o)["kv"]["bytes_per_token"], 61 * 576 * 2);
}

#[test]
fn hf_quant_config_next_to_the_file_makes_auto_fp8() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = std::fs::read_to_string(fixture("qwen3-32b")).unwrap();
    std::fs::write(dir.path().join("config.json"), cfg).unwrap();
    let side = root().join("tests/fixtures/models/qwen3-32b-nvfp4/hf_quant_config.json");
    std::fs::copy(side, dir.path().join("hf_quant_config.json")).unwrap();
    let o = pdl(&["model", dir.path().join("config.json").to_str().unwrap()]);
    exit(&o, 0);
    // 64 layers x 2 x 8 KV heads x 128 x 1 byte (FP8 KV from kv_cache_quant_algo).
    assert_eq!(bytes_per_token(&o), 64 * 2 * 8 * 128);
    assert!(out(&o).contains("--kv-cache-dtype auto -> fp8_e4m3"), "{}", out(&o));
    assert!(out(&o).contains("modelopt, KV cache FP8"), "{}", out(&o));
}

#[test]
fn bad_files_exit_2_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("config.json");
    std::fs::write(&bad, r#"{"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 5}"#).unwrap();
    let o = pdl(&["model", bad.to_str().unwrap()]);
    exit(&o, 2);
    assert!(
        out(&o).contains(
            "config.json: field `num_key_value_heads`: 32 attention heads cannot be grouped evenly over 5 KV heads"
        ),
        "{}",
        out(&o)
    );
    std::fs::write(&bad, "{ not json").unwrap();
    let o = pdl(&["model", bad.to_str().unwrap()]);
    exit(&o, 2);
    assert!(out(&o).contains("not valid JSON"), "{}", out(&o));
    // check, render and smoke refuse a bad --model-config the same way.
    let deployment = root().join("examples/llama-1p1d.yaml");
    for cmd in ["check", "render", "smoke"] {
        let o = pdl(&[cmd, deployment.to_str().unwrap(), "--model-config", bad.to_str().unwrap()]);
        exit(&o, 2);
        assert!(out(&o).contains("not valid JSON"), "{cmd}: {}", out(&o));
    }
    let o = pdl(&["model", "--preset", "llama-9"]);
    exit(&o, 2);
    assert!(out(&o).contains("unknown preset \"llama-9\""), "{}", out(&o));
}

/// The llama example with decode TP 4 against prefill TP 1 (and extra YAML appended to `model`).
fn hetero_tp_deployment(dir: &Path, model_extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/llama-1p1d.yaml")).unwrap();
    let decode_tp = "  tp: 1\n  max_running_requests: 128\n";
    assert!(text.contains(decode_tp));
    let text = text.replacen(decode_tp, "  tp: 4\n  max_running_requests: 128\n", 1);
    let text = text.replacen("  path: meta-llama/Llama-3.1-8B-Instruct\n", &format!("  path: x\n{model_extra}"), 1);
    let path = dir.join("hetero.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn tp_pairing_from_config_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = hetero_tp_deployment(dir.path(), "");
    let d = d.to_str().unwrap();
    // gpt-oss: prefill TP 1, decode TP 4 is refused (non-MLA sliding-window hybrid).
    let o = pdl(&["check", d, "--model-config", &fixture("gpt-oss-120b")]);
    exit(&o, 1);
    assert!(out(&o).contains("error[PD008]"), "{}", out(&o));
    assert!(out(&o).contains("GptOssForCausalLM is a non-MLA hybrid sliding-window model"), "{}", out(&o));
    // The same with an MLA model: neither the error nor the staging-buffer warning.
    let o = pdl(&["check", d, "--model-config", &fixture("deepseek-v3"), "--format", "json"]);
    let codes: Vec<String> =
        json(&o)["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap().to_owned()).collect();
    assert!(!codes.iter().any(|c| c == "PD008" || c == "PD009"), "{codes:?}");
    // Llama (GQA): the staging-buffer warning ...
    let o = pdl(&["check", d, "--model-config", &fixture("llama-3.1-8b-instruct")]);
    exit(&o, 0);
    assert!(out(&o).contains("warning[PD009]"), "{}", out(&o));
    assert!(!out(&o).contains("[PD008]"), "{}", out(&o));
    // ... unless the env sets it on both sides.
    let text = std::fs::read_to_string(d).unwrap();
    let with_env = text.replacen(
        "  transfer_backend: mooncake\n",
        "  transfer_backend: mooncake\n  env: {SGLANG_DISAGG_STAGING_BUFFER: \"1\"}\n",
        1,
    );
    assert_ne!(text, with_env);
    std::fs::write(d, with_env).unwrap();
    let o = pdl(&["check", d, "--model-config", &fixture("llama-3.1-8b-instruct")]);
    assert!(!out(&o).contains("[PD009]"), "{}", out(&o));
}

#[test]
fn presets_fill_the_geometry_and_unknown_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("examples/llama-1p1d.yaml")).unwrap();
    let start = text.find("  geometry:\n").unwrap();
    let end = text.find("shared:\n").unwrap();
    let with_preset = format!("{}  preset: gpt-oss-20b\n{}", &text[..start], &text[end..]);
    let path = dir.path().join("preset.yaml");
    std::fs::write(
        &path,
        with_preset.replacen("  tp: 1\n  max_running_requests", "  tp: 2\n  max_running_requests", 1),
    )
    .unwrap();
    let o = pdl(&["check", path.to_str().unwrap()]);
    exit(&o, 1);
    assert!(out(&o).contains("error[PD008]"), "{}", out(&o));
    let bad = with_preset.replacen("preset: gpt-oss-20b", "preset: gpt-oss-9b", 1);
    std::fs::write(&path, bad).unwrap();
    let o = pdl(&["check", path.to_str().unwrap()]);
    exit(&o, 2);
    assert!(out(&o).contains("field `model.preset`: unknown variant `gpt-oss-9b`"), "{}", out(&o));
    assert!(out(&o).contains("`gpt-oss-20b`"), "{}", out(&o));
    let o = pdl(&["model", "--list"]);
    exit(&o, 0);
    assert!(String::from_utf8_lossy(&o.stdout).lines().count() >= 10);
}

/// `smoke --model-config`: the pools are laid out from the config's geometry (DeepSeek-V3's MLA
/// over the llama example's GQA), the report names the file as the geometry's source, and the
/// geometry flags still override single fields of it.
#[test]
fn smoke_lays_out_the_model_config_geometry() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let deployment = root().join("examples/llama-1p1d.yaml");
    let config = fixture("deepseek-v3");
    let smoke = |extra: &[&str]| {
        let mut args = vec!["smoke", deployment.to_str().unwrap(), "--model-config", &config, "--backend", "cpu"];
        args.extend(["--tokens", "64", "--iterations", "1", "--json", report.to_str().unwrap()]);
        args.extend(extra);
        let o = pdl(&args);
        exit(&o, 0);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        (out(&o), v)
    };
    let (text, v) = smoke(&[]);
    assert_eq!(v["geometry_source"], format!("--model-config {config}"), "{text}");
    assert_eq!(v["geometry"]["kind"], "mla", "{text}");
    assert_eq!(v["geometry"]["layers"], 61, "{text}");
    assert!(text.contains(&format!("(--model-config {config})")), "{text}");
    let (text, v) = smoke(&["--layers", "3"]);
    assert_eq!(v["geometry_source"], format!("command-line flags over --model-config {config}"), "{text}");
    assert_eq!((v["geometry"]["kind"].as_str(), v["geometry"]["layers"].as_u64()), (Some("mla"), Some(3)), "{text}");
}
