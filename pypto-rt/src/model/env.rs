//! `PYPTO_PROFILE=trace.json` (or `.svg`): every host launch of the process
//! is modelled, and the file is rewritten after each with every launch so
//! far: a Chrome trace-event file, or the SVG swimlanes.
//! `PYPTO_PROFILE_ARCH` picks the architecture (`a3`, the default; `a2`;
//! `a2-910b4`).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use super::{LaunchProfile, ModelArch, Profile};
use crate::Error;

/// The variable naming the trace file a whole run writes.
pub const PROFILE_VAR: &str = "PYPTO_PROFILE";
/// The variable naming the architecture `PYPTO_PROFILE` models.
pub const PROFILE_ARCH_VAR: &str = "PYPTO_PROFILE_ARCH";

pub(super) struct EnvProfile {
    path: PathBuf,
    svg: bool,
    pub(super) arch: ModelArch,
    profile: Mutex<Profile>,
}

/// Parses the two variables' values.
pub(super) fn parse(
    path: Option<&str>,
    arch: Option<&str>,
) -> Result<Option<(PathBuf, bool, ModelArch)>, Error> {
    let Some(path) = path else {
        return Ok(None);
    };
    let lower = path.to_ascii_lowercase();
    let svg = lower.ends_with(".svg");
    if !svg && !lower.ends_with(".json") {
        return Err(Error::Setting {
            setting: PROFILE_VAR,
            value: path.to_owned(),
            expected: "a file name ending in .json (a Chrome trace) or .svg (swimlanes)",
        });
    }
    let arch = match arch.map(|a| a.trim().to_ascii_lowercase()).as_deref() {
        None | Some("a3") => ModelArch::AtlasA3,
        Some("a2") => ModelArch::AtlasA2,
        Some("a2-910b4") => ModelArch::AtlasA2B4,
        Some(_) => {
            return Err(Error::Setting {
                setting: PROFILE_ARCH_VAR,
                value: arch.unwrap_or_default().to_owned(),
                expected: "one of a3, a2, a2-910b4",
            });
        }
    };
    Ok(Some((PathBuf::from(path), svg, arch)))
}

/// `PYPTO_PROFILE` and `PYPTO_PROFILE_ARCH`, parsed once.
static ENV: OnceLock<Result<Option<EnvProfile>, Error>> = OnceLock::new();

/// Whether `PYPTO_PROFILE` is known to ask for no profile (read already):
/// what a launch with no profiler active asks first, inline.
#[inline]
pub(super) fn known_off() -> bool {
    matches!(ENV.get(), Some(Ok(None)))
}

/// The run's profile, when `PYPTO_PROFILE` asks for one (read once).
pub(super) fn env_profile() -> Result<Option<&'static EnvProfile>, Error> {
    let parsed = ENV.get_or_init(|| {
        let path = std::env::var_os(PROFILE_VAR).map(|v| v.to_string_lossy().into_owned());
        let arch = std::env::var_os(PROFILE_ARCH_VAR).map(|v| v.to_string_lossy().into_owned());
        Ok(
            parse(path.as_deref(), arch.as_deref())?.map(|(path, svg, arch)| EnvProfile {
                path,
                svg,
                arch,
                profile: Mutex::new(Profile {
                    arch,
                    timing_only: false,
                    launches: Vec::new(),
                }),
            }),
        )
    });
    match parsed {
        Ok(p) => Ok(p.as_ref()),
        Err(e) => Err(e.clone()),
    }
}

impl EnvProfile {
    /// Adds a launch and rewrites the file (through a temporary beside it,
    /// so a reader never sees half a file).
    pub(super) fn record(&self, launch: LaunchProfile) -> Result<(), Error> {
        let mut profile = self.profile.lock().unwrap_or_else(|e| e.into_inner());
        if profile.launches.try_reserve(1).is_err() {
            return Err(self.failed("out of memory for the profile"));
        }
        profile.launches.push(launch);
        let text = if self.svg {
            super::svg(&profile)
        } else {
            super::chrome_trace(&profile)
        };
        let mut temporary = self.path.clone().into_os_string();
        temporary.push(".tmp");
        std::fs::write(&temporary, text)
            .and_then(|()| std::fs::rename(&temporary, &self.path))
            .map_err(|e| self.failed(&e.to_string()))
    }

    fn failed(&self, message: &str) -> Error {
        Error::ProfileWrite {
            setting: PROFILE_VAR,
            path: self.path.clone(),
            message: message.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_or_say_what_they_take() {
        assert!(parse(None, Some("a2")).unwrap().is_none());
        let (path, svg, arch) = parse(Some("out/t.SVG"), None).unwrap().unwrap();
        assert_eq!(
            (path, svg, arch),
            (PathBuf::from("out/t.SVG"), true, ModelArch::AtlasA3)
        );
        let (_, svg, arch) = parse(Some("t.json"), Some(" A2 ")).unwrap().unwrap();
        assert_eq!((svg, arch), (false, ModelArch::AtlasA2));
        assert_eq!(
            parse(Some("trace.txt"), None).unwrap_err().to_string(),
            "PYPTO_PROFILE: `trace.txt` is not a file name ending in .json (a Chrome trace) or .svg (swimlanes)"
        );
        assert_eq!(
            parse(Some("t.json"), Some("a5")).unwrap_err().to_string(),
            "PYPTO_PROFILE_ARCH: `a5` is not one of a3, a2, a2-910b4"
        );
    }
}
