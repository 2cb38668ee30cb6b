//! The `ranklab` binary: a thin shell over the library. See `ranklab --help`.

/// mimalloc instead of glibc's malloc: a warm `ranklab bench --from-recording` spent about a
/// fifth of its CPU in malloc/free (`perf record`); see docs/speed.md's warm section for the
/// figures measured with and without it. Built with `no_thp`: with transparent huge pages the
/// kernel's zeroing of 2 MB pages took up to two thirds of a warm run's CPU. The library (and
/// its tests) keep the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    ranklab::cli::main()
}
