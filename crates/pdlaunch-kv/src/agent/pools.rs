//! Pool memory the transfer agents register: one shared-memory mapping per rank (and one for
//! the contiguous reference region). Shared memory, because the Mooncake agent is a Python
//! process that maps the same pages and registers its own view of them with the engine, while
//! this process fills canaries into them and verifies what landed; NIXL registers this
//! process's view directly. With GPU pools the Mooncake agent allocates them on the GPU and
//! these mappings are the staging copy: it copies them in after mapping and back before the
//! decode verifies, so a mapping must outlive the agent's use of it (the file may go).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::AgentError;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A named shared-memory mapping, removed when dropped.
#[derive(Debug)]
pub struct SharedPool {
    path: PathBuf,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is owned by this value; access goes through `&self`/`&mut self`.
unsafe impl Send for SharedPool {}

impl SharedPool {
    /// Creates a mapping of `len` bytes (at least one page) in `/dev/shm` (else the temporary
    /// folder), zero-filled.
    pub fn create(tag: &str, len: u64) -> Result<SharedPool, AgentError> {
        let len = len.max(4096) as usize;
        let dir = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("pdlaunch-{}-{tag}-{n}", std::process::id()));
        let env =
            |e: std::io::Error| AgentError::Environment(format!("cannot create pool memory {}: {e}", path.display()));
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(&path).map_err(env)?;
        file.set_len(len as u64).map_err(env)?;
        use std::os::fd::AsRawFd;
        // SAFETY: mapping a file we just sized to `len`; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            let _ = std::fs::remove_file(&path);
            return Err(env(e));
        }
        Ok(SharedPool { path, ptr: ptr.cast(), len })
    }

    /// A mapping holding `bytes` (and zeros after them, up to the mapping's length).
    pub fn with_contents(tag: &str, bytes: &[u8]) -> Result<SharedPool, AgentError> {
        let mut p = SharedPool::create(tag, bytes.len() as u64)?;
        p.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
        Ok(p)
    }

    /// Removes the file once every process that needs it has mapped it, so that nothing is left
    /// behind even when this process is killed; the mappings stay valid.
    pub fn unlink(&self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// The file another process maps.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never empty (at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// This process's address of the first byte.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` is exclusive within this process.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for SharedPool {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `create`.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_map_and_clean_up() {
        let p = SharedPool::with_contents("t", b"hello").unwrap();
        assert_eq!(&p.as_slice()[..5], b"hello");
        assert!(p.len() >= 4096);
        let path = p.path().to_owned();
        assert_eq!(std::fs::read(&path).unwrap()[..5], *b"hello");
        drop(p);
        assert!(!path.exists());
    }
}
