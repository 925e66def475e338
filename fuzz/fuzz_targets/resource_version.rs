#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| apiserver_fuzz::targets::resource_version::check(data));
