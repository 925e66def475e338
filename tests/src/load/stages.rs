//! One stage at rising offered rates: where it stops keeping up, and where its mailbox starts
//! to fill.
//!
//! The load is open loop: messages leave at the offered rate whether or not earlier ones were
//! answered (a closed loop would slow down with the stage and hide its collapse). Each step
//! sends for a fixed time at one rate, waits for the last answers, and lets the stage drain
//! before the next. Rates double from 500 msgs/s; after the first step that collapses, up to
//! three steps halfway between the last good rate and the lowest collapsed one narrow the
//! capacity down.
//!
//! A step has collapsed when the stage answered less than 90% of the offered rate, when its p99
//! passed ten times the low-rate p99 (the lower of the first two steps') while messages queued
//! in it (mean depth above a few), or when its depth kept growing through the step. A step
//! over the line on its p99 alone is run again and the repeat counts: on a shared machine one
//! step's tail can come from the scheduler alone, and a p99 of a few milliseconds with an empty
//! mailbox is the scheduler's, not the stage's. The stage's **capacity** is the achieved rate of its best step that did not collapse.
//! Achieved counts successful answers over the time from the step's start to the last of them,
//! so a backlog drained after the sending stopped lowers it. Depth is queued + in progress,
//! sampled every 100 ms from the stage's own meters (in another process, from its
//! `/stages/actors`). When the generator itself cannot send at the offered rate (one thread
//! spawns every message), the run stops there and says so: the capacity is then at least what
//! was achieved.

use std::cell::{Cell, RefCell};
use std::fmt::Write;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::Quantiles;
use super::targets::{DepthProbe, MESSAGE_DEADLINE, Outcome, StageTarget};

/// How often depth is sampled.
pub const DEPTH_EVERY: Duration = Duration::from_millis(100);
/// Mean depth above which a step counts as filling the mailbox ("a few messages").
pub const FILLING_DEPTH: f64 = 5.0;
/// The first offered rate.
pub const FIRST_RATE: f64 = 500.0;

/// How a run steps.
#[derive(Clone, Debug)]
pub struct StepPlan {
    /// How long each step sends.
    pub step: Duration,
    /// The highest rate tried.
    pub max_rate: f64,
}

impl StepPlan {
    /// Steps of `step`, up to 256,000 msgs/s.
    pub fn new(step: Duration) -> Self {
        StepPlan { step, max_rate: 256_000.0 }
    }
}

/// Messages that did not succeed, by why.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Errors {
    /// Refused for a full mailbox (429).
    pub saturated: u64,
    /// Their deadline passed (504).
    pub deadline: u64,
    /// Anything else.
    pub other: u64,
    /// The first other error's message.
    pub other_example: Option<String>,
}

/// One step's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Offered rate, msgs/s.
    pub offered: f64,
    /// The rate the generator managed to send at.
    pub sent_per_sec: f64,
    /// Successful answers per second (see the module doc).
    pub achieved_per_sec: f64,
    /// Messages sent.
    pub sent: u64,
    /// Successful answers.
    pub ok: u64,
    /// Latency of the successful answers, from the call to its answer.
    pub latency: Quantiles,
    /// What failed.
    pub errors: Errors,
    /// Mean depth over the sending time.
    pub depth_mean: f64,
    /// Highest depth sampled.
    pub depth_max: u64,
    /// `(seconds since the step's start, depth)` every 100 ms, drain included.
    pub depth_samples: Vec<(f64, u64)>,
    /// Why the step counts as collapsed (empty: it kept up).
    pub collapsed: Vec<String>,
    /// The generator sent less than 90% of the offered rate.
    pub generator_bound: bool,
    /// Seconds from the step's start to its last answer.
    pub seconds: f64,
    /// CPU time the processes the messages cost used over them (see
    /// [`StageTarget::processes`]).
    pub cpu_seconds: f64,
    /// CPU time per successful message, in µs, once what the processes spend idle is taken
    /// out: the stage's work, the generator's sending and, over the wire, both ends of it.
    pub cpu_us_per_msg: f64,
    /// Only its p99 was over the line, so the step was run again: the next step is the one
    /// that counts.
    pub repeated: bool,
}

