//! The `ranklab` binary: a thin shell over the library. See `ranklab --help`.

/// mimalloc instead of glibc's malloc: a warm `ranklab bench --from-recording` spent about a
/// fifth of its CPU in malloc/free (`perf record`); see docs/speed.md's warm section for the
/// figures measured with and without it. The library (and its tests) keep the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ranklab::cli::main()
}
