//! Stand-in SGLang servers for `pdlaunch probe`'s tests and bench: small HTTP servers on
//! 127.0.0.1 (std's `TcpListener`, a thread per connection) that answer with the payloads
//! `tools/gen_probe_fixtures.py` made with SGLang 0.5.23's own code (`tests/fixtures/probe/`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// A fixture's text.
pub fn fixture(path: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/probe").join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// How a stand-in answers one path.
#[derive(Clone)]
#[allow(dead_code)]
pub enum Reply {
    Json(String),
    Status(u16, String),
    /// Waits this long before answering.
    Slow(Duration, String),
    /// Bytes that are not HTTP.
    Garbage,
}

/// A stand-in server: answers each request by the first route whose path prefix matches.
pub struct Standin {
    /// Its port on 127.0.0.1.
    pub port: u16,
    routes: Arc<Mutex<Vec<(String, Reply)>>>,
    stop: Arc<AtomicBool>,
}

impl Standin {
    /// Starts a stand-in answering `routes`.
    pub fn start(routes: Vec<(&str, Reply)>) -> Standin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let routes = Arc::new(Mutex::new(routes.into_iter().map(|(p, r)| (p.to_owned(), r)).collect()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (routes.clone(), stop.clone());
        thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let r = r.clone();
                        thread::spawn(move || answer(conn, &r));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Standin { port, routes, stop }
    }

    /// A SGLang server answering `/server_info` (and `/get_server_info`) with `info`, and, when it
    /// is a prefill, its bootstrap `/route` with `route`, on the same port, which its info then
    /// reports as its bootstrap port.
    pub fn sglang(info: &str, route: Option<&str>) -> Standin {
        let s = Standin::start(vec![]);
        s.serve(info, route, true);
        s
    }

    /// Answers with `info` (and `route`) from now on; `new_name` adds 0.5.23's `/server_info`.
    pub fn serve(&self, info: &str, route: Option<&str>, new_name: bool) {
        let mut v: Value = serde_json::from_str(info).unwrap();
        if route.is_some() {
            v["disaggregation_bootstrap_port"] = self.port.into();
        }
        let info = v.to_string();
        let mut routes = vec![("/get_server_info".to_owned(), Reply::Json(info.clone()))];
        if new_name {
            routes.push(("/server_info".to_owned(), Reply::Json(info)));
        }
        if let Some(r) = route {
            routes.push(("/route?".to_owned(), Reply::Json(r.to_owned())));
        }
        routes.push(("/health".to_owned(), Reply::Json(String::new())));
        routes.push(("/model_info".to_owned(), Reply::Json(r#"{"model_path":"m","is_generation":true}"#.into())));
        routes.push(("/get_load".to_owned(), Reply::Json("{}".into())));
        *self.routes.lock().unwrap() = routes;
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn answer(mut conn: TcpStream, routes: &Mutex<Vec<(String, Reply)>>) {
    conn.set_nonblocking(false).ok();
    conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut req = Vec::new();
    let mut buf = [0u8; 4096];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&req);
    let path = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let reply = routes.lock().unwrap().iter().find(|(p, _)| path.starts_with(p.as_str())).map(|(_, r)| r.clone());
    let (status, body) = match reply {
        Some(Reply::Json(b)) => (200, b),
        Some(Reply::Status(s, b)) => (s, b),
        Some(Reply::Slow(d, b)) => {
            thread::sleep(d);
            (200, b)
        }
        Some(Reply::Garbage) => {
            let _ = conn.write_all(b"\x00\x01garbage that is no HTTP\r\n\r\n");
            return;
        }
        None => (404, r#"{"detail":"Not Found"}"#.to_owned()),
    };
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body.as_bytes());
}
