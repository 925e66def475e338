//! kube's IP and CIDR libraries (`library.IP`, `library.CIDR`): addresses parsed as Go's
//! `netip` parses them (no leading zeros in IPv4 octets, zones parsed then refused, IPv4-mapped
//! IPv6 refused), with Go's error messages, and its address predicates.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{EvalError, EvalResult};
pub use crate::ext::Cidr;
use crate::golang::quote;
use crate::library::Ext;
use crate::value::Value;

/// Go's `netip.ParseAddr`: the address and its zone (`fe80::1%eth0`).
fn parse_addr(s: &str) -> Result<(IpAddr, String), String> {
    let err = |msg: &str, at: Option<&str>| match at {
        Some(at) if !at.is_empty() => format!("ParseAddr({}): {msg} (at {})", quote(s), quote(at)),
        _ => format!("ParseAddr({}): {msg}", quote(s)),
    };
    for c in s.bytes() {
        match c {
            b'.' => {
                return parse_v4(s, s)
                    .map(|a| (IpAddr::V4(Ipv4Addr::from(a)), String::new()))
                    .map_err(|(m, at)| err(&m, at.as_deref()));
            }
            b':' => return parse_v6(s).map_err(|(m, at)| err(&m, at.as_deref())),
            b'%' => return Err(err("missing IPv6 address", None)),
            _ => {}
        }
    }
    Err(err("unable to parse IP", None))
}

type ParseError = (String, Option<String>);

/// Go's `parseIPv4Fields` over `part` (a suffix of `input`, for embedded IPv4).
fn parse_v4(_input: &str, part: &str) -> Result<[u8; 4], ParseError> {
    let b = part.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for i in 0..b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(("IPv4 field has octet with leading zero".into(), None));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(("IPv4 field has value >255".into(), None));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    return Err(("IPv4 field must have at least one digit".into(), Some(part[i..].to_string())));
                }
                if pos == 3 {
                    return Err(("IPv4 address too long".into(), None));
                }
                fields[pos] = val as u8;
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => return Err(("unexpected character".into(), Some(part[i..].to_string()))),
        }
    }
    if pos < 3 {
        return Err(("IPv4 address too short".into(), None));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// Go's `parseIPv6`.
fn parse_v6(input: &str) -> Result<(IpAddr, String), ParseError> {
    let (mut s, zone) = match input.find('%') {
        Some(i) => {
            let zone = &input[i + 1..];
            if zone.is_empty() {
                return Err(("zone must be a non-empty string".into(), None));
            }
            (&input[..i], zone.to_string())
        }
        None => (input, String::new()),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: i32 = -1;
    if s.len() >= 2 && s.starts_with("::") {
        ellipsis = 0;
        s = &s[2..];
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc: u32 = 0;
        while off < b.len() {
            let c = b[off];
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(("each group must have 4 or less digits".into(), Some(s.to_string())));
            }
            if acc > 0xffff {
                return Err(("IPv6 field has value >=2^16".into(), Some(s.to_string())));
            }
            off += 1;
        }
        if off == 0 {
            return Err(("each colon-separated field must have at least one digit".into(), Some(s.to_string())));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis < 0 && i != 12 {
                return Err((
                    "embedded IPv4 address must replace the final 2 fields of the address".into(),
                    Some(s.to_string()),
                ));
            }
            if i + 4 > 16 {
                return Err((
                    "too many hex fields to fit an embedded IPv4 at the end of the address".into(),
                    Some(s.to_string()),
                ));
            }
            let v4 = parse_v4(input, s)?;
            ip[i..i + 4].copy_from_slice(&v4);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(("unexpected character, want colon".into(), Some(s.to_string())));
        } else if s.len() == 1 {
            return Err(("colon must be followed by more characters".into(), Some(s.to_string())));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis >= 0 {
                return Err(("multiple :: in address".into(), Some(s.to_string())));
            }
            ellipsis = i as i32;
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(("trailing garbage after address".into(), Some(s.to_string())));
    }
    if i < 16 {
        if ellipsis < 0 {
            return Err(("address string too short".into(), None));
        }
        let e = ellipsis as usize;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in &mut ip[e..e + n] {
            *b = 0;
        }
    } else if ellipsis >= 0 {
        return Err(("the :: must expand to at least one field of zeros".into(), None));
    }
    Ok((IpAddr::V6(Ipv6Addr::from(ip)), zone))
}

fn is_4in6(a: &IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// kube's `parseIPAddr`.
pub fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let (addr, zone) =
        parse_addr(s).map_err(|e| format!("IP Address {} parse error during conversion from string: {e}", quote(s)))?;
    if !zone.is_empty() {
        return Err(format!("IP address {} with zone value is not allowed", quote(s)));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", quote(s)));
    }
    Ok(addr)
}

/// kube's `parseCIDR` (Go's `netip.ParsePrefix`).
pub fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let fail = |msg: String| {
        format!("network address parse error during conversion from string: netip.ParsePrefix({}): {msg}", quote(s))
    };
    let Some(i) = s.rfind('/') else { return Err(fail("no '/'".into())) };
    let (addr, zone) = parse_addr(&s[..i]).map_err(fail)?;
    if addr.is_ipv6() && !zone.is_empty() {
        return Err(fail("IPv6 zones cannot be present in a prefix".into()));
    }
    let bits_str = &s[i + 1..];
    let bad = || fail(format!("bad bits after slash: {}", quote(bits_str)));
    if bits_str.len() > 1 && !matches!(bits_str.as_bytes()[0], b'1'..=b'9') {
        return Err(bad());
    }
    let bits: i64 = bits_str.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if !(0..=max).contains(&bits) {
        return Err(fail("prefix length out of range".into()));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", quote(s)));
    }
    Ok(Cidr { addr, bits: bits as u8 })
}

fn octets(a: &IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(v) => v.octets().to_vec(),
        IpAddr::V6(v) => v.octets().to_vec(),
    }
}

