//! `zkpipe bench batch --daemon ADDR`: the same batch driven through a
//! running daemon — the same COMPLETED lines, summary and waterfall, the
//! waterfall built from the daemon's timeline of these jobs.

use zkpipe_core::Error;
use zkpipe_core::sched::Span;
use zkpipe_core::sched::metrics::Summary;
use zkpipe_daemon::remote_batch::RemoteBatch;

use crate::batch::BatchArgs;
use crate::client::connect;

/// Runs `b` through the daemon at `addr`: `b.count` requests of
/// `b.partitions` partitions, `b.concurrency` in flight; a line per
/// request on stdout, or stderr when `quiet`.
pub fn run_batch(
    addr: &str,
    token_file: Option<&std::path::Path>,
    b: &BatchArgs,
    quiet: bool,
) -> Result<(Summary, Vec<Span>), Error> {
    let batch = RemoteBatch {
        circuit: b.circuit.circuit.clone(),
        size: b.circuit.request().size().to_string(),
        partitions: b.partitions,
        count: b.count,
        concurrency: b.concurrency,
    };
    zkpipe_daemon::client::block_on(async {
        let client = connect(addr, token_file, &crate::client::TlsArgs::default()).await?;
        let mut print = |line: String| {
            if quiet {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        };
        zkpipe_daemon::remote_batch::run_batch(client, &batch, &mut print).await
    })
}
