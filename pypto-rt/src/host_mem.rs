//! Host-backend tensor memory, laid out so that a kernel's stray raw
//! accesses are caught rather than corrupting the process.
//!
//! Each buffer is its own mapping: an inaccessible guard page, the data
//! placed so that it ends exactly where a second guard page begins, and
//! nothing else. A kernel that reads or writes one byte past a tensor's end
//! faults on the guard page, and the emulation's fault handler turns that
//! into an error naming the kernel, block and param. The bytes between the
//! first guard page and the data (the "front slack", less than a page) are
//! filled with a pattern and checked after each launch, so writes before a
//! tensor's start are caught too. During a launch the data pages of input
//! tensors are read-only, so a write to an input faults the same way.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock};

use crate::error::Error;

/// The byte the front slack is filled with.
const SLACK_PATTERN: u8 = 0xA5;

fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(size)
            .ok()
            .filter(|&s| s > 0)
            .unwrap_or(4096)
    })
}

/// Whether launches make their inputs' pages read-only
/// ([`READONLY_INPUTS_VAR`]; on by default in debug builds). Each launch
/// then pays two `mprotect` calls per input (about 2 µs each, measured by
/// `cargo bench --bench call`), so release builds leave it off and rely on
/// the emulation's own checks of API writes.
#[inline]
fn read_only_inputs() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| match std::env::var(READONLY_INPUTS_VAR).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    })
}

/// `1` or `0`: make input tensors read-only during host launches, so that
/// a kernel's raw write to an input is caught (default: on in debug
/// builds, off in release builds).
pub const READONLY_INPUTS_VAR: &str = "PYPTO_READONLY_INPUTS";

/// How far before its end `slack` first differs from [`SLACK_PATTERN`].
/// Out of line (a launch calls it only for tensors whose size leaves a
/// slack), and in 32-byte chunks, which compile to vector compares (a
/// search byte by byte does not vectorise): a slack may be a page less one
/// byte.
#[inline(never)]
fn first_damage(slack: &[u8]) -> Option<usize> {
    const CHUNK: usize = 32;
    let (chunks, tail) = slack.as_chunks::<CHUNK>();
    if chunks.iter().all(|c| *c == [SLACK_PATTERN; CHUNK])
        && tail.iter().all(|&b| b == SLACK_PATTERN)
    {
        return None;
    }
    slack
        .iter()
        .position(|&b| b != SLACK_PATTERN)
        .map(|i| slack.len() - i)
}

/// One tensor's bytes on the host, between guard pages. Owns its mapping.
pub(crate) struct HostBuffer {
    /// The whole mapping, guard pages included.
    map: NonNull<u8>,
    map_len: usize,
    /// The first data byte (the first byte of the trailing guard page when
    /// `len` is 0).
    data: NonNull<u8>,
    len: usize,
    /// The page ranges launches currently hold read-only (absolute
    /// addresses, one entry per holder; ranges may repeat and overlap).
    readers: Mutex<Vec<(usize, usize)>>,
}

