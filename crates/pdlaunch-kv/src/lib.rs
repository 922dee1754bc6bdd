//! pdlaunch-kv: the KV transfer smoke test. It models SGLang's KV pools and the descriptors its
//! Mooncake and NIXL senders compute (pure, tested without a GPU), fills the prefill pools with
//! self-describing canaries, executes the plan with a CPU or CUDA engine, and proves that every
//! (layer, K/V, token, head) slice landed where the decode will read it, and nothing else moved.
//!
//! [`agent`] moves the KV between two processes through NIXL or Mooncake.
//!
//! Pure modules: [`dtype`], [`geometry`], [`layout`], [`pages`], [`transfer`], [`truth`],
//! [`canary`], [`verify`], [`case`], [`checks`], [`sides`]. Edges: [`engine`] (threads, GPUs),
//! [`memory`] (reads `/proc/meminfo`), [`smoke`] (the whole run, as `pdlaunch smoke` uses it).

pub mod agent;
pub mod canary;
pub mod case;
pub mod checks;
pub mod dtype;
pub mod engine;
pub mod geometry;
pub mod layout;
pub mod memory;
pub mod pages;
pub mod rng;
pub mod sides;
pub mod smoke;
pub mod transfer;
pub mod truth;
pub mod verify;
