//! The kernel object cache: one directory shared by every build that uses
//! it. An entry is an object and, beside it, its record: the object's
//! length and SHA-256, and the key material it was compiled from (the
//! compiler's command line and `--version`, a digest of the emulation
//! headers, of the source, and of every other header the compiler read, by
//! path). An entry is named by SHA-256 digests of that material, but the
//! name is only where to look: an entry is reused only when its recorded
//! material equals the material of the compile it stands for and its object
//! matches its recorded digest, so even two key materials given one name
//! compile rather than reuse.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

/// SHA-256 of `parts`, each preceded by its length (so that no two ways of
/// splitting the same bytes hash alike), in lowercase hex.
pub fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The first line of every record; a record of another format is never
/// matched (its entry is compiled again and the old one pruned in time).
const RECORD_FORMAT: &str = "pypto-build kernel object cache entry, format 2";

/// How many hex digits of each digest an entry's name carries.
pub const KEY_CHARS: usize = 32;

/// How long a cache entry may go unused before a build deletes it.
pub const CACHE_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// Temporaries older than this were left by a build that died mid-store.
const TEMPORARY_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Why a cache directory cannot be used at all.
#[derive(Debug)]
pub enum OpenError {
    /// The path names something other than a directory.
    NotADirectory,
    /// The directory cannot be created because a component of its path is
    /// not a directory.
    CannotCreate(std::io::Error),
}

/// A file's length and modification time, and the digest of its bytes then.
type FileStamp = ((u64, Option<std::time::SystemTime>), String);

/// A cache directory as one build uses it.
#[derive(Debug)]
pub struct ObjectCache {
    dir: PathBuf,
    /// Why entries cannot be stored, if they cannot: objects are then
    /// compiled into the build's own directory, and readable entries still
    /// reused once verified.
    unwritable: Option<std::io::Error>,
    key_chars: usize,
    /// The names of the records in the directory, listed once.
    records: Mutex<Option<Vec<String>>>,
    /// Digests of the files hashed in this build, by path, with the length
    /// and modification time they were hashed at.
    hashes: Mutex<HashMap<PathBuf, FileStamp>>,
    /// `--version` of each compiler asked, by path.
    versions: Mutex<HashMap<PathBuf, String>>,
}

