//! The reader against the real `config.json` texts in `tests/fixtures/models/`: every derived
//! number of every fixture, and KV bytes per token worked out by hand.

use super::*;
use crate::deployment::{AttentionKind, Geometry};

fn read(name: &str) -> ModelConfig {
    preset(name).unwrap_or_else(|| panic!("preset {name}")).config()
}

/// The fields every fixture has, then the rest by hand.
fn base(arch: &str, attention: AttentionKind, layers: u32, heads: u32, hidden: u32, ctx: u64) -> Geometry {
    let mut g = Geometry::new(attention, layers);
    g.architecture = Some(arch.into());
    g.attention_heads = Some(heads);
    g.hidden_size = Some(hidden);
    g.max_position_embeddings = Some(ctx);
    g.torch_dtype = Some("bfloat16".into());
    g
}

fn gqa(mut g: Geometry, kv_heads: u32, head_dim: u32) -> Geometry {
    g.kv_heads = Some(kv_heads);
    g.head_dim = Some(head_dim);
    g
}

fn mla(mut g: Geometry) -> Geometry {
    g.kv_lora_rank = Some(512);
    g.qk_rope_head_dim = Some(64);
    g
}

fn moe(mut g: Geometry, experts: u32, per_token: u32) -> Geometry {
    g.moe_experts = Some(experts);
    g.moe_experts_per_token = Some(per_token);
    g
}

fn sized(mut g: Geometry, parameters: u64, weight_bytes: u64) -> Geometry {
    g.parameters = Some(parameters);
    g.weight_bytes = Some(weight_bytes);
    g
}

/// KV bytes per token on one GPU.
fn kv(name: &str, attn_tp: u32, pp: u32, dtype: &str) -> u64 {
    let g = read(name).geometry;
    let e = KvElement::resolve(dtype, g.torch_dtype.as_deref(), g.kv_cache_quant_algo.as_deref()).unwrap();
    kv_bytes_per_token(&g, attn_tp, pp, e).unwrap().per_token
}

#[test]
fn llama_3_1() {
    // 32 x (4096 x 32 q + 2 x 4096 x 8 x 128 kv + 4096 x 4096 o + 3 x 4096 x 14336 mlp + 2 x 4096 norms)
    // + 2 x 128256 x 4096 (embeddings, untied) + 4096 = 8,030,261,248, bf16: 2 bytes each.
    let want = sized(
        gqa(base("LlamaForCausalLM", AttentionKind::Gqa, 32, 32, 4096, 131_072), 8, 128),
        8_030_261_248,
        16_060_522_496,
    );
    let c = read("llama-3.1-8b-instruct");
    assert_eq!(c.geometry, want);
    assert!(c.notes.is_empty(), "{:?}", c.notes);
    // 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes; TP 8 keeps 1 head per rank.
    assert_eq!(kv("llama-3.1-8b-instruct", 1, 1, "auto"), 32 * 2 * 8 * 128 * 2);
    assert_eq!(kv("llama-3.1-8b-instruct", 1, 1, "auto"), 131_072);
    assert_eq!(kv("llama-3.1-8b-instruct", 8, 1, "auto"), 16_384);
    assert_eq!(kv("llama-3.1-8b-instruct", 1, 1, "fp8_e4m3"), 65_536);
    let want = sized(
        gqa(base("LlamaForCausalLM", AttentionKind::Gqa, 80, 64, 8192, 131_072), 8, 128),
        70_553_706_496,
        141_107_412_992,
    );
    assert_eq!(read("llama-3.1-70b-instruct").geometry, want);
    assert_eq!(kv("llama-3.1-70b-instruct", 1, 1, "auto"), 80 * 2 * 8 * 128 * 2);
    // PP 4: 20 layers per stage.
    assert_eq!(kv("llama-3.1-70b-instruct", 8, 4, "auto"), 20 * 2 * 128 * 2);
}

