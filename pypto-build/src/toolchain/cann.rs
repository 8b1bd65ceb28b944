//! Finding a CANN toolkit and choosing the flags its `bisheng` compiler
//! takes, from the public CANN documentation:
//! - CANN 8.5 and later: `-x asc --npu-arch=dav-2201` (Atlas A2/A3) or
//!   `--npu-arch=dav-3510` (Ascend 950PR).
//! - Earlier: `-xcce --cce-aicore-arch=dav-c220-vec|dav-c220-cube` (A2/A3)
//!   or `dav-c310-vec|dav-c310-cube` (950), with the tikcpp include dirs.
//!
//! Nothing here runs the compiler; the NPU build uses these facts.

use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variables detection reads, in the order it reads them.
pub const ENV_VARS: [&str; 3] = ["PYPTO_BACKEND", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"];

/// Install locations tried when no variable names one.
pub const DEFAULT_HOMES: [&str; 2] = [
    "/usr/local/Ascend/cann",
    "/usr/local/Ascend/ascend-toolkit/latest",
];

/// A CANN version such as `8.5.0` or `8.0.RC2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannVersion {
    pub major: u32,
    pub minor: u32,
    /// As written in the install.
    pub text: String,
}

impl CannVersion {
    /// The leading `major.minor` of a version string.
    pub fn parse(text: &str) -> Option<CannVersion> {
        let text = text.trim();
        let mut parts = text.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor_part = parts.next()?;
        let digits: String = minor_part
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        Some(CannVersion {
            major,
            minor: digits.parse().ok()?,
            text: text.to_owned(),
        })
    }

    /// CANN 8.5 introduced `-x asc` and `--npu-arch`.
    pub fn has_asc_frontend(&self) -> bool {
        (self.major, self.minor) >= (8, 5)
    }
}

impl fmt::Display for CannVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A CANN install found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    pub home: PathBuf,
    pub version: CannVersion,
    pub bisheng: PathBuf,
    /// What pointed at it: a variable's name or "the default location".
    pub found_by: String,
}

/// What the build should target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// No toolkit (or `PYPTO_BACKEND=host`): the host emulation only.
    Host,
    /// A toolkit: kernels also build for the NPU.
    Npu(Toolkit),
}

/// Why detection failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    #[error("PYPTO_BACKEND is `{0}`; expected `host` or `npu`")]
    UnknownBackend(String),
    #[error("PYPTO_BACKEND=npu, but no CANN toolkit was found; looked in {}", .0.join(", "))]
    NoToolkit(Vec<String>),
    #[error("{} ({found_by}) looks like a CANN toolkit but has {problem}", home.display())]
    Incomplete {
        home: PathBuf,
        found_by: String,
        problem: String,
    },
}

pub use crate::tables::{Arch, arches};

/// The libraries an NPU build's kernel libraries link from `<home>/lib64`
/// (the binary links none): the ACL runtime and those bisheng links by
/// default for kernel launches.
pub const RUNTIME_LIBS: [&str; 9] = [
    "ascendcl",
    "runtime",
    "ascendc_runtime",
    "profapi",
    "unified_dlog",
    "mmpa",
    "ascend_dump",
    "c_sec",
    "error_manager",
];

/// The bisheng flags selecting the language and architecture; `cube` picks
/// the cube core's flag on toolkits before 8.5, which name vector and cube
/// cores separately.
pub fn arch_flags(toolkit: &Toolkit, arch: Arch, cube: bool) -> Vec<String> {
    if toolkit.version.has_asc_frontend() {
        vec![
            "-x".into(),
            "asc".into(),
            format!("--npu-arch={}", arch.npu_arch_flag()),
            // The compiler orders the scalar unit with V/MTE2/MTE3, as the
            // vendor's kernel projects have it and the host racecheck assumes.
            "--cce-auto-sync".into(),
        ]
    } else {
        let core = if cube { "cube" } else { "vec" };
        let family = arch.core_family();
        let mut flags = vec![
            "-xcce".into(),
            format!("--cce-aicore-arch=dav-{family}-{core}"),
            "--cce-auto-sync".into(),
        ];
        let tikcpp = toolkit.home.join("compiler/tikcpp/tikcfw");
        for dir in [
            tikcpp.clone(),
            tikcpp.join("impl"),
            tikcpp.join("interface"),
        ] {
            flags.push(format!("-I{}", dir.display()));
        }
        flags
    }
}

