//! One file per subcommand. Each defines its clap `Args` and a `run` returning an exit code.

pub mod beir;
pub mod bench;
pub mod check;
pub mod eval;
pub mod run;
pub mod synth_run;
