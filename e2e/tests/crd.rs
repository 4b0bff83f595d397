//! The Worker CRD against a real kube-apiserver: it installs, the examples are
//! accepted, invalid Workers are rejected by the apiserver itself with messages
//! that name the field, and kubectl shows the columns and the documentation.

use std::path::{Path, PathBuf};
use std::process::Output;

use isolane_testenv::ControlPlane;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ sits in the workspace root")
        .to_path_buf()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs kubectl with `stdin` and returns its output, whatever the exit code.
fn kubectl_stdin(cp: &ControlPlane, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cp
        .kubectl(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(stdin.as_bytes())
        .expect("write manifest to kubectl");
    child.wait_with_output().expect("kubectl finishes")
}

fn kubectl_ok(cp: &ControlPlane, args: &[&str]) -> String {
    let output = cp.kubectl(args).output().expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl {args:?} failed: {}",
        text(&output)
    );
    text(&output)
}

/// Starts a control plane with the CRD installed and established, and a
/// namespace of the given name.
async fn with_crd(namespace: &str) -> ControlPlane {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let crd = root().join("crds/worker.yaml");
    kubectl_ok(&cp, &["apply", "-f", crd.to_str().expect("utf-8 path")]);
    kubectl_ok(
        &cp,
        &[
            "wait",
            "--for=condition=Established",
            "crd/workers.isolane.dev",
            "--timeout=60s",
        ],
    );
    cp.create_namespace(namespace)
        .await
        .expect("namespace created");
    cp
}

#[tokio::test]
async fn example_workers_are_accepted() {
    let cp = with_crd("examples").await;
    let dir = root().join("deploy/examples");
    let out = kubectl_ok(
        &cp,
        &[
            "apply",
            "-n",
            "examples",
            "-f",
            dir.to_str().expect("utf-8 path"),
        ],
    );
    for name in [
        "worker.isolane.dev/hello",
        "worker.isolane.dev/api",
        "worker.isolane.dev/echo",
        "worker.isolane.dev/thumbs",
    ] {
        assert!(
            out.contains(&format!("{name} created")),
            "{name} not created:\n{out}"
        );
    }
    // Server-side defaults are filled in.
    let limits = kubectl_ok(
        &cp,
        &[
            "get",
            "wk",
            "hello",
            "-n",
            "examples",
            "-o",
            "jsonpath={.spec.limits}",
        ],
    );
    let limits: serde_json::Value = serde_json::from_str(&limits).expect("limits are JSON");
    assert_eq!(limits["cpuMs"], 30000);
    assert_eq!(limits["wallMs"], 30000);
    assert_eq!(limits["memoryMiB"], 128);
    assert_eq!(limits["subrequests"], 50);
    let prefix = kubectl_ok(
        &cp,
        &[
            "get",
            "wk",
            "hello",
            "-n",
            "examples",
            "-o",
            "jsonpath={.spec.routes[0].pathPrefix}",
        ],
    );
    assert_eq!(prefix, "/");
    // The category lists Workers too.
    let all = kubectl_ok(&cp, &["get", "isolane", "-n", "examples", "-o", "name"]);
    assert!(all.contains("worker.isolane.dev/hello"), "{all}");
}

/// One invalid Worker and what the apiserver must say about it.
struct Invalid {
    what: &'static str,
    spec: &'static str,
    expect: &'static [&'static str],
}

const SCRIPT: &str = "script: 'export default { fetch() { return new Response(\"ok\") } }'";

