//! Placement proofs on the CPU engine: for MHA, GQA with replicated heads and MLA, bf16 and
//! fp8, page sizes 1, 16 and 64, equal and heterogeneous TP, PP 2 -> 1, and both transfer
//! models, the clean transfer puts every slice where the decode reads it and touches nothing
//! else, and every applicable negative control is caught.

use pdlaunch_core::deployment::AttentionKind;
use pdlaunch_kv::case::{prepare, Case, Perturbation, Prepared};
use pdlaunch_kv::dtype::KvDtype;
use pdlaunch_kv::engine::cpu::CpuEngine;
use pdlaunch_kv::engine::{Engine, Job};
use pdlaunch_kv::geometry::{KvAttention, KvGeometry};
use pdlaunch_kv::layout::SideConfig;
use pdlaunch_kv::transfer::TransferBackend;
use pdlaunch_kv::verify::Verification;

const TOKENS: u32 = 70;

fn mha(kv_heads: u32) -> KvGeometry {
    KvGeometry { kind: AttentionKind::Mha, layers: 4, attention: KvAttention::Mha { kv_heads, head_dim: 32 } }
}

fn gqa(kv_heads: u32) -> KvGeometry {
    KvGeometry { kind: AttentionKind::Gqa, layers: 4, attention: KvAttention::Mha { kv_heads, head_dim: 32 } }
}

fn mla() -> KvGeometry {
    KvGeometry {
        kind: AttentionKind::Mla,
        layers: 4,
        attention: KvAttention::Mla { kv_lora_rank: 24, qk_rope_head_dim: 8 },
    }
}

fn side(page_size: u32, dtype: KvDtype, attn_tp: u32, pp: u32) -> SideConfig {
    SideConfig { page_size, dtype, attn_tp, pp }
}

/// Runs the plan on the CPU and verifies the decode pools.
fn transfer(p: &Prepared) -> Verification {
    let prefill = p.prefill_pools();
    let mut decode = p.decode_pools();
    let mut engine = CpuEngine::new(Some(2));
    let job = Job { prepared: p, prefill: &prefill, iterations: 1, progress: &|_, _| {} };
    engine.run(0, &job, &mut decode).expect("the CPU engine does not fail");
    p.verify(&decode)
}

/// The clean case lands every slice; every applicable control is caught. Returns the controls
/// that did not apply.
fn prove(geometry: KvGeometry, prefill: SideConfig, decode: SideConfig, backend: TransferBackend) -> Vec<Perturbation> {
    let case = Case { geometry, prefill, decode, backend, tokens: TOKENS, seed: 11 };
    let what = format!("{} {:?} -> {:?} {:?}", geometry.describe(), prefill, decode, backend);
    let clean = prepare(&case, None).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(clean.plan.rejected(), 0, "{what}: clean plan sets descriptors aside");
    assert!(clean.plan.pairs.iter().all(|p| p.refused.is_none() && p.truncated_pages == 0), "{what}");
    let v = transfer(&clean);
    assert!(v.is_clean(), "{what}: clean case flagged: {}\n{:#?}", v.summary(), v.first_errors);
    assert!(v.slices > 0);

    let mut not_applicable = Vec::new();
    for c in Perturbation::ALL {
        if c.apply(&case).is_err() {
            not_applicable.push(c);
            continue;
        }
        let p = prepare(&case, Some(c)).unwrap_or_else(|e| panic!("{what} {}: {e}", c.name()));
        let v = transfer(&p);
        let refused = p.plan.pairs.iter().any(|x| x.refused.is_some());
        assert!(!v.is_clean() || p.plan.rejected() > 0 || refused, "{what}: control `{}` was not caught", c.name());
        if !v.is_clean() {
            assert!(!v.diagnosis.is_empty(), "{what} {}: no diagnosis", c.name());
        }
    }
    not_applicable
}

fn expect_na(page_size: u32, is_mla: bool) -> Vec<Perturbation> {
    let mut v = Vec::new();
    if page_size < 4 {
        v.push(Perturbation::DecodePageDiv4);
    }
    if is_mla {
        v.push(Perturbation::SwapKv);
    }
    v
}

const PAGES: [u32; 3] = [1, 16, 64];
const DTYPES: [KvDtype; 2] = [KvDtype::Bf16, KvDtype::Fp8E4m3];
const BACKENDS: [TransferBackend; 2] = [TransferBackend::Mooncake, TransferBackend::Nixl];

