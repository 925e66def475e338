//! Security defaults a client can see: connections that never start TLS do not starve the
//! ones that do.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use tests::TestServer;

/// 1,000 TCP connections that never send a byte (more than actix's default 256 handshakes per
/// worker on two workers) must not make a new client wait for the 3 s handshake timeout: kube
/// answers such a client at once.
#[test]
fn idle_connections_that_never_start_tls_do_not_hold_up_new_clients() {
    let s = TestServer::start();
    let idle: Vec<TcpStream> =
        (0..1_000).map(|_| TcpStream::connect(("127.0.0.1", s.port)).expect("an idle TCP connection")).collect();
    // Let the server accept them all.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    s.kubectl_ok(&["get", "--raw", "/readyz"]);
    let waited = started.elapsed();
    drop(idle);
    assert!(
        waited < Duration::from_secs(1),
        "a new client waited {waited:?} behind connections that never started TLS"
    );
}