fn invalid_workers() -> Vec<Invalid> {
    vec![
        Invalid {
            what: "both script and scriptFrom",
            spec: "script: 'x'\n  scriptFrom: {configMapKeyRef: {name: code, key: worker.js}}",
            expect: &[
                "spec: Invalid value",
                "exactly one of spec.script or spec.scriptFrom must be set (or spec.bundle)",
            ],
        },
        Invalid {
            what: "neither script nor scriptFrom",
            spec: "routes: [{host: a.example.com}]",
            expect: &["exactly one of spec.script or spec.scriptFrom must be set (or spec.bundle)"],
        },
        Invalid {
            what: "a bundle named by tag, not digest",
            spec: "bundle: registry.example/apps/app:v1",
            expect: &["spec.bundle", "should match"],
        },
        Invalid {
            what: "a bundle beside an inline script",
            spec: "SCRIPT\n  bundle: registry.example/apps/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            expect: &["exactly one of spec.script or spec.scriptFrom must be set (or spec.bundle)"],
        },
        Invalid {
            what: "cpuMs below its minimum",
            spec: "SCRIPT\n  limits: {cpuMs: 0}",
            expect: &["spec.limits.cpuMs", "greater than or equal to 1"],
        },
        Invalid {
            what: "memoryMiB above its maximum",
            spec: "SCRIPT\n  limits: {memoryMiB: 4096}",
            expect: &["spec.limits.memoryMiB", "less than or equal to 1024"],
        },
        Invalid {
            what: "route host not a DNS name",
            spec: "SCRIPT\n  routes: [{host: Bad_Host.example.com}]",
            expect: &["spec.routes[0].host", "must be a lower-case DNS name"],
        },
        Invalid {
            what: "egress allowed host not a DNS name",
            spec: "SCRIPT\n  egress: {allowedHosts: [api.example.com, 'http://x']}",
            expect: &[
                "spec.egress.allowedHosts",
                "each host must be a lower-case DNS name",
            ],
        },
        Invalid {
            what: "wildcard not in the first label",
            spec: "SCRIPT\n  routes: [{host: 'api.*.example.com'}]",
            expect: &["spec.routes[0].host", "must be a lower-case DNS name"],
        },
        Invalid {
            what: "pathPrefix without a leading slash",
            spec: "SCRIPT\n  routes: [{host: a.example.com, pathPrefix: api}]",
            expect: &["spec.routes[0].pathPrefix", "must start with /"],
        },
        Invalid {
            what: "env name not an identifier",
            spec: "SCRIPT\n  env: [{name: 1BAD, value: x}]",
            expect: &["spec.env[0].name", "should match"],
        },
        Invalid {
            what: "duplicate env names",
            spec: "SCRIPT\n  env: [{name: A, value: x}, {name: A, value: y}]",
            expect: &["spec.env[1]", "Duplicate value"],
        },
        Invalid {
            what: "env with both value and valueFrom",
            spec: "SCRIPT\n  env: [{name: A, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}]",
            expect: &[
                "spec.env[0]",
                "at most one of value or valueFrom may be set",
            ],
        },
        Invalid {
            what: "valueFrom naming two sources",
            spec: "SCRIPT\n  env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}, configMapKeyRef: {name: c, key: k}}}]",
            expect: &[
                "spec.env[0].valueFrom",
                "exactly one of secretKeyRef or configMapKeyRef must be set",
            ],
        },
        Invalid {
            what: "replicas of zero",
            spec: "SCRIPT\n  replicas: 0",
            expect: &["spec.replicas", "greater than or equal to 1"],
        },
        Invalid {
            what: "traffic not summing to 100",
            spec: "SCRIPT\n  traffic: [{latestRevision: true, percent: 50}]",
            expect: &[
                "spec.traffic",
                "the percentages of spec.traffic must sum to 100",
            ],
        },
        Invalid {
            what: "two traffic entries following the latest revision",
            spec: "SCRIPT\n  traffic: [{latestRevision: true, percent: 50}, {latestRevision: true, percent: 50}]",
            expect: &["at most one entry of spec.traffic may follow the latest revision"],
        },
        Invalid {
            what: "a traffic entry naming no revision",
            spec: "SCRIPT\n  traffic: [{percent: 100}]",
            expect: &[
                "spec.traffic[0]",
                "exactly one of revision or latestRevision",
            ],
        },
        Invalid {
            what: "a pinned revision the Worker does not have",
            spec: "SCRIPT\n  traffic: [{revision: 0123456789abcdef, percent: 100}]",
            expect: &["spec.traffic names a revision this Worker does not have"],
        },
        Invalid {
            what: "duplicate traffic tags",
            spec: "SCRIPT\n  traffic: [{latestRevision: true, percent: 50, tag: a}, {revision: 0123456789abcdef, percent: 50, tag: a}]",
            expect: &["tags in spec.traffic must be unique"],
        },
        Invalid {
            what: "affinity by header and cookie at once",
            spec: "SCRIPT\n  versionAffinity: {header: x-user, cookie: session}",
            expect: &[
                "spec.versionAffinity",
                "exactly one of header or cookie must be set",
            ],
        },
        Invalid {
            what: "a binding named as no JavaScript identifier",
            spec: "SCRIPT\n  bindings: [{name: my-kv, kvNamespace: cache}]",
            expect: &["spec.bindings[0].name"],
        },
        Invalid {
            what: "a binding of no supported kind",
            spec: "SCRIPT\n  bindings: [{name: COUNTER}]",
            expect: &[
                "spec.bindings[0]",
                "a binding needs exactly one of kvNamespace: <name>, durableObject: {className: <class>}, service: {name: <worker>}, dispatchNamespace: {namespace: <namespace>}, queue: {name: <queue>}, d1: {database: <name>}, images: {}, workerLoader: {}, r2Bucket: {bucket: <name>} or workflow: {className: <class>}",
            ],
        },
        Invalid {
            what: "a binding of two kinds, images among them",
            spec: "SCRIPT\n  bindings: [{name: IMAGES, images: {}, queue: {name: jobs}}]",
            expect: &["spec.bindings[0]", "images: {}, workerLoader: {}, r2Bucket"],
        },
        Invalid {
            what: "a binding of two kinds, a Worker Loader among them",
            spec: "SCRIPT\n  bindings: [{name: LOADER, workerLoader: {}, kvNamespace: cache}]",
            expect: &["spec.bindings[0]", "workerLoader: {}, r2Bucket"],
        },
        Invalid {
            what: "a binding of two kinds, r2Bucket among them",
            spec: "SCRIPT\n  bindings: [{name: B, r2Bucket: {bucket: files}, d1: {database: db}}]",
            expect: &["spec.bindings[0]", "r2Bucket: {bucket: <name>} or workflow"],
        },
        Invalid {
            what: "a binding of two kinds, a workflow among them",
            spec: "SCRIPT\n  bindings: [{name: W, workflow: {className: Flow}, kvNamespace: cache}]",
            expect: &["spec.bindings[0]", "or workflow: {className: <class>}"],
        },
        Invalid {
            what: "a queue binding's deliveryDelay over 12 hours",
            spec: "SCRIPT\n  bindings: [{name: Q, queue: {name: jobs, deliveryDelay: 43201}}]",
            expect: &[
                "spec.bindings[0].queue.deliveryDelay",
                "less than or equal to 43200",
            ],
        },
        Invalid {
            what: "an R2 bucket name R2 does not take",
            spec: "SCRIPT\n  bindings: [{name: B, r2Bucket: {bucket: Files}}]",
            expect: &["spec.bindings[0].r2Bucket.bucket"],
        },
        Invalid {
            what: "limits of the wrong type",
            spec: "SCRIPT\n  limits: {cpuMs: fast}",
            expect: &["spec.limits.cpuMs", "integer"],
        },
    ]
}

