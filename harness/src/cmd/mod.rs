//! One file per subcommand. Each defines its clap `Args` and a `run` returning an exit code.

pub mod beir;
pub mod bench;
pub mod check;
pub mod compare;
pub mod eval;
pub mod gate;
pub mod models;
pub mod run;
pub mod synth_run;
pub mod tune;
