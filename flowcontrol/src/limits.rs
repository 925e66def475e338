//! How the server's seats are split among priority levels, and how levels borrow.
//!
//! kube 1.30 (KEP-1040 with borrowing, `apf_controller.go`) works in two steps:
//!
//! 1. **Nominal split**, on every configuration change. The server concurrency limit (SCL) is
//!    `--max-requests-inflight + --max-mutating-requests-inflight`. Each level `l` gets
//!    `NominalCL(l) = ceil(SCL * NCS(l) / ΣNCS)`, the sum running over *every* level, `exempt`
//!    included (its `nominalConcurrencyShares` defaults to 0, so by default it takes none);
//!    the ceiling means the nominal limits may add up to a little more than SCL.
//!    `LendableCL = round(NominalCL * lendablePercent / 100)` and
//!    `BorrowingCL = round(NominalCL * borrowingLimitPercent / 100)`, or SCL when
//!    `borrowingLimitPercent` is absent (no limit). A level's current limit then stays within
//!    `[NominalCL - LendableCL, NominalCL + BorrowingCL]`; a new level starts at
//!    `NominalCL - LendableCL / 2`.
//! 2. **Borrowing**, every [`BORROWING_ADJUSTMENT_PERIOD`]. Each level's seat demand (seats in
//!    use plus seats asked for by waiting requests) is integrated over the period
//!    ([`SeatDemandIntegrator`]); from it come the high watermark, the average, the standard
//!    deviation and a smoothed envelope ([`SeatDemandStats`]). Then every level's current
//!    limit is set by one fair allocation ([`compute_concurrency_allocation`]): the limits
//!    sum to ΣNominalCL, each stays between a lower bound (what it used, but never below
//!    `NominalCL - LendableCL` nor above `NominalCL`) and `NominalCL + BorrowingCL`, and
//!    otherwise each gets the same multiple of its smoothed demand.
//!
//! Everything here is a pure function of its inputs (instants are passed in), so the caller
//! owns the timer and the numbers are reproducible in tests.

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

/// How often kube rebalances the current limits among levels.
pub const BORROWING_ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// The decay of the smoothed seat demand per adjustment period: a half-life of about five
/// minutes at one adjustment every 10 s (kube's `seatDemandSmoothingCoefficient`).
pub const SEAT_DEMAND_SMOOTHING_COEFFICIENT: f64 = 0.977;

/// A target below this counts as this, so that relative bounds never divide by zero
/// (kube's `MinTarget`).
pub const MIN_TARGET: f64 = 0.001;

/// Slack for floating-point sums in [`compute_concurrency_allocation`] (kube's `epsilon`).
const EPSILON: f64 = 0.000_000_1;

/// The server concurrency limit: kube adds the two inflight flags (defaults 400 and 200, so
/// 600 seats) and APF divides the sum among all levels, read-only or not.
pub fn server_concurrency_limit(max_requests_inflight: u32, max_mutating_requests_inflight: u32) -> u32 {
    max_requests_inflight.saturating_add(max_mutating_requests_inflight)
}

/// The three numbers of a PriorityLevelConfiguration that decide its seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelShares {
    /// `nominalConcurrencyShares`: this level's weight in the nominal split.
    pub nominal_concurrency_shares: u32,
    /// `lendablePercent`: the part of the nominal limit other levels may borrow; absent is 0.
    pub lendable_percent: Option<u32>,
    /// `borrowingLimitPercent`: how much above its nominal limit the level may go, in percent
    /// of the nominal limit; absent means no limit (kube uses SCL). Always absent for `exempt`.
    pub borrowing_limit_percent: Option<u32>,
}

impl LevelShares {
    /// Reads the shares from a `flowcontrol.apiserver.k8s.io/v1` PriorityLevelConfiguration
    /// spec, with v1's defaults for what is missing (kube's `plSpecCommons` after defaulting):
    /// a `Limited` level's shares default to 30, an `Exempt` level's to 0, and an exempt level
    /// has no borrowing limit field at all.
    pub fn from_spec(spec: &Value) -> Self {
        let int = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).map(|n| n.min(u32::MAX as u64) as u32);
        if spec.get("type").and_then(Value::as_str) == Some("Exempt") {
            let exempt = spec.get("exempt").unwrap_or(&Value::Null);
            return Self {
                nominal_concurrency_shares: int(exempt, "nominalConcurrencyShares").unwrap_or(0),
                lendable_percent: int(exempt, "lendablePercent"),
                borrowing_limit_percent: None,
            };
        }
        let limited = spec.get("limited").unwrap_or(&Value::Null);
        Self {
            nominal_concurrency_shares: int(limited, "nominalConcurrencyShares").unwrap_or(30),
            lendable_percent: int(limited, "lendablePercent"),
            borrowing_limit_percent: int(limited, "borrowingLimitPercent"),
        }
    }
}

