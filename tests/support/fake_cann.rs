//! Assembles the FAKE CANN toolkit of `tests/fake_cann/` (see its README):
//! a directory laid out like a CANN install whose bisheng and libascendcl
//! are test doubles running on the host. Never a real toolkit.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// Which compiler front end the fake toolkit's version implies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeVersion {
    /// CANN 8.5.0: `-x asc --npu-arch=…`; version in `compiler/version.info`,
    /// bisheng in `compiler/ccec_compiler/bin`.
    Cann85,
    /// CANN 8.0.RC3: `-xcce --cce-aicore-arch=…` with the tikcpp include
    /// dirs; version and bisheng under `<arch>-linux/`.
    Cann80,
}

/// A fake toolkit assembled on disk.
#[derive(Debug, Clone)]
pub struct FakeCann {
    pub home: PathBuf,
    pub version: FakeVersion,
}

const BISHENG: &str = include_str!("../fake_cann/bisheng.sh");
const LAUNCH_HEADER: &str = include_str!("../fake_cann/pypto_fake_npu.h");
const ACL_SOURCE: &str = "tests/fake_cann/acl.c";

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(path.parent().context("path has a parent")?)?;
    std::fs::write(path, text).with_context(|| path.display().to_string())
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn cc(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("cc")
        .args(args)
        .output()
        .context("running cc")?;
    if !out.status.success() {
        bail!(
            "cc {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

impl FakeCann {
    /// Assembles a fresh fake toolkit at `home` (removing what was there).
    pub fn assemble(home: &Path, version: FakeVersion) -> anyhow::Result<FakeCann> {
        let _ = std::fs::remove_dir_all(home);
        let arch_dir = format!("{}-linux", std::env::consts::ARCH);
        let (version_file, version_line, bin_dir, frontend) = match version {
            FakeVersion::Cann85 => (
                "compiler/version.info".to_owned(),
                "Version=8.5.0",
                "compiler/ccec_compiler/bin".to_owned(),
                "asc",
            ),
            FakeVersion::Cann80 => (
                format!("{arch_dir}/ascend_toolkit_install.info"),
                "version=8.0.RC3",
                format!("{arch_dir}/ccec_compiler/bin"),
                "cce",
            ),
        };
        write(
            &home.join(version_file),
            &format!("# FAKE toolkit for pypto-rs tests\n{version_line}\n"),
        )?;
        let bisheng = home.join(bin_dir).join("bisheng");
        write(
            &bisheng,
            &BISHENG
                .replace("@FAKE_HOME@", &home.display().to_string())
                .replace("@FRONTEND@", frontend),
        )?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bisheng, std::fs::Permissions::from_mode(0o755))?;

        let tikcfw = home.join("compiler/tikcpp/tikcfw");
        copy_dir(&crate::workspace_root().join("templates/include"), &tikcfw)?;
        write(&tikcfw.join("pypto_fake_npu.h"), LAUNCH_HEADER)?;
        std::fs::create_dir_all(tikcfw.join("impl"))?;
        std::fs::create_dir_all(tikcfw.join("interface"))?;

        let lib64 = home.join("lib64");
        std::fs::create_dir_all(&lib64)?;
        let acl = crate::workspace_root().join(ACL_SOURCE);
        let libacl = lib64.join("libascendcl.so");
        cc(&[
            "-shared",
            "-fPIC",
            "-O1",
            "-Wl,-soname,libascendcl.so",
            "-o",
            libacl.to_str().context("utf-8 path")?,
            acl.to_str().context("utf-8 path")?,
            "-lpthread",
        ])?;
        let empty = home.join("empty.c");
        write(
            &empty,
            "/* FAKE: an empty stand-in for a CANN library. */\n",
        )?;
        // The other libraries an NPU build links: present, and empty.
        for lib in pypto_build::unstable::toolchain::cann::RUNTIME_LIBS
            .iter()
            .filter(|l| **l != "ascendcl")
        {
            let path = lib64.join(format!("lib{lib}.so"));
            cc(&[
                "-shared",
                "-fPIC",
                "-o",
                path.to_str().context("utf-8 path")?,
                empty.to_str().context("utf-8 path")?,
            ])?;
        }
        Ok(FakeCann {
            home: home.to_path_buf(),
            version,
        })
    }

    /// The fake runtime library.
    pub fn libascendcl(&self) -> PathBuf {
        self.home.join("lib64/libascendcl.so")
    }

    /// Every argv the fake bisheng compiled with, one per line, oldest first.
    pub fn bisheng_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.home.join("fake-bisheng.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Forgets the recorded argv.
    pub fn clear_log(&self) {
        let _ = std::fs::remove_file(self.home.join("fake-bisheng.log"));
    }
}
