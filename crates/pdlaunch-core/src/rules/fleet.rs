//! What a probe of running servers read besides their views: whether each server answered, the
//! release it reports, the bootstrap info each prefill publishes, the router's workers, and the
//! deployment the fleet should run. The rules of [`super::Check::Fleet`] read it; the core's
//! `probe` module builds it from the documents the servers returned.

use super::Context;
use crate::deployment::Role;

/// A probed fleet: the rules' context of the servers that answered, and what else the probe saw.
#[derive(Debug)]
pub struct Fleet<'a> {
    /// The views of the servers that answered (labelled by URL), and the router's, as the other
    /// rules see them.
    pub ctx: Context<'a>,
    /// Every server probed, in the order given.
    pub servers: Vec<Probed>,
    /// The router the workers were read from, when there was one, and whether it gave them.
    pub router: Option<(String, Result<(), String>)>,
    /// The deployment the fleet should run (`--against`), rendered: its name and context.
    pub planned: Option<(String, Context<'a>)>,
}

/// One probed server.
#[derive(Clone, Debug)]
pub struct Probed {
    /// The URL it was probed at.
    pub url: String,
    /// The role it was given (`--prefill`/`--decode`, or the router's list).
    pub role: Option<Role>,
    /// True when the router's worker list named it.
    pub from_router: bool,
    /// The router's id of the worker, when it gave one (what `DELETE /workers/{id}` removes).
    pub worker_id: Option<String>,
    /// The index of its view in [`Fleet::ctx`]'s servers, or why it has none.
    pub answer: Result<usize, String>,
    /// The SGLang version it reports.
    pub version: Option<String>,
    /// A prefill's bootstrap info: the URL asked and what it answered.
    pub route: Option<(String, Result<RouteInfo, String>)>,
}

/// What a prefill's bootstrap server publishes to the decodes (`PrefillServerInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    /// Attention TP size per prefill rank group.
    pub attn_tp_size: u32,
    /// Attention CP size.
    pub attn_cp_size: u32,
    /// DP size.
    pub dp_size: u32,
    /// PP size.
    pub pp_size: u32,
    /// The page size of its KV pool, when published.
    pub page_size: Option<u32>,
    /// The KV-cache dtype string, when published.
    pub kv_cache_dtype: Option<String>,
}

impl Fleet<'_> {
    /// The probed servers that answered, with their views.
    pub fn answered(&self) -> impl Iterator<Item = (&Probed, &crate::effective::ServerView)> {
        self.servers.iter().filter_map(|p| p.answer.as_ref().ok().map(|&i| (p, &self.ctx.servers[i])))
    }
}
