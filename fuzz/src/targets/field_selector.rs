//! A `fieldSelector` query parameter (`FieldSelector::parse`): never a panic; a parsed selector
//! prints as a string that parses back to the same terms (kube sorts the terms' text before
//! parsing, so their order may change: they are ANDed).
use apimachinery::selector::fields::FieldSelector;

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(selector) = FieldSelector::parse(text) else { return };
    let printed = selector.to_string();
    let again = FieldSelector::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} does not parse: {}", e.message));
    let sorted = |s: &FieldSelector| {
        let mut terms: Vec<String> = s.requirements().iter().map(ToString::to_string).collect();
        terms.sort();
        terms
    };
    assert_eq!(sorted(&again), sorted(&selector), "{text:?} printed as {printed:?}");
}
