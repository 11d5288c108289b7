//! `zkpipe serve`: the proving daemon, configured from `zkpipe.toml` and
//! flags (flags win).

use clap::Args;
use std::path::PathBuf;
use zkpipe_core::Error;
use zkpipe_daemon::config::Config;

use crate::plugin_args::PluginArgs;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    plugins: PluginArgs,
    /// Configuration file (TOML; unknown keys are errors).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Any config key, repeatable: `--set scheduler.policy=split`,
    /// `--set devices.devices=0,1`.
    #[arg(long = "set", value_name = "SECTION.KEY=VALUE")]
    set: Vec<String>,
    /// Unix socket (daemon.socket).
    #[arg(long, value_name = "PATH")]
    socket: Option<String>,
    /// Also listen on TCP (daemon.listen), e.g. 127.0.0.1:9820.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Bearer token file for TCP clients (daemon.token_file).
    #[arg(long, value_name = "FILE")]
    token_file: Option<String>,
    /// Serve /metrics and /status over HTTP here (daemon.status_http).
    #[arg(long, value_name = "ADDR")]
    status_http: Option<String>,
    /// Backend plugin (devices.backend).
    #[arg(long)]
    backend: Option<String>,
    /// Scheduling policy (scheduler.policy).
    #[arg(long)]
    policy: Option<String>,
    /// Folder of recorded circuits and keys (keys.dir).
    #[arg(long, value_name = "DIR")]
    keys_dir: Option<String>,
    /// Folder of circom circuits, `NAME.zkey` beside `NAME.r1cs`
    /// (keys.circom_dir).
    #[arg(long, value_name = "DIR")]
    circom_dir: Option<String>,
    /// Join a fleet: its shared queue, postgres://user@host/db (queue.url).
    /// A password here is visible to other users (ps): prefer
    /// --queue-password-file or PGPASSWORD.
    #[arg(long, value_name = "URL")]
    queue: Option<String>,
    /// The database password, alone on one line of a file only its owner
    /// may read (queue.password_file); else PGPASSWORD is used.
    #[arg(long, value_name = "FILE")]
    queue_password_file: Option<String>,
    /// This node's id in the fleet (queue.node_id).
    #[arg(long, value_name = "ID")]
    node_id: Option<String>,
    /// Print the effective configuration and exit.
    #[arg(long)]
    print_config: bool,
}

impl ServeArgs {
    /// The file's config with the flags on top (the top level's plugin
    /// folder and backend settings included).
    fn config(&self, plugins: &PluginArgs) -> Result<Config, Error> {
        let mut config = match &self.config {
            Some(path) => Config::load(path)?,
            None => Config::default(),
        };
        let plugins = plugins.with(&self.plugins);
        if let Some(dir) = plugins.plugin_dir() {
            config.devices.plugin_dir = dir.display().to_string();
        }
        if let Some(t) = plugins.threads() {
            config.devices.threads = t as usize;
        }
        config.devices.backend_opts.extend(plugins.settings());
        let shortcuts = [
            ("daemon.socket", &self.socket),
            ("daemon.listen", &self.listen),
            ("daemon.token_file", &self.token_file),
            ("daemon.status_http", &self.status_http),
            ("devices.backend", &self.backend),
            ("scheduler.policy", &self.policy),
            ("keys.dir", &self.keys_dir),
            ("keys.circom_dir", &self.circom_dir),
            ("queue.url", &self.queue),
            ("queue.password_file", &self.queue_password_file),
            ("queue.node_id", &self.node_id),
        ];
        if let Some(url) = &self.queue {
            crate::fleet::warn_if_password_in("--queue", url);
        }
        for (key, value) in shortcuts {
            if let Some(v) = value {
                config.set(&format!("{key}={v}"))?;
            }
        }
        for s in &self.set {
            if let Some(url) = s.strip_prefix("queue.url=") {
                crate::fleet::warn_if_password_in("--set queue.url", url);
            }
            config.set(s)?;
        }
        config.validate()?;
        Ok(config)
    }
}

pub fn run(args: &ServeArgs, plugins: &PluginArgs) -> Result<(), Error> {
    let config = args.config(plugins)?;
    if args.print_config {
        print!("{}", config.resolved().to_toml());
        return Ok(());
    }
    zkpipe_daemon::logging::init(&config.logging)?;
    let origin = zkpipe_daemon::server::Origin {
        commit: env!("ZKPIPE_COMMIT").into(),
        config_file: args.config.clone(),
    };
    // One line per listener on stdout for scripts and tests: it is ready.
    zkpipe_daemon::client::block_on(zkpipe_daemon::server::serve(config, origin, |at| {
        at.lines().iter().for_each(|l| println!("{l}"))
    }))
}