/// A stage's run.
#[derive(Clone, Debug, Serialize)]
pub struct StageRun {
    /// Its key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// What it ran on and was sent.
    pub detail: String,
    /// Seconds each step sent for.
    pub step_seconds: f64,
    /// CPU seconds a second its processes spent with nothing sent.
    pub idle_cpu_cores: f64,
    /// The lower p99 of the first two steps (500 and 1,000 msgs/s), which later ones are
    /// compared with.
    pub low_rate_p99_ms: f64,
    /// In the order run.
    pub steps: Vec<Step>,
    /// The achieved rate of the best step that did not collapse.
    pub capacity_per_sec: Option<f64>,
    /// The first offered rate whose mean depth passed [`FILLING_DEPTH`].
    pub fills_from: Option<f64>,
    /// The run stopped because the generator could not send faster.
    pub generator_bound: bool,
}

/// What the answers of one step came to.
#[derive(Default)]
struct Tally {
    done: u64,
    ok: Vec<Duration>,
    last_ok: Option<Instant>,
    errors: Errors,
}

impl Tally {
    fn record(&mut self, outcome: Outcome, took: Duration) {
        self.done += 1;
        match outcome {
            Outcome::Ok => {
                self.ok.push(took);
                self.last_ok = Some(Instant::now());
            }
            Outcome::Saturated => self.errors.saturated += 1,
            Outcome::Deadline => self.errors.deadline += 1,
            Outcome::Other(why) => {
                self.errors.other += 1;
                self.errors.other_example.get_or_insert(why);
            }
        }
    }
}

/// Samples `probe` every [`DEPTH_EVERY`] until `stop`.
async fn sample_depth(probe: DepthProbe, started: Instant, stop: Rc<Cell<bool>>) -> Vec<(f64, u64)> {
    let mut samples = Vec::new();
    while !stop.get() {
        if let Some(depth) = probe.read().await {
            samples.push((started.elapsed().as_secs_f64(), depth));
        }
        actix_web::rt::time::sleep(DEPTH_EVERY).await;
    }
    samples
}

/// Sends to `target` at `rate` for `length`, numbering messages from `*next`.
async fn step(target: &StageTarget, rate: f64, length: Duration, next: &mut u64) -> Step {
    let tally = Rc::new(RefCell::new(Tally::default()));
    let stop = Rc::new(Cell::new(false));
    let cpu = || target.processes.iter().map(|p| super::cpu_time(*p)).sum::<Duration>();
    let cpu_before = cpu();
    let started = Instant::now();
    let sampler = actix_web::rt::spawn(sample_depth(target.depth.clone(), started, stop.clone()));
    let mut ticker = actix_web::rt::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut sent = 0u64;
    loop {
        ticker.tick().await;
        let elapsed = started.elapsed().min(length);
        let due = (elapsed.as_secs_f64() * rate) as u64;
        while sent < due {
            let call = target.send(*next);
            let tally = tally.clone();
            actix_web::rt::spawn(async move {
                let at = Instant::now();
                let outcome = call.await;
                tally.borrow_mut().record(outcome, at.elapsed());
            });
            *next += 1;
            sent += 1;
        }
        if elapsed >= length {
            break;
        }
    }
    let sending = started.elapsed();
    let give_up = Instant::now() + MESSAGE_DEADLINE + Duration::from_secs(3);
    while tally.borrow().done < sent && Instant::now() < give_up {
        actix_web::rt::time::sleep(Duration::from_millis(10)).await;
    }
    // Let the depth samples show the drain.
    actix_web::rt::time::sleep(DEPTH_EVERY * 2).await;
    stop.set(true);
    let depth_samples = sampler.await.unwrap_or_default();
    let cpu_used = cpu().saturating_sub(cpu_before);
    let mut tally = tally.take();
    let ok = tally.ok.len() as u64;
    let answered_over = tally.last_ok.map_or(sending, |t| t.duration_since(started).max(sending));
    let in_window: Vec<u64> =
        depth_samples.iter().filter(|(t, _)| *t <= sending.as_secs_f64()).map(|(_, d)| *d).collect();
    let depth_mean =
        if in_window.is_empty() { 0.0 } else { in_window.iter().sum::<u64>() as f64 / in_window.len() as f64 };
    let sent_per_sec = sent as f64 / sending.as_secs_f64();
    Step {
        offered: rate,
        sent_per_sec,
        achieved_per_sec: ok as f64 / answered_over.as_secs_f64(),
        sent,
        ok,
        latency: Quantiles::of(&mut tally.ok),
        errors: tally.errors,
        depth_mean,
        depth_max: in_window.iter().copied().max().unwrap_or(0),
        depth_samples,
        collapsed: Vec::new(),
        generator_bound: sent_per_sec < 0.9 * rate,
        seconds: started.elapsed().as_secs_f64(),
        cpu_seconds: cpu_used.as_secs_f64(),
        cpu_us_per_msg: 0.0,
        repeated: false,
    }
}

