//! The user's own tools: `helm` on PATH for install and uninstall, `docker` for case 3's
//! builds. verify never deletes anything itself: an uninstall is helm's, and what it leaves is
//! only reported.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ChartError;

/// What to install when helm is missing.
pub const HELM_HINT: &str =
    "helm is not on PATH: install Helm 3 (https://helm.sh/docs/intro/install/, \
e.g. `curl -fsSL https://raw.githubusercontent.com/helm/helm/main/scripts/get-helm-3 | bash`)";

/// The first executable `name` on `path` (a PATH value).
pub fn find_on(path: &std::ffi::OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// helm on the process's PATH, or [`ChartError::Tool`] saying what to install.
pub fn helm() -> Result<PathBuf, ChartError> {
    std::env::var_os("PATH")
        .and_then(|p| find_on(&p, "helm"))
        .ok_or_else(|| ChartError::Tool(HELM_HINT.to_string()))
}

/// The cluster a helm command is pinned to (the same context the verify command was given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub kubeconfig: Option<PathBuf>,
    pub context: String,
}

impl Pin {
    fn args(&self) -> Vec<String> {
        let mut a = vec!["--kube-context".to_string(), self.context.clone()];
        if let Some(k) = &self.kubeconfig {
            a.push("--kubeconfig".into());
            a.push(k.display().to_string());
        }
        a
    }
}

/// `helm install RELEASE CHART --namespace NS --create-namespace [-f VALUES]… --wait`, pinned.
pub fn install_args(
    pin: &Pin,
    release: &str,
    chart: &str,
    namespace: &str,
    values: &[PathBuf],
) -> Vec<String> {
    let mut a: Vec<String> = ["install", release, chart, "--namespace", namespace]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.push("--create-namespace".into());
    for v in values {
        a.push("--values".into());
        a.push(v.display().to_string());
    }
    a.push("--wait".into());
    a.extend(pin.args());
    a
}

/// `helm uninstall RELEASE --namespace NS --wait`, pinned.
pub fn uninstall_args(pin: &Pin, release: &str, namespace: &str) -> Vec<String> {
    let mut a: Vec<String> = ["uninstall", release, "--namespace", namespace, "--wait"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(pin.args());
    a
}

/// What a tool run answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub success: bool,
    /// The exit code, or none when a signal ended it.
    pub code: Option<i32>,
    /// stdout then stderr, trimmed.
    pub output: String,
}

impl Ran {
    /// The output's first line (for a row).
    pub fn first_line(&self) -> &str {
        self.output.lines().next().unwrap_or("")
    }
}

/// Runs `program args…` to the end (a failure to start is [`ChartError::Tool`]).
pub fn run(program: &Path, args: &[String], env: &[(&str, &str)]) -> Result<Ran, ChartError> {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| ChartError::Tool(format!("{}: {e}", program.display())))?;
    let mut output = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !err.is_empty() {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(&err);
    }
    Ok(Ran {
        success: out.status.success(),
        code: out.status.code(),
        output,
    })
}

/// A semantic version `vX.Y.Z…` out of `helm version --short` (`v3.21.0+gabc`).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let v = text.trim().trim_start_matches('v');
    let core = v.split(['+', '-', ' ']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    Some((
        parts.next()??,
        parts.next()??,
        parts.next().flatten().unwrap_or(0),
    ))
}

/// The version `helm version --short` reports, or why it could not be read.
pub fn helm_version(helm: &Path) -> Result<(u64, u64, u64), ToolUnusable> {
    let ran = run(helm, &["version".into(), "--short".into()], &[])?;
    if !ran.success {
        return Err(ToolUnusable::HelmFailed(ran.first_line().to_string()));
    }
    parse_version(&ran.output)
        .ok_or_else(|| ToolUnusable::HelmVersion(ran.first_line().to_string()))
}

/// Why a local tool cannot serve a case: the case's skip reason.
#[derive(Debug, thiserror::Error)]
pub enum ToolUnusable {
    /// It would not start ([`ChartError::Tool`]).
    #[error(transparent)]
    Start(#[from] ChartError),
    #[error("helm version failed: {0}")]
    HelmFailed(String),
    #[error("helm version said `{0}`")]
    HelmVersion(String),
    #[error("docker is not on PATH")]
    NoDocker,
    #[error("no docker daemon answers: {0}")]
    NoDaemon(String),
}

/// Whether a docker daemon answers (`docker version` reaching the server), else why not.
pub fn docker_builder() -> Result<PathBuf, ToolUnusable> {
    let docker = std::env::var_os("PATH")
        .and_then(|p| find_on(&p, "docker"))
        .ok_or(ToolUnusable::NoDocker)?;
    let ran = run(
        &docker,
        &[
            "version".into(),
            "--format".into(),
            "{{.Server.Version}}".into(),
        ],
        &[],
    )?;
    if ran.success && !ran.output.trim().is_empty() {
        Ok(docker)
    } else {
        Err(ToolUnusable::NoDaemon(
            ran.output
                .lines()
                .last()
                .unwrap_or("docker version failed")
                .to_string(),
        ))
    }
}

/// The version token of `gpustack-operator --version` output (the word after `version`, a
/// leading `v` dropped), as case-1.sh reads it.
pub fn binary_version(output: &str) -> Option<String> {
    let words: Vec<&str> = output.split_whitespace().collect();
    words
        .windows(2)
        .find(|w| w[0] == "version")
        .map(|w| w[1].trim_start_matches('v').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_commands_are_pinned_to_the_context() {
        let pin = Pin {
            kubeconfig: Some("/k".into()),
            context: "c".into(),
        };
        assert_eq!(
            uninstall_args(&pin, "r", "ns").join(" "),
            "uninstall r --namespace ns --wait --kube-context c --kubeconfig /k"
        );
        assert_eq!(
            install_args(&pin, "r", "./chart", "ns", &["v.yaml".into()]).join(" "),
            "install r ./chart --namespace ns --create-namespace --values v.yaml --wait --kube-context c --kubeconfig /k"
        );
    }

    #[test]
    fn versions_parse() {
        assert_eq!(parse_version("v3.21.0+g1234"), Some((3, 21, 0)));
        assert_eq!(parse_version("v3.13"), Some((3, 13, 0)));
        assert_eq!(parse_version("nonsense"), None);
        assert_eq!(
            binary_version("gpustack-operator version v0.6.1 (commit abc)"),
            Some("0.6.1".into())
        );
        assert_eq!(binary_version("nothing here"), None);
    }

    #[test]
    fn a_missing_tool_is_not_found() {
        assert_eq!(
            find_on(std::ffi::OsStr::new("/nonexistent-dir"), "helm"),
            None
        );
    }
}
