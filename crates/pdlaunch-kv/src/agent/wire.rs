//! The bootstrap conversation between the two sides, as SGLang's decode has with the prefill's
//! bootstrap server: the decode connects to the prefill's bootstrap host:port and sends its
//! transfer info (who it is for the transfer library, its registered region addresses per rank,
//! the request's page indices); the prefill writes, then says it is done. One JSON object per
//! line over TCP; every connect and read has a deadline, and every failure names host:port.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::AgentError;

/// One decode rank's registered regions, in SGLang's `kv_data_ptrs` order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankInfo {
    /// `pp0/tp1`.
    pub label: String,
    /// Address of each layer buffer as the transfer library sees it.
    pub ptrs: Vec<u64>,
    /// Its length.
    pub lens: Vec<u64>,
}

/// What the decode tells the prefill (SGLang's `KVArgsRegisterInfo` + `TransferInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeInfo {
    /// The case, so that sides started for different cases refuse each other.
    pub case: String,
    /// NIXL agent name or Mooncake session id (`host:port`).
    pub peer: String,
    /// NIXL agent metadata (empty for Mooncake).
    pub metadata: Vec<u8>,
    /// Per decode rank.
    pub ranks: Vec<RankInfo>,
    /// The request's decode page indices.
    pub pages: Vec<u32>,
    /// The contiguous reference region (address, length).
    pub reference: (u64, u64),
    /// The GPU the decode's pools are on (GPU pools only).
    #[serde(default)]
    pub gpu: u32,
}

/// What the prefill sends when it has written everything.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Done {
    /// Notifications sent with the writes (NIXL), which the decode must see before reading.
    pub notifications: u32,
    /// Why the prefill gave up, if it did.
    pub error: Option<String>,
}

/// The decode's last word.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bye {
    /// Verified (or failed) and done with the connection.
    pub ok: bool,
}

/// One connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    peer: String,
}

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())
}

/// Listens on `addr` (`host:port`; port 0 picks a free one); returns the listener and the
/// address it took.
pub fn listen(addr: &str) -> Result<(TcpListener, String), AgentError> {
    let l = TcpListener::bind(addr).map_err(|e| {
        AgentError::Connect(format!(
            "the prefill cannot listen on its bootstrap address {addr}: {e} (the address must belong to this host; give --bootstrap HOST:PORT)"
        ))
    })?;
    let local = l.local_addr().map_err(|e| AgentError::Connect(format!("{addr}: {e}")))?;
    Ok((l, local.to_string()))
}

/// Waits for the decode until `deadline`.
pub fn accept(l: &TcpListener, addr: &str, deadline: Instant) -> Result<Conn, AgentError> {
    l.set_nonblocking(true).map_err(|e| AgentError::Connect(format!("{addr}: {e}")))?;
    loop {
        match l.accept() {
            Ok((s, peer)) => {
                s.set_nonblocking(false).map_err(|e| AgentError::Connect(format!("{addr}: {e}")))?;
                let _ = s.set_nodelay(true);
                return Ok(Conn { reader: BufReader::new(s), peer: peer.to_string() });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if remaining(deadline).is_none() {
                    return Err(AgentError::Connect(format!(
                        "no decode connected to the prefill bootstrap {addr} within the timeout"
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(AgentError::Connect(format!("prefill bootstrap {addr}: {e}"))),
        }
    }
}

/// Connects to the prefill's bootstrap `addr` until `deadline`, retrying while it is refused
/// (the prefill may still be starting).
pub fn connect(addr: &str, deadline: Instant, timeout: Duration) -> Result<Conn, AgentError> {
    let fail = |why: String| {
        AgentError::Connect(format!(
            "the decode cannot reach the prefill bootstrap {addr} within {} s: {why}",
            timeout.as_secs_f64()
        ))
    };
    let targets: Vec<_> = addr.to_socket_addrs().map_err(|e| fail(format!("cannot resolve it: {e}")))?.collect();
    let mut last = String::from("no address");
    loop {
        for t in &targets {
            let Some(left) = remaining(deadline) else { return Err(fail(last)) };
            match TcpStream::connect_timeout(t, left) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(Conn { reader: BufReader::new(s), peer: addr.to_owned() });
                }
                Err(e) if e.kind() == ErrorKind::TimedOut || e.kind() == ErrorKind::WouldBlock => {
                    return Err(fail("connection timed out (unreachable host, or a firewall drops it)".into()))
                }
                Err(e) => last = e.to_string(),
            }
        }
        if remaining(deadline).is_none() {
            return Err(fail(last));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

impl Conn {
    /// The other end.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Sends one message.
    pub fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), AgentError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| AgentError::Transfer(e.to_string()))?;
        line.push(b'\n');
        let s = self.reader.get_mut();
        s.write_all(&line)
            .and_then(|()| s.flush())
            .map_err(|e| AgentError::Connect(format!("bootstrap connection with {}: sending failed: {e}", self.peer)))
    }

    /// Receives one message (`what` names it in errors) before `deadline`.
    pub fn recv<T: DeserializeOwned>(&mut self, what: &str, deadline: Instant) -> Result<T, AgentError> {
        let left = remaining(deadline)
            .ok_or_else(|| AgentError::Connect(format!("timed out waiting for {what} from {}", self.peer)))?;
        let peer = self.peer.clone();
        self.reader.get_mut().set_read_timeout(Some(left)).map_err(|e| AgentError::Connect(format!("{peer}: {e}")))?;
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err(AgentError::Connect(format!("{peer} closed the bootstrap connection before sending {what}"))),
            Ok(_) => serde_json::from_str(&line)
                .map_err(|e| AgentError::Transfer(format!("{what} from {peer} is not understood: {e}"))),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(AgentError::Connect(format!("timed out waiting for {what} from {peer}")))
            }
            Err(e) => Err(AgentError::Connect(format!("reading {what} from {peer}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_cross_and_refusals_name_the_address() {
        let (l, addr) = listen("127.0.0.1:0").unwrap();
        let a2 = addr.clone();
        let t = std::thread::spawn(move || {
            let mut c = accept(&l, &a2, Instant::now() + Duration::from_secs(5)).unwrap();
            let b: Bye = c.recv("bye", Instant::now() + Duration::from_secs(5)).unwrap();
            assert!(b.ok);
        });
        let mut c = connect(&addr, Instant::now() + Duration::from_secs(5), Duration::from_secs(5)).unwrap();
        c.send(&Bye { ok: true }).unwrap();
        t.join().unwrap();
        // A port nobody listens on: refused until the deadline, then an error naming it.
        let (l, closed) = listen("127.0.0.1:0").unwrap();
        drop(l);
        let t0 = Instant::now();
        let e =
            connect(&closed, Instant::now() + Duration::from_millis(300), Duration::from_millis(300)).err().unwrap();
        assert!(e.to_string().contains(&closed), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(3));
    }
}