#[tokio::test]
async fn a_queue_bindings_delivery_delay_is_kept_at_its_bound() {
    let cp = with_crd("delayed").await;
    let manifest = format!(
        "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata:\n  name: delayed\nspec:\n  {SCRIPT}\n  bindings: [{{name: Q, queue: {{name: jobs, deliveryDelay: 43200}}}}]\n"
    );
    let output = kubectl_stdin(&cp, &["apply", "-n", "delayed", "-f", "-"], &manifest);
    assert!(output.status.success(), "{}", text(&output));
    // Stored, not pruned as an unknown field.
    let delay = kubectl_ok(
        &cp,
        &[
            "get",
            "wk",
            "delayed",
            "-n",
            "delayed",
            "-o",
            "jsonpath={.spec.bindings[0].queue.deliveryDelay}",
        ],
    );
    assert_eq!(delay.trim(), "43200");
}

#[tokio::test]
async fn invalid_workers_are_rejected_by_the_apiserver() {
    let cp = with_crd("invalid").await;
    let cases = invalid_workers();
    assert!(cases.len() >= 8);
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let manifest = format!(
            "apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata:\n  name: bad-{i}\nspec:\n  {}\n",
            case.spec.replace("SCRIPT", SCRIPT)
        );
        let output = kubectl_stdin(&cp, &["apply", "-n", "invalid", "-f", "-"], &manifest);
        let said = text(&output);
        if output.status.success() {
            failures.push(format!("{}: accepted\n{manifest}", case.what));
            continue;
        }
        for expected in case.expect {
            if !said.contains(expected) {
                failures.push(format!("{}: expected {expected:?} in:\n{said}", case.what));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
    // Nothing invalid was stored.
    let names = kubectl_ok(&cp, &["get", "wk", "-n", "invalid", "-o", "name"]);
    assert!(names.trim().is_empty(), "stored: {names}");
}

#[tokio::test]
async fn kubectl_get_shows_ready_url_revision_traffic_certificate_and_age() {
    let cp = with_crd("columns").await;
    let hello = root().join("deploy/examples/hello.yaml");
    kubectl_ok(
        &cp,
        &[
            "apply",
            "-n",
            "columns",
            "-f",
            hello.to_str().expect("utf-8 path"),
        ],
    );
    let status = serde_json::json!({
        "status": {
            "observedGeneration": 1,
            "revision": "0123456789abcdef",
            "trafficSummary": "100% 01234567 (latest)",
            "url": "http://hello.example.com/",
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "BundleWritten",
                "message": "serving revision 0123456789abcdef",
                "lastTransitionTime": "2026-01-01T00:00:00Z"
            }, {
                "type": "CertificateReady",
                "status": "True",
                "reason": "Issued",
                "message": "Certificate is up to date and has not expired",
                "lastTransitionTime": "2026-01-01T00:00:00Z"
            }]
        }
    })
    .to_string();
    kubectl_ok(
        &cp,
        &[
            "patch",
            "wk",
            "hello",
            "-n",
            "columns",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ],
    );
    let table = kubectl_ok(&cp, &["get", "wk", "-n", "columns"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "READY",
            "URL",
            "REVISION",
            "TRAFFIC",
            "CERTIFICATE",
            "AGE"
        ],
        "{table}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..4],
        [
            "hello",
            "True",
            "http://hello.example.com/",
            "0123456789abcdef"
        ],
        "{table}"
    );
    assert!(table.contains("100% 01234567 (latest)"), "{table}");
    assert!(
        table.contains("(latest)   Issued"),
        "the Certificate column: {table}"
    );
}

