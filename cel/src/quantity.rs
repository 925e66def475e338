//! `resource.Quantity`: parsing, comparison and kube's canonical form.
//!
//! kube re-serialises every quantity it decodes in canonical form (`0.5` becomes `500m`,
//! `1024Mi` becomes `1Gi`), rounds resource lists up to milli precision, and compares
//! requests with limits exactly. Values are kept here as an integer count of nano-units,
//! kube's finest scale, which is exact for everything a client can reasonably send.

use std::cmp::Ordering;

/// How a quantity was written, which decides how it is printed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `1k`, `500m`, `12`.
    DecimalSi,
    /// `1Ki`, `512Mi`.
    BinarySi,
    /// `1e3`.
    DecimalExponent,
}

/// A parsed quantity: `nanos × 10⁻⁹` in `format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    /// The value in nano-units (rounded up, away from zero, as kube rounds).
    pub nanos: i128,
    /// The notation to print it back in.
    pub format: Format,
}

/// kube's decode error for a malformed quantity.
pub const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// kube's decode error for an unknown suffix.
pub const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
/// kube's decode error for a bad number.
pub const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";

const NANO: i128 = 1_000_000_000;
/// kube caps binary-SI quantities at 2⁶³-1 units.
const MAX_ALLOWED: i128 = i64::MAX as i128 * NANO;
/// The largest magnitude held, 10³⁸-1 nano-units (about 10²⁹ units): kube's quantities are
/// arbitrary-precision decimals, ours an `i128`, which must keep room for rounding up to a
/// milli-unit and for sums. Anything larger (39 or more digits of nano-units) is refused as a
/// bad number rather than overflowing.
const MAX_NANOS: i128 = 10i128.pow(38) - 1;

fn pow10(e: u32) -> Option<i128> {
    10i128.checked_pow(e)
}

/// Multiplies `digits × 10^exp10 × 2^exp2` into nanos, rounding fractions of a nano up.
fn scale(digits: i128, frac_len: u32, exp10: i32, exp2: u32) -> Option<i128> {
    // value = digits × 10^(exp10 - frac_len) × 2^exp2; nanos = value × 10^9
    let e = i64::from(exp10) - i64::from(frac_len) + 9;
    let base = digits.checked_mul(1i128.checked_shl(exp2)?)?;
    if e >= 0 {
        base.checked_mul(pow10(u32::try_from(e).ok()?)?)
    } else {
        let div = u32::try_from(-e).ok().and_then(pow10).unwrap_or(i128::MAX);
        let q = base / div;
        Some(if base % div != 0 { q + 1 } else { q })
    }
}

/// `resource.ParseQuantity`.
pub fn parse(s: &str) -> Result<Quantity, &'static str> {
    let s = s.trim();
    if s.is_empty() {
        return Err("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    }
    let (negative, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(num_end);
    if num.is_empty() {
        return Err(ERR_FORMAT);
    }
    // The suffix must match `[eEinumkKMGTP]*[-+]?[0-9]*`.
    let letters_end = suffix.find(|c: char| !"eEinumkKMGTP".contains(c)).unwrap_or(suffix.len());
    let tail = &suffix[letters_end..];
    let tail_digits = tail.strip_prefix(['+', '-']).unwrap_or(tail);
    if !tail_digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ERR_FORMAT);
    }
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => {
            if f.contains('.') {
                return Err(ERR_NUMERIC);
            }
            (i, f)
        }
        None => (num, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(ERR_NUMERIC);
    }
    let all_digits = format!("{int_part}{frac_part}");
    let trimmed = all_digits.trim_start_matches('0');
    // 38 digits always fit an i128, and every canonical form (at most MAX_NANOS) has no more.
    if trimmed.len() > 38 {
        return Err(ERR_NUMERIC);
    }
    let digits: i128 = if trimmed.is_empty() { 0 } else { trimmed.parse().map_err(|_| ERR_NUMERIC)? };
    let (format, exp10, exp2) = match suffix {
        "" => (Format::DecimalSi, 0, 0),
        "n" => (Format::DecimalSi, -9, 0),
        "u" => (Format::DecimalSi, -6, 0),
        "m" => (Format::DecimalSi, -3, 0),
        "k" => (Format::DecimalSi, 3, 0),
        "M" => (Format::DecimalSi, 6, 0),
        "G" => (Format::DecimalSi, 9, 0),
        "T" => (Format::DecimalSi, 12, 0),
        "P" => (Format::DecimalSi, 15, 0),
        "E" => (Format::DecimalSi, 18, 0),
        "Ki" => (Format::BinarySi, 0, 10),
        "Mi" => (Format::BinarySi, 0, 20),
        "Gi" => (Format::BinarySi, 0, 30),
        "Ti" => (Format::BinarySi, 0, 40),
        "Pi" => (Format::BinarySi, 0, 50),
        "Ei" => (Format::BinarySi, 0, 60),
        s if s.starts_with(['e', 'E']) => {
            let e: i32 = s[1..].parse().map_err(|_| ERR_SUFFIX)?;
            (Format::DecimalExponent, e, 0)
        }
        _ => return Err(ERR_SUFFIX),
    };
    let frac_len = u32::try_from(frac_part.len()).map_err(|_| ERR_NUMERIC)?;
    let mut nanos = scale(digits, frac_len, exp10, exp2).ok_or(ERR_NUMERIC)?;
    let mut format = format;
    if format == Format::BinarySi {
        nanos = nanos.min(MAX_ALLOWED);
        if nanos > 0 && nanos < NANO {
            format = Format::DecimalSi;
        }
    }
    if nanos > MAX_NANOS {
        return Err(ERR_NUMERIC);
    }
    if negative {
        nanos = -nanos;
    }
    Ok(Quantity { nanos, format })
}

