//! The SGLang and sglang-router releases pdlaunch knows, and their embedded argparse specs.
//!
//! The per-release spec files (`spec/*-args-*.json`, read from the released packages) are the
//! source. The crate embeds `spec/bundle.txt`, generated from them with each distinct option
//! declaration stored once, in a line format read without a derived deserializer (74 KB instead of
//! 568 KB); a test fails when the bundle is stale and regenerates it with `PDLAUNCH_UPDATE_SPECS=1`.

use std::fmt;

use schemars::JsonSchema;

use crate::spec::{Program, Spec};

/// An SGLang server release whose argparse spec ships with pdlaunch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub enum Release {
    #[serde(rename = "0.4.10.post2")]
    V0_4_10,
    #[serde(rename = "0.5.1.post3")]
    V0_5_1,
    #[serde(rename = "0.5.3.post3")]
    V0_5_3,
    #[serde(rename = "0.5.6.post2")]
    V0_5_6,
    #[serde(rename = "0.5.10.post1")]
    V0_5_10,
    #[serde(rename = "0.5.19")]
    V0_5_19,
    #[serde(rename = "0.5.23")]
    V0_5_23,
}

crate::choices::unit_enum_serde!(Release);
crate::choices::unit_enum_serde!(RouterRelease);

impl Default for Release {
    fn default() -> Self {
        Release::LATEST
    }
}

impl Release {
    /// Every known release, oldest first.
    pub const ALL: [Release; 7] = [
        Release::V0_4_10,
        Release::V0_5_1,
        Release::V0_5_3,
        Release::V0_5_6,
        Release::V0_5_10,
        Release::V0_5_19,
        Release::V0_5_23,
    ];
    /// The newest release, the default target.
    pub const LATEST: Release = Release::V0_5_23;

    /// The version strings as published on PyPI, in the order of [`Release::ALL`].
    pub const NAMES: &'static [&'static str] =
        &["0.4.10.post2", "0.5.1.post3", "0.5.3.post3", "0.5.6.post2", "0.5.10.post1", "0.5.19", "0.5.23"];

    /// The version string as published on PyPI.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The next newer known release.
    pub fn next(self) -> Option<Release> {
        Self::ALL.get(self as usize + 1).copied()
    }

    /// Bit of this release in a release mask ([`crate::flags::Flag::releases`]).
    pub const fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The argparse spec of `python -m sglang.launch_server` in this release.
    pub fn spec(self) -> &'static Spec {
        static CELLS: [std::sync::OnceLock<Spec>; 7] = [const { std::sync::OnceLock::new() }; 7];
        CELLS[self as usize].get_or_init(|| Spec::embedded(Program::Server, self.as_str()))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Release {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Release::named(s).ok_or_else(|| {
            let known: Vec<_> = Release::ALL.iter().map(|r| r.as_str()).collect();
            format!("unknown SGLang release `{s}`; known releases: {}", known.join(", "))
        })
    }
}

impl Release {
    /// The release named `s` (`v0.5.6`, `0.5.6` and `0.5.6.post2` all name `0.5.6.post2`).
    pub fn named(s: &str) -> Option<Release> {
        let wanted = s.trim().trim_start_matches('v');
        Release::ALL.into_iter().find(|r| r.as_str() == wanted || without_post(r.as_str()) == wanted)
    }
}

impl Release {
    /// The release to read commands written for SGLang `version` with: the known release of that
    /// version (`0.5.6` and `0.5.6.post1` name `0.5.6.post2`), with `true`; else the newest known
    /// release before it (`0.5.8.post1` gives `0.5.6.post2`), with `false`. `None` when the text is
    /// no version, or one older than every known release.
    pub fn for_version(version: &str) -> Option<(Release, bool)> {
        let version = version.trim().trim_start_matches('v');
        let base = version.match_indices('.').nth(2).map_or(version, |(i, _)| &version[..i]);
        if let Some(r) = Release::named(version).or_else(|| Release::named(base)) {
            return Some((r, true));
        }
        let key = version_key(version)?;
        Release::ALL.into_iter().rev().find(|r| version_key(r.as_str()).is_some_and(|k| k <= key)).map(|r| (r, false))
    }
}

/// `0.5.8.post1` as `[0, 5, 8, 1]`, for ordering versions.
fn version_key(version: &str) -> Option<[u32; 4]> {
    let mut parts = version.split('.');
    let mut key = [0; 4];
    for slot in &mut key[..3] {
        *slot = parts.next()?.parse().ok()?;
    }
    key[3] = match parts.next() {
        None => 0,
        Some(p) => p.strip_prefix("post")?.parse().ok()?,
    };
    parts.next().is_none().then_some(key)
}

/// `0.5.6` of `0.5.6.post2`: the text before the first `.post` (bytes compared directly; image
/// tags are read for every container).
fn without_post(name: &str) -> &str {
    name.as_bytes().windows(5).position(|w| w == b".post").map_or(name, |i| &name[..i])
}

/// An sglang-router release whose argparse spec ships with pdlaunch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema)]
pub enum RouterRelease {
    #[serde(rename = "0.1.9")]
    V0_1_9,
    #[serde(rename = "0.2.1")]
    V0_2_1,
    #[serde(rename = "0.2.3")]
    V0_2_3,
    #[serde(rename = "0.3.2")]
    V0_3_2,
}

impl Default for RouterRelease {
    fn default() -> Self {
        RouterRelease::LATEST
    }
}

impl RouterRelease {
    /// Every known router release, oldest first.
    pub const ALL: [RouterRelease; 4] =
        [RouterRelease::V0_1_9, RouterRelease::V0_2_1, RouterRelease::V0_2_3, RouterRelease::V0_3_2];
    /// The newest router release, the default target.
    pub const LATEST: RouterRelease = RouterRelease::V0_3_2;

    /// The version strings as published on PyPI, in the order of [`RouterRelease::ALL`].
    pub const NAMES: &'static [&'static str] = &["0.1.9", "0.2.1", "0.2.3", "0.3.2"];

    /// The version string as published on PyPI.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Bit of this release in a router flag's release mask.
    pub const fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// The argparse spec of `python -m sglang_router.launch_router` in this release.
    pub fn spec(self) -> &'static Spec {
        static CELLS: [std::sync::OnceLock<Spec>; 4] = [const { std::sync::OnceLock::new() }; 4];
        CELLS[self as usize].get_or_init(|| Spec::embedded(Program::Router, self.as_str()))
    }
}

impl fmt::Display for RouterRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
