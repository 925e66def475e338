//! The key of an `Impersonate-Extra-<key>` header (`impersonation::extra_key`): never a panic;
//! decoded as Go's `url.PathUnescape` of the lower-cased key (a bad escape leaves it as sent).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let key = auth::impersonation::extra_key(text);
    if !text.contains('%') {
        assert_eq!(key, text.to_ascii_lowercase());
    }
});
