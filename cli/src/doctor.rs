//! `zkpipe backends`: what was searched, what loaded, what failed and why;
//! exit 1 when no backend loaded.

use zkpipe_core::Error;
use zkpipe_session::inventory::Inventory;

use crate::plugin_args::PluginArgs;

pub fn run(args: &PluginArgs, json: bool, warm: bool) -> Result<(), Error> {
    let inventory = Inventory::take_warm(&args.request("", 0), warm)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&inventory).expect("an inventory serialises")
        );
    } else {
        inventory.lines().iter().for_each(|l| println!("{l}"));
    }
    // A machine where nothing loads cannot prove: say so in the exit code.
    if !inventory.backends.iter().any(|b| b.error.is_none()) {
        return Err(Error::Failed(format!(
            "no backend loaded; searched {}: put the plugins (libzkpipe_backend_*.so) in one \
             of these folders, or name theirs with --plugin-dir or {}",
            inventory.searched.join(", "),
            zkpipe_core::backend::loader::PLUGIN_PATH_ENV
        )));
    }
    Ok(())
}
