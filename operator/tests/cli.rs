//! The binary's configuration contract: invalid flags or environment exit 64
//! (`EX_USAGE`) before any port is bound or the API is contacted.

use std::process::Command;

fn operator(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_isolane-operator"));
    command.args(args).env("KUBECONFIG", "/nonexistent");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("the operator runs")
}

/// Flags, environment, and a piece of the expected message.
type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);

#[test]
fn invalid_configuration_exits_64() {
    let cases: [Case<'_>; 6] = [
        (&["--namespace", "Not_A_Namespace"], &[], "--namespace"),
        (&[], &[("ISOLANE_NAMESPACE", "-bad")], "--namespace"),
        (&["--webhook-addr", "127.0.0.1:0"], &[], "--webhook-cert"),
        (
            &["--lease-duration", "2s", "--renew-deadline", "5s"],
            &[],
            "leader timings",
        ),
        (&["--lease-duration", "soon"], &[], "duration"),
        (&["--no-such-flag"], &[], "--no-such-flag"),
    ];
    for (args, env, needle) in cases {
        let output = operator(args, env);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(64), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn help_exits_0_and_names_the_environment() {
    let output = operator(&["--help"], &[]);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    for env in [
        "ISOLANE_NAMESPACE",
        "ISOLANE_WEBHOOK_ADDR",
        "ISOLANE_LEASE_DURATION",
        "ISOLANE_ADMIN_ADDR",
    ] {
        assert!(help.contains(env), "--help mentions {env}");
    }
}
