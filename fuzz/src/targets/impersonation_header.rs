//! The key of an `Impersonate-Extra-<key>` header (`impersonation::extra_key`): never a panic;
//! decoded as Go's `url.PathUnescape` of the lower-cased key (a bad escape leaves it as sent).

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let key = auth::impersonation::extra_key(text);
    if !text.contains('%') {
        assert_eq!(key, text.to_ascii_lowercase());
    }
}
