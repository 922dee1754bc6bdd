//! pdlaunch in the browser: a builder, linter and explainer over `pdlaunch-core`, compiled to
//! WebAssembly by Trunk. The app holds a deployment, asks the core to render and validate it, and
//! shows the result; it has no validation logic of its own and makes no network request.
//!
//! The crate also builds for the host, where the pure parts (state, form, sharing) are tested.
//!
//! Views that hold state, or whose props let Yew skip them on an edit (a form section, the outputs),
//! are function components; the rest are plain functions returning `Html`, since each component
//! type adds its own copy of Yew's lifecycle code to the download (Lint and Explain render only
//! while their tab is shown, so they recompute on each render instead of memoizing). Links carry the
//! deployment compressed by the browser's own `CompressionStream` (`share.rs`).

pub mod browser;
pub mod components;
pub mod form;
pub mod share;
pub mod state;
pub mod words;

/// Mounts the app on the page's body, once the link it was opened with (if any) is read.
pub fn start() {
    #[cfg(target_arch = "wasm32")]
    {
        browser::mark("pdlaunch-start");
        wasm_bindgen_futures::spawn_local(async {
            let link = match browser::fragment() {
                Some(f) => share::from_fragment(&f).await,
                None => None,
            };
            yew::Renderer::<components::app::App>::with_props(components::app::AppProps { link }).render();
        });
    }
}
