//! Names the commit the binary is built from (`zkpipe --version`), so a
//! number or a bug report can say which code made it. Outside a git
//! checkout (a source archive) it says `unknown`.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=ZKPIPE_COMMIT={commit}");
    // A new commit moves HEAD or the branch it names.
    for path in ["../.git/HEAD", "../.git/refs/heads", "../.git/packed-refs"] {
        println!("cargo:rerun-if-changed={path}");
    }
}
