//! Generates the gRPC code of `proto/zkpipe/v1/prover.proto` (protox parses
//! it in Rust, so no protoc is needed). Messages also derive `Serialize`
//! for the JSON of `/status`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = "../proto";
    let file = "../proto/zkpipe/v1/prover.proto";
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file], [root])?;
    tonic_prost_build::configure()
        .type_attribute(".", "#[derive(serde::Serialize)]")
        .compile_fds(descriptors)?;
    Ok(())
}
