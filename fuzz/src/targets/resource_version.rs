//! `resourceVersion`, `resourceVersionMatch`, `limit` and `continue` of a get, list and watch
//! (`GetOptions`, `ListOptions`, `WatchOptions::parse`): never a panic; a revision accepted is
//! what kube's `strconv.ParseUint` accepts (decimal digits only) and prints back as sent.
use apimachinery::options::{GetOptions, ListOptions, Params, ReadAt, WatchOptions};

fn check_read_at(read_at: ReadAt, rv: &str) {
    if let ReadAt::NotOlderThan(r) | ReadAt::Exact(r) = read_at {
        assert!(rv.bytes().all(|b| b.is_ascii_digit()), "resourceVersion {rv:?} accepted as {r}");
        // Leading zeros go, as ParseUint drops them ("00" is revision 0, which kube, comparing
        // the string with "0", serves as not older than 0 rather than as "any").
        let digits = rv.trim_start_matches('0');
        assert_eq!(r.to_string(), if digits.is_empty() { "0" } else { digits }, "resourceVersion {rv:?} read as {r}");
    }
}

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // `rv\0match\0limit\0continue\0sendInitialEvents`
    let mut parts = text.split('\0');
    let mut next = || parts.next().unwrap_or("").to_string();
    let (rv, rv_match, limit, cont, sie) = (next(), next(), next(), next(), next());
    let mut pairs = vec![("resourceVersion".to_string(), rv.clone())];
    for (k, v) in [("resourceVersionMatch", rv_match), ("limit", limit), ("continue", cont), ("sendInitialEvents", sie)]
    {
        if !v.is_empty() {
            pairs.push((k.to_string(), v));
        }
    }
    let q = Params::new(pairs);
    let def = kinds::find("", "v1", "pods").expect("pods are built in");
    if let Ok(o) = GetOptions::parse(&q) {
        check_read_at(o.read_at, &rv);
    }
    if let Ok(o) = ListOptions::parse(&q, def) {
        check_read_at(o.read_at, &rv);
    }
    if let Ok(o) = WatchOptions::parse(&q, def) {
        check_read_at(o.read_at, &rv);
    }
}