fn strip_factors(mut v: i128, base: i128) -> (i128, i32) {
    let mut times = 0;
    while v != 0 && v % base == 0 {
        v /= base;
        times += 1;
    }
    (v, times)
}

impl Quantity {
    /// Zero.
    pub fn is_zero(&self) -> bool {
        self.nanos == 0
    }

    /// `Quantity.RoundUp(-3)`: what `SetDefaults_ResourceList` does to every resource list.
    pub fn round_up_milli(self) -> Quantity {
        let m = 1_000_000;
        let rem = self.nanos % m;
        let nanos = if rem == 0 {
            self.nanos
        } else if self.nanos > 0 {
            self.nanos - rem + m
        } else {
            self.nanos - rem - m
        };
        Quantity { nanos, ..self }
    }

    /// Whether the value is a whole number of units.
    pub fn is_integer(&self) -> bool {
        self.nanos % NANO == 0
    }

    /// `Quantity.String()`: the canonical form kube serialises.
    pub fn canonical(&self) -> String {
        if self.nanos == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySi && (self.nanos.abs() < 1024 * NANO || !self.is_integer()) {
            format = Format::DecimalSi;
        }
        if format == Format::BinarySi {
            let (m, times) = strip_factors(self.nanos / NANO, 1024);
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(times as usize).copied().unwrap_or("");
            return format!("{m}{suffix}");
        }
        // Decimal: value = m × 10^e with e a multiple of 3 and m an integer.
        let (mut m, times) = strip_factors(self.nanos, 10);
        let mut e = times - 9;
        match e.rem_euclid(3) {
            1 => {
                m *= 10;
                e -= 1;
            }
            2 => {
                m *= 100;
                e -= 2;
            }
            _ => {}
        }
        let suffix = if format == Format::DecimalExponent {
            if e == 0 { String::new() } else { format!("e{e}") }
        } else {
            match e {
                -9 => "n".into(),
                -6 => "u".into(),
                -3 => "m".into(),
                0 => String::new(),
                3 => "k".into(),
                6 => "M".into(),
                9 => "G".into(),
                12 => "T".into(),
                15 => "P".into(),
                18 => "E".into(),
                e => format!("e{e}"),
            }
        };
        format!("{m}{suffix}")
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.nanos.cmp(&other.nanos)
    }
}

/// Parses a quantity from its JSON form (a string, or a bare number as some clients send).
pub fn from_json(v: &serde_json::Value) -> Result<Quantity, &'static str> {
    match v {
        serde_json::Value::String(s) => parse(s),
        serde_json::Value::Number(n) => parse(&n.to_string()),
        _ => Err(ERR_FORMAT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_past_what_is_held_are_refused_not_overflowed() {
        // 39 digits of nano-units: rounding up to a milli-unit once overflowed.
        assert_eq!(parse("170141183460469231731687303715884105e-6"), Err(ERR_NUMERIC));
        assert_eq!(parse("100000000000000000000000000000"), Err(ERR_NUMERIC));
        let largest = parse("999999999999999999999999999999999999e-7").unwrap();
        assert_eq!(largest.nanos, MAX_NANOS - 99);
        assert_eq!(largest.round_up_milli().nanos, MAX_NANOS + 1);
        // An exponent at the edge of i32 once overflowed the scale arithmetic.
        assert_eq!(parse("1e2147483647"), Err(ERR_NUMERIC));
        assert_eq!(parse("1e-2147483648").map(|q| q.nanos), Ok(1));
        // A canonical form of 37 digits once failed to parse back.
        let q = parse("9284290928404290928469904409.28469904").unwrap();
        assert_eq!(q.canonical(), "9284290928404290928469904409284699040n");
        assert_eq!(parse(&q.canonical()), Ok(q));
    }

    fn canon(s: &str) -> String {
        parse(s).unwrap().canonical()
    }

    #[test]
    fn canonical_forms_match_kube() {
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("1.5"), "1500m");
        assert_eq!(canon("2000"), "2k");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1000Mi"), "1000Mi");
        assert_eq!(canon("0.5Gi"), "512Mi");
        assert_eq!(canon("1.5Ki"), "1536");
        assert_eq!(canon("100Ki"), "100Ki");
        assert_eq!(canon("129e6"), "129e6");
        assert_eq!(canon("128974848"), "128974848");
        assert_eq!(canon("1G"), "1G");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("-1"), "-1");
        assert_eq!(canon("100m"), "100m");
    }

    #[test]
    fn parse_errors_are_kubes() {
        assert_eq!(parse("abc"), Err(ERR_FORMAT));
        assert_eq!(parse("1Qi"), Err(ERR_FORMAT));
        assert_eq!(parse("1kk"), Err(ERR_SUFFIX));
        assert_eq!(parse("1..2"), Err(ERR_NUMERIC));
    }

    #[test]
    fn compare_and_round() {
        assert_eq!(parse("1").unwrap().cmp(&parse("1000m").unwrap()), Ordering::Equal);
        assert!(parse("1Gi").unwrap() > parse("1G").unwrap());
        assert_eq!(parse("0.0001").unwrap().round_up_milli().canonical(), "1m");
    }
}
