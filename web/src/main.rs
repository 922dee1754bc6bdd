//! The app's entry point (Trunk builds this binary for wasm32).

fn main() {
    pdlaunch_web::start();
}
