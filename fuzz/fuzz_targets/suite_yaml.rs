#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ranklab_fuzz::suite_yaml(data, ranklab_fuzz::scratch()));
