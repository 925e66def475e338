//! What admission costs a write: configmap creates/s at c=64 over HTTPS with no admission
//! plugins, with kube's default chain and no webhooks, and with one local validating or
//! mutating webhook (an HTTPS server on this machine that allows everything, or patches in a
//! label), each as a ratio of the first row measured in the same run. The webhook server
//! shares the machine's cores with the apiserver and the client, as a sidecar webhook would.

use std::time::Duration;

use serde_json::json;
use tests::TestServer;
use tests::webhook::{WebhookServer, allow, patch};

use crate::{Phase, answered, cpu_time, run};

const CONCURRENCY: usize = 64;

/// kube's default plugins this server builds, all turned off for the chain-less row.
const DEFAULTS: &str = "NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,PodSecurity,Priority,\
    DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,\
    RuntimeClass,CertificateApproval,CertificateSigning,CertificateSubjectRestriction,DefaultIngressClass,\
    MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota";

/// Creates configmaps named `<round>-<worker>-<i>` from 64 workers; the server's CPU time beside.
async fn creates(server: &TestServer, round: &str, seconds: Duration) -> (Phase, Duration) {
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps");
    let pid = server.pid();
    let cpu = cpu_time(pid);
    let round = round.to_string();
    let phase = run(CONCURRENCY, seconds, move |w, i| {
        let (cl, u, round) = (client.clone(), url.clone(), round.clone());
        async move {
            let body = json!({"metadata": {"name": format!("{round}-{w}-{i}")}, "data": {"payload": "x".repeat(512)}});
            answered(cl.post(&u).send_json(&body).await, 201).await
        }
    })
    .await;
    (phase, cpu_time(pid).saturating_sub(cpu))
}

/// Registers a `kind` webhook configuration for configmap creates calling `hook`, and waits
/// until a create has gone through it.
async fn configure(server: &TestServer, kind: &str, hook: &WebhookServer) {
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": format!("{kind}WebhookConfiguration"),
        "metadata": {"name": format!("bench-{}", kind.to_lowercase())},
        "webhooks": [{"name": "bench.example.com", "clientConfig": {"url": hook.url("/"), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
    let created = server.kubectl_stdin(&["create", "-f", "-"], &config.to_string());
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let client = server.client(true);
    let url = server.url("/api/v1/namespaces/default/configmaps");
    for i in 0.. {
        let before = hook.calls("/").len();
        let body = json!({"metadata": {"name": format!("probe-{}-{i}", kind.to_lowercase())}});
        assert!(answered(client.post(&url).send_json(&body).await, 201).await, "probe create");
        if hook.calls("/").len() > before {
            return;
        }
        assert!(i < 100, "the webhook was never called");
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One row: creates/s, latencies, errors, the share of the baseline's rate, server CPU per create.
fn report(name: &str, p: &Phase, base: &Phase, cpu: Duration) {
    println!(
        "{name:<36} c={CONCURRENCY:<3} {:>7.0} creates/s   p50 {:>7.2} ms   p99 {:>7.2} ms   errors {:<4} {:>6.1}% of no plugins   server CPU {:>6.1} µs/create",
        p.rate(),
        p.quantile_ms(0.50),
        p.quantile_ms(0.99),
        p.errors,
        100.0 * p.rate() / base.rate(),
        cpu.as_secs_f64() * 1e6 / p.ops.max(1) as f64
    );
}

pub async fn run_all(seconds: Duration) {
    println!("== admission: configmap creates over HTTPS at c={CONCURRENCY} (percentages: of the no-plugin row)");
    let bare = TestServer::start_with(&["--disable-admission-plugins", DEFAULTS]);
    let (base, cpu) = creates(&bare, "bare", seconds).await;
    report("no admission plugins", &base, &base, cpu);
    drop(bare);

    let server = TestServer::start();
    let (phase, cpu) = creates(&server, "chain", seconds).await;
    report("default chain, no webhooks", &phase, &base, cpu);

    let validating = WebhookServer::start(&["127.0.0.1"], |_, _| allow());
    configure(&server, "Validating", &validating).await;
    let (phase, cpu) = creates(&server, "validated", seconds).await;
    report("+ one validating webhook", &phase, &base, cpu);
    let out = server.kubectl(&["delete", "validatingwebhookconfiguration", "bench-validating"]);
    assert!(out.status.success());

    let mutating = WebhookServer::start(&["127.0.0.1"], |_, _| {
        patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]))
    });
    configure(&server, "Mutating", &mutating).await;
    let (phase, cpu) = creates(&server, "mutated", seconds).await;
    report("+ one mutating webhook (JSONPatch)", &phase, &base, cpu);
}
