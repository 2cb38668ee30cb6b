//! The exit codes of every command, one rule for all (ripgrep's): 0 the command did what was
//! asked and every check it ran held; 1 it ran and a check said no (a gate regression, a failed
//! paired assertion, engine errors counted as empty rankings); 2 it did not do what was asked:
//! an error (bad input, a missing file or model, I/O) or a refused write (`gate --update` while
//! a row fails, `tune --write` that the validation does not support), with nothing written.
//! The README's "Exit codes" section and `ranklab --help` state the same rule.

use std::process::ExitCode;

/// How a command ended; [`crate::cli::main`] turns it into the process's exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: done, every check held.
    Ok,
    /// 1: done, and a check failed (the verdict is no).
    Failed,
    /// 2: a write refused, nothing written (the same code as an error: what was asked was not
    /// done).
    Refused,
    /// 2: an error (bad input, missing file, I/O); returned by `main` for every `Err`.
    Error,
}

impl Exit {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Refused | Exit::Error => 2,
        }
    }

    /// [`Exit::Failed`] when `failed`, else [`Exit::Ok`].
    pub const fn failed_if(failed: bool) -> Exit {
        if failed {
            Exit::Failed
        } else {
            Exit::Ok
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> ExitCode {
        ExitCode::from(e.code())
    }
}

#[cfg(test)]
mod tests {
    use super::Exit;

    /// The documented rule (README "Exit codes"): a refused write is 2, as an error.
    #[test]
    fn codes_follow_the_documented_rule() {
        assert_eq!(Exit::Ok.code(), 0);
        assert_eq!(Exit::Failed.code(), 1);
        assert_eq!(Exit::Refused.code(), 2);
        assert_eq!(Exit::Error.code(), 2);
        assert_eq!(Exit::failed_if(true), Exit::Failed);
        assert_eq!(Exit::failed_if(false), Exit::Ok);
    }
}