#[test]
fn qwen3_dense_and_moe() {
    // head_dim 128 is explicit (hidden_size / heads would be 80).
    let want = sized(
        gqa(base("Qwen3ForCausalLM", AttentionKind::Gqa, 64, 64, 5120, 40_960), 8, 128),
        32_762_106_880,
        65_524_213_760,
    );
    assert_eq!(read("qwen3-32b").geometry, want);
    assert_eq!(kv("qwen3-32b", 4, 1, "auto"), 64 * 2 * 2 * 128 * 2);
    let want = sized(
        moe(gqa(base("Qwen3MoeForCausalLM", AttentionKind::Gqa, 94, 64, 4096, 262_144), 4, 128), 128, 8),
        235_093_610_496,
        470_187_220_992,
    );
    assert_eq!(read("qwen3-235b-a22b-instruct-2507").geometry, want);
    // 4 KV heads: TP 8 replicates each head on two ranks, one head per rank.
    assert_eq!(kv("qwen3-235b-a22b-instruct-2507", 8, 1, "auto"), 94 * 2 * 128 * 2);
    assert_eq!(kv("qwen3-235b-a22b-instruct-2507", 4, 1, "auto"), 48_128);
}

#[test]
fn deepseek_and_kimi_mla() {
    // FP8 weights (block-quantized linear layers), 16-bit embeddings.
    let mut want = sized(
        moe(mla(base("DeepseekV3ForCausalLM", AttentionKind::Mla, 61, 128, 7168, 163_840)), 256, 8),
        671_026_404_352,
        672_879_762_432,
    );
    want.quant_method = Some("fp8".into());
    assert_eq!(read("deepseek-v3").geometry, want);
    // 61 layers x (512 + 64) x 2 bytes, the same on every attention-TP rank.
    assert_eq!(kv("deepseek-v3", 1, 1, "auto"), 61 * 576 * 2);
    assert_eq!(kv("deepseek-v3", 1, 1, "auto"), 70_272);
    assert_eq!(kv("deepseek-v3", 16, 1, "auto"), 70_272);
    assert_eq!(kv("deepseek-v3", 1, 1, "fp8_e4m3"), 35_136);

    // DSA: the FP8 row is 656 bytes (512 + 4 scales x 4 + 64 x 2).
    let mut want = sized(
        moe(mla(base("DeepseekV32ForCausalLM", AttentionKind::Mla, 61, 128, 7168, 163_840)), 256, 8),
        671_877_913_600,
        673_731_271_680,
    );
    want.quant_method = Some("fp8".into());
    assert_eq!(read("deepseek-v3.2").geometry, want);
    assert_eq!(kv("deepseek-v3.2", 1, 1, "fp8_e4m3"), 61 * 656);

    let mut want = sized(
        moe(mla(base("DeepseekV3ForCausalLM", AttentionKind::Mla, 61, 64, 7168, 131_072)), 384, 8),
        1_026_408_209_408,
        1_028_757_019_648,
    );
    want.quant_method = Some("fp8".into());
    assert_eq!(read("kimi-k2-instruct").geometry, want);
    assert_eq!(kv("kimi-k2-instruct", 8, 1, "auto"), 70_272);
}

#[test]
fn multimodal_kimi_k2_5_reads_its_text_config_and_int4_experts() {
    let c = read("kimi-k2.5");
    // Routed experts in INT4 with a bf16 scale per 32 (4.5 bits), everything else bf16.
    let mut want = sized(
        moe(mla(base("KimiK25ForConditionalGeneration", AttentionKind::Mla, 61, 64, 7168, 262_144)), 384, 8),
        1_026_408_209_408,
        594_205_259_776,
    );
    want.quant_method = Some("compressed-tensors".into());
    assert_eq!(c.geometry, want);
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(c.notes[0].contains("language model in `text_config`"), "{:?}", c.notes);
}

#[test]
fn gpt_oss_is_a_sliding_window_hybrid() {
    let c = read("gpt-oss-120b");
    let mut want = moe(gqa(base("GptOssForCausalLM", AttentionKind::Gqa, 36, 64, 2880, 131_072), 8, 64), 128, 4);
    want.torch_dtype = None;
    want.sliding_window = Some(128);
    want.hybrid_swa = true;
    want.full_attention_layers = Some(18);
    want.quant_method = Some("mxfp4".into());
    // MXFP4 experts (4.25 bits), attention and embeddings bf16.
    let want = sized(want, 116_789_048_640, 65_168_599_680);
    assert_eq!(c.geometry, want);
    assert!(c.notes[0].starts_with("no `torch_dtype`"), "{:?}", c.notes);
    // 36 layers x 2 x 8 x 64 x 2 bytes; TP 4 keeps 2 heads.
    assert_eq!(kv("gpt-oss-120b", 1, 1, "auto"), 73_728);
    assert_eq!(kv("gpt-oss-120b", 4, 1, "auto"), 36 * 2 * 2 * 64 * 2);
    let g = read("gpt-oss-20b").geometry;
    assert_eq!((g.layers, g.full_attention_layers, g.moe_experts), (24, Some(12), Some(32)));
    assert_eq!((g.parameters, g.weight_bytes), (Some(20_907_927_360), Some(13_747_605_120)));
}