fn masked_octets(a: &IpAddr, bits: u8) -> Vec<u8> {
    let mut o = octets(a);
    for (i, b) in o.iter_mut().enumerate() {
        let start = (i * 8) as u32;
        let keep = u32::from(bits).saturating_sub(start).min(8);
        *b &= if keep == 0 { 0 } else { 0xffu8 << (8 - keep) };
    }
    o
}

impl Cidr {
    /// The prefix with host bits cleared.
    pub fn masked(&self) -> Cidr {
        let o = masked_octets(&self.addr, self.bits);
        let addr = match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], o[3])),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(o).expect("16 octets"))),
        };
        Cidr { addr, bits: self.bits }
    }

    /// Go's `Prefix.Contains`.
    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4() && masked_octets(&self.addr, self.bits) == masked_octets(ip, self.bits)
    }

    /// kube's `containsCIDR`.
    pub fn contains_cidr(&self, other: &Cidr) -> bool {
        let same_family = self.addr.is_ipv4() == other.addr.is_ipv4();
        same_family
            && masked_octets(&self.addr, self.bits) == masked_octets(&other.addr, self.bits)
            && self.bits <= other.bits
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// Go's `Addr.IsLinkLocalMulticast`.
fn is_link_local_multicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v) => v.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v) => v.segments()[0] & 0xff0f == 0xff02,
    }
}

/// Go's `Addr.IsLinkLocalUnicast`.
fn is_link_local_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v) => v.octets()[..2] == [169, 254],
        IpAddr::V6(v) => v.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `Addr.IsGlobalUnicast`.
fn is_global_unicast(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v) => {
            !(v.is_unspecified()
                || *v == Ipv4Addr::BROADCAST
                || v.is_loopback()
                || v.is_multicast()
                || is_link_local_unicast(a))
        }
        IpAddr::V6(v) => !(v.is_unspecified() || v.is_loopback() || v.is_multicast() || is_link_local_unicast(a)),
    }
}

