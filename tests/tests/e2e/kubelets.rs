//! The subresources kube hands to a kubelet, against a fake kubelet over TLS: `kubectl logs`
//! (and `-f`), `kubectl exec` (kubectl's WebSocket v5 offer, asked of the kubelet as v4),
//! `exec -i`, `attach -i` and `port-forward` over SPDY, and a node's `proxy`, each presenting `--kubelet-client-certificate` to a kubelet verified with
//! `--kubelet-certificate-authority`.

use std::path::Path;

use serde_json::json;
use tests::TestServer;
use tests::kubelet::FakeKubelet;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A server reaching `kubelet` as node `node-a`, with a pod `web` bound to it.
fn cluster(kubelet: &FakeKubelet, dir: &Path) -> TestServer {
    let (cert, key) = kubelet.ca.client_cert("kube-apiserver-kubelet-client");
    let s = TestServer::start_with(&[
        "--kubelet-client-certificate",
        &write(dir, "client.crt", &cert),
        "--kubelet-client-key",
        &write(dir, "client.key", &key),
        "--kubelet-certificate-authority",
        &write(dir, "ca.crt", &kubelet.ca.pem()),
        "--kubelet-preferred-address-types",
        "InternalIP",
    ]);
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}, "status": {
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet.port}}}});
    tests::assert_success("create node", &s.kubectl_stdin(&["create", "-f", "-"], &node.to_string()));
    let status = json!({"status": node["status"]});
    s.kubectl_ok(&["patch", "node", "node-a", "--subresource=status", "--type=merge", "-p", &status.to_string()]);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "nginx"}]}});
    tests::assert_success("create pod", &s.kubectl_stdin(&["create", "-f", "-"], &pod.to_string()));
    let running = r#"{"status": {"phase": "Running"}}"#;
    s.kubectl_ok(&["patch", "pod", "web", "--subresource=status", "--type=merge", "-p", running]);
    s
}

#[test]
fn logs_exec_and_node_proxy_reach_the_kubelet_with_its_client_certificate() {
    let kubelet = FakeKubelet::start("node-a");
    let dir = tempfile::tempdir().unwrap();
    let s = cluster(&kubelet, dir.path());

    assert_eq!(s.kubectl_ok(&["logs", "web"]), "line 1\nline 2\n");
    // Followed: the lines as the kubelet writes them, and the end when it ends.
    assert_eq!(s.kubectl_ok(&["logs", "-f", "web", "--tail=3"]), "line 1\nline 2\nline 3\n");
    assert_eq!(s.kubectl_ok(&["exec", "web", "--", "echo", "hi"]), "ran: echo hi\n");
    assert_eq!(s.kubectl_ok(&["get", "--raw", "/api/v1/nodes/node-a/proxy/healthz"]), "ok from node-a");

    let seen = kubelet.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(
        targets,
        [
            "GET /containerLogs/default/web/c",
            "GET /containerLogs/default/web/c?follow=true&tailLines=3",
            "GET /exec/default/web/c?output=1&error=1&command=echo&command=hi",
            "GET /healthz",
        ]
    );
    assert!(
        seen.iter().all(|s| s.client.as_deref() == Some("kube-apiserver-kubelet-client")),
        "every request presents the kubelet client certificate: {seen:?}"
    );
    // The client's credentials stay with this server.
    assert!(seen.iter().all(|s| !s.headers.iter().any(|h| h == "authorization")), "{seen:?}");
}

