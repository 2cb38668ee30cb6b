#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ranklab_fuzz::front_matter(data));
