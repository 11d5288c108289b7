//! `zkpipe backends`: what was searched, what loaded, what failed and why.

use zkpipe_core::Error;
use zkpipe_session::inventory::Inventory;

use crate::plugin_args::PluginArgs;

pub fn run(args: &PluginArgs, json: bool) -> Result<(), Error> {
    let inventory = Inventory::take(&args.request("", 0))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&inventory).expect("an inventory serialises")
        );
    } else {
        inventory.lines().iter().for_each(|l| println!("{l}"));
    }
    Ok(())
}
