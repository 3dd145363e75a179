//! The release and platform rkube reports as Kubernetes components do: the version it
//! serves, Go's names for the operating system and architecture, and client-go's
//! `User-Agent` form.

/// The Kubernetes release rkube serves.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "33";

/// The `gitVersion` of rkube's server and components: the release it serves, tagged with
/// rkube's own version.
pub fn git_version() -> String {
    format!(
        "v{KUBE_MAJOR}.{KUBE_MINOR}.0+rkube.{}",
        env!("CARGO_PKG_VERSION")
    )
}

/// Go's `GOARCH` name of the machine this runs on.
pub fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// `<GOOS>/<GOARCH>`, as `version.Info.Platform` and user agents print it.
pub fn platform() -> String {
    format!("{}/{}", std::env::consts::OS, go_arch())
}

/// client-go's default `User-Agent` form, `<program>/<version> (<os>/<arch>)
/// kubernetes/<commit>`: the API server takes the part before the first `/` as the field
/// manager's name.
pub fn user_agent(program: &str, version: &str) -> String {
    format!("{program}/{version} ({}) kubernetes/rkube", platform())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_agent_in_client_gos_form() {
        let ua = user_agent("kubelet", &git_version());
        assert!(ua.starts_with("kubelet/v1.33.0+rkube."), "{ua}");
        assert!(
            ua.ends_with(&format!(" ({}) kubernetes/rkube", platform())),
            "{ua}"
        );
        assert!(!go_arch().contains('_'), "{}", go_arch());
    }
}
