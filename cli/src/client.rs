//! `zkpipe client`: talk to a running `zkpipe serve`.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use zkpipe_core::Error;
use zkpipe_daemon::client::{self, Address, Client, status_error};
use zkpipe_daemon::daemon::{priority_from_label, state_label};
use zkpipe_daemon::proto::{self, JobState, Priority};
use zkpipe_daemon::reply_text;

use zkpipe_session::output::Output;

#[derive(Args, Debug)]
pub struct ClientArgs {
    /// Daemon address: unix:/path, a socket path, or host:port (default:
    /// the default socket, $XDG_RUNTIME_DIR/zkpipe/zkpipe.sock).
    #[arg(long)]
    addr: Option<String>,
    /// File holding the bearer token (TCP daemons that want one).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(subcommand)]
    op: ClientOp,
}

/// TLS to a daemon's TCP listener.
#[derive(Args, Debug, Default)]
pub struct TlsArgs {
    /// CA certificates (PEM) that signed the daemon's certificate: speak
    /// TLS (an `https://` address needs it).
    #[arg(long, value_name = "FILE")]
    tls_ca: Option<PathBuf>,
    /// This client's certificate (PEM), for a daemon that asks for one.
    #[arg(long, value_name = "FILE", requires_all = ["tls_key", "tls_ca"])]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

impl TlsArgs {
    /// The files, read and checked before any connection (`None`: no TLS).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] naming the flag whose file is unusable, or
    /// --tls-cert and --tls-key when the key is not the certificate's.
    pub fn read(&self) -> Result<Option<client::ClientTls>, Error> {
        let Some(ca) = &self.tls_ca else {
            return Ok(None);
        };
        let identity = self.tls_cert.as_deref().zip(self.tls_key.as_deref());
        client::ClientTls::from_files(ca, identity).map(Some)
    }
}

#[derive(Args, Debug, Clone)]
pub struct JobArgs {
    /// Built-in circuit.
    #[arg(long, default_value = "poseidon-merkle")]
    circuit: String,
    /// Circuit size (default: the circuit's demo size).
    #[arg(long)]
    size: Option<String>,
    /// Witness seed: partition p proves the witness of seed + p.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Partitions (proofs) in the job.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// low, normal, high or critical.
    #[arg(long, default_value = "normal", value_parser = priority_from_label)]
    priority: Priority,
    /// Idempotency id: resubmitting it returns the first job.
    #[arg(long)]
    request_id: Option<String>,
    /// A circom circuit instead of a built-in one: this snarkjs zkey's
    /// circuit (the daemon holds the same file in keys.circom_dir; it is
    /// named by its SHA-256, never sent).
    #[arg(long, value_name = "FILE", requires = "wtns",
          conflicts_with_all = ["circuit", "size", "seed", "partitions"])]
    zkey: Option<PathBuf>,
    /// The witness of each partition (snarkjs .wtns), for --zkey.
    #[arg(long, value_name = "FILE", requires = "zkey")]
    wtns: Vec<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum ClientOp {
    /// Submit a job and wait for its verified proofs; save them.
    Prove {
        #[command(flatten)]
        job: JobArgs,
        /// Where the proofs go (`-`: stdout): 192 bytes per partition,
        /// default `<circuit>-<size>.proof`; a circom job's as snarkjs
        /// JSON, default proof.json.
        #[arg(long, value_name = "FILE", alias = "out")]
        proof: Option<PathBuf>,
        /// Where the public inputs go, as JSON (`-`: stdout). Default:
        /// `<circuit>-<size>.public.json`; a circom job's public.json.
        #[arg(long, value_name = "FILE", alias = "public-out")]
        public: Option<PathBuf>,
    },
    /// Submit a job; print its id and queue position.
    Submit {
        #[command(flatten)]
        job: JobArgs,
    },
    /// Wait for a job; print its state (exit 1 if it failed or was cancelled).
    Await {
        job_id: u64,
        /// Give up waiting after this long (0: no limit); prints the state then.
        #[arg(long, default_value_t = 0)]
        timeout_ms: u32,
    },
    /// Cancel a job.
    Cancel { job_id: u64 },
    /// Devices, keys, queues.
    Status {
        /// The full reply as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prometheus metrics.
    Metrics,
    /// Load a key ahead of jobs.
    Preload(KeyArgs),
    /// Evict a key no job uses.
    Evict(KeyArgs),
}

/// A key: a built-in circuit and size, or a circom zkey.
#[derive(Args, Debug)]
struct KeyArgs {
    /// Built-in circuit.
    #[arg(long, required_unless_present = "zkey", conflicts_with = "zkey")]
    circuit: Option<String>,
    /// Circuit size (default: the circuit's demo size).
    #[arg(long)]
    size: Option<String>,
    /// A circom circuit's snarkjs zkey (named by its SHA-256).
    #[arg(long, value_name = "FILE")]
    zkey: Option<PathBuf>,
}

impl KeyArgs {
    fn key(&self) -> Result<proto::KeyId, Error> {
        Ok(match (&self.zkey, &self.circuit) {
            (Some(zkey), _) => client::circom_key(zkey)?,
            (None, circuit) => proto::KeyId {
                circuit: circuit.clone().unwrap_or_default(),
                size: self.size.clone().unwrap_or_default(),
            },
        })
    }
}

impl JobArgs {
    /// The request (reading and hashing --zkey and --wtns files).
    ///
    /// # Errors
    /// [`Error::Io`] for files that cannot be read; [`Error::InvalidInput`]
    /// for a witness file over the size limit.
    pub fn request(&self) -> Result<proto::SubmitRequest, Error> {
        let (key, partitions, inputs) = match &self.zkey {
            Some(zkey) => {
                let (key, inputs) = zkpipe_daemon::client::circom_job(zkey, &self.wtns)?;
                (key, 0, inputs)
            }
            None => (
                proto::KeyId {
                    circuit: self.circuit.clone(),
                    size: self.size.clone().unwrap_or_default(),
                },
                self.partitions,
                proto::submit_request::Inputs::Builtin(proto::BuiltinInputs { seed: self.seed }),
            ),
        };
        Ok(proto::SubmitRequest {
            request_id: self.request_id.clone().unwrap_or_default(),
            key: Some(key),
            priority: self.priority as i32,
            partitions,
            inputs: Some(inputs),
        })
    }
}

impl JobArgs {
    /// Where a job's proofs and public inputs go: the flags, else
    /// `<circuit>-<size>.proof` and `.public.json` (`proof.json` and
    /// `public.json` for circom).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when both would go to stdout; errors of
    /// [`Output::resolve`].
    pub fn outputs(
        &self,
        out: Option<&std::path::Path>,
        public_out: Option<&std::path::Path>,
    ) -> Result<(Output, Output), Error> {
        let defaults = if self.zkey.is_some() {
            ("proof.json".to_string(), "public.json".to_string())
        } else {
            zkpipe_session::builtin::BuiltinRequest {
                circuit: self.circuit.clone(),
                size: self.size.clone(),
                cache_dir: None,
            }
            .default_outputs()
        };
        let inputs: Vec<(&str, &std::path::Path)> =
            (self.zkey.iter().map(|z| ("--zkey", z.as_path())))
                .chain(self.wtns.iter().map(|w| ("--wtns", w.as_path())))
                .collect();
        zkpipe_session::output::proof_outputs(&inputs, out, public_out, defaults)
    }

    /// Whether the job is a circom one (its proofs are saved as snarkjs JSON).
    pub fn is_circom(&self) -> bool {
        self.zkey.is_some()
    }
}

/// Connects with the flags' address and token.
pub async fn connect(
    addr: &str,
    token_file: Option<&std::path::Path>,
    tls: &TlsArgs,
) -> Result<Client, Error> {
    let token = token_file
        .map(zkpipe_daemon::listen::read_token)
        .transpose()?;
    let tls = tls.read()?;
    client::connect_tls(
        &Address::parse(addr)?,
        token.as_deref(),
        tls.as_ref(),
        // The daemon's own limit (daemon.max_message_bytes) refuses a
        // larger request with its size; this one only caps what any daemon takes.
        client::MAX_REQUEST_BYTES,
    )
    .await
}

pub fn run(args: &ClientArgs) -> Result<(), Error> {
    zkpipe_daemon::client::block_on(run_async(args))
}

/// A call's reply, or its status as an error.
macro_rules! rpc {
    ($call:expr) => {
        $call.await.map_err(status_error)?.into_inner()
    };
}

async fn run_async(args: &ClientArgs) -> Result<(), Error> {
    // Outputs are checked writable before the daemon does any work.
    let outputs = match &args.op {
        ClientOp::Prove { job, proof, public } => {
            Some(job.outputs(proof.as_deref(), public.as_deref())?)
        }
        _ => None,
    };
    // Files named in the request are read (and refused) before connecting.
    let request = match &args.op {
        ClientOp::Prove { job, .. } | ClientOp::Submit { job } => Some(job.request()?),
        _ => None,
    };
    let addr = args.addr.as_deref().unwrap_or_default();
    let mut c = connect(addr, args.token_file.as_deref(), &args.tls).await?;
    match &args.op {
        ClientOp::Prove { job, .. } => {
            let r = rpc!(c.prove(request.expect("made above")));
            let (proof_out, public_out) = outputs.expect("resolved above");
            save(&r, &proof_out, &public_out, job.zkey.is_some())
        }
        ClientOp::Submit { .. } => {
            let r = rpc!(c.submit(request.expect("made above")));
            println!(
                "job {} queued at position {}{}",
                r.job_id,
                r.queue_position,
                if r.duplicate {
                    " (duplicate request id: the first job)"
                } else {
                    ""
                }
            );
            Ok(())
        }
        ClientOp::Await { job_id, timeout_ms } => {
            let r = c
                .r#await(proto::AwaitRequest {
                    job_id: *job_id,
                    timeout_ms: *timeout_ms,
                })
                .await
                .map_err(status_error)?
                .into_inner();
            report(&r)
        }
        ClientOp::Cancel { job_id } => {
            let r = rpc!(c.cancel(proto::CancelRequest { job_id: *job_id }));
            let state = JobState::try_from(r.state).unwrap_or(JobState::Unspecified);
            println!("job {job_id}: {}", state_label(state));
            Ok(())
        }
        ClientOp::Status { json } => {
            let r = rpc!(c.status(proto::StatusRequest {}));
            if *json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r).expect("serialisable")
                );
            } else {
                reply_text::status_lines(&r)
                    .iter()
                    .for_each(|l| println!("{l}"));
            }
            Ok(())
        }
        ClientOp::Metrics => {
            let r = rpc!(c.metrics(proto::MetricsRequest {}));
            print!("{}", r.text);
            Ok(())
        }
        ClientOp::Preload(k) | ClientOp::Evict(k) => {
            let req = proto::KeysRequest {
                keys: vec![k.key()?],
            };
            let r = if matches!(args.op, ClientOp::Preload(_)) {
                c.preload_keys(req).await
            } else {
                c.evict_keys(req).await
            }
            .map_err(status_error)?
            .into_inner();
            for k in &r.keys {
                if !k.done {
                    return Err(Error::Failed(k.error.clone()));
                }
            }
            println!("done");
            Ok(())
        }
    }
}

/// Prints a job's state; an error for a job that failed or was cancelled.
pub fn report(r: &proto::JobResult) -> Result<(), Error> {
    println!("{}", reply_text::job_line(r).map_err(Error::Failed)?);
    Ok(())
}

/// Saves a job's proofs: 192 bytes each, or snarkjs JSON (`snarkjs`).
pub fn save(
    r: &proto::JobResult,
    proof_out: &Output,
    public_out: &Output,
    snarkjs: bool,
) -> Result<(), Error> {
    report(r)?;
    if JobState::try_from(r.state) != Ok(JobState::Succeeded) {
        return Err(Error::Failed(format!("job {} did not succeed", r.job_id)));
    }
    zkpipe_daemon::client::save_proofs(r, proof_out, public_out, snarkjs)?;
    eprintln!(
        "wrote {} proof(s) to {} and public inputs to {}{}",
        r.proofs.len(),
        proof_out.describe(),
        public_out.describe(),
        if r.recomputed_on_cpu {
            " (a device proof failed verification: recomputed on the CPU reference)"
        } else {
            ""
        }
    );
    Ok(())
}
