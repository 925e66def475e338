use std::time::Duration;

use actix::{Actor, Context};
use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use serde::{Deserialize, Serialize};

use super::*;
use crate::stage::{StageArbiter, StageHandler, Work, start};
use crate::{MailboxSpec, StageError};

struct Sleeper;
impl Actor for Sleeper {
    type Context = Context<Self>;
}

/// Answers after sleeping this many milliseconds.
#[derive(Serialize, Deserialize)]
struct Nap(u64);
impl Request for Nap {
    type Reply = Result<u64, String>;
}

impl StageHandler<Nap> for Sleeper {
    fn handle(&mut self, msg: Nap, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<u64, String>> {
        Work::later(async move {
            tokio::time::sleep(Duration::from_millis(msg.0)).await;
            if msg.0 == 13 { Err("unlucky".into()) } else { Ok(msg.0) }
        })
    }
}

crate::stage_handler!(Sleeper => Nap);

/// A CA and a certificate it signed for 127.0.0.1, good for serving and as a client.
fn pki() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

fn tls((ca, cert, key): &(String, String, String)) -> ClusterTls {
    ClusterTls::from_pem(ca.as_bytes(), cert.as_bytes(), key.as_bytes()).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Serves a sleeper stage of `capacity` slots on `port`, until the listener is dropped.
fn serve(port: u16, tls: &ClusterTls, capacity: usize) -> Listening {
    let directory = ActorDirectory::default();
    let spec = MailboxSpec {
        stage: "sleeper".into(),
        resource: String::new(),
        capacity,
        when_full: WhenFull::Shed { wait: Duration::from_millis(100) },
    };
    let started = start(&StageArbiter::new("test"), &directory, &spec, Sleeper);
    let mut service = StageService::default();
    service.expose(started.handle::<Nap>());
    service.serve(([127, 0, 0, 1], port).into(), tls).unwrap()
}

#[actix::test]
async fn a_remote_stage_answers_through_its_own_mailbox() {
    let pki = pki();
    let port = free_port();
    let _server = serve(port, &tls(&pki), 2);
    let directory = ActorDirectory::default();
    let peer = Peer::new("far", &format!("https://127.0.0.1:{port}"), &tls(&pki)).unwrap();
    let stage = peer.stage("sleeper", &directory);
    let nap = stage.handle::<Nap>();
    assert_eq!(nap.stage(), "sleeper@far");
    assert_eq!(nap.call(Nap(1), Deadline::after(Duration::from_secs(5))).await.unwrap(), Ok(1));
    assert_eq!(nap.call(Nap(13), Deadline::NONE).await.unwrap(), Err("unlucky".into()));

    // Two calls hold both slots of the receiving stage: a third is refused there, and the
    // refusal names the stage as this process knows it.
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let nap = nap.clone();
            tokio::spawn(async move { nap.call(Nap(800), Deadline::NONE).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = nap.call(Nap(0), Deadline::NONE).await.unwrap_err();
    assert!(matches!(refused, StageError::Saturated { ref stage, .. } if stage == "sleeper@far"), "{refused:?}");
    for b in busy {
        assert_eq!(b.await.unwrap().unwrap(), Ok(800));
    }

    // The deadline crosses with the message: the far stage gives the work up at it.
    let started = Instant::now();
    let late = nap.call(Nap(5_000), Deadline::after(Duration::from_millis(300))).await.unwrap_err();
    assert!(matches!(late, StageError::DeadlineExceeded { ref stage } if stage == "sleeper@far"), "{late:?}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());

    let meters = &directory.snapshot()[0];
    assert_eq!((meters.stage.as_str(), meters.arbiter.as_str()), ("sleeper@far", "remote"));
    assert_eq!(meters.enqueued, 6, "{meters:?}");
}

#[actix::test]
async fn calls_past_a_full_remote_mailbox_are_refused_not_queued_in_the_connection() {
    let pki = pki();
    let port = free_port();
    // More slots than HTTP/2's usual 200 streams per connection, and more callers than slots.
    let _server = serve(port, &tls(&pki), 300);
    let directory = ActorDirectory::default();
    let peer = Peer::new("far", &format!("https://127.0.0.1:{port}"), &tls(&pki)).unwrap();
    let nap = peer.stage("sleeper", &directory).handle::<Nap>();
    let started = Instant::now();
    let calls: Vec<_> = (0..500)
        .map(|_| {
            let nap = nap.clone();
            tokio::spawn(async move { nap.call(Nap(1_000), Deadline::NONE).await })
        })
        .collect();
    let (mut answered, mut refused) = (0, 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(Ok(1_000)) => answered += 1,
            Err(StageError::Saturated { stage, .. }) if stage == "sleeper@far" => refused += 1,
            other => panic!("{other:?}"),
        }
    }
    // All 300 slots fill at once from one connection; the other 200 are refused after the
    // mailbox's wait, not served a second later behind them.
    assert_eq!((answered, refused), (300, 200));
    assert!(started.elapsed() < Duration::from_millis(1_900), "{:?}", started.elapsed());
}

#[actix::test]
async fn an_unreachable_stage_fails_fast_until_it_returns() {
    let pki = pki();
    let port = free_port();
    let directory = ActorDirectory::default();
    let peer = Peer::new("gone", &format!("https://127.0.0.1:{port}"), &tls(&pki)).unwrap();
    let nap = peer.stage("sleeper", &directory).handle::<Nap>();
    let err = nap.call(Nap(1), Deadline::after(Duration::from_secs(5))).await.unwrap_err();
    assert!(matches!(err, StageError::Transport { ref stage, .. } if stage == "sleeper@gone"), "{err:?}");
    assert!(!peer.health().up);
    // While down, calls fail without trying.
    let started = Instant::now();
    let err = nap.call(Nap(1), Deadline::after(Duration::from_secs(5))).await.unwrap_err();
    assert!(err.to_string().contains("unreachable: down for"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(50), "{:?}", started.elapsed());

    // The process comes up: the probe finds it, and calls flow again.
    let _server = serve(port, &tls(&pki), 4);
    let mut up = false;
    for _ in 0..40 {
        tokio::time::sleep(PROBE_INTERVAL).await;
        if peer.health().up {
            up = true;
            break;
        }
    }
    assert!(up, "{:?}", peer.health());
    assert_eq!(nap.call(Nap(2), Deadline::after(Duration::from_secs(5))).await.unwrap(), Ok(2));
}

#[actix::test]
async fn a_peer_without_the_cluster_ca_is_refused() {
    let port = free_port();
    let _server = serve(port, &tls(&pki()), 4);
    let directory = ActorDirectory::default();
    let stranger = Peer::new("stranger", &format!("https://127.0.0.1:{port}"), &tls(&pki())).unwrap();
    let nap = stranger.stage("sleeper", &directory).handle::<Nap>();
    let err = nap.call(Nap(1), Deadline::after(Duration::from_secs(5))).await.unwrap_err();
    assert!(matches!(err, StageError::Transport { .. }), "{err:?}");
    assert!(err.to_string().to_lowercase().contains("certificate"), "{err}");
}

#[test]
fn frames_keep_their_boundaries() {
    let f = frame(b"abc");
    assert_eq!(&f[..], &[0, 0, 0, 3, b'a', b'b', b'c']);
    assert_eq!(route::<Nap>("sleeper"), "/stages/sleeper/Nap");
}