/// One level's configured limits, in seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConcurrencyLimits {
    /// NominalCL: the level's share of the server limit.
    pub nominal: u32,
    /// LendableCL: how many of the nominal seats other levels may borrow.
    pub lendable: u32,
    /// BorrowingCL: how many seats above nominal the level may borrow.
    pub borrowing: u32,
}

impl ConcurrencyLimits {
    /// The floor of the current limit, `NominalCL - LendableCL` (kube's `minCL`).
    pub fn min(&self) -> u32 {
        self.nominal.saturating_sub(self.lendable)
    }

    /// The ceiling of the current limit, `NominalCL + BorrowingCL` (kube's `maxCL`).
    pub fn max(&self) -> u32 {
        self.nominal.saturating_add(self.borrowing)
    }

    /// Where a new level's current limit starts before the first adjustment: lending half of
    /// what it may lend (`NominalCL - LendableCL / 2`, integer division as in kube).
    pub fn initial_current(&self) -> u32 {
        self.nominal.saturating_sub(self.lendable / 2)
    }
}

/// kube's nominal split of `server_limit` among `levels` (all of them, exempt included), in
/// the order given. An all-zero configuration (impossible with the mandatory `catch-all` at 5
/// shares) gives every level 0 instead of dividing by zero.
pub fn nominal_limits(server_limit: u32, levels: &[LevelShares]) -> Vec<ConcurrencyLimits> {
    let share_sum: f64 = levels.iter().map(|l| f64::from(l.nominal_concurrency_shares)).sum();
    let scl = f64::from(server_limit);
    levels
        .iter()
        .map(|l| {
            let nominal = if share_sum > 0.0 {
                (scl * f64::from(l.nominal_concurrency_shares) / share_sum).ceil() as u32
            } else {
                0
            };
            let percent_of = |p: u32| (f64::from(nominal) * f64::from(p) / 100.0).round() as u32;
            ConcurrencyLimits {
                nominal,
                lendable: l.lendable_percent.map_or(0, percent_of),
                borrowing: l.borrowing_limit_percent.map_or(server_limit, percent_of),
            }
        })
        .collect()
}

/// What a [`SeatDemandIntegrator`] saw over one period (kube's `IntegratorResults`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntegratorResults {
    /// The length of the period, in seconds.
    pub duration: f64,
    /// The time-weighted mean (NaN over an empty period, as kube).
    pub average: f64,
    /// The time-weighted standard deviation (NaN over an empty period, 0 when rounding makes
    /// the variance negative).
    pub deviation: f64,
    /// The smallest value seen (the value at the last reset counts).
    pub min: f64,
    /// The largest value seen.
    pub max: f64,
}

/// Integrates a piecewise-constant quantity over time (kube's `fairqueuing.Integrator`): the
/// seat demand of a level between two borrowing adjustments. Instants are passed in; an
/// instant earlier than the last one counts as no time passing.
#[derive(Clone, Debug)]
pub struct SeatDemandIntegrator {
    /// When `x` last changed or the integrals were last brought up to date.
    last: Instant,
    /// The current value.
    x: f64,
    /// The integrals of x^0, x^1 and x^2 over time since the last reset.
    integrals: [f64; 3],
    /// The extremes since the last reset; both start at 0 as kube's zero-valued fields do.
    min: f64,
    max: f64,
}

impl SeatDemandIntegrator {
    /// An integrator at 0 from `now`.
    pub fn new(now: Instant) -> Self {
        Self { last: now, x: 0.0, integrals: [0.0; 3], min: 0.0, max: 0.0 }
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        self.x
    }

