#![no_main]
libfuzzer_sys::fuzz_target!(|input: apiserver_fuzz::targets::embedded_log::Input| {
    apiserver_fuzz::targets::embedded_log::check(input)
});
