#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| apiserver_fuzz::targets::label_selector::check(data));