#[test]
fn proxies_reach_no_address_a_proxy_may_not() {
    let kubelet = FakeKubelet::start("node-a");
    let dir = tempfile::tempdir().unwrap();
    let s = cluster(&kubelet, dir.path());
    let refused = |path: &str| {
        let out = s.kubectl(&["get", "--raw", path]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success() && stderr.contains("address not allowed"), "{path}: {stderr}");
    };
    // Another port of a node on a loopback address; a pod whose IP is link-local.
    refused("/api/v1/nodes/node-a:9100/proxy/metrics");
    let status = r#"{"status": {"podIP": "169.254.169.254", "podIPs": [{"ip": "169.254.169.254"}]}}"#;
    s.kubectl_ok(&["patch", "pod", "web", "--subresource=status", "--type=merge", "-p", status]);
    refused("/api/v1/namespaces/default/pods/web/proxy/latest/meta-data");
    // Endpoints naming no pod are not proxied to.
    s.kubectl_ok(&["create", "service", "clusterip", "open", "--tcp=80"]);
    let endpoints = r#"{"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "open"},
        "subsets": [{"addresses": [{"ip": "192.0.2.9"}], "ports": [{"port": 80}]}]}"#;
    tests::assert_success("endpoints", &s.kubectl_stdin(&["apply", "-f", "-"], endpoints));
    let out = s.kubectl(&["get", "--raw", "/api/v1/namespaces/default/services/open/proxy/"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no endpoints available for service"), "{stderr}");
    assert!(kubelet.seen().is_empty(), "nothing reached the kubelet");
}

#[test]
fn what_cannot_reach_a_kubelet_says_why() {
    let kubelet = FakeKubelet::start("node-a");
    let dir = tempfile::tempdir().unwrap();
    let s = cluster(&kubelet, dir.path());
    // Without an upgrade, exec is refused as kube refuses it.
    let out = s.kubectl(&["get", "--raw", "/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Upgrade request required"), "{out:?}");
    assert!(kubelet.seen().is_empty(), "nothing reached the kubelet");
}

/// With stdin, kubectl's WebSocket v5 offer is passed on as it is (a kubelet cannot see stdin
/// end in v4); the kubelet refuses it and kubectl falls back to SPDY, which is relayed byte for
/// byte, as is port-forward's SPDY.
#[test]
fn exec_and_attach_with_stdin_and_port_forward_go_over_spdy() {
    use std::io::{BufRead, Read, Write};
    let kubelet = FakeKubelet::start("node-a");
    let dir = tempfile::tempdir().unwrap();
    let s = cluster(&kubelet, dir.path());

    let out = s.kubectl_stdin(&["exec", "-i", "web", "--", "cat"], "hello\nworld\n");
    assert!(out.status.success(), "{out:?}\n{}", s.log_tail());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\nworld\n");
    let out = s.kubectl_stdin(&["attach", "-i", "web"], "attached\n");
    assert!(out.status.success(), "{out:?}\n{}", s.log_tail());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "attached\n");

    /// Kills the port-forward however the test ends.
    struct Forward(std::process::Child);
    impl Drop for Forward {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut forward = Forward(
        std::process::Command::new(tests::kubectl_bin())
            .args(["port-forward", "pod/web", ":80"])
            .env("KUBECONFIG", &s.kubeconfig)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run kubectl port-forward"),
    );
    let stdout = forward.0.stdout.take().unwrap();
    let (line_tx, line_rx) = std::sync::mpsc::channel();
    // The first line is the port; the rest is read too, so kubectl never writes to a closed pipe.
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        let _ = line_tx.send(lines.next());
        lines.for_each(drop);
    });
    let first = line_rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("port-forward prints its port within a minute")
        .expect("a line from port-forward")
        .unwrap();
    // "Forwarding from 127.0.0.1:<port> -> 80"
    let port: u16 = first
        .strip_prefix("Forwarding from 127.0.0.1:")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected port-forward output: {first}"));
    for text in ["ping", "pong"] {
        let mut local = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        local.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
        local.write_all(text.as_bytes()).unwrap();
        let want = format!("forwarded: {text}");
        let mut got = vec![0u8; want.len()];
        if let Err(e) = local.read_exact(&mut got) {
            let _ = forward.0.kill();
            let mut stderr = String::new();
            let _ = forward.0.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("reading what was forwarded: {e}\nport-forward: {stderr}\nserver log:\n{}", s.log_tail());
        }
        assert_eq!(String::from_utf8_lossy(&got), want);
    }
    let _ = forward.0.kill();
    let mut stderr = String::new();
    let _ = forward.0.stderr.take().unwrap().read_to_string(&mut stderr);

    let seen = kubelet.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    let exec = "/exec/default/web/c?input=1&output=1&error=1&command=cat";
    let attach = "/attach/default/web/c?input=1&output=1&error=1";
    assert_eq!(
        targets,
        [
            format!("GET {exec}"),
            format!("POST {exec}"),
            format!("GET {attach}"),
            format!("POST {attach}"),
            "POST /portForward/default/web".to_string(),
        ],
        "port-forward's stderr: {stderr}"
    );
    assert!(seen.iter().all(|s| s.client.as_deref() == Some("kube-apiserver-kubelet-client")), "{seen:?}");
}
