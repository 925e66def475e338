//! Creates/s through 1 and through 3 gateway replicas on the same etcd, in the same run: 64
//! connections, spread round-robin over the replicas, each creating 512-byte ConfigMaps. On a
//! machine with few cores the replicas share its CPU with etcd and the clients, so the ratio
//! says what a replica costs there more than how far replicas scale.

use std::time::Duration;

use serde_json::json;
use storage::etcd::testing::EtcdProcess;
use tests::TestServer;

use crate::{Phase, answered, cpu_time, run};

const CONNECTIONS: usize = 64;

async fn creates(servers: &[TestServer], seconds: Duration, tag: &str) -> (Phase, Duration) {
    let targets: Vec<(awc::Client, String)> =
        servers.iter().map(|s| (s.client(true), s.url("/api/v1/namespaces/default/configmaps"))).collect();
    let cpu: Vec<Duration> = servers.iter().map(|s| cpu_time(s.pid())).collect();
    let tag = tag.to_string();
    let phase = run(CONNECTIONS, seconds, move |w, i| {
        let (client, url) = targets[w % targets.len()].clone();
        let name = format!("{tag}-{w}-{i}");
        async move {
            let body = json!({"metadata": {"name": name}, "data": {"payload": "x".repeat(512)}});
            answered(client.post(&url).send_json(&body).await, 201).await
        }
    })
    .await;
    let used = servers.iter().zip(cpu).map(|(s, before)| cpu_time(s.pid()).saturating_sub(before)).sum();
    (phase, used)
}

fn print(label: &str, p: &Phase, cpu: Duration, base: Option<&Phase>) {
    let ratio = base.map(|b| format!("  ({:.2}x the 1-replica rate)", p.rate() / b.rate())).unwrap_or_default();
    println!(
        "{label:<12} c={CONNECTIONS}: {:>8.0} creates/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {}  server CPU {:.0} µs/create{ratio}",
        p.rate(),
        p.quantile_ms(0.5),
        p.quantile_ms(0.99),
        p.errors,
        cpu.as_secs_f64() * 1e6 / p.ops.max(1) as f64,
    );
}

/// One replica, then three, on one etcd.
pub async fn run_replicas(seconds: Duration) {
    println!("== creates through gateway replicas sharing one etcd (512-byte ConfigMaps, {CONNECTIONS} connections)");
    let etcd = EtcdProcess::start();
    let flags = ["--storage-backend", "etcd3", "--etcd-servers", etcd.endpoint()];
    let mut servers = vec![TestServer::start_with(&flags)];
    let (one, cpu) = creates(&servers, seconds, "one").await;
    print("1 replica", &one, cpu, None);
    servers.push(TestServer::start_with(&flags));
    servers.push(TestServer::start_with(&flags));
    let (three, cpu) = creates(&servers, seconds, "three").await;
    print("3 replicas", &three, cpu, Some(&one));
}