/// Runs kubectl until it succeeds or the deadline passes: some answers (the CRD's
/// OpenAPI for `explain`) are published a moment after the CRD is Established.
async fn kubectl_eventually(cp: &ControlPlane, args: &[&str]) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let output = cp.kubectl(args).output().expect("kubectl runs");
        if output.status.success() {
            return text(&output);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl {args:?} still failing after 60 s: {}",
            text(&output)
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn kubectl_explain_teaches_the_api() {
    let cp = with_crd("explain").await;
    // kubectl wraps descriptions; compare with white space folded.
    let fold = |s: String| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let limits = fold(kubectl_eventually(&cp, &["explain", "worker.spec.limits"]).await);
    for expected in [
        "Per-request limits",
        "cpuMs",
        "CPU time one request may use",
        "memoryMiB",
        "subrequests",
        "wallMs",
    ] {
        assert!(
            limits.contains(expected),
            "missing {expected:?} in:\n{limits}"
        );
    }
    let spec = fold(kubectl_ok(&cp, &["explain", "worker.spec"]));
    for expected in [
        "script",
        "scriptFrom",
        "env",
        "routes",
        "replicas",
        "Exactly one of `script` and `scriptFrom` is set",
    ] {
        assert!(spec.contains(expected), "missing {expected:?} in:\n{spec}");
    }
    let status = fold(kubectl_ok(&cp, &["explain", "worker.status.placement"]));
    assert!(status.contains("Name of the runtime node"), "{status}");
}
