//! One file per subcommand. Each defines its clap `Args` and a `run` returning an exit code;
//! `reports` holds what `run` and `bench` share; [`args`] the flags several commands share.

pub(crate) mod args;
pub(crate) mod beir;
pub(crate) mod bench;
pub(crate) mod check;
pub(crate) mod compare;
pub(crate) mod eval;
pub(crate) mod gate;
pub(crate) mod judge;
pub(crate) mod merges;
pub(crate) mod models;
pub(crate) mod pool;
pub(crate) mod reports;
pub(crate) mod run;
pub(crate) mod synth_run;
pub(crate) mod tune;
pub(crate) mod work;
