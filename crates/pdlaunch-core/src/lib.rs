//! pdlaunch-core: the pure heart of pdlaunch. It describes an SGLang prefill-decode deployment
//! once ([`deployment::Deployment`]), renders matched prefill, decode and router command lines
//! from it ([`render`]), and validates them with SGLang's own rules ([`rules`]).
//!
//! The crate does no I/O: no files, network, clock or threads. Text comes in, values go out, so it
//! runs unchanged in WebAssembly.

pub mod causes;
pub mod choices;
pub mod deployment;
pub mod deployment_fix;
pub mod effective;
pub mod examples;
pub mod explain;
mod fast_hash;
pub mod flags;
pub mod float;
pub mod lint;
pub mod load;
pub mod model;
pub mod picture;
pub mod plan;
pub mod probe;
pub mod read;
pub mod release;
pub mod render;
pub mod rules;
pub mod schema;
pub mod sort;
pub mod spec;
pub mod yaml_value;
