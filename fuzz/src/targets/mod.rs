//! The targets' bodies, one module per decoder: `fuzz_targets/` hands each libFuzzer's input,
//! and the tests below replay each committed corpus, so the test command runs every target
//! over what fuzzing kept (and the inputs of the crashes it found).

pub mod body_json;
pub mod body_protobuf;
pub mod body_yaml;
pub mod continue_token;
pub mod duration;
pub mod embedded_log;
pub mod field_path;
pub mod field_selector;
pub mod impersonation_header;
pub mod jwt_oidc;
pub mod jwt_serviceaccount;
pub mod label_selector;
pub mod negotiation;
pub mod patch_apply;
pub mod patch_json;
pub mod patch_merge;
pub mod patch_strategic;
pub mod quantity;
pub mod resource_version;
pub mod time;

#[cfg(test)]
mod corpora {
    use std::path::Path;

    /// Runs `check` on every input in `corpus/<target>/`, naming the input that fails.
    fn replay(target: &str, check: impl Fn(&[u8]) + std::panic::RefUnwindSafe) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a corpus entry").path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{} is empty", dir.display());
        for path in inputs {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                panic!("{target}: the committed input {} fails", path.display());
            }
        }
    }

    #[test]
    fn body_json() {
        replay("body_json", super::body_json::check);
    }

    #[test]
    fn body_protobuf() {
        replay("body_protobuf", super::body_protobuf::check);
    }

    #[test]
    fn body_yaml() {
        replay("body_yaml", super::body_yaml::check);
    }

    #[test]
    fn continue_token() {
        replay("continue_token", super::continue_token::check);
    }

    #[test]
    fn duration() {
        replay("duration", super::duration::check);
    }

    #[test]
    fn embedded_log() {
        use arbitrary::Arbitrary;
        replay("embedded_log", |data| {
            // As libFuzzer's typed targets build their input.
            if let Ok(input) = super::embedded_log::Input::arbitrary_take_rest(arbitrary::Unstructured::new(data)) {
                super::embedded_log::check(input);
            }
        });
    }

    #[test]
    fn field_path() {
        replay("field_path", super::field_path::check);
    }

    #[test]
    fn field_selector() {
        replay("field_selector", super::field_selector::check);
    }

    #[test]
    fn impersonation_header() {
        replay("impersonation_header", super::impersonation_header::check);
    }

    #[test]
    fn jwt_oidc() {
        replay("jwt_oidc", super::jwt_oidc::check);
    }

    #[test]
    fn jwt_serviceaccount() {
        replay("jwt_serviceaccount", super::jwt_serviceaccount::check);
    }

    #[test]
    fn label_selector() {
        replay("label_selector", super::label_selector::check);
    }

    #[test]
    fn negotiation() {
        replay("negotiation", super::negotiation::check);
    }

    #[test]
    fn patch_apply() {
        replay("patch_apply", super::patch_apply::check);
    }

    #[test]
    fn patch_json() {
        replay("patch_json", super::patch_json::check);
    }

    #[test]
    fn patch_merge() {
        replay("patch_merge", super::patch_merge::check);
    }

    #[test]
    fn patch_strategic() {
        replay("patch_strategic", super::patch_strategic::check);
    }

    #[test]
    fn quantity() {
        replay("quantity", super::quantity::check);
    }

    #[test]
    fn resource_version() {
        replay("resource_version", super::resource_version::check);
    }

    #[test]
    fn time() {
        replay("time", super::time::check);
    }
}