/// Whether depth rose through the step: a least-squares slope of more than 1% of the offered
/// rate (the stage falling that far behind) ending above a few messages. A queue that only
/// wobbles, or fills once and holds, is not growing.
fn kept_growing(samples: &[(f64, u64)], offered: f64) -> bool {
    if samples.len() < 5 {
        return false;
    }
    let n = samples.len() as f64;
    let (mt, md) = samples.iter().fold((0.0, 0.0), |(t, d), (ti, di)| (t + ti / n, d + *di as f64 / n));
    let (cov, var) = samples
        .iter()
        .fold((0.0, 0.0), |(c, v), (ti, di)| (c + (ti - mt) * (*di as f64 - md), v + (ti - mt) * (ti - mt)));
    let slope = if var > 0.0 { cov / var } else { 0.0 };
    let tail = &samples[samples.len() - samples.len() / 3..];
    let tail_mean = tail.iter().map(|(_, d)| *d as f64).sum::<f64>() / tail.len() as f64;
    slope > 0.01 * offered && tail_mean > FILLING_DEPTH * 4.0
}

/// Why `step` counts as collapsed against the low-rate p99.
fn judge(step: &mut Step, low_rate_p99_ms: f64, length: Duration) {
    let mut why = Vec::new();
    if step.achieved_per_sec < 0.9 * step.offered {
        why.push(format!("achieved {:.0}% of offered", 100.0 * step.achieved_per_sec / step.offered));
    }
    // A tail with an empty mailbox waited somewhere else (the scheduler, the generator).
    if low_rate_p99_ms > 0.0 && step.latency.p99_ms > 10.0 * low_rate_p99_ms && step.depth_mean > FILLING_DEPTH {
        why.push(format!("{P99_RULE} {:.0}x the low-rate p99", step.latency.p99_ms / low_rate_p99_ms));
    }
    let in_window: Vec<(f64, u64)> =
        step.depth_samples.iter().copied().filter(|(t, _)| *t <= length.as_secs_f64()).collect();
    if kept_growing(&in_window, step.offered) {
        why.push("depth kept growing".into());
    }
    step.collapsed = why;
}

/// How the p99 rule's reason starts.
const P99_RULE: &str = "p99";

/// Whether the p99 rule alone judged `step` collapsed: on a shared machine one step's tail can
/// come from the scheduler alone, so such a step is run again before it counts.
fn only_p99(step: &Step) -> bool {
    step.collapsed.len() == 1 && step.collapsed[0].starts_with(P99_RULE)
}

