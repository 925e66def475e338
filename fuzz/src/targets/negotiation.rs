//! `Content-Type` and `Accept` headers (`negotiate::input_format`, `negotiate::negotiate`):
//! never a panic; protobuf only for kinds that have it or for metadata views; the media type a
//! response is labelled with is one its own Accept would get (for a view of the objects).
use gateway::negotiate::{Input, Offer, View, input_format, negotiate};

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
        // Reads of custom resources: metadata views only in protobuf.
        Offer { tables: true, metadata: true, protobuf: false },
    ] {
        let Ok(output) = negotiate(Some(text), offer) else { continue };
        let metadata = matches!(output.view, View::Metadata | View::MetadataList);
        assert!(offer.protobuf || metadata || output.content_type(false) != protobuf::CONTENT_TYPE);
        if metadata && !offer.protobuf {
            continue;
        }
        let label = output.content_type(false);
        let again = negotiate(Some(label), offer).expect("a response's own content type is acceptable");
        assert_eq!(again.encoding, output.encoding, "{text:?} answered as {label}");
    }
}
