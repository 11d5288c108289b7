//! Logs to stderr through `tracing`: text or JSON, at the configured level.

use crate::config::LoggingSection;
use tracing_subscriber::EnvFilter;

/// Installs the subscriber (once per process; later calls do nothing).
/// `RUST_LOG`, when set, wins over `level`.
///
/// # Errors
/// [`zkpipe_core::Error::InvalidInput`] for a level that is not a filter.
pub fn init(logging: &LoggingSection) -> Result<(), zkpipe_core::Error> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(f) if !f.is_empty() => EnvFilter::try_new(f),
        _ => EnvFilter::try_new(&logging.level).map(quiet_libraries),
    }
    .map_err(|e| zkpipe_core::Error::InvalidInput(format!("logging.level: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = if logging.format == "json" {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    Ok(())
}

/// Libraries whose debug lines are not the daemon's: the PostgreSQL
/// client's carry every statement's parameters (payloads, never to be in a
/// log), the HTTP/2 stack's are frames. `RUST_LOG` can still ask for them.
const QUIET: [&str; 4] = ["tokio_postgres=info", "h2=info", "hyper=info", "tower=info"];

fn quiet_libraries(filter: EnvFilter) -> EnvFilter {
    QUIET.iter().fold(filter, |f, d| {
        f.add_directive(d.parse().expect("a valid directive"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_leaves_out_the_libraries_statements_and_frames() {
        let f = quiet_libraries(EnvFilter::try_new("debug").unwrap()).to_string();
        for d in QUIET {
            assert!(f.contains(d), "{f}");
        }
    }
}
