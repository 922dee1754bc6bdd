//! The browser at the edge: URL fragment, local storage, downloads, clipboard, focus and
//! performance marks. Failures are ignored or returned: a private window without storage still
//! works, it just does not autosave.

use wasm_bindgen::{JsCast, JsValue};

/// The key of the autosaved deployment in local storage.
pub const AUTOSAVE_KEY: &str = "pdlaunch.deployment";

fn window() -> Option<web_sys::Window> {
    web_sys::window()
}

/// The current URL fragment, with its `#`.
pub fn fragment() -> Option<String> {
    window()?.location().hash().ok().filter(|h| !h.is_empty())
}

/// Replaces the URL fragment without adding a history entry.
pub fn replace_fragment(fragment: &str) {
    if let Some(h) = window().and_then(|w| w.history().ok()) {
        let _ = h.replace_state_with_url(&JsValue::NULL, "", Some(fragment));
    }
}

/// The full current URL.
pub fn href() -> Option<String> {
    window()?.location().href().ok()
}

/// A value from local storage.
pub fn load(key: &str) -> Option<String> {
    window()?.local_storage().ok()??.get_item(key).ok()?
}

/// Stores a value in local storage.
pub fn save(key: &str, value: &str) {
    if let Some(s) = window().and_then(|w| w.local_storage().ok().flatten()) {
        let _ = s.set_item(key, value);
    }
}

/// Offers `text` as a file download named `name`.
pub fn download(name: &str, mime: &str, text: &str) -> Result<(), JsValue> {
    let parts = js_sys::Array::of1(&JsValue::from_str(text));
    let opts = web_sys::BlobPropertyBag::new();
    opts.set_type(mime);
    let blob = web_sys::Blob::new_with_str_sequence_and_options(&parts, &opts)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob)?;
    let document = window().and_then(|w| w.document()).ok_or("no document")?;
    let a: web_sys::HtmlAnchorElement = document.create_element("a")?.dyn_into()?;
    a.set_href(&url);
    a.set_download(name);
    a.click();
    web_sys::Url::revoke_object_url(&url)?;
    Ok(())
}

/// Copies text to the clipboard (asynchronously; the browser may refuse).
pub fn copy(text: &str) {
    if let Some(w) = window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

/// Moves keyboard focus to the element with this id and scrolls it into view.
pub fn focus(id: &str) {
    if let Some(el) = window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(id)) {
        if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
            let _ = el.focus();
            el.scroll_into_view();
        }
    }
}

/// Records a performance mark (read by `web/bench.sh`).
pub fn mark(name: &str) {
    if let Some(p) = window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// Reads a dropped or chosen file as text, then calls `done` with its name and text.
pub fn read_file(file: web_sys::File, done: impl FnOnce(String, String) + 'static) {
    let name = file.name();
    wasm_bindgen_futures::spawn_local(async move {
        if let Ok(text) = wasm_bindgen_futures::JsFuture::from(file.text()).await {
            done(name, text.as_string().unwrap_or_default());
        }
    });
}

/// Runs `f` after the current task (and the rendering it triggered) is done.
pub fn later(f: impl FnOnce() + 'static) {
    if let Some(w) = window() {
        let f = wasm_bindgen::closure::Closure::once_into_js(f);
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(f.unchecked_ref(), 0);
    }
}

/// Calls `f` with the new fragment whenever the user changes the URL fragment (a pasted link);
/// the returned guard stops listening when dropped.
pub fn on_fragment_change(f: impl Fn(String) + 'static) -> Option<Listener> {
    let w = window()?;
    let closure = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || f(fragment().unwrap_or_default()));
    w.add_event_listener_with_callback("hashchange", closure.as_ref().unchecked_ref()).ok()?;
    Some(Listener { event: "hashchange", closure })
}

/// A window event listener, removed when dropped.
pub struct Listener {
    event: &'static str,
    closure: wasm_bindgen::closure::Closure<dyn Fn()>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Some(w) = window() {
            let _ = w.remove_event_listener_with_callback(self.event, self.closure.as_ref().unchecked_ref());
        }
    }
}