    /// The quantity becomes `x` at `now`.
    pub fn set(&mut self, now: Instant, x: f64) {
        self.update(now);
        self.x = x;
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The period's results up to `now`, then a new period starts (min and max restart from
    /// the current value).
    pub fn reset(&mut self, now: Instant) -> IntegratorResults {
        let results = self.results(now);
        self.integrals = [0.0; 3];
        self.min = self.x;
        self.max = self.x;
        results
    }

    /// The results so far, without starting a new period.
    pub fn results(&mut self, now: Instant) -> IntegratorResults {
        self.update(now);
        let [t, ix, ixx] = self.integrals;
        if t <= 0.0 {
            return IntegratorResults {
                duration: t,
                average: f64::NAN,
                deviation: f64::NAN,
                min: self.min,
                max: self.max,
            };
        }
        let average = ix / t;
        let variance = ixx / t - average * average;
        IntegratorResults {
            duration: t,
            average,
            deviation: if variance > 0.0 { variance.sqrt() } else { 0.0 },
            min: self.min,
            max: self.max,
        }
    }

    fn update(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.integrals[0] += dt;
        self.integrals[1] += dt * self.x;
        self.integrals[2] += dt * self.x * self.x;
    }
}

/// A level's seat demand as the borrowing adjustment sees it (kube's `seatDemandStats`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SeatDemandStats {
    /// The mean demand over the last period.
    pub avg: f64,
    /// Its standard deviation.
    pub std_dev: f64,
    /// The most seats demanded at once in the last period.
    pub high_watermark: f64,
    /// `max(avg + std_dev, A * smoothed + (1 - A) * (avg + std_dev))`: rises at once, decays
    /// slowly, so a burst keeps its borrowed seats for a while.
    pub smoothed: f64,
}

impl SeatDemandStats {
    /// Folds in one period. An empty period (no time passed) updates only the high watermark,
    /// as kube does.
    pub fn update(&mut self, obs: &IntegratorResults) {
        self.high_watermark = obs.max;
        if obs.duration <= 0.0 {
            return;
        }
        let deviation = if obs.deviation.is_nan() { 0.0 } else { obs.deviation };
        self.avg = obs.average;
        self.std_dev = deviation;
        let envelope = obs.average + deviation;
        let a = SEAT_DEMAND_SMOOTHING_COEFFICIENT;
        self.smoothed = envelope.max(a * self.smoothed + (1.0 - a) * envelope);
    }
}

/// One class in the fair allocation problem (kube's `allocProblemItem`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocProblemItem {
    /// What the class would get if bounds did not matter, up to a common factor.
    pub target: f64,
    /// The least it may get.
    pub lower_bound: f64,
    /// The most it may get.
    pub upper_bound: f64,
}

/// Why no allocation satisfies the bounds; the message says which rule failed, as kube's.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocationError(pub String);

impl fmt::Display for AllocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AllocationError {}

