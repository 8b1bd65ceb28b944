//! The seed of a property test's run, shared by pypto-build's property
//! tests and pypto-tests' (`#[path]`-included by each).

/// `PYPTO_MUTATE_SEED`, else a fresh one per run. Tests print it, so a
/// failing run can be repeated.
pub fn seed() -> u64 {
    if let Some(seed) = std::env::var("PYPTO_MUTATE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return seed;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    // SplitMix64's finaliser spreads neighbouring clock readings apart.
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 32-byte key for a ChaCha generator whose whole stream follows from `seed`.
pub fn key(seed: u64) -> [u8; 32] {
    let mut key = [0u8; 32];
    for (i, chunk) in key.chunks_mut(8).enumerate() {
        let word = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    key
}
