//! Generates the CRI v1 gRPC client and server from the vendored `proto/api.proto`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/api.proto");
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_protos(&["proto/api.proto"], &["proto"])?;
    Ok(())
}