/// Chooses the backend from `PYPTO_BACKEND`, `ASCEND_HOME_PATH`,
/// `ASCEND_TOOLKIT_HOME` and then `default_homes`, in that order. `env`
/// reads a variable, so tests need not touch the process environment.
pub fn detect(
    env: &dyn Fn(&str) -> Option<String>,
    default_homes: &[&Path],
) -> Result<Backend, DetectError> {
    let forced = env("PYPTO_BACKEND").filter(|v| !v.is_empty());
    match forced.as_deref() {
        None | Some("npu") => {}
        Some("host") => return Ok(Backend::Host),
        Some(other) => return Err(DetectError::UnknownBackend(other.to_owned())),
    }
    // Every place, in the order it is tried; a variable that is unset is a
    // place too, so that the error lists it.
    let mut places: Vec<(Option<PathBuf>, String)> = ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"]
        .iter()
        .map(|var| {
            (
                env(var).filter(|v| !v.is_empty()).map(PathBuf::from),
                (*var).to_owned(),
            )
        })
        .collect();
    places.extend(
        default_homes
            .iter()
            .map(|home| (Some(home.to_path_buf()), "the default location".to_owned())),
    );
    let mut looked = Vec::new();
    for (home, found_by) in places {
        match home {
            Some(home) if home.is_dir() => return toolkit_at(&home, &found_by).map(Backend::Npu),
            Some(home) => looked.push(home.display().to_string()),
            None => looked.push(format!("{found_by} (unset)")),
        }
    }
    if forced.is_some() {
        return Err(DetectError::NoToolkit(looked));
    }
    Ok(Backend::Host)
}

