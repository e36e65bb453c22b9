//! Compiles proto/tt.proto with protox (pure Rust; no system protoc).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../proto");
    let proto = format!("{proto_dir}/tt.proto");
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([&proto], [proto_dir])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
