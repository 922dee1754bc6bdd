//! Two network namespaces joined by a veth pair, so that the agents' bytes cross a real network
//! interface (`--across netns`; Linux, root, iproute2). Removed on drop, and on any error while
//! they are set up.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::AgentError;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The pair of namespaces.
#[derive(Debug)]
pub struct Netns {
    /// The prefill's namespace.
    pub prefill: String,
    /// The decode's namespace.
    pub decode: String,
    /// The prefill's address.
    pub prefill_ip: String,
    /// The decode's address.
    pub decode_ip: String,
    made: Vec<String>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("cannot run `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Netns {
    /// Creates both namespaces, the veth pair and the addresses.
    pub fn create() -> Result<Netns, AgentError> {
        let id = format!("{:x}{:x}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let id = &id[id.len().saturating_sub(10)..];
        let mut ns = Netns {
            prefill: format!("pdl{id}p"),
            decode: format!("pdl{id}d"),
            prefill_ip: "10.254.0.1".into(),
            decode_ip: "10.254.0.2".into(),
            made: Vec::new(),
        };
        let env = |e: String| {
            AgentError::Environment(format!("--across netns needs root and iproute2 (network namespaces): {e}"))
        };
        for n in [ns.prefill.clone(), ns.decode.clone()] {
            ip(&["netns", "add", &n]).map_err(env)?;
            ns.made.push(n);
        }
        let (vp, vd) = (format!("v{id}p"), format!("v{id}d"));
        let (p, d) = (ns.prefill.clone(), ns.decode.clone());
        let steps: [Vec<&str>; 9] = [
            vec!["link", "add", &vp, "type", "veth", "peer", "name", &vd],
            vec!["link", "set", &vp, "netns", &p],
            vec!["link", "set", &vd, "netns", &d],
            vec!["-n", &p, "addr", "add", "10.254.0.1/30", "dev", &vp],
            vec!["-n", &d, "addr", "add", "10.254.0.2/30", "dev", &vd],
            vec!["-n", &p, "link", "set", &vp, "up"],
            vec!["-n", &d, "link", "set", &vd, "up"],
            vec!["-n", &p, "link", "set", "lo", "up"],
            vec!["-n", &d, "link", "set", "lo", "up"],
        ];
        for s in &steps {
            ip(s).map_err(env)?;
        }
        Ok(ns)
    }

    /// The namespace of a side.
    pub fn of(&self, role: super::Role) -> &str {
        match role {
            super::Role::Prefill => &self.prefill,
            super::Role::Decode => &self.decode,
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for n in self.made.drain(..) {
            let _ = ip(&["netns", "del", &n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> String {
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    #[test]
    fn namespaces_come_and_go() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: network namespaces need root");
            return;
        }
        let ns = match Netns::create() {
            Ok(ns) => ns,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let (p, d) = (ns.prefill.clone(), ns.decode.clone());
        assert!(listed().contains(&p) && listed().contains(&d));
        // The decode reaches the prefill's address through the veth pair.
        let ping =
            Command::new("ip").args(["netns", "exec", &d, "ip", "route", "get", &ns.prefill_ip]).output().unwrap();
        assert!(ping.status.success(), "{}", String::from_utf8_lossy(&ping.stderr));
        drop(ns);
        assert!(!listed().contains(&p) && !listed().contains(&d));
    }
}
