//! A `continue` query parameter (`ContinueToken::decode`): never a panic; a decoded token
//! stays inside the listed prefix and encodes to a token that decodes to the same thing.
use apimachinery::options::ContinueToken;

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // Raw text, and the fuzzer's bytes as the token's JSON (what base64 hides from it).
    use base64::Engine;
    let wrapped = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data);
    for token in [text, wrapped.as_str()] {
        let Ok(decoded) = ContinueToken::decode(token) else { continue };
        assert!(!decoded.start.is_empty());
        assert!(!decoded.start.starts_with('/'));
        assert!(decoded.start.split('/').all(|s| s != ".." && s != "."));
        assert!(decoded.revision.is_none_or(|r| r > 0 && r <= i64::MAX as u64));
        let again = ContinueToken::decode(&decoded.encode()).expect("an encoded token decodes");
        assert_eq!(again, decoded);
    }
}