#[test]
fn glm_mla_and_dsa() {
    let want = sized(
        moe(mla(base("Glm4MoeLiteForCausalLM", AttentionKind::Mla, 47, 20, 2048, 202_752)), 64, 4),
        29_943_390_976,
        59_886_781_952,
    );
    assert_eq!(read("glm-4.7-flash").geometry, want);
    assert_eq!(kv("glm-4.7-flash", 1, 1, "auto"), 47 * 1152);
    let want = sized(
        moe(mla(base("GlmMoeDsaForCausalLM", AttentionKind::Mla, 78, 64, 6144, 202_752)), 256, 8),
        743_911_179_264,
        1_487_822_358_528,
    );
    assert_eq!(read("glm-5.1").geometry, want);
    assert_eq!(kv("glm-5.1", 1, 1, "fp8_e4m3"), 78 * 656);
}

#[test]
fn mistral_and_mixtral() {
    let want = sized(
        moe(gqa(base("MixtralForCausalLM", AttentionKind::Gqa, 32, 32, 4096, 32_768), 8, 128), 8, 2),
        46_702_792_704,
        93_405_585_408,
    );
    assert_eq!(read("mixtral-8x7b-v0.1").geometry, want);
    let want = sized(
        gqa(base("MistralForCausalLM", AttentionKind::Gqa, 32, 32, 4096, 32_768), 8, 128),
        7_248_023_552,
        14_496_047_104,
    );
    assert_eq!(read("mistral-7b-instruct-v0.3").geometry, want);
    assert_eq!(kv("mixtral-8x7b-v0.1", 2, 1, "auto"), 32 * 2 * 4 * 128 * 2);
}

#[test]
fn modelopt_sidecar_turns_auto_kv_into_fp8() {
    let config = preset("qwen3-32b").unwrap().config_json();
    let sidecar = include_str!("../../../../tests/fixtures/models/qwen3-32b-nvfp4/hf_quant_config.json");
    let c = apply_hf_quant_config(config, sidecar).unwrap();
    assert_eq!(c.geometry.quant_method.as_deref(), Some("modelopt"));
    assert_eq!(c.geometry.kv_cache_quant_algo.as_deref(), Some("FP8"));
    // NVFP4: 4 bits + an 8-bit scale per 16 on every linear layer, bf16 embeddings.
    assert_eq!(c.geometry.weight_bytes, Some(20_665_183_040));
    let e = KvElement::resolve("auto", Some("bfloat16"), c.geometry.kv_cache_quant_algo.as_deref()).unwrap();
    assert_eq!(e, KvElement::FP8_E4M3);
    assert_eq!(kv_bytes_per_token(&c.geometry, 1, 1, e).unwrap().per_token, 64 * 2 * 8 * 128);
    let e = apply_hf_quant_config(config, "[]").unwrap_err();
    assert_eq!(e.message, "hf_quant_config.json must be a JSON object");
}

/// Prefill TP 1 against decode TP 4 with the geometry of a preset.
fn hetero_tp(preset_name: &str) -> crate::deployment::Deployment {
    let mut d = crate::examples::example("llama-1p1d").unwrap();
    d.model.geometry = None;
    d.model.preset = Some(preset_name.into());
    d.decode.tp = 4;
    d
}

fn codes(d: &crate::deployment::Deployment) -> Vec<(&'static str, crate::rules::Severity)> {
    crate::rules::check(d).findings.iter().map(|f| (f.code, f.severity)).collect()
}

