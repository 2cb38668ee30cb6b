//! The `ranklab` binary: a thin shell over the library. See `ranklab --help`.

fn main() -> std::process::ExitCode {
    ranklab::cli::main()
}
