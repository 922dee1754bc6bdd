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

/// The NVIDIA Dynamo releases whose SGLang runtime image
/// (`nvcr.io/nvidia/ai-dynamo/sglang-runtime:<dynamo>`) ships one of the SGLang releases pdlaunch
/// knows, the newest patch of each: (Dynamo release, the SGLang version in its image). From
/// Dynamo's release artifacts table (`docs/fern/pages/reference/general/release-artifacts.mdx` in
/// ai-dynamo/dynamo: 0.8.1 ships 0.5.6.post2, 1.1.1 ships 0.5.10.post1) and, before that table,
/// the `sglang` extra of its `pyproject.toml` (0.6.1 pins 0.5.3.post2). Dynamo 1.0 (0.5.9), 1.2
/// (0.5.11), 1.3 (0.5.14) and 1.4 (0.5.16) ship releases pdlaunch has no spec of, and none ships
/// 0.5.19 or 0.5.23 yet.
pub const DYNAMO_RELEASES: &[(&str, &str)] =
    &[("0.6.1", "0.5.3.post2"), ("0.8.1", "0.5.6.post2"), ("1.1.1", "0.5.10.post1")];

impl Release {
    /// The Dynamo release whose SGLang runtime ships this release, if one does.
    pub fn dynamo(self) -> Option<&'static str> {
        DYNAMO_RELEASES.iter().find(|(_, sglang)| Release::for_version(sglang) == Some((self, true))).map(|(d, _)| *d)
    }
    /// The SGLang version the runtime image of Dynamo release `dynamo` ships, if pdlaunch knows it.
    pub fn in_dynamo(dynamo: &str) -> Option<&'static str> {
        DYNAMO_RELEASES.iter().find(|(d, _)| *d == dynamo.trim_start_matches('v')).map(|(_, s)| *s)
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

/// A set of SGLang server releases (those that accept a flag), written as the range it is:
/// [`ServerReleases::ALL`], `since(0.5.19)`, `until(0.5.19)` or `between(0.5.3, 0.5.10)`. Its own
/// type, apart from [`RouterReleases`], so that no server flag is asked about a router release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerReleases(u8);

impl ServerReleases {
    /// Every known release.
    pub const ALL: ServerReleases = ServerReleases::between(Release::V0_4_10, Release::LATEST);
    /// `first` and every newer release.
    pub const fn since(first: Release) -> ServerReleases {
        ServerReleases::between(first, Release::LATEST)
    }
    /// Every release up to `last`, included.
    pub const fn until(last: Release) -> ServerReleases {
        ServerReleases::between(Release::V0_4_10, last)
    }
    /// `first` to `last`, both included.
    pub const fn between(first: Release, last: Release) -> ServerReleases {
        ServerReleases(range_bits(first as u8, last as u8))
    }
    /// True when `release` is in the set.
    pub const fn contains(self, release: Release) -> bool {
        self.0 & (1 << release as u8) != 0
    }
    /// True when every known release is in the set.
    pub const fn is_all(self) -> bool {
        self.0 == ServerReleases::ALL.0
    }
    /// The releases in the set, oldest first.
    pub fn iter(self) -> impl Iterator<Item = Release> {
        Release::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

/// A set of sglang-router releases: [`RouterReleases::ALL`] or `since(0.2.1)`; the router's
/// counterpart of [`ServerReleases`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouterReleases(u8);

impl RouterReleases {
    /// Every known router release.
    pub const ALL: RouterReleases = RouterReleases::since(RouterRelease::V0_1_9);
    /// `first` and every newer router release.
    pub const fn since(first: RouterRelease) -> RouterReleases {
        RouterReleases(range_bits(first as u8, RouterRelease::LATEST as u8))
    }
    /// True when `release` is in the set.
    pub const fn contains(self, release: RouterRelease) -> bool {
        self.0 & (1 << release as u8) != 0
    }
    /// True when every known router release is in the set.
    pub const fn is_all(self) -> bool {
        self.0 == RouterReleases::ALL.0
    }
    /// The releases in the set, oldest first.
    pub fn iter(self) -> impl Iterator<Item = RouterRelease> {
        RouterRelease::ALL.into_iter().filter(move |r| self.contains(*r))
    }
}

// A release set holds one bit per release in a `u8`.
const _: () = assert!(Release::ALL.len() <= 8 && RouterRelease::ALL.len() <= 8);

/// Bits `first..=last` of a release set (one bit per release, oldest lowest).
const fn range_bits(first: u8, last: u8) -> u8 {
    // Up to 8 releases: shifts stay below the width.
    ((0xffu16 << first) & (0xffu16 >> (7 - last))) as u8
}