// SAFETY: the buffer owns its mapping; shared access is read-only except
// through `&mut` (Rust's rules) or a kernel launch holding the tensor
// exclusively, and the read-only count is behind a mutex.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl HostBuffer {
    /// `len` zeroed bytes between guard pages; the data starts at a multiple
    /// of `align` (a power of two dividing the page size).
    pub(crate) fn zeroed(len: usize, align: usize) -> Result<HostBuffer, Error> {
        let page = page_size();
        let too_big = || Error::OutOfMemory {
            bytes: len,
            reason: "larger than the address space".to_owned(),
        };
        let data_pages = len.div_ceil(page).checked_mul(page).ok_or_else(too_big)?;
        let map_len = data_pages.checked_add(2 * page).ok_or_else(too_big)?;
        if map_len > isize::MAX as usize {
            return Err(too_big());
        }
        // SAFETY: an anonymous private mapping at an address of the
        // kernel's choosing touches no existing memory.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(Error::OutOfMemory {
                bytes: len,
                reason: std::io::Error::last_os_error().to_string(),
            });
        }
        let map = NonNull::new(map.cast::<u8>()).ok_or_else(too_big)?;
        // The data ends where the trailing guard page begins; its start is
        // rounded down to the element alignment.
        let end = page + data_pages;
        let start = (end - len) & !(align.max(1) - 1);
        let buffer = HostBuffer {
            map,
            map_len,
            // SAFETY: `start` <= `end` < `map_len`.
            data: unsafe { NonNull::new_unchecked(map.as_ptr().add(start)) },
            len,
            readers: Mutex::new(Vec::new()),
        };
        if data_pages > 0 {
            buffer.protect(libc::PROT_READ | libc::PROT_WRITE)?;
            // SAFETY: the front slack [page, start) is inside the data pages
            // just made writable.
            unsafe { std::ptr::write_bytes(map.as_ptr().add(page), SLACK_PATTERN, start - page) };
        }
        Ok(buffer)
    }

    fn protect(&self, prot: libc::c_int) -> Result<(), Error> {
        let page = page_size();
        let begin = self.map.as_ptr() as usize + page;
        self.protect_range(begin, begin + self.map_len - 2 * page, prot)
    }

    /// Sets the protection of the pages `[begin, end)` (page-aligned
    /// addresses inside this buffer's data pages).
    fn protect_range(&self, begin: usize, end: usize, prot: libc::c_int) -> Result<(), Error> {
        if begin >= end {
            return Ok(());
        }
        // SAFETY: the caller passes page-aligned addresses inside this
        // buffer's own mapping.
        let rc = unsafe { libc::mprotect(begin as *mut c_void, end - begin, prot) };
        if rc == 0 {
            Ok(())
        } else {
            Err(Error::OutOfMemory {
                bytes: self.len,
                reason: format!("mprotect: {}", std::io::Error::last_os_error()),
            })
        }
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    #[cfg(test)]
    fn bytes(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes at `data`, readable while `self`
        // lives (read-only protection still allows reads).
        unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.len) }
    }

    #[cfg(test)]
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `bytes`; `&mut self` excludes launches, so the
        // pages are writable.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// The whole mapping's address range, for the fault handler.
    pub(crate) fn mapping(&self) -> (usize, usize) {
        let begin = self.map.as_ptr() as usize;
        (begin, begin + self.map_len)
    }

    /// The first byte of the front slack that no longer holds the pattern,
    /// as a (negative) offset from the data's start.
    #[inline]
    pub(crate) fn slack_damage(&self) -> Option<usize> {
        let page = page_size();
        let slack_len = self.data.as_ptr() as usize - (self.map.as_ptr() as usize + page);
        if slack_len == 0 {
            return None;
        }
        // SAFETY: the slack lies in the readable data pages.
        let slack = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(page), slack_len) };
        first_damage(slack)
    }

    /// Puts the pattern back in the front slack (after a reported write).
    pub(crate) fn repair_slack(&self) {
        let page = page_size();
        let slack_len = self.data.as_ptr() as usize - (self.map.as_ptr() as usize + page);
        // SAFETY: the slack lies in the data pages; only a launch that holds
        // this buffer as an output writes it, and that launch has ended.
        unsafe { std::ptr::write_bytes(self.map.as_ptr().add(page), SLACK_PATTERN, slack_len) };
    }

    /// Makes the pages of the bytes `[offset, offset + len)` read-only
    /// until the returned guard drops, so that a kernel writing an input
    /// faults. Shared by concurrent launches.
    ///
    /// Only pages that lie wholly inside that range are protected (plus the
    /// front slack when the range starts at the data's start, and the tail
    /// of the last page when it ends at the data's end: no tensor owns
    /// those bytes). A view's partial pages hold bytes of other views of
    /// the buffer, which another argument of the launch, or another
    /// thread's launch, may legally write; they stay writable, so a raw
    /// write by the kernel to those edge bytes is not caught (API writes
    /// still are: the emulation knows which arguments are inputs).
    /// `None` when no page is protected (as in release builds by default).
    #[inline]
    pub(crate) fn read_only(&self, offset: usize, len: usize) -> Option<ReadOnly<'_>> {
        if !read_only_inputs() {
            return None;
        }
        let guard = self.read_only_always(offset, len);
        guard.buffer.is_some().then_some(guard)
    }

    /// [`HostBuffer::read_only`] whatever [`READONLY_INPUTS_VAR`] says (the
    /// tests of the protection itself run in every profile).
    fn read_only_always(&self, offset: usize, len: usize) -> ReadOnly<'_> {
        let none = ReadOnly {
            buffer: None,
            range: (0, 0),
        };
        if len == 0 {
            return none;
        }
        let page = page_size();
        let data = self.data.as_ptr() as usize;
        let first_page = self.map.as_ptr() as usize + page;
        let begin = if offset == 0 {
            first_page
        } else {
            (data + offset).next_multiple_of(page)
        };
        // The data ends where the trailing guard page begins, on a page
        // boundary.
        let end = (data + offset + len) / page * page;
        if begin >= end {
            return none;
        }
        let mut readers = self.readers.lock().unwrap_or_else(|e| e.into_inner());
        // Pages already read-only for another holder stay so; protecting
        // them again is harmless. A failed mprotect only loses detection,
        // never correctness.
        if self.protect_range(begin, end, libc::PROT_READ).is_err() {
            return none;
        }
        readers.push((begin, end));
        ReadOnly {
            buffer: Some(self),
            range: (begin, end),
        }
    }
}

/// Holds pages of a buffer read-only; see [`HostBuffer::read_only`].
pub(crate) struct ReadOnly<'a> {
    buffer: Option<&'a HostBuffer>,
    range: (usize, usize),
}

