//! APF's cost per request, in process: classifying a request against kube's bootstrap
//! FlowSchemas, and asking the flow-control stage for a seat and giving it back, beside a bare
//! round trip to a stage that answers at once (the actor hop every stage pays), so the
//! figures read as APF's own cost over the hop; and the parts on their own: classification,
//! and the queue set's enqueue, dispatch and finish. Uncontended: one caller at a time on a
//! 600-seat server, the case whose p99 should stay under 20 µs.

use std::time::{Duration, Instant};

use actix::{Actor, Context};
use actors::{ActorDirectory, Deadline, MailboxSpec, StageArbiter, StageHandler, WhenFull, Work};
use apimachinery::error::ApiError;
use apimachinery::messages::{RequestWork, StartRequest};
use apimachinery::request::{UserInfo, parse_request_info};
use flowcontrol::queueset::{NewRequest, Outcome, QueueSet, QueueSetConfig, Queuing, WorkEstimate};
use flowcontrol::{FlowControlActor, SharedConfig};
use serde::{Deserialize, Serialize};

/// A request the echo stage answers at once.
#[derive(Serialize, Deserialize)]
struct Ping;

impl actors::Request for Ping {
    type Reply = Result<(), ApiError>;
}

struct Echo;

impl Actor for Echo {
    type Context = Context<Self>;
}

impl StageHandler<Ping> for Echo {
    fn handle(&mut self, _: Ping, _: Deadline, _: &mut Context<Self>) -> Work<Self, Result<(), ApiError>> {
        Work::Done(Ok(()))
    }
}

actors::stage_handler!(Echo => Ping);

fn spec(stage: &str) -> MailboxSpec {
    MailboxSpec {
        stage: stage.into(),
        resource: String::new(),
        capacity: 1024,
        when_full: WhenFull::Shed { wait: Duration::from_secs(1) },
    }
}

/// p50 and p99 of `samples`, in µs.
fn quantiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1].as_secs_f64() * 1e6;
    (at(0.50), at(0.99))
}

fn row(name: &str, samples: Vec<Duration>, baseline_p99: Option<f64>) -> f64 {
    let n = samples.len();
    let total: Duration = samples.iter().sum();
    let (p50, p99) = quantiles(samples);
    let ratio = baseline_p99.map(|b| format!("   p99 {:>5.1}x the stage hop", p99 / b)).unwrap_or_default();
    println!("{name:<40} {:>9.0} req/s   p50 {p50:>6.1} µs   p99 {p99:>6.1} µs{ratio}", n as f64 / total.as_secs_f64());
    p99
}

pub async fn run(duration: Duration) {
    println!("-- APF: classification and dispatch per request, in process, one caller at a time");
    let arbiter = StageArbiter::new("front");
    let directory = ActorDirectory::default();
    let echo = actors::start(&arbiter, &directory, &spec("echo"), Echo).handle();
    let config = SharedConfig::default();
    let apf =
        actors::start(&arbiter, &directory, &spec("flowcontrol"), FlowControlActor::new(600, config.clone(), None))
            .handle();
    // Let the stage build its levels from the bootstrap configuration.
    actix_web::rt::time::sleep(Duration::from_millis(100)).await;

    let user = UserInfo { name: "alice".into(), groups: vec!["system:authenticated".into()], ..Default::default() };
    let info = parse_request_info("GET", "/api/v1/namespaces/default/configmaps/c", false);
    let timed = |deadline: Instant| deadline > Instant::now();

    let mut hop = Vec::new();
    let until = Instant::now() + duration;
    while timed(until) {
        let t = Instant::now();
        echo.ask(Ping, Deadline::after(Duration::from_secs(1))).await.expect("echo");
        hop.push(t.elapsed());
    }
    let hop_p99 = row("stage hop (echo stage, baseline)", hop, None);

    let mut classify = Vec::new();
    let until = Instant::now() + duration;
    while timed(until) {
        let t = Instant::now();
        std::hint::black_box(config.classify(&user, &info));
        classify.push(t.elapsed());
    }
    row("classify (bootstrap FlowSchemas)", classify, None);

    // The fair-queuing data structure alone: a request queued, dispatched and finished in
    // global-default's queue set (49 seats, 128 queues, hand size 6).
    let mut queues = QueueSet::new(
        Instant::now(),
        QueueSetConfig {
            queuing: Queuing::Queue { queues: 128, hand_size: 6, queue_length_limit: 50 },
            concurrency_limit: 49,
        },
    )
    .expect("a valid queue set");
    let mut fair = Vec::new();
    let until = Instant::now() + duration;
    let mut flow = 0u64;
    while timed(until) {
        flow = flow.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let t = Instant::now();
        let now = Instant::now();
        let request =
            NewRequest { work: WorkEstimate::seats(1), flow_hash: flow, deadline: now + Duration::from_secs(15) };
        match queues.enqueue(now, request).outcome {
            Outcome::Dispatched(id) => {
                std::hint::black_box(queues.finish(now, id));
            }
            _ => panic!("an idle level dispatches at once"),
        }
        fair.push(t.elapsed());
    }
    row("queue set: enqueue, dispatch, finish", fair, None);

    let mut dispatch = Vec::new();
    let until = Instant::now() + duration;
    let mut level = String::new();
    while timed(until) {
        let t = Instant::now();
        let classification = config.classify(&user, &info);
        level.clone_from(&classification.priority_level);
        let start =
            StartRequest { user: user.clone(), request: info.clone(), classification, work: RequestWork::default() };
        let grant = apf.ask(start, Deadline::after(Duration::from_secs(1))).await.expect("a seat");
        drop(grant);
        dispatch.push(t.elapsed());
    }
    row(&format!("classify + seat + release ({level})"), dispatch, Some(hop_p99));
}
