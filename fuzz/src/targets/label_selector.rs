//! A `labelSelector` query parameter (`LabelSelector::parse`): never a panic; a parsed selector
//! prints as a string that parses back to the same selector (the cacher and storage stages get
//! selectors across processes as strings).
use apimachinery::selector::labels::LabelSelector;

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(selector) = LabelSelector::parse(text) else { return };
    let printed = selector.to_string();
    let again = LabelSelector::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} does not parse: {}", e.message));
    assert_eq!(again, selector, "{text:?} printed as {printed:?}");
    assert_eq!(again.to_string(), printed);
}
