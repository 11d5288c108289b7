//! Generates the gRPC code of `proto/zkpipe/v1/prover.proto` and of cuzk's
//! `proto/cuzk/v1/proving.proto` (protox parses
//! it in Rust, so no protoc is needed). Messages also derive `Serialize`
//! for the JSON of `/status`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../proto";
    let files = [
        "../proto/zkpipe/v1/prover.proto",
        "../proto/cuzk/v1/proving.proto",
    ];
    for f in files {
        println!("cargo:rerun-if-changed={f}");
    }
    let descriptors = protox::compile(files, [root])?;
    tonic_prost_build::configure()
        .type_attribute(".", "#[derive(serde::Serialize)]")
        .compile_fds(descriptors)?;
    Ok(())
}