/// Reads a toolkit at `home`: its version and its bisheng.
fn toolkit_at(home: &Path, found_by: &str) -> Result<Toolkit, DetectError> {
    let incomplete = |problem: String| DetectError::Incomplete {
        home: home.to_path_buf(),
        found_by: found_by.to_owned(),
        problem,
    };
    let arch = std::env::consts::ARCH;
    let version_files = [
        home.join("compiler/version.info"),
        home.join(format!("{arch}-linux/ascend_toolkit_install.info")),
    ];
    let version = version_files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|text| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("version")
                    .then(|| CannVersion::parse(value))?
            })
        })
        .ok_or_else(|| {
            incomplete(format!(
                "no readable version (looked for `Version=` in {})",
                version_files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let bisheng_dirs = [
        home.join(format!("{arch}-linux/ccec_compiler/bin")),
        home.join("tools/ccec_compiler/bin"),
        home.join("compiler/ccec_compiler/bin"),
    ];
    let bisheng = bisheng_dirs
        .iter()
        .map(|d| d.join("bisheng"))
        .find(|b| b.is_file())
        .ok_or_else(|| {
            incomplete(format!(
                "no bisheng compiler (looked in {})",
                bisheng_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    Ok(Toolkit {
        home: home.to_path_buf(),
        version,
        bisheng,
        found_by: found_by.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::Target;
    use std::collections::BTreeMap;

    /// A directory laid out like a CANN install (labelled fake: it holds no
    /// compiler, only an empty file where bisheng would be).
    fn fake_toolkit(name: &str, version_line: &str) -> PathBuf {
        let home =
            std::env::temp_dir().join(format!("pypto-fake-cann-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(home.join("compiler/ccec_compiler/bin")).unwrap();
        std::fs::write(home.join("compiler/ccec_compiler/bin/bisheng"), "").unwrap();
        std::fs::write(
            home.join("compiler/version.info"),
            format!("{version_line}\n"),
        )
        .unwrap();
        home
    }

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn versions_parse_with_release_suffixes() {
        let v = CannVersion::parse("8.0.RC2").unwrap();
        assert_eq!((v.major, v.minor, v.text.as_str()), (8, 0, "8.0.RC2"));
        assert!(!v.has_asc_frontend());
        assert!(CannVersion::parse("8.5.0").unwrap().has_asc_frontend());
        assert!(CannVersion::parse("9.0").unwrap().has_asc_frontend());
        assert_eq!(CannVersion::parse("eight"), None);
    }

    #[test]
    fn no_variables_and_no_install_is_the_host() {
        let none = Path::new("/nonexistent/pypto/cann");
        assert_eq!(detect(&env_of(&[]), &[none]), Ok(Backend::Host));
        assert_eq!(
            detect(&env_of(&[("PYPTO_BACKEND", "host")]), &[none]),
            Ok(Backend::Host)
        );
    }

    #[test]
    fn forcing_npu_without_a_toolkit_says_where_it_looked() {
        let none = Path::new("/nonexistent/pypto/cann");
        let err = detect(
            &env_of(&[("PYPTO_BACKEND", "npu"), ("ASCEND_TOOLKIT_HOME", "/nope")]),
            &[none],
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "PYPTO_BACKEND=npu, but no CANN toolkit was found; looked in ASCEND_HOME_PATH (unset), /nope, /nonexistent/pypto/cann"
        );
        assert_eq!(
            detect(&env_of(&[("PYPTO_BACKEND", "gpu")]), &[])
                .unwrap_err()
                .to_string(),
            "PYPTO_BACKEND is `gpu`; expected `host` or `npu`"
        );
    }

    #[test]
    fn variables_are_read_in_order() {
        let modern = fake_toolkit("modern", "Version=8.5.0");
        let legacy = fake_toolkit("legacy", "version=8.0.RC2");
        let env = env_of(&[
            ("ASCEND_HOME_PATH", modern.to_str().unwrap()),
            ("ASCEND_TOOLKIT_HOME", legacy.to_str().unwrap()),
        ]);
        let Ok(Backend::Npu(tk)) = detect(&env, &[]) else {
            panic!("no toolkit")
        };
        assert_eq!(tk.home, modern);
        assert_eq!(tk.found_by, "ASCEND_HOME_PATH");
        assert_eq!(tk.version.text, "8.5.0");
        assert_eq!(
            tk.bisheng,
            modern.join("compiler/ccec_compiler/bin/bisheng")
        );
        let Ok(Backend::Npu(tk)) = detect(
            &env_of(&[("ASCEND_TOOLKIT_HOME", legacy.to_str().unwrap())]),
            &[],
        ) else {
            panic!("no toolkit")
        };
        assert_eq!(
            (tk.found_by.as_str(), tk.version.text.as_str()),
            ("ASCEND_TOOLKIT_HOME", "8.0.RC2")
        );
        let Ok(Backend::Npu(tk)) = detect(&env_of(&[]), &[&legacy]) else {
            panic!("no toolkit")
        };
        assert_eq!(tk.found_by, "the default location");
    }

    #[test]
    fn an_install_without_bisheng_or_version_is_an_error() {
        let home = fake_toolkit("broken", "Version=8.5.0");
        std::fs::remove_file(home.join("compiler/ccec_compiler/bin/bisheng")).unwrap();
        let err = detect(
            &env_of(&[("ASCEND_HOME_PATH", home.to_str().unwrap())]),
            &[],
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("has no bisheng compiler (looked in "),
            "{err}"
        );
        std::fs::write(home.join("compiler/version.info"), "Name=toolkit\n").unwrap();
        let err = detect(
            &env_of(&[("ASCEND_HOME_PATH", home.to_str().unwrap())]),
            &[],
        )
        .unwrap_err();
        assert!(err.to_string().contains("has no readable version"), "{err}");
    }

    #[test]
    fn flags_follow_the_version_and_the_architecture() {
        let toolkit = |v: &str| Toolkit {
            home: PathBuf::from("/opt/cann"),
            version: CannVersion::parse(v).unwrap(),
            bisheng: PathBuf::from("/opt/cann/compiler/ccec_compiler/bin/bisheng"),
            found_by: "test".into(),
        };
        let modern = toolkit("8.5.0");
        assert_eq!(
            arch_flags(&modern, Arch::Dav2201, false),
            ["-x", "asc", "--npu-arch=dav-2201", "--cce-auto-sync"]
        );
        assert_eq!(
            arch_flags(&modern, Arch::Dav3510, true),
            ["-x", "asc", "--npu-arch=dav-3510", "--cce-auto-sync"]
        );
        let legacy = toolkit("8.0.RC2");
        assert_eq!(
            arch_flags(&legacy, Arch::Dav2201, false),
            [
                "-xcce",
                "--cce-aicore-arch=dav-c220-vec",
                "--cce-auto-sync",
                "-I/opt/cann/compiler/tikcpp/tikcfw",
                "-I/opt/cann/compiler/tikcpp/tikcfw/impl",
                "-I/opt/cann/compiler/tikcpp/tikcfw/interface",
            ]
        );
        assert_eq!(
            arch_flags(&legacy, Arch::Dav3510, true)[1],
            "--cce-aicore-arch=dav-c310-cube"
        );
        assert_eq!(arches(&Target::ALL), [Arch::Dav2201, Arch::Dav3510]);
        assert_eq!(arches(&[Target::A3, Target::A2]), [Arch::Dav2201]);
    }
}
