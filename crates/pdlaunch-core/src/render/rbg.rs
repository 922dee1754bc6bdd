//! A RoleBasedGroup (`workloads.x-k8s.io/v1alpha2`, SGLang's RBG controller): one role per set of
//! server instances (`prefill`, `decode`, or `prefill-<i>` when the instances of a side start
//! differently), each a leader-worker pattern of one pod per node, and a `router` role that
//! depends on every server role, so that the controller creates the routers once the servers are
//! ready. The Service in front of the routers (and, with `kubernetes.service_discovery`, the
//! ServiceAccount and RBAC that let them watch the pods) follow as objects of their own, as in
//! the `kubernetes` format.
//!
//! The pods are those of [`super::pods`] placed by [`Engine::Rbg`]: the role's default workload,
//! a RoleInstanceSet, makes instance `g` of role set `s` the RoleInstance `s-g` whose pods are
//! `s-g-0` (the leader) to `s-g-<k>`, all in the headless Service `s-s`; each pod reads its
//! leader's address and its index from `$(RBG_LWP_LEADER_ADDRESS)` and
//! `$(RBG_LWP_WORKER_INDEX)`. One template starts every pod of a group (no patch changes the
//! containers), so it declares the leader's ports and probes none when a group has workers.
//!
//! Written for the RBG controller's v1alpha2 API (its CRD as of the commit named in
//! `tests/fixtures/crds/README.md`); its `exclusive-topology` annotation separates roles, not
//! groups, so `kubernetes.exclusive_topology` (LeaderWorkerSet's meaning) is refused.

use super::pods::{layout, pod, router_pod, router_service, Engine, Layout, Yaml};
use super::{header, RenderError, RenderedFile};
use crate::deployment::Deployment;

/// The API version written.
pub(crate) const API_VERSION: &str = "workloads.x-k8s.io/v1alpha2";

/// Renders the deployment as one multi-document YAML file (`<name>.rbg.yaml`).
pub fn render_rbg(d: &Deployment) -> Result<RenderedFile, RenderError> {
    Ok(manifest(d, &rbg_layout(d)?))
}

/// Why the deployment cannot run as a RoleBasedGroup, if it cannot.
pub(crate) fn refusal(d: &Deployment) -> Option<RenderError> {
    rbg_layout(d).err()
}

fn rbg_layout(d: &Deployment) -> Result<Layout, RenderError> {
    if d.kubernetes.exclusive_topology.is_some() {
        return Err(RenderError::at(
            "kubernetes.exclusive_topology",
            format_args!(
                "gives each LeaderWorkerSet group a topology domain of its own; a RoleBasedGroup's \
                 exclusive topology keeps roles apart instead, and none keeps the groups of one role apart. \
                 Leave it unset for the `rbg` format, or render `kubernetes`"
            ),
        ));
    }
    layout(d, Engine::Rbg)
}

/// The role of a set: the set's name less the deployment's (`prefill`, `decode-1`).
fn role_name<'a>(d: &Deployment, set: &'a str) -> &'a str {
    &set[d.name.len() + 1..]
}

fn manifest(d: &Deployment, layout: &Layout) -> RenderedFile {
    let mut y = Yaml(header(&layout.plan));
    y.0.push_str(
        "# Needs SGLang's RoleBasedGroup controller (workloads.x-k8s.io/v1alpha2); `kubectl apply -f` this\n\
         # file in one namespace. Each instance is one leader-worker group of pods, one pod per node; the\n\
         # router role starts once the server roles are ready. Pods that use RDMA (`ib_device`) run on\n\
         # the host network. A local model path is mounted from the same path on the node.\n",
    );
    y.0.push_str(match layout.discovery {
        None => "# The router reaches the leaders by their pod names: render again after changing `instances`.\n",
        Some(_) => "# The router finds the leader pods by their labels, so scaling a role adds groups it serves.\n",
    });
    y.line(0, "---");
    y.object(API_VERSION, "RoleBasedGroup", d, &d.name, "group");
    y.key(0, "spec");
    y.key(2, "roles");
    for (k, set) in layout.sets.iter().enumerate() {
        let nnodes = layout.plan.servers[layout.templates[k].server].nnodes;
        y.first(2, "name", role_name(d, &set.name));
        y.plain(4, "replicas", set.instances.len());
        y.key(4, "leaderWorkerPattern");
        y.plain(6, "size", nnodes);
        y.key(6, "restartPolicyConfig");
        y.pair(8, "type", "RecreateRoleInstanceOnPodRestart");
        y.key(6, "template");
        pod(&mut y, 8, d, layout, k, (nnodes == 1).then_some(true));
    }
    y.first(2, "name", "router");
    y.plain(4, "replicas", layout.cluster.router_replicas);
    y.key(4, "dependencies");
    for set in &layout.sets {
        y.item(4, role_name(d, &set.name));
    }
    y.key(4, "standalonePattern");
    y.key(6, "template");
    router_pod(&mut y, 8, d, layout);
    router_service(&mut y, d, layout);
    RenderedFile { name: format!("{}.rbg.yaml", d.name), contents: y.0, executable: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::{example, EXAMPLES};

    fn rendered(d: &Deployment) -> String {
        render_rbg(d).unwrap_or_else(|e| panic!("{}: {e}", d.name)).contents
    }

    #[test]
    fn show() {
        for e in EXAMPLES {
            eprintln!("{}", rendered(&example(e.name).unwrap()));
        }
    }
}
