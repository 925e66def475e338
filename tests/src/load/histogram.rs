//! Quantiles of a Prometheus histogram scraped as text, grouped by some of its labels: what
//! `histogram_quantile(q, sum by (verb, resource) (rate(..._bucket[...])))` shows, over the
//! difference of two scrapes, so a phase of a run is read on its own.

use std::collections::BTreeMap;

/// One group's cumulative bucket counts, by upper bound.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Buckets {
    /// `(le, cumulative count)`, sorted by `le`; the last is `+Inf`.
    pub bounds: Vec<(f64, f64)>,
}

impl Buckets {
    /// Requests counted.
    pub fn count(&self) -> f64 {
        self.bounds.last().map_or(0.0, |b| b.1)
    }

    /// The `q` quantile, interpolated linearly inside its bucket as Prometheus does; a quantile
    /// in the `+Inf` bucket is the highest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.count();
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let (mut lower, mut below) = (0.0, 0.0);
        for &(le, count) in &self.bounds {
            if count >= rank {
                if le.is_infinite() {
                    return Some(lower);
                }
                let inside = count - below;
                let share = if inside > 0.0 { (rank - below) / inside } else { 1.0 };
                return Some(lower + (le - lower) * share);
            }
            (lower, below) = (le, count);
        }
        Some(lower)
    }

    /// The counts of `self` less those of `earlier` (the same group scraped before).
    pub fn since(&self, earlier: Option<&Buckets>) -> Buckets {
        let Some(earlier) = earlier else { return self.clone() };
        let bounds = self
            .bounds
            .iter()
            .map(|&(le, n)| {
                let before = earlier.bounds.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1);
                (le, (n - before).max(0.0))
            })
            .collect();
        Buckets { bounds }
    }
}

/// The `name` histogram's buckets in `text`, summed over every label but `by`, keyed by the
/// values of `by` joined with `/` (a label a sample lacks counts as empty).
pub fn parse(text: &str, name: &str, by: &[&str]) -> BTreeMap<String, Buckets> {
    let prefix = format!("{name}_bucket{{");
    let mut sums: BTreeMap<String, BTreeMap<u64, (f64, f64)>> = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else { continue };
        let Some((labels, value)) = rest.rsplit_once('}') else { continue };
        let Ok(count) = value.split_whitespace().next().unwrap_or("").parse::<f64>() else { continue };
        let labels = labels_of(labels);
        let Some(le) = labels.get("le").and_then(|le| parse_bound(le)) else { continue };
        let key: Vec<&str> = by.iter().map(|l| labels.get(*l).map_or("", String::as_str)).collect();
        let slot = sums.entry(key.join("/")).or_default().entry(le.to_bits()).or_insert((le, 0.0));
        slot.1 += count;
    }
    sums.into_iter()
        .map(|(key, by_le)| {
            let mut bounds: Vec<(f64, f64)> = by_le.into_values().collect();
            bounds.sort_by(|a, b| a.0.total_cmp(&b.0));
            (key, Buckets { bounds })
        })
        .collect()
}

fn parse_bound(le: &str) -> Option<f64> {
    match le {
        "+Inf" => Some(f64::INFINITY),
        _ => le.parse().ok(),
    }
}

/// `a="x",b="y"` as a map (values hold no escaped quotes in the labels read here).
fn labels_of(text: &str) -> BTreeMap<&str, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let Some(end) = after.find('"') else { break };
        out.insert(key.trim_start_matches(',').trim(), after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP x_bucket a histogram
x_bucket{verb="GET",resource="pods",scope="a",le="0.1"} 50
x_bucket{verb="GET",resource="pods",scope="a",le="0.2"} 90
x_bucket{verb="GET",resource="pods",scope="a",le="+Inf"} 100
x_bucket{verb="GET",resource="pods",scope="b",le="0.1"} 50
x_bucket{verb="GET",resource="pods",scope="b",le="0.2"} 90
x_bucket{verb="GET",resource="pods",scope="b",le="+Inf"} 100
x_bucket{verb="PUT",resource="leases",le="0.1"} 0
x_bucket{verb="PUT",resource="leases",le="0.2"} 0
x_bucket{verb="PUT",resource="leases",le="+Inf"} 4
x_count{verb="PUT",resource="leases"} 4
"#;

    #[test]
    fn groups_sum_over_the_other_labels_and_interpolate_inside_a_bucket() {
        let groups = parse(TEXT, "x", &["verb", "resource"]);
        let get = &groups["GET/pods"];
        assert_eq!(get.count(), 200.0);
        // Rank 100 of 200 is the top of the first bucket; rank 140 is halfway into the second.
        assert!((get.quantile(0.5).unwrap() - 0.1).abs() < 1e-9);
        assert!((get.quantile(0.7).unwrap() - 0.15).abs() < 1e-9);
        // In the +Inf bucket: the highest finite bound.
        assert_eq!(get.quantile(0.99), Some(0.2));
        assert_eq!(groups["PUT/leases"].quantile(0.5), Some(0.2));
    }

    #[test]
    fn a_later_scrape_less_an_earlier_one_is_the_phase_between() {
        let before = parse(TEXT, "x", &["verb", "resource"]);
        let later = TEXT.replace("} 100", "} 110").replace("} 90", "} 100");
        let after = parse(&later, "x", &["verb", "resource"]);
        let phase = after["GET/pods"].since(before.get("GET/pods"));
        assert_eq!(phase.count(), 20.0);
        assert_eq!(phase.bounds[0].1, 0.0);
        assert!((phase.quantile(0.5).unwrap() - 0.15).abs() < 1e-9);
        assert_eq!(after["PUT/leases"].since(None).count(), 4.0);
        assert_eq!(Buckets::default().quantile(0.5), None);
    }
}