/// Waits until the stage holds nothing (at most the message deadline).
async fn drain(probe: &DepthProbe) {
    let until = Instant::now() + MESSAGE_DEADLINE;
    while Instant::now() < until && probe.read().await.unwrap_or(0) > 0 {
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The table's head.
pub fn header(name: &str, detail: &str, step: Duration) -> String {
    format!(
        "== {} ({}), {:.1} s per step\n  {:>9} {:>9} {:>10} {:>8} {:>8} {:>6} {:>8} {:>6} {:>10} {:>9} {:>10}  verdict\n",
        name,
        detail,
        step.as_secs_f64(),
        "offered/s",
        "sent/s",
        "achieved/s",
        "p50 ms",
        "p99 ms",
        "429",
        "deadline",
        "other",
        "depth mean",
        "depth max",
        "CPU µs/msg"
    )
}

/// One line of the table.
pub fn row(step: &Step) -> String {
    let verdict = match (step.collapsed.is_empty(), step.generator_bound) {
        (_, true) => "generator-bound".to_string(),
        (false, false) if step.repeated => format!("{}: run again", step.collapsed.join(", ")),
        (true, false) => "ok".to_string(),
        (false, false) => format!("collapsed: {}", step.collapsed.join(", ")),
    };
    format!(
        "  {:>9.0} {:>9.0} {:>10.0} {:>8.3} {:>8.3} {:>6} {:>8} {:>6} {:>10.1} {:>9} {:>10.1}  {verdict}\n",
        step.offered,
        step.sent_per_sec,
        step.achieved_per_sec,
        step.latency.p50_ms,
        step.latency.p99_ms,
        step.errors.saturated,
        step.errors.deadline,
        step.errors.other,
        step.depth_mean,
        step.depth_max,
        step.cpu_us_per_msg
    )
}

impl Step {
    /// Sets the CPU per message, `idle_cores` (CPU seconds a second spent with nothing sent)
    /// taken out.
    fn charge(&mut self, idle_cores: f64) {
        let busy = (self.cpu_seconds - idle_cores * self.seconds).max(0.0);
        self.cpu_us_per_msg = busy * 1e6 / self.ok.max(1) as f64;
    }
}

impl StageRun {
    /// The run's table, as [`run`] printed it.
    pub fn table(&self) -> String {
        let mut out = header(&self.name, &self.detail, Duration::from_secs_f64(self.step_seconds));
        for s in &self.steps {
            out.push_str(&row(s));
        }
        out
    }

    /// `capacity ~N msgs/s, mailbox fills from M msgs/s`.
    pub fn capacity_phrase(&self) -> String {
        let capacity = match (self.capacity_per_sec, self.generator_bound) {
            (Some(c), true) => format!("capacity above ~{} msgs/s (the generator's limit)", round(c)),
            (Some(c), false) => format!("capacity ~{} msgs/s", round(c)),
            (None, _) => "no step kept up".to_string(),
        };
        let cpu =
            self.capacity_step().map(|s| format!(" ({:.0} µs CPU/msg there)", s.cpu_us_per_msg)).unwrap_or_default();
        let fills = match self.fills_from {
            Some(r) => format!("mailbox fills from {} msgs/s", round(r)),
            None => format!("mailbox never filled (mean depth ≤ {FILLING_DEPTH} in every step)"),
        };
        format!("{capacity}{cpu}, {fills}")
    }

    /// The step whose achieved rate is the capacity.
    pub fn capacity_step(&self) -> Option<&Step> {
        let capacity = self.capacity_per_sec?;
        self.steps.iter().find(|s| !s.repeated && s.achieved_per_sec == capacity)
    }

    /// The step that counts at `offered` (not one that was run again).
    fn at(&self, offered: f64) -> Option<&Step> {
        self.steps.iter().find(|s| !s.repeated && s.offered == offered)
    }
}

/// `n` to two significant figures, with thousands separated.
pub fn round(n: f64) -> String {
    let digits = (n.abs().max(1.0).log10().floor() as i32 - 1).max(0);
    let scale = 10f64.powi(digits);
    let rounded = ((n / scale).round() * scale) as u64;
    let text = rounded.to_string();
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i > 0 && (text.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How many steps narrow the capacity down between the last good rate and the first collapse.
const NARROWING: usize = 3;

/// Runs a step at `rate`, judged; a step over the line on its p99 alone is kept as `repeated`
/// and run again.
async fn judged_step(target: &StageTarget, rate: f64, run: &mut StageRun, idle_cores: f64, next: &mut u64) -> Step {
    let length = Duration::from_secs_f64(run.step_seconds);
    loop {
        let mut s = step(target, rate, length, next).await;
        s.charge(idle_cores);
        if rate <= 2.0 * FIRST_RATE {
            let p99 = s.latency.p99_ms;
            run.low_rate_p99_ms = if run.steps.is_empty() { p99 } else { run.low_rate_p99_ms.min(p99) };
        }
        judge(&mut s, run.low_rate_p99_ms, length);
        let again = only_p99(&s) && !run.steps.last().is_some_and(|last| last.repeated && last.offered == rate);
        drain(&target.depth).await;
        if !again {
            return s;
        }
        s.repeated = true;
        print!("{}", row(&s));
        run.steps.push(s);
    }
}

/// Steps `target` up until it collapses, printing each step as it ends.
pub async fn run(target: &StageTarget, plan: &StepPlan) -> StageRun {
    print!("{}", header(&target.name, &target.detail, plan.step));
    let mut next = 0u64;
    // The first messages pay for what is built on first use; they are not measured.
    step(target, FIRST_RATE, Duration::from_millis(500), &mut next).await;
    drain(&target.depth).await;
    // What the processes spend with nothing sent (the generator's clock, the depth samples,
    // the stages' own timers) is taken out of each step's CPU per message.
    let idle = step(target, 0.0, Duration::from_secs(1), &mut next).await;
    let idle_cores = idle.cpu_seconds / idle.seconds;

    let mut run = StageRun {
        key: target.key.clone(),
        name: target.name.clone(),
        detail: target.detail.clone(),
        step_seconds: plan.step.as_secs_f64(),
        idle_cpu_cores: idle_cores,
        low_rate_p99_ms: 0.0,
        steps: Vec::new(),
        capacity_per_sec: None,
        fills_from: None,
        generator_bound: false,
    };
    let mut rate = FIRST_RATE;
    let (mut good, mut collapsed): (Option<f64>, Option<f64>) = (None, None);
    let mut narrowed = 0;
    loop {
        let s = judged_step(target, rate, &mut run, idle_cores, &mut next).await;
        print!("{}", row(&s));
        let kept_up = s.collapsed.is_empty();
        let generator_bound = s.generator_bound;
        run.steps.push(s);
        if generator_bound {
            run.generator_bound = true;
            break;
        }
        match kept_up {
            true => good = Some(rate),
            false => collapsed = Some(rate),
        }
        rate = match (good, collapsed) {
            (_, None) if rate * 2.0 <= plan.max_rate => rate * 2.0,
            (Some(g), Some(c)) if narrowed < NARROWING && c > g * 1.1 => {
                narrowed += 1;
                (g + c) / 2.0
            }
            _ => break,
        };
    }
    let counted = || run.steps.iter().filter(|s| !s.repeated);
    run.capacity_per_sec = counted()
        .filter(|s| s.collapsed.is_empty() && !s.generator_bound)
        .map(|s| s.achieved_per_sec)
        .max_by(f64::total_cmp);
    run.fills_from = counted().filter(|s| s.depth_mean > FILLING_DEPTH).map(|s| s.offered).min_by(f64::total_cmp);
    run
}

/// One line per run, and the over-the-wire cost against the same backend in process.
pub fn summary(runs: &[StageRun]) -> String {
    let mut out = String::new();
    for r in runs {
        let _ = writeln!(out, "{}: {}", r.name, r.capacity_phrase());
    }
    let run = |key: &str| runs.iter().find(|r| r.key == key);
    let Some(wire) = run("storage-wire") else { return out };
    for (local, what) in
        [(run("storage-etcd"), "in process, same etcd"), (run("storage"), "in process, in-memory store")]
    {
        let Some(local) = local else { continue };
        if let (Some(w), Some(l)) = (wire.capacity_per_sec, local.capacity_per_sec) {
            let _ = write!(
                out,
                "storage over the wire / {what}: {:.0}% of the capacity ({} vs {} msgs/s)",
                100.0 * w / l,
                round(w),
                round(l)
            );
        }
        // CPU per message at the highest rate both kept up with.
        let both = wire
            .steps
            .iter()
            .filter(|s| !s.repeated && s.collapsed.is_empty())
            .filter_map(|s| Some((s, local.at(s.offered).filter(|l| l.collapsed.is_empty())?)))
            .max_by(|a, b| a.0.offered.total_cmp(&b.0.offered));
        if let Some((w, l)) = both {
            let _ = write!(
                out,
                "; at {} msgs/s {:.0} vs {:.0} µs CPU/msg, p99 {:.1} vs {:.1} ms",
                round(w.offered),
                w.cpu_us_per_msg,
                l.cpu_us_per_msg,
                w.latency.p99_ms,
                l.latency.p99_ms
            );
        }
        out.push('\n');
    }
    out
}

/// Runs the stages `keys` one after the other (each started, stepped, stopped), prints the
/// summary, and writes `stages.json` and `stages.svg` into `out`.
pub async fn run_all(keys: &[&str], plan: &StepPlan, out: &Path) -> Result<Vec<StageRun>, String> {
    let mut runs = Vec::new();
    for key in keys {
        let target = super::targets::start(key).await?;
        runs.push(run(&target, plan).await);
        drop(target);
    }
    let summary = summary(&runs);
    println!("== capacities (open loop, {:.1} s per step)\n{summary}", plan.step.as_secs_f64());
    let report = StagesReport {
        step_seconds: plan.step.as_secs_f64(),
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        summary: summary.lines().map(String::from).collect(),
        runs: runs.clone(),
    };
    super::write_json(&out.join("stages.json"), &report).map_err(|e| format!("stages.json: {e}"))?;
    // By offered rate (the narrowing step runs last), without steps that were run again.
    let by_rate = |r: &StageRun, y: fn(&Step) -> f64| -> super::plot::Series {
        let mut points: Vec<(f64, f64)> = r.steps.iter().filter(|s| !s.repeated).map(|s| (s.offered, y(s))).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        (r.name.clone(), points)
    };
    let p99: Vec<_> = runs.iter().map(|r| by_rate(r, |s| s.latency.p99_ms.max(0.001))).collect();
    let depth: Vec<_> = runs.iter().map(|r| by_rate(r, |s| s.depth_mean)).collect();
    super::plot::stages(&out.join("stages.svg"), &p99, &depth)?;
    println!("== wrote {} and {}", out.join("stages.json").display(), out.join("stages.svg").display());
    Ok(runs)
}

/// What `stages.json` holds.
#[derive(Serialize)]
struct StagesReport {
    step_seconds: f64,
    /// Cores this machine offers (the generator shares them with the stages).
    cores: usize,
    summary: Vec<String>,
    runs: Vec<StageRun>,
}