impl ObjectCache {
    /// Opens (creating it if missing) the cache at `dir`. A directory that
    /// cannot be created or written is opened read-only, with the reason.
    pub fn open(dir: &Path) -> Result<ObjectCache, OpenError> {
        let unwritable = match std::fs::metadata(dir) {
            Ok(meta) if !meta.is_dir() => return Err(OpenError::NotADirectory),
            Ok(_) => probe_writable(dir).err(),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Err(OpenError::CannotCreate(e));
            }
            Err(_) => match std::fs::create_dir_all(dir) {
                Ok(()) => probe_writable(dir).err(),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotADirectory | std::io::ErrorKind::AlreadyExists
                    ) =>
                {
                    return Err(OpenError::CannotCreate(e));
                }
                Err(e) => Some(e),
            },
        };
        Ok(ObjectCache {
            dir: dir.to_path_buf(),
            unwritable,
            key_chars: KEY_CHARS,
            records: Mutex::new(None),
            hashes: Mutex::new(HashMap::new()),
            versions: Mutex::new(HashMap::new()),
        })
    }

    /// Names entries with `chars` hex digits of each digest instead of
    /// [`KEY_CHARS`]: a test hook, so that different key materials share
    /// one name.
    pub fn with_key_chars(mut self, chars: usize) -> Self {
        self.key_chars = chars.min(64);
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Why entries cannot be stored, when they cannot.
    pub fn unwritable(&self) -> Option<&std::io::Error> {
        self.unwritable.as_ref()
    }

    /// The digest of a file's bytes (`None`: unreadable), hashed again only
    /// when its length or modification time changed during the build.
    pub(crate) fn file_hash(&self, path: &Path) -> Option<String> {
        let meta = std::fs::metadata(path).ok()?;
        let stamp = (meta.len(), meta.modified().ok());
        if let Ok(hashes) = self.hashes.lock()
            && let Some((seen, hash)) = hashes.get(path)
            && *seen == stamp
        {
            return Some(hash.clone());
        }
        let hash = sha256_hex(&[&std::fs::read(path).ok()?]);
        if let Ok(mut hashes) = self.hashes.lock() {
            hashes.insert(path.to_path_buf(), (stamp, hash.clone()));
        }
        Some(hash)
    }

    /// What the compiler at `path` says of its version (asked once per
    /// build), or why it could not be asked.
    pub(crate) fn compiler_version(&self, path: &Path) -> String {
        if let Ok(versions) = self.versions.lock()
            && let Some(version) = versions.get(path)
        {
            return version.clone();
        }
        let version = match std::process::Command::new(path)
            .arg("--version")
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        {
            Ok(out) => format!(
                "{} {:?}",
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout)
            ),
            Err(e) => format!("cannot run: {e}"),
        };
        if let Ok(mut versions) = self.versions.lock() {
            versions.insert(path.to_path_buf(), version.clone());
        }
        version
    }

    /// The entry prefix (`STEM-KEY1-`) for a source's material known before
    /// compiling.
    fn prefix(&self, stem: &str, before: &str) -> String {
        let key = sha256_hex(&[before.as_bytes()]);
        format!("{stem}-{}-", &key[..self.key_chars])
    }

    /// The object of an entry whose record matches `before` and whose
    /// headers are unchanged, with those headers; `None` when there is no
    /// such entry.
    pub(crate) fn find(&self, stem: &str, before: &str) -> Option<(PathBuf, Vec<PathBuf>)> {
        let prefix = self.prefix(stem, before);
        let mut records = self.records.lock().ok()?;
        let names = records.get_or_insert_with(|| list_records(&self.dir));
        let candidates: Vec<String> = names
            .iter()
            .filter(|name| name.starts_with(&prefix))
            .cloned()
            .collect();
        drop(records);
        candidates.iter().find_map(|name| {
            let record = self.dir.join(name);
            let object = record.with_extension("");
            let headers = self.verify(&record, &object, before)?;
            Some((object, headers))
        })
    }

    /// Whether `record` describes `before` with headers as they are now,
    /// and `object` is the object it describes: its headers if so.
    fn verify(&self, record: &Path, object: &Path, before: &str) -> Option<Vec<PathBuf>> {
        let text = std::fs::read_to_string(record).ok()?;
        let rest = text.strip_prefix(RECORD_FORMAT)?.strip_prefix('\n')?;
        let (object_line, material) = rest.split_once('\n')?;
        let headers_text = material.strip_prefix(before)?;
        let mut headers = Vec::new();
        for line in headers_text.lines() {
            let (hash, path) = line.strip_prefix("header ")?.split_once(' ')?;
            let path = PathBuf::from(path);
            if self.file_hash(&path).as_deref() != Some(hash) {
                return None;
            }
            headers.push(path);
        }
        let bytes = std::fs::read(object).ok()?;
        (object_line == object_line_of(&bytes)).then_some(headers)
    }

    /// Stores the freshly compiled `object`, compiled from `before` and
    /// `headers` (with their digests), and returns the entry's object. The
    /// object, then its record, are each written under a temporary name and
    /// renamed, so that neither is ever seen half-written; an object
    /// without a matching record is never used.
    pub(crate) fn store(
        &self,
        object: &Path,
        stem: &str,
        before: &str,
        headers: &[(PathBuf, String)],
    ) -> std::io::Result<PathBuf> {
        let bytes = std::fs::read(object)?;
        let mut material = before.to_owned();
        for (path, hash) in headers {
            material.push_str(&format!("header {hash} {}\n", path.display()));
        }
        let key = sha256_hex(&[material.as_bytes()]);
        let name = format!("{}{}.o", self.prefix(stem, before), &key[..self.key_chars]);
        let cached = self.dir.join(&name);
        let record = record_path(&cached);
        let text = format!("{RECORD_FORMAT}\n{}\n{material}", object_line_of(&bytes));
        // The old record goes first: an object without its record is never used.
        let _ = std::fs::remove_file(&record);
        write_then_rename(&cached, &bytes)?;
        write_then_rename(&record, text.as_bytes())?;
        Ok(cached)
    }

    /// Marks an entry as used now, so that pruning keeps it.
    pub(crate) fn touch(&self, object: &Path) {
        if self.unwritable.is_some() {
            return;
        }
        let now = std::time::SystemTime::now();
        for path in [object.to_path_buf(), record_path(object)] {
            if let Ok(file) = std::fs::File::options().append(true).open(&path) {
                let _ = file.set_modified(now);
            }
        }
    }

    /// Deletes the entries no build used for [`CACHE_MAX_AGE`] (those of
    /// earlier formats too), and temporaries of stores that died. Entries
    /// in use were touched by their build, so a concurrent build never
    /// loses an object it is about to archive.
    pub(crate) fn prune(&self) {
        if self.unwritable.is_some() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = std::time::SystemTime::now();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let max_age = if name.contains(".tmp") {
                TEMPORARY_MAX_AGE
            } else if [".o", ".o.key", ".o.sum"].iter().any(|e| name.ends_with(e)) {
                CACHE_MAX_AGE
            } else {
                continue;
            };
            let age = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok());
            if age.is_some_and(|age| age > max_age) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Creates and removes a file in `dir`: whether entries can be stored.
