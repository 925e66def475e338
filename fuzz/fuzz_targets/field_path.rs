#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| apiserver_fuzz::targets::field_path::check(data));