fn ip(v: &Value) -> Option<&IpAddr> {
    match v {
        Value::Ext(Ext::Ip(a)) => Some(a),
        _ => None,
    }
}

fn cidr(v: &Value) -> Option<&Cidr> {
    match v {
        Value::Ext(Ext::Cidr(c)) => Some(c),
        _ => None,
    }
}

/// The IP and CIDR functions.
pub fn call(name: &str, args: &[Value]) -> Option<EvalResult> {
    use Value as V;
    let b = |x: bool| Some(Ok(V::Bool(x)));
    match (name, args) {
        ("ip", [V::String(s)]) => Some(parse_ip(s).map(|a| V::Ext(Ext::Ip(a))).map_err(EvalError::msg)),
        ("isIP", [V::String(s)]) => b(parse_ip(s).is_ok()),
        ("ip.isCanonical", [V::String(s)]) => {
            Some(parse_ip(s).map(|a| V::Bool(a.to_string() == **s)).map_err(EvalError::msg))
        }
        ("cidr", [V::String(s)]) => Some(
            parse_cidr(s)
                .map(|c| V::Ext(Ext::Cidr(c)))
                .map_err(|e| EvalError::msg(format!("network address parse error during conversion from string: {e}"))),
        ),
        ("isCIDR", [V::String(s)]) => b(parse_cidr(s).is_ok()),
        ("family", [a]) => ip(a).map(|a| Ok(V::Int(if a.is_ipv4() { 4 } else { 6 }))),
        ("isUnspecified", [a]) => ip(a).map(|a| Ok(V::Bool(a.is_unspecified()))),
        ("isLoopback", [a]) => ip(a).map(|a| Ok(V::Bool(a.is_loopback()))),
        ("isLinkLocalMulticast", [a]) => ip(a).map(|a| Ok(V::Bool(is_link_local_multicast(a)))),
        ("isLinkLocalUnicast", [a]) => ip(a).map(|a| Ok(V::Bool(is_link_local_unicast(a)))),
        ("isGlobalUnicast", [a]) => ip(a).map(|a| Ok(V::Bool(is_global_unicast(a)))),
        ("ip", [c]) => cidr(c).map(|c| Ok(V::Ext(Ext::Ip(c.addr)))),
        ("prefixLength", [c]) => cidr(c).map(|c| Ok(V::Int(i64::from(c.bits)))),
        ("masked", [c]) => cidr(c).map(|c| Ok(V::Ext(Ext::Cidr(c.masked())))),
        ("containsIP", [c, other]) => {
            let c = cidr(c)?;
            Some(match other {
                V::String(s) => match parse_ip(s) {
                    Ok(a) => Ok(V::Bool(c.contains(&a))),
                    // kube hands the CIDR, not the parse error, to `MaybeNoSuchOverloadErr`.
                    Err(_) => Err(EvalError::NoSuchOverload),
                },
                other => match ip(other) {
                    Some(a) => Ok(V::Bool(c.contains(a))),
                    None => Err(EvalError::NoSuchOverload),
                },
            })
        }
        ("containsCIDR", [c, other]) => {
            let c = cidr(c)?;
            Some(match other {
                V::String(s) => match parse_cidr(s) {
                    Ok(o) => Ok(V::Bool(c.contains_cidr(&o))),
                    Err(e) => {
                        Err(EvalError::msg(format!("network address parse error during conversion from string: {e}")))
                    }
                },
                other => match cidr(other) {
                    Some(o) => Ok(V::Bool(c.contains_cidr(o))),
                    None => Err(EvalError::NoSuchOverload),
                },
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(name: &str, args: &[Value]) -> Value {
        call(name, args).expect("a library function").expect("no error")
    }

    fn s(v: &str) -> Value {
        Value::string(v)
    }

    #[test]
    fn addresses_follow_kubes_documented_examples() {
        assert!(call("ip", &[s("127.0.0.1")]).unwrap().is_ok());
        assert_eq!(
            call("ip", &[s("127.0.0.256")]).unwrap(),
            Err(EvalError::msg(
                "IP Address \"127.0.0.256\" parse error during conversion from string: ParseAddr(\"127.0.0.256\"): IPv4 field has value >255"
            ))
        );
        assert_eq!(eval("isIP", &[s("::1")]), Value::Bool(true));
        assert_eq!(eval("isIP", &[s(":::1")]), Value::Bool(false));
        assert_eq!(eval("isIP", &[s("127.0.0.01")]), Value::Bool(false), "leading zeros");
        assert_eq!(eval("isIP", &[s("::ffff:1.2.3.4")]), Value::Bool(false), "IPv4-mapped");
        assert_eq!(eval("isIP", &[s("fe80::1%eth0")]), Value::Bool(false), "zones");
        assert_eq!(eval("ip.isCanonical", &[s("2001:db8::abcd")]), Value::Bool(true));
        assert_eq!(eval("ip.isCanonical", &[s("2001:DB8::ABCD")]), Value::Bool(false));
        assert_eq!(eval("ip.isCanonical", &[s("2001:db8::0:0:0:abcd")]), Value::Bool(false));
        let ip = |v: &str| eval("ip", &[s(v)]);
        assert_eq!(eval("family", &[ip("::1")]), Value::Int(6));
        assert_eq!(eval("isLinkLocalMulticast", &[ip("224.0.0.1")]), Value::Bool(true));
        assert_eq!(eval("isLinkLocalMulticast", &[ip("224.0.1.1")]), Value::Bool(false));
        assert_eq!(eval("isLinkLocalMulticast", &[ip("ff02::1")]), Value::Bool(true));
        assert_eq!(eval("isLinkLocalUnicast", &[ip("169.254.169.254")]), Value::Bool(true));
        assert_eq!(eval("isLinkLocalUnicast", &[ip("fd80::1")]), Value::Bool(false));
        assert_eq!(eval("isGlobalUnicast", &[ip("192.168.0.1")]), Value::Bool(true));
        assert_eq!(eval("isGlobalUnicast", &[ip("255.255.255.255")]), Value::Bool(false));
        assert_eq!(eval("isGlobalUnicast", &[ip("ff00::1")]), Value::Bool(false));
    }

    #[test]
    fn cidrs_follow_kubes_documented_examples() {
        let c = |v: &str| eval("cidr", &[s(v)]);
        assert_eq!(eval("containsIP", &[c("192.168.0.0/24"), s("192.168.0.1")]), Value::Bool(true));
        assert_eq!(eval("containsIP", &[c("192.168.0.0/24"), s("192.168.1.1")]), Value::Bool(false));
        assert_eq!(eval("containsCIDR", &[c("192.168.0.0/24"), s("192.168.0.0/25")]), Value::Bool(true));
        assert_eq!(eval("containsCIDR", &[c("192.168.0.0/24"), s("192.168.0.0/23")]), Value::Bool(false));
        assert_eq!(eval("containsCIDR", &[c("2001:db8::/32"), s("2001:db8::/33")]), Value::Bool(true));
        assert_eq!(eval("masked", &[c("192.168.0.1/24")]).to_string(), "192.168.0.0/24");
        assert_eq!(eval("ip", &[c("192.168.0.1/24")]).to_string(), "192.168.0.1");
        assert_eq!(eval("prefixLength", &[c("192.168.0.0/24")]), Value::Int(24));
        assert_eq!(eval("isCIDR", &[s("192.168.0.0/33")]), Value::Bool(false));
        assert_eq!(eval("isCIDR", &[s("192.168.0.0/024")]), Value::Bool(false));
        assert_eq!(call("containsIP", &[c("10.0.0.0/8"), s("bad")]), Some(Err(EvalError::NoSuchOverload)));
    }
}