impl Drop for ReadOnly<'_> {
    fn drop(&mut self) {
        let Some(buffer) = self.buffer else {
            return;
        };
        let mut readers = buffer.readers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = readers.iter().position(|r| *r == self.range) {
            readers.swap_remove(i);
        }
        // Make writable again the pages of this range that no other holder
        // still needs read-only.
        let mut others: Vec<(usize, usize)> = readers
            .iter()
            .copied()
            .filter(|&(b, e)| b < self.range.1 && e > self.range.0)
            .collect();
        others.sort_unstable();
        let mut at = self.range.0;
        let mut failed = false;
        for (b, e) in others.into_iter().chain([(self.range.1, self.range.1)]) {
            if b > at {
                failed |= buffer
                    .protect_range(at, b.min(self.range.1), libc::PROT_READ | libc::PROT_WRITE)
                    .is_err();
            }
            at = at.max(e);
        }
        if failed {
            // The pages stay read-only: a later write through `&mut` would
            // fault. Continuing would turn that into a crash far from here.
            eprintln!(
                "pypto-rt: could not make a tensor writable again after a launch ({}); ending the process",
                std::io::Error::last_os_error()
            );
            std::process::abort();
        }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping was created by `zeroed` and is unmapped once;
        // nothing borrows it any more.
        unsafe { libc::munmap(self.map.as_ptr().cast::<c_void>(), self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_ends_at_the_guard_page_and_slack_is_watched() {
        let page = page_size();
        for len in [0usize, 4, 28, 4096, 5000] {
            let buffer = HostBuffer::zeroed(len, 4).unwrap();
            let (begin, end) = buffer.mapping();
            assert_eq!(buffer.as_ptr() as usize + len, end - page, "{len}");
            assert!(buffer.as_ptr() as usize >= begin + page);
            assert!(buffer.bytes().iter().all(|&b| b == 0));
            assert_eq!(buffer.slack_damage(), None);
            let slack = buffer.as_ptr() as usize - (begin + page);
            // Bytes in the slack's last partial chunk, in a whole chunk,
            // and its first byte: each is found.
            for before in [3, 40, slack] {
                if before == 0 || before > slack {
                    continue;
                }
                // SAFETY: `before` bytes before the data, inside the slack.
                unsafe { *buffer.as_ptr().sub(before) = 0 };
                assert_eq!(buffer.slack_damage(), Some(before), "{len}: {before}");
                buffer.repair_slack();
                assert_eq!(buffer.slack_damage(), None);
            }
        }
    }

    #[test]
    fn alignment_is_kept() {
        for len in [8usize, 24, 1000] {
            let buffer = HostBuffer::zeroed(len, 8).unwrap();
            assert_eq!(buffer.as_ptr() as usize % 8, 0);
            assert!(buffer.as_ptr() as usize + len <= buffer.mapping().1 - page_size());
        }
    }

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(matches!(
            HostBuffer::zeroed(usize::MAX - 10, 4),
            Err(Error::OutOfMemory { .. })
        ));
        assert!(matches!(
            HostBuffer::zeroed(1 << 50, 4),
            Err(Error::OutOfMemory { .. })
        ));
    }

    #[test]
    fn read_only_nests() {
        let mut buffer = HostBuffer::zeroed(64, 4).unwrap();
        {
            let a = buffer.read_only_always(0, 64);
            let b = buffer.read_only_always(0, 64);
            drop(a);
            assert_eq!(buffer.readers.lock().unwrap().len(), 1);
            drop(b);
        }
        buffer.bytes_mut()[0] = 7;
        assert_eq!(buffer.bytes()[0], 7);
    }

    /// Whether the page holding `ptr` is writable, from `/proc/self/maps`.
    fn writable(ptr: *const u8) -> bool {
        let addr = ptr as usize;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        for line in maps.lines() {
            let mut parts = line.split_whitespace();
            let range = parts.next().unwrap();
            let perms = parts.next().unwrap();
            let (b, e) = range.split_once('-').unwrap();
            let (b, e) = (
                usize::from_str_radix(b, 16).unwrap(),
                usize::from_str_radix(e, 16).unwrap(),
            );
            if (b..e).contains(&addr) {
                return perms.as_bytes()[1] == b'w';
            }
        }
        panic!("{addr:#x} is not mapped");
    }

    #[test]
    fn views_protect_only_their_whole_pages() {
        let page = page_size();
        // Four pages of data, viewed as [0, 1.5 pages) and [1.5, 4 pages).
        let buffer = HostBuffer::zeroed(4 * page, 4).unwrap();
        let at = |i: usize| buffer.as_ptr().wrapping_add(i);
        let low = buffer.read_only_always(0, page + page / 2);
        assert!(!writable(at(0)));
        // The page the two views share stays writable for the other one.
        assert!(writable(at(page + page / 2)));
        assert!(writable(at(page)));
        let high = buffer.read_only_always(page + page / 2, 2 * page + page / 2);
        assert!(writable(at(page)));
        assert!(!writable(at(2 * page)));
        assert!(!writable(at(4 * page - 1)));
        // Overlapping holders: the pages stay read-only until both end.
        let whole = buffer.read_only_always(0, 4 * page);
        assert!(!writable(at(page)));
        drop(high);
        assert!(!writable(at(3 * page)));
        drop(whole);
        assert!(writable(at(3 * page)));
        assert!(!writable(at(0)));
        drop(low);
        assert!(writable(at(0)));
    }
}
