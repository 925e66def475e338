//! Data survives restarts and crashes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tests::TestServer;

fn resource_versions(s: &TestServer) -> Vec<(String, String)> {
    let list: Value = serde_json::from_str(&s.kubectl_ok(&["get", "configmaps", "-A", "-o", "json"])).unwrap();
    let mut out: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                format!("{}/{}", i["metadata"]["namespace"].as_str().unwrap(), i["metadata"]["name"].as_str().unwrap()),
                i["metadata"]["resourceVersion"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn restart_keeps_every_object_and_resource_version() {
    let mut s = TestServer::start();
    s.kubectl_ok(&["create", "namespace", "keep"]);
    for i in 0..20 {
        s.kubectl_ok(&["create", "configmap", &format!("c{i}"), "-n", "keep", &format!("--from-literal=i={i}")]);
    }
    s.kubectl_ok(&["label", "configmap", "c3", "-n", "keep", "changed=yes"]);
    s.kubectl_ok(&["delete", "configmap", "c4", "-n", "keep"]);
    let before = resource_versions(&s);
    // The server's own ConfigMaps (kube-system/extension-apiserver-authentication) besides.
    assert_eq!(before.iter().filter(|(k, _)| k.starts_with("keep/")).count(), 19);
    s.restart();
    assert_eq!(resource_versions(&s), before);
    // New writes continue from the restored revision.
    s.kubectl_ok(&["create", "configmap", "after", "-n", "keep"]);
    let after = resource_versions(&s);
    let newest: u64 = after.iter().find(|(k, _)| k == "keep/after").unwrap().1.parse().unwrap();
    assert!(before.iter().all(|(_, rv)| rv.parse::<u64>().unwrap() < newest));
}

#[actix_web::test]
async fn kill_9_during_a_write_burst_loses_no_acknowledged_write() {
    let mut s = TestServer::start();
    let client = s.client(true);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let pid = s.pid();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
    });
    let mut tasks = Vec::new();
    for w in 0..16 {
        let client = client.clone();
        let acked = acked.clone();
        let url = s.url("/api/v1/namespaces/default/configmaps");
        tasks.push(actix_web::rt::spawn(async move {
            for i in 0.. {
                let name = format!("w{w}-{i}");
                let body = json!({"metadata": {"name": name}, "data": {"payload": "x".repeat(512)}});
                match client.post(&url).send_json(&body).await {
                    Ok(r) if r.status().as_u16() == 201 => acked.lock().unwrap().push(name),
                    _ => return,
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 50, "the burst should have made progress before the kill: {}", acked.len());
    s.kill9();
    s.start_again();
    let present: std::collections::HashSet<String> =
        resource_versions(&s).into_iter().map(|(k, _)| k.trim_start_matches("default/").to_string()).collect();
    let lost: Vec<&String> = acked.iter().filter(|n| !present.contains(*n)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(10)]
    );
}
