//! `Content-Type` and `Accept` headers (`negotiate::input_format`, `negotiate::negotiate`):
//! never a panic; the media type a response is labelled with is one its own Accept would get.
use gateway::negotiate::{Input, Offer, input_format, negotiate};

/// The target: never a panic, and the properties above.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for protobuf in [false, true] {
        if let Ok(input) = input_format(Some(text), protobuf) {
            assert!(protobuf || input != Input::Protobuf);
        }
    }
    for offer in [
        Offer::default(),
        Offer { tables: true, metadata: true, protobuf: true },
        Offer { tables: false, metadata: false, protobuf: true },
    ] {
        let Ok(output) = negotiate(Some(text), offer) else { continue };
        assert!(offer.protobuf || output.content_type(false) != protobuf::CONTENT_TYPE);
        let label = output.content_type(false);
        let again = negotiate(Some(label), offer).expect("a response's own content type is acceptable");
        assert_eq!(again.encoding, output.encoding, "{text:?} answered as {label}");
    }
}