/// kube's `computeConcurrencyAllocation`: the allocations summing to `required_sum`, each within
/// its bounds, and the one `fair_prop` such that every class gets `fair_prop * target` unless a
/// bound holds it (then it gets that bound). Returns `(allocations, fair_prop)`.
///
/// Each item must have `target >= lower_bound >= 0` and `upper_bound >= lower_bound`; targets
/// below [`MIN_TARGET`] count as [`MIN_TARGET`].
pub fn compute_concurrency_allocation(
    required_sum: u32,
    items: &[AllocProblemItem],
) -> Result<(Vec<f64>, f64), AllocationError> {
    let required = f64::from(required_sum);
    let (mut low_sum, mut high_sum, mut target_sum) = (0.0, 0.0, 0.0);
    // Bounds divided by the (floored) target: the proportion at which each bound starts to bite.
    let mut relative = Vec::with_capacity(items.len());
    let (mut lb_min, mut lb_max) = (f64::from(f32::MAX), 0.0f64);
    let mut ub_min = f64::from(f32::MAX);
    let mut ub_max = 0.0f64;
    for (idx, item) in items.iter().enumerate() {
        if item.lower_bound < 0.0 {
            return Err(AllocationError(format!(
                "lower bound {idx} is {} but negative lower bounds are not allowed",
                item.lower_bound
            )));
        }
        if item.target < item.lower_bound {
            return Err(AllocationError(format!(
                "target {idx} is {}, which is below its lower bound of {}",
                item.target, item.lower_bound
            )));
        }
        if item.upper_bound < item.lower_bound {
            return Err(AllocationError(format!(
                "upper bound {idx} is {} but should not be less than the lower bound {}",
                item.upper_bound, item.lower_bound
            )));
        }
        let target = item.target.max(MIN_TARGET);
        low_sum += item.lower_bound;
        high_sum += item.upper_bound;
        target_sum += target;
        let (rel_lb, rel_ub) = (item.lower_bound / target, item.upper_bound / target);
        lb_min = lb_min.min(rel_lb);
        lb_max = lb_max.max(rel_lb);
        ub_min = ub_min.min(rel_ub);
        ub_max = ub_max.max(rel_ub);
        relative.push((target, rel_lb, rel_ub));
    }
    if lb_max > 1.0 {
        return Err(AllocationError(format!(
            "lbRange.max-1={}, which is impossible because lbRange.max can not be greater than 1",
            lb_max - 1.0
        )));
    }
    if low_sum - required > EPSILON {
        return Err(AllocationError(format!(
            "lower bounds sum to {low_sum}, which is higher than the required sum of {required_sum}"
        )));
    }
    if required - high_sum > EPSILON {
        return Err(AllocationError(format!(
            "upper bounds sum to {high_sum}, which is lower than the required sum of {required_sum}"
        )));
    }
    if required_sum == 0 {
        return Ok((vec![0.0; items.len()], 0.0));
    }
    if low_sum - required > -EPSILON {
        // No room to move: everyone at the floor.
        return Ok((items.iter().map(|i| i.lower_bound).collect(), lb_min));
    }
    if required - high_sum > -EPSILON {
        // Everyone at the ceiling.
        return Ok((items.iter().map(|i| i.upper_bound).collect(), ub_max));
    }
    let mut fair_prop = required / target_sum;
    if lb_max <= fair_prop && fair_prop <= ub_min {
        // No bound bites.
        return Ok((relative.iter().map(|&(t, _, _)| t * fair_prop).collect(), fair_prop));
    }
    // Some bounds bite: walk the bounds in ascending relative order, raising fair_prop from the
    // lowest lower bound; between two consecutive bounds the sum grows linearly with slope the
    // sum of the targets of the classes not held by a bound.
    let mut bounds: Vec<(f64, usize, bool)> = Vec::with_capacity(2 * relative.len());
    for (idx, &(_, lb, ub)) in relative.iter().enumerate() {
        bounds.push((lb, idx, true));
        bounds.push((ub, idx, false));
    }
    bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut sum_so_far = low_sum;
    fair_prop = lb_min;
    let (mut sensitive_target_sum, mut delta_sensitive_target_sum) = (0.0, 0.0);
    let (mut sensitive_classes, mut delta_sensitive_classes) = (0i64, 0i64);
    let mut next_idx = 0;
    while sum_so_far < required {
        // Take in every bound equal to the current fair_prop; stop at the next one above it.
        let next_bound = loop {
            sensitive_target_sum += delta_sensitive_target_sum;
            sensitive_classes += delta_sensitive_classes;
            let Some(&(bound, idx, lower)) = bounds.get(next_idx) else {
                return Err(AllocationError(
                    "impossible: ran out of bounds to consider in bound-constrained problem".into(),
                ));
            };
            let target = relative[idx].0;
            (delta_sensitive_classes, delta_sensitive_target_sum) = if lower { (1, target) } else { (-1, -target) };
            next_idx += 1;
            if bound > fair_prop {
                break bound;
            }
        };
        if sensitive_classes == 0 {
            fair_prop = next_bound;
            continue;
        }
        let next_prop = fair_prop + (required - sum_so_far) / sensitive_target_sum;
        if next_prop <= next_bound {
            fair_prop = next_prop;
            break;
        }
        sum_so_far += (next_bound - fair_prop) * sensitive_target_sum;
        fair_prop = next_bound;
    }
    let allocs = items
        .iter()
        .zip(&relative)
        .map(|(item, &(target, _, _))| item.lower_bound.max(item.upper_bound.min(fair_prop * target)))
        .collect();
    Ok((allocs, fair_prop))
}