#[test]
fn tp_pairing_follows_the_attention_kind_of_the_config() {
    use crate::rules::Severity::{Error, Warning};
    // gpt-oss: a non-MLA sliding-window hybrid, refused by SGLang with different TP.
    let c = codes(&hetero_tp("gpt-oss-120b"));
    assert!(c.contains(&("PD008", Error)), "{c:?}");
    assert!(!c.iter().any(|f| f.0 == "PD009"), "{c:?}");
    // MLA: the latent is copied whole, neither rule fires.
    for name in ["deepseek-v3", "kimi-k2-instruct", "glm-4.7-flash"] {
        let c = codes(&hetero_tp(name));
        assert!(!c.iter().any(|f| f.0 == "PD008" || f.0 == "PD009"), "{name}: {c:?}");
    }
    // GQA: the staging-buffer warning, gone once both sides set it.
    let mut d = hetero_tp("llama-3.1-8b-instruct");
    assert!(codes(&d).contains(&("PD009", Warning)), "{:?}", codes(&d));
    assert!(!codes(&d).iter().any(|f| f.0 == "PD008"));
    d.shared.env.insert("SGLANG_DISAGG_STAGING_BUFFER".into(), "1".into());
    assert!(!codes(&d).iter().any(|f| f.0 == "PD009"), "{:?}", codes(&d));
}

#[test]
fn fp8_kv_checkpoint_makes_auto_fp8_on_both_sides() {
    let config = preset("qwen3-32b").unwrap().config_json();
    let sidecar = include_str!("../../../../tests/fixtures/models/qwen3-32b-nvfp4/hf_quant_config.json");
    let mut d = crate::examples::example("llama-1p1d").unwrap();
    d.model.geometry = Some(apply_hf_quant_config(config, sidecar).unwrap().geometry);
    let plan = crate::plan::plan(&d);
    let ctx = crate::rules::Context::from_deployment(&d, &plan);
    for s in &ctx.servers {
        let r = s.kv_cache_dtype(&ctx.model);
        assert_eq!(r.value, "fp8_e4m3");
        assert_eq!(r.why, vec!["`auto` becomes `fp8_e4m3` for this model".to_owned()]);
    }
    // An explicit bf16 on one side now differs from the other side's fp8_e4m3.
    d.decode.extra_args = vec!["--kv-cache-dtype".into(), "bf16".into()];
    assert!(crate::rules::check(&d).findings.iter().any(|f| f.code == "PD002"));
}

/// A decode server as SGLang sees `args` on `gpu`.
fn server(args: &[&str], gpu: crate::deployment::Gpu) -> crate::effective::ServerView {
    let args = format!("--model-path m --disaggregation-mode decode {}", args.join(" "));
    crate::rules::testing::server("decode[0]", "h", args.trim_end(), Some(gpu))
}

#[test]
fn architecture_page_size_overrides() {
    use crate::deployment::Gpu;
    use crate::effective::ModelFacts;
    let mut g = Geometry::new(AttentionKind::Gqa, 4);
    g.architecture = Some("MiniMaxM3ForCausalLM".into());
    let minimax = ModelFacts { geometry: Some(g) };
    // Unset page size with fa3 on Hopper or trtllm_mha on Blackwell: 128.
    let p = server(&["--attention-backend", "fa3"], Gpu::H200).page_size(&minimax);
    assert_eq!(p.value, 128);
    assert_eq!(p.why, vec!["set to 128 for MiniMaxM3ForCausalLM with attention backend fa3".to_owned()]);
    assert_eq!(server(&[], Gpu::B200).page_size(&minimax).value, 128);
    // An explicit size or another backend keeps SGLang's usual result.
    assert_eq!(server(&["--page-size", "16", "--attention-backend", "fa3"], Gpu::H200).page_size(&minimax).value, 16);
    assert_eq!(server(&["--attention-backend", "flashinfer"], Gpu::H200).page_size(&minimax).value, 1);
    // DSA: 64 whatever is given; on ROCm it is an assumption.
    let glm = ModelFacts { geometry: Some(read("glm-5.1").geometry) };
    let p = server(&["--page-size", "16"], Gpu::H200).page_size(&glm);
    assert_eq!((p.value, p.assumption.is_none()), (64, true));
    let p = server(&["--page-size", "64"], Gpu::Mi300x).page_size(&glm);
    assert!(p.assumption.unwrap().starts_with("on ROCm SGLang forces page size 1 for DSA models"));
}
