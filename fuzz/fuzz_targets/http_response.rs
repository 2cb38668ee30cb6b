#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ranklab_fuzz::http_response(data));