fn probe_writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(
        ".pypto-probe.tmp{}-{}",
        std::process::id(),
        unique_suffix()
    ));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// The names of the records in `dir`.
fn list_records(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| name.ends_with(".o.key"))
        .collect()
}

/// The record beside a cached object.
fn record_path(object: &Path) -> PathBuf {
    let mut name = object.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// `object LENGTH SHA256` of an object's bytes.
fn object_line_of(bytes: &[u8]) -> String {
    format!("object {} {}", bytes.len(), sha256_hex(&[bytes]))
}

fn write_then_rename(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".tmp{}-{}", std::process::id(), unique_suffix()));
    let temporary = PathBuf::from(temporary);
    let result = std::fs::write(&temporary, data).and_then(|()| std::fs::rename(&temporary, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

/// A number no other temporary of this process has used.
fn unique_suffix() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The prerequisites a make-style dependency file (the compiler's `-MD`
/// output) lists: `target: a b \` continued on the next line, with spaces
/// in names written `\ `, `#` as `\#` and `$` as `$$`.
pub(crate) fn depfile_prerequisites(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('\n') => {
                    chars.next();
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                Some('\r') => {
                    chars.next();
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                Some(&next @ (' ' | '#' | '\\')) => {
                    word.push(next);
                    chars.next();
                }
                _ => word.push('\\'),
            },
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    // The words up to the first that ends the target (`a.o:`) are targets;
    // a second rule, if any, is not ours.
    let Some(colon) = words.iter().position(|w| w.ends_with(':')) else {
        return Vec::new();
    };
    words[colon + 1..]
        .iter()
        .take_while(|w| !w.ends_with(':'))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_sha256_of_length_prefixed_parts() {
        // SHA-256 of 8 bytes of length (3, little-endian) then "abc".
        let mut plain = Sha256::new();
        plain.update(3u64.to_le_bytes());
        plain.update(b"abc");
        assert_eq!(sha256_hex(&[b"abc"]), hex(&plain.finalize()));
        assert_eq!(
            hex(&Sha256::digest(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(sha256_hex(&[b"ab", b"c"]), sha256_hex(&[b"a", b"bc"]));
        assert_eq!(sha256_hex(&[b"same"]).len(), 64);
    }

    #[test]
    fn dependency_files_are_read_as_make_writes_them() {
        let text = "/o/x-k_s0.o: /o/src/k_s0.cpp /usr/include/stdc-predef.h \\\n \
                    /p/kernels/my\\ dir/helper.h /p/a\\#b.h /p/cost$$.h \\\n /p/last.h\n";
        assert_eq!(
            depfile_prerequisites(text),
            [
                "/o/src/k_s0.cpp",
                "/usr/include/stdc-predef.h",
                "/p/kernels/my dir/helper.h",
                "/p/a#b.h",
                "/p/cost$.h",
                "/p/last.h"
            ]
        );
        assert_eq!(depfile_prerequisites("a.o:\n"), Vec::<String>::new());
        assert_eq!(depfile_prerequisites("garbage"), Vec::<String>::new());
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pypto-cache-unit-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn an_entry_is_reused_only_for_its_own_material_and_headers() {
        let dir = scratch("material");
        let cache_dir = dir.join("cache");
        let header = dir.join("helper.h");
        std::fs::write(&header, "#define FACTOR 2\n").unwrap();
        let fresh = dir.join("fresh.o");
        std::fs::write(&fresh, vec![7u8; 165_872]).unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert!(cache.unwritable().is_none());
        let before = "compiler \"c++\" []\nsource 01\n";
        assert_eq!(cache.find("k_s0", before), None);
        let hash = cache.file_hash(&header).unwrap();
        let stored = cache
            .store(&fresh, "k_s0", before, &[(header.clone(), hash)])
            .unwrap();
        // A new build (a new listing, new digests) finds it.
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(
            cache.find("k_s0", before),
            Some((stored.clone(), vec![header.clone()]))
        );
        // Another material under the same (truncated) name is not reused.
        let cache = ObjectCache::open(&cache_dir).unwrap().with_key_chars(0);
        let short = cache
            .store(&fresh, "k_s0", before, &[(header.clone(), "00".into())])
            .unwrap();
        assert!(short.ends_with("k_s0--.o"), "{}", short.display());
        let cache = ObjectCache::open(&cache_dir).unwrap().with_key_chars(0);
        assert_eq!(cache.find("k_s0", "compiler \"c++\" []\nsource 02\n"), None);
        // The header it recorded is stale (digest 00): not reused either.
        assert_eq!(cache.find("k_s0", before), None);
        // A header edit: the full-length entry is not reused any more.
        std::fs::write(&header, "#define FACTOR 3\n").unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(cache.find("k_s0", before), None);
        std::fs::write(&header, "#define FACTOR 2\n").unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(
            cache.find("k_s0", before).map(|f| f.0),
            Some(stored.clone())
        );
        // An object cut short (a full disk), or changed: not reused.
        let bytes = std::fs::read(&stored).unwrap();
        std::fs::write(&stored, &bytes[..155_648]).unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(cache.find("k_s0", before), None);
        let mut other = bytes.clone();
        other[1000] ^= 1;
        std::fs::write(&stored, &other).unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(cache.find("k_s0", before), None);
        // An object without its record.
        std::fs::write(&stored, &bytes).unwrap();
        std::fs::remove_file(record_path(&stored)).unwrap();
        let cache = ObjectCache::open(&cache_dir).unwrap();
        assert_eq!(cache.find("k_s0", before), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cache_path_that_is_not_a_directory_cannot_be_opened() {
        let dir = scratch("not-a-dir");
        let file = dir.join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            ObjectCache::open(&file),
            Err(OpenError::NotADirectory)
        ));
        let Err(OpenError::CannotCreate(e)) = ObjectCache::open(&file.join("sub")) else {
            panic!("a cache under a file opened");
        };
        assert_eq!(e.kind(), std::io::ErrorKind::NotADirectory);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
