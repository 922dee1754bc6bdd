//! pdlaunch in the browser: a builder, linter and explainer over `pdlaunch-core`, compiled to
//! WebAssembly by Trunk. The app holds a deployment, asks the core to render and validate it, and
//! shows the result; it has no validation logic of its own and makes no network request.
//!
//! The crate also builds for the host, where the pure parts (state, form, sharing) are tested.

pub mod browser;
pub mod components;
pub mod deflate;
pub mod form;
pub mod share;
pub mod state;
pub mod words;

/// Mounts the app on the page's body.
pub fn start() {
    #[cfg(target_arch = "wasm32")]
    {
        browser::mark("pdlaunch-start");
        yew::Renderer::<components::app::App>::new().render();
    }
}
