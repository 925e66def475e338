//! Work estimates: how many seats a request occupies, and for how long after it finishes.
//!
//! kube's estimator has three parts, and so does this one:
//! - a list (or a watch that sends initial events) costs one seat per 100 objects it goes
//!   through, at least 1 and at most the level's `max_seats`;
//! - a write whose event reaches 10 or more watchers keeps one seat per 10 watchers for 5 ms
//!   after it finishes (the fan-out it caused, kube's `FinalSeats` and `AdditionalLatency`);
//! - everything else costs one seat.
//!
//! The gateway counts the objects and watchers ([`RequestWork`]); the stage applies the level's
//! ceiling, which only it knows. How many objects a list goes through is counted for this
//! server's read path, not kube's: lists are answered from the cache's ordered snapshot, so a
//! list without selectors stops after `limit` objects, and one with selectors walks them all.

use std::time::Duration;

use apimachinery::messages::RequestWork;

use crate::queueset::WorkEstimate;

/// The most seats a list may take (kube's `MaximumListSeatsLimit`).
pub const MAXIMUM_LIST_SEATS: u32 = 10;
/// Objects per seat of a list (kube's `objectsPerSeat`).
pub const OBJECTS_PER_SEAT: u64 = 100;
/// Watchers per seat of a write's fan-out (kube's `watchesPerSeat`).
pub const WATCHES_PER_SEAT: u64 = 10;
/// How long a write keeps its fan-out seats after it finishes (kube's
/// `eventAdditionalDuration`).
pub const EVENT_ADDITIONAL_DURATION: Duration = Duration::from_millis(5);

/// The most seats one request of a level may take: 15% of its nominal limit, at most the limit
/// over the hand size, at least 1 (kube's rule, which keeps 10 for the default levels of a
/// 600-seat server). Levels without queues (Reject) take [`MAXIMUM_LIST_SEATS`].
pub fn max_seats(nominal_limit: u32, hand_size: Option<u32>) -> u32 {
    let Some(hand_size) = hand_size.filter(|h| *h > 0) else { return MAXIMUM_LIST_SEATS };
    let by_share = (f64::from(nominal_limit) * 0.15).ceil() as u32;
    by_share.min(nominal_limit / hand_size).max(1)
}

/// The seats `work` takes in a level whose requests may take `max_seats` each.
pub fn estimate(work: RequestWork, max_seats: u32) -> WorkEstimate {
    let ceiling = max_seats.clamp(1, MAXIMUM_LIST_SEATS);
    let initial = work.objects.div_ceil(OBJECTS_PER_SEAT).clamp(1, u64::from(ceiling)) as u32;
    if work.watchers < WATCHES_PER_SEAT {
        return WorkEstimate::seats(initial);
    }
    WorkEstimate {
        initial_seats: initial,
        final_seats: work.watchers.div_ceil(WATCHES_PER_SEAT).min(u64::from(u32::MAX)) as u32,
        additional_latency: EVENT_ADDITIONAL_DURATION,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(objects: u64) -> RequestWork {
        RequestWork { objects, watchers: 0 }
    }

    #[test]
    fn a_list_takes_a_seat_per_hundred_objects_within_the_levels_ceiling() {
        assert_eq!(estimate(list(0), 10).initial_seats, 1, "never fewer than one seat");
        assert_eq!(estimate(list(100), 10).initial_seats, 1);
        assert_eq!(estimate(list(101), 10).initial_seats, 2);
        assert_eq!(estimate(list(550), 10).initial_seats, 6);
        assert_eq!(estimate(list(1_000_000), 10).initial_seats, 10, "kube's list ceiling");
        assert_eq!(estimate(list(1_000_000), 4).initial_seats, 4, "the level's ceiling");
        assert_eq!(estimate(list(1_000_000), 40).initial_seats, 10, "never above kube's ceiling");
        assert_eq!(estimate(list(550), 10).final_seats, 0);
    }

    #[test]
    fn a_write_seen_by_many_watchers_keeps_seats_for_the_fan_out() {
        let few = estimate(RequestWork { objects: 0, watchers: 9 }, 10);
        assert_eq!((few.initial_seats, few.final_seats, few.additional_latency), (1, 0, Duration::ZERO));
        let many = estimate(RequestWork { objects: 0, watchers: 95 }, 10);
        assert_eq!((many.initial_seats, many.final_seats), (1, 10));
        assert_eq!(many.additional_latency, EVENT_ADDITIONAL_DURATION);
        let crowd = estimate(RequestWork { objects: 0, watchers: 1_000 }, 10);
        assert_eq!(crowd.final_seats, 100, "capped by the queue set at dispatch, as in kube");
    }

    #[test]
    fn the_level_ceiling_follows_kubes_fifteen_percent_rule() {
        // The default levels of a 600-seat server: global-default has 20 nominal seats and
        // hand size 6, workload-low 100 and 6.
        assert_eq!(max_seats(20, Some(6)), 3);
        assert_eq!(max_seats(100, Some(6)), 15);
        assert_eq!(max_seats(1, Some(6)), 1, "at least one");
        assert_eq!(max_seats(50, None), MAXIMUM_LIST_SEATS, "a level without queues");
    }
}