/// One level as the borrowing adjustment keeps it: its configured limits, its demand history
/// and the limit it runs at now.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelBorrowing {
    /// From the nominal split.
    pub limits: ConcurrencyLimits,
    /// Folded in at every adjustment.
    pub stats: SeatDemandStats,
    /// The limit the level's queue set runs at: hand it to `QueueSet::set_concurrency_limit`
    /// after each adjustment.
    pub current_limit: u32,
}

impl LevelBorrowing {
    /// A level just introduced: no demand history, current limit at
    /// [`ConcurrencyLimits::initial_current`].
    pub fn new(limits: ConcurrencyLimits) -> Self {
        Self { limits, stats: SeatDemandStats::default(), current_limit: limits.initial_current() }
    }
}

/// kube's periodic adjustment (`updateBorrowingLocked`): folds each level's last period of seat
/// demand (`demand[i]` for `levels[i]`, from its integrator's reset) into its statistics, then
/// sets every current limit from one fair allocation of ΣNominalCL. Each level's lower bound is
/// `max(NominalCL - LendableCL, min(NominalCL, high watermark))`, its upper bound
/// `NominalCL + BorrowingCL` and its target `max(lower bound, smoothed demand)`.
///
/// On an impossible allocation (only broken inputs) the current limits stay as they were and
/// the error is returned, as kube logs it and keeps them. Returns the fair proportion.
pub fn adjust_borrowing(levels: &mut [LevelBorrowing], demand: &[IntegratorResults]) -> Result<f64, AllocationError> {
    for (level, obs) in levels.iter_mut().zip(demand) {
        level.stats.update(obs);
    }
    let nominal_sum: u32 = levels.iter().map(|l| l.limits.nominal).sum();
    let items: Vec<AllocProblemItem> = levels
        .iter()
        .map(|l| {
            let lower = f64::from(l.limits.min()).max(f64::from(l.limits.nominal).min(l.stats.high_watermark));
            AllocProblemItem {
                lower_bound: lower,
                upper_bound: f64::from(l.limits.max()),
                target: lower.max(l.stats.smoothed),
            }
        })
        .collect();
    let (allocs, fair_prop) = compute_concurrency_allocation(nominal_sum, &items)?;
    for (level, alloc) in levels.iter_mut().zip(allocs) {
        level.current_limit = alloc.round().max(0.0) as u32;
    }
    Ok(fair_prop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::{mandatory_priority_levels, suggested_priority_levels};

    /// kube 1.30's levels in a fixed order: exempt, catch-all, then the suggested six.
    const NAMES: [&str; 8] = [
        "exempt",
        "catch-all",
        "system",
        "node-high",
        "leader-election",
        "workload-high",
        "workload-low",
        "global-default",
    ];

    fn default_shares() -> Vec<LevelShares> {
        let all: Vec<Value> = mandatory_priority_levels().into_iter().chain(suggested_priority_levels()).collect();
        NAMES
            .iter()
            .map(|name| {
                let pl = all.iter().find(|pl| pl["metadata"]["name"] == *name).expect("bootstrap level");
                LevelShares::from_spec(&pl["spec"])
            })
            .collect()
    }

    fn default_limits() -> Vec<ConcurrencyLimits> {
        nominal_limits(server_concurrency_limit(400, 200), &default_shares())
    }

    #[test]
    fn kubes_default_levels_split_600_seats_as_kube_does() {
        assert_eq!(server_concurrency_limit(400, 200), 600);
        let shares = default_shares();
        assert_eq!(
            shares.iter().map(|s| s.nominal_concurrency_shares).collect::<Vec<_>>(),
            [0, 5, 30, 40, 10, 40, 100, 20]
        );
        let limits = default_limits();
        // ΣNCS = 245: ceil(600 × 5 / 245) = ceil(12.24) = 13, ceil(600 × 30 / 245) = 74, ...
        let nominal: Vec<u32> = limits.iter().map(|l| l.nominal).collect();
        assert_eq!(nominal, [0, 13, 74, 98, 25, 98, 245, 49]);
        assert_eq!(nominal.iter().sum::<u32>(), 602, "the ceilings overshoot 600");
        // round(74 × 33%) = 24, round(98 × 25%) = round(24.5) = 25, round(245 × 90%) =
        // round(220.5) = 221, round(49 × 50%) = 25 (Go rounds halves away from zero, as Rust).
        assert_eq!(limits.iter().map(|l| l.lendable).collect::<Vec<_>>(), [0, 0, 24, 25, 0, 49, 221, 25]);
        // No level sets borrowingLimitPercent: each may borrow up to the server limit.
        assert!(limits.iter().all(|l| l.borrowing == 600));
        assert_eq!(limits.iter().map(|l| l.min()).collect::<Vec<_>>(), [0, 13, 50, 73, 25, 49, 24, 24]);
        assert_eq!(limits.iter().map(|l| l.max()).collect::<Vec<_>>(), [600, 613, 674, 698, 625, 698, 845, 649]);
        assert_eq!(limits.iter().map(|l| l.initial_current()).collect::<Vec<_>>(), [0, 13, 62, 86, 25, 74, 135, 37]);
    }

    #[test]
    fn exempt_shares_count_in_the_sum_and_borrowing_percent_limits_borrowing() {
        let mut shares = default_shares();
        // An operator gives exempt 245 shares: the sum doubles to 490.
        shares[0].nominal_concurrency_shares = 245;
        shares[2].borrowing_limit_percent = Some(50);
        let limits = nominal_limits(600, &shares);
        assert_eq!(limits[0].nominal, 300);
        // ceil(600 × 30 / 490) = ceil(36.73) = 37; borrowing round(37 × 50%) = round(18.5) = 19.
        assert_eq!(limits[2], ConcurrencyLimits { nominal: 37, lendable: 12, borrowing: 19 });
        assert_eq!(limits[0].borrowing, 600, "exempt has no borrowing limit field");
        assert_eq!(
            nominal_limits(
                600,
                &[LevelShares { nominal_concurrency_shares: 0, lendable_percent: None, borrowing_limit_percent: None }]
            ),
            [ConcurrencyLimits { nominal: 0, lendable: 0, borrowing: 600 }]
        );
    }

    #[test]
    fn shares_are_read_from_specs_with_v1_defaults() {
        let limited = json_spec(r#"{"type":"Limited","limited":{"limitResponse":{"type":"Reject"}}}"#);
        assert_eq!(
            LevelShares::from_spec(&limited),
            LevelShares { nominal_concurrency_shares: 30, lendable_percent: None, borrowing_limit_percent: None }
        );
        let tuned = json_spec(
            r#"{"type":"Limited","limited":{"nominalConcurrencyShares":0,"lendablePercent":10,"borrowingLimitPercent":0}}"#,
        );
        assert_eq!(
            LevelShares::from_spec(&tuned),
            LevelShares { nominal_concurrency_shares: 0, lendable_percent: Some(10), borrowing_limit_percent: Some(0) }
        );
        let exempt = json_spec(r#"{"type":"Exempt"}"#);
        assert_eq!(
            LevelShares::from_spec(&exempt),
            LevelShares { nominal_concurrency_shares: 0, lendable_percent: None, borrowing_limit_percent: None }
        );
    }

    fn json_spec(s: &str) -> Value {
        serde_json::from_str(s).expect("json")
    }

    #[test]
    fn an_idle_cluster_shares_seats_in_proportion_to_the_floors() {
        // kube's first adjustment right after digesting the defaults: fresh integrators, so
        // every target is the level's floor (exempt's 0 counts as 0.001) and no bound bites:
        // fair_prop = 602 / 258.001.
        let mut levels: Vec<LevelBorrowing> = default_limits().into_iter().map(LevelBorrowing::new).collect();
        let t0 = Instant::now();
        let demand: Vec<IntegratorResults> = levels.iter().map(|_| SeatDemandIntegrator::new(t0).reset(t0)).collect();
        let fair_prop = adjust_borrowing(&mut levels, &demand).unwrap();
        assert!((fair_prop - 602.0 / 258.001).abs() < 1e-12);
        // 13 × 2.3333 = 30.33, 50 × 2.3333 = 116.67, 73 × 2.3333 = 170.33, ...
        assert_eq!(levels.iter().map(|l| l.current_limit).collect::<Vec<_>>(), [0, 30, 117, 170, 58, 114, 56, 56]);
    }

    #[test]
    fn a_busy_level_borrows_what_idle_levels_lend() {
        let mut levels: Vec<LevelBorrowing> = default_limits().into_iter().map(LevelBorrowing::new).collect();
        let idle = IntegratorResults { duration: 10.0, average: 0.0, deviation: 0.0, min: 0.0, max: 0.0 };
        let busy = IntegratorResults { duration: 10.0, average: 250.0, deviation: 50.0, min: 200.0, max: 300.0 };
        let mut demand = vec![idle; 8];
        demand[7] = busy;
        // global-default: smoothed = avg + dev = 300, lower bound min(49, 300) = 49. The others'
        // targets are their floors; no bound bites: fair_prop = 602 / (234.001 + 300).
        let fair_prop = adjust_borrowing(&mut levels, &demand).unwrap();
        assert!((fair_prop - 602.0 / 534.001).abs() < 1e-12);
        assert_eq!(
            levels[7].stats,
            SeatDemandStats { avg: 250.0, std_dev: 50.0, high_watermark: 300.0, smoothed: 300.0 }
        );
        assert_eq!(levels.iter().map(|l| l.current_limit).collect::<Vec<_>>(), [0, 15, 56, 82, 28, 55, 27, 338]);

        // Demand far beyond what exists: everyone else is held at the floor (their lower
        // bounds bite), and global-default gets the rest: 602 - 234 = 368.
        demand[7] = IntegratorResults { duration: 10.0, average: 2000.0, deviation: 0.0, min: 2000.0, max: 2000.0 };
        adjust_borrowing(&mut levels, &demand).unwrap();
        assert_eq!(levels.iter().map(|l| l.current_limit).collect::<Vec<_>>(), [0, 13, 50, 73, 25, 49, 24, 368]);
    }

    #[test]
    fn a_level_keeps_seats_it_used_up_to_its_nominal_limit() {
        let mut levels: Vec<LevelBorrowing> = default_limits().into_iter().map(LevelBorrowing::new).collect();
        let idle = IntegratorResults { duration: 10.0, average: 0.0, deviation: 0.0, min: 0.0, max: 0.0 };
        let mut demand = vec![idle; 8];
        // workload-low peaked at 200 seats once: its floor rises from 24 to 200 (< 245 nominal).
        demand[6] = IntegratorResults { duration: 10.0, average: 1.0, deviation: 0.0, min: 0.0, max: 200.0 };
        demand[7] = IntegratorResults { duration: 10.0, average: 2000.0, deviation: 0.0, min: 2000.0, max: 2000.0 };
        adjust_borrowing(&mut levels, &demand).unwrap();
        // 602 - (13 + 50 + 73 + 25 + 49 + 200) = 192 for global-default.
        assert_eq!(levels.iter().map(|l| l.current_limit).collect::<Vec<_>>(), [0, 13, 50, 73, 25, 49, 200, 192]);
    }

    #[test]
    fn the_smoothed_demand_rises_at_once_and_decays_slowly() {
        let mut stats = SeatDemandStats::default();
        stats.update(&IntegratorResults { duration: 10.0, average: 80.0, deviation: 20.0, min: 0.0, max: 150.0 });
        assert_eq!((stats.smoothed, stats.high_watermark), (100.0, 150.0));
        stats.update(&IntegratorResults { duration: 10.0, average: 0.0, deviation: f64::NAN, min: 0.0, max: 0.0 });
        assert_eq!(stats.std_dev, 0.0, "NaN deviation counts as 0");
        assert!((stats.smoothed - 97.7).abs() < 1e-9);
        // An empty period moves only the high watermark.
        stats.update(&IntegratorResults { duration: 0.0, average: f64::NAN, deviation: f64::NAN, min: 0.0, max: 7.0 });
        assert_eq!(stats.high_watermark, 7.0);
        assert!((stats.smoothed - 97.7).abs() < 1e-9);
        assert_eq!(stats.avg, 0.0);
    }

    #[test]
    fn the_integrator_weights_values_by_time() {
        let t0 = Instant::now();
        let mut igr = SeatDemandIntegrator::new(t0);
        igr.set(t0, 4.0);
        igr.set(t0 + Duration::from_secs(3), 0.0);
        // 4 for 3 s then 0 for 1 s: mean 3, variance 16 × 3/4 − 9 = 3.
        let r = igr.reset(t0 + Duration::from_secs(4));
        assert_eq!((r.duration, r.average, r.min, r.max), (4.0, 3.0, 0.0, 4.0));
        assert!((r.deviation - 3f64.sqrt()).abs() < 1e-12);
        let empty = igr.reset(t0 + Duration::from_secs(4));
        assert_eq!(empty.duration, 0.0);
        assert!(empty.average.is_nan() && empty.deviation.is_nan());
        // Going back in time counts as no time passing.
        igr.set(t0, 1.0);
        assert_eq!(igr.results(t0 + Duration::from_secs(4)).duration, 0.0);
        assert_eq!(igr.value(), 1.0);
    }

    #[test]
    fn the_allocation_respects_bounds_and_reports_impossible_problems() {
        let item = |target, lower_bound, upper_bound| AllocProblemItem { target, lower_bound, upper_bound };
        // No bound bites: proportional to targets.
        let (allocs, prop) =
            compute_concurrency_allocation(30, &[item(10.0, 0.0, 100.0), item(20.0, 0.0, 100.0)]).unwrap();
        assert_eq!((allocs, prop), (vec![10.0, 20.0], 1.0));
        // The second class's ceiling bites at 12; the first takes the rest.
        let (allocs, prop) =
            compute_concurrency_allocation(30, &[item(10.0, 0.0, 100.0), item(20.0, 0.0, 12.0)]).unwrap();
        assert_eq!(allocs.iter().map(|a| (a * 1e9).round() / 1e9).collect::<Vec<_>>(), [18.0, 12.0]);
        assert!((prop - 1.8).abs() < 1e-12);
        // Exactly the floors, exactly the ceilings.
        assert_eq!(
            compute_concurrency_allocation(5, &[item(3.0, 2.0, 4.0), item(3.0, 3.0, 9.0)]).unwrap().0,
            [2.0, 3.0]
        );
        assert_eq!(
            compute_concurrency_allocation(13, &[item(3.0, 2.0, 4.0), item(3.0, 3.0, 9.0)]).unwrap().0,
            [4.0, 9.0]
        );
        assert_eq!(compute_concurrency_allocation(0, &[item(0.0, 0.0, 4.0)]).unwrap(), (vec![0.0], 0.0));
        let err = |sum, items: &[AllocProblemItem]| compute_concurrency_allocation(sum, items).unwrap_err().to_string();
        assert_eq!(err(1, &[item(3.0, 2.0, 4.0)]), "lower bounds sum to 2, which is higher than the required sum of 1");
        assert_eq!(err(9, &[item(3.0, 2.0, 4.0)]), "upper bounds sum to 4, which is lower than the required sum of 9");
        assert_eq!(err(3, &[item(1.0, 2.0, 4.0)]), "target 0 is 1, which is below its lower bound of 2");
        assert_eq!(err(3, &[item(3.0, 2.0, 1.0)]), "upper bound 0 is 1 but should not be less than the lower bound 2");
        assert_eq!(err(3, &[item(3.0, -1.0, 4.0)]), "lower bound 0 is -1 but negative lower bounds are not allowed");
    }

    #[test]
    fn every_adjustment_stays_within_bounds_and_sums_to_the_nominal_total() {
        let mut levels: Vec<LevelBorrowing> = default_limits().into_iter().map(LevelBorrowing::new).collect();
        // A deterministic spread of demands, folded in period after period.
        let mut x: u64 = 12345;
        for _ in 0..200 {
            let demand: Vec<IntegratorResults> = (0..levels.len())
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let avg = (x >> 33) as f64 % 700.0;
                    IntegratorResults { duration: 10.0, average: avg, deviation: avg / 4.0, min: 0.0, max: avg * 1.5 }
                })
                .collect();
            adjust_borrowing(&mut levels, &demand).unwrap();
            for l in &levels {
                let lower = l.limits.min().max(l.limits.nominal.min(l.stats.high_watermark as u32));
                assert!((lower..=l.limits.max()).contains(&l.current_limit), "{l:?}");
            }
            let total: u32 = levels.iter().map(|l| l.current_limit).sum();
            // Each rounding moves a level by at most half a seat.
            assert!((602 - 4..=602 + 4).contains(&total), "total {total}");
        }
    }
}