fn matrix(geometry: KvGeometry, tps: &[(u32, u32)]) {
    for &page in &PAGES {
        for &dtype in &DTYPES {
            for &(ptp, dtp) in tps {
                for &backend in &BACKENDS {
                    let na = prove(geometry, side(page, dtype, ptp, 1), side(page, dtype, dtp, 1), backend);
                    assert_eq!(na, expect_na(page, geometry.is_mla()), "page {page}");
                }
            }
        }
    }
}

#[test]
fn mha_equal_and_hetero_tp() {
    // 4 KV heads: TP 1:1 and 2:2 whole pages, 2 -> 4 and 4 -> 2 head slices.
    matrix(mha(4), &[(1, 1), (2, 2), (2, 4), (4, 2)]);
}

#[test]
fn gqa_with_replicated_heads() {
    // 2 KV heads over 4 ranks: consecutive ranks share a head, on either side.
    matrix(gqa(2), &[(4, 4), (2, 4), (4, 2), (1, 4)]);
}

#[test]
fn gqa_eight_heads_prefill_4_decode_2() {
    // The case the old non-modulo head mapping got wrong: prefill rank 2 must write at head 0
    // of decode rank 1, not at head 4.
    for &backend in &BACKENDS {
        prove(gqa(8), side(16, KvDtype::Bf16, 4, 1), side(16, KvDtype::Bf16, 2, 1), backend);
    }
}

#[test]
fn mla_latent_any_tp() {
    matrix(mla(), &[(1, 1), (2, 2), (1, 2), (2, 1)]);
}

#[test]
fn pp_two_to_one() {
    for &page in &PAGES {
        for &dtype in &DTYPES {
            for &backend in &BACKENDS {
                prove(mha(4), side(page, dtype, 1, 2), side(page, dtype, 1, 1), backend);
                prove(mla(), side(page, dtype, 2, 2), side(page, dtype, 2, 1), backend);
                prove(gqa(2), side(page, dtype, 2, 2), side(page, dtype, 4, 1), backend);
            }
        }
    }
}

#[test]
fn pp_equal_stages() {
    prove(mha(4), side(16, KvDtype::Bf16, 2, 2), side(16, KvDtype::Bf16, 2, 2), TransferBackend::Mooncake);
}

#[test]
fn page_size_mismatch_in_the_deployment_is_caught_without_a_control() {
    // The sides really differ (an attention backend snapped one of them): SGLang's math writes
    // with the prefill's item length and the verifier sees it.
    let case = Case {
        geometry: gqa(4),
        prefill: side(64, KvDtype::Bf16, 1, 1),
        decode: side(16, KvDtype::Bf16, 1, 1),
        backend: TransferBackend::Mooncake,
        tokens: TOKENS,
        seed: 3,
    };
    let p = prepare(&case, None).unwrap();
    let v = transfer(&p);
    assert!(!v.is_clean() || p.plan.rejected() > 0);
    assert!(v.ok < v.slices);
}

#[test]
fn kv_swap_is_diagnosed_as_such() {
    let case = Case {
        geometry: mha(4),
        prefill: side(16, KvDtype::Bf16, 2, 1),
        decode: side(16, KvDtype::Bf16, 2, 1),
        backend: TransferBackend::Mooncake,
        tokens: TOKENS,
        seed: 5,
    };
    let p = prepare(&case, Some(Perturbation::SwapKv)).unwrap();
    let v = transfer(&p);
    assert_eq!(v.ok, 0);
    assert_eq!(v.misplaced, v.slices);
    assert!(v.diagnosis[0].starts_with("K/V buffer order"), "{:?}", v.diagnosis);
    let e = &v.first_errors[0];
    let found = e.found.expect("the misplaced slice names itself");
    assert_eq!((found.token, found.layer, found.head), (e.expected.token, e.expected.layer, e.expected.head));
    assert_ne!(found.kind, e.expected.kind);
}

#[test]
fn decode_tp_x2_leaves_ranks_empty_for_mla() {
    let case = Case {
        geometry: mla(),
        prefill: side(16, KvDtype::Bf16, 2, 1),
        decode: side(16, KvDtype::Bf16, 2, 1),
        backend: TransferBackend::Nixl,
        tokens: TOKENS,
        seed: 7,
    };
    let p = prepare(&case, Some(Perturbation::DecodeTpX2)).unwrap();
    let v = transfer(&p);
    // Decode ranks 2 and 3 exist but the plan (for TP 2) never writes them.
    assert_eq!(v.missing, v.slices / 2);
    assert!(v.diagnosis.iter().any(|d| d.contains("received nothing")), "{:?}", v.diagnosis);
}
